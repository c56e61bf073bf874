"""The luma/chroma mode's export of Y'CbCr frames (``LumaChromaDenoiser.export_yuv``), host planes to host planes.

Frames per second over synthetic noisy planes, the first frames (compiles, the pipeline's fill)
left out; run it with an older tree's package on PYTHONPATH to compare:

    python scripts/bench_luma_chroma_export.py [--backend gpu] [--size 1920x1080] [--format yuv420p] [--frames 60]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from nlmeans_studio.engine import NLMParams
from nlmeans_studio.engine.frames import yuv_plane_shapes
from nlmeans_studio.engine.media.yuv import YuvFrame, yuv_layout
from nlmeans_studio.engine.video.luma_chroma import LumaChromaDenoiser

WARM_FRAMES = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["cpu", "gpu"], default="gpu")
    parser.add_argument("--size", default="1920x1080", help="WIDTHxHEIGHT")
    parser.add_argument("--format", default="yuv420p", help="a planar Y'CbCr pixel format (yuv422p10le, ...)")
    parser.add_argument("--frames", type=int, default=60, help="frames timed, after the warm ones")
    arguments = parser.parse_args()
    width, height = (int(side) for side in arguments.size.split("x"))
    layout = yuv_layout(arguments.format, {"colorspace": 1}, height)
    rng = np.random.default_rng(0)
    top = 2**layout.bits - 1
    shapes = yuv_plane_shapes(height, width, layout.chroma_shift)
    base = [np.clip(rng.normal(top / 2, top / 20, shape), 0, top).astype(layout.sample_dtype) for shape in shapes]
    count = WARM_FRAMES + arguments.frames
    frames = (YuvFrame([np.roll(plane, index, axis=1) for plane in base], layout) for index in range(count))
    denoiser = LumaChromaDenoiser(NLMParams(), 10.0, 8.0, "bt709", arguments.backend)
    dtype = np.uint8 if layout.bits == 8 else np.uint16
    started = None
    for index, _ in enumerate(denoiser.export_yuv(frames, dtype, layout)):
        if index == WARM_FRAMES - 1:
            started = time.perf_counter()
    seconds = time.perf_counter() - started
    print(f"{arguments.format} {width}x{height} on the {denoiser.backend}: {arguments.frames / seconds:.1f} fps")


if __name__ == "__main__":
    main()
