"""Denoising a whole video file: decoding, filtering and encoding overlapped in threads.

Decoding and encoding run on their own threads, joined to the filter by bounded queues, so the
run goes at the speed of its slowest stage and holds only a few frames whatever the clip's
length. The output is written through ``VideoWriter``: complete, or not at all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..frames import source_bit_depth
from ..media.ffmpeg import VideoError
from ..media.image_sequence import first_image_number, is_image_sequence
from ..media.pipe import LOOKAHEAD, PIPE, PipeReader
from ..media.probe import VideoInfo
from ..media.reader import TimedFrame, VideoReader
from ..media.timecode import timecode_after
from ..media.writer import VideoWriter
from ..media.yuv import YuvLayout
from ..memory import require_cpu_room
from .clip_denoiser import context_frames, denoiser_for
from .denoiser import Denoiser
from .filters import cpu_filter_compiles
from .luma_chroma import LumaChromaDenoiser
from .noise import estimate_noise_over, unclipped_is_surer
from .noise_estimate import LOW_CONFIDENCE, NoiseEstimate
from .params import NLMParams

QUEUE_FRAMES = 8  # frames waiting between two stages
CPU_EXPORT_FRAMES = 9  # float32 frames' worth a CPU export holds besides its window's (cpu_export_bytes)
Progress = Callable[[int, int, float], None]  # frames done, frames in all, seconds since start


class ExportCancelledError(Exception):
    """The run was cancelled; nothing was written.

    Parameters
    ----------
    message : str
        How far the run got, and that the target was not written.
    """


@dataclass(frozen=True)
class ExportSummary:
    """What a finished run did.

    Attributes
    ----------
    frames : int
        Frames denoised and written.
    seconds : float
        Wall-clock time of the run, in seconds.
    backend : str
        "cpu" or "gpu".
    device_name : str
        The processor or GPU(s) the frames were filtered on.
    decoder : str
        "NVDEC" or "CPU".
    damaged_frames : tuple of int
        The source's frames among those written that its decoder marked damaged (numbers in the
        source, 0-based; ``VideoReader.damaged_frames``): written as decoded. Empty for a pipe.
    fps : float
        Frames per second over the run (0 for a run of no time).
    """

    frames: int
    seconds: float
    backend: str
    device_name: str
    decoder: str  # "NVDEC" or "CPU"
    damaged_frames: tuple[int, ...] = ()

    @property
    def fps(self) -> float:
        """Frames a second, 0 where no time has passed."""
        return self.frames / self.seconds if self.seconds > 0 else 0.0

    @property
    def damage_warning(self) -> str | None:
        """What a person should know of ``damaged_frames``, in a sentence; None where there are none."""
        count = len(self.damaged_frames)
        if not count:
            return None
        numbers = ", ".join(str(n + 1) for n in self.damaged_frames[:DAMAGED_NAMED])
        if count > DAMAGED_NAMED:
            numbers += f" and {count - DAMAGED_NAMED} more"
        which = f"{count} frame{'s' if count > 1 else ''} of the source {'are' if count > 1 else 'is'} damaged"
        return (
            f"{which} (frame{'s' if count > 1 else ''} {numbers}, counting from 1): data was missing or corrupt "
            "(a truncated file, a damaged capture) and the decoder filled it in from around it; written as "
            f"decoded. Leave {'them' if count > 1 else 'it'} out of the range exported, or repair or capture the "
            "source again"
        )


DAMAGED_NAMED = 5  # damaged frames a warning names; it counts the rest
_END = object()


class _Prefetch:
    """Iterates ``source`` on a thread of its own, through a bounded queue; errors come through.

    Use as a context manager: leaving it stops and joins the thread, so that the source (a
    decoder) is never touched after its file is closed.
    """

    def __init__(self, source: Iterable) -> None:
        self._items: queue.Queue = queue.Queue(maxsize=QUEUE_FRAMES)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, args=(source,), name="nlmeans-decode", daemon=True)
        self._thread.start()

    def _produce(self, source: Iterable) -> None:
        try:
            for item in source:
                if not self._put(item):
                    return
            self._put(_END)
        except BaseException as error:  # handed to the consumer, raised there
            self._put(error)

    def _put(self, item: object) -> bool:
        """Queue ``item`` unless stopped first; False when stopped."""
        while not self._stop.is_set():
            try:
                self._items.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator:
        while (item := self._items.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield item

    def __enter__(self) -> _Prefetch:
        return self

    def __exit__(self, *exception: object) -> None:
        self._stop.set()
        self._thread.join()


class _BackgroundWriter:
    """Feeds a VideoWriter on a thread of its own through a bounded queue."""

    def __init__(self, writer: VideoWriter) -> None:
        self._writer = writer
        self._frames: queue.Queue = queue.Queue(maxsize=QUEUE_FRAMES)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="nlmeans-encode", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._frames.get()) is not _END:
            if self._error is None:
                try:
                    self._writer.write(item)
                except BaseException as error:  # raised on the caller's thread
                    self._error = error

    def write(self, frame: TimedFrame) -> None:
        if self._error is not None:
            raise self._error
        self._frames.put(frame)

    def finish(self) -> None:
        """Wait until every frame is encoded; raise what the encoder raised."""
        self._frames.put(_END)
        self._thread.join()
        if self._error is not None:
            raise self._error


# A file, an image sequence, or standard input ("-" or a PipeReader), or a reader already open
Source = str | Path | PipeReader | VideoReader


def _opened(
    source: Source, hardware_decoding: bool = False, frame_rate: float | None = None
) -> contextlib.AbstractContextManager:
    """Return a reader of ``source``.

    A VideoReader (an image sequence's at ``frame_rate``), or for standard input a PipeReader
    (read once); a reader given is used as it is, and left open.
    """
    if isinstance(source, (PipeReader, VideoReader)):
        return contextlib.nullcontext(source)
    if str(source) == PIPE:
        return PipeReader()
    return VideoReader(source, hardware_decoding=hardware_decoding, frame_rate=frame_rate)


def sound_lead(reader: VideoReader | PipeReader, first: int) -> float:
    """Return the seconds of sound (or subtitles) before frame 0 an export from ``first`` keeps (0 but from frame 0).

    A file whose video starts after its sound (a recorder's, or a muxer's ``-itsoffset``) kept its
    picture but lost the sound before it, every time shifted. An export from its first frame keeps
    that sound, the picture starting as late as in the source, as FFmpeg's own copy does. A lead
    under a frame (AAC's priming, an MPEG-PS file's first audio frame) is left to the copy's own
    handling of times before the first frame.

    Parameters
    ----------
    reader : VideoReader or PipeReader
        The source, open.
    first : int
        The export's first frame.

    Returns
    -------
    float
        Seconds, 0 or at least one frame's.
    """
    info = reader.info
    if first != 0 or not isinstance(reader, VideoReader) or info.others_start is None:
        return 0.0
    lead = info.start_time - info.others_start
    return lead if lead >= 1 / float(info.frame_rate) else 0.0


def frame_range(
    reader: VideoReader | PipeReader, start: float, duration: float | None, frames: range | None = None
) -> tuple[int, int | None]:
    """Return [first, last) frame numbers: ``frames`` as given, else those shown from ``start`` for ``duration``.

    ``start`` and ``duration`` in seconds (to the end if None: last is None where the end is not
    known, in a pipe), by the frames' own timestamps (variable frame rates too).

    Raises
    ------
    ValueError
        ``frames`` outside the clip or given with ``start`` or ``duration``; no frames in the range.
    """
    info = reader.info
    if frames is not None:
        if start != 0 or duration is not None:
            raise ValueError(f"give frames, or start and duration, not both: got {frames=}, {start=}, {duration=}")
        count = info.frame_count or math.inf  # a pipe's length is not known
        if frames.step != 1 or not 0 <= frames.start < frames.stop <= count:
            raise ValueError(
                f"{info.path}: frames must be range(first, stop) with 0 <= first < stop <= {count}, got {frames}"
            )
        return frames.start, frames.stop
    first = reader.frame_at(start)
    last = (info.frame_count or None) if duration is None else reader.frame_at(start + duration)
    if last is not None and last <= first:
        end = "the end of the clip" if duration is None else f"{start + duration:.6g} s"  # not 1.9909999999999999
        length = f" (the clip lasts {info.duration:.1f} s)" if info.duration else ""
        raise ValueError(f"{info.path}: no frames between {start:.6g} s and {end}{length}")
    return first, last


def estimate_clip_noise(
    source: Source,
    roi: tuple[int, int, int, int] | None = None,
    start: float = 0.0,
    duration: float | None = None,
) -> NoiseEstimate:
    """Return the noise of a clip, as ``denoise --noise auto`` measures it.

    NOISE_PLACES pairs of consecutive frames spread over it (``estimate_noise_over``); where they
    read unsure, read unclipped too (``unclipped_frame``: a Y'CbCr source's noise where RGB clips it).

    Parameters
    ----------
    source : str, Path, PipeReader or VideoReader
        A video file, an image sequence's pattern, or standard input, or an open reader of one;
        a pipe's noise is estimated on its first frames.
    roi : (x, y, width, height), optional
        A flat region, in pixels, measured on each pair; None: flat blocks found automatically.
    start, duration : float
        The range of the clip, in seconds (None: to its end).

    Returns
    -------
    NoiseEstimate
        The pairs' estimate of median average sigma. Where a range of a file reads with low
        confidence and the whole file as surely or more, the whole file's, its warning saying so;
        else, where the range read unclipped is surer (``unclipped_is_surer``), that reading.

    Raises
    ------
    ValueError
        No frames in the range, a pipe asked to start past its first frames, or a region
        ``estimate_noise`` refuses.
    VideoError
        The file cannot be read.
    """
    with _opened(source) as reader:
        first, last = frame_range(reader, start, duration)
        if isinstance(reader, PipeReader):  # measured on the frames its lookahead holds, whatever the duration
            if first + 2 > LOOKAHEAD:
                raise ValueError("from a pipe the noise is estimated on its first frames: give --h, or start at 0")
            last = reader.frames_ahead(first + 2 if last is None else last)
            if last <= first:
                raise ValueError(f"standard input: the stream holds {last} frames, none from {start} s")
        depth = source_bit_depth(reader.info.dtype)
        estimate = estimate_noise_over(reader.frame, first, last, roi, bit_depth=depth)[1]
        if estimate.confidence >= LOW_CONFIDENCE:
            return estimate
        if roi is None and isinstance(reader, VideoReader) and (first, last) != (0, len(reader)):
            # A range that reads unsure (a test pattern's flat box out of it): the clip's noise is
            # the range's, and where the whole clip reads it as surely or more, with pairs spread
            # over more scenes, that reading stands (a DVD's 1.5 s read 4 times its noise, the
            # whole clip right, both at 0.40).
            _, whole = estimate_noise_over(
                reader.frame, 0, len(reader), bit_depth=depth, unclipped=reader.unclipped_frame
            )
            if whole.confidence >= estimate.confidence:
                note = f"read on the whole clip, where the range's frames read unsure ({estimate.confidence:.2f})"
                return dataclasses.replace(whole, warning=note if whole.warning is None else f"{whole.warning}; {note}")
        # Unsure as decoded: the range read where RGB does not clip its noise (a Y'CbCr source's
        # saturated colours), as ``estimate_noise_over`` reads it given ``unclipped``.
        unclipped = estimate_noise_over(reader.unclipped_frame, first, last, roi, bit_depth=depth)[1]
        return unclipped if unclipped_is_surer(unclipped, estimate) else estimate


def clip_sample(source: Source, count: int, start: float = 0.0, duration: float | None = None) -> np.ndarray:
    """``count`` consecutive frames from the middle of a clip's range, for SURE to choose the strength on.

    A pipe's: its first frames. SURE runs in ``default_filter.choose_filter``; fewer frames where
    the range is shorter. (T, H, W, C) as the reader gives them.

    Raises
    ------
    ValueError, VideoError
        As ``estimate_clip_noise``.
    """
    with _opened(source) as reader:
        first, last = frame_range(reader, start, duration)
        if isinstance(reader, PipeReader):
            last = reader.frames_ahead(first + count)
        elif last is None:
            last = first + count
        middle = max(first, (first + last - count) // 2)
        return decoded_run(reader.frame, middle, min(middle + count, last))


def decoded_run(frame: Callable[[int], np.ndarray], first: int, stop: int) -> np.ndarray:
    """Return frames ``first`` .. ``stop`` - 1 as ``frame(i)`` gives them, up to the first that does not decode.

    A sample for SURE from a file damaged or cut short within it: fewer frames (none: SURE is
    left out), not an error.

    Parameters
    ----------
    frame : callable
        ``frame(i)`` is frame i, an array; a VideoError where it does not decode.
    first, stop : int
        The frames asked for: ``first`` .. ``stop`` - 1.

    Returns
    -------
    numpy.ndarray
        (T, H, W, C), the frames stacked; (0,) where the first does not decode.
    """
    frames = []
    for index in range(first, stop):
        try:
            frames.append(frame(index))
        except VideoError:
            break
    return np.array(frames)


def _with_context(
    reader: VideoReader | PipeReader, frames: range | None, whole: range, context: tuple[int, int]
) -> tuple[range, int]:
    """Return the frames a segment ``frames`` of ``whole`` is read as (``context``: before, after), and the origin.

    The origin is the timestamp of the whole's first frame, at which the segment's clock starts.
    """
    if frames is None or not isinstance(reader, VideoReader):
        raise ValueError(f"segment_of is the range of a file that frames are a segment of; got frames {frames}")
    if whole.step != 1 or not 0 <= whole.start <= frames.start < frames.stop <= whole.stop <= len(reader):
        raise ValueError(f"segment_of must be a range(first, stop) of the clip holding {frames}, got {whole}")
    before, after = context
    read = range(max(whole.start, frames.start - before), min(whole.stop, frames.stop + after))
    return read, reader.timestamp(whole.start)


def _around(reader: VideoReader | PipeReader, first: int, last: int | None, context: tuple[int, int]) -> range:
    """Return the frames decoded for frames ``first`` .. ``last`` - 1: ``context`` (before, after) more in the file.

    Filtered, not written: the first and last frames of a part (a chapter, the window's marks) then
    equal the whole file's, and parts join without a seam (they differed by 1.2 levels on average).
    A pipe, which cannot go back, and a range to the end are read as they are.
    """
    if last is None or not isinstance(reader, VideoReader):
        return range(first, last or first)
    before, after = context
    return range(max(0, first - before), min(len(reader), last + after))


def converted_by_filter(
    denoiser: Any, reader: VideoReader | PipeReader, writer: VideoWriter | None
) -> YuvLayout | None:
    """Return the writer's Y'CbCr layout where the filter takes and gives the frames' planes, else None.

    From a source decoded to Y'CbCr into an output encoded from it (their ``export_yuv``): the
    luma/chroma mode on either backend, which filters the planes' own Y' and chroma (past the range
    kept), where source and output share a matrix; the plain filter on one GPU, which converts both
    ways there (the same samples as the CPU's conversions, none of its time).
    """
    converts = isinstance(denoiser, (Denoiser, LumaChromaDenoiser)) and denoiser.converts_yuv
    if not converts or writer is None or reader.yuv_layout is None or writer.yuv_layout is None:
        return None
    if isinstance(denoiser, LumaChromaDenoiser) and reader.yuv_layout.weights != writer.yuv_layout.weights:
        return None
    return writer.yuv_layout


def _decoded(reader: VideoReader | PipeReader, read: range, yuv: YuvLayout | None) -> Iterator[TimedFrame]:
    """Frames ``read`` of the source (all from ``read.start`` where it is empty: a pipe), as planes where ``yuv``."""
    return itertools.islice(reader.timed_frames(read.start, yuv=yuv is not None), len(read) or None)


def denoised(
    denoiser: Any, frames: Iterable[TimedFrame], dtype: np.dtype, yuv: YuvLayout | None = None
) -> Iterator[TimedFrame]:
    """``frames`` through ``denoiser.export_stream``, each output in its input's TimedFrame.

    Through ``export_yuv`` into Y'CbCr frames of ``yuv`` where given.

    Its number and timestamp kept, its array replaced: the stream gives one output per input, in
    order.
    """
    timed, inputs = itertools.tee(frames)  # the denoisers pull their inputs on this thread
    arrays = (frame.array for frame in inputs)
    stream = denoiser.export_stream(arrays, dtype) if yuv is None else denoiser.export_yuv(arrays, dtype, yuv)
    with contextlib.closing(stream) as outputs:
        for frame, array in zip(timed, outputs, strict=True):
            yield dataclasses.replace(frame, array=array)


def cpu_export_bytes(info: VideoInfo, params: NLMParams) -> int:
    """Bytes a CPU export of ``info``'s frames holds at its peak.

    Frames read ahead and written behind, and for each frame of the temporal window its float32 copy
    and two padded planar ones (a 1080p export: 301 MB with a window of one frame, 589 MB with five,
    measured).
    """
    window = params.frames_past + params.frames_future + 1
    return (CPU_EXPORT_FRAMES + 3 * window) * 4 * info.width * info.height * info.channels


def _first_number(reader: VideoReader | PipeReader) -> int:
    """Return the number an image sequence written from ``reader``'s frame 0 starts at.

    A sequence's own first image's (a reel scanned from 086400 keeps its numbers), else 1, as
    FFmpeg numbers them.
    """
    return first_image_number(reader.path) if is_image_sequence(reader.path) else 1


def denoise_file(
    source: Source,
    target: str | Path,
    params: NLMParams,
    *,
    backend: str = "auto",
    codec: str = "h264",
    crf: int = 18,
    preset: str = "medium",
    overwrite: bool = False,
    rgb: bool = False,
    start: float = 0.0,
    duration: float | None = None,
    frames: range | None = None,
    segment_of: range | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    luma_chroma: tuple[float, float, str] | None = None,
    guide: str | None = None,
    devices: Sequence[int] | str | None = None,
    frame_rate: float | None = None,
) -> ExportSummary:
    """Denoise ``source`` into ``target`` and return what was done.

    Decoding, filtering and encoding overlap on threads; the output is complete or not written
    at all (``VideoWriter``).

    Parameters
    ----------
    source : str, Path, PipeReader or VideoReader
        A video file, an image sequence's pattern, or standard input ("-" or a PipeReader), or
        an open reader of one (left open; a VideoReader decodes as it was opened, on NVDEC or not).
    target : str or Path
        The output, as ``VideoWriter`` takes it (a file, an image sequence, or "-" for y4m on
        standard output).
    params : NLMParams
        The filter.
    backend : {"auto", "cpu", "gpu"}
        As ``Denoiser`` takes it; on the GPU, frames of a file named are decoded on NVDEC where it can.
    overwrite : bool
        Replace an existing ``target``.
    luma_chroma : (h_luma, h_chroma, matrix), optional
        Filter in Y'CbCr with a strength for Y and one for Cb/Cr (``engine.video.luma_chroma``);
        ``params`` then gives the window, weighting and centre weight.
    guide : {"prefilter"}, optional
        Two passes (``engine.video.guided``): a first pass with ``params`` makes the guide, the second
        takes its patch distances from it. Either backend; not with ``luma_chroma`` or ``devices``.
    devices : "all" or sequence of int, optional
        GPUs to share the clip (``video.several_gpus``: chunks of frames, concurrently); the
        result equals one GPU's. The plain filter only: not with ``luma_chroma`` or ``guide``.
    codec, crf, preset, rgb
        The output's encoding, as ``VideoWriter`` takes it.
    start, duration : float
        The part of the clip to denoise, in seconds (the whole clip by default): the frames
        shown from ``start`` on, before ``start + duration``.
    frames : range, optional
        The part of the clip to denoise by frame number, ``range(first, stop)`` (``stop``
        excluded), instead of ``start`` and ``duration``: exact where seconds are rounded (at
        29.97 fps frame 10 begins at 0.33367 s, so a start of 0.334 s is frame 11).
    segment_of : range, optional
        With ``frames``: the whole range that ``frames`` is a segment of, ``range(first, stop)``.
        The segment is read with the frames of context its window needs on each side within the
        whole (``context_frames``: Dp before, Df after), which are filtered but not written, so
        its frames equal the whole's; they keep their times in the whole (its first frame at 0),
        and the audio and subtitles are left out, for ``media.join.join_segments`` to copy once.
    progress : callable, optional
        Called after each frame with (frames done, frames in all or 0 when unknown (a pipe),
        seconds elapsed).
    cancel : threading.Event, optional
        Set it from another thread to stop; ``ExportCancelledError`` is raised and nothing is written.
    frame_rate : float, optional
        An image sequence's frames a second, which its images do not carry (``VideoReader``'s
        ``frame_rate``): 24 for film scans; FFmpeg's 25 where None. ValueError for a video.

    Returns
    -------
    ExportSummary
        Frames written, seconds taken, backend, device name and decoder.

    Raises
    ------
    VideoError
        The source cannot be read or the target written (the message says why), or the source
        ended before the frames asked for.
    ValueError
        An unknown ``guide``, ``guide`` or ``devices`` with the luma/chroma mode, ``devices``
        with ``guide`` or off the GPU backend, no frames between ``start`` and
        ``start + duration``, ``frames`` outside the clip or given with them, or ``segment_of``
        without ``frames`` or not holding them.
    BackendUnavailableError
        backend="gpu" (or ``devices``) where the GPU cannot run.
    ExportCancelledError
        ``cancel`` was set.
    MemoryError
        On the CPU, an export that would not fit the process's address-space limit (``ulimit -v``),
        said before the first frame; the message says what to lower.
    """
    cancel = cancel or threading.Event()
    denoiser = denoiser_for(params, backend=backend, luma_chroma=luma_chroma, guide=guide, devices=devices)
    started = time.perf_counter()
    with _opened(source, hardware_decoding=denoiser.backend == "gpu", frame_rate=frame_rate) as reader:
        info, decoder = reader.info, reader.decoder
        if denoiser.backend == "cpu":
            smaller = "use a smaller temporal window (frames_past, frames_future)"
            require_cpu_room(cpu_export_bytes(info, params), compiles=cpu_filter_compiles, smaller=smaller)
        first, last = frame_range(reader, start, duration, frames)
        total = 0 if last is None else last - first  # 0: unknown until the pipe ends
        done = 0
        lead = sound_lead(reader, first) if segment_of is None else 0.0
        span = (
            reader.start_time(first) - lead,
            reader.start_time(last) if last and last < info.frame_count else math.inf,
        )
        like = reader if isinstance(reader, VideoReader) else info  # a file's sound is copied through its reader
        # The picture from 0 (None: the first frame's own time), or as late after the sound as in the source.
        origin = reader.timestamp(first) - round(lead / info.time_base) if lead else None
        context = context_frames(params, guide=guide)
        if segment_of is not None:
            read, origin = _with_context(reader, frames, segment_of, context)
        else:  # a part of a file is read with its window's frames around it: its frames equal the whole's
            read = _around(reader, first, last, context)
        with (
            VideoWriter(
                target,
                like,
                codec=codec,
                crf=crf,
                preset=preset,
                overwrite=overwrite,
                span=span,
                rgb=rgb,
                origin=origin,
                copy_streams=segment_of is None,
                first_number=_first_number(reader) + first,
                timecode=timecode_after(info.timecode, info.frame_rate, first) if info.timecode else None,
            ) as writer,
            _Prefetch(_decoded(reader, read, yuv := converted_by_filter(denoiser, reader, writer))) as decoded,
            contextlib.closing(denoised(denoiser, decoded, info.dtype, yuv)) as filtered,
        ):
            lead = first - read.start  # the context's outputs, before and after, are not written
            outputs = itertools.islice(filtered, lead, lead + total if total else None)
            encoder = _BackgroundWriter(writer)
            try:
                for frame in outputs:
                    if cancel.is_set():
                        raise ExportCancelledError(
                            f"cancelled after {done} of {total} frames; {target} was not written"
                        )
                    encoder.write(frame)
                    done += 1
                    if progress is not None:
                        progress(done, total, time.perf_counter() - started)
            finally:
                encoder.finish()
            if cancel.is_set():  # after the last frame, while the encoder finished: nothing is kept either
                raise ExportCancelledError(f"cancelled after all {done} frames; {target} was not written")
            if total and done != total:  # a stream that ended early: the writer is aborted, nothing is kept
                raise VideoError(f"{source}: read {done} of the {total} frames to denoise; {target} was not written")
            if not done:  # a pipe that ended before --start (a file's range is checked above): no empty file
                raise VideoError(f"standard input: the stream ended before {start} s; {target} was not written")
        written = range(first, first + done)
        damaged = tuple(n for n in reader.damaged_frames if n in written) if isinstance(reader, VideoReader) else ()
    seconds = time.perf_counter() - started
    return ExportSummary(done, seconds, denoiser.backend, denoiser.device_name, decoder, damaged)
