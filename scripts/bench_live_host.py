"""The live path's host side at 1080p: each stage's milliseconds a frame, then the live loop paced at a rate.

    .venv/bin/python scripts/bench_live_host.py [--size 1920x1080] [--frames 40] [--backend cpu]
        [--window 0,0,0] [--luma-chroma 7.19,6.13] [--outputs ffv1,h264:medium,h264:veryfast]
        [--live-fps 60] [--live-seconds 5]

Frames: a texture panning under noise of sigma 3 levels (a denoised picture's grain, as the
encoder sees it), 4:2:0, as a y4m sender gives them. Stages, each the median over ``--frames``:
y4m demuxed and decoded (PyAV), its planes to RGB (``media.yuv``), the filter with
``--window`` (search radius, past frames, patch radius; 0,0,0: the cheapest the filter allows)
in ``--luma-chroma``'s Y'CbCr mode, as ``denoise --live`` runs it (``export_stream``: conversions
and, on the GPU, the trips over the bus included), RGB to the output's planes, and each output's
``VideoWriter.write`` (conversion, encoding, muxing) with the live settings. Then ``denoise_live``
on a y4m pipe paced at ``--live-fps`` for ``--live-seconds``, per output: frames written and
dropped, and the latency's median and 95th percentile.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import av
import numpy as np

from nlmeans_studio.engine import NLMParams, denoise_live
from nlmeans_studio.engine.media import yuv
from nlmeans_studio.engine.media.pipe import PipeReader
from nlmeans_studio.engine.media.writer import VideoWriter
from nlmeans_studio.engine.video.clip_denoiser import denoiser_for
from nlmeans_studio.engine.video.luma_chroma import matrix_for

DISTINCT_FRAMES = 8  # frames made, sent round and round


def y4m_stream(width: int, height: int, count: int) -> tuple[bytes, list[bytes]]:
    """The y4m header (60 fps) and ``count`` frames of a panning texture under noise, 4:2:0."""
    rows, columns = np.mgrid[0:height, 0:width]
    random = np.random.default_rng(0)
    frames = []
    for number in range(count):
        base = 128 + 60 * np.sin((columns + 8 * number) / 40) * np.cos(rows / 30)
        rgb = np.stack([base, 0.8 * base + 20, 255 - base], axis=-1) + random.normal(0, 3, (height, width, 3))
        picture = av.VideoFrame.from_ndarray(np.clip(rgb, 0, 255).astype(np.uint8), format="rgb24")
        frames.append(b"FRAME\n" + picture.reformat(format="yuv420p").to_ndarray().tobytes())
    return f"YUV4MPEG2 W{width} H{height} F60:1 Ip A1:1 C420mpeg2\n".encode(), frames


def median_ms(run: Callable[[], object], count: int) -> float:
    """The median of ``count`` calls of ``run``, in milliseconds (one call before, not counted)."""
    run()
    times = []
    for _ in range(count):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return 1000 * statistics.median(times)


def say(label: str, milliseconds: float) -> None:
    print(f"{label:<28}{milliseconds:7.2f} ms")


def window(args: argparse.Namespace, height: int) -> tuple[NLMParams, tuple[float, float, str]]:
    """``--window``'s parameters (Df 0, as live) and ``--luma-chroma``'s mode for frames ``height`` lines tall."""
    search, past, patch = (int(value) for value in args.window.split(","))
    h_luma, h_chroma = (float(value) for value in args.luma_chroma.split(","))
    params = NLMParams(search_radius=search, frames_past=past, frames_future=0, patch_radius=patch)
    return params, (h_luma, h_chroma, matrix_for(2, height))


def stages(header: bytes, frames: list[bytes], args: argparse.Namespace) -> None:
    """Print each stage's median milliseconds a frame."""
    stream = header + b"".join(frames[number % len(frames)] for number in range(args.frames))
    decoded = []
    with PipeReader(io.BufferedReader(io.BytesIO(stream))) as reader:
        info = reader.info
        began = time.perf_counter()
        for frame in reader._decoded():  # the raw frames, before the conversion to RGB
            decoded.append(frame)
        say("y4m demuxed and decoded", 1000 * (time.perf_counter() - began) / len(decoded))
    layout = yuv.yuv_layout(info.pixel_format, info.color, info.height)
    planes = yuv.frame_planes(decoded[0], layout)
    rgb = yuv.planes_to_rgb(planes, layout, np.dtype(np.uint8))
    say("planes to RGB", median_ms(lambda: yuv.planes_to_rgb(planes, layout, rgb.dtype), args.frames))
    params, luma_chroma = window(args, info.height)
    denoiser = denoiser_for(params, backend=args.backend, luma_chroma=luma_chroma)
    outputs = denoiser.export_stream(itertools.repeat(rgb), np.uint8)
    filtered = next(outputs)
    say(f"filter {args.window} on the {denoiser.backend}", median_ms(lambda: next(outputs), args.frames))

    def to_planes() -> object:
        return yuv.rgb_to_frame(filtered, layout)

    say("RGB to the planes", median_ms(to_planes, args.frames))
    with tempfile.TemporaryDirectory() as folder:
        for output in args.outputs.split(","):
            codec, _, preset = output.partition(":")
            target = Path(folder) / "out.mkv"
            with VideoWriter(
                target, info, codec=codec, preset=preset or "medium", low_delay=True, overwrite=True
            ) as writer:
                say(f"write {output}", median_ms(lambda: writer.write(filtered), args.frames))


def send_paced(sink: io.BufferedWriter, header: bytes, frames: list[bytes], rate: int, seconds: float) -> None:
    """Write ``header``, then ``frames`` round and round at ``rate`` a second for ``seconds``, to ``sink``; close it."""
    with contextlib.suppress(BrokenPipeError), sink:
        sink.write(header)
        began = time.perf_counter()
        for number in range(round(rate * seconds)):
            time.sleep(max(0.0, began + number / rate - time.perf_counter()))
            sink.write(frames[number % len(frames)])
            sink.flush()


def live(header: bytes, frames: list[bytes], args: argparse.Namespace) -> None:
    """Print ``denoise_live``'s summary per output, its y4m source paced at ``--live-fps``."""
    header = header.replace(b"F60:1", f"F{args.live_fps}:1".encode())
    for output in args.outputs.split(","):
        codec, _, preset = output.partition(":")
        read_end, write_end = os.pipe()
        sink = os.fdopen(write_end, "wb")
        sender = threading.Thread(target=send_paced, args=(sink, header, frames, args.live_fps, args.live_seconds))
        sender.start()
        with tempfile.TemporaryDirectory() as folder, os.fdopen(read_end, "rb") as source:
            reader = PipeReader(source)
            params, luma_chroma = window(args, reader.info.height)
            status = denoise_live(
                reader,
                Path(folder) / "live.mkv",
                params,
                backend=args.backend,
                codec=codec,
                preset=preset or "medium",
                luma_chroma=luma_chroma,
            )
            reader.close()
        sender.join()
        print(
            f"live {output} at {args.live_fps} fps: {status.frames} written, "
            f"{status.dropped} dropped, {status.fps:.1f} fps; latency median {status.latency_ms:.0f} ms, "
            f"p95 {status.latency_p95_ms:.0f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1920x1080", help="WIDTHxHEIGHT (default 1920x1080)")
    parser.add_argument("--frames", type=int, default=40, help="frames each stage is timed on (default 40)")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--window", default="0,0,0", help="search radius, past frames, patch radius (default 0,0,0)")
    parser.add_argument("--luma-chroma", default="7.19,6.13", help="h_Y,h_UV in 8-bit levels (default 7.19,6.13)")
    parser.add_argument(
        "--outputs", default="ffv1,h264:medium,h264:veryfast", help="codec[:preset],... (preset default medium)"
    )
    parser.add_argument("--live-fps", type=int, default=60)
    parser.add_argument("--live-seconds", type=float, default=5.0, help="0: no live run")
    args = parser.parse_args()
    width, height = (int(value) for value in args.size.split("x"))
    header, frames = y4m_stream(width, height, DISTINCT_FRAMES)
    print(f"{width}x{height}, {os.cpu_count()} CPUs, backend {args.backend}; milliseconds a frame (median):")
    stages(header, frames, args)
    if args.live_seconds > 0:
        live(header, frames, args)


if __name__ == "__main__":
    main()
