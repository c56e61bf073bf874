"""The command line: ``nlmeans-studio [bench ...]``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__
from .backend import BACKENDS, BackendUnavailableError
from .bench import PAPER_SEARCH_RADII, PAPER_TEMPORAL, paper_cases, run_table
from .denoiser import METHODS
from .video import VideoError


def _size(text: str) -> tuple[int, int]:
    """WIDTHxHEIGHT in pixels -> (height, width)."""
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must be WIDTHxHEIGHT, like 720x480, got {text!r}") from None
    if width < 1 or height < 1:
        raise argparse.ArgumentTypeError(f"size must be positive, got {text!r}")
    return height, width


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nlmeans-studio",
        description="Non-Local Means video denoising on an NVIDIA GPU or the CPU.",
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
    bench.add_argument("--frames", type=int, default=4, help="output frames timed per case (default 4)")
    bench.add_argument("--repeats", type=int, default=1, help="passes over those frames (default 1)")
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
    bench.add_argument(
        "--input", default=None, help="a video, or a .npy of uint8 (T,H,W,3) frames (default: the sample)"
    )
    bench.add_argument("--peers", action="store_true", help="also time the installed peer implementations")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nlmeans-studio`` command; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
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
        )
    except (ValueError, OSError, ImportError, BackendUnavailableError, VideoError) as error:
        print(f"nlmeans-studio: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
