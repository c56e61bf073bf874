"""Video from a live source: a network stream or a capture device, read as it arrives.

``LiveReader`` opens what FFmpeg opens by name (``udp://``, ``rtp://``, ``srt://``, ``rtmp://``, a
device such as ``/dev/video0`` with its format ``v4l2``) and reads it once, in order, as a pipe is
read (``PipeReader``: its first frames by number for the noise estimate, then every frame once).
A stream ends at its end, or where no data came for ``timeout`` seconds: UDP has no end of its own.

A stream joined between keyframes is read from its first keyframe on. Its frames keep the
source's own timing (their timestamps from the first frame's), and its frame rate is measured on
its first frames: probed briefly, FFmpeg guessed 50 fps for a 25 fps H.264 stream (the field
rate), and an output stamped at that rate played twice as fast.
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
import threading
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any
from urllib.parse import urlsplit

from .ffmpeg import VideoError, ffmpeg_reason, pyav, said_in_our_words
from .pipe import LOOKAHEAD, PipeReader

END_TIMEOUT = 2.0  # seconds without data that end a live stream (UDP never says it ended)
OPEN_TIMEOUT = 30.0  # seconds a live source may take to send its first frames: start it after the listener
# FFmpeg reads 32 KiB to learn what a live source holds, not its default 5 MB: a UDP stream opened
# in 0.46 s instead of 1.2 s, and its first frames came at their pace instead of 19 in a burst.
OPEN_OPTIONS = {"probesize": "32768"}
# A UDP listener whose reader falls behind drops packets instead of failing ("Circular buffer
# overrun"); the frames the filter cannot take are dropped later anyway.
PROTOCOL_OPTIONS = {"udp": {"overrun_nonfatal": "1"}}
# Frame rates a measured one is taken as where within RATE_TOLERANCE of it (frames a second)
STANDARD_RATES = tuple(Fraction(n, d) for n, d in ((24000, 1001), (24, 1), (25, 1), (30000, 1001), (30, 1),
                                                    (48, 1), (50, 1), (60000, 1001), (60, 1)))  # fmt: skip
RATE_TOLERANCE = 0.01  # relative


def live_protocol(source: str) -> str:
    """Return the protocol of a live source's name ("udp", "srt", ...), "" for a device or a file path."""
    return urlsplit(source).scheme if "://" in source else ""


def _opened_interruptibly(open_source: Callable[[], Any]) -> Any:
    """Return ``open_source()``'s container, opened on a thread of its own so that Ctrl-C stops the wait.

    FFmpeg's open waits in C for a sender (up to OPEN_TIMEOUT) where Python's signal handlers do not
    run. On KeyboardInterrupt the thread is left to its timeout and closes what it opens then.
    """
    outcome: dict[str, Any] = {}
    abandoned = threading.Event()

    def run() -> None:
        try:
            outcome["container"] = open_source()
        except BaseException as error:  # raised on the caller's thread
            outcome["error"] = error
        if abandoned.is_set() and "container" in outcome:
            outcome["container"].close()

    thread = threading.Thread(target=run, name="nlmeans-live-open", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.1)
    except KeyboardInterrupt:
        abandoned.set()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["container"]


class LiveReader(PipeReader):
    """Frames from a live source as FFmpeg receives them, read once in order (see ``PipeReader``).

    Parameters
    ----------
    source : str
        What FFmpeg opens: a stream's URL (``udp://127.0.0.1:5000``, ``srt://HOST:PORT``,
        ``rtmp://...``) or a capture device (``/dev/video0``).
    input_format : str, optional
        FFmpeg's demuxer or device, where the name does not say it (``v4l2``); None to let FFmpeg
        find it.
    timeout : float
        Seconds without data that end the stream (the run then finishes its file).
    open_timeout : float
        Seconds the source may take to open and send the frames that say what it holds.

    Raises
    ------
    VideoError
        The source cannot be opened within ``open_timeout`` (no sender, a wrong address or
        device), holds no video, or fails while read (the message names it and says what to check).
    """

    def __init__(
        self,
        source: str,
        *,
        input_format: str | None = None,
        timeout: float = END_TIMEOUT,
        open_timeout: float = OPEN_TIMEOUT,
    ) -> None:
        av = pyav()
        options = {**OPEN_OPTIONS, **PROTOCOL_OPTIONS.get(live_protocol(source), {})}
        try:
            with said_in_our_words():
                container = _opened_interruptibly(
                    lambda: av.open(source, format=input_format, options=options, timeout=(open_timeout, timeout))
                )
        except av.error.ExitError as error:
            raise VideoError(
                f"{source}: nothing came within {open_timeout:g} s; start the sender after this listener, and "
                "check the address and port"
            ) from error
        except (av.error.FFmpegError, ValueError) as error:  # PyAV says ValueError for an unknown format
            raise VideoError(
                f"{source}: cannot open the live source ({ffmpeg_reason(error)}); check the address, that the "
                "sender is running, and for a device its --format (v4l2)"
            ) from error
        if not container.streams.video:
            container.close()
            raise VideoError(f"{source}: the live source holds no video stream")
        self._begin(container, source, f"the stream ended before its first frame (no data for {timeout:g} s)")
        self._first_pts: int | None = None  # the first frame's timestamp, in the stream's time base
        self._last_timestamp = 0
        self.lost = 0  # frames that never came: gaps in the source's timestamps, read so far
        rate = self._measured_rate() or self.info.frame_rate
        self.info = dataclasses.replace(self.info, other_formats=(), frame_rate=rate)  # its sound is not carried

    def _measured_rate(self) -> Fraction | None:
        """Return the frame rate the stream's first frames' timestamps say, None where they say none.

        A standard rate where one is within RATE_TOLERANCE of it.
        """
        self.frames_ahead(LOOKAHEAD)
        stamps = [frame.pts for frame in self._lookahead if frame.pts is not None]
        steps = [later - earlier for earlier, later in itertools.pairwise(stamps) if later > earlier]
        if not steps:
            return None
        rate = 1 / (statistics.median(steps) * self.info.time_base)
        nearest = min(STANDARD_RATES, key=lambda standard: abs(standard - rate))
        return nearest if abs(nearest - rate) <= RATE_TOLERANCE * rate else Fraction(rate).limit_denominator(1001)

    def _timestamp(self, index: int, decoded: Any) -> int:
        """Return the frame's timestamp in ``info.time_base``: its own, from the first frame's.

        A frame without one, or with one not after the frame before's, is one frame time after that.
        """
        if index == 0:
            self._first_pts, self._last_timestamp = decoded.pts, 0
            return 0
        step = max(1, round(1 / (self.info.frame_rate * self.info.time_base)))
        own = None if decoded.pts is None or self._first_pts is None else decoded.pts - self._first_pts
        if own is None or own <= self._last_timestamp:
            own = self._last_timestamp + step
        self.lost += max(0, round((own - self._last_timestamp) / step) - 1)  # lost in transit, or never sent
        self._last_timestamp = own
        return own

    def _decoded(self) -> Iterator[Any]:
        """Yield the stream's frames as FFmpeg decodes them, to its end or ``timeout`` seconds without data.

        A damaged packet is FFmpeg's to conceal (its errors are shown), and one the decoder cannot
        use is skipped, as the packets before the first keyframe of a stream joined between two; a
        source that fails (a device unplugged) is a VideoError.
        """
        av = pyav()
        stream = self._container.streams.video[0]
        try:
            for packet in self._container.demux(stream):
                try:
                    decoded = packet.decode()
                except av.error.InvalidDataError:  # "non-existing PPS referenced": no keyframe yet
                    continue
                yield from decoded
        except av.error.ExitError:  # no data for the timeout: the stream's end
            yield from stream.codec_context.decode(None)  # the frames the decoder still holds
        except av.error.FFmpegError as error:
            raise VideoError(f"{self.name}: reading the live source stopped: {ffmpeg_reason(error)}") from error
