"""The command line's arguments.

The parser of ``nlmeans-studio bench | denoise | denoise-volume | batch | estimate-noise | tune`` and
the types of its options.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import NoReturn

from ..backend import (
    BACKENDS,
)
from ..bench.measure import (
    PAPER_SEARCH_RADII,
    PAPER_TEMPORAL,
)
from ..media.formats import CODECS, DEFAULT_PRESET, LIVE_FAST_X26X_PRESET, LIVE_X26X_PRESET
from ..media.live import END_TIMEOUT
from ..version import __version__
from ..video.luma_chroma import (
    parse_luma_chroma,
)
from ..video.params import CENTER_WEIGHTS, DEFAULT_H, WEIGHTINGS
from ..video.presets import shipped_presets
from ..video.tune import LIVE_LATENCY_FRAMES, REALTIME
from ..volume import cli as volume_cli
from .batch.jobs import BATCH_MANIFEST
from .batch.plan import DEFAULT_SEGMENT_SECONDS

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


def _number(text: str) -> float:
    """Return ``text`` as a float, NaN where it is none (the callers' checks then refuse it, naming what they take)."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def _seconds(text: str) -> float:
    """Return a time in seconds: finite and not negative."""
    value = _number(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"a time is a finite number of seconds >= 0, like 12.5, got {text!r}")
    return value


def _span(text: str) -> float:
    """Return a duration in seconds: finite and positive."""
    value = _number(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"a duration is a finite number of seconds > 0, like 2.5, got {text!r}")
    return value


def _whole_number(least: int, what: str) -> Callable[[str], int]:
    """Return an argparse type: a whole number of at least ``least``; errors call it ``what``."""

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


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of ``nlmeans-studio``'s commands and their options."""
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
    denoise.add_argument(
        "input",
        help="a video file, an image sequence (scans/%%06d.png) or - for y4m on stdin; with --live, a stream's URL or "
        "a capture device",
    )
    denoise.add_argument(
        "output",
        help="a video file, an image sequence (.png .tif .dpx .exr), - for y4m on stdout, or a stream's URL "
        "(udp://HOST:PORT, srt://, tcp://, rtp://: MPEG-TS; rtmp://: FLV)",
    )
    add_denoise_options(denoise)
    denoise.add_argument(
        "--overwrite",
        action="store_true",
        help="replace OUTPUT if it exists; for an image sequence, every image of its name: those an older, longer "
        "sequence left past the new last number are removed with it",
    )
    denoise.add_argument(
        "--live",
        action="store_true",
        help="INPUT is a live source, read as it arrives: a stream (udp://, rtp://, srt://, rtmp://), a device "
        "(/dev/video0 with --format v4l2) or - (y4m on stdin at its pace); Df 0 unless given, frames the filter has "
        "no time for dropped and counted, the latency measured; it ends with the stream, or on Ctrl-C with OUTPUT "
        "complete",
    )
    denoise.add_argument(
        "--format",
        dest="input_format",
        default=None,
        metavar="FORMAT",
        help="with --live: FFmpeg's input format or device, where INPUT's name does not say it (v4l2)",
    )
    denoise.add_argument(
        "--live-timeout",
        type=_span,
        default=None,
        metavar="SECONDS",
        help=f"with --live: seconds without data that end the stream (default {END_TIMEOUT:g}; UDP has no end "
        "of its own)",
    )
    denoise.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    denoise.add_argument("--verbose", action="store_true", help="show FFmpeg's warnings and notes on stderr")
    denoise.add_argument("--debug", action="store_true", help="show tracebacks")

    volume_cli.add_parser(commands)
    _add_batch_parser(commands)

    estimate = commands.add_parser(
        "estimate-noise",
        help="estimate the noise of a video (sigma per channel, correlations, the color transform, the h) or of "
        "a volume",
        description="The noise denoise --noise auto finds (frames spread over the clip), or that of the frames "
        "or the region you give; and the filter denoise makes of it with its defaults (SURE's strengths included), "
        "and the h for one strength. A volume (.nii, .nii.gz, .tif, "
        ".tiff, .npy): the noise denoise-volume finds, and the h it suggests; each volume's of a 4D NIfTI time "
        "series, as denoise-volume filters each with h from its own noise.",
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

    tune = commands.add_parser(
        "tune",
        help="choose the window and h of best estimated quality that exports INPUT at --fps on this machine",
        description="Time each window (search radius, past and future frames) exporting INPUT here, as denoise "
        "would, and estimate its quality without a clean reference (SURE, with its strengths chosen by SURE); "
        "print each window's fps and estimated PSNR, and the best that reaches --fps.",
    )
    tune.add_argument("input", help="a video file or an image sequence (scans/%%06d.png)")
    tune.add_argument(
        "--fps", type=_rate, required=True, help=f"frames a second the export must reach, or {REALTIME}: the clip's"
    )
    tune.add_argument("--backend", choices=BACKENDS, default="auto")
    tune.add_argument(
        "--codec",
        choices=tuple(CODECS),
        default="h264",
        help="the codec the timed exports write, as denoise's --codec (default h264; ffv1 costs least)",
    )
    timed_as = tune.add_mutually_exclusive_group()
    timed_as.add_argument(
        "--playback",
        action="store_true",
        help="time each window as the window plays INPUT (decoded and filtered, nothing encoded): the rate of a "
        "preview or a live feed on screen, where an export's encoder would bound every window alike",
    )
    timed_as.add_argument(
        "--live",
        action="store_true",
        help="tune for denoise --live: each zero-delay window (no future frames) is fed INPUT's frames at --fps as a "
        f"live source's come and encoded with --codec; it keeps up where its latency's 95th percentile is at most "
        f"{LIVE_LATENCY_FRAMES} frame times and it drops almost no frame",
    )
    tune.add_argument("--json", action="store_true", help="print JSON instead of a table")
    tune.add_argument("--debug", action="store_true", help="show tracebacks")
    return parser


def _rate(text: str) -> float | str:
    """Return a frame rate in frames a second (> 0), or "realtime"."""
    if text == REALTIME:
        return text
    value = _number(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"a rate is a number of frames a second > 0 or {REALTIME}, got {text!r}")
    return value


def add_denoise_options(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``denoise`` that choose the filter and the output's encoding.

    ``batch`` takes them too, and hands them to ``denoise`` for each file.
    """
    parser.add_argument(
        "--h",
        type=float,
        default=None,
        help=f"strength in 8-bit levels (default: suggested by the noise estimate; {DEFAULT_H:g} with --noise none)",
    )
    parser.add_argument(
        "--noise",
        type=_noise_mode,
        default="auto",
        help="auto (default): estimate the noise on frames spread over the clip and set h and the color "
        "decorrelation from it; none: no estimate; X,Y,W,H: estimate it in that flat region, in pixels",
    )
    parser.add_argument(
        "--filter-preset",
        default=None,
        help=f"the window's presets: {', '.join(shipped_presets())}, or a preset's .json file; its window, "
        "weighting and luma/chroma mode, and h as its strength times the h the noise suggests; the options "
        "below win over it (--preset is the encoder's speed)",
    )
    parser.add_argument("--patch-radius", type=int, default=None, help="B, pixels (default 4)")
    parser.add_argument("--search-radius", type=int, default=None, help="A, pixels (default 3)")
    parser.add_argument("--frames-past", type=int, default=None, help="Dp (default 1)")
    parser.add_argument("--frames-future", type=int, default=None, help="Df (default 1)")
    parser.add_argument("--weighting", choices=WEIGHTINGS, default=None, help="default exponential")
    parser.add_argument(
        "--center-weight",
        choices=CENTER_WEIGHTS,
        default=None,
        help="the pixel's own weight: max, the largest of the others' (KNLMeansCL's wref), or one; by default "
        "chosen from the noise (max, but one under light noise or an unsure estimate, where SURE also scores "
        "one), also for strengths given with --h or --luma-chroma",
    )
    parser.add_argument(
        "--luma-chroma",
        type=_luma_chroma_mode,
        default=UNSET,
        help="filter a colour clip in Y'CbCr (the source's matrix) with a strength for Y and one for Cb/Cr: auto "
        "(the default: from the noise of each, refined on the clip by SURE, which may choose one h in RGB "
        "instead for an RGB source where that filters better), off (in its own "
        "channels, with one h and the color decorrelation), or H_Y,H_UV in 8-bit levels; off by default with "
        "--h, --devices or --guide",
    )
    parser.add_argument(
        "--guide",
        choices=("prefilter",),
        default=None,
        help="prefilter: two passes, the first (same parameters) makes a guide the second takes its patch "
        "distances from (KNLMeansCL's rclip); twice the time, not with --devices. An experiment: it lost 0.3 to "
        "1.3 dB against one pass on real clips (docs/realistic-noise.md)",
    )
    parser.add_argument("--backend", choices=BACKENDS, default="auto")
    parser.add_argument(
        "--devices",
        type=volume_cli.gpu_ids,
        default=None,
        help="all, or GPU ids such as 0,1: the clip in chunks over those GPUs, concurrently (the fused filter; "
        "not with --luma-chroma or --guide); default: one GPU",
    )
    parser.add_argument(
        "--codec",
        choices=tuple(CODECS),
        default=None,
        help="h264 and h265 are 4:2:0; ffv1 (lossless) and prores keep the source's chroma sampling and depth; "
        "h264-nvenc and h265-nvenc encode on the GPU's video encoder, where it has one. Default: the source's "
        "kind in .mov, .mkv, .mxf and .avi (prores for a ProRes or DNxHR master, ffv1 for a lossless source), "
        "else h264 (ffv1 in .avi and .mxf, which hold no h264)",
    )
    parser.add_argument(
        "--rgb", action="store_true", help="with --codec ffv1: store planar RGB, the filter's output exactly"
    )
    parser.add_argument("--crf", type=int, default=18, help="H.264 / H.265 quality, 0..51 (default 18)")
    parser.add_argument(
        "--preset",
        default=None,
        help=f"H.264 / H.265 speed preset (default {DEFAULT_PRESET}; with --live {LIVE_X26X_PRESET}, and "
        f"{LIVE_FAST_X26X_PRESET} above 1080p at 30 fps: what x264 tuned for zero latency keeps up with on 16 cores "
        "with time to spare)",
    )
    parser.add_argument("--start", type=_seconds, default=0.0, help="first second to denoise (default 0)")
    parser.add_argument("--duration", type=_span, default=None, help="seconds to denoise (default: to the end)")
    parser.add_argument(
        "--frame-rate",
        type=float,
        default=None,
        help="an image sequence's frames a second, which its images do not carry: 24 for film scans, 23.976 for "
        "NTSC's 24000/1001 (default: 25, FFmpeg's)",
    )


def _add_batch_parser(commands: argparse._SubParsersAction) -> None:
    batch = commands.add_parser(
        "batch",
        help="denoise many videos, image sequences and volumes (files, folders, globs) into a folder, on a Dask "
        "cluster",
        description="Denoise every INPUT into --out DIR, at the same path under DIR as under its folder or glob's "
        "root, one file a task on a Dask cluster: a local one sized to this machine, or --scheduler's. Volumes "
        "(.nii, .nii.gz, .tif, .tiff, .npy) go through denoise-volume, with the options below that it has; an "
        "image sequence (numbered images of one name, found in a folder or given as a pattern) is one file, its "
        "output a sequence of the same name under DIR. "
        f"DIR/{BATCH_MANIFEST} records each file; a rerun skips those done and redoes the rest.",
    )
    batch.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="video or volume files, image sequences' patterns (scans/%%06d.dpx), folders, or globs",
    )
    batch.add_argument("--out", required=True, metavar="DIR", help="the folder the outputs go to (made if missing)")
    batch.add_argument(
        "--jobs", type=_count, default=None, help="files at once on this machine (default: one a core, or a GPU)"
    )
    batch.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="a Dask scheduler (tcp://HOST:8786) whose workers see INPUT and DIR at the same paths, instead of a "
        "cluster on this machine",
    )
    batch.add_argument(
        "--segment-seconds",
        type=_seconds,
        default=DEFAULT_SEGMENT_SECONDS,
        metavar="S",
        help="cut a video at least twice as long into segments of S seconds or more, at its keyframes, each a task "
        f"(its window's frames of context read around it), joined by stream copy (default {DEFAULT_SEGMENT_SECONDS:g}; "
        "0: never)",
    )
    add_denoise_options(batch)
    batch.add_argument(
        "--overwrite",
        action="store_true",
        help="denoise again, with these options, the files an earlier batch into DIR did with others (refused without)",
    )
    batch.add_argument("--quiet", action="store_true", help="no progress; the summary table still ends the run")
    batch.add_argument("--verbose", action="store_true", help="FFmpeg's warnings and notes in each file's log")
    batch.add_argument("--debug", action="store_true", help="show tracebacks (in each file's log)")


def _box(text: str) -> tuple[int, int, int, int]:
    """X,Y,W,H in pixels."""
    try:
        x, y, w, h = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a region is X,Y,W,H in pixels, like 10,20,64,64, got {text!r}") from None
    return x, y, w, h


class _Unset:
    """The value of --luma-chroma left out: the default mode applies.

    Not a string: argparse would parse it. Pickled by name, so that it is the same object on the
    Dask worker a batch sends it to.
    """

    def __reduce__(self) -> str:
        return "UNSET"

    def __repr__(self) -> str:
        return "default"


UNSET = _Unset()


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
