"""Video in and out through PyAV, imported lazily: the engine runs without it.

``VideoReader`` decodes any container and codec the bundled FFmpeg reads into RGB (or gray)
uint8 / uint16 frames, sequentially or by index. ``VideoWriter`` encodes them to a temporary
file beside the target, copies the source's audio and subtitle streams untouched, and renames
the file into place only when it is complete. Errors are ``VideoError`` with one line a person
can act on.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import math
import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from nlmeans_studio.engine.frames import FULL_SCALE_BITS, check_bit_depth, checked_frame
from nlmeans_studio.engine.media.frame_index import FrameIndex, index_stream
from nlmeans_studio.engine.media.staged_output import (
    OutputBusyError,
    StagedOutput,
    dangling_link,
    folder_problem,
)

HIGH_BIT_DEPTH = 8  # sources with more bits per component decode to uint16
# The frame number's place in an image sequence's name (%d, %06d), or "%%", FFmpeg's escaped "%"
SEQUENCE_NUMBER = re.compile(r"%(?:(%)|0?(\d*)d)")
TEXT_CODECS = ("ansi", "bintext", "xbin", "idf", "tty")  # FFmpeg shows text files as pictures of text
CACHE_FRAMES = 24  # decoded frames kept for random access
Y4M_HEADER_LIMIT = 1024  # bytes: a y4m header line is a few dozen
Y4M_FRAME = b"FRAME\n"  # what starts each frame of a y4m stream (FFmpeg's writer adds no parameters)
Y4M_MAGIC = b"YUV4MPEG2 "
# y4m's color spaces (the C tag) as FFmpeg's demuxer reads them: by prefix, longest first
Y4M_COLORSPACES = (
    *("420jpeg", "420mpeg2", "420paldv", "444alpha", "mono16", "mono12", "mono10", "mono9", "mono"),
    *(f"{chroma}p{bits}" for chroma in ("420", "422", "444") for bits in (16, 14, 12, 10, 9)),
    *("420", "411", "422", "444"),
)
# Pictures FFmpeg refuses (av_image_check_size): (width + 128) x (height + 128) pixels under this
LARGEST_PICTURE = (2**31 - 1) // 8
# Frame and slice threads in decoders and encoders. PyAV's default, slice threads only, leaves
# H.264 decoding on one core (x264 writes one slice per frame) and makes x264 encode with
# sliced threads, which scale worse than its frame threads.
CODEC_THREADS = "AUTO"
# What VideoInfo.warning says of a source whose first frame is interlaced (a file's or a pipe's)
INTERLACED = (
    "the video is interlaced: each frame's two fields are filtered as one picture and written as "
    "progressive (no field-aware mode yet); deinterlace it first (FFmpeg's bwdif) for the best result"
)


class VideoError(Exception):
    """A video could not be read or written; the message says which file and why.

    Parameters
    ----------
    message : str
        One line a person can act on, naming the file.
    """


def show_ffmpeg_messages(*, verbose: bool) -> None:
    """Let FFmpeg print its messages on stderr: errors only, or with ``verbose`` its warnings
    and notes too (damaged packets, guessed timestamps, a deprecated pixel format).

    FFmpeg's own printer, not PyAV's bridge to Python's logging: that bridge takes the GIL from
    the codecs' threads and can deadlock them (PyAV issues 751, 2276).
    """
    av = _av()
    av.logging.restore_default_callback()
    _SHOWN_LEVEL[0] = av.logging.INFO if verbose else av.logging.ERROR
    av.logging.set_libav_level(_SHOWN_LEVEL[0])


_SHOWN_LEVEL: list[int | None] = [None]  # the level show_ffmpeg_messages set, if it was called


@contextlib.contextmanager
def _said_in_our_words() -> Iterator[None]:
    """Hold back FFmpeg's error lines while opening a file or an encoder, whose failure this
    module words itself ("not a video file FFmpeg can read", "no NVIDIA video encoder"): the user
    sees one clear line, not FFmpeg's "[mov,mp4 @ 0x55b2..] moov atom not found" before it.
    ``--verbose`` keeps them."""
    av = _av()
    if _SHOWN_LEVEL[0] != av.logging.ERROR:
        yield
        return
    av.logging.set_libav_level(av.logging.PANIC)
    try:
        yield
    finally:
        av.logging.set_libav_level(av.logging.ERROR)


def ffmpeg_reason(error: BaseException) -> str:
    """FFmpeg's reason for ``error`` in words, without PyAV's error number and file name
    ("Invalid data found when processing input", not "[Errno 1094995529] Invalid data ...: 'x.mp4'")."""
    return getattr(error, "strerror", None) or str(error)


@dataclass(frozen=True)
class VideoInfo:
    """What a video file holds, as the reader found it.

    ``VideoReader`` makes it (``reader.info``); the constructor takes the attributes below.

    Attributes
    ----------
    path : Path
        The file (or image sequence pattern).
    width, height : int
        The frames' size in pixels, upright (after the file's rotation).
    channels : int
        1 (gray) or 3 (RGB), as the frames come out.
    bit_depth : int
        Bits per component of the source.
    pixel_format : str
        FFmpeg's name of the source's pixel format ("yuv420p", "yuv422p10le", ...).
    codec : str
        FFmpeg's name of the source's codec.
    frame_rate : Fraction
        Frames per second (the stream's average rate).
    time_base : Fraction
        Seconds per timestamp unit.
    frame_count : int
        The frames FFmpeg's sequential decode presents.
    duration : float
        Seconds, from frame 0 to the end of the last frame.
    color : dict of str to int
        FFmpeg's codes for "primaries", "trc", "colorspace" and "range".
    rotation : int
        Degrees (0, 90, 180, 270), from the display matrix; already applied to the frames.
    hdr10 : dict of str to str
        "master-display" and "max-cll", in x265's syntax; empty without HDR10 metadata.
    warning : str
        What a person should know before using the frames (a truncated file); "" if nothing.
    other_formats : tuple of (str, int)
        The audio and subtitle streams the writer copies: FFmpeg's name of each one's codec and
        its sample rate in Hz (0 for subtitles): ``(("aac", 48000),)``.
    other_streams : int
        How many those are.
    start_time : float
        Seconds on the container's clock when frame 0 is shown.
    sample_aspect_ratio : Fraction or None
        A pixel's width over its height, as shown (32/27 for a 16:9 NTSC DVD), upright; None
        where the file gives none (square pixels).
    dtype : numpy.dtype
        uint8 for 8-bit sources, uint16 (full 16-bit scale) for deeper ones.
    """

    path: Path
    width: int
    height: int
    channels: int  # 1 (gray) or 3 (RGB), as the frames come out
    bit_depth: int  # bits per component of the source
    pixel_format: str
    codec: str
    frame_rate: Fraction  # frames per second
    time_base: Fraction  # seconds per timestamp unit
    frame_count: int
    duration: float  # seconds
    color: dict[str, int] = field(default_factory=dict)  # FFmpeg's primaries, trc, colorspace, range
    rotation: int = 0  # degrees, from the display matrix
    hdr10: dict[str, str] = field(default_factory=dict)  # "master-display", "max-cll", in x265's syntax
    warning: str = ""  # what a person should know before using the frames: a truncated file
    other_formats: tuple[tuple[str, int], ...] = ()  # audio and subtitle streams' (codec, Hz), copied
    start_time: float = 0.0  # seconds on the container's clock when frame 0 is shown
    sample_aspect_ratio: Fraction | None = None  # a pixel's width over its height; None: not given (square)

    @property
    def other_streams(self) -> int:
        """How many audio and subtitle streams the writer copies."""
        return len(self.other_formats)

    @property
    def dtype(self) -> np.dtype:
        """uint8 for 8-bit sources, uint16 (full 16-bit scale) for deeper ones."""
        return np.dtype(np.uint16 if self.bit_depth > HIGH_BIT_DEPTH else np.uint8)


def _av() -> Any:
    try:
        import av
    except ImportError as error:
        raise VideoError(f"reading and writing video needs PyAV (pip install av): {error}") from error
    return av


def is_image_sequence(path: Path) -> bool:
    """Whether ``path`` names numbered images, printf-style: ``scans/%06d.png``."""
    return any(place[1] is None for place in SEQUENCE_NUMBER.finditer(path.name))


def _numbered_name(name: str, number: Callable[[int], str]) -> str:
    """``name`` with each frame number's place as ``number(width)`` gives it (width: the digits
    %06d asks for, 0 for %d), and each "%%" as "%"."""
    return SEQUENCE_NUMBER.sub(lambda place: "%" if place[1] else number(int(place[2] or 0)), name)


def sequence_files(path: Path) -> list[Path]:
    """The files of an image sequence that exist, in frame number order."""
    return [file for _, file in _numbered_images(path)]


def _numbered_images(path: Path) -> list[tuple[int, Path]]:
    """(frame number, file) of the images of a sequence that exist, in number order."""

    # %06d: six digits or more; %d: any
    pattern = re.compile(_numbered_name(re.escape(path.name), lambda width: rf"(\d{{{max(width, 1)},}})"))
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        return []
    matches = [(pattern.fullmatch(file.name), file) for file in folder.iterdir()]
    return sorted((int(match[1]), file) for match, file in matches if match)


def _first_image_number(path: Path) -> int:
    """The number of an image sequence's first image, all the images from it to the last checked
    to be there and to hold data: FFmpeg's image2 reader stops quietly at a gap or an empty image
    (a clip short of frames), and looks for the first only among the numbers 0 to 4."""
    images = _numbered_images(path)
    if not images:
        raise VideoError(f"{path}: no images of this sequence exist")
    (first, _), (last, _) = images[0], images[-1]
    for (number, file), (following, following_file) in itertools.pairwise(images):
        if following == number:
            raise VideoError(f"{path}: {file.name} and {following_file.name} are both frame {number}; keep one")
        if following != number + 1:
            missing = _numbered_name(path.name, lambda width, number=number: str(number + 1).zfill(width))
            raise VideoError(
                f"{path}: {missing} is missing: the {len(images)} images are numbered {first} to {last} with a gap "
                f"after {file.name}; add the missing images, or number the images without gaps"
            )
    for number, file in images:
        if file.stat().st_size == 0:
            raise VideoError(
                f"{file}: is empty (0 bytes), frame {number - first + 1} of the {len(images)} images of {path.name}; "
                "replace it with the image it should hold"
            )
    return first


def _open_input(path: Path, hardware_decoding: bool = False) -> Any:
    av = _av()
    if is_image_sequence(path):
        options = {"start_number": str(_first_image_number(path))}
        try:
            with _said_in_our_words():
                return _with_video(av.open(str(path), format="image2", options=options), path)
        except av.error.FFmpegError as error:
            raise VideoError(f"{path}: not an image sequence FFmpeg can read ({ffmpeg_reason(error)})") from error
    if path.is_dir():
        raise VideoError(f"{path}: is a folder, not a video file")
    if path.exists() and not path.is_file():
        raise VideoError(f"{path}: is not a regular file (a pipe or a device); for a y4m pipe give - as the input")
    if not path.is_file():
        raise VideoError(f"{path}: no such file")
    if hardware_decoding and "cuda" in av.codec.hwaccel.hwdevices_available():
        with contextlib.suppress(av.error.FFmpegError):  # no CUDA device or driver: decode on the CPU
            container = av.open(str(path), hwaccel=av.codec.hwaccel.HWAccel("cuda", allow_software_fallback=True))
            return _with_video(container, path)
    try:
        with _said_in_our_words():
            container = av.open(str(path))
    except (av.error.FFmpegError, UnicodeDecodeError) as error:
        with open(path, "rb") as file:
            line = file.readline(Y4M_HEADER_LIMIT)
        if line.startswith(Y4M_MAGIC):  # a y4m file whose header FFmpeg refuses: said in words
            check_y4m_header(line, str(path))
        raise VideoError(f"{path}: not a video file FFmpeg can read ({ffmpeg_reason(error)})") from error
    return _with_video(container, path)


def check_y4m_header(line: bytes, name: str) -> None:
    """Refuse a y4m header line (``name``'s: a file, or standard input) FFmpeg would refuse in
    words no one can act on ("Device or resource busy" for W0 H0, "Invalid argument" for Im).

    Raises
    ------
    VideoError
        No end of line, no size of at least 1x1, a picture larger than FFmpeg reads, frames of
        mixed interlacing (Im), or a color space (C) FFmpeg does not know.
    """
    if not line.endswith(b"\n"):
        raise VideoError(f"{name}: the y4m header has no end within {Y4M_HEADER_LIMIT} bytes; the stream is damaged")
    tags = {token[:1]: token[1:] for token in line[len(Y4M_MAGIC) :].decode("ascii", "replace").split()}
    shown = line.decode("ascii", "replace").strip()
    width, height = (int(tags[key]) if tags.get(key, "").isdigit() else 0 for key in ("W", "H"))
    if width < 1 or height < 1:
        raise VideoError(f"{name}: the y4m header ({shown}) gives no size of at least 1x1 pixels (W, H)")
    if (width + 128) * (height + 128) >= LARGEST_PICTURE:
        raise VideoError(
            f"{name}: the y4m header ({shown}) gives a picture of {width}x{height} pixels, larger than "
            f"FFmpeg reads ((width + 128) x (height + 128) under {LARGEST_PICTURE:,}); the stream is damaged"
        )
    if tags.get("I") == "m":
        raise VideoError(
            f"{name}: the y4m header says Im (frames of mixed interlacing), which FFmpeg does not read; "
            "write the stream progressive (ffmpeg's bwdif filter) or with one field order"
        )
    if "C" in tags and not tags["C"].startswith(Y4M_COLORSPACES):
        raise VideoError(
            f"{name}: the y4m color space C{tags['C']} is not one FFmpeg reads ({', '.join(Y4M_COLORSPACES)}); "
            "write the stream with a common pixel format (ffmpeg -pix_fmt yuv420p)"
        )


def _with_video(container: Any, path: Path) -> Any:
    """``container``, refused (and closed) when it has no video stream."""
    if not container.streams.video:
        container.close()
        raise VideoError(f"{path}: holds no video stream")
    return container


def _frame_format(channels: int, bit_depth: int) -> str:
    if channels == 1:
        return "gray16le" if bit_depth > HIGH_BIT_DEPTH else "gray"
    return "rgb48le" if bit_depth > HIGH_BIT_DEPTH else "rgb24"


def decoded_array(frame: Any, info: VideoInfo) -> np.ndarray:
    """A decoded frame as (H, W, C) of ``info.dtype``: Y'CbCr converted to RGB by ``media.yuv``
    (exact at every depth, where swscale keeps 8 bits of a 10-bit source), others by swscale."""
    from nlmeans_studio.engine.media.yuv import frame_planes, planes_to_rgb, yuv_layout

    layout = yuv_layout(frame.format.name, info.color, frame.height) if info.channels == 3 else None
    if layout is not None:
        return planes_to_rgb(frame_planes(frame, layout), layout, info.dtype)
    array = frame.to_ndarray(format=_frame_format(info.channels, info.bit_depth))
    return array.reshape(array.shape[0], array.shape[1], -1)


class _Decoder:
    """Decodes one stream from any frame on: seeks to an entry point and identifies every
    decoded frame by its timestamp in the index, so a frame is returned only as the number it is.

    Where a seek lands after the frame it was meant for (transport streams seek by guessing a
    byte position), an earlier entry point is tried, and at last the file is decoded from its
    start. Frames the index cannot identify are never returned, nor, after a seek, those before
    the first keyframe decoded (an open GOP's leading pictures need the GOP before it).
    """

    def __init__(self, path: Path, index: FrameIndex, hardware_decoding: bool = False) -> None:
        self._path, self._index, self._hardware = path, index, hardware_decoding
        self._keyframes = frozenset(int(entry) for entry in index.entries)
        self._container: Any = None

    def close(self) -> None:
        if self._container is not None:
            self._container.close()
            self._container = None

    def frames_from(self, number: int, lead: int = 0) -> Iterator[tuple[int, Any]]:
        """(frame number, decoded frame) for frames ``number``, ``number + 1``, ... to the end,
        after those of the ``lead`` frames before ``number`` that decoding passes on its way."""
        av = _av()
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
                failed += f", the image {sequence_files(self._path)[expected].name}"
            raise VideoError(f"{self._path}: {failed}: {ffmpeg_reason(error)}") from error
        if expected < self._index.frame_count:
            raise VideoError(
                f"{self._path}: the stream ends after {expected} of its {self._index.frame_count} frames "
                "(the file is truncated or damaged)"
            )

    def _positioned(self, number: int) -> Iterator[tuple[int, Any]]:
        """Identified frames from an entry point whose first one is at or before ``number``."""
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
        """Decoded frames from the keyframe at ``seek_timestamp`` (None: the file's start)."""
        av = _av()
        if seek_timestamp is not None:
            stream = self._opened().streams.video[0]
            try:
                self._container.seek(seek_timestamp, stream=stream, backward=True)
            except av.error.FFmpegError:
                return  # this container cannot seek there: an earlier entry point is tried
        else:  # a new demuxer: exactly FFmpeg's sequential decode, whatever the container's seeking
            self.close()
            stream = self._opened().streams.video[0]
        yield from self._container.decode(stream)

    def _opened(self) -> Any:
        if self._container is None:
            self._container = _open_input(self._path, self._hardware)
            self._container.streams.video[0].thread_type = CODEC_THREADS
        return self._container


class VideoReader:
    """Frames of a video file as (H, W, 3) RGB or (H, W, 1) gray uint8 / uint16 arrays.

    Frame n is the n-th frame FFmpeg's sequential decode of the file presents, and
    ``info.frame_count`` is how many it presents: the frame index (``engine.frame_index``) knows
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

    def __init__(self, path: str | Path, *, hardware_decoding: bool = False) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file name (str or Path), got {type(path).__name__} {str(path)[:40]!r}")
        self.path = Path(path)
        self._hardware = hardware_decoding
        self.info, self._index = probe_video(self.path)
        self._decoder = _Decoder(self.path, self._index, hardware_decoding)
        self._cursor: Iterator[tuple[int, Any]] | None = None
        self._cursor_next = 0  # the frame number the cursor decodes next
        self._closed = False
        self._cache: collections.OrderedDict[int, Any] = collections.OrderedDict()  # arrays or decoded frames

    @property
    def decoder(self) -> str:
        """Where frames are decoded: "NVDEC" (the GPU's video decoder) or "CPU"."""
        if not self._hardware:
            return "CPU"
        with _open_input(self.path, hardware_decoding=True) as container:
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

    def _check_open(self) -> None:
        if self._closed:
            raise VideoError(f"{self.path}: the reader is closed; open the file again to read it")

    def __len__(self) -> int:
        return self.info.frame_count

    @functools.cached_property
    def frame_times(self) -> np.ndarray:
        """When each frame is shown, in seconds from frame 0 (float64, variable frame rates
        too; at the nominal rate for a stream without timestamps)."""
        if self._index.has_timestamps:
            return (self._index.timestamps - self._index.timestamps[0]) * float(self.info.time_base)
        return np.arange(self.info.frame_count) / float(self.info.frame_rate)

    def start_time(self, index: int) -> float:
        """When frame ``index`` is shown, in seconds from frame 0."""
        return float(self.frame_times[index])

    def frame_at(self, seconds: float) -> int:
        """The first frame shown at or after ``seconds`` from frame 0 (``frame_count`` if none)."""
        return int(np.searchsorted(self.frame_times, seconds - 1e-9))

    def frames(self, start: int = 0) -> Iterator[np.ndarray]:
        """Decode frames start, start + 1, ... to the end, in order."""
        yield from (frame for _, frame in self.timed_frames(start))

    def timed_frames(self, start: int = 0) -> Iterator[tuple[int, np.ndarray]]:
        """(timestamp, frame) of frames start, start + 1, ...: each frame's presentation time in
        ``info.time_base`` units as the file has it (variable frame rates kept).

        Decodes with a demuxer of its own, so random access meanwhile does not disturb it."""
        self._check_open()
        if not 0 <= start < self.info.frame_count:
            raise IndexError(f"the first frame must be in 0..{self.info.frame_count - 1}, got {start}")
        decoder = _Decoder(self.path, self._index, self._hardware)
        try:
            for number, frame in decoder.frames_from(start):
                yield self._timestamp(number, frame), self._array(frame, number)
        finally:
            decoder.close()

    def _timestamp(self, number: int, frame: Any) -> int:
        if self._index.has_timestamps:
            return int(self._index.timestamps[number])
        if frame.pts is not None:
            return frame.pts
        return round(Fraction(number) / self.info.frame_rate / self.info.time_base)

    def frame(self, index: int) -> np.ndarray:
        """Frame ``index`` (0-based), by decoding forward from the entry point before it, or
        from where the last call left off when no entry point lies between. The frames decoded
        on the way are kept too (CACHE_FRAMES of them), so stepping backwards is instant."""
        self._check_open()
        if not 0 <= index < self.info.frame_count:
            raise IndexError(f"frame index must be in 0..{self.info.frame_count - 1}, got {index}")
        if index in self._cache:
            return self._cached(index)
        entry, _ = self._index.entries_before(index)[0]
        if self._cursor is None or not entry <= self._cursor_next <= index:
            self._cursor = self._decoder.frames_from(index, lead=0 if self._hardware else CACHE_FRAMES - 1)
        try:
            for number, decoded in self._cursor:
                self._cursor_next = number + 1
                if number == index:
                    self._keep(index, decoded)
                    return self._cached(index)
                self._keep(number, decoded)  # passed on the way: kept (not from NVDEC, whose surfaces are few)
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
        """A cached frame as an array, converted the first time it is asked for."""
        self._cache.move_to_end(index)
        item = self._cache[index]
        if not isinstance(item, np.ndarray):
            item = self._cache[index] = self._array(item, index)
        return item

    def _array(self, frame: Any, number: int) -> np.ndarray:
        """Decoded frame ``number`` as an upright (H, W, C) array of ``info.dtype``; one of another
        size than the first (an image of another size in a sequence, a stream that changes its
        resolution) is a VideoError naming it, not a clip of frames of two shapes."""
        if frame.format.name != self.info.pixel_format:  # NVDEC's NV12 / P010: repacked losslessly,
            frame = frame.reformat(format=self.info.pixel_format)  # so that RGB comes out as on the CPU
        array = np.rot90(decoded_array(frame, self.info), self.info.rotation // 90)
        if array.shape[:2] != (self.info.height, self.info.width):
            image = f", the image {sequence_files(self.path)[number].name}," if is_image_sequence(self.path) else ""
            raise VideoError(
                f"{self.path}: frame {number + 1} (counting from 1){image} is {array.shape[1]}x{array.shape[0]} "
                f"pixels, but the clip's first is {self.info.width}x{self.info.height}; a clip's frames must all "
                "have one size: scale them to one first (FFmpeg's scale filter)"
            )
        return np.ascontiguousarray(array)


def _y4m_layout(path: Path, pixel_format: str, width: int, height: int) -> tuple[int, int]:
    """(header bytes, bytes a frame) of a y4m file: its header line, then frames of FRAME and planes."""
    planes = _av().VideoFormat(pixel_format, width, height).components  # y4m's formats are planar
    frame = len(Y4M_FRAME) + sum(plane.width * plane.height * ((plane.bits + 7) // 8) for plane in planes)
    with open(path, "rb") as file:
        return len(file.readline(Y4M_HEADER_LIMIT)), frame


def _y4m_cut(path: Path, pixel_format: str, width: int, height: int, count: int) -> str:
    """What a y4m file holds past its ``count`` whole frames: FFmpeg's demuxer ends quietly at a
    frame cut short, so a cut file gave one frame fewer and no word of it; "" where nothing."""
    header, frame = _y4m_layout(path, pixel_format, width, height)
    extra = path.stat().st_size - header - count * frame
    if extra <= 0:
        return ""
    cut = f"it ends in the middle of frame {count + 1} ({extra} of its {frame} bytes)"
    return f"{cut}: it was cut; the frames before it are used"


def _y4m_unmarked_frame(path: Path, pixel_format: str, width: int, height: int) -> int | None:
    """The number (from 0) of a y4m file's first frame that does not start with FRAME where the
    header's size puts it, or None: FFmpeg says only "Invalid data found"."""
    header, frame = _y4m_layout(path, pixel_format, width, height)
    with open(path, "rb") as file:
        for number in range((path.stat().st_size - header) // frame + 1):
            file.seek(header + number * frame)
            marker = file.read(len(Y4M_FRAME) - 1)
            if marker and marker != Y4M_FRAME[:-1]:
                return number
    return None


def hdr10_metadata(frame: Any) -> dict[str, str]:
    """A decoded frame's HDR10 static metadata, as x265's ``master-display`` (chromaticities in
    units of 0.00002, luminance in 0.0001 cd/m2) and ``max-cll`` (MaxCLL,MaxFALL in cd/m2)."""
    types = _av().sidedata.sidedata.Type
    metadata = {}
    try:  # looked up by type: PyAV 19 iterates over the types, PyAV 18 over the side data
        mastering = frame.side_data.get(types.MASTERING_DISPLAY_METADATA)
        light_level = frame.side_data.get(types.CONTENT_LIGHT_LEVEL)
    except ValueError:  # a side data type newer than this PyAV (as TIFF frames carry on some machines)
        return metadata
    if mastering is not None:
        # AVMasteringDisplayMetadata: R, G, B primaries and the white point as (x, y)
        # rationals, min and max luminance, then has_primaries and has_luminance.
        values = struct.unpack("<22i", bytes(mastering)[:88])
        ratio = [values[i] / values[i + 1] if values[i + 1] else 0.0 for i in range(0, 20, 2)]
        if values[20] and values[21]:
            (rx, ry, gx, gy, bx, by, wx, wy), (low, high) = ratio[:8], ratio[8:]
            xy = "G({:.0f},{:.0f})B({:.0f},{:.0f})R({:.0f},{:.0f})WP({:.0f},{:.0f})".format(
                *(value * 50000 for value in (gx, gy, bx, by, rx, ry, wx, wy))
            )
            metadata["master-display"] = f"{xy}L({high * 10000:.0f},{low * 10000:.0f})"
    if light_level is not None:
        metadata["max-cll"] = "{},{}".format(*struct.unpack("<2I", bytes(light_level)[:8]))
    return metadata


def _stream_facts(path: Path, container: Any) -> dict[str, Any]:
    """What the first video stream's headers say: pixel format, rates, colors, size."""
    stream = container.streams.video[0]
    context = stream.codec_context
    if context is None:
        raise VideoError(f"{path}: FFmpeg has no decoder for its video stream")
    if context.name in TEXT_CODECS:
        raise VideoError(f"{path}: is text ({context.name}), not a video")
    if context.pix_fmt is None or stream.format is None:
        raise VideoError(f"{path}: the video stream has no pixel format FFmpeg can decode")
    pixel_format, components = context.pix_fmt, stream.format.components
    return {
        "size": (stream.width, stream.height),
        "channels": 1 if len(components) == 1 or pixel_format.startswith("gray") else 3,
        "bit_depth": max(component.bits for component in components),
        "pixel_format": pixel_format,
        "codec": context.name,
        "frame_rate": Fraction(stream.average_rate or stream.guessed_rate or Fraction(25)),
        "time_base": Fraction(stream.time_base or Fraction(1, 90000)),
        "color": {
            "primaries": int(context.color_primaries),
            "trc": int(context.color_trc),
            "colorspace": int(context.colorspace),
            "range": int(context.color_range),
        },
        "other_formats": tuple(map(_codec_and_rate, (*container.streams.audio, *container.streams.subtitles))),
        "sample_aspect_ratio": Fraction(stream.sample_aspect_ratio) if stream.sample_aspect_ratio else None,
        "declared_frames": stream.frames,  # 0 where the container keeps no count
    }


def _codec_and_rate(stream: Any) -> tuple[str, int]:
    """An audio or subtitle stream's codec, as FFmpeg names it, and sample rate in Hz (0 for subtitles)."""
    context = stream.codec_context  # None where this FFmpeg has no decoder for it
    return (context.name if context is not None else "an unknown codec"), getattr(context, "sample_rate", 0)


def probe_video(path: Path) -> tuple[VideoInfo, FrameIndex]:
    """What the video file ``path`` holds, and the index of its frames: its headers read, then its
    packets (``index_stream``), and the first frame decoded for what only frames carry (rotation,
    HDR10 metadata, interlacing).

    Raises
    ------
    VideoError
        A file that is no video FFmpeg can read, or whose stream cannot be read through (the
        message says where).
    """
    with _open_input(path) as container:  # refuses what is no video before any indexing
        facts = _stream_facts(path, container)
        y4m = container.format.name == "yuv4mpegpipe"
    try:
        index, first = index_stream(path, lambda: _open_input(path))
    except _av().error.FFmpegError as error:
        size = (facts["pixel_format"], *facts["size"])
        if y4m and (unmarked := _y4m_unmarked_frame(path, *size)) is not None:
            raise VideoError(
                f"{path}: frame {unmarked + 1} (counting from 1) does not start with FRAME where the y4m "
                f"header's size puts it ({ffmpeg_reason(error)}): the file is damaged or its header does not "
                "match its frames"
            ) from error
        raise VideoError(f"{path}: the video stream cannot be read: {ffmpeg_reason(error)}") from error
    if first is None or index.frame_count == 0:
        raise VideoError(f"{path}: holds no frame FFmpeg can decode")
    return _described(path, index, facts, first, y4m), index


def _described(path: Path, index: FrameIndex, facts: dict[str, Any], first: Any, y4m: bool) -> VideoInfo:
    """``path``'s ``VideoInfo`` from its stream's headers (``facts``), its frame index and its first frame."""
    rotation = round(first.rotation / 90) % 4 * 90
    width, height = facts.pop("size")
    if rotation % 180:
        width, height = height, width
        if facts["sample_aspect_ratio"] is not None:  # a turned pixel's width is its height
            facts["sample_aspect_ratio"] = 1 / facts["sample_aspect_ratio"]
    count, times = index.frame_count, index.timestamps
    if index.has_timestamps and count > 1:
        step = float(np.median(np.diff(times[-min(count, 50) :])))  # the last frame lasts as the ones before
        duration = float((times[-1] - times[0] + step) * facts["time_base"])
    else:
        duration = count / float(facts["frame_rate"])
    start_time = float(times[0] * facts["time_base"]) if index.has_timestamps else 0.0
    declared, warnings = facts.pop("declared_frames"), []
    if y4m and (cut := _y4m_cut(path, facts["pixel_format"], width, height, count)):
        warnings.append(cut)
    if index.packets and declared > index.packets:
        warnings.append(f"the file declares {declared} frames but holds {count}: it is truncated or damaged")
    if len(first.format.components) in (2, 4):  # gray or color, and alpha
        warnings.append(
            f"the video has an alpha channel ({facts['pixel_format']}): only its picture is denoised and "
            "written, opaque; keep the transparency by merging the source's alpha back in afterwards"
        )
    if getattr(first, "interlaced_frame", False):
        warnings.append(INTERLACED)
    warning = "; ".join(warnings)
    return VideoInfo(
        path=path,
        width=width,
        height=height,
        frame_count=count,
        duration=duration,
        rotation=rotation,
        hdr10=hdr10_metadata(first),
        warning=warning,
        start_time=start_time,
        **facts,
    )


# Codec name -> (encoder, pixel format for 8-bit sources, for deeper sources). H.264 and H.265
# are written 4:2:0, as every player takes them (NVENC's H.264 has no 10-bit); FFV1 (lossless)
# and ProRes (mastering) keep the source's own sampling and depth where the encoder has it.
CODECS: dict[str, tuple[str, str, str]] = {
    "h264": ("libx264", "yuv420p", "yuv420p10le"),
    "h265": ("libx265", "yuv420p", "yuv420p10le"),
    "ffv1": ("ffv1", "bgr0", "gbrp16le"),  # planar RGB: the filter's output exactly
    "prores": ("prores_ks", "yuv422p10le", "yuv444p10le"),
    "h264-nvenc": ("h264_nvenc", "yuv420p", "yuv420p"),
    "h265-nvenc": ("hevc_nvenc", "yuv420p", "p010le"),
}
KEEPS_SOURCE_SAMPLING = ("ffv1", "prores")
# Image sequence extension -> (encoder, pixel format for 8-bit sources, for deeper sources)
# y4m's pixel formats: a source in one of them is piped out as it is, others as 4:4:4
Y4M_FORMATS = (
    *("yuv420p", "yuv422p", "yuv444p", "yuv411p", "gray", "gray16le"),
    *(f"yuv{chroma}p{bits}le" for chroma in ("420", "422", "444") for bits in (10, 12, 16)),
)
STANDARD_OUTPUT = "-"
IMAGE_FORMATS: dict[str, tuple[str, str, str]] = {
    ".png": ("png", "rgb24", "rgb48be"),
    ".tif": ("tiff", "rgb24", "rgb48le"),
    ".tiff": ("tiff", "rgb24", "rgb48le"),
    ".dpx": ("dpx", "rgb24", "rgb48le"),
    ".exr": ("exr", "gbrpf32le", "gbrpf32le"),
}
GRAY_FORMATS = {"ffv1": ("gray", "gray16le")}
NVENC_CODECS = ("h264-nvenc", "h265-nvenc")
X26X_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow")
NVENC_PRESETS = ("p1", "p2", "p3", "p4", "p5", "p6", "p7", "fast", "medium", "slow")


class VideoWriter:
    """Encode frames to ``path`` through a temporary file beside it, renamed when complete.

    Parameters
    ----------
    path : str or Path
        The output; refused when it is the source, or exists without ``overwrite``. A name
        with a frame number's place (``restored/%06d.png``, .tif, .dpx or .exr) is an image
        sequence: RGB, 8 or 16 bits as the source (EXR: float), numbered from 1 as FFmpeg does,
        without the source's sound; ``codec`` is then ignored. ``-`` writes y4m
        (yuv4mpegpipe) to standard output, for an FFmpeg pipeline: the source's YUV sampling
        where y4m has it, no sound.
    like : VideoInfo
        The source: its frame rate, time base, size, color metadata and bit-depth class are
        kept (10-bit in stays 10-bit out where the codec can), and its audio and subtitle
        streams are copied untouched.
    codec : {"h264", "h265", "ffv1", "prores", "h264-nvenc", "h265-nvenc"}
        H.264 / H.265 are 4:2:0 (8 or 10 bits); FFV1 (lossless) and ProRes (10-bit) keep the
        source's chroma sampling and depth (a 10-bit 4:2:2 source stays 10-bit 4:2:2); the NVENC
        codecs encode on the GPU's video encoder, where it has one.
    crf : int
        Quality of H.264 / H.265 (constant quality of NVENC), 0 (lossless) .. 51; 18 is
        visually transparent.
    preset : str
        Speed of H.264 / H.265 ("ultrafast" .. "veryslow"); of NVENC "p1" .. "p7", "fast",
        "medium" or "slow".
    overwrite : bool
        Replace an existing ``path`` (or existing images of the sequence).
    rgb : bool
        FFV1 only: store planar RGB, the filter's output exactly, whatever the source's sampling
        (about twice the size of 4:2:0).
    span : (float, float), optional
        The part of the source the frames are, in seconds from its frame 0 (start, end): the
        copied audio and subtitles are cut to it and start with the video. The whole source by
        default.
    bit_depth : int
        Bits per sample of the uint16 frames written, 9..16: 16 (the default) for 16-bit full
        scale, as ``VideoReader`` gives deep sources; 10 for 10-bit samples held in uint16
        (0..1023, as VapourSynth hands them).

    Attributes
    ----------
    path : Path
        The output.
    info : VideoInfo
        ``like``.

    Raises
    ------
    VideoError
        An unknown codec or preset, crf out of 0..51, ``rgb`` with a codec other than FFV1;
        output refused, folder missing or read-only, an encoder missing, or the disk full.
    ValueError
        A ``bit_depth`` outside 9..16, or (by ``write``) uint16 samples beyond it.
    """

    def __init__(
        self,
        path: str | Path,
        like: VideoInfo,
        *,
        codec: str = "h264",
        crf: int = 18,
        preset: str = "medium",
        overwrite: bool = False,
        span: tuple[float, float] = (0.0, math.inf),
        rgb: bool = False,
        bit_depth: int = FULL_SCALE_BITS,
    ) -> None:
        av = _av()
        self.path = Path(path)
        check_bit_depth(bit_depth)
        self._bit_depth = bit_depth
        self.info = like
        check_encoding(codec, crf, preset, rgb=rgb)
        self._pipe = str(path) == STANDARD_OUTPUT
        muxer = None if self._pipe else output_format(self.path, codec, like)
        if not self._pipe:
            check_output_path(self.path, like.path, overwrite)
        self._sequence = is_image_sequence(self.path)
        if self._sequence and self.path.suffix.lower() not in IMAGE_FORMATS:
            raise VideoError(f"{self.path}: image sequences are written as {', '.join(IMAGE_FORMATS)}")
        encoder = "wrapped_avframe" if self._pipe else CODECS[codec][0]
        if self._sequence:
            encoder = IMAGE_FORMATS[self.path.suffix.lower()][0]
        if encoder not in av.codecs_available:
            raise VideoError(f"this FFmpeg build has no {encoder} encoder; choose another codec")
        gray = like.channels == 1 and codec in GRAY_FORMATS and not self._sequence and not self._pipe
        self._frame_format = _frame_format(1 if gray else 3, like.bit_depth)
        try:
            self._output = None if self._pipe else StagedOutput(self.path, sequence=self._sequence, overwrite=overwrite)
        except OSError as error:
            raise VideoError(str(error) if isinstance(error, OutputBusyError) else f"{self.path}: {error}") from error
        try:
            if self._output is None:
                self._container = av.open("pipe:1", mode="w", format="yuv4mpegpipe", options={"strict": "-1"})
            else:
                self._container = av.open(str(self._output.staged), mode="w", format=muxer)
            self._stream = self._container.add_stream(encoder, rate=like.frame_rate)
            self._stream.width, self._stream.height = like.width, like.height
            self._stream.pix_fmt = self._pixel_format(codec, gray=gray, rgb=rgb)
            self._time_base = 1 / like.frame_rate if self._pipe else like.time_base  # y4m has a rate, no times
            self._stream.time_base = self._time_base
            self._stream.codec_context.time_base = self._time_base  # the source's timestamps, exactly
            self._stream.thread_type = CODEC_THREADS
            if codec in ("h264", "h265"):
                self._stream.options = {"crf": str(crf), "preset": preset, **_hdr10_options(codec, like.hdr10)}
            elif codec in NVENC_CODECS:
                self._stream.options = {"rc": "vbr", "cq": str(crf), "preset": preset}
            context = self._stream.codec_context
            color = _output_color(like.color, like.height)
            context.color_primaries = color.get("primaries", 2)
            context.color_trc = color.get("trc", 2)
            context.colorspace = color.get("colorspace", 2)
            context.color_range = color.get("range", 0)
            if like.sample_aspect_ratio is not None:  # anamorphic pixels stay so (H.264's VUI, MOV's pasp)
                context.sample_aspect_ratio = like.sample_aspect_ratio
            if encoder not in ANY_SIZE_ENCODERS:
                _check_size(self.path, self._stream.pix_fmt, like.width, like.height)
            self._made_frame = _frame_maker(self._stream.pix_fmt, self._frame_format, color, like.height)
            self._open_encoder(codec)
            self._copied = self._add_copied_streams()
        except VideoError:
            self._discard()
            raise
        except (av.error.FFmpegError, ValueError) as error:  # PyAV says ValueError for a muxer's refusals
            self._discard()
            raise VideoError(f"{self.path}: cannot start writing: {ffmpeg_reason(error)}") from error
        except OSError as error:
            self._discard()
            raise VideoError(f"{self.path}: cannot write here: {error.strerror or error}") from error
        self._written, self._closed = 0, False
        self._span = (like.start_time + span[0], like.start_time + span[1])  # on the source's clock

    def _pixel_format(self, codec: str, *, gray: bool, rgb: bool) -> str:
        if self._pipe:
            if self.info.pixel_format in Y4M_FORMATS:
                return self.info.pixel_format
            return "yuv444p16le" if self.info.bit_depth > HIGH_BIT_DEPTH else "yuv444p"
        if self._sequence:
            _, eight_bit, deep = IMAGE_FORMATS[self.path.suffix.lower()]
            return deep if self.info.bit_depth > HIGH_BIT_DEPTH else eight_bit
        return _output_format(codec, self.info, gray=gray, rgb=rgb)

    def _open_encoder(self, codec: str) -> None:
        """Open the encoder now, so that one this machine cannot run is refused before any work."""
        try:
            with _said_in_our_words():
                self._stream.codec_context.open()
        except _av().error.FFmpegError as error:
            self._container.close()
            if codec in NVENC_CODECS:
                raise VideoError(
                    f"{codec}: this machine has no NVIDIA video encoder it can use (no NVIDIA driver, or a GPU "
                    "without NVENC, such as the H100 or A100); choose h264 or h265"
                ) from error
            stream = self._stream
            raise VideoError(
                f"{self.path}: the {codec} encoder refuses {stream.width}x{stream.height} {stream.pix_fmt} frames "
                f"({ffmpeg_reason(error)}); its pictures have size limits (H.264: 16384 pixels a side at most): "
                "choose --codec ffv1 (lossless, any size) or scale the clip down"
            ) from error

    def _add_copied_streams(self) -> tuple[Any, dict[int, Any]] | None:
        """The source opened again, and its audio and subtitle streams' indices -> output streams."""
        if not self.info.other_streams or self._sequence or self._pipe:
            return None
        source = _open_input(self.info.path)
        streams = [*source.streams.audio, *source.streams.subtitles]
        return source, {stream.index: self._container.add_stream_from_template(stream) for stream in streams}

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, trace: object) -> None:
        if error is None:
            self.close()
        else:
            self.abort()

    def write(self, frame: np.ndarray, timestamp: int | None = None) -> None:
        """Encode one (H, W, C) frame of the source's dtype (uint8, or uint16 of ``bit_depth``
        for deep sources).

        ``timestamp`` is its presentation time in the source's time base, counted from the
        output's start (``VideoReader.timed_frames`` gives them): variable frame rates are kept.
        Without it, frame n is shown at n / frame rate.

        Raises
        ------
        VideoError
            A frame of another size, or the writer was closed.
        ValueError
            uint16 samples beyond ``bit_depth``.
        """
        array = np.ascontiguousarray(frame)
        if self._closed:
            raise VideoError(f"{self.path}: the writer is closed; frames go to an open VideoWriter")
        if array.shape[:2] != (self.info.height, self.info.width):
            wanted, size = f"{self.info.width}x{self.info.height}", "x".join(map(str, array.shape[1::-1]))
            raise VideoError(f"{self.path}: frames must be {wanted}, as the source, got {size}")
        if array.dtype == np.uint16:
            array = checked_frame(array, self._bit_depth)  # at 16-bit full scale
        if array.ndim == 3 and self._frame_format.startswith("gray"):
            array = array[:, :, 0]
        elif array.ndim == 3 and array.shape[2] == 1:
            array = np.repeat(array, 3, axis=2)
        video_frame = self._made_frame(array)
        if timestamp is None or self._pipe:
            timestamp = round(self._written / self.info.frame_rate / self._time_base)
        video_frame.pts, video_frame.time_base = timestamp, self._time_base
        self._written += 1
        self._mux(self._stream.encode(video_frame))

    def _mux(self, packets: Any) -> None:
        try:
            self._container.mux(packets)
        except OSError as error:
            self.abort()
            raise VideoError(f"{self.path}: writing failed: {error.strerror or error}") from error

    def _shift_into_span(self, packet: Any) -> bool:
        """Whether a copied packet starts within the span; if so, its timestamps are made
        relative to the span's start, as the video's are. A packet that starts before the span
        is left out whole: sound stays in sync, and may start up to one audio frame late."""
        start, end = self._span
        if not start <= packet.pts * packet.time_base < end:
            return False
        offset = round(start / packet.time_base)
        packet.pts, packet.dts = packet.pts - offset, max(0, packet.dts - offset)
        return True

    def close(self) -> None:
        """Flush the encoder, copy the other streams, close, and rename into place (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._mux(self._stream.encode(None))
        if self._copied is not None:
            source, outputs = self._copied
            for packet in source.demux([source.streams[index] for index in outputs]):  # one pass for all
                if packet.dts is not None and packet.pts is not None and self._shift_into_span(packet):
                    packet.stream = outputs[packet.stream.index]
                    self._mux(packet)
        self._close_sources()
        try:
            self._container.close()
            if self._output is not None:
                self._output.publish(self._older_images())
        except FileExistsError as error:
            raise VideoError(str(error)) from error
        except OSError as error:
            self._discard()
            raise VideoError(f"{self.path}: finishing the file failed: {error.strerror or error}") from error

    def _older_images(self) -> list[Path]:
        """The images of an older sequence of this name that this one leaves over (numbered past
        its last, or before 1): with overwrite, replaced too, so that the folder holds this sequence alone."""
        if not self._sequence:
            return []
        return [file for number, file in _numbered_images(self.path) if not 1 <= number <= self._written]

    def abort(self) -> None:
        """Stop and leave nothing behind: the target is untouched, the temporary file removed."""
        self._closed = True
        self._close_sources()
        with contextlib.suppress(Exception):
            self._container.close()
        self._discard()

    def _close_sources(self) -> None:
        if self._copied is not None:
            self._copied[0].close()
        self._copied = None

    def _discard(self) -> None:
        if self._output is not None:
            self._output.discard()


# FFmpeg's color matrices (AVColorSpace) -> swscale's (SWS_CS_*): BT.709, FCC, BT.601 (as
# BT.470BG and as SMPTE 170M), SMPTE 240M, BT.2020 (constant and non-constant luminance).
SWSCALE_MATRICES = {1: 1, 4: 4, 5: 5, 6: 5, 7: 7, 9: 9, 10: 9}
BT601, LIMITED_RANGE = 5, 1


# Encoders that take subsampled chroma at any size (an odd-sized 4:2:0 source stays 4:2:0 in
# FFV1 and in a y4m pipe); the others need even sizes there.
ANY_SIZE_ENCODERS = ("ffv1", "wrapped_avframe")


def _check_size(path: Path, pixel_format: str, width: int, height: int) -> None:
    """Refuse a size the output's chroma subsampling cannot hold (libx264 and ProRes refuse odd
    widths of 4:2:0 and 4:2:2, with a message only a developer reads)."""
    form = _av().VideoFormat(pixel_format, 2, 2)
    chroma = form.components[1] if len(form.components) > 2 else form.components[0]
    if (width % 2 and chroma.width < 2) or (height % 2 and chroma.height < 2):
        raise VideoError(
            f"{path}: {pixel_format} keeps color at half resolution and needs an even width and height, "
            f"but the clip is {width}x{height}; use --codec ffv1 (lossless, any size), or crop it by a pixel"
        )


def _hdr10_options(codec: str, hdr10: dict[str, str]) -> dict[str, str]:
    """The encoder options that write a source's HDR10 metadata into the stream (SEI)."""
    if not hdr10:
        return {}
    if codec == "h265":
        return {"x265-params": ":".join(["hdr10=1", *(f"{name}={value}" for name, value in hdr10.items())])}
    names = {"master-display": "mastering-display", "max-cll": "cll"}  # x264's names
    return {"x264-params": ":".join(f"{names[name]}={value}" for name, value in hdr10.items())}


def _output_format(codec: str, like: VideoInfo, *, gray: bool, rgb: bool) -> str:
    """The pixel format ``codec`` writes frames like ``like``'s in (see CODECS)."""
    deep = like.bit_depth > HIGH_BIT_DEPTH
    _, eight_bit, deeper = CODECS[codec]
    supported = [form.name for form in _av().codec.Codec(CODECS[codec][0], "w").video_formats or ()]
    # Float sources (EXR) come as 16-bit frames, and FFV1's float formats are experimental: not kept.
    floating = re.search(r"f(16|32)(le|be)?$", like.pixel_format) is not None
    if codec in KEEPS_SOURCE_SAMPLING and not rgb and not floating and like.pixel_format in supported:
        return like.pixel_format  # gray10le stays gray10le, as 10-bit 4:2:2 stays 10-bit 4:2:2
    if gray:
        return GRAY_FORMATS[codec][deep]
    if codec == "prores":  # by the source's chroma: full (RGB, 4:4:4) or not
        source = _av().VideoFormat(like.pixel_format, 2, 2)
        full_chroma = source.is_rgb or source.components[1].width == source.components[0].width
        return deeper if full_chroma else eight_bit
    return deeper if deep else eight_bit


# NVENC's semi-planar formats -> the planar ones with the same samples (swscale repacks them exactly)
PLANAR_TWINS = {"nv12": "yuv420p", "p010le": "yuv420p10le"}


def _frame_maker(
    pixel_format: str, frame_format: str, color: dict[str, int], height: int
) -> Callable[[np.ndarray], Any]:
    """How the writer turns an array of ``frame_format`` (``height`` lines) into a frame of
    ``pixel_format``: to Y'CbCr through ``media.yuv`` (exact at every depth, the reader's
    inverse), to other formats through swscale."""
    from nlmeans_studio.engine.media.yuv import planes_frame, rgb_to_planes, yuv_layout

    av = _av()
    planar = PLANAR_TWINS.get(pixel_format, pixel_format)
    layout = yuv_layout(planar, color, height) if frame_format.startswith("rgb") else None
    if layout is None:
        conversion = _yuv_conversion(pixel_format, color)

        def through_swscale(array: np.ndarray) -> Any:
            frame = av.VideoFrame.from_ndarray(array, format=frame_format)
            return _tagged(frame if conversion is None else frame.reformat(**conversion), color)

        return through_swscale

    def through_yuv(array: np.ndarray) -> Any:
        frame = planes_frame(rgb_to_planes(array, layout), layout)
        return _tagged(frame if planar == pixel_format else frame.reformat(format=pixel_format), color)

    return through_yuv


def _output_color(color: dict[str, int], height: int) -> dict[str, int]:
    """The source's color tags, and where it gives a range but no matrix, the matrix its frames
    are converted with (``yuv_layout``'s guess from the ``height`` in lines): H.264 and H.265
    write the range only beside a matrix, and would drop it."""
    from nlmeans_studio.engine.media.yuv import BT709, HD_LINES

    if color.get("range", 0) and color.get("colorspace", 2) == 2:
        return {**color, "colorspace": BT709 if height >= HD_LINES else BT601}
    return color


def _tagged(frame: Any, color: dict[str, int]) -> Any:
    """``frame`` with the source's four color tags: encoders that write them from each frame
    (ProRes) would write the untagged ones as unknown."""
    frame.color_primaries, frame.color_trc = color.get("primaries", 2), color.get("trc", 2)
    frame.colorspace, frame.color_range = color.get("colorspace", 2), color.get("range", 0)
    return frame


def _yuv_conversion(pixel_format: str, color: dict[str, int]) -> dict[str, Any] | None:
    """How RGB frames become ``pixel_format``: with the matrix and range the output is tagged
    with, as the reader decoded them (PyAV's default, BT.601 limited, would shift BT.709 colors);
    None for RGB and gray outputs, which need no matrix."""
    if pixel_format.startswith(("gbr", "bgr", "rgb", "gray")):
        return None
    return {
        "format": pixel_format,
        "dst_colorspace": SWSCALE_MATRICES.get(color.get("colorspace", 2), BT601),
        "dst_color_range": color.get("range") or LIMITED_RANGE,
    }


def check_encoding(codec: str, crf: int, preset: str, *, rgb: bool = False) -> None:
    """Refuse an unknown codec or preset, crf out of 0..51, or ``rgb`` with a codec other than FFV1
    (VideoError): checked by ``VideoWriter``, and by the command line before any slower work."""
    if codec not in CODECS:
        raise VideoError(f"codec must be one of {', '.join(CODECS)}, got {codec!r}")
    if not 0 <= crf <= 51:
        raise VideoError(f"crf must be an integer in 0..51, got {crf}")
    if rgb and codec != "ffv1":
        raise VideoError(f"RGB output is for the ffv1 codec, got {codec!r}")
    presets = NVENC_PRESETS if codec in NVENC_CODECS else X26X_PRESETS
    if codec in ("h264", "h265", *NVENC_CODECS) and preset not in presets:
        raise VideoError(f"preset must be one of {', '.join(presets)} for {codec}, got {preset!r}")


X26X_AND_NVENC = ("h264", "h265", "h264-nvenc", "h265-nvenc")
# The containers an output may be, by extension: FFmpeg's muxer, and the codecs whose files this
# reader decodes again frame for frame (measured: H.264 in AVI or MXF, FFV1 or ProRes in MPEG-TS
# are written without an error and come back undecodable or without a video stream).
OUTPUT_CONTAINERS: dict[str, tuple[str, tuple[str, ...]]] = {
    ".mkv": ("matroska", tuple(CODECS)),
    ".mp4": ("mp4", (*X26X_AND_NVENC, "ffv1")),
    ".mov": ("mov", (*X26X_AND_NVENC, "prores")),
    ".ts": ("mpegts", X26X_AND_NVENC),
    ".mxf": ("mxf", ("ffv1", "prores")),
    ".avi": ("avi", ("ffv1",)),
}


class CodecNotHeldError(VideoError):
    """An output whose container does not hold the codec asked for (H.264 in an .avi file).

    The message names the containers that hold it, or says to choose another ``--codec``, as the
    command line takes it; ``worded`` says that last choice in another interface's words.

    Parameters
    ----------
    path : Path
        The output; its extension names the container.
    codec : str
        The codec asked for, one of CODECS.
    """

    def __init__(self, path: Path, codec: str) -> None:
        self.path, self.codec = path, codec
        super().__init__(self.worded("another --codec"))

    def worded(self, another_codec: str) -> str:
        """The message, with ``another_codec`` ("another codec") for the choice of another codec."""
        suffix = self.path.suffix.lower()
        *others, last = [name for name, (_, held) in OUTPUT_CONTAINERS.items() if self.codec in held]
        holders = f"{', '.join(others)} or {last}" if others else last
        return (
            f"{self.path}: a {suffix} file holds {', '.join(OUTPUT_CONTAINERS[suffix][1])} here, not {self.codec}; "
            f"choose {holders} for {self.codec}, or {another_codec}"
        )


# Muxers that hold only uncompressed audio, in these codecs at this sample rate (Hz), and no subtitles
PCM_ONLY = {"mxf": (("pcm_s16le", "pcm_s24le"), 48000)}


def output_format(path: Path, codec: str, like: VideoInfo | None = None) -> str:
    """The container format (FFmpeg's muxer) of the output's name, checked to hold ``codec`` and
    the audio and subtitle streams of ``like`` the writer copies.

    Parameters
    ----------
    path : Path
        The output: a file (its extension names the container) or an image sequence's pattern.
    codec : str
        One of CODECS (``check_encoding`` checks it).
    like : VideoInfo, optional
        The source, whose ``other_formats`` the container must hold as they are.

    Returns
    -------
    str
        FFmpeg's muxer: "matroska", "mp4", "mov", "mpegts", "mxf", "avi", or "image2".

    Raises
    ------
    VideoError
        An extension of no container in OUTPUT_CONTAINERS; one image's name (``frame.png``)
        without a frame number's place; the source's other streams (MXF holds 48 kHz PCM audio
        only).
    CodecNotHeldError
        A container that does not hold ``codec`` (H.264 in AVI); a VideoError.
    """
    if is_image_sequence(path):
        return "image2"
    suffix = path.suffix.lower()
    if suffix in IMAGE_FORMATS:
        raise VideoError(
            f"{path}: one image cannot hold a video; for an image sequence put the frame number's place in the "
            f"name: {path.stem}%06d{path.suffix}"
        )
    if suffix not in OUTPUT_CONTAINERS:
        named = repr(suffix) if suffix else "a name without an extension"
        raise VideoError(
            f"{path}: {named} is not a container this tool writes; name the output "
            f"{', '.join(OUTPUT_CONTAINERS)}, or NAME%06d.png / .tif / .dpx / .exr for images"
        )
    muxer, codecs = OUTPUT_CONTAINERS[suffix]
    if codec not in codecs:
        raise CodecNotHeldError(path, codec)
    pcm, rate = PCM_ONLY.get(muxer, ((), 0))
    others = like.other_formats if like is not None and rate else ()
    refused = [f"{name} at {hertz} Hz" if hertz else name for name, hertz in others if name not in pcm or hertz != rate]
    if refused:
        raise VideoError(
            f"{path}: a {suffix} file holds {rate // 1000} kHz PCM audio only ({', '.join(pcm)}), no subtitles, "
            f"and the source's other streams, copied unchanged, are {', '.join(refused)}; write .mkv, or "
            f"convert the source's audio first (ffmpeg -i IN -c:v copy -c:a pcm_s24le -ar {rate} -sn IN.mkv)"
        )
    return muxer


def check_output_path(path: Path, source: Path, overwrite: bool) -> None:
    """Refuse an output that could not or should not be written, before any frame is filtered.

    Parameters
    ----------
    path : Path
        The output: a file or an image sequence's pattern.
    source : Path
        The input, which the output must not be.
    overwrite : bool
        Whether an existing output (or images of the sequence) may be replaced.

    Raises
    ------
    VideoError
        ``path`` is the input, is not a regular file, exists (without ``overwrite``), or its
        folder is missing or read-only.
    """
    if path.resolve() == source.resolve():
        raise VideoError(f"{path}: the output must not be the input")
    if path.exists() and not path.is_file():
        raise VideoError(f"{path}: is not a regular file; the output must be a file (or - for standard output)")
    if (link := dangling_link(path)) and not overwrite:
        raise VideoError(f"{path}: {link}; pass --overwrite to replace it")
    if path.exists() and not overwrite:
        raise VideoError(f"{path}: exists; pass --overwrite to replace it")
    images = sequence_files(path) if is_image_sequence(path) else []
    if images and not overwrite:
        raise VideoError(f"{path}: images of this sequence exist; pass --overwrite to replace them")
    for image in images:
        if not image.is_file():
            raise VideoError(f"{image}: is not a regular file; it cannot be replaced by an image of {path.name}")
    problem = folder_problem(path)
    if problem is not None:
        raise VideoError(f"{path}: {problem}")


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
