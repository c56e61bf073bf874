"""Video in and out through PyAV, imported lazily: the engine runs without it.

``VideoReader`` decodes any container and codec the bundled FFmpeg reads into RGB (or gray)
uint8 / uint16 frames, sequentially or by index. ``VideoWriter`` encodes them to a temporary
file beside the target, copies the source's audio and subtitle streams untouched, and renames
the file into place only when it is complete. Errors are ``VideoError`` with one line a person
can act on.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

HIGH_BIT_DEPTH = 8  # sources with more bits per component decode to uint16
CACHE_FRAMES = 16  # decoded frames kept for random access
# Frame and slice threads in decoders and encoders. PyAV's default, slice threads only, leaves
# H.264 decoding on one core (x264 writes one slice per frame) and makes x264 encode with
# sliced threads, which scale worse than its frame threads.
CODEC_THREADS = "AUTO"


class VideoError(Exception):
    """A video could not be read or written; the message says which file and why."""


@dataclass(frozen=True)
class VideoInfo:
    """What a video file holds, as the reader found it."""

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
    other_streams: int = 0  # audio and subtitle streams, copied by the writer

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


def _open_input(path: Path, hardware_decoding: bool = False) -> Any:
    av = _av()
    if not path.is_file():
        raise VideoError(f"{path}: no such file")
    if hardware_decoding and "cuda" in av.codec.hwaccel.hwdevices_available():
        with contextlib.suppress(av.error.FFmpegError):  # no CUDA device or driver: decode on the CPU
            container = av.open(str(path), hwaccel=av.codec.hwaccel.HWAccel("cuda", allow_software_fallback=True))
            return _with_video(container, path)
    try:
        container = av.open(str(path))
    except (av.error.FFmpegError, UnicodeDecodeError) as error:
        raise VideoError(f"{path}: not a video file FFmpeg can read ({error})") from error
    return _with_video(container, path)


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


def _packet_times(container: Any, stream: Any) -> list[int | None]:
    """The timestamps of the stream's frames, from its packets (no decoding), sorted; None
    for packets without one (raw elementary streams). Reads the whole file."""
    times = [packet.pts for packet in container.demux(stream) if packet.size > 0 and not packet.is_discard]
    container.seek(0, stream=stream)
    return times if None in times else sorted(times)


class VideoReader:
    """Frames of a video file as (H, W, 3) RGB or (H, W, 1) gray uint8 / uint16 arrays.

    Use as a context manager. ``frames()`` decodes in order, ``timed_frames()`` with each frame's
    timestamp; ``frame(i)`` seeks to the keyframe before frame i and decodes forward, returning
    exactly what sequential decoding gives. Frames come upright: a rotation the file asks for
    (its display matrix, as phones write) is applied, and ``info`` gives the upright size.

    ``hardware_decoding`` decodes on the GPU's video decoder (NVDEC, through FFmpeg's CUDA
    hwaccel) where there is one and it takes the codec, else on the CPU: the same frames
    (decoding is bit-exact by the codecs' standards), with the CPU left to the encoder.

    Raises
    ------
    VideoError
        A missing file, a file that is not a video, an unsupported pixel format, or a stream
        that stops decoding (the message names the frame).
    """

    def __init__(self, path: str | Path, *, hardware_decoding: bool = False) -> None:
        self.path = Path(path)
        if hardware_decoding:  # probed on the CPU: a hardware decoder reports its own pixel format
            with VideoReader(self.path) as probe:
                self.info = probe.info
        self._container = _open_input(self.path, hardware_decoding)
        self._container.streams.video[0].thread_type = CODEC_THREADS
        if not hardware_decoding:
            try:
                self.info = self._probe()
            except Exception:
                self._container.close()
                raise
        self._cache: collections.OrderedDict[int, np.ndarray] = collections.OrderedDict()

    def _probe(self) -> VideoInfo:
        container, stream = self._container, self._container.streams.video[0]
        context = stream.codec_context
        if context.pix_fmt is None or stream.format is None:
            raise VideoError(f"{self.path}: the video stream has no pixel format FFmpeg can decode")
        pixel_format, components = context.pix_fmt, stream.format.components
        bit_depth = max(component.bits for component in components)
        channels = 1 if len(components) == 1 or pixel_format.startswith("gray") else 3
        frame_rate = stream.average_rate or stream.guessed_rate or Fraction(25)
        frame_count = stream.frames or len(self._packet_timestamps)
        rotation = self._first_frame_rotation()
        if stream.duration is not None and stream.time_base is not None:
            duration = float(stream.duration * stream.time_base)
        else:
            duration = frame_count / float(frame_rate)
        color = {
            "primaries": int(context.color_primaries),
            "trc": int(context.color_trc),
            "colorspace": int(context.colorspace),
            "range": int(context.color_range),
        }
        width, height = (stream.height, stream.width) if rotation % 180 else (stream.width, stream.height)
        return VideoInfo(
            path=self.path,
            width=width,
            height=height,
            channels=channels,
            bit_depth=bit_depth,
            pixel_format=pixel_format,
            codec=context.name,
            frame_rate=Fraction(frame_rate),
            time_base=Fraction(stream.time_base or Fraction(1, 90000)),
            frame_count=frame_count,
            duration=duration,
            color=color,
            rotation=rotation,
            other_streams=len(container.streams.audio) + len(container.streams.subtitles),
        )

    @property
    def decoder(self) -> str:
        """Where frames are decoded: "NVDEC" (the GPU's video decoder) or "CPU"."""
        return "NVDEC" if self._container.streams.video[0].codec_context.is_hwaccel else "CPU"

    def _first_frame_rotation(self) -> int:
        """Degrees counterclockwise the first frame is turned for display (0, 90, 180 or 270)."""
        stream = self._container.streams.video[0]
        try:
            first = next(self._container.decode(stream), None)
        except _av().error.FFmpegError as error:
            raise VideoError(f"{self.path}: the first frame cannot be decoded: {error}") from error
        self._container.seek(0, stream=stream)
        if first is None:
            raise VideoError(f"{self.path}: holds no frame")
        return round(first.rotation / 90) % 4 * 90

    def __enter__(self) -> VideoReader:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (idempotent)."""
        self._container.close()

    def __len__(self) -> int:
        return self.info.frame_count

    def frames(self, start: int = 0) -> Iterator[np.ndarray]:
        """Decode frames start, start + 1, ... to the end, in order."""
        yield from (frame for _, frame in self.timed_frames(start))

    def timed_frames(self, start: int = 0) -> Iterator[tuple[int, np.ndarray]]:
        """(timestamp, frame) of frames start, start + 1, ...: timestamps in ``info.time_base``
        units from the stream's start, as the file has them (variable frame rates kept)."""
        yield from ((pts, frame) for index, pts, frame in self._decode_from(start) if index >= start)

    def frame(self, index: int) -> np.ndarray:
        """Frame ``index`` (0-based), by seeking to the keyframe before it; recent frames are cached."""
        if not 0 <= index < self.info.frame_count:
            raise IndexError(f"frame index must be in 0..{self.info.frame_count - 1}, got {index}")
        if index in self._cache:
            self._cache.move_to_end(index)
            return self._cache[index]
        for position, _, frame in self._decode_from(index):
            self._cache[position] = frame
            if len(self._cache) > CACHE_FRAMES:
                self._cache.popitem(last=False)
            if position == index:
                return frame
        raise VideoError(f"{self.path}: frame {index} could not be decoded (the stream ends before it)")

    def _decode_from(self, index: int) -> Iterator[tuple[int, int, np.ndarray]]:
        """(frame number, timestamp from the stream's start, upright array) from the keyframe at
        or before frame ``index`` onwards."""
        av = _av()
        stream = self._container.streams.video[0]
        origin = stream.start_time or 0
        self._container.seek(self._timestamp(index) if index else origin, stream=stream, backward=True)
        output_format = _frame_format(self.info.channels, self.info.bit_depth)
        turns = self.info.rotation // 90
        number = 0 if index == 0 else None  # else known from the first decoded frame's timestamp
        try:
            for frame in self._container.decode(stream):
                if number is None:
                    number = self._frame_number(frame)
                pts = frame.pts if frame.pts is not None else self._nominal_timestamp(number)
                if frame.format.name != self.info.pixel_format:  # NVDEC's NV12 / P010: repacked losslessly,
                    frame = frame.reformat(format=self.info.pixel_format)  # so that RGB comes out as on the CPU
                array = frame.to_ndarray(format=output_format)
                array = np.rot90(array.reshape(array.shape[0], array.shape[1], -1), turns)
                yield number, pts - origin, np.ascontiguousarray(array)
                number += 1
        except av.error.FFmpegError as error:
            failed = (index if number is None else number) + 1
            raise VideoError(f"{self.path}: decoding stopped at frame {failed} (counting from 1): {error}") from error

    @functools.cached_property
    def _packet_timestamps(self) -> list[int | None]:
        """The packets' timestamps, read once (the whole file) when a frame count or a seek needs them."""
        return _packet_times(self._container, self._container.streams.video[0])

    def _frame_timestamps(self) -> list[int] | None:
        """Frame i's timestamp for every i (variable frame rates too); None where packets lack them."""
        times = self._packet_timestamps
        return None if None in times else times

    def _nominal_timestamp(self, index: int) -> int:
        """Frame ``index``'s timestamp at the nominal frame rate."""
        start = self._container.streams.video[0].start_time or 0
        return start + round(Fraction(index) / self.info.frame_rate / self.info.time_base)

    def _timestamp(self, index: int) -> int:
        """Frame ``index``'s timestamp, in the stream's time base."""
        times = self._frame_timestamps()
        return times[index] if times is not None and index < len(times) else self._nominal_timestamp(index)

    def _frame_number(self, frame: Any) -> int:
        """The number of a decoded frame, from its timestamp."""
        if frame.pts is None:
            return 0
        times = self._frame_timestamps()
        if times is not None:
            return bisect.bisect_left(times, frame.pts)
        seconds = (frame.pts - self._nominal_timestamp(0)) * self.info.time_base
        return round(seconds * self.info.frame_rate)


# Codec name -> (encoder, pixel format for 8-bit sources, for deeper sources)
CODECS: dict[str, tuple[str, str, str]] = {
    "h264": ("libx264", "yuv420p", "yuv420p10le"),
    "h265": ("libx265", "yuv420p", "yuv420p10le"),
    "ffv1": ("ffv1", "bgr0", "gbrp16le"),  # RGB kept as RGB: lossless
    "prores": ("prores_ks", "yuv422p10le", "yuv444p10le"),
}
GRAY_FORMATS = {"ffv1": ("gray", "gray16le")}


class VideoWriter:
    """Encode frames to ``path`` through a temporary file beside it, renamed when complete.

    Parameters
    ----------
    path : str or Path
        The output; refused when it is the source, or exists without ``overwrite``.
    like : VideoInfo
        The source: its frame rate, time base, size, color metadata and bit-depth class are
        kept (10-bit in stays 10-bit out where the codec can), and its audio and subtitle
        streams are copied untouched.
    codec : {"h264", "h265", "ffv1", "prores"}
        FFV1 is lossless (RGB kept as planar RGB); ProRes is 10-bit or more.
    crf : int
        Quality of H.264 / H.265, 0 (lossless) .. 51; 18 is visually transparent.
    preset : str
        Speed of H.264 / H.265 ("ultrafast" .. "veryslow").

    Raises
    ------
    VideoError
        Output refused, folder missing or read-only, an encoder missing, or the disk full.
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
    ) -> None:
        av = _av()
        self.path = Path(path)
        self.info = like
        if codec not in CODECS:
            raise VideoError(f"codec must be one of {', '.join(CODECS)}, got {codec!r}")
        if not 0 <= crf <= 51:
            raise VideoError(f"crf must be an integer in 0..51, got {crf}")
        check_output_path(self.path, like.path, overwrite)
        self._temporary = self.path.with_name(f".{self.path.name}.part{self.path.suffix}")
        encoder, eight_bit, deep = CODECS[codec]
        if encoder not in av.codecs_available:
            raise VideoError(f"this FFmpeg build has no {encoder} encoder; choose another codec")
        gray = like.channels == 1 and codec in GRAY_FORMATS
        formats = GRAY_FORMATS[codec] if gray else (eight_bit, deep)
        self._frame_format = _frame_format(1 if gray else 3, like.bit_depth)
        try:
            self._container = av.open(str(self._temporary), mode="w", format=_muxer(self.path))
            self._stream = self._container.add_stream(encoder, rate=like.frame_rate)
            self._stream.width, self._stream.height = like.width, like.height
            self._stream.pix_fmt = formats[1] if like.bit_depth > HIGH_BIT_DEPTH else formats[0]
            self._stream.time_base = like.time_base
            self._stream.codec_context.time_base = like.time_base  # the source's timestamps, exactly
            self._stream.thread_type = CODEC_THREADS
            if codec in ("h264", "h265"):
                self._stream.options = {"crf": str(crf), "preset": preset}
            context = self._stream.codec_context
            context.color_primaries = like.color.get("primaries", 2)
            context.color_trc = like.color.get("trc", 2)
            context.colorspace = like.color.get("colorspace", 2)
            context.color_range = like.color.get("range", 0)
            self._to_yuv = _yuv_conversion(self._stream.pix_fmt, like.color)
            self._copied = self._add_copied_streams()
        except av.error.FFmpegError as error:
            self._remove_temporary()
            raise VideoError(f"{self.path}: cannot start writing: {error}") from error
        except OSError as error:
            self._remove_temporary()
            raise VideoError(f"{self.path}: cannot write here: {error.strerror or error}") from error
        self._written = 0

    def _add_copied_streams(self) -> tuple[Any, dict[int, Any]] | None:
        """The source opened again, and its audio and subtitle streams' indices -> output streams."""
        if not self.info.other_streams:
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
        """Encode one (H, W, C) frame of the source's dtype (uint8, or uint16 for deep sources).

        ``timestamp`` is its presentation time in the source's time base, counted from the
        output's start (``VideoReader.timed_frames`` gives them): variable frame rates are kept.
        Without it, frame n is shown at n / frame rate.
        """
        av = _av()
        array = np.ascontiguousarray(frame)
        if array.ndim == 3 and self._frame_format.startswith("gray"):
            array = array[:, :, 0]
        elif array.ndim == 3 and array.shape[2] == 1:
            array = np.repeat(array, 3, axis=2)
        video_frame = av.VideoFrame.from_ndarray(array, format=self._frame_format)
        if self._to_yuv is not None:
            video_frame = video_frame.reformat(**self._to_yuv)
        if timestamp is None:
            timestamp = round(self._written / self.info.frame_rate / self.info.time_base)
        video_frame.pts, video_frame.time_base = timestamp, self.info.time_base
        self._written += 1
        self._mux(self._stream.encode(video_frame))

    def _mux(self, packets: Any) -> None:
        try:
            self._container.mux(packets)
        except OSError as error:
            self.abort()
            raise VideoError(f"{self.path}: writing failed: {error.strerror or error}") from error

    def close(self) -> None:
        """Flush the encoder, copy the other streams, close, and rename into place."""
        self._mux(self._stream.encode(None))
        if self._copied is not None:
            source, outputs = self._copied
            for packet in source.demux([source.streams[index] for index in outputs]):  # one pass for all
                if packet.dts is not None:
                    packet.stream = outputs[packet.stream.index]
                    self._mux(packet)
        self._close_sources()
        try:
            self._container.close()
            os.replace(self._temporary, self.path)
        except OSError as error:
            self._remove_temporary()
            raise VideoError(f"{self.path}: finishing the file failed: {error.strerror or error}") from error

    def abort(self) -> None:
        """Stop and leave nothing behind: the target is untouched, the temporary file removed."""
        self._close_sources()
        with contextlib.suppress(Exception):
            self._container.close()
        self._remove_temporary()

    def _close_sources(self) -> None:
        if self._copied is not None:
            self._copied[0].close()
        self._copied = None

    def _remove_temporary(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._temporary.unlink()


# FFmpeg's color matrices (AVColorSpace) -> swscale's (SWS_CS_*): BT.709, FCC, BT.601 (as
# BT.470BG and as SMPTE 170M), SMPTE 240M, BT.2020 (constant and non-constant luminance).
SWSCALE_MATRICES = {1: 1, 4: 4, 5: 5, 6: 5, 7: 7, 9: 9, 10: 9}
BT601, LIMITED_RANGE = 5, 1


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


def _muxer(path: Path) -> str | None:
    """The container format for the output's extension; None lets FFmpeg guess."""
    return {".mkv": "matroska", ".mov": "mov", ".mp4": "mp4"}.get(path.suffix.lower())


def check_output_path(path: Path, source: Path, overwrite: bool) -> None:
    """Refuse an output that is the input, exists (unless ``overwrite``) or cannot be written."""
    if path.resolve() == source.resolve():
        raise VideoError(f"{path}: the output must not be the input")
    if path.exists() and not overwrite:
        raise VideoError(f"{path}: exists; pass --overwrite to replace it")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise VideoError(f"{path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise VideoError(f"{path}: the folder {folder} is not writable")


def read_frames(path: str | Path, count: int | None = None, *, start: int = 0) -> np.ndarray:
    """Decode frames ``start`` .. ``start + count - 1`` of a video file as (T, H, W, C).

    Raises
    ------
    VideoError
        The file cannot be read, or holds fewer frames than asked for.
    """
    frames = []
    with VideoReader(path) as reader:
        for frame in reader.frames(start):
            frames.append(frame)
            if count is not None and len(frames) == count:
                break
    if not frames or (count is not None and len(frames) < count):
        raise VideoError(f"{path}: has {start + len(frames)} frames, fewer than the {start + (count or 1)} asked for")
    return np.stack(frames)
