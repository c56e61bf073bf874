"""``nlmeans-studio denoise --live``: a stream or a device denoised as it arrives, its latency and drops said.

The options that make no sense for a live source are refused in one line before it is opened; the
stop signals end the run with its output finished and kept (status 130).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import urlsplit

from ..backend import resolve_backend
from ..cpu.compiled import announce_compile, silence_compile_notice
from ..media.ffmpeg import show_ffmpeg_messages
from ..media.live import LiveReader
from ..media.pipe import PIPE, PipeReader
from ..media.writer import STANDARD_OUTPUT
from ..media.yuv import warm_up_writing
from ..memory import require_cpu_room
from ..video.denoiser import Denoiser
from ..video.filters import cpu_filter_compiles
from ..video.live import LiveStatus, denoise_live
from ..video.presets import find_preset, load_preset
from .denoise import (
    ProgressBar,
    Stop,
    check_output,
    choose_codec,
    filter_asked,
    output_options,
    source_info,
    window_params,
)

STOPPED = 130  # the status of a run ended by a signal, as a cancelled export's


def live_refusal(args: argparse.Namespace) -> str | None:
    """Return why ``args`` cannot run live, in one line with the way out; None where they can.

    A file's part (--start, --duration), several GPUs or two passes (--devices, --guide) make no
    sense for a stream read once as it arrives; a file given as INPUT is read whole without --live.
    """
    if not args.live:
        if "://" in args.input:
            return f"{args.input}: a live stream; add --live to denoise it as it arrives"
        if args.input_format is not None or args.live_timeout is not None:
            return "--format and --live-timeout are for live sources: add --live"
        return None
    if args.start != 0 or args.duration is not None:
        return "--live reads a stream as it comes, from now to its end: leave out --start and --duration"
    if args.output == args.input and args.input != PIPE:
        return f"{args.input}: OUTPUT is INPUT; send the denoised stream to another address or port"
    if "://" in args.input and not _has_a_valid_port(args.input):
        return f"{args.input}: its port is not a number in 1..65535, as in udp://127.0.0.1:5000"
    if args.devices is not None or args.guide is not None:
        return "--live filters each frame once, on one device: leave out --devices and --guide"
    if args.input != PIPE and "://" not in args.input and Path(args.input).is_file():
        return (
            f"{args.input}: a file, read whole without --live; to play it as a live source, send it: "
            "ffmpeg -re -i FILE -f mpegts udp://127.0.0.1:5000"
        )
    return None


def _has_a_valid_port(url: str) -> bool:
    """Whether ``url``'s port, if it gives one, is a number in 1..65535."""
    try:
        port = urlsplit(url).port
    except ValueError:  # not a number, or out of 0..65535
        return False
    return port != 0


def _opened(args: argparse.Namespace) -> PipeReader:
    """Open the live source: y4m on standard input (``-``), else what FFmpeg opens by name (a URL, a device)."""
    if args.input == PIPE:
        return PipeReader()
    timeout = {} if args.live_timeout is None else {"timeout": args.live_timeout}
    return LiveReader(args.input, input_format=args.input_format, **timeout)


def _described(status: LiveStatus) -> str:
    """Return what the progress line says of a live run."""
    return (
        f"{status.frames} frames, {status.dropped} dropped  {status.fps:.1f} fps  "
        f"latency {status.latency_ms:.0f} ms (p95 {status.latency_p95_ms:.0f})"
    )


def run_live(args: argparse.Namespace, stop: Stop) -> int:
    """Run ``denoise --live`` on ``args``; return the exit status: 0, or STOPPED after a signal (the output kept).

    Errors propagate to the caller's handler, as ``run_denoise``'s.
    """
    refused = live_refusal(args)
    if refused is not None:
        raise ValueError(refused)
    show_ffmpeg_messages(verbose=args.verbose)
    check_output(args)  # before a source that may take its time to send
    choose_codec(args, None)  # a live source's kind is not known before it sends
    if args.frames_future is None:
        args.frames_future = 0  # no frame waits for later ones: zero delay
    preset = None if args.filter_preset is None else load_preset(find_preset(args.filter_preset))
    if args.quiet:
        silence_compile_notice()
    if resolve_backend(args.backend) == "cpu":
        require_cpu_room(0, compiles=cpu_filter_compiles)
        announce_compile(cpu_filter_compiles)
    # The filter and the conversion to 8-bit Y'CbCr loaded (numba's compile or cache, a GPU's kernels)
    # before the source is opened: frames that arrive during a start-up of seconds would be dropped.
    window = window_params(args, preset)
    Denoiser(window, args.backend).warm_up(window.min_frame_size, window.min_frame_size)
    warm_up_writing()
    if not args.quiet:  # a listener's sender may start now
        print(f"live: opening {args.input}", file=sys.stderr, flush=True)
    args.source = _opened(args)
    choice = filter_asked(args, preset, source_info(args))
    progress = None if args.quiet else ProgressBar()
    stop.start_exporting()
    try:
        status = denoise_live(
            args.source,
            args.output,
            choice.params,
            **output_options(args),
            luma_chroma=choice.luma_chroma,
            progress=None if progress is None else lambda now: progress.show(_described(now), now.seconds),
            cancel=stop.cancel,
        )
    finally:
        if progress is not None:
            progress.close()
    if not args.quiet:
        output = "standard output" if args.output == STANDARD_OUTPUT else args.output
        print(
            f"denoised {status.frames} frames live in {status.seconds:.1f} s ({status.fps:.1f} fps), "
            f"{status.dropped} dropped; latency median {status.latency_ms:.0f} ms, p95 {status.latency_p95_ms:.0f} ms; "
            f"on the {status.backend} ({status.device_name}) -> {output}",
            file=sys.stderr,
        )
        if args.source.lost:
            print(
                f"warning: {args.source.lost} frames of {args.input} never arrived (gaps in its timestamps: lost on "
                "the way, as UDP loses packets when the network or this machine falls behind); the output keeps "
                "the gaps",
                file=sys.stderr,
            )
    if status.stopped:
        print(f"nlmeans-studio: stopped; {args.output} holds the {status.frames} frames denoised", file=sys.stderr)
        return STOPPED
    return 0
