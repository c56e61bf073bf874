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
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

HIGH_BIT_DEPTH = 8  # sources with more bits per component decode to uint16
CACHE_FRAMES = 16  # decoded frames kept for random access


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


def _open_input(path: Path) -> Any:
    av = _av()
    if not path.is_file():
        raise VideoError(f"{path}: no such file")
    try:
        container = av.open(str(path))
    except (av.error.FFmpegError, UnicodeDecodeError) as error:
        raise VideoError(f"{path}: not a video file FFmpeg can read ({error})") from error
    if not container.streams.video:
        container.close()
        raise VideoError(f"{path}: holds no video stream")
    return container


def _frame_format(channels: int, bit_depth: int) -> str:
    if channels == 1:
        return "gray16le" if bit_depth > HIGH_BIT_DEPTH else "gray"
    return "rgb48le" if bit_depth > HIGH_BIT_DEPTH else "rgb24"


def _count_frames(container: Any, stream: Any) -> int:
    """Frames of the stream, counted from its packets where the container does not say."""
    count = sum(1 for packet in container.demux(stream) if packet.size > 0)
    container.seek(0, stream=stream)
    return count


class VideoReader:
    """Frames of a video file as (H, W, 3) RGB or (H, W, 1) gray uint8 / uint16 arrays.

    Use as a context manager. ``frames()`` decodes in order; ``frame(i)`` seeks to the keyframe
    before frame i and decodes forward, returning exactly what sequential decoding gives.

    Raises
    ------
    VideoError
        A missing file, a file that is not a video, an unsupported pixel format, or a stream
        that stops decoding (the message names the frame).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._container = _open_input(self.path)
        try:
            self.info = self._probe()
        except Exception:
            self._container.close()
            raise
        self._cache: collections.OrderedDict[int, np.ndarray] = collections.OrderedDict()

    def _probe(self) -> VideoInfo:
        container, stream = self._container, self._container.streams.video[0]
        pixel_format = stream.codec_context.pix_fmt
        if pixel_format is None or stream.format is None:
            raise VideoError(f"{self.path}: the video stream has no pixel format FFmpeg can decode")
        components = stream.format.components
        bit_depth = max(component.bits for component in components)
        channels = 1 if len(components) == 1 or pixel_format.startswith("gray") else 3
        frame_rate = stream.average_rate or stream.guessed_rate or Fraction(25)
        frame_count = stream.frames or _count_frames(container, stream)
        if stream.duration is not None and stream.time_base is not None:
            duration = float(stream.duration * stream.time_base)
        else:
            duration = frame_count / float(frame_rate)
        context = stream.codec_context
        color = {
            "primaries": int(context.color_primaries),
            "trc": int(context.color_trc),
            "colorspace": int(context.colorspace),
            "range": int(context.color_range),
        }
        return VideoInfo(
            path=self.path,
            width=stream.width,
            height=stream.height,
            channels=channels,
            bit_depth=bit_depth,
            pixel_format=pixel_format,
            codec=context.name,
            frame_rate=Fraction(frame_rate),
            time_base=Fraction(stream.time_base or Fraction(1, 90000)),
            frame_count=frame_count,
            duration=duration,
            color=color,
            rotation=int(_rotation(stream)),
            other_streams=len(container.streams.audio) + len(container.streams.subtitles),
        )

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
        yield from (frame for index, frame in self._decode_from(start) if index >= start)

    def frame(self, index: int) -> np.ndarray:
        """Frame ``index`` (0-based), by seeking to the keyframe before it; recent frames are cached."""
        if not 0 <= index < self.info.frame_count:
            raise IndexError(f"frame index must be in 0..{self.info.frame_count - 1}, got {index}")
        if index in self._cache:
            self._cache.move_to_end(index)
            return self._cache[index]
        for position, frame in self._decode_from(index):
            self._cache[position] = frame
            if len(self._cache) > CACHE_FRAMES:
                self._cache.popitem(last=False)
            if position == index:
                return frame
        raise VideoError(f"{self.path}: frame {index} could not be decoded (the stream ends before it)")

    def _decode_from(self, index: int) -> Iterator[tuple[int, np.ndarray]]:
        """(frame number, array) from the keyframe at or before frame ``index`` onwards."""
        av = _av()
        stream = self._container.streams.video[0]
        target = self._timestamp(index)
        self._container.seek(target if target is not None else 0, stream=stream, backward=True, any_frame=False)
        output_format = _frame_format(self.info.channels, self.info.bit_depth)
        number = None
        decoded = 0
        try:
            for frame in self._container.decode(stream):
                if number is None:
                    number = self._frame_number(frame) if index else 0
                array = frame.to_ndarray(format=output_format)
                yield number, array.reshape(array.shape[0], array.shape[1], self.info.channels)
                number += 1
                decoded += 1
        except av.error.FFmpegError as error:
            frame_number = (number or 0) + 1 if decoded else index
            raise VideoError(f"{self.path}: decoding stopped at frame {frame_number}: {error}") from error

    def _timestamp(self, index: int) -> int | None:
        """The presentation timestamp of frame ``index`` in the stream's time base."""
        if index == 0:
            return None
        stream = self._container.streams.video[0]
        start = stream.start_time or 0
        return start + round(Fraction(index) / self.info.frame_rate / self.info.time_base)

    def _frame_number(self, frame: Any) -> int:
        stream = self._container.streams.video[0]
        if frame.pts is None:
            return 0
        seconds = (frame.pts - (stream.start_time or 0)) * self.info.time_base
        return round(seconds * self.info.frame_rate)


def _rotation(stream: Any) -> float:
    rotate = stream.metadata.get("rotate")
    if rotate is not None:
        with contextlib.suppress(ValueError):
            return float(rotate)
    return 0.0


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
            if codec in ("h264", "h265"):
                self._stream.options = {"crf": str(crf), "preset": preset}
            context = self._stream.codec_context
            context.color_primaries = like.color.get("primaries", 2)
            context.color_trc = like.color.get("trc", 2)
            context.colorspace = like.color.get("colorspace", 2)
            context.color_range = like.color.get("range", 0)
            self._copied = self._add_copied_streams()
        except av.error.FFmpegError as error:
            self._remove_temporary()
            raise VideoError(f"{self.path}: cannot start writing: {error}") from error
        except OSError as error:
            self._remove_temporary()
            raise VideoError(f"{self.path}: cannot write here: {error.strerror or error}") from error
        self._written = 0

    def _add_copied_streams(self) -> list[tuple[Any, Any, Any]]:
        """(source container, source stream, output stream) for the source's audio and subtitles."""
        if not self.info.other_streams:
            return []
        source = _open_input(self.info.path)
        copied = []
        for stream in [*source.streams.audio, *source.streams.subtitles]:
            copied.append((source, stream, self._container.add_stream_from_template(stream)))
        return copied

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, trace: object) -> None:
        if error is None:
            self.close()
        else:
            self.abort()

    def write(self, frame: np.ndarray) -> None:
        """Encode one (H, W, C) frame of the source's dtype (uint8, or uint16 for deep sources)."""
        av = _av()
        array = np.ascontiguousarray(frame)
        if array.ndim == 3 and self._frame_format.startswith("gray"):
            array = array[:, :, 0]
        elif array.ndim == 3 and array.shape[2] == 1:
            array = np.repeat(array, 3, axis=2)
        video_frame = av.VideoFrame.from_ndarray(array, format=self._frame_format)
        video_frame.pts = self._written  # constant frame rate: frame n at n / rate seconds
        video_frame.time_base = 1 / self.info.frame_rate
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
        for source, stream, output in self._copied:
            for packet in source.demux(stream):
                if packet.dts is None:
                    continue
                packet.stream = output
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
        for source in {id(source): source for source, _, _ in self._copied}.values():
            source.close()
        self._copied = []

    def _remove_temporary(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._temporary.unlink()


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
