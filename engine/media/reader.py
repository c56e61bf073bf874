"""Reading a video.

``VideoReader`` decodes any container and codec the bundled FFmpeg reads into RGB (or gray) uint8 /
uint16 frames, sequentially or by index, every frame identified by its timestamp in the frame index
(``probe_video`` makes both); ``read_frames`` reads a clip at once. Errors are ``VideoError`` with
one line a person can act on.
"""

from __future__ import annotations

import collections
import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ..frames import to_float32
from .ffmpeg import CODEC_THREADS, VideoError, ffmpeg_reason, pyav
from .formats import array_format
from .frame_index import FrameIndex
from .image_sequence import is_image_sequence, sequence_files, sequence_rate
from .probe import VideoInfo, open_input, probe_video
from .yuv import YuvFrame, YuvLayout, frame_planes, planes_to_rgb, yuv_layout

# The names of video files, as the window's open dialog and ``batch``'s folders pick them out; any
# file FFmpeg reads is read, whatever its name.
VIDEO_SUFFIXES = (
    ".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".mxf", ".mts", ".m2ts", ".ts", ".mpg", ".mpeg", ".vob",
    ".wmv", ".flv", ".dv", ".y4m", ".nut", ".ogv", ".3gp",
)  # fmt: skip

CACHE_FRAMES = 24  # decoded frames kept for random access


@dataclass(frozen=True, eq=False)
class TimedFrame:
    """A frame with its place in the clip, as ``VideoReader.timed_frames`` gives it.

    The export replaces only its ``array`` (``dataclasses.replace``), and ``VideoWriter.write``
    shows it at its ``timestamp``.

    Attributes
    ----------
    number : int
        The frame's number in the clip, from 0.
    timestamp : int
        When it is shown, in the source's ``info.time_base`` units as the file has it.
    array : numpy.ndarray or YuvFrame
        Its pixels, (H, W, C); or its Y'CbCr planes as decoded (``timed_frames(yuv=True)``).
    """

    number: int
    timestamp: int
    array: np.ndarray


def decoded_array(frame: Any, info: VideoInfo, *, unclipped: bool = False) -> np.ndarray:
    """Return a decoded frame as (H, W, C) of ``info.dtype``, or ``unclipped`` float32 in 0..1.

    Y'CbCr converted to RGB by ``media.yuv`` (exact at every depth, where swscale keeps 8 bits of a
    10-bit source), others by swscale. ``unclipped``: Y'CbCr's colours past RGB's range
    (super-whites, sub-blacks, saturated colours that noise takes out of gamut) stay past it,
    unrounded; other formats' samples scaled to 0..1.
    """
    layout = yuv_layout(frame.format.name, info.color, frame.height) if info.channels == 3 else None
    if layout is not None:
        return planes_to_rgb(frame_planes(frame, layout), layout, np.dtype(np.float32) if unclipped else info.dtype)
    array = frame.to_ndarray(format=array_format(info.channels, info.bit_depth, info.floating))
    array = array.reshape(array.shape[0], array.shape[1], -1)
    return to_float32(array) if unclipped else array


class _Decoder:
    """Decodes one stream from any frame on.

    Seeks to an entry point and identifies every decoded frame by its timestamp in the index, so a
    frame is returned only as the number it is.

    Where a seek lands after the frame it was meant for (transport streams seek by guessing a
    byte position), an earlier entry point is tried, and at last the file is decoded from its
    start. Frames the index cannot identify are never returned, nor, after a seek, those before
    the first keyframe decoded (an open GOP's leading pictures need the GOP before it).
    """

    def __init__(
        self, path: Path, index: FrameIndex, hardware_decoding: bool = False, frame_rate: Fraction | None = None
    ) -> None:
        self._path, self._index, self._hardware, self._frame_rate = path, index, hardware_decoding, frame_rate
        self._keyframes = frozenset(int(entry) for entry in index.entries)
        self._container: Any = None

    def close(self) -> None:
        if self._container is not None:
            self._container.close()
            self._container = None

    def frames_from(self, number: int, lead: int = 0) -> Iterator[tuple[int, Any]]:
        """(frame number, decoded frame) for frames ``number``, ``number + 1``, ... to the end.

        After those of the ``lead`` frames before ``number`` that decoding passes on its way.
        """
        av = pyav()
        expected = number
        try:
            for found, frame in self._positioned(number):
                if found < number:
                    if found >= number - lead:
                        yield found, frame
                    continue
                if found > expected:
                    raise VideoError(
                        f"{self._path}: frame {expected} could not be decoded (the decoder skipped it; "
                        f"the file is damaged near frame {expected})"
                    )
                if found == expected:  # else a frame the decoder gave twice
                    yield found, frame
                    expected += 1
        except av.error.FFmpegError as error:
            failed = f"decoding stopped at frame {expected + 1} (counting from 1)"
            if is_image_sequence(self._path):
                failed += f", the image {sequence_files(self._path)[expected].name}: {ffmpeg_reason(error)}"
            else:  # FFmpeg's reason alone ("Operation not permitted" for a DV frame cut short) says little
                failed += f": the file is damaged or cut short there (FFmpeg: {ffmpeg_reason(error)})"
            raise VideoError(f"{self._path}: {failed}") from error
        if expected < self._index.frame_count:
            raise VideoError(
                f"{self._path}: the stream ends after {expected} of its {self._index.frame_count} frames "
                "(the file is truncated or damaged)"
            )

    def _positioned(self, number: int) -> Iterator[tuple[int, Any]]:
        """Yield identified frames from an entry point whose first one is at or before ``number``."""
        if not self._index.has_timestamps:  # frames known only by their order: from the start
            yield from enumerate(self._decode(None))
            return
        for entry, seek_timestamp in self._index.entries_before(number):
            frames = self._identified(self._decode(seek_timestamp if entry else None), after_seek=entry > 0)
            first = next(frames, None)
            if first is not None and first[0] <= number:
                yield first
                yield from frames
                return
        raise VideoError(f"{self._path}: frame {number} could not be decoded from any point of the file")

    def _identified(self, frames: Iterator[Any], *, after_seek: bool) -> Iterator[tuple[int, Any]]:
        trusted = not after_seek
        for frame in frames:
            found = self._index.number_of(frame.pts)
            trusted = trusted or found in self._keyframes
            if found is not None and trusted:
                yield found, frame

    def _decode(self, seek_timestamp: int | None) -> Iterator[Any]:
        """Yield decoded frames from the keyframe at ``seek_timestamp`` (None: the file's start).

        The packet the index leaves out is not decoded: where it fails, with frame threads, its error
        would come before the frames decoded ahead of it.
        """
        av = pyav()
        if seek_timestamp is not None:
            stream = self._opened().streams.video[0]
            try:
                self._container.seek(seek_timestamp, stream=stream, backward=True)
            except av.error.FFmpegError:
                return  # this container cannot seek there: an earlier entry point is tried
        else:  # a new demuxer: exactly FFmpeg's sequential decode, whatever the container's seeking
            self.close()
            stream = self._opened().streams.video[0]
        left_out = self._index.left_out
        for packet in self._container.demux(stream):
            if left_out is not None and packet.pts == left_out:
                continue  # the end of a file cut short, read in part: its frame is left out (media.frame_index)
            yield from packet.decode()

    def _opened(self) -> Any:
        if self._container is None:
            self._container = open_input(self._path, self._hardware, self._frame_rate)
            self._container.streams.video[0].thread_type = CODEC_THREADS
        return self._container


def source_yuv_layout(info: VideoInfo) -> YuvLayout | None:
    """Return the Y'CbCr layout in which a source of ``info`` gives its frames' planes, as decoded.

    None where they are not converted by ``media.yuv`` (RGB, gray, packed formats) or come
    rotated (a rotation applies to RGB): those frames are RGB before anything filters them.
    """
    if info.channels != 3 or info.rotation:
        return None
    return yuv_layout(info.pixel_format, info.color, info.height)


class VideoReader:
    """Frames of a video file as (H, W, 3) RGB or (H, W, 1) gray uint8 / uint16 arrays.

    Frame n is the n-th frame FFmpeg's sequential decode of the file presents, and
    ``info.frame_count`` is how many it presents: the frame index (``media.frame_index``) knows
    them from the packets, and every decoded frame is identified by its timestamp before it is
    returned, so ``frame(i)`` in any order returns exactly what ``frames()`` gives. Use as a
    context manager. Frames come upright: a rotation the file asks for (its display matrix, as
    phones write) is applied, and ``info`` gives the upright size.

    ``hardware_decoding`` decodes on the GPU's video decoder (NVDEC, through FFmpeg's CUDA
    hwaccel) where there is one and it takes the codec, else on the CPU: the same frames
    (decoding is bit-exact by the codecs' standards), with the CPU left to the encoder.

    Parameters
    ----------
    path : str or Path
        A video file, or an image sequence's pattern (``scans/%06d.png``).
    hardware_decoding : bool
        Decode on NVDEC where it can (see above); CPU decoding by default.
    frame_rate : float or Fraction, optional
        An image sequence's frames a second (23.976: NTSC's 24000/1001), which its images do not
        carry; FFmpeg's 25 where None. ValueError for a video, which has its own.

    Attributes
    ----------
    path : Path
        The file.
    info : VideoInfo
        What the file holds: size, frame count, rates, color metadata.
    decoder : str
        Where frames are decoded: "NVDEC" or "CPU".
    frame_times : numpy.ndarray
        When each frame is shown, in seconds from frame 0 (float64).
    damaged_frames : tuple of int
        The frames read so far that the decoder marked damaged (see the property).

    Raises
    ------
    VideoError
        A missing file, a file that is not a video, an unsupported pixel format, or a stream
        that stops decoding (the message names the frame); PyAV missing. Reading from a closed
        reader.
    TypeError
        ``path`` is not a file name (None, a number).
    IndexError
        ``frame(i)`` or ``frames(start)`` outside 0 .. ``info.frame_count`` - 1.
    """

    def __init__(
        self, path: str | Path, *, hardware_decoding: bool = False, frame_rate: float | Fraction | None = None
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file name (str or Path), got {type(path).__name__} {str(path)[:40]!r}")
        self.path = Path(path)
        self._hardware = hardware_decoding
        self._frame_rate = None if frame_rate is None else sequence_rate(self.path, frame_rate)
        self.info, self._index = probe_video(self.path, self._frame_rate)
        self._decoder = _Decoder(self.path, self._index, hardware_decoding, self._frame_rate)
        self._cursor: Iterator[tuple[int, Any]] | None = None
        self._cursor_next = 0  # the frame number the cursor decodes next
        self._closed = False
        self._cache: collections.OrderedDict[int, Any] = collections.OrderedDict()  # arrays or decoded frames
        self._damaged: set[int] = set()

    @property
    def damaged_frames(self) -> tuple[int, ...]:
        """The frames read so far (0-based, increasing) that the decoder marked damaged.

        Data was missing or corrupt (a truncated file, a damaged tape capture, a broken packet) and
        FFmpeg filled it in from around it: such a frame is returned as decoded, as players show it.
        """
        return tuple(sorted(self._damaged))

    @property
    def decoder(self) -> str:
        """Where frames are decoded: "NVDEC" (the GPU's video decoder) or "CPU"."""
        if not self._hardware:
            return "CPU"
        with open_input(self.path, hardware_decoding=True, frame_rate=self._frame_rate) as container:
            return "NVDEC" if container.streams.video[0].codec_context.is_hwaccel else "CPU"

    def __enter__(self) -> VideoReader:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (idempotent)."""
        self._cursor = None
        self._decoder.close()
        self._closed = True

    def demuxer(self) -> Any:
        """Return the file opened again, at its start: a PyAV container the caller closes.

        The writer copies the audio and subtitle streams from it (``VideoWriter`` given this
        reader): a pass from the file's start has a demuxer of its own, as ``timed_frames`` has.
        """
        self._check_open()
        return open_input(self.path, frame_rate=self._frame_rate)

    def _check_open(self) -> None:
        if self._closed:
            raise VideoError(f"{self.path}: the reader is closed; open the file again to read it")

    def __len__(self) -> int:
        return self.info.frame_count

    @functools.cached_property
    def frame_times(self) -> np.ndarray:
        """When each frame is shown, in seconds from frame 0.

        Float64, variable frame rates too; at the nominal rate for a stream without timestamps.
        """
        if self._index.has_timestamps:
            return (self._index.timestamps - self._index.timestamps[0]) * float(self.info.time_base)
        return np.arange(self.info.frame_count) / float(self.info.frame_rate)

    def start_time(self, index: int) -> float:
        """When frame ``index`` is shown, in seconds from frame 0."""
        return float(self.frame_times[index])

    def timestamp(self, index: int) -> int:
        """When frame ``index`` is shown, in ``info.time_base`` units as the file has it.

        At the nominal rate for a stream without timestamps.
        """
        if self._index.has_timestamps:
            return int(self._index.timestamps[index])
        return round(Fraction(index) / self.info.frame_rate / self.info.time_base)

    @property
    def keyframes(self) -> np.ndarray:
        """The numbers of the frames decoding can start at (int64, increasing, 0 first): the stream's keyframes."""
        return self._index.entries

    def frame_at(self, seconds: float) -> int:
        """Return the first frame shown at or after ``seconds`` from frame 0 (``frame_count`` if none)."""
        return int(np.searchsorted(self.frame_times, seconds - 1e-9))

    def frames(self, start: int = 0) -> Iterator[np.ndarray]:
        """Decode frames start, start + 1, ... to the end, in order."""
        yield from (timed.array for timed in self.timed_frames(start))

    @property
    def yuv_layout(self) -> YuvLayout | None:
        """The decoded frames' Y'CbCr layout, in which ``timed_frames(yuv=True)`` gives them (``source_yuv_layout``)."""
        return source_yuv_layout(self.info)

    def timed_frames(self, start: int = 0, *, yuv: bool = False) -> Iterator[TimedFrame]:
        """Frames start, start + 1, ... with their numbers and timestamps.

        Each frame's presentation time in ``info.time_base`` units as the file has it (variable
        frame rates kept). ``yuv``: each frame's array is a ``YuvFrame``, its planes as decoded
        (for the GPU to convert), where ``yuv_layout`` is not None.

        Decodes with a demuxer of its own, so random access meanwhile does not disturb it.
        """
        self._check_open()
        if not 0 <= start < self.info.frame_count:
            raise IndexError(f"the first frame must be in 0..{self.info.frame_count - 1}, got {start}")
        decoder = _Decoder(self.path, self._index, self._hardware)
        try:
            layout = self.yuv_layout if yuv else None
            for number, frame in decoder.frames_from(start):
                pixels = self._array(frame, number) if layout is None else self._planes(frame, number, layout)
                yield TimedFrame(number, self._timestamp(number, frame), pixels)
        finally:
            decoder.close()

    def _timestamp(self, number: int, frame: Any) -> int:
        if not self._index.has_timestamps and frame.pts is not None:
            return frame.pts
        return self.timestamp(number)

    def frame(self, index: int) -> np.ndarray:
        """Frame ``index`` (0-based), by decoding forward.

        Decoding starts from the entry point before it, or from where the last call left off when no
        entry point lies between. The frames decoded on the way are kept too (CACHE_FRAMES of them),
        so stepping backwards is instant.
        """
        self._decode_to(index)
        return self._cached(index)

    def unclipped_frame(self, index: int) -> np.ndarray:
        """Frame ``index`` as float32 RGB in 0..1, unrounded, nothing clipped (``decoded_array``).

        A Y'CbCr source's pixels as the filter of its planes sees them: what the noise estimate
        reads (RGB's clipping cuts the noise off: saturated colour bars read half their sigma).
        """
        if isinstance(self._cache.get(index), np.ndarray):  # converted by ``frame``: its planes are gone
            del self._cache[index]
        self._decode_to(index)
        self._cache.move_to_end(index)
        return self._array(self._cache[index], index, unclipped=True)

    def _decode_to(self, index: int) -> None:
        """Have frame ``index`` in the cache: decoded, or converted already."""
        self._check_open()
        if not 0 <= index < self.info.frame_count:
            raise IndexError(f"frame index must be in 0..{self.info.frame_count - 1}, got {index}")
        if index in self._cache:
            return
        entry, _ = self._index.entries_before(index)[0]
        if self._cursor is None or not entry <= self._cursor_next <= index:
            self._cursor = self._decoder.frames_from(index, lead=0 if self._hardware else CACHE_FRAMES - 1)
        try:
            for number, decoded in self._cursor:
                self._cursor_next = number + 1
                self._keep(number, decoded)  # those passed on the way too (not from NVDEC, whose surfaces are few)
                if number == index:
                    return
        except VideoError:
            self._cursor = None
            raise
        self._cursor = None
        raise VideoError(f"{self.path}: frame {index} could not be decoded (the stream ends before it)")

    def _keep(self, index: int, decoded: Any) -> None:
        """Keep a decoded frame in the cache, dropping the least recently used past CACHE_FRAMES."""
        self._cache[index] = decoded
        self._cache.move_to_end(index)
        if len(self._cache) > CACHE_FRAMES:
            self._cache.popitem(last=False)

    def _cached(self, index: int) -> np.ndarray:
        """Return a cached frame as an array, converted the first time it is asked for."""
        self._cache.move_to_end(index)
        item = self._cache[index]
        if not isinstance(item, np.ndarray):
            item = self._cache[index] = self._array(item, index)
        return item

    def _array(self, frame: Any, number: int, *, unclipped: bool = False) -> np.ndarray:
        """Return decoded frame ``number`` as an upright (H, W, C) array of ``info.dtype`` (or ``unclipped``)."""
        array = decoded_array(self._checked(frame, number), self.info, unclipped=unclipped)
        array = np.rot90(array, self.info.rotation // 90)
        self._check_size(array.shape, number)
        return np.ascontiguousarray(array)

    def _planes(self, frame: Any, number: int, layout: YuvLayout) -> YuvFrame:
        """Return decoded frame ``number`` as its Y'CbCr planes (views of the frame's)."""
        planes = YuvFrame(frame_planes(self._checked(frame, number), layout), layout)
        self._check_size(planes.shape, number)
        return planes

    def _checked(self, frame: Any, number: int) -> Any:
        """Return a decoded frame in ``info.pixel_format``, noting it if the decoder marked it damaged."""
        if frame.is_corrupt:
            self._damaged.add(number)
        if frame.format.name != self.info.pixel_format:  # NVDEC's NV12 / P010: repacked losslessly,
            frame = frame.reformat(format=self.info.pixel_format)  # so that RGB comes out as on the CPU
        return frame

    def _check_size(self, shape: tuple[int, ...], number: int) -> None:
        """Refuse frame ``number`` of another size than the first.

        An image of another size in a sequence, a stream that changes its resolution: a VideoError
        naming it, not a clip of frames of two shapes.
        """
        if shape[:2] != (self.info.height, self.info.width):
            image = f", the image {sequence_files(self.path)[number].name}," if is_image_sequence(self.path) else ""
            raise VideoError(
                f"{self.path}: frame {number + 1} (counting from 1){image} is {shape[1]}x{shape[0]} "
                f"pixels, but the clip's first is {self.info.width}x{self.info.height}; a clip's frames must all "
                "have one size: scale them to one first (FFmpeg's scale filter)"
            )


def read_frames(path: str | Path, count: int | None = None, *, start: int = 0) -> np.ndarray:
    """Decode frames ``start`` .. ``start + count - 1`` of a video file as (T, H, W, C).

    Parameters
    ----------
    path : str or Path
        The video file (or image sequence pattern), as ``VideoReader`` takes it.
    count : int, optional
        How many frames; None (the default): all from ``start`` to the end.
    start : int
        The first frame, 0-based.

    Returns
    -------
    numpy.ndarray
        (T, H, W, C) uint8, or uint16 for sources deeper than 8 bits (``VideoInfo.dtype``);
        C is 3 (RGB) or 1 (gray).

    Raises
    ------
    VideoError
        The file cannot be read, or holds fewer frames than asked for.
    ValueError
        ``start`` below 0 or ``count`` below 1.
    """
    if start < 0 or (count is not None and count < 1):
        raise ValueError(f"frames start at 0 and at least one is read, got start {start} and count {count}")
    frames = []
    with VideoReader(path) as reader:
        if start >= reader.info.frame_count:
            raise VideoError(f"{path}: has {reader.info.frame_count} frames, none from frame {start}")
        for frame in reader.frames(start):
            frames.append(frame)
            if count is not None and len(frames) == count:
                break
    if not frames or (count is not None and len(frames) < count):
        asked = f"frames {start} to {start + count - 1} ({count} from frame {start})" if count else f"frame {start}"
        raise VideoError(f"{path}: {asked} asked for, but it has {start + len(frames)} frames")
    return np.stack(frames)
