"""What a video file holds.

``VideoInfo`` (size, depth, rates, color metadata, the streams copied beside the video, warnings)
and the frame index, from its headers, its packets and its first frame. Opening a file refuses what
holds no video in words (``open_input``); the reader (``reader``), the pipe (``pipe``) and the
writer (``writer``, for the streams it copies) open files through it.
"""

from __future__ import annotations

import contextlib
import re
import struct
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .ffmpeg import VideoError, ffmpeg_reason, pyav, said_in_our_words
from .frame_index import FrameIndex, index_stream
from .image_sequence import first_image_number, is_image_sequence
from .tags import file_tags, track_tags
from .timecode import source_timecode
from .y4m import Y4M_HEADER_LIMIT, Y4M_MAGIC, check_y4m_header, y4m_cut, y4m_unmarked_frame

MAX_BOXES = 64  # top-level boxes of an MP4 looked at for its index: a whole file has a handful
HIGH_BIT_DEPTH = 8  # sources with more bits per component decode to uint16
FLOAT_FORMAT = re.compile(r"f(16|32)(le|be)?$")  # FFmpeg's float pixel formats: gbrpf32le, grayf16le, ...
TEXT_CODECS = ("ansi", "bintext", "xbin", "idf", "tty")  # FFmpeg shows text files as pictures of text
# Standard-definition DV's fields come bottom first (IEC 61834): AVFieldOrder's AV_FIELD_BB.
DV_SD_HEIGHTS = (480, 576)
BOTTOM_FIELD_FIRST = 3
# What VideoInfo.warning says of a source whose first frame is interlaced (a file's or a pipe's)
INTERLACED = (
    "the video is interlaced: each frame's two fields are filtered as one picture (no field-aware mode "
    "yet) and written with the source's field order; deinterlace it first (FFmpeg's bwdif) for the best result"
)


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
    timecode : str or None
        The SMPTE timecode of frame 0 ("01:00:00:00"; drop-frame "00:59:59;28"), from the
        container or its timecode track; None where the source has none.
    others_start : float or None
        Seconds on the container's clock when the earliest audio or subtitle stream starts (its
        header's start time); None without one, or where none says.
    tags : dict of str to str
        The file's tags an output keeps ("title", "comment", "artist", "date"...; ``media.tags``).
    video_tags : dict of str to str
        The picture track's "language" and "title", where it has them.
    video_disposition : int
        The picture track's marks, FFmpeg's AV_DISPOSITION flags (1: default).
    field_order : int
        FFmpeg's AVFieldOrder of the picture: 1 progressive, 2 to 5 interlaced (top first, bottom
        first, and their swapped kinds); 0 where the source does not say (raw DV).
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
    timecode: str | None = None  # SMPTE timecode of frame 0; None: the source has none
    others_start: float | None = None  # seconds on the container's clock: the earliest audio or subtitle start
    tags: dict[str, str] = field(default_factory=dict)  # the file's an output keeps: title, comment...
    video_tags: dict[str, str] = field(default_factory=dict)  # the picture track's language and title
    video_disposition: int = 0  # the picture track's marks: FFmpeg's AV_DISPOSITION flags (1: default)
    field_order: int = 0  # AVFieldOrder: 1 progressive, 2..5 interlaced; 0 unknown

    @property
    def other_streams(self) -> int:
        """How many audio and subtitle streams the writer copies."""
        return len(self.other_formats)

    @property
    def floating(self) -> bool:
        """Whether the source's samples are floats (EXR): linear light, highlights above 1.0 kept."""
        return FLOAT_FORMAT.search(self.pixel_format) is not None

    @property
    def dtype(self) -> np.dtype:
        """uint8 for 8-bit sources, uint16 (full 16-bit scale) for deeper ones, float32 for float ones."""
        if self.floating:
            return np.dtype(np.float32)
        return np.dtype(np.uint16 if self.bit_depth > HIGH_BIT_DEPTH else np.uint8)


def open_input(path: Path, hardware_decoding: bool = False, frame_rate: Fraction | None = None) -> Any:
    """Open ``path`` (a video file or an image sequence) as a PyAV container with a video stream, or VideoError.

    ``frame_rate``: an image sequence's frames a second (FFmpeg's 25 where None); images carry none.
    """
    av = pyav()
    if is_image_sequence(path):
        options = {"start_number": str(first_image_number(path))}
        if frame_rate is not None:
            options["framerate"] = str(frame_rate)
        try:
            with said_in_our_words():
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
        with said_in_our_words():
            container = av.open(str(path))
    except (av.error.FFmpegError, UnicodeDecodeError) as error:
        with open(path, "rb") as file:
            line = file.readline(Y4M_HEADER_LIMIT)
        if line.startswith(Y4M_MAGIC):  # a y4m file whose header FFmpeg refuses: said in words
            check_y4m_header(line, str(path))
        if _index_missing(path):
            raise VideoError(
                f"{path}: an MP4 / MOV file without its index (the moov box): the recording or copy was cut "
                "short before it ended, and no reader can play it; a tool that rebuilds the index from a good "
                "file of the same camera (such as untrunc) may recover it"
            ) from error
        raise VideoError(f"{path}: not a video file FFmpeg can read ({ffmpeg_reason(error)})") from error
    return _with_video(container, path)


def _index_missing(path: Path) -> bool:
    """Whether ``path`` is an ISO BMFF file (MP4, MOV: its first box ``ftyp``) whose top-level boxes hold no ``moov``.

    A camera or a copy cut short writes the media (``mdat``) but never the index that ends it.
    """
    size, boxes, offset = path.stat().st_size, [], 0
    with open(path, "rb") as file:
        while offset + 8 <= size and len(boxes) < MAX_BOXES:
            file.seek(offset)
            length, kind = struct.unpack(">I4s", file.read(8))
            if length == 1:  # a 64-bit size follows
                length = struct.unpack(">Q", file.read(8))[0]
            boxes.append(kind)
            if length < 8:  # 0: to the end of the file; less: not a box
                break
            offset += length
    return bool(boxes) and boxes[0] == b"ftyp" and b"moov" not in boxes


def _with_video(container: Any, path: Path) -> Any:
    """``container``, refused (and closed) when it has no video stream."""
    if not container.streams.video:
        container.close()
        raise VideoError(f"{path}: holds no video stream")
    return container


def hdr10_metadata(frame: Any) -> dict[str, str]:
    """Return a decoded frame's HDR10 static metadata, as x265's ``master-display`` and ``max-cll``.

    Chromaticities in units of 0.00002, luminance in 0.0001 cd/m2; ``max-cll`` is MaxCLL,MaxFALL in
    cd/m2.
    """
    types = pyav().sidedata.sidedata.Type
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


def stream_facts(path: Path | str, container: Any, first: Any = None) -> dict[str, Any]:
    """Return what the first video stream's headers say: pixel format, rates, colors, size.

    ``first``: the stream's first frame, decoded, where its headers may not say them yet (a live
    stream joined between keyframes, probed briefly): its format and size stand in for theirs.
    """
    stream = container.streams.video[0]
    context = stream.codec_context
    if context is None:
        raise VideoError(f"{path}: FFmpeg has no decoder for its video stream")
    if context.name in TEXT_CODECS:
        raise VideoError(f"{path}: is text ({context.name}), not a video")
    video_format = stream.format if stream.format is not None or first is None else first.format
    if video_format is None:
        raise VideoError(f"{path}: the video stream has no pixel format FFmpeg can decode")
    pixel_format, components = context.pix_fmt or video_format.name, video_format.components
    size = (stream.width, stream.height) if stream.width or first is None else (first.width, first.height)
    return {
        "size": size,
        "channels": 1 if len(components) == 1 or pixel_format.startswith("gray") else 3,
        "bit_depth": max(component.bits for component in components),
        "pixel_format": pixel_format,
        "codec": context.name,
        "frame_rate": _frame_rate(stream),
        "time_base": Fraction(stream.time_base or Fraction(1, 90000)),
        "color": {
            "primaries": int(context.color_primaries),
            "trc": int(context.color_trc),
            "colorspace": int(context.colorspace),
            "range": int(context.color_range),
        },
        "other_formats": tuple(map(_codec_and_rate, (*container.streams.audio, *container.streams.subtitles))),
        "sample_aspect_ratio": Fraction(stream.sample_aspect_ratio) if stream.sample_aspect_ratio else None,
        "timecode": source_timecode(container),
        "others_start": _earliest_start((*container.streams.audio, *container.streams.subtitles)),
        "tags": file_tags(container),
        "video_tags": track_tags(stream),
        "video_disposition": int(stream.disposition),
        "field_order": int(context.field_order),
    }


def _frame_rate(stream: Any) -> Fraction:
    """Frames a second: the average (frames over duration), unless far above the stream's own rate; else 25.

    Raw DV's average reads its time base's 60000 for 25 (the output was written at 60000 fps: MOV
    and MP4 refused it after the whole run, Matroska was tagged 30000 fps).
    """
    average, own = stream.average_rate, stream.guessed_rate
    if average and (not own or average <= 2 * own):
        return Fraction(average)
    return Fraction(own or 25)


def _alpha_warning(first: Any, facts: dict[str, Any], side_alpha: bool) -> str:
    """Say that the source's alpha channel is not kept, and how to merge it back; "" where it has none.

    A GIF decodes with alpha always: one whose first frame is opaque has no transparency to lose.
    FFmpeg's alphamerge (8-bit formats only) puts an 8-bit source's alpha back exactly.
    """
    if side_alpha:
        alpha = "(VP9's, beside the picture)"
    elif len(first.format.components) in (2, 4):  # gray or colour, with alpha
        if facts["codec"] == "gif" and first.to_ndarray(format="rgba")[..., 3].min() == 255:
            return ""
        alpha = f"({facts['pixel_format']})"
    else:
        return ""
    merge = (
        ' (ffmpeg -i OUT -i IN -filter_complex "[1:v]alphaextract[a];[0:v][a]alphamerge" -c:v ffv1 MERGED.mkv)'
        if facts["bit_depth"] <= 8 and not side_alpha
        else ""
    )
    return (
        f"the video has an alpha channel {alpha}: only its picture is denoised and written, opaque; keep the "
        f"transparency by merging the source's alpha back in afterwards{merge}"
    )


class _Claims(NamedTuple):
    """What a file's headers say of its video that its frames are checked against (``_described``)."""

    frames: int  # the frames its container counts; 0 where it keeps no count
    ends: float | None  # seconds on its clock where a Matroska track's DURATION tag says it ends
    side_alpha: bool  # WebM's VP9 alpha, beside the picture, which FFmpeg's decoder leaves out


def _claims(stream: Any) -> _Claims:
    """Return what ``stream``'s headers say of it (``_Claims``)."""
    return _Claims(stream.frames, _declared_seconds(stream), stream.metadata.get("alpha_mode") == "1")


def _declared_seconds(stream: Any) -> float | None:
    """Return when a Matroska video track's DURATION tag says it ends ("00:00:03.000000000"), seconds; or None.

    On the file's clock: a track that starts at 10 s and lasts 2 says 12. FFmpeg's muxer writes
    it near the file's start, so a file cut short still says it.
    """
    tag = stream.metadata.get("DURATION")
    parts = tag.split(":") if isinstance(tag, str) else []
    try:
        hours, minutes, seconds = (float(part) for part in parts)
    except ValueError:  # no tag, or another form
        return None
    return hours * 3600 + minutes * 60 + seconds


def _cut_short(index: FrameIndex, claims: _Claims, facts: dict[str, Any], start: float, duration: float) -> list[str]:
    """Return what says a file is truncated: fewer frames or an earlier end than its headers claim; a frame cut in two.

    ``start`` and ``duration``: its frames' first time and length, seconds.
    """
    said = []
    if index.packets and claims.frames > index.packets:
        held = f"holds {index.frame_count}: it is truncated or damaged"
        said.append(f"the file declares {claims.frames} frames but {held}")
    elif claims.ends is not None and claims.ends - (start + duration) > max(2 / facts["frame_rate"], 0.01 * duration):
        said.append(  # the tag is where the track ends on the file's clock
            f"the file says its video ends at {claims.ends:.3f} s but its frames end at {start + duration:.3f} s: "
            "it is truncated or damaged"
        )
    if index.left_out is not None:
        at = float((index.left_out - index.timestamps[0]) * facts["time_base"])
        cut = f"it ends inside the frame at {at:.3f} s, which is left out (only part of its picture is there)"
        said.append(cut if said else f"the file is cut short: {cut}")
    return said


def _codec_and_rate(stream: Any) -> tuple[str, int]:
    """Return an audio or subtitle stream's codec, as FFmpeg names it, and sample rate in Hz (0 for subtitles)."""
    context = stream.codec_context  # None where this FFmpeg has no decoder for it
    return (context.name if context is not None else "an unknown codec"), getattr(context, "sample_rate", 0)


def _earliest_start(streams: tuple[Any, ...]) -> float | None:
    """Seconds on the container's clock when the earliest of ``streams`` starts, by their headers; None if none says."""
    starts = [float(stream.start_time * stream.time_base) for stream in streams if stream.start_time is not None]
    return min(starts, default=None)


def probe_video(path: Path, frame_rate: Fraction | None = None) -> tuple[VideoInfo, FrameIndex]:
    """Return what the video file ``path`` holds, and the index of its frames (an image sequence's at ``frame_rate``).

    Its headers read, then its packets (``index_stream``), and the first frame decoded for what only
    frames carry (rotation, HDR10 metadata, interlacing).

    Raises
    ------
    VideoError
        A file that is no video FFmpeg can read, or whose stream cannot be read through (the
        message says where).
    """
    with open_input(path, frame_rate=frame_rate) as container:  # refuses what is no video before any indexing
        facts, claims = stream_facts(path, container), _claims(container.streams.video[0])
        y4m = container.format.name == "yuv4mpegpipe"
        try:  # the headers read no packet: the same demuxer decodes the first frame and indexes them
            index, first = index_stream(path, container, lambda: open_input(path, frame_rate=frame_rate))
        except pyav().error.FFmpegError as error:
            size = (facts["pixel_format"], *facts["size"])
            if y4m and (unmarked := y4m_unmarked_frame(path, *size)) is not None:
                raise VideoError(
                    f"{path}: frame {unmarked + 1} (counting from 1) does not start with FRAME where the y4m "
                    f"header's size puts it ({ffmpeg_reason(error)}): the file is damaged or its header does not "
                    "match its frames"
                ) from error
            raise VideoError(f"{path}: the video stream cannot be read: {ffmpeg_reason(error)}") from error
    if first is None or index.frame_count == 0:
        raise VideoError(f"{path}: holds no frame FFmpeg can decode")
    return _described(path, index, facts, claims, first, y4m), index


def _described(
    path: Path, index: FrameIndex, facts: dict[str, Any], claims: _Claims, first: Any, y4m: bool
) -> VideoInfo:
    """``path``'s ``VideoInfo`` from its stream's headers (``facts``, ``claims``), frame index and first frame."""
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
    warnings = []
    if y4m and (cut := y4m_cut(path, facts["pixel_format"], width, height, count)):
        warnings.append(cut)
    warnings += _cut_short(index, claims, facts, start_time, duration)
    alpha = _alpha_warning(first, facts, claims.side_alpha)
    if alpha:
        warnings.append(alpha)
    if getattr(first, "interlaced_frame", False):
        warnings.append(INTERLACED)
        if facts["codec"] == "dvvideo" and not facts["field_order"] and height in DV_SD_HEIGHTS:
            facts["field_order"] = BOTTOM_FIELD_FIRST  # FFmpeg leaves it unknown; PyAV gives no frame's
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
