"""y4m (yuv4mpegpipe), the uncompressed stream of FFmpeg's pipes: a header line, then frames of FRAME and planes.

Headers FFmpeg would refuse in words no one can act on are refused here in ours; where its frames
lie finds a file cut in a frame or a frame without its marker. Probing a file (``probe``) and
reading a pipe (``pipe``) use it, and the writer its pixel formats.
"""

from __future__ import annotations

from pathlib import Path

from .ffmpeg import VideoError, pyav

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
# y4m's pixel formats: a source in one of them is piped out as it is, others as 4:4:4
Y4M_FORMATS = (
    *("yuv420p", "yuv422p", "yuv444p", "yuv411p", "gray", "gray16le"),
    *(f"yuv{chroma}p{bits}le" for chroma in ("420", "422", "444") for bits in (10, 12, 16)),
)


def check_y4m_header(line: bytes, name: str) -> None:
    """Refuse a y4m header line FFmpeg would refuse in words no one can act on.

    The line is ``name``'s: a file, or standard input. FFmpeg says "Device or resource busy" for W0
    H0, "Invalid argument" for Im.

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


def _y4m_layout(path: Path, pixel_format: str, width: int, height: int) -> tuple[int, int]:
    """(header bytes, bytes a frame) of a y4m file: its header line, then frames of FRAME and planes."""
    planes = pyav().VideoFormat(pixel_format, width, height).components  # y4m's formats are planar
    frame = len(Y4M_FRAME) + sum(plane.width * plane.height * ((plane.bits + 7) // 8) for plane in planes)
    with open(path, "rb") as file:
        return len(file.readline(Y4M_HEADER_LIMIT)), frame


def y4m_cut(path: Path, pixel_format: str, width: int, height: int, count: int) -> str:
    """Return what a y4m file holds past its ``count`` whole frames.

    FFmpeg's demuxer ends quietly at a frame cut short, so a cut file gave one frame fewer and no
    word of it; "" where nothing.
    """
    header, frame = _y4m_layout(path, pixel_format, width, height)
    extra = path.stat().st_size - header - count * frame
    if extra <= 0:
        return ""
    cut = f"it ends in the middle of frame {count + 1} ({extra} of its {frame} bytes)"
    return f"{cut}: it was cut; the frames before it are used"


def y4m_unmarked_frame(path: Path, pixel_format: str, width: int, height: int) -> int | None:
    """Return the number (from 0) of a y4m file's first frame not starting with FRAME where it should, or None.

    Where it should: where the header's size puts it. FFmpeg says only "Invalid data found".
    """
    header, frame = _y4m_layout(path, pixel_format, width, height)
    with open(path, "rb") as file:
        for number in range((path.stat().st_size - header) // frame + 1):
            file.seek(header + number * frame)
            marker = file.read(len(Y4M_FRAME) - 1)
            if marker and marker != Y4M_FRAME[:-1]:
                return number
    return None
