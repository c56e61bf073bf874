"""Denoising a live source as it arrives: frames dropped, never queued, when the filter or the encoder is slower.

Three threads overlap: a capture thread decodes the source into a queue of LIVE_QUEUE_FRAMES, the
caller's thread filters, and an encoder thread converts and encodes the denoised frames, handed
to it through a queue of HANDOFF_FRAMES. When the filter falls behind, a newly decoded frame
replaces the oldest waiting one, and a frame that waited longer than the queue's span in frame
times gives way to a newer one; when the encoder falls behind, a newly denoised frame replaces the
oldest waiting for it. All are counted as dropped, and the frames written stay in order. Memory
stays flat however long the run, and the delay from a frame's arrival to its denoised output stays
bounded. Each frame's latency (decoded to encoded and written) is measured; the run ends with the
stream, or when ``cancel`` is set, and the output is finished and kept either way.
"""

from __future__ import annotations

import collections
import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..media.ffmpeg import VideoError
from ..media.formats import encoder_preset
from ..media.pipe import PipeReader
from ..media.reader import TimedFrame
from ..media.writer import VideoWriter
from .clip_denoiser import denoiser_for
from .export import converted_by_filter, denoised
from .params import NLMParams

LIVE_QUEUE_FRAMES = 8  # decoded frames waiting for the filter: a stall of 0.3 s at 25 fps absorbed, no more
# Denoised frames waiting for the encoder: one being converted while the next is filtered, and one
# more to absorb an encoder's uneven frame times (x264's); more would only add their frame times of delay.
HANDOFF_FRAMES = 2
LATENCY_BINS_MS = 60_000  # latencies are counted in 1 ms bins up to a minute: flat memory for a run of any length
RECENT_FRAMES = 50  # the progress line's latency: the median of the last frames
JOIN_SECONDS = 5.0  # how long the end waits for the capture thread (it waits at most the source's timeout)
LiveProgress = Callable[["LiveStatus"], None]


@dataclass(frozen=True)
class LiveStatus:
    """How a live run stands: what its progress line and its summary say.

    Attributes
    ----------
    frames : int
        Frames denoised and written.
    dropped : int
        Frames replaced by newer ones: decoded while the filter was busy, or denoised while the
        encoder was.
    seconds : float
        Wall-clock time from the run's start to the last frame written, in seconds (not the wait
        that ends a stream: ``fps`` is the rate frames were written at).
    latency_ms : float
        Median delay from a frame's decoding to its denoised frame encoded and written (``VideoWriter.write``
        returned, on the encoder's thread), in milliseconds: of
        the last RECENT_FRAMES frames in a progress report, of the whole run in the summary.
    latency_p95_ms : float
        The 95th percentile of that delay over the whole run, in milliseconds.
    stopped : bool
        The run was stopped (``cancel``) before the stream ended; its output is complete up to there.
    backend, device_name : str
        Where the frames were filtered.
    """

    frames: int
    dropped: int
    seconds: float
    latency_ms: float
    latency_p95_ms: float
    stopped: bool = False
    backend: str = ""
    device_name: str = ""

    @property
    def fps(self) -> float:
        """Frames written a second, 0 where no time has passed."""
        return self.frames / self.seconds if self.seconds > 0 else 0.0


class LatencyMeter:
    """Latencies counted in 1 ms bins: the median and percentiles of a run of any length, in flat memory."""

    def __init__(self) -> None:
        self._bins = np.zeros(LATENCY_BINS_MS + 1, np.int64)
        self._recent: collections.deque[float] = collections.deque(maxlen=RECENT_FRAMES)

    def record(self, seconds: float) -> None:
        """Count one frame's latency, in seconds (those over a minute in the last bin)."""
        milliseconds = seconds * 1000
        self._bins[min(round(milliseconds), LATENCY_BINS_MS)] += 1
        self._recent.append(milliseconds)

    def percentile(self, percent: float) -> float:
        """Return the ``percent`` percentile of the latencies recorded, in milliseconds to the nearest; 0 for none."""
        counts = np.cumsum(self._bins)
        if counts[-1] == 0:
            return 0.0
        return float(np.searchsorted(counts, percent / 100 * counts[-1]))

    def recent(self) -> float:
        """Median latency of the last RECENT_FRAMES frames, in milliseconds; 0 for none."""
        return float(np.median(self._recent)) if self._recent else 0.0


_END = object()


class _NewestQueue:
    """Items handed between two threads in order, at most ``size`` waiting: one put when full drops the oldest.

    Each item is (seconds of ``time.perf_counter`` when its frame was decoded, TimedFrame). Dropped
    items are counted in ``dropped``. ``end`` closes the queue with _END or an error, which ``take``
    gives after the items waiting.
    """

    def __init__(self, size: int) -> None:
        self.dropped = 0
        self._size = size
        self._waiting: collections.deque[tuple[float, TimedFrame]] = collections.deque()
        self._ended: object = None  # _END, or the error to raise, after the items waiting
        self._changed = threading.Condition()

    def __len__(self) -> int:
        return len(self._waiting)

    @property
    def ended(self) -> bool:
        """Whether ``end`` was called."""
        return self._ended is not None

    def put(self, item: tuple[float, TimedFrame]) -> None:
        """Add ``item`` after those waiting; where ``size`` wait already, drop the oldest."""
        with self._changed:
            if len(self._waiting) == self._size:
                self._waiting.popleft()
                self.dropped += 1
            self._waiting.append(item)
            self._changed.notify()

    def end(self, reason: object = _END) -> None:
        """Close the queue: ``take`` gives the items waiting, then None (_END) or raises ``reason`` (an error)."""
        with self._changed:
            self._ended = reason
            self._changed.notify()

    def take(self, timeout: float | None, max_wait: float = math.inf) -> tuple[float, TimedFrame] | None:
        """Return the oldest item, None at the end or after ``timeout`` seconds without one.

        Items that waited more than ``max_wait`` seconds give way to a newer one waiting, and are
        dropped.

        Raises
        ------
        BaseException
            The error ``end`` was given, once no item waits.
        """
        with self._changed:
            self._changed.wait_for(lambda: self._waiting or self._ended is not None, timeout=timeout)
            if not self._waiting:
                if isinstance(self._ended, BaseException):
                    raise self._ended
                return None
            while len(self._waiting) > 1 and time.perf_counter() - self._waiting[0][0] > max_wait:
                self._waiting.popleft()
                self.dropped += 1
            return self._waiting.popleft()


class _Arrivals:
    """The source's frames decoded on a thread of their own, each with its arrival time, the newest kept.

    At most LIVE_QUEUE_FRAMES wait: a frame decoded when they are that many makes the oldest one
    dropped. A frame that waited more than ``max_wait`` seconds gives way to a newer one waiting,
    and is dropped too: where the filter is slower than the source, the frame it takes next is one
    that just came, not one of those it fell behind on. ``yuv``: the frames as their planes
    (``timed_frames(yuv=True)``), for the GPU to convert. Iterating gives (seconds of
    ``time.perf_counter`` when decoded, TimedFrame) until the source ends, raises what it raised,
    or ``cancel`` is set. Use as a context manager: leaving it stops the thread and waits for it (up
    to JOIN_SECONDS: a blocked read ends at the source's timeout).
    """

    def __init__(self, reader: PipeReader, cancel: threading.Event, *, max_wait: float, yuv: bool = False) -> None:
        self.waiting = _NewestQueue(LIVE_QUEUE_FRAMES)
        self._cancel, self._stop, self._max_wait = cancel, threading.Event(), max_wait
        self._thread = threading.Thread(target=self._capture, args=(reader, yuv), name="nlmeans-live", daemon=True)
        self._thread.start()

    @property
    def dropped(self) -> int:
        """Frames dropped before the filter took them."""
        return self.waiting.dropped

    def _capture(self, reader: PipeReader, yuv: bool) -> None:
        try:
            for frame in reader.timed_frames(yuv=True) if yuv else reader.timed_frames():
                if self._stop.is_set():
                    return
                self.waiting.put((time.perf_counter(), frame))
            self.waiting.end()
        except BaseException as error:  # handed to the consumer, raised there
            self.waiting.end(error)

    def __iter__(self) -> Iterator[tuple[float, TimedFrame]]:
        while not self._cancel.is_set():
            item = self.waiting.take(timeout=0.1, max_wait=self._max_wait)
            if item is not None:
                yield item
            elif self.waiting.ended:
                return

    def __enter__(self) -> _Arrivals:
        return self

    def __exit__(self, *exception: object) -> None:
        self._stop.set()
        self._thread.join(JOIN_SECONDS)


class _Handoff:
    """Denoised frames given to ``consume`` on a thread of its own (the encoder's), the newest kept.

    At most HANDOFF_FRAMES wait: a frame given when they are that many makes the oldest one dropped,
    so that an encoder slower than the source drops frames rather than delays them, as the filter
    does. ``consume`` takes (seconds when decoded, TimedFrame); what it raises comes back from the
    next ``give`` or from ``finish``. Use as a context manager: leaving it consumes the frames
    waiting and waits for the thread.
    """

    def __init__(self, consume: Callable[[float, TimedFrame], None]) -> None:
        self.waiting = _NewestQueue(HANDOFF_FRAMES)
        self._consume = consume
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="nlmeans-live-encode", daemon=True)
        self._thread.start()

    @property
    def dropped(self) -> int:
        """Frames denoised and dropped before the encoder took them."""
        return self.waiting.dropped

    def _run(self) -> None:
        try:
            while (item := self.waiting.take(timeout=None)) is not None:
                self._consume(*item)
        except BaseException as error:  # raised on the filter's thread
            self._error = error
            self.waiting.end()

    def give(self, arrived: float, frame: TimedFrame) -> None:
        """Hand ``frame`` (decoded at ``arrived``) to the encoder's thread; raise what it raised."""
        if self._error is not None:
            raise self._error
        self.waiting.put((arrived, frame))

    def finish(self) -> None:
        """Wait until the frames given are consumed; raise what ``consume`` raised."""
        self.waiting.end()
        self._thread.join()
        if self._error is not None:
            raise self._error

    def __enter__(self) -> _Handoff:
        return self

    def __exit__(self, *exception: object) -> None:
        self.waiting.end()
        self._thread.join()


def denoise_live(
    reader: PipeReader,
    target: str | Path | None,
    params: NLMParams,
    *,
    backend: str = "auto",
    codec: str = "h264",
    crf: int = 18,
    preset: str | None = None,
    overwrite: bool = False,
    rgb: bool = False,
    luma_chroma: tuple[float, float, str] | None = None,
    progress: LiveProgress | None = None,
    shown: Callable[[np.ndarray], None] | None = None,
    cancel: threading.Event | None = None,
) -> LiveStatus:
    """Denoise a live source into ``target`` as its frames arrive, dropping those the filter has no time for.

    Parameters
    ----------
    reader : PipeReader
        The source, open: a ``LiveReader`` (a stream or a device) or a ``PipeReader`` (y4m on
        standard input, at its own pace). Its frames are read here, once.
    target : str or Path, optional
        The output, as ``VideoWriter`` takes it: a file written under a temporary name and renamed
        into place when the run ends, by the stream's end or by ``cancel``, or a stream's URL.
        None: nothing written (the frames go to ``shown``).
    params : NLMParams
        The filter. Its future frames (Df, ``frames_future``) delay every frame by as many
        frames; ``denoise --live`` sets Df 0 unless given.
    backend : {"auto", "cpu", "gpu"}
        As ``Denoiser`` takes it.
    codec, crf, overwrite, rgb
        The output's encoding, as ``VideoWriter`` takes it.
    preset : str, optional
        The encoder's speed, as ``VideoWriter`` takes it; None: ``encoder_preset`` for a live
        output of the source's size and rate (H.264 / H.265 at veryfast, ultrafast above 1080p at
        30 fps: what keeps up with the source with time to spare).
    luma_chroma : (h_luma, h_chroma, matrix), optional
        Filter in Y'CbCr with a strength for Y and one for Cb/Cr (``engine.video.luma_chroma``).
    progress : callable, optional
        Called after each frame written with a ``LiveStatus`` (latency: the recent frames' median),
        on the encoder's thread.
    shown : callable, optional
        Called with each denoised frame, (H, W, C) of the source's dtype, after it is written, on
        the encoder's thread: the window shows them.
    cancel : threading.Event, optional
        Set it from another thread to end the run: the frames written so far make a complete,
        playable file.

    Returns
    -------
    LiveStatus
        Frames written and dropped, seconds, the latency's median and 95th percentile over the
        run, and whether it was stopped.

    Raises
    ------
    VideoError
        The source failed while read (a device unplugged, a stream cut: the output is finished with
        the frames denoised before, and kept), or the target cannot be written (nothing is kept).
    BackendUnavailableError
        backend="gpu" where the GPU cannot run.

    Notes
    -----
    The latency is from the moment a frame is decoded to the moment its denoised frame has been
    converted, encoded and handed to the muxer (``VideoWriter.write`` returned on the encoder's
    thread), the encoder tuned for zero latency (H.264 / H.265 without lookahead nor B-frames: the
    frame's packet is out by then). At most LIVE_QUEUE_FRAMES frames wait for the filter and
    HANDOFF_FRAMES for the encoder, so a filter or an encoder slower than the source adds at most
    that many frames of delay and drops the rest; the filter of one frame overlaps the encoding of
    the one before. With past frames (Dp) the window holds the frames filtered, not those dropped
    before the filter.
    """
    cancel = cancel or threading.Event()
    denoiser = denoiser_for(params, backend=backend, luma_chroma=luma_chroma)
    meter = LatencyMeter()
    failures: list[VideoError] = []  # what the source raised, if it failed
    started = last_written = time.perf_counter()
    done = 0
    info = reader.info
    pixel_rate = info.width * info.height * float(info.frame_rate)
    preset = encoder_preset(codec, live=True, pixel_rate=pixel_rate) if preset is None else preset
    encoding = {"codec": codec, "crf": crf, "preset": preset, "overwrite": overwrite, "rgb": rgb, "low_delay": True}
    with (
        contextlib.nullcontext() if target is None else VideoWriter(target, reader.info, **encoding) as writer,
        _Arrivals(
            reader,
            cancel,
            max_wait=LIVE_QUEUE_FRAMES / float(reader.info.frame_rate),
            yuv=(yuv := None if shown else converted_by_filter(denoiser, reader, writer)) is not None,
        ) as arrivals,
    ):

        def written(arrived: float, frame: TimedFrame) -> None:
            """On the encoder's thread: write ``frame``, count its latency, say so."""
            nonlocal done, last_written
            if writer is not None:
                writer.write(frame)
            last_written = time.perf_counter()
            meter.record(last_written - arrived)
            done += 1
            if shown is not None:
                shown(frame.array)
            if progress is not None:
                dropped = arrivals.dropped + handoff.dropped
                progress(LiveStatus(done, dropped, last_written - started, meter.recent(), meter.percentile(95)))

        arrived: dict[int, float] = {}  # arrival time by frame number, for the frames in the filter

        def frames() -> Iterator[TimedFrame]:
            try:
                for seconds, frame in arrivals:
                    arrived[frame.number] = seconds
                    yield frame
            except VideoError as error:  # the source failed: the frames written so far are kept
                failures.append(error)

        with (
            _Handoff(written) as handoff,
            contextlib.closing(denoised(denoiser, frames(), reader.info.dtype, yuv)) as outputs,
        ):
            for frame in outputs:
                handoff.give(arrived.pop(frame.number), frame)
            handoff.finish()
    if failures:
        raise VideoError(f"{failures[0]}; {target} holds the {done} frames denoised before") from failures[0]
    return LiveStatus(
        done,
        arrivals.dropped + handoff.dropped,
        last_written - started,
        meter.percentile(50),
        meter.percentile(95),
        stopped=cancel.is_set(),
        backend=denoiser.backend,
        device_name=denoiser.device_name,
    )
