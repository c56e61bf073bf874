"""``nlmeans-studio tune``: the window and h of best estimated quality at a frame rate, as a table or JSON."""

from __future__ import annotations

import argparse
import json
import sys

from ..backend import resolve_backend
from ..cpu.compiled import announce_compile
from ..media.ffmpeg import show_ffmpeg_messages
from ..media.writer import check_encoder
from ..video.filters import cpu_filter_compiles
from ..video.tune import TargetNotReachedError, TuneCandidate, TuneResult, tune_for_fps


def run_tune(args: argparse.Namespace) -> int:
    """Run ``tune``: print every window timed, and the one chosen; 0, or raise where none reaches --fps.

    Raises
    ------
    TargetNotReachedError
        No window reaches --fps, after the table (or the JSON) of those timed is printed.
    """
    show_ffmpeg_messages(verbose=False)
    if not args.playback:
        check_encoder(args.codec)  # one this machine lacks (NVENC without an NVIDIA encoder): before any reading
    if not args.json:
        timed = "playing it" if args.playback else "feeding it live" if args.live else "exporting it"
        print(f"tuning {args.input} for {args.fps} fps: each window is timed {timed} here", file=sys.stderr)
        if resolve_backend(args.backend) == "cpu":
            announce_compile(cpu_filter_compiles)  # once: the Denoisers timed after it say it no more

    drawn = not args.json and sys.stderr.isatty()  # one line redrawn on a terminal; none in a log

    def progress(done: int, total: int) -> None:
        if drawn:
            print(f"\rwindows tried: {done}", end="", file=sys.stderr, flush=True)

    try:
        codec = None if args.playback else args.codec
        result = tune_for_fps(
            args.input, args.fps, backend=args.backend, codec=codec, live=args.live, progress=progress
        )
    except TargetNotReachedError as error:
        _report(error.result, args)
        raise
    finally:
        if drawn:
            print(file=sys.stderr)
    _report(result, args)
    return 0


def _report(result: TuneResult, args: argparse.Namespace) -> None:
    """Print the table (or the JSON) of the windows timed, and the command that exports with the chosen one."""
    if args.json:
        print(json.dumps(as_json(result)))
        return
    print(
        f"# {result.width}x{result.height}, target {result.target_fps:g} fps; {_timed(args)} on the {result.backend} "
        f"({result.device_name}); PSNR estimated by SURE, no clean reference"
    )
    print(f"candidate | fps{' | latency p95 ms' if result.live else ''} | estimated PSNR dB | strengths | chosen")
    for candidate in result.candidates:
        psnr = "-" if candidate.estimated_psnr is None else f"{candidate.estimated_psnr:.2f}"
        psnr = "no error read" if candidate.read_no_error else psnr
        strengths = "-" if candidate.choice is None else _strengths(candidate)
        chosen = "yes" if candidate is result.chosen else ""
        latency = f" | {candidate.latency_p95_ms:.0f}" if result.live else ""
        print(f"{candidate.describe()} | {candidate.fps:.1f}{latency} | {psnr} | {strengths} | {chosen}")
    unread = sum(candidate.read_no_error for candidate in result.candidates)
    if unread:
        print(
            f"# SURE read no error (0 or less) for {unread} windows: its noise model does not hold on this clip "
            "(compressed or correlated noise); the windows are ranked by its error all the same"
        )
    if result.pruned:
        print(f"# {result.pruned} larger windows not timed: each searches all a slower one does")
    if result.warning:
        print(f"warning: {result.warning}", file=sys.stderr)
    if result.chosen is not None:
        codec = [] if args.playback or args.codec == "h264" else [f"--codec {args.codec}"]  # as timed
        chosen = " ".join([*options(result.chosen), *codec])
        source = "SOURCE OUTPUT --live" if args.live else f"{args.input} OUTPUT"  # the stream it was tuned for
        print(f"denoise with it: nlmeans-studio denoise {source} {chosen}")


def _timed(args: argparse.Namespace) -> str:
    """Return how each window was timed: "playback (decoded and filtered)", "exports to ffv1" or live."""
    if args.live:
        return f"live, fed at the target rate and encoded to {args.codec}"
    return "playback (decoded and filtered)" if args.playback else f"exports to {args.codec}"


def _strengths(candidate: TuneCandidate) -> str:
    """Return the candidate's strengths in words: "h_Y 5.4, h_UV 4.7" or "h 6.1"."""
    if candidate.choice.luma_chroma is not None:
        h_luma, h_chroma, _ = candidate.choice.luma_chroma
        return f"h_Y {h_luma:.1f}, h_UV {h_chroma:.1f}"
    return f"h {candidate.choice.params.h:.1f}"


def options(candidate: TuneCandidate) -> list[str]:
    """Return ``denoise``'s options that filter with ``candidate``'s window and strengths."""
    window = candidate.window
    chosen = [
        f"--search-radius {window.search_radius}",
        f"--frames-past {window.frames_past}",
        f"--frames-future {window.frames_future}",
        f"--patch-radius {window.patch_radius}",
        f"--center-weight {candidate.choice.params.center_weight}",
    ]
    if candidate.choice.luma_chroma is not None:
        h_luma, h_chroma, _ = candidate.choice.luma_chroma
        return [*chosen, f"--luma-chroma {h_luma:.2f},{h_chroma:.2f}"]
    return [*chosen, f"--h {window.h:.2f}"]


def _rounded(luma_chroma: tuple[float, float, str]) -> list:
    h_luma, h_chroma, matrix = luma_chroma
    return [round(h_luma, 3), round(h_chroma, 3), matrix]


def as_json(result: TuneResult) -> dict:
    """Return ``result`` as the JSON ``tune --json`` prints: the table's rows and the choice."""

    def row(candidate: TuneCandidate) -> dict:
        window, choice = candidate.window, candidate.choice
        return {
            "search_radius": window.search_radius,
            "frames_past": window.frames_past,
            "frames_future": window.frames_future,
            "patch_radius": window.patch_radius,
            "fps": round(candidate.fps, 2),
            "latency_p95_ms": candidate.latency_p95_ms,
            "estimated_psnr": None if candidate.estimated_psnr is None else round(candidate.estimated_psnr, 3),
            "estimated_mse": candidate.estimated_mse,
            "h": None if choice is None or choice.luma_chroma is not None else round(choice.params.h, 3),
            "luma_chroma": None if choice is None or choice.luma_chroma is None else _rounded(choice.luma_chroma),
            "center_weight": None if choice is None else choice.params.center_weight,
            "chosen": candidate is result.chosen,
        }

    return {
        "target_fps": result.target_fps,
        "width": result.width,
        "height": result.height,
        "backend": result.backend,
        "device": result.device_name,
        "candidates": [row(candidate) for candidate in result.candidates],
        "pruned": result.pruned,
        "chosen": None if result.chosen is None else row(result.chosen),
        "warning": result.warning,
        "live": result.live,
    }
