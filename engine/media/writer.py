"""Writing a video.

``VideoWriter`` encodes frames to a temporary file beside the target, copies the source's audio and
subtitle streams untouched, and renames the file into place only when it is complete; to Y'CbCr
exactly through ``media.yuv``. ``check_output_path`` refuses an output that could not or should not
be written before any frame is filtered. Errors are ``VideoError`` with one line a person can act
on.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ..cores import free_cores
from ..frames import FULL_SCALE_BITS, check_bit_depth, checked_frame, from_float32
from .copied_streams import CopiedStreams
from .ffmpeg import CODEC_THREADS, VideoError, ffmpeg_reason, pyav, said_in_our_words
from .formats import (
    ANY_SIZE_ENCODERS,
    CODECS,
    CUTS_PICTURE_TO_SOUND,
    DPX_DEPTHS,
    GRAY_FORMATS,
    IMAGE_FORMATS,
    NVENC_CODECS,
    array_format,
    check_encoding,
    check_frames_kept,
    check_subsampled_size,
    output_format,
    output_pixel_format,
    stream_muxer,
)
from .image_sequence import is_image_sequence, numbered_images, sequence_files
from .probe import FLOAT_FORMAT, HIGH_BIT_DEPTH, VideoInfo
from .reader import TimedFrame, VideoReader
from .staged_output import OutputBusyError, StagedOutput, dangling_link, folder_problem
from .tags import keep_tags
from .timecode import tag_timecode
from .y4m import Y4M_FORMATS
from .yuv import YuvFrame, YuvLayout, planes_to_frame, rgb_to_frame, yuv_layout

STANDARD_OUTPUT = "-"


class VideoWriter:
    """Encode frames to ``path`` through a temporary file beside it, renamed when complete.

    Parameters
    ----------
    path : str or Path
        The output; refused when it is the source, or exists without ``overwrite``. A stream's
        URL (``udp://HOST:PORT``, ``srt://``, ``tcp://``, ``rtp://``: MPEG-TS; ``rtmp://``: FLV)
        is sent to as frames are written, H.264 or H.265 (``stream_muxer``). A name
        with a frame number's place (``restored/%06d.png``, .tif, .dpx or .exr) is an image
        sequence: RGB, 8 or 16 bits as the source (EXR: float), numbered from ``first_number``,
        without the source's sound; ``codec`` is then ignored. ``-`` writes y4m
        (yuv4mpegpipe) to standard output, for an FFmpeg pipeline: the source's YUV sampling
        where y4m has it, no sound.
    like : VideoInfo or VideoReader
        The source, or its open reader: its frame rate, time base, size, color metadata and
        bit-depth class are kept (10-bit in stays 10-bit out where the codec can), and its audio
        and subtitle streams are copied untouched: from the reader's demuxer
        (``VideoReader.demuxer``) when it is given, else from the file ``like.path`` opened again.
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
    origin : int, optional
        The source timestamp (in its ``time_base`` units) the output's clock starts at: a
        ``TimedFrame`` is shown at its timestamp minus ``origin``. By default the first frame
        written's; a segment of a longer output gives the whole's, so that its frames keep their
        times in it (``media.join``).
    copy_streams : bool
        Copy the source's audio and subtitles (the default); a segment leaves them to the join.
    bit_depth : int
        Bits per sample of the uint16 frames written, 9..16: 16 (the default) for 16-bit full
        scale, as ``VideoReader`` gives deep sources; 10 for 10-bit samples held in uint16
        (0..1023, as VapourSynth hands them).
    low_delay : bool
        For a live output: H.264 / H.265 tuned for zero latency (x264's ``zerolatency``: no
        lookahead and no B-frames, each frame encoded as it comes, at some cost in size).
    first_number : int
        The number of an image sequence's first image: 1 as FFmpeg numbers them by default; an
        export gives its first frame's own (``denoise_file``: a scanned reel's 086400 stays so).
    timecode : str, optional
        The SMPTE timecode of the first frame written ("01:00:00:00"), kept where the container
        holds one (MOV's timecode track, MXF's, a tag in Matroska and MP4); an export gives the
        source's, advanced to its first frame.

    Attributes
    ----------
    path : Path
        The output.
    info : VideoInfo
        The source's (``like``, or ``like.info`` of a reader).
    yuv_layout : YuvLayout or None
        The Y'CbCr layout frames are converted to, in which ``write`` takes a ``YuvFrame`` as it
        is; None for RGB, gray, image and y4m-less outputs, which take arrays alone.

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
        like: VideoInfo | VideoReader,
        *,
        codec: str = "h264",
        crf: int = 18,
        preset: str = "medium",
        overwrite: bool = False,
        span: tuple[float, float] = (0.0, math.inf),
        rgb: bool = False,
        bit_depth: int = FULL_SCALE_BITS,
        origin: int | None = None,
        copy_streams: bool = True,
        low_delay: bool = False,
        first_number: int = 1,
        timecode: str | None = None,
    ) -> None:
        av = pyav()
        self.path = Path(path)
        check_bit_depth(bit_depth)
        self._bit_depth = bit_depth
        self._reader = like if isinstance(like, VideoReader) else None
        like = self.info = like.info if isinstance(like, VideoReader) else like
        check_encoding(codec, crf, preset, rgb=rgb)
        self._pipe = str(path) == STANDARD_OUTPUT
        streamed = None if self._pipe else stream_muxer(str(path), codec)  # a URL: sent as it is written
        muxer = None if self._pipe else streamed or output_format(self.path, codec, like)
        if not self._pipe and streamed is None:
            check_output_path(self.path, like.path, overwrite)
        self._sequence = is_image_sequence(self.path)  # its suffix checked by check_output_path
        encoder = _encoder(str(path), codec)
        _check_built(encoder)
        gray = like.channels == 1 and codec in GRAY_FORMATS and not self._sequence and not self._pipe
        self._frame_format = array_format(1 if gray else 3, like.bit_depth)
        try:
            self._output = (
                None
                if self._pipe or streamed
                else StagedOutput(self.path, sequence=self._sequence, overwrite=overwrite)
            )
        except OSError as error:
            raise VideoError(str(error) if isinstance(error, OutputBusyError) else f"{self.path}: {error}") from error
        try:
            if self._pipe:
                self._container = av.open("pipe:1", mode="w", format="yuv4mpegpipe", options={"strict": "-1"})
            elif streamed:
                self._container = av.open(str(path), mode="w", format=streamed)
            else:
                # bitexact: no random segment ID nor date (Matroska), so that the same run writes the same bytes
                numbered = {"start_number": str(first_number)} if self._sequence else {}
                self._container = av.open(
                    str(self._output.staged), mode="w", format=muxer, options={**BITEXACT, **numbered}
                )
            self._stream = self._container.add_stream(encoder, rate=like.frame_rate)
            if not (self._pipe or self._sequence):
                keep_tags(self._container, self._stream, like)
                if timecode is not None:
                    tag_timecode(self._container, self._stream, timecode)
            self._stream.width, self._stream.height = like.width, like.height
            self._stream.pix_fmt = self._pixel_format(codec, gray=gray, rgb=rgb)
            self._time_base = 1 / like.frame_rate if self._pipe else like.time_base  # y4m has a rate, no times
            self._stream.time_base = self._time_base
            self._stream.codec_context.time_base = self._time_base  # the source's timestamps, exactly
            self._stream.thread_type = CODEC_THREADS
            if self._pipe:  # 4:2:0 chroma where ``yuv`` puts it, MPEG-2's sites: y4m's C420mpeg2, not 420jpeg
                self._stream.options = {"chroma_sample_location": "left"}
            elif codec in ("h264", "h265"):
                self._stream.options = {"crf": str(crf), "preset": preset, **_hdr10_options(codec, like.hdr10)}
                if codec == "h264" and like.field_order in X264_FIELDS:  # coded as fields, the top or bottom first
                    self._stream.options["x264-params"] = X264_FIELDS[like.field_order]
                if low_delay:  # no lookahead nor B-frames: each frame's packet comes out as it goes in
                    self._stream.options["tune"] = "zerolatency"
            elif codec in NVENC_CODECS:
                self._stream.options = {"rc": "vbr", "cq": str(crf), "preset": preset}
            elif codec == "ffv1":
                self._stream.options = _ffv1_options(like.width, like.height)
            context = self._stream.codec_context
            color = _output_color(like.color, like.height, self._stream.pix_fmt)
            context.color_primaries = color.get("primaries", 2)
            context.color_trc = color.get("trc", 2)
            context.colorspace = color.get("colorspace", 2)
            context.color_range = color.get("range", 0)
            if like.sample_aspect_ratio is not None:  # anamorphic pixels stay so (H.264's VUI, MOV's pasp)
                context.sample_aspect_ratio = like.sample_aspect_ratio
            context.field_order = like.field_order  # two fields a frame stay so (MOV's fiel, Matroska's FieldOrder)
            if encoder not in ANY_SIZE_ENCODERS:
                check_subsampled_size(self.path, self._stream.pix_fmt, like.width, like.height)
            pixel_format = self._stream.pix_fmt
            if like.floating and FLOAT_FORMAT.search(pixel_format):  # EXR to EXR: linear floats as they are
                self._frame_format = array_format(1 if gray else 3, like.bit_depth, floating=True)
            self._made_frame, self.yuv_layout = _frame_maker(pixel_format, self._frame_format, color, like.height)
            self._open_encoder(codec)
            self._copied = self._copied_streams(span) if copy_streams else None
        except VideoError:
            self._discard()
            raise
        except (av.error.FFmpegError, ValueError) as error:  # PyAV says ValueError for a muxer's refusals
            self._discard()
            raise VideoError(f"{self.path}: cannot start writing: {ffmpeg_reason(error)}") from error
        except OSError as error:
            self._discard()
            raise VideoError(f"{self.path}: cannot write here: {error.strerror or error}") from error
        self._written, self._closed, self._first_number = 0, False, first_number
        self._muxer = muxer
        self._origin = origin  # None: the first TimedFrame's timestamp, so that the output starts at 0

    def _pixel_format(self, codec: str, *, gray: bool, rgb: bool) -> str:
        if self._pipe:
            if self.info.pixel_format in Y4M_FORMATS:
                return self.info.pixel_format
            return "yuv444p16le" if self.info.bit_depth > HIGH_BIT_DEPTH else "yuv444p"
        if self._sequence:
            suffix = self.path.suffix.lower()
            _, eight_bit, deep = IMAGE_FORMATS[suffix]
            if suffix == ".dpx" and self.info.bit_depth in DPX_DEPTHS and not self.info.floating:
                return DPX_DEPTHS[self.info.bit_depth]
            return deep if self.info.bit_depth > HIGH_BIT_DEPTH else eight_bit
        return output_pixel_format(codec, self.info, gray=gray, rgb=rgb)

    def _open_encoder(self, codec: str) -> None:
        """Open the encoder now, so that one this machine cannot run is refused before any work."""
        try:
            with said_in_our_words():
                self._stream.codec_context.open()
        except pyav().error.FFmpegError as error:
            self._container.close()
            if codec in NVENC_CODECS:
                raise VideoError(_no_nvenc(codec)) from error
            stream = self._stream
            raise VideoError(
                f"{self.path}: the {codec} encoder refuses {stream.width}x{stream.height} {stream.pix_fmt} frames "
                f"({ffmpeg_reason(error)}); its pictures have size limits (H.264: 16384 pixels a side at most): "
                "choose --codec ffv1 (lossless, any size) or scale the clip down"
            ) from error

    def _copied_streams(self, span: tuple[float, float]) -> CopiedStreams | None:
        """Return the source's audio and subtitle streams, added to the output, or None where it has none or cannot."""
        if not self.info.other_streams or self._sequence or self._pipe:
            return None
        demuxer = None if self._reader is None else self._reader.demuxer()
        return CopiedStreams(self.info, self._container, span, demuxer)

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, trace: object) -> None:
        if error is None:
            self.close()
        else:
            self.abort()

    def write(self, frame: np.ndarray | YuvFrame | TimedFrame) -> None:
        """Encode one (H, W, C) frame of the source's dtype (uint8, or uint16 of ``bit_depth`` for deep sources).

        Or a ``YuvFrame`` in the writer's ``yuv_layout`` (the GPU's export converts there). A
        ``TimedFrame`` (``VideoReader.timed_frames`` gives them) is shown at its timestamp,
        counted from the first one written: variable frame rates are kept. A bare frame: frame n
        is shown at n / frame rate.

        Raises
        ------
        VideoError
            A frame of another size, or the writer was closed.
        ValueError
            uint16 samples beyond ``bit_depth``; a ``YuvFrame`` of another layout.
        """
        timed = frame if isinstance(frame, TimedFrame) else None
        picture = frame if timed is None else timed.array
        if not isinstance(picture, YuvFrame):
            picture = np.ascontiguousarray(picture)
        if self._closed:
            raise VideoError(f"{self.path}: the writer is closed; frames go to an open VideoWriter")
        if picture.shape[:2] != (self.info.height, self.info.width):
            wanted, size = f"{self.info.width}x{self.info.height}", "x".join(map(str, picture.shape[1::-1]))
            raise VideoError(f"{self.path}: frames must be {wanted}, as the source, got {size}")
        if isinstance(picture, YuvFrame):
            if picture.layout != self.yuv_layout:
                raise ValueError(f"{self.path}: Y'CbCr frames must be {self.yuv_layout}, got {picture.layout}")
            array: np.ndarray | YuvFrame = picture
        else:
            array = self._pixels(picture)
        video_frame = self._made_frame(array)
        if timed is None or self._pipe:
            timestamp = round(self._written / self.info.frame_rate / self._time_base)
        else:
            self._origin = timed.timestamp if self._origin is None else self._origin
            timestamp = timed.timestamp - self._origin
        video_frame.pts, video_frame.time_base = timestamp, self._time_base
        self._written += 1
        self._mux(self._stream.encode(video_frame))

    def _pixels(self, array: np.ndarray) -> np.ndarray:
        """Return a frame's array as its conversion takes it: 16-bit full scale, channels as the output has them.

        Float frames stay so for a float output (EXR), else become 16-bit (0..1 of them).
        """
        if array.dtype == np.uint16:
            array = checked_frame(array, self._bit_depth)  # at 16-bit full scale
        if array.dtype == np.float32 and not FLOAT_FORMAT.search(self._frame_format):
            array = from_float32(array, np.dtype(np.uint16))
        if array.ndim == 3 and self._frame_format.startswith("gray"):
            return array[:, :, 0]
        if array.ndim == 3 and array.shape[2] == 1:
            return np.repeat(array, 3, axis=2)
        return array

    def _mux(self, packets: Any) -> None:
        try:
            self._container.mux(packets)
        except (OSError, pyav().error.FFmpegError) as error:  # a full disk; a packet the muxer refuses
            self.abort()
            raise VideoError(f"{self.path}: writing failed: {ffmpeg_reason(error)}") from error

    def close(self) -> None:
        """Flush the encoder, copy the other streams, close, and rename into place (idempotent)."""
        if self._closed:
            return
        self._closed = True
        copied = self._copied is not None
        try:
            self._mux(self._stream.encode(None))
            if self._copied is not None:
                self._copied.copy(self._mux)
        except BaseException:
            self.abort()  # nothing half written is left behind, whatever failed
            raise
        self._close_sources()
        try:
            self._container.close()
            if self._muxer in CUTS_PICTURE_TO_SOUND and copied:
                self._check_frames_kept()
            if self._output is not None:
                self._output.publish(self._older_images())
        except FileExistsError as error:
            raise VideoError(str(error)) from error
        except BaseException as error:
            self._discard()  # nothing half written is left behind: a muxer's refusal at the end too
            if isinstance(error, (OSError, pyav().FFmpegError)):
                reason = getattr(error, "strerror", None) or error
                raise VideoError(f"{self.path}: finishing the file failed: {reason}") from error
            raise

    def _older_images(self) -> list[Path]:
        """Return the images of an older sequence of this name that this one leaves over.

        Those numbered past its last, or before its first: with overwrite, replaced too, so that the
        folder holds this sequence alone.
        """
        if not self._sequence:
            return []
        numbers = range(self._first_number, self._first_number + self._written)
        return [file for number, file in numbered_images(self.path) if number not in numbers]

    def abort(self) -> None:
        """Stop and leave nothing behind: the target is untouched, the temporary file removed."""
        self._closed = True
        self._close_sources()
        with contextlib.suppress(Exception):
            self._container.close()
        self._discard()

    def _close_sources(self) -> None:
        if self._copied is not None:
            self._copied.close()
        self._copied = None

    def _discard(self) -> None:
        if self._output is not None:
            self._output.discard()

    def _check_frames_kept(self) -> None:
        """Remove what was written and raise where the muxer dropped frames (``check_frames_kept``)."""
        try:
            check_frames_kept(self._output.staged, self.path, self._written)
        except VideoError:
            self._discard()
            raise


# FFmpeg's color matrices (AVColorSpace) -> swscale's (SWS_CS_*): BT.709, FCC, BT.601 (as
# BT.470BG and as SMPTE 170M), SMPTE 240M, BT.2020 (constant and non-constant luminance).
BITEXACT = {"fflags": "+bitexact"}  # the muxer's option: an archive's checksums match from run to run
SWSCALE_MATRICES = {1: 1, 4: 4, 5: 5, 6: 5, 7: 7, 9: 9, 10: 9}
BT601, LIMITED_RANGE = 5, 1
RGB_MATRIX = 0  # AVColorSpace's "GBR": the samples are R, G and B themselves
RGB_OR_GRAY_FORMATS = ("gbr", "bgr", "rgb", "gray")  # pixel formats that need no Y'CbCr matrix


def check_encoder(codec: str, output: str | Path | None = None) -> None:
    """Refuse an encoder this machine lacks, before any work.

    ``VideoWriter`` meets it only as it opens, after a command's noise estimate (seconds to
    minutes); the command line asks here first.

    Parameters
    ----------
    codec : str
        One of CODECS (``check_encoding`` checks it).
    output : str or Path, optional
        The output written: ``-`` and an image sequence have encoders of their own, ``codec`` is
        then not used; None: ``codec``'s encoder.

    Raises
    ------
    VideoError
        An encoder this FFmpeg build has not; an NVENC codec where no NVIDIA video encoder opens.
    """
    encoder = CODECS[codec][0] if output is None else _encoder(str(output), codec)
    _check_built(encoder)
    if encoder == CODECS[codec][0] and codec in NVENC_CODECS and not _nvenc_opens(encoder):
        raise VideoError(_no_nvenc(codec))


def _encoder(output: str, codec: str) -> str:
    """FFmpeg's encoder for ``output``: y4m's frames on standard output, an image sequence's images, else ``codec``."""
    if output == STANDARD_OUTPUT:
        return "wrapped_avframe"
    if is_image_sequence(Path(output)) and Path(output).suffix.lower() in IMAGE_FORMATS:
        return IMAGE_FORMATS[Path(output).suffix.lower()][0]
    return CODECS[codec][0]


def _check_built(encoder: str) -> None:
    if encoder not in pyav().codecs_available:
        raise VideoError(f"this FFmpeg build has no {encoder} encoder; choose another codec")


@functools.cache
def _nvenc_opens(encoder: str) -> bool:
    """Whether the NVENC ``encoder`` opens on this machine: its driver and a GPU with NVENC, asked once a process."""
    av = pyav()
    context = av.CodecContext.create(encoder, "w")
    context.width, context.height, context.pix_fmt = 256, 256, "yuv420p"  # within every NVENC's sizes
    context.time_base = Fraction(1, 25)
    try:
        with said_in_our_words():
            context.open()
    except av.error.FFmpegError:
        return False
    return True


def _no_nvenc(codec: str) -> str:
    return (
        f"{codec}: this machine has no NVIDIA video encoder it can use (no NVIDIA driver, or a GPU "
        "without NVENC, such as the H100 or A100); choose h264 or h265"
    )


def _hdr10_options(codec: str, hdr10: dict[str, str]) -> dict[str, str]:
    """Return the encoder options that write a source's HDR10 metadata into the stream (SEI)."""
    if not hdr10:
        return {}
    if codec == "h265":
        return {"x265-params": ":".join(["hdr10=1", *(f"{name}={value}" for name, value in hdr10.items())])}
    names = {"master-display": "mastering-display", "max-cll": "cll"}  # x264's names
    return {"x264-params": ":".join(f"{names[name]}={value}" for name, value in hdr10.items())}


# FFV1's slice counts (h x v slices, v <= h <= 2v, as its encoder lays them out): each slice is coded
# apart, on a thread of its own. FFmpeg's default at 1080p is 4 (2 x 2): 4 threads, whatever the cores.
FFV1_SLICES = (4, 6, 9, 12, 16, 20, 24, 30)
FFV1_SLICED_PIXELS = 1280 * 720  # from this size up the slices follow the cores; smaller frames keep FFmpeg's


def _ffv1_options(width: int, height: int) -> dict[str, str]:
    """Return FFV1's options for frames of ``width`` x ``height`` pixels: a slice a core, from 720p up.

    The fewest slices of FFV1_SLICES at least the CPUs this process may run on (at most the last):
    a 1080p frame encoded in 16 slices on 16 cores instead of 4. Odd sizes keep FFmpeg's choice,
    as its encoder refuses counts whose slice edges fall inside a chroma sample.
    """
    if width * height < FFV1_SLICED_PIXELS or width % 2 or height % 2:
        return {}
    slices = next((count for count in FFV1_SLICES if count >= free_cores()), FFV1_SLICES[-1])
    return {"slices": str(slices)}


# An interlaced source's field order (AVFieldOrder) -> x264's interlaced coding of it, by the field
# coded first: the top in TT and TB, the bottom in BB and BT (FFmpeg's own command tags a
# top-field-first frame TB, Apple's and Avid's files too). Without it H.264 said progressive over
# two fields a frame.
X264_FIELDS = {2: "tff=1", 4: "tff=1", 3: "bff=1", 5: "bff=1"}
# NVENC's semi-planar formats -> the planar ones with the same samples (swscale repacks them exactly)
PLANAR_TWINS = {"nv12": "yuv420p", "p010le": "yuv420p10le"}


def _frame_maker(
    pixel_format: str, frame_format: str, color: dict[str, int], height: int
) -> tuple[Callable[[np.ndarray | YuvFrame], Any], YuvLayout | None]:
    """How the writer turns an array of ``frame_format`` (``height`` lines) into a frame of ``pixel_format``.

    To Y'CbCr through ``media.yuv`` (exact at every depth, the reader's inverse), to other formats
    through swscale. With the Y'CbCr layout the frames are converted to, which a ``YuvFrame``
    given instead of an array has (None for the other formats, which take arrays alone).
    """
    av = pyav()
    planar = PLANAR_TWINS.get(pixel_format, pixel_format)
    layout = yuv_layout(planar, color, height) if frame_format.startswith("rgb") else None
    if layout is None:
        conversion = _yuv_conversion(pixel_format, color)

        def through_swscale(array: np.ndarray) -> Any:
            frame = av.VideoFrame.from_ndarray(array, format=frame_format)
            return _tagged(frame if conversion is None else frame.reformat(**conversion), color)

        return through_swscale, None

    def through_yuv(picture: np.ndarray | YuvFrame) -> Any:
        if isinstance(picture, YuvFrame):
            frame = planes_to_frame(picture.planes, layout)
        else:
            frame = rgb_to_frame(picture, layout)
        return _tagged(frame if planar == pixel_format else frame.reformat(format=pixel_format), color)

    return through_yuv, layout


def _output_color(color: dict[str, int], height: int, pixel_format: str) -> dict[str, int]:
    """Return the color tags of an output in ``pixel_format``: the source's ``color``, completed.

    Where the source gives a range but no matrix, the matrix its frames get: the one they are
    converted with (``yuv_layout``'s guess from the ``height`` in lines); H.264 and H.265 write the
    range only beside a matrix, and would drop it. An RGB
    source (matrix "GBR") written in Y'CbCr gets that matrix too, and limited range: ProRes of an
    RGB FFV1 held full-range samples tagged limited ("tv", "gbr"), every frame 5 to 12 levels dark.
    """
    from .yuv import BT709, HD_LINES

    guessed = BT709 if height >= HD_LINES else BT601
    if color.get("colorspace", 2) == RGB_MATRIX and not pixel_format.startswith(RGB_OR_GRAY_FORMATS):
        return {**color, "colorspace": guessed, "range": LIMITED_RANGE}
    if color.get("range", 0) and color.get("colorspace", 2) == 2:
        return {**color, "colorspace": guessed}
    return color


def _tagged(frame: Any, color: dict[str, int]) -> Any:
    """``frame`` with the source's four color tags.

    Encoders that write them from each frame (ProRes) would write the untagged ones as unknown.
    """
    frame.color_primaries, frame.color_trc = color.get("primaries", 2), color.get("trc", 2)
    frame.colorspace, frame.color_range = color.get("colorspace", 2), color.get("range", 0)
    return frame


def _yuv_conversion(pixel_format: str, color: dict[str, int]) -> dict[str, Any] | None:
    """How RGB frames become ``pixel_format``.

    With the matrix and range the output is tagged with, as the reader decoded them (PyAV's default,
    BT.601 limited, would shift BT.709 colors); None for RGB and gray outputs, which need no matrix.
    """
    if pixel_format.startswith(RGB_OR_GRAY_FORMATS):
        return None
    return {
        "format": pixel_format,
        "dst_colorspace": SWSCALE_MATRICES.get(color.get("colorspace", 2), BT601),
        "dst_color_range": color.get("range") or LIMITED_RANGE,
    }


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
        ``path`` is the input, an image sequence of a format that is not an image's, would
        replace the input's images, is not a regular file, exists (without ``overwrite``), or
        its folder is missing or read-only.
    """
    if path.resolve() == source.resolve():
        raise VideoError(f"{path}: the output must not be the input")
    if is_image_sequence(path) and path.suffix.lower() not in IMAGE_FORMATS:
        raise VideoError(f"{path}: image sequences are written as {', '.join(IMAGE_FORMATS)}")
    inputs = {file.resolve() for file in (sequence_files(source) if is_image_sequence(source) else [source])}
    at_risk = sequence_files(path) if is_image_sequence(path) else [path]  # what the output replaces, with overwrite
    if shared := [file for file in at_risk if file.resolve() in inputs]:
        # A scan's reel1_%07d.dpx written as reel1_%06d.dpx: its images matched the output's name,
        # and --overwrite removed them as an older sequence's.
        raise VideoError(
            f"{path}: its images would replace the input's ({shared[0].name} is an image of both {source.name} and "
            f"{path.name}); write the output to another folder or under another name"
        )
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
