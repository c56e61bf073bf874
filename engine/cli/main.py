"""``nlmeans-studio``'s entry: each command run, and its errors said in one line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ..bench.measure import (
    paper_cases,
    run_pipeline,
    run_preview,
    run_table,
)
from ..memory import limited_flags, share_malloc_arenas
from ..video.denoiser import METHODS
from ..video.export import ExportCancelledError
from ..video.params import DEFAULT_H, NLMParams
from ..volume import cli as volume_cli
from .arguments import build_parser
from .batch.command import run_batch
from .denoise import Stop, run_denoise
from .errors import FAILURES, error_message, memory_error_within
from .estimate import run_estimate_noise
from .live import live_refusal, run_live
from .tune import run_tune


def _denoise_volume(args: argparse.Namespace) -> int:
    """``denoise-volume``; stopped (``Stop``), it names the output it did not write.

    Its hidden file is removed as the stop unwinds.
    """
    try:
        volume_cli.run(args)
    except KeyboardInterrupt:
        raise ExportCancelledError(f"cancelled; {args.output} was not written") from None
    return 0


def _leave_at_once(status: int) -> None:
    """End the process now, its error said, without the interpreter's shutdown.

    Out of memory under a ``ulimit``, the shutdown itself found no room: it printed tracebacks of
    objects it could not free ("Exception ignored in: <object repr() failed>") below the one line.
    Outputs are already removed as the error unwound.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nlmeans-studio`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    share_malloc_arenas()  # under ulimit -v: threads cheap in address space, from the first
    stop = Stop()
    try:
        if args.command == "denoise" and args.live:
            return run_live(args, stop)
        if args.command == "denoise":
            if (refused := live_refusal(args)) is not None:
                raise ValueError(refused)
            run_denoise(args, stop)
            return 0
        if args.command == "batch":
            return run_batch(args)
        if args.command == "estimate-noise":
            return run_estimate_noise(args)
        if args.command == "denoise-volume":
            return _denoise_volume(args)
        if args.command == "tune":
            return run_tune(args)
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
    except (*FAILURES, SystemError) as error:
        failure = memory_error_within(error) if isinstance(error, SystemError) else error
        if failure is None or getattr(args, "debug", False):
            raise
        print(f"nlmeans-studio: error: {error_message(failure, as_options=args.command != 'bench')}", file=sys.stderr)
        if isinstance(failure, MemoryError) and limited_flags():
            _leave_at_once(1)
        return 1
    finally:
        stop.restore()
    return 0
