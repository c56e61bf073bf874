"""Frames per second of the fused GPU filter on a 4K clip held in memory, on one GPU and dealt
over several in chunks (engine/video/several_gpus.py), with a window that makes the filter the bottleneck.

    python scripts/bench_video_devices.py --frames 256 --devices 0 1 2 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from nlmeans_studio.engine import NLMParams
from nlmeans_studio.engine.video.several_gpus import DevicesDenoiser


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=256, help="enough for several chunks a device")
    parser.add_argument("--devices", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--search-radius", type=int, default=8)
    parser.add_argument("--temporal", type=int, default=2, help="Dp = Df")
    arguments = parser.parse_args()
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (2160, 3840, 3), dtype=np.uint8)
    frames = [np.roll(base, 3 * t, axis=1) for t in range(arguments.frames)]
    params = NLMParams(h=20.0, search_radius=arguments.search_radius, frames_past=arguments.temporal,
                       frames_future=arguments.temporal)  # fmt: skip
    print(f"4K RGB uint8, A = {params.search_radius}, B = {params.patch_radius}, Dp = Df = {arguments.temporal}, "
          f"{len(frames)} frames from memory")  # fmt: skip
    results = {}
    for devices in ([arguments.devices[0]], arguments.devices):
        warm = 2 * arguments.temporal + 2
        list(DevicesDenoiser(params, devices, chunk=warm).export_stream(frames[: warm * len(devices)]))  # every device
        denoiser = DevicesDenoiser(params, devices)
        start = time.perf_counter()
        results[len(devices)] = list(denoiser.export_stream(frames))
        seconds = time.perf_counter() - start
        chunk = denoiser.chunk_size(frames[0])
        print(f"GPUs {devices}: {len(frames) / seconds:.2f} fps ({seconds:.2f} s, chunks of {chunk} frames)")
    one, several = np.array(results[1], dtype=np.int16), np.array(results[len(arguments.devices)], dtype=np.int16)
    print(f"{len(arguments.devices)} GPUs vs one: max difference {np.abs(one - several).max()} levels")


if __name__ == "__main__":
    main()
