"""Times the volume filter on the study's setting (DESIGN.md §6): a random float32 volume, search
11^3, patch 3^3, exponential weights, on one GPU and on several (``--devices 0 1``).

Prints the kernel's GPU time on one device (CUDA events, the padded slab already on the GPU),
the whole ``denoise_volume`` call (host padding, copies, slabs) per device set, the ratio to the
arithmetic floor (16 FLOP per voxel per offset pair at the GPU's fp32 peak) and, with several
devices, whether their result equals one GPU's.

    python scripts/bench_volume.py --size 512 --devices 0 1 --peak-tflops 63
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from nlmeans_studio.engine import denoise_volume
from nlmeans_studio.engine.filters.volume_gpu import BLOCK, gpu_slab_filters, kernel_name, voxel_run
from nlmeans_studio.engine.gpu.slabs import filter_in_slabs
from nlmeans_studio.engine.volume.denoise import padded_volume
from nlmeans_studio.engine.volume.params import VolumeParams


def kernel_seconds(cupy, volume: np.ndarray, params: VolumeParams, repeats: int) -> float:
    """Best GPU time of the kernel over the whole volume, its input already on the device."""
    from nlmeans_studio.engine.gpu.device import kernel_function

    data = volume[..., np.newaxis]
    planes, rows, columns, channels = data.shape
    source = cupy.asarray(padded_volume(data, params.pad))
    out = cupy.empty(data.shape, dtype=cupy.float32)
    kernel = kernel_function(cupy, kernel_name(params, channels), "volume.cu")
    grid = (-(-columns // BLOCK[0]), -(-rows // BLOCK[1]), -(-planes // voxel_run(params, channels)))
    arguments = (source, out, *(np.int32(n) for n in (planes, rows, columns, *params.search_radius)))
    arguments += (np.float32(params.patch_sum_scale(channels)),)
    best = math.inf
    for _ in range(repeats + 1):  # the first compiles and warms up
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        kernel(grid, BLOCK, arguments)
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--devices", type=int, nargs="*", default=[0])
    parser.add_argument("--peak-tflops", type=float, default=63.0, help="the GPU's fp32 peak (H100 SXM: about 63)")
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    import cupy

    size = arguments.size
    volume = np.random.default_rng(0).random((size, size, size), dtype=np.float32)
    options = dict(h=0.3, patch_radius=1, search_radius=5, weighting="exponential")
    params = VolumeParams.checked(options["h"], 1, 5, "exponential", "one")
    pairs = (11**3 - 1) // 2
    floor = 16 * size**3 * pairs / (arguments.peak_tflops * 1e12)
    print(f"{cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {size}^3, search 11^3, patch 3^3")
    print(f"floor: {floor * 1e3:.1f} ms (16 FLOP x {pairs} pairs per voxel at {arguments.peak_tflops:g} TFLOP/s)")
    seconds = kernel_seconds(cupy, volume, params, arguments.repeats)
    print(f"kernel, one GPU: {seconds * 1e3:.1f} ms = {seconds / floor:.1f} x the floor")
    results = {}
    padded = padded_volume(volume[..., np.newaxis], params.pad)
    for devices in ([arguments.devices[0]], arguments.devices) if len(arguments.devices) > 1 else ([0],):
        denoise_volume(volume[:32], backend="gpu", devices=devices, **options)  # compile on each device
        filters, _ = gpu_slab_filters((*volume.shape, 1), params, devices)
        best = math.inf
        for _ in range(arguments.repeats):
            start = time.perf_counter()
            filter_in_slabs(padded, (*volume.shape, 1), params, len(devices), filters)
            best = min(best, time.perf_counter() - start)
        print(f"slabs on GPUs {devices}: {best:.3f} s (copies to and from the GPUs included, host padding not)")
        start = time.perf_counter()
        results[len(devices)] = denoise_volume(volume, backend="gpu", devices=devices, **options)
        print(f"denoise_volume on GPUs {devices}: {time.perf_counter() - start:.3f} s (host padding included)")
    if len(results) > 1:
        equal = np.array_equal(results[1], results[len(arguments.devices)])
        print(f"{len(arguments.devices)} GPUs equal one GPU bit for bit: {equal}")


if __name__ == "__main__":
    main()
