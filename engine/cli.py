"""The command line: ``nlmeans-studio bench | denoise | estimate-noise ...``."""

from __future__ import annotations

import argparse
import dataclasses
import errno
import json
import math
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from nlmeans_studio.engine import VOLUME_SUFFIXES, __version__
from nlmeans_studio.engine.automatic import AUTO, GIVEN, FilterChoice, choose_filter, sample_length, sure_applies
from nlmeans_studio.engine.backend import (
    BACKENDS,
    BackendUnavailableError,
    GpuOutOfMemoryError,
    resolve_backend,
    resolve_devices,
)
from nlmeans_studio.engine.bench import (
    PAPER_SEARCH_RADII,
    PAPER_TEMPORAL,
    paper_cases,
    run_pipeline,
    run_preview,
    run_table,
)
from nlmeans_studio.engine.denoiser import METHODS
from nlmeans_studio.engine.export import ExportCancelledError, clip_sample, denoise_file, estimate_clip_noise
from nlmeans_studio.engine.filters.compiled import COMPILING, filter_compiles
from nlmeans_studio.engine.frames import FULL_SCALE_BITS
from nlmeans_studio.engine.luma_chroma import (
    matrix_for,
    parse_luma_chroma,
)
from nlmeans_studio.engine.media.ffmpeg import VideoError, show_ffmpeg_messages
from nlmeans_studio.engine.media.formats import CODECS, check_encoding, output_format
from nlmeans_studio.engine.media.image_sequence import is_image_sequence
from nlmeans_studio.engine.media.pipe import PIPE, PipeReader
from nlmeans_studio.engine.media.probe import VideoInfo
from nlmeans_studio.engine.media.reader import VideoReader, read_frames
from nlmeans_studio.engine.media.writer import STANDARD_OUTPUT, check_output_path
from nlmeans_studio.engine.memory import (
    CPU_WAYS,
    ShortOfMemoryError,
    out_of_memory,
    require_cpu_room,
    share_malloc_arenas,
)
from nlmeans_studio.engine.noise import apply_estimate, decorrelation_decision, estimate_noise
from nlmeans_studio.engine.params import CENTER_WEIGHTS, DEFAULT_H, WEIGHTINGS, NLMParams
from nlmeans_studio.engine.presets import FIELDS as PRESET_FIELDS
from nlmeans_studio.engine.presets import Preset, find_preset, load_preset, shipped_presets
from nlmeans_studio.engine.volume import cli as volume_cli
from nlmeans_studio.engine.volume.cli import LOG_PROGRESS_SECONDS

WINDOW_OPTIONS = tuple(name for name in PRESET_FIELDS if name != "h")  # the filter's options a preset also sets
# The engine words its errors by its parameters' Python names; each of these is an option
# (--patch-radius for patch_radius), which the command line's messages name instead.
OPTION_PARAMETERS = (*PRESET_FIELDS, "crf", "preset")
ESTIMATE_FRAMES = 3  # estimate-noise --frame: consecutive frames, so that still blocks give a temporal estimate


def _size(text: str) -> tuple[int, int]:
    """WIDTHxHEIGHT in pixels -> (height, width)."""
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must be WIDTHxHEIGHT, like 720x480, got {text!r}") from None
    if width < 1 or height < 1:
        raise argparse.ArgumentTypeError(f"size must be positive, got {text!r}")
    return height, width


def _seconds(text: str) -> float:
    """A time in seconds: finite and not negative."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"a time is a finite number of seconds >= 0, like 12.5, got {text!r}")
    return value


def _span(text: str) -> float:
    """A duration in seconds: finite and positive."""
    value = _seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"a duration is a number of seconds > 0, got {text!r}")
    return value


def _whole_number(least: int, what: str) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least``; errors call it ``what``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least:
            raise argparse.ArgumentTypeError(f"{what} is a whole number >= {least}, got {text!r}")
        return value

    return parse


_count = _whole_number(1, "a count")
_index = _whole_number(0, "a frame number")


def _integers(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _temporal(text: str) -> list[tuple[int, int]]:
    """Comma-separated PAST:FUTURE pairs."""
    try:
        pairs = [tuple(int(v) for v in part.split(":")) for part in text.split(",")]
    except ValueError:
        pairs = []
    if not pairs or any(len(pair) != 2 for pair in pairs):
        raise argparse.ArgumentTypeError(f"expected PAST:FUTURE pairs like 0:0,1:1, got {text!r}")
    return pairs  # type: ignore[return-value]


class _Parser(argparse.ArgumentParser):
    """argparse, a wrong option said in one line with a pointer to --help (not after the whole usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="nlmeans-studio",
        description="Non-Local Means video denoising on an NVIDIA GPU or the CPU.",
        epilog="Without a command (or with 'gui [FILE]') nlmeans-studio opens the window; "
        "'nlmeans-studio self-test' checks an installation.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    bench = commands.add_parser(
        "bench",
        help="time the engine on noisy frames of the sample clip (the paper's Table 1 layout)",
        description="Engine-only benchmark: median ms per frame, fps and PSNR per search window.",
    )
    bench.add_argument("--backend", choices=BACKENDS, default="auto")
    bench.add_argument("--methods", type=lambda t: t.split(","), default=None, help="e.g. fused,cascade")
    bench.add_argument("--size", type=_size, default=(480, 720), help="WIDTHxHEIGHT (default 720x480)")
    bench.add_argument("--frames", type=_count, default=4, help="output frames timed per case (default 4)")
    bench.add_argument("--repeats", type=_count, default=1, help="passes over those frames (default 1)")
    bench.add_argument("--search-radii", type=_integers, default=list(PAPER_SEARCH_RADII), help="default 2,3,5,10")
    bench.add_argument(
        "--temporal",
        type=_temporal,
        default=list(PAPER_TEMPORAL),
        help="PAST:FUTURE pairs (default 0:0,1:0,2:0,3:0,1:1)",
    )
    bench.add_argument("--patch-radius", type=int, default=4)
    bench.add_argument("--sigma", type=float, default=25.0, help="noise sigma in 8-bit levels (default 25)")
    bench.add_argument("--h", type=float, default=None, help="filter strength in 8-bit levels (default 2 sigma)")
    bench.add_argument("--weighting", choices=WEIGHTINGS, default="bisquare", help="default bisquare")
    bench.add_argument("--center-weight", choices=CENTER_WEIGHTS, default="one", help="default one")
    bench.add_argument(
        "--input", default=None, help="a video, or a .npy of uint8 (T,H,W,3) frames (default: the sample)"
    )
    bench.add_argument("--peers", action="store_true", help="also time the installed peer implementations")
    bench.add_argument(
        "--frame-dtype",
        choices=("uint8", "float32"),
        default="uint8",
        help="GPU engine-only timing: frames resident as uploaded from 8-bit (the default, as the peers and the "
        "end-to-end column get them) or float32 host frames",
    )
    bench.add_argument(
        "--pipeline",
        metavar="VIDEO",
        default=None,
        help="instead: decode, denoise, encode and end-to-end fps on VIDEO at the default parameters",
    )
    bench.add_argument(
        "--preview",
        action="store_true",
        help="instead: the GUI's preview path (random access, denoise, uint8 back) at --size, default parameters",
    )

    denoise = commands.add_parser(
        "denoise",
        help="denoise a video file into a new one",
        description="Denoise INPUT into OUTPUT (written to a temporary file, renamed when complete).",
    )
    denoise.add_argument("input", help="a video file, an image sequence (scans/%%06d.png) or - for y4m on stdin")
    denoise.add_argument("output", help="a video file, an image sequence (.png .tif .dpx .exr) or - for y4m on stdout")
    denoise.add_argument(
        "--h",
        type=float,
        default=None,
        help=f"strength in 8-bit levels (default: suggested by the noise estimate; {DEFAULT_H:g} with --noise none)",
    )
    denoise.add_argument(
        "--noise",
        type=_noise_mode,
        default="auto",
        help="auto (default): estimate the noise on frames spread over the clip and set h and the color "
        "decorrelation from it; none: no estimate; X,Y,W,H: estimate it in that flat region, in pixels",
    )
    denoise.add_argument(
        "--filter-preset",
        default=None,
        help=f"the window's presets: {', '.join(shipped_presets())}, or a preset's .json file; its window, "
        "weighting and luma/chroma mode, and h as its strength times the h the noise suggests; the options "
        "below win over it (--preset is the encoder's speed)",
    )
    denoise.add_argument("--patch-radius", type=int, default=None, help="B, pixels (default 4)")
    denoise.add_argument("--search-radius", type=int, default=None, help="A, pixels (default 3)")
    denoise.add_argument("--frames-past", type=int, default=None, help="Dp (default 1)")
    denoise.add_argument("--frames-future", type=int, default=None, help="Df (default 1)")
    denoise.add_argument("--weighting", choices=WEIGHTINGS, default=None, help="default exponential")
    denoise.add_argument(
        "--center-weight",
        choices=CENTER_WEIGHTS,
        default=None,
        help="the pixel's own weight: max (default), the largest of the others' (KNLMeansCL's wref), or one",
    )
    denoise.add_argument(
        "--luma-chroma",
        type=_luma_chroma_mode,
        default=_UNSET,
        help="filter a colour clip in Y'CbCr (the source's matrix) with a strength for Y and one for Cb/Cr: auto "
        "(the default: from the noise of each, refined on the clip where the noise is white), off (in its own "
        "channels, with one h and the color decorrelation), or H_Y,H_UV in 8-bit levels; off by default with "
        "--h, --devices or --guide",
    )
    denoise.add_argument(
        "--guide",
        choices=("prefilter",),
        default=None,
        help="prefilter: two passes, the first (same parameters) makes a guide the second takes its patch "
        "distances from (KNLMeansCL's rclip); twice the time, not with --devices. An experiment: it lost 0.3 to "
        "1.3 dB against one pass on real clips (docs/realistic-noise.md)",
    )
    denoise.add_argument("--backend", choices=BACKENDS, default="auto")
    denoise.add_argument(
        "--devices",
        type=volume_cli.gpu_ids,
        default=None,
        help="all, or GPU ids such as 0,1: the clip in chunks over those GPUs, concurrently (the fused filter; "
        "not with --luma-chroma or --guide); default: one GPU",
    )
    denoise.add_argument(
        "--codec",
        choices=tuple(CODECS),
        default="h264",
        help="h264 (default) and h265 are 4:2:0; ffv1 (lossless) and prores keep the source's chroma sampling "
        "and depth; h264-nvenc and h265-nvenc encode on the GPU's video encoder, where it has one",
    )
    denoise.add_argument(
        "--rgb", action="store_true", help="with --codec ffv1: store planar RGB, the filter's output exactly"
    )
    denoise.add_argument("--crf", type=int, default=18, help="H.264 / H.265 quality, 0..51 (default 18)")
    denoise.add_argument("--preset", default="medium", help="H.264 / H.265 speed preset (default medium)")
    denoise.add_argument(
        "--overwrite",
        action="store_true",
        help="replace OUTPUT if it exists; for an image sequence, every image of its name: those an older, longer "
        "sequence left past the new last number are removed with it",
    )
    denoise.add_argument("--start", type=_seconds, default=0.0, help="first second to denoise (default 0)")
    denoise.add_argument("--duration", type=_span, default=None, help="seconds to denoise (default: to the end)")
    denoise.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    denoise.add_argument("--verbose", action="store_true", help="show FFmpeg's warnings and notes on stderr")
    denoise.add_argument("--debug", action="store_true", help="show tracebacks")

    volume_cli.add_parser(commands)

    estimate = commands.add_parser(
        "estimate-noise",
        help="estimate the noise of a video (sigma per channel, correlations, the color transform, the h) or of "
        "a volume",
        description="The noise denoise --noise auto finds (frames spread over the clip), or that of the frames "
        "or the region you give; and the h it suggests for denoise's defaults. A volume (.nii, .nii.gz, .tif, "
        ".tiff, .npy): the noise denoise-volume finds, and the h it suggests.",
    )
    estimate.add_argument("input")
    estimate.add_argument(
        "--frame", type=_index, default=None, help="first frame to look at (default: pairs spread over the clip)"
    )
    estimate.add_argument(
        "--frames", type=_count, default=None, help=f"consecutive frames to look at (default {ESTIMATE_FRAMES})"
    )
    estimate.add_argument("--roi", type=_box, default=None, help="X,Y,W,H: a flat region, in pixels")
    estimate.add_argument("--json", action="store_true", help="print JSON instead of text")
    return parser


def _box(text: str) -> tuple[int, int, int, int]:
    """X,Y,W,H in pixels."""
    try:
        x, y, w, h = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a region is X,Y,W,H in pixels, like 10,20,64,64, got {text!r}") from None
    return x, y, w, h


_UNSET = object()  # --luma-chroma left out: the default mode applies (not a string: argparse would parse it)


def _luma_chroma_mode(text: str) -> str | tuple[float, float] | None:
    """auto, off or H_Y,H_UV."""
    try:
        return parse_luma_chroma(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _noise_mode(text: str) -> str | tuple[int, int, int, int]:
    """auto, none or X,Y,W,H."""
    if text in ("auto", "none"):
        return text
    try:
        return _box(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected auto, none or a region X,Y,W,H in pixels (like 10,20,64,64), got {text!r}"
        ) from None


def _estimate_noise(args: argparse.Namespace) -> int:
    """Print the noise: the estimate denoise makes (pairs of frames spread over the clip, the
    median one) unless --frame / --frames choose the frames; and the h denoise would use. A
    volume's noise as denoise-volume estimates it."""
    if args.input.lower().endswith(tuple(VOLUME_SUFFIXES)):
        given = [
            option
            for option, value in (("--frame", args.frame), ("--frames", args.frames), ("--roi", args.roi))
            if value is not None
        ]
        if given:
            raise ValueError(f"{args.input} is a volume: {', '.join(given)} apply to videos only; leave them out")
        return volume_cli.estimate(args.input, as_json=args.json)
    if args.frame is None and args.frames is None:
        result = estimate_clip_noise(args.input, roi=args.roi)
    else:
        first, count = args.frame or 0, args.frames or ESTIMATE_FRAMES
        with VideoReader(args.input) as reader:
            total = reader.info.frame_count
        if first + count > total:
            why = f" (--frames, {ESTIMATE_FRAMES} by default: the estimate compares consecutive frames)"
            remedy = (
                f"--frame {total - count} or lower, or fewer --frames"
                if count <= total
                else f"--frames {total} or fewer"
            )
            raise VideoError(
                f"{args.input}: has {total} frames (0 to {total - 1}), but {count} consecutive frames"
                f"{'' if args.frames else why} from frame {first} need frames {first} to {first + count - 1}: "
                f"give {remedy}"
            )
        result = estimate_noise(read_frames(args.input, count, start=first), roi=args.roi, bit_depth=FULL_SCALE_BITS)
    h = apply_estimate(NLMParams(), result).h
    with VideoReader(args.input) as reader:
        matrix = matrix_for(reader.info.color.get("colorspace", 2), reader.info.height)
    default = choose_filter(result, matrix=matrix)
    decorrelate, reason = decorrelation_decision(result)
    try:
        transform = result.color_transform().round(4).tolist()
    except ValueError:
        transform = None
    report = {
        "sigma": result.sigma.round(3).tolist(),
        "correlation": result.correlation.round(3).tolist(),
        "covariance": result.covariance.tolist(),
        "color_transform": transform,
        "regions": len(result.regions),
        "samples": result.samples,
        "method": result.method,
        "confidence": result.confidence,
        "bands": [dict(zip(("low", "high", "sigma", "blocks"), band, strict=True)) for band in result.bands],
        "signal_dependent": result.signal_dependent,
        "spatial_correlation": result.spatial_correlation,
        "effective_channels": round(result.effective_channels, 3),
        "decorrelation": reason,
        "suggested_h": round(h, 3),
        "suggested_luma_chroma": None
        if default.luma_chroma is None
        else [round(v, 3) for v in default.luma_chroma[:2]],
        "sure_refines": sure_applies(result),
        "warning": result.warning,
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"noise sigma per channel (8-bit levels): {', '.join(f'{s:.2f}' for s in report['sigma'])}")
    print(f"correlation: {report['correlation']}")
    print(f"color transform G: {transform}")
    print(f"from {report['regions']} region(s), {report['samples']} samples ({result.method})")
    print(f"confidence: {result.confidence:.0%}")  # as the window shows it
    for band in report["bands"]:
        low, high = round(band["low"] * 255), round(band["high"] * 255)
        print(f"sigma {band['sigma']:.2f} levels where the picture is {low}-{high} ({band['blocks']} blocks)")
    shared = ""
    if result.shared_by_channels and not decorrelate:  # as the window says it; G would whiten it
        shared = " (under the count: noise shared by the channels, as compression leaves it; h allows for it)"
    print(f"effective noise channels: {report['effective_channels']:.2f} of {len(result.covariance)}{shared}")
    print(f"color decorrelation: {report['decorrelation']}")
    print(f"suggested h: {h:.1f} levels (for one strength: denoise --h, --luma-chroma off)")
    refined = "; denoise refines it on the clip (SURE: the noise is white)" if report["sure_refines"] else ""
    print(f"denoise's default filter: {default.describe()}{refined}")
    if result.warning:
        print(f"warning: {result.warning}")
    return 0


class _ProgressBar:
    """Frames, fps and ETA on stderr: one line redrawn at most four times a second on a terminal,
    a line every LOG_PROGRESS_SECONDS where stderr goes to a file or a pipe (a log). The rate is
    measured from the first frame on: before it come the start-up's seconds (on a first run, the
    CPU filter's compile: up to a minute), which would make the ETA of a short clip minutes."""

    def __init__(self) -> None:
        self._terminal = sys.stderr.isatty()
        self._drawn: float | None = None  # seconds when a line was last drawn
        self._line_open = False  # a partial line is on screen
        self._first: tuple[int, float] | None = None  # frames done and seconds when the first was
        self._width = 0  # characters of the longest line drawn

    def __call__(self, done: int, total: int, seconds: float) -> None:
        if self._first is None and done > 0:
            self._first = (done, seconds)
        interval = 0.25 if self._terminal else LOG_PROGRESS_SECONDS
        if (done < total or not total) and self._drawn is not None and seconds - self._drawn < interval:
            return
        self._drawn = seconds
        first_done, first_seconds = self._first or (done, seconds)
        fps = (done - first_done) / (seconds - first_seconds) if seconds > first_seconds else 0.0
        rate = f"{fps:.1f} fps" if fps > 0 else "starting"
        if total:
            eta = f"  ETA {(total - done) / fps:.0f} s" if fps > 0 else ""
            line = f"\r{done}/{total} frames ({100 * done / total:.0f} %)  {rate}{eta}  "
        else:  # a pipe, of unknown length
            line = f"\r{done} frames  {rate}  "
        if not self._terminal:
            print(line[1:].rstrip(), file=sys.stderr, flush=True)
            return
        self._line_open = done < total or not total
        line, self._width = line.ljust(self._width), max(self._width, len(line))  # no tail of a longer line
        print(line, end="" if self._line_open else "\n", file=sys.stderr, flush=True)

    def close(self) -> None:
        """End a partial line, so that an error after it starts a line of its own."""
        if self._line_open:
            print(file=sys.stderr, flush=True)
            self._line_open = False


def _chosen_filter(args: argparse.Namespace, preset: Preset | None, info: VideoInfo) -> FilterChoice:
    """The filter asked for: the options, over ``preset``'s, over the defaults; its strengths
    from the noise (``automatic.choose_filter``: luma/chroma for a colour clip, SURE where the
    noise is white) unless --h or --noise none. ``info``: the source's, whose streams the
    output must hold."""
    base = NLMParams() if preset is None else preset.params
    chosen = {name: getattr(args, name) for name in WINDOW_OPTIONS if getattr(args, name) is not None}
    params = dataclasses.replace(base, **chosen, h=base.h if args.h is None else args.h)
    if args.output != STANDARD_OUTPUT:  # before the slower estimate
        check_encoding(args.codec, args.crf, args.preset, rgb=args.rgb)
        check_output_path(Path(args.output), Path(args.input), args.overwrite)
        output_format(Path(args.output), args.codec, info)
    matrix = matrix_for(info.color.get("colorspace", 2), info.height)
    mode = _luma_chroma_asked(args, preset)
    strength = 1.0 if preset is None else preset.strength
    if args.noise == "none":
        if args.h is None and preset is not None and strength is not None:
            raise ValueError(f"--filter-preset {args.filter_preset} sets h from the noise: give --h with --noise none")
        if mode == AUTO:
            raise ValueError("--luma-chroma auto sets its strengths from the noise: give H_Y,H_UV with --noise none")
        choice = FilterChoice(params, None if mode is None else (*mode, matrix), how=GIVEN)
        if mode is not None and not args.quiet:  # strengths given: what filters, as --noise auto says it
            print(f"filter: {choice.describe('given')}", file=sys.stderr)
        return choice
    roi = None if args.noise == "auto" else args.noise
    estimate = estimate_clip_noise(args.source, roi=roi, start=args.start, duration=args.duration)
    note = ""
    own_h = preset is not None and strength is None  # a preset's h in levels, as --h is one
    if (args.h is not None or own_h) and mode is None:  # one strength: the colour transform still follows the noise
        choice = FilterChoice(apply_estimate(params, estimate, h=params.h), None, how=GIVEN)
        whose = "yours" if args.h is not None else f"{args.filter_preset}'s"
        note = f"{whose}; the noise suggests {apply_estimate(params, estimate).h:.1f}"
    else:
        sample = None
        if isinstance(mode, str) or mode is None:  # strengths from the noise: SURE may refine them
            sample = clip_sample(args.source, sample_length(params), args.start, args.duration)
        choice = choose_filter(
            estimate,
            params,
            matrix=matrix,
            luma_chroma=mode,
            strength=1.0 if strength is None else strength,
            sample=sample,
            backend=args.backend if args.devices is None else "gpu",
        )
        if strength not in (None, 1.0):
            note = f"{args.filter_preset}'s strength: x{strength:g}"
    if not args.quiet:
        sigma = ", ".join(f"{s:.1f}" for s in estimate.sigma)
        print(
            f"noise: sigma {sigma} levels ({estimate.method}), confidence {estimate.confidence:.0%}; "
            f"{choice.describe(note)}",
            file=sys.stderr,
        )
        if estimate.warning:
            print(f"warning: {estimate.warning}", file=sys.stderr)
    return choice


def _luma_chroma_asked(args: argparse.Namespace, preset: Preset | None) -> str | tuple[float, float] | None:
    """The luma/chroma mode: --luma-chroma, else the preset's, else auto (a colour clip in
    Y'CbCr), except where one strength is given (--h), no noise is estimated (--noise none) or
    the filter runs as the plain one (--devices, --guide)."""
    if args.luma_chroma is not _UNSET:
        return args.luma_chroma
    if preset is not None:
        return preset.luma_chroma
    plain = args.h is not None or args.noise == "none" or args.devices is not None or args.guide is not None
    return None if plain else AUTO


def _source_info(args: argparse.Namespace) -> VideoInfo:
    """What INPUT holds, with what a person should know before its frames are used (a truncated
    file, an interlaced pipe, sound that an image sequence OUTPUT cannot carry) said on stderr."""
    info = args.source.info
    if info.warning and not args.quiet:
        print(f"warning: {args.input}: {info.warning}", file=sys.stderr)
    if info.other_streams and is_image_sequence(Path(args.output)) and not args.quiet:
        print(f"warning: {args.output}: an image sequence carries no audio or subtitles", file=sys.stderr)
    return info


class _Stop:
    """What Ctrl-C, SIGTERM and SIGHUP do to a command: once a video's frames are being written,
    the export is asked to stop at its next frame (it removes its file and joins its threads);
    otherwise the command stops at once. Either way it says 'cancelled', exits 130 and leaves
    nothing behind. A signal the run was started ignoring stays ignored: ``nohup nlmeans-studio
    denoise ... &`` outlives its terminal. Off the main thread (``command_line`` called from a
    worker) Python lets no handler be set: the caller's stay."""

    SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self.exporting = False
        stops = [getattr(signal, name) for name in self.SIGNALS if hasattr(signal, name)]
        stops = [stop for stop in stops if signal.getsignal(stop) is not signal.SIG_IGN]
        if threading.current_thread() is not threading.main_thread():
            stops = []
        self._previous = {stop: signal.signal(stop, self._stop) for stop in stops}

    def _stop(self, signum: int, frame: object) -> None:
        if not self.exporting:
            raise KeyboardInterrupt
        self.cancel.set()

    def restore(self) -> None:
        for stop, handler in self._previous.items():
            signal.signal(stop, handler)


def _denoise(args: argparse.Namespace, stop: _Stop) -> int:
    show_ffmpeg_messages(verbose=args.verbose)
    progress = None if args.quiet else _ProgressBar()
    try:
        preset = None if args.filter_preset is None else load_preset(find_preset(args.filter_preset))
        if args.devices is not None:  # before any reading: a combination refused, or no GPU
            if args.backend == "cpu":
                raise ValueError("--devices spreads the clip over GPUs: not with --backend cpu")
            if args.guide is not None or (args.luma_chroma is not _UNSET and args.luma_chroma is not None):
                raise ValueError("--devices runs the plain filter only: not with --luma-chroma or --guide yet")
            args.devices = resolve_devices(args.devices)
        # A GPU asked for and unavailable, or a CPU run that cannot fit an address-space limit
        # (numba and its threads): said before the noise estimate, whose FFmpeg threads take room.
        on_gpu = resolve_backend(args.backend) == "gpu"
        if not on_gpu:
            require_cpu_room(0, volume=False)
        # One reader, opened once, for the file's facts, the noise, SURE's sample and the export
        # (a pipe is read once, by all); the export's frames decoded on NVDEC on the GPU.
        args.source = PipeReader() if args.input == PIPE else VideoReader(args.input, hardware_decoding=on_gpu)
        choice = _chosen_filter(args, preset, _source_info(args))
        if not args.quiet and filter_compiles(args.backend):
            print(COMPILING, file=sys.stderr)
        stop.exporting = True
        summary = denoise_file(
            args.source,
            args.output,
            choice.params,
            backend=args.backend,
            codec=args.codec,
            crf=args.crf,
            preset=args.preset,
            overwrite=args.overwrite,
            rgb=args.rgb,
            start=args.start,
            duration=args.duration,
            progress=progress,
            cancel=stop.cancel,
            luma_chroma=choice.luma_chroma,
            guide=args.guide,
            devices=args.devices,
        )
    except KeyboardInterrupt:
        raise ExportCancelledError(f"cancelled; {args.output} was not written") from None
    finally:
        if progress is not None:
            progress.close()
        if isinstance(getattr(args, "source", None), VideoReader):
            args.source.close()
    if not args.quiet:
        print(
            f"denoised {summary.frames} frames in {summary.seconds:.1f} s ({summary.fps:.1f} fps) on the "
            f"{summary.backend} ({summary.device_name}), decoded on the {summary.decoder} -> {args.output}",
            file=sys.stderr,
        )
    return 0


def _denoise_volume(args: argparse.Namespace) -> int:
    """``denoise-volume``; stopped (``_Stop``), it names the output it did not write (its hidden
    file is removed as the stop unwinds)."""
    try:
        return volume_cli.run(args)
    except KeyboardInterrupt:
        raise ExportCancelledError(f"cancelled; {args.output} was not written") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nlmeans-studio`` command; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    share_malloc_arenas()  # under ulimit -v: threads cheap in address space, from the first
    stop = _Stop()
    try:
        if args.command == "denoise":
            return _denoise(args, stop)
        if args.command == "estimate-noise":
            return _estimate_noise(args)
        if args.command == "denoise-volume":
            return _denoise_volume(args)
        if args.preview:
            height, width = args.size
            params = NLMParams(h=args.h if args.h is not None else DEFAULT_H, patch_radius=args.patch_radius)
            run_preview(args.input, backend=args.backend, params=params, height=height, width=width, frames=args.frames)
            return 0
        if args.pipeline is not None:
            params = NLMParams(h=args.h if args.h is not None else DEFAULT_H, patch_radius=args.patch_radius)
            run_pipeline(args.pipeline, backend=args.backend, params=params, frames=args.frames)
            return 0
        methods = args.methods or list(METHODS)
        height, width = args.size
        run_table(
            backend=args.backend,
            methods=methods,
            cases=paper_cases(args.search_radii, args.temporal),
            height=height,
            width=width,
            frames=args.frames,
            repeats=args.repeats,
            sigma=args.sigma,
            h=args.h if args.h is not None else 2 * args.sigma,
            patch_radius=args.patch_radius,
            source=args.input,
            with_peers=args.peers,
            frame_dtype=args.frame_dtype,
            weighting=args.weighting,
            center_weight=args.center_weight,
        )
    except ExportCancelledError as error:
        print(f"\nnlmeans-studio: {error}", file=sys.stderr)  # below a progress line, if one was drawn
        return 130
    except KeyboardInterrupt:
        print("\nnlmeans-studio: cancelled", file=sys.stderr)
        return 130
    except (ValueError, OSError, ImportError, BackendUnavailableError, VideoError, MemoryError) as error:
        if getattr(args, "debug", False):
            raise
        if isinstance(error, MemoryError) and not isinstance(error, (ShortOfMemoryError, GpuOutOfMemoryError)):
            error = out_of_memory(error, CPU_WAYS)  # one the engine did not word: NumPy's, or an import's
        message = _in_words(error) if args.command == "bench" else _as_option(_in_words(error))  # bench's differ
        print(f"nlmeans-studio: error: {message}", file=sys.stderr)
        return 1
    finally:
        stop.restore()
    return 0


LONGEST_WORD = 120  # characters of a path or other word a message shows; longer ones lose their middle


def _in_words(error: BaseException) -> str:
    """``error``'s message for a person: the system's own errors ("[Errno 36] File name too long:
    '...'") as the file and the reason, and no word (a path) longer than LONGEST_WORD characters:
    a 5000-character name was echoed whole."""
    message = str(error)
    if isinstance(error, OSError) and error.errno and error.filename is not None:
        name, reason = os.fsdecode(error.filename), error.strerror
        if error.errno == errno.ENAMETOOLONG:
            longest = max(len(part.encode()) for part in Path(name).parts)
            reason = (
                f"the name is too long: {longest} bytes in one part and {len(name.encode())} in all, where file "
                "systems take at most 255 and 4096; choose a shorter name"
            )
        message = f"{name}: {reason}"
    half = LONGEST_WORD // 2
    return re.sub(rf"\S{{{LONGEST_WORD + 1},}}", lambda word: f"{word[0][:half]}…{word[0][-half:]}", message)


def _as_option(message: str) -> str:
    """The engine names its parameters as Python does ("search_radius must be .."): on the
    command line, the option ("--search-radius must be ..")."""
    name = re.match(r"(\w+) must ", message)
    if name is None or name.group(1) not in OPTION_PARAMETERS:
        return message
    return f"--{name.group(1).replace('_', '-')}{message[name.end(1) :]}"


if __name__ == "__main__":
    sys.exit(main())
