"""The host's share of a video export, per frame: decoding, the conversions to and from Y'CbCr,
encoding, and the whole export warm, in one process (issue 35: what a batch worker spends a frame on).

Prints the process's start (imports, the GPU's context), a whole ``denoise_file`` export cold and
warm in frames per second, then each stage alone in milliseconds a frame: the reader (decoding and
the conversion to RGB), the conversions alone, decoding alone (FFmpeg's threads), and the writer
(the conversion and x264 ultrafast). Run several at once, one GPU each, to see them contend:

    python scripts/bench_export_host.py CLIP [--backend gpu] [--h 10] [--label NAME]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

START = time.perf_counter()
import numpy as np  # noqa: E402  (timed: the imports are part of a process's start)

from nlmeans_studio.engine import NLMParams, VideoReader, VideoWriter, denoise_file  # noqa: E402
from nlmeans_studio.engine.media import yuv  # noqa: E402


def per_frame(start: float, frames: int) -> str:
    """Milliseconds a frame since ``start``."""
    return f"{(time.perf_counter() - start) / frames * 1e3:.2f} ms/frame"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clip", type=Path, help="a video file in 8-bit 4:2:0 Y'CbCr (H.264, ...)")
    parser.add_argument("--backend", choices=["cpu", "gpu"], default="gpu")
    parser.add_argument("--h", type=float, default=10.0)
    parser.add_argument("--label", default="", help="a name to start each line with (several runs at once)")
    arguments = parser.parse_args()
    label = arguments.label and f"{arguments.label}: "
    imports = time.perf_counter() - START
    start = time.perf_counter()
    if arguments.backend == "gpu":
        import cupy

        cupy.zeros(1)
    context = time.perf_counter() - start
    output = Path(tempfile.mkdtemp()) / "out.mp4"
    params = NLMParams(h=arguments.h)
    seconds = []
    for _ in range(2):
        start = time.perf_counter()
        summary = denoise_file(
            arguments.clip, output, params, backend=arguments.backend, codec="h264", preset="ultrafast", overwrite=True
        )
        seconds.append(time.perf_counter() - start)
    frames = summary.frames
    print(
        f"{label}imports {imports:.2f} s, GPU context {context:.2f} s; export of {frames} frames cold "
        f"{seconds[0]:.2f} s, warm {seconds[1]:.2f} s = {frames / seconds[1]:.1f} frames/s (decoder {summary.decoder})"
    )
    with VideoReader(arguments.clip) as reader:
        start = time.perf_counter()
        decoded = list(reader.frames())
        print(f"{label}reader (decoding on the CPU, to RGB): {per_frame(start, len(decoded))}")
        info = reader.info
    layout = yuv.yuv_layout("yuv420p", {}, info.height)
    planes = yuv.rgb_to_planes(decoded[0], layout)
    start = time.perf_counter()
    for _ in decoded:
        yuv.planes_to_rgb(planes, layout, np.uint8)
    print(f"{label}to RGB alone: {per_frame(start, len(decoded))}")
    start = time.perf_counter()
    for frame in decoded:
        yuv.rgb_to_frame(frame, layout)
    print(f"{label}to a Y'CbCr frame alone: {per_frame(start, len(decoded))}")
    import av

    with av.open(str(arguments.clip)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        start = time.perf_counter()
        count = sum(1 for _ in container.decode(stream))
    print(f"{label}decoding alone (FFmpeg's threads): {per_frame(start, count)}")
    with VideoWriter(output, info, codec="h264", preset="ultrafast", overwrite=True) as writer:
        start = time.perf_counter()
        for frame in decoded:
            writer.write(frame)
    print(f"{label}writer (to Y'CbCr, x264 ultrafast): {per_frame(start, len(decoded))}")


if __name__ == "__main__":
    main()
