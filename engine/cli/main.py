"""``nlmeans-studio``'s entry: each command run, and its errors said in one line."""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from ..backend import (
    BackendUnavailableError,
    GpuOutOfMemoryError,
)
from ..bench.measure import (
    paper_cases,
    run_pipeline,
    run_preview,
    run_table,
)
from ..media.ffmpeg import VideoError
from ..memory import (
    CPU_WAYS,
    ShortOfMemoryError,
    out_of_memory,
    share_malloc_arenas,
)
from ..video.denoiser import METHODS
from ..video.export import ExportCancelledError
from ..video.params import DEFAULT_H, NLMParams
from ..video.presets import FIELDS as PRESET_FIELDS
from ..volume import cli as volume_cli
from .arguments import build_parser
from .denoise import Stop, run_denoise
from .estimate import run_estimate_noise

# The engine words its errors by its parameters' Python names; each of these is an option
# (--patch-radius for patch_radius), which the command line's messages name instead.
OPTION_PARAMETERS = (*PRESET_FIELDS, "crf", "preset")


def _denoise_volume(args: argparse.Namespace) -> int:
    """``denoise-volume``; stopped (``Stop``), it names the output it did not write.

    Its hidden file is removed as the stop unwinds.
    """
    try:
        return volume_cli.run(args)
    except KeyboardInterrupt:
        raise ExportCancelledError(f"cancelled; {args.output} was not written") from None


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
        if args.command == "denoise":
            return run_denoise(args, stop)
        if args.command == "estimate-noise":
            return run_estimate_noise(args)
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
    """``error``'s message for a person.

    The system's own errors ("[Errno 36] File name too long: '...'") as the file and the reason, and
    no word (a path) longer than LONGEST_WORD characters: a 5000-character name was echoed whole.
    """
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
    """Word an engine message for the command line.

    The engine names its parameters as Python does ("search_radius must be .."): on the command
    line, the option ("--search-radius must be ..").
    """
    name = re.match(r"(\w+) must ", message)
    if name is None or name.group(1) not in OPTION_PARAMETERS:
        return message
    return f"--{name.group(1).replace('_', '-')}{message[name.end(1) :]}"
