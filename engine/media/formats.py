"""The outputs the writer can make.

Codecs and their presets, the containers that hold each, the images of a sequence, and the pixel
format each writes frames like a source's in; checked before any work (``check_encoding``,
``output_format``), as the command line does.
"""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import re
import shlex
from fractions import Fraction
from pathlib import Path
from urllib.parse import urlsplit

from .ffmpeg import VideoError, pyav, said_in_our_words
from .image_sequence import is_image_sequence
from .probe import HIGH_BIT_DEPTH, VideoInfo, open_input

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
IMAGE_FORMATS: dict[str, tuple[str, str, str]] = {
    ".png": ("png", "rgb24", "rgb48be"),
    ".tif": ("tiff", "rgb24", "rgb48le"),
    ".tiff": ("tiff", "rgb24", "rgb48le"),
    ".dpx": ("dpx", "rgb24", "rgb48le"),
    ".exr": ("exr", "gbrpf32le", "gbrpf32le"),
}
# DPX's own depths: a 10- or 12-bit scan is written back at its depth (16 bits took half again the space)
DPX_DEPTHS = {10: "gbrp10le", 12: "gbrp12le"}
GRAY_FORMATS = {"ffv1": ("gray", "gray16le")}
NVENC_CODECS = ("h264-nvenc", "h265-nvenc")
# A stream output's protocol -> FFmpeg's muxer: MPEG-TS where the protocol carries bytes, FLV for RTMP
STREAM_MUXERS = {"udp": "mpegts", "srt": "mpegts", "tcp": "mpegts", "rtp": "rtp_mpegts", "rtmp": "flv"}
X26X_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow")
NVENC_PRESETS = ("p1", "p2", "p3", "p4", "p5", "p6", "p7", "fast", "medium", "slow")
DEFAULT_PRESET = "medium"  # x264's, x265's and NVENC's own default
# A live output's x264 / x265 preset unless one is given: tuned for zero latency (sliced threads, no
# lookahead), medium took 123 ms a 1080p frame on 2 cores and veryfast 63 (scripts/bench_live_host.py)
LIVE_X26X_PRESET = "veryfast"
# Above LIVE_FAST_PIXEL_RATE (1080p at 30 fps, in pixels a second) LIVE_FAST_X26X_PRESET instead: a
# 1080p60 stream on 16 cores, veryfast encoding 5 ms a frame beside the conversion to 4:2:0 (7-10 ms),
# had a 95th percentile latency of 70 ms, ultrafast (2.5 ms) 47-52 ms in the same run
# (docs/bench/2026-11-27c-vapoursynth-live-host-side.md).
LIVE_FAST_PIXEL_RATE = 1920 * 1080 * 30
LIVE_FAST_X26X_PRESET = "ultrafast"

X26X_AND_NVENC = ("h264", "h265", "h264-nvenc", "h265-nvenc")
# The containers an output may be, by extension: FFmpeg's muxer, and the codecs whose files the
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

# Source codecs (FFmpeg's names) whose kind an output keeps where no codec is asked for, in a
# container made for masters (MASTER_CONTAINERS): a mastering codec's is ProRes (DNxHR and CineForm
# have no encoder here), a lossless one's FFV1, and a DV tape's capture's FFV1 too (as archives keep
# them: its 4:1:1 or 4:2:0 as it is); either falls back to the other. An MP4 or TS output is a
# delivery's: H.264.
MASTER_SOURCES = ("prores", "dnxhd", "cfhd")
LOSSLESS_SOURCES = (
    *("ffv1", "huffyuv", "ffvhuff", "utvideo", "magicyuv", "rawvideo", "v210", "v410", "r210", "r10k"),
    *("qtrle", "png", "tiff", "dpx", "exr", "dvvideo"),
)
MASTER_CONTAINERS = (".mov", ".mkv", ".mxf", ".avi")
DELIVERY_CODEC = "h264"

# Muxers that hold only uncompressed audio, in these codecs at this sample rate (Hz), and no subtitles
PCM_ONLY = {"mxf": (("pcm_s16le", "pcm_s24le"), 48000)}
# Muxer -> what a sound or subtitle stream it refuses is converted to first (None: left out, -sn)
SOUND_HELD = {"avi": "pcm_s16le"}  # AAC elsewhere
SUBTITLES_HELD = {"matroska": "srt", "mp4": "mov_text", "mov": "mov_text"}
# Muxer -> the subtitles it keeps readable: MPEG-TS takes text ones too, as data no reader shows
SUBTITLES_KEPT = {"mpegts": ("dvb_subtitle", "dvb_teletext")}
# Muxers that end the picture where the sound ends and start a late sound with the picture, dropping
# frames: what they wrote beside other streams is counted before it is published (``check_frames_kept``)
CUTS_PICTURE_TO_SOUND = ("mxf",)
# Muxer -> the start of the codec names it keeps in a form older readers misread: MP4 stores PCM as
# ISO/IEC 23003-5 'ipcm', which FFmpeg 5.1 reads as 16-bit little-endian PCM (24-bit sound became
# full-scale noise); that one itself, READ_RIGHT, comes back as it was.
MISREAD_AUDIO = {"mp4": "pcm_"}
READ_RIGHT = ("pcm_s16le",)

# The start of a pixel format with alpha -> the same format's without (yuva444p12le -> yuv444p12le)
ALPHA_FREE_NAMES = {"yuva": "yuv", "gbrap": "gbrp", "bgra": "bgr0", "rgba": "rgb0", "ya8": "gray", "ya16": "gray16"}
ALPHA_FREE = re.compile(f"^({'|'.join(ALPHA_FREE_NAMES)})")

# Encoders that take subsampled chroma at any size (an odd-sized 4:2:0 source stays 4:2:0 in
# FFV1 and in a y4m pipe); the others need even sizes there.
ANY_SIZE_ENCODERS = ("ffv1", "wrapped_avframe")


def array_format(channels: int, bit_depth: int, floating: bool = False) -> str:
    """PyAV's name of the arrays frames of ``channels`` (1 or 3) become and are made from.

    Gray or RGB, 8 bits, or 16 for sources deeper than HIGH_BIT_DEPTH; float32 for ``floating``
    sources (EXR: 16 bits would clip their highlights above 1.0).
    """
    if floating:
        return "grayf32le" if channels == 1 else "gbrpf32le"
    if channels == 1:
        return "gray16le" if bit_depth > HIGH_BIT_DEPTH else "gray"
    return "rgb48le" if bit_depth > HIGH_BIT_DEPTH else "rgb24"


def encoder_preset(codec: str, *, live: bool, pixel_rate: float = 0.0) -> str:
    """Return the speed preset an output of ``codec`` gets where none is given.

    DEFAULT_PRESET, but for a ``live`` output's H.264 / H.265 LIVE_X26X_PRESET, or
    LIVE_FAST_X26X_PRESET where its ``pixel_rate`` (width x height x frames a second) is above
    LIVE_FAST_PIXEL_RATE: a live encoder must keep up with the source's rate, with time to spare
    for the frames it takes longer over, and drops the frames it has no time for.
    """
    if not live or codec not in ("h264", "h265"):
        return DEFAULT_PRESET
    return LIVE_FAST_X26X_PRESET if pixel_rate > LIVE_FAST_PIXEL_RATE else LIVE_X26X_PRESET


def default_codec(output: Path, like: VideoInfo | None, *, rgb: bool = False, preset: str | None = None) -> str:
    """Return the codec an output named ``output`` is written in where none is asked for.

    A master (ProRes, DNxHR) stays ProRes and a lossless source (FFV1, a DPX scan, raw) or a DV
    capture FFV1 in a master's container (MASTER_CONTAINERS); anything else, or where the container holds neither,
    H.264, or the first codec the container holds (.avi, .mxf).

    Parameters
    ----------
    output : Path
        The output: its extension names the container.
    like : VideoInfo or None
        The source; None where it is not open yet.
    rgb : bool
        Planar RGB asked for: FFV1's.
    preset : str, optional
        An encoder speed preset asked for: H.264's.

    Returns
    -------
    str
        A key of CODECS that the container holds.
    """
    if rgb:
        return "ffv1"
    suffix = output.suffix.lower()
    if suffix not in OUTPUT_CONTAINERS or is_image_sequence(output):  # a pipe, a stream, images: H.264 or none
        return DELIVERY_CODEC
    held = OUTPUT_CONTAINERS[suffix][1]
    kept: tuple[str, ...] = ()
    if like is not None and preset is None and suffix in MASTER_CONTAINERS:
        kept = ("prores", "ffv1") if like.codec in MASTER_SOURCES else ()
        kept = ("ffv1", "prores") if like.codec in LOSSLESS_SOURCES else kept
    return next(codec for codec in (*kept, DELIVERY_CODEC, *held) if codec in held)


def check_encoding(codec: str, crf: int, preset: str, *, rgb: bool = False) -> None:
    """Refuse an unknown codec or preset, crf out of 0..51, or ``rgb`` with a codec other than FFV1 (VideoError).

    Checked by ``VideoWriter``, and by the command line before any slower work.
    """
    if codec not in CODECS:
        raise VideoError(f"codec must be one of {', '.join(CODECS)}, got {codec!r}")
    if not 0 <= crf <= 51:
        raise VideoError(f"crf must be an integer in 0..51, got {crf}")
    if rgb and codec != "ffv1":
        raise VideoError(f"RGB output is for the ffv1 codec, got {codec!r}")
    presets = NVENC_PRESETS if codec in NVENC_CODECS else X26X_PRESETS
    if codec in ("h264", "h265", *NVENC_CODECS) and preset not in presets:
        raise VideoError(f"preset must be one of {', '.join(presets)} for {codec}, got {preset!r}")


def stream_muxer(url: str, codec: str) -> str | None:
    """Return FFmpeg's muxer for a stream output (``udp://HOST:PORT``), None where ``url`` names no stream.

    MPEG-TS over UDP, SRT and TCP, over RTP as RTP's MPEG-TS payload, FLV over RTMP; H.264 or H.265
    (RTMP: H.264), which every receiver of them plays.

    Raises
    ------
    VideoError
        A protocol no stream is written over, or a codec the stream does not carry.
    """
    if "://" not in url:
        return None
    protocol = urlsplit(url).scheme
    if protocol not in STREAM_MUXERS:
        raise VideoError(f"{url}: streams are written over {', '.join(STREAM_MUXERS)}, not {protocol}")
    carried = ("h264", "h264-nvenc") if protocol == "rtmp" else ("h264", "h265", *NVENC_CODECS)
    if codec not in carried:
        raise VideoError(f"{url}: a {protocol} stream carries {', '.join(carried)}, not {codec}: choose --codec h264")
    return STREAM_MUXERS[protocol]


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
        """Return the message, with ``another_codec`` ("another codec") for the choice of another codec."""
        suffix = self.path.suffix.lower()
        *others, last = [name for name, (_, held) in OUTPUT_CONTAINERS.items() if self.codec in held]
        holders = f"{', '.join(others)} or {last}" if others else last
        return (
            f"{self.path}: a {suffix} file holds {', '.join(OUTPUT_CONTAINERS[suffix][1])} here, not {self.codec}; "
            f"choose {holders} for {self.codec}, or {another_codec}"
        )


def output_format(path: Path, codec: str, like: VideoInfo | None = None) -> str:
    """Return the container format (FFmpeg's muxer) of the output's name, checked to hold what it must.

    It must hold ``codec`` and the audio and subtitle streams of ``like`` the writer copies.

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
    refusals = {} if rate or like is None or not like.other_formats else _refusals(like.path)
    if refusals.get(muxer):
        raise VideoError(f"{path}: {_not_held(suffix, codec, muxer, refusals)}")
    return muxer


def _not_held(suffix: str, codec: str, muxer: str, refusals: dict[str, tuple[tuple[str, str], ...]]) -> str:
    """Say which of the source's streams a ``suffix`` output refuses, the containers that hold them, and the way on.

    The way on: write one of those, then FFmpeg's command that converts the streams for
    ``suffix`` while it copies the denoised picture, which both containers hold. (Converting the
    source first fails where ``suffix`` cannot hold its picture either: VP9 in MOV.)
    """
    unheld = refusals[muxer]
    holding = [
        other
        for other, (other_muxer, codecs) in OUTPUT_CONTAINERS.items()
        if codec in codecs and other_muxer in refusals and not refusals[other_muxer]
    ]
    streams = ", ".join(f"{name} {kind}" for kind, name in unheld)
    said = f"a {suffix} file cannot hold the source's {streams}, copied unchanged"
    if not holding:
        return f"{said}, nor can any other container this tool writes with {codec}; leave them out first"
    maps = ["-map", "0:v", "-map", "0:a?", "-map", "0:s?"]  # not -map 0: a timecode's data stream stops Matroska
    options = ["-c:a", SOUND_HELD.get(muxer, "aac")] if any(kind == "audio" for kind, _ in unheld) else []
    if any(kind == "subtitles" for kind, _ in unheld):
        options += ["-c:s", SUBTITLES_HELD[muxer]] if muxer in SUBTITLES_HELD else []
        maps = maps if muxer in SUBTITLES_HELD else maps[:4]  # left out
    listed = ", ".join(holding[:-1]) + " or " + holding[-1] if len(holding) > 1 else holding[0]
    way = "convert them" if options else "leave them out"
    return (
        f"{said}; write {listed}, which {'hold' if len(holding) > 1 else 'holds'} them, then {way} for {suffix} "
        f"(ffmpeg -i OUT{holding[0]} {' '.join([*maps, '-c', 'copy', *options])} OUT{suffix})"
    )


def _refusals(source: Path) -> dict[str, tuple[tuple[str, str], ...]]:
    """Return, for each muxer that holds any sound, the source's other streams it refuses, as (kind, codec).

    Each stream is tried as the writer copies it, into an output in memory whose header is written:
    MOV refuses Opus only there; AVI and MP4 refuse others when they are added. MPEG-TS writes text
    subtitles as data no reader shows: they count as refused. Read once a file (a denoise checks
    its output before any work, then the writer again).
    """
    try:
        status = source.stat()
    except OSError:  # gone since it was read: the writer says so
        return {}
    return _refusals_of(source, status.st_size, status.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _refusals_of(source: Path, size: int, modified: int) -> dict[str, tuple[tuple[str, str], ...]]:
    """``_refusals`` of the file ``source`` of ``size`` bytes, changed at ``modified`` ns (the cache's key)."""
    av = pyav()
    muxers = [muxer for muxer, _ in OUTPUT_CONTAINERS.values() if muxer not in PCM_ONLY]
    refused: dict[str, list[tuple[str, str]]] = {muxer: [] for muxer in muxers}
    with open_input(source) as container, said_in_our_words():  # a trial's refusals are ours to say
        for stream, muxer in itertools.product((*container.streams.audio, *container.streams.subtitles), muxers):
            output = av.open(io.BytesIO(), "w", format=muxer)
            try:
                name = stream.codec_context.name if stream.codec_context is not None else "unknown"
                if stream.type == "subtitle" and name not in SUBTITLES_KEPT.get(muxer, (name,)):
                    raise ValueError(f"{muxer} keeps it as data")
                output.add_stream_from_template(stream)
                output.start_encoding()
            except (av.error.FFmpegError, ValueError):  # PyAV's ValueError: a codec the format does not list
                refused[muxer].append(("audio" if stream.type == "audio" else "subtitles", name))
            finally:
                with contextlib.suppress(av.error.FFmpegError):
                    output.close()
    return {muxer: tuple(streams) for muxer, streams in refused.items()}


# Containers whose FFmpeg muxer takes a stream's pixel aspect ratio from the stream alone, which
# PyAV cannot set: the codec's own field carries it (H.264 and H.265's VUI, ProRes) except FFV1's.
ASPECT_FROM_STREAM_ONLY = (".mkv", ".avi")


def aspect_ratio_lost(output: Path, codec: str, like: VideoInfo) -> str:
    """Return what an output of ``codec`` named ``output`` loses of ``like``'s pixel aspect ratio, or "".

    FFV1 in .mkv or .avi is written with square pixels (measured: a 10:11 DV source came out N/A
    there, 10:11 in every other codec and in FFV1's .mp4 and .mxf), so anamorphic DV and DVD
    would play too narrow or too wide. The way out named is .mp4: FFmpeg 5.1 (Debian 12's) reads
    no FFV1 in .mxf. A y4m stream on standard output ("-") says A0:0 (unknown) whatever the codec.

    Parameters
    ----------
    output : Path
        The output's name: its extension names the container.
    codec : str
        The output's codec, a key of ``CODECS``.
    like : VideoInfo
        The source.

    Returns
    -------
    str
        One sentence for a person: the source's shape, what the output plays as, and the ways out
        (another container or codec, or FFmpeg's command that sets it after); "" where it is kept.
    """
    ratio = like.sample_aspect_ratio
    if ratio is None or ratio == 1:
        return ""
    shown = Fraction(like.width, like.height) * ratio
    if str(output) == "-":  # a y4m stream: its header's A is the muxer's stream's, which PyAV cannot set
        return (
            f"the y4m stream does not carry the source's pixel aspect ratio ({ratio.numerator}:{ratio.denominator}, "
            f"shown {shown.numerator}:{shown.denominator}): its header says A0:0 (unknown); give it to the next "
            f"tool (ffmpeg -f yuv4mpegpipe -i - -vf setsar={ratio.numerator}/{ratio.denominator} ...)"
        )
    if codec != "ffv1" or output.suffix.lower() not in ASPECT_FROM_STREAM_ONLY:
        return ""
    return (
        f"FFV1 in {output.suffix.lower()} does not carry the source's pixel aspect ratio "
        f"({ratio.numerator}:{ratio.denominator}, shown {shown.numerator}:{shown.denominator}): it would play "
        f"{like.width}x{like.height} with square pixels; write .mp4 (FFV1 keeps it there) or another "
        f"codec, or set it after: ffmpeg -i {shlex.quote(str(output))} -c copy -aspect "
        f"{shown.numerator}:{shown.denominator} {shlex.quote(str(output.with_name('fixed' + output.suffix.lower())))}"
    )


def chroma_halved(codec: str, like: VideoInfo) -> str:
    """Return what an output of ``codec`` loses of ``like``'s chroma (4:2:2 or 4:4:4 written 4:2:0), or "".

    H.264 and H.265 are written 4:2:0 (``CODECS``), as every player takes them; FFmpeg's own
    command line would keep a 4:2:2 master's chroma, so a person should hear of it. RGB and gray
    sources are not named: their output is 4:2:0 wherever they go.

    Parameters
    ----------
    codec : str
        The output's codec, a key of ``CODECS``.
    like : VideoInfo
        The source.

    Returns
    -------
    str
        One sentence for a person naming the source's sampling and the codecs that keep it, or
        "" where the output keeps as many chroma rows as the source has.
    """
    if codec in KEEPS_SOURCE_SAMPLING:
        return ""
    form = pyav().VideoFormat(like.pixel_format, 4, 4)
    if form.is_rgb or len(form.components) < 3 or form.components[1].height < 4:
        return ""
    sampling = "4:4:4" if form.components[1].width == 4 else "4:2:2" if form.components[1].width == 2 else "4:1:1"
    name = "H.264" if codec.startswith("h264") else "H.265"  # the codecs left, NVENC's included
    return (
        f"{name} is written 4:2:0, with half the source's chroma rows ({sampling}, {like.pixel_format}); "
        "ProRes and FFV1 keep its sampling"
    )


def misread_streams(path: Path, like: VideoInfo) -> str:
    """Return what goes wrong with ``like``'s copied streams in the container ``path`` names, or "".

    The bytes are copied unchanged, but some containers keep some codecs in a form older readers
    take for another (``MISREAD_AUDIO``); the sentence names them and the containers that do not.

    Parameters
    ----------
    path : Path
        The output; its suffix names the container.
    like : VideoInfo
        The source, whose other streams are copied.

    Returns
    -------
    str
        One sentence for a person, or "" where every copied stream is read back as it was.
    """
    muxer = OUTPUT_CONTAINERS.get(path.suffix.lower(), ("",))[0]
    prefix = MISREAD_AUDIO.get(muxer)
    names = sorted(
        {name for name, _ in like.other_formats if prefix and name.startswith(prefix) and name not in READ_RIGHT}
    )
    if not names:
        return ""
    return (
        f"a {path.suffix.lower()} file keeps PCM audio ({', '.join(names)}) as 'ipcm', which older readers "
        "(FFmpeg 5.1) take for 16-bit PCM; .mov and .mkv keep it as it is"
    )


def output_pixel_format(codec: str, like: VideoInfo, *, gray: bool, rgb: bool) -> str:
    """Return the pixel format ``codec`` writes frames like ``like``'s in (see CODECS)."""
    deep = like.bit_depth > HIGH_BIT_DEPTH
    _, eight_bit, deeper = CODECS[codec]
    supported = [form.name for form in pyav().codec.Codec(CODECS[codec][0], "w").video_formats or ()]
    # Float sources (EXR) come as 16-bit frames, and FFV1's float formats are experimental: not kept.
    floating = re.search(r"f(16|32)(le|be)?$", like.pixel_format) is not None
    # Its picture's sampling without the alpha, which is written opaque: FFV1 in yuva444p12le is
    # a file FFmpeg 5.1 (Debian 12's) cannot decode
    opaque = ALPHA_FREE.sub(lambda match: ALPHA_FREE_NAMES[match.group(0)], like.pixel_format)
    if codec in KEEPS_SOURCE_SAMPLING and not rgb and not floating and opaque in supported:
        return opaque  # gray10le stays gray10le, as 10-bit 4:2:2 stays 10-bit 4:2:2
    if gray:
        return GRAY_FORMATS[codec][deep]
    if codec == "prores":  # by the source's chroma: full (RGB, 4:4:4) or not
        source = pyav().VideoFormat(like.pixel_format, 2, 2)
        full_chroma = source.is_rgb or source.components[1].width == source.components[0].width
        return deeper if full_chroma else eight_bit
    return deeper if deep else eight_bit


def check_subsampled_size(path: Path, pixel_format: str, width: int, height: int) -> None:
    """Refuse a size the output's chroma subsampling cannot hold.

    Libx264 and ProRes refuse odd widths of 4:2:0 and 4:2:2, and odd heights of 4:2:0, with a
    message only a developer reads; 4:2:2 halves only the width.
    """
    form = pyav().VideoFormat(pixel_format, 2, 2)
    chroma = form.components[1] if len(form.components) > 2 else form.components[0]
    odd = [
        name
        for name, size, kept in (("width", width, chroma.width), ("height", height, chroma.height))
        if size % 2 and kept < 2
    ]
    if odd:
        even = (width - width % 2 if "width" in odd else width, height - height % 2 if "height" in odd else height)
        crop = f"crop={even[0]}:{even[1]}:0:0"
        raise VideoError(
            f"{path}: {pixel_format} keeps color at half resolution and needs an even {' and '.join(odd)}, "
            f"but the clip is {width}x{height}; use --codec ffv1 (lossless, any size), or crop it by a pixel "
            f"first (ffmpeg -i IN -map 0:v -map 0:a? -map 0:s? -vf {crop} -c:v ffv1 -c:a copy CROPPED.mkv)"
        )


def check_frames_kept(written: Path, target: Path, frames: int) -> None:
    """Refuse a file that holds fewer frames of video than were muxed into it.

    FFmpeg's MXF muxer (CUTS_PICTURE_TO_SOUND) ends the picture where the sound ends, and starts a
    late sound with the picture, dropping frames: a tape capture whose sound was shorter lost 12 of
    its 50 frames.

    Parameters
    ----------
    written : Path
        The file as written, not yet published.
    target : Path
        Its name once published, for the message.
    frames : int
        The frames of video muxed into it.

    Raises
    ------
    VideoError
        Frames missing: the message says why and what keeps them.
    """
    with pyav().open(str(written)) as container:
        kept = sum(1 for packet in container.demux(container.streams.video[0]) if packet.size)
    if kept < frames:
        raise VideoError(
            f"{target}: FFmpeg's MXF muxer kept {kept} of the {frames} frames: it ends the picture where the sound "
            "ends and cannot start the sound after the picture, and this source's sound is shorter or later; "
            "nothing was written: write .mov (ProRes) or .mkv (FFV1), which keep both, or first make the sound "
            "start and end with the picture (FFmpeg's adelay and apad filters)"
        )
