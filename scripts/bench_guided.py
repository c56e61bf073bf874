"""Engine time of the fused kernel with a guide (issue 19) against the plain one, on the GPU machine.

    python3 scripts/bench_guided.py [--size 1920x1080] [--iterations 20]

A clip of 5 noisy 8-bit frames (a smooth colour pattern plus white noise of sigma 10 levels:
no PyAV is needed) and the default parameters (B = 4, A = 3, Dp = Df = 1, h = 20, bisquare,
centre weight one). Between two CUDA events, the three inner frames' outputs (whole windows)
of the fused filter on frames resident on the GPU: plain on the 8-bit frames (the packed path,
as exports run), plain on float32 frames (the float path the guided kernel shares), and guided
(the 8-bit frames averaged, the first pass's float32 outputs as the guide); median ms per
frame. Then the whole ``GuidedDenoiser.export_stream`` and ``Denoiser.export_stream`` from
host frames, wall ms per frame, and the outputs' PSNR against the clean frames.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from nlmeans_studio.engine import Denoiser, NLMParams
from nlmeans_studio.engine.backend import cupy_module
from nlmeans_studio.engine.frames import from_float32, to_float32
from nlmeans_studio.engine.metrics import psnr
from nlmeans_studio.engine.video.filters.fused_gpu import FusedGpuFilter
from nlmeans_studio.engine.video.guided import GuidedDenoiser
from nlmeans_studio.engine.video.params import window_indices
from nlmeans_studio.engine.video.sample import noisy_frames

FRAMES, OUTPUTS = 5, (1, 2, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    width, height = (int(value) for value in args.size.split("x"))
    cupy = cupy_module()
    params = NLMParams()
    rows = np.linspace(0, 12, height, dtype=np.float32)[None, :, None, None]
    cols = np.linspace(0, 20, width, dtype=np.float32)[None, None, :, None]
    phase = np.array([0.0, 2.0, 4.0], np.float32) + 0.1 * np.arange(FRAMES, dtype=np.float32)[:, None, None, None]
    clean = 0.5 + 0.35 * np.sin(rows + cols + phase)
    noisy = from_float32(noisy_frames(clean, 10, seed=0), np.uint8)

    fused = FusedGpuFilter(cupy)
    frames8 = [fused.upload(frame) for frame in noisy]
    frames32 = [fused.upload(to_float32(frame)) for frame in noisy]

    def window_of(frames: list, index: int) -> tuple[list, int]:
        window = window_indices(index, FRAMES, params)
        return frames[window.start : window.stop], index - window.start

    guide = [fused.upload(cupy.asnumpy(fused(*window_of(frames8, index), params))) for index in range(FRAMES)]

    def plain(frames: list) -> Callable[[], None]:
        return lambda: [fused(*window_of(frames, index), params) for index in OUTPUTS]

    def guided() -> None:
        for index in OUTPUTS:
            window, center = window_of(frames8, index)
            fused(window, center, params, window_of(guide, index)[0])

    def milliseconds_per_frame(run: Callable[[], object]) -> float:
        run()  # compiles
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        samples = []
        for _ in range(args.iterations):
            start.record()
            run()
            end.record()
            end.synchronize()
            samples.append(cupy.cuda.get_elapsed_time(start, end) / len(OUTPUTS))
        return statistics.median(samples)

    print(f"{width}x{height}, {FRAMES} frames, {params}")
    for label, run in [
        ("plain fused, 8-bit frames (packed)", plain(frames8)),
        ("plain fused, float32 frames", plain(frames32)),
        ("guided fused (8-bit source, float32 guide)", guided),
    ]:
        print(f"{label}: {milliseconds_per_frame(run):.3f} ms/frame (engine, median of {args.iterations})")

    for label, denoiser in [("GuidedDenoiser", GuidedDenoiser(params, "gpu")), ("Denoiser", Denoiser(params, "gpu"))]:
        list(denoiser.export_stream(iter(noisy), np.uint8))  # compiles and allocates
        started = time.perf_counter()
        outputs = list(denoiser.export_stream(iter(noisy), np.uint8))
        elapsed = (time.perf_counter() - started) * 1000 / FRAMES
        quality = np.mean([psnr(clean[i], outputs[i] / 255) for i in OUTPUTS])
        print(f"{label}.export_stream: {elapsed:.1f} ms/frame (wall, {FRAMES} frames), {quality:.2f} dB")
    print(f"noisy: {np.mean([psnr(clean[i], noisy[i] / 255) for i in OUTPUTS]):.2f} dB")


if __name__ == "__main__":
    main()
