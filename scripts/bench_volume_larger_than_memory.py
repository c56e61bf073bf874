"""Slab by slab on one GPU: a float32 volume larger than the GPU's memory (issue 22).

A 1600 x 2048 x 2048 random volume (25 GiB; its input and output slabs need twice that on the
GPU) through ``denoise_volume``, which splits it into the fewest slabs that fit; three planes
are checked against ``denoise_volume_slice``. Needs about 90 GiB of host memory.

    python3 scripts/bench_volume_larger_than_memory.py
"""

import argparse
import time

import numpy as np

from nlmeans_studio.engine import denoise_volume, denoise_volume_slice
from nlmeans_studio.engine.backend import cupy_module
from nlmeans_studio.engine.volume.filter_gpu import gpu_slab_filters
from nlmeans_studio.engine.volume.params import VolumeParams


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # no options: --help only
    cupy = cupy_module()
    free, total = cupy.cuda.runtime.memGetInfo()
    shape = (1600, 2048, 2048)
    settings = dict(h=0.5, patch_radius=1, search_radius=2, weighting="exponential")
    started = time.perf_counter()
    volume = np.empty(shape, np.float32)
    rng = np.random.default_rng(0)
    for z in range(0, shape[0], 100):
        volume[z : z + 100] = rng.standard_normal((min(100, shape[0] - z), *shape[1:]), dtype=np.float32)
    print(
        f"volume {shape}, {volume.nbytes / 2**30:.1f} GiB float32;"
        f" GPU {total / 2**30:.1f} GiB, {free / 2**30:.1f} free; made in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    params = VolumeParams.checked(settings["h"], 1, 2, "exponential", "one")
    _, slabs = gpu_slab_filters((*shape, 1), params, None)
    print(f"fewest slabs that fit: {slabs}", flush=True)
    started = time.perf_counter()
    result = denoise_volume(volume, backend="gpu", **settings)
    print(f"denoise_volume: {time.perf_counter() - started:.1f} s", flush=True)
    for index in (0, 777, shape[0] - 1):
        plane = denoise_volume_slice(volume, index, backend="gpu", **settings)
        print(f"plane {index}: max |whole - slice| = {np.abs(result[index] - plane).max():.3g}", flush=True)


if __name__ == "__main__":
    main()
