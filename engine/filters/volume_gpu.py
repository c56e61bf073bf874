"""The volume filter on one or several GPUs: the kernel of ``kernels/volume.cu``, one slab filter per device.

Kernels compile once per (device, Bz, By, Bx, C, weighting, centre weight) through the video
filter's compile cache (``gpu.device.kernel_function``), with those values in the kernel's name; the search
radii are run-time arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nlmeans_studio.engine.backend import cupy_module
from nlmeans_studio.engine.gpu.device import kernel_function
from nlmeans_studio.engine.gpu.slabs import SlabFilter
from nlmeans_studio.engine.volume.params import VolumeParams

BLOCK = (32, 8)  # threads along x and y of a plane
MEMORY_SHARE = 0.6  # of a device's free memory one slab's input and output may take
PATCH_REGISTERS = 96  # most registers a thread's run of patches may hold
LONGEST_RUN = 8


def voxel_run(params: VolumeParams, channels: int) -> int:
    """RUN, the voxels along z one thread filters: as many as keep its patch planes in registers."""
    bz, by, bx = params.patch_radius
    fitting = PATCH_REGISTERS // (channels * (2 * by + 1) * (2 * bx + 1)) - 2 * bz
    return max(1, min(LONGEST_RUN, fitting))


def kernel_name(params: VolumeParams, channels: int) -> str:
    """The kernel's template instance for these parameters."""
    bz, by, bx = params.patch_radius
    flags = f"{str(params.exponential).lower()}, {str(params.center_max).lower()}"
    return f"volume_direct<{bz}, {by}, {bx}, {channels}, {flags}, {voxel_run(params, channels)}>"


def filter_padded_gpu(cupy: Any, device: int, padded: np.ndarray, params: VolumeParams) -> np.ndarray:
    """Filter the planes of a padded slab on ``device``: (planes, Y, X, C) float32 (as volume_cpu's)."""
    pad = params.pad
    planes, channels = padded.shape[0] - 2 * pad[0], padded.shape[1]
    rows, columns = padded.shape[2] - 2 * pad[1], padded.shape[3] - 2 * pad[2]
    with cupy.cuda.Device(device):
        kernel = kernel_function(cupy, kernel_name(params, channels), "volume.cu")
        source = cupy.asarray(padded)
        out = cupy.empty((planes, rows, columns, channels), dtype=cupy.float32)
        grid = (-(-columns // BLOCK[0]), -(-rows // BLOCK[1]), -(-planes // voxel_run(params, channels)))
        az, ay, ax = params.search_radius
        scale = np.float32(params.patch_sum_scale(channels))
        kernel(
            grid,
            BLOCK,
            (source, out, np.int32(planes), np.int32(rows), np.int32(columns), *map(np.int32, (az, ay, ax)), scale),
        )
        return cupy.asnumpy(out)


def gpu_slab_filters(
    shape: tuple[int, int, int, int], params: VolumeParams, devices: Sequence[int] | None
) -> tuple[list[SlabFilter], int]:
    """One slab filter per device (the current one where ``devices`` is None), and the fewest
    slabs for which a slab fits the smallest free memory among them."""
    cupy = cupy_module()
    ids = [cupy.cuda.Device().id] if devices is None else list(devices)
    count = cupy.cuda.runtime.getDeviceCount()
    if any(not 0 <= d < count for d in ids):
        raise ValueError(f"devices must be GPU ids in 0..{count - 1}, got {list(ids)!r}")
    free = []
    for device in ids:
        with cupy.cuda.Device(device):
            cupy.get_default_memory_pool().free_all_blocks()
            free.append(cupy.cuda.runtime.memGetInfo()[0])
    planes, rows, columns, channels = shape
    pad = params.pad
    per_plane = 4 * channels * ((rows + 2 * pad[1]) * (columns + 2 * pad[2]) + rows * columns)
    fitting = int(min(free) * MEMORY_SHARE) // per_plane - 2 * pad[0]
    if fitting < 1:
        raise MemoryError(f"not one plane of this volume fits the GPU memory free ({min(free) / 2**30:.1f} GiB)")
    filters = [lambda slab, p, device=device: filter_padded_gpu(cupy, device, slab, p) for device in ids]
    return filters, -(-planes // fitting)
