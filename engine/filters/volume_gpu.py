"""The volume filter on one or several GPUs: the kernels of ``kernels/volume.cu``, one slab filter per device.

``volume_tiled`` (separable box sums, a tile per block in shared memory) runs wherever its tile
fits the shared memory and its sums the registers (``tiled_layout``); ``volume_direct`` (each
thread a run of voxels' patches, summed directly) covers the rest: large search windows, many
channels with large patches. Kernels compile once per device and template instance through the
video filter's compile cache (``gpu.device.kernel_function``), with the radii (the tiled
kernel's search radii too), channels and options in the kernel's name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nlmeans_studio.engine.backend import cupy_module
from nlmeans_studio.engine.gpu.device import device_attributes, kernel_function
from nlmeans_studio.engine.gpu.slabs import SlabFilter
from nlmeans_studio.engine.volume.params import VolumeParams

BLOCK = (32, 8)  # volume_direct: threads along x and y of a plane
MEMORY_SHARE = 0.6  # of a device's free memory one slab's input and output may take
PATCH_REGISTERS = 96  # volume_direct: most registers a thread's run of patches may hold
LONGEST_RUN = 8
WARPS = 8  # volume_tiled: warps per block, each WARPS-th of the tile's rows
OFFSETS = 3  # volume_tiled: offsets (consecutive qy) a sweep over the patch planes takes at once
# volume_tiled: most registers a thread's own patch values and sums may hold, with WARPS warps a
# block (255 registers a thread in all) and with more (12: 168 in all); the study's tiles compile
# without spills at these.
TILED_REGISTERS, WIDE_TILED_REGISTERS = 136, 112
# (planes, rows, columns) a thread filters, best first: two columns a lane halve the warp
# shuffles a voxel (on the H100 the study's volume took 116-117 ms either way: 4 x 4 x 2 with 8
# warps, 4 x 4 x 1 with 16).
THREAD_TILES = ((4, 4, 2), (8, 4, 1), (4, 2, 2), (4, 4, 1), (4, 2, 1), (2, 2, 1), (2, 1, 1), (1, 1, 1))
# Tiles that run more warps a block where their sums and region fit (then WARPS): the 4 x 2 x 2
# tile of the centre-max weightings, 12 warps: 2-5 % faster on the study's volume on the H100
# (the 4 x 4 x 2 tile measured no faster with more warps of a smaller tile: its instructions rule).
TILE_WARPS = {(4, 2, 2): 12}
LOG2_E = 1.4426950408889634


def voxel_run(params: VolumeParams, channels: int) -> int:
    """volume_direct's RUN, the voxels along z one thread filters: as many as keep its patch planes in registers."""
    bz, by, bx = params.patch_radius
    fitting = PATCH_REGISTERS // (channels * (2 * by + 1) * (2 * bx + 1)) - 2 * bz
    return max(1, min(LONGEST_RUN, fitting))


def kernel_name(params: VolumeParams, channels: int) -> str:
    """volume_direct's template instance for these parameters."""
    bz, by, bx = params.patch_radius
    flags = f"{str(params.exponential).lower()}, {str(params.center_max).lower()}"
    return f"volume_direct<{bz}, {by}, {bx}, {channels}, {flags}, {voxel_run(params, channels)}>"


@dataclass(frozen=True)
class TiledLayout:
    """volume_tiled's tile: each thread filters ``planes`` x ``rows`` x ``columns`` voxels; a
    block of ``warps`` warps ``warps`` x ``rows`` rows and 32 ``columns`` - 2 Bx columns of
    ``planes`` planes, with ``shared_bytes`` of shared memory for the padded voxels they read;
    ``offsets`` offsets at a time."""

    planes: int
    rows: int
    columns: int
    warps: int
    shared_bytes: int
    offsets: int = OFFSETS

    def grid(self, shape: tuple[int, ...], patch_radius_x: int, first_plane: int = 0) -> tuple[int, int, int]:
        """Blocks along x, y, z for a (planes, rows, columns, ...) slab whose plane 0 is the
        volume's ``first_plane`` (the z tiles start at the volume's multiples of ``planes``)."""
        planes, rows, columns = shape[:3]
        width = 32 * self.columns - 2 * patch_radius_x
        depth = first_plane % self.planes + planes
        return (-(-columns // width), -(-rows // (self.warps * self.rows)), -(-depth // self.planes))


def tiled_layout(
    params: VolumeParams,
    channels: int,
    shared_limit: int,
    warps: int | None = None,
    tiles: Sequence[tuple[int, int, int]] = THREAD_TILES,
    offsets: int = OFFSETS,
) -> TiledLayout | None:
    """The first of ``tiles`` (planes, rows, columns) whose patch values and sums fit the
    register budget and whose block's region fits ``shared_limit`` bytes, with ``warps`` warps
    a block (None: TILE_WARPS's, else WARPS), or None (then volume_direct filters); its sweeps
    take ``offsets`` offsets at a time."""
    bz, by, _ = params.patch_radius
    pz, py, _ = params.pad
    ax = params.search_radius[2]
    sums = channels + 1 + int(params.center_max)  # numerators, denominator, u_min or the largest weight
    for planes, rows, columns in tiles:
        registers = (channels * (planes + 2 * bz) * (rows + 2 * by) + sums * planes * rows) * columns
        choices = (
            [warps] if warps is not None else dict.fromkeys((TILE_WARPS.get((planes, rows, columns), WARPS), WARPS))
        )
        for tile_warps in choices:
            shared = 4 * channels * (planes + 2 * pz) * (tile_warps * rows + 2 * py) * (32 * columns + 2 * ax)
            budget = TILED_REGISTERS if tile_warps <= WARPS else WIDE_TILED_REGISTERS
            if registers <= budget and shared <= shared_limit:
                return TiledLayout(planes, rows, columns, tile_warps, shared, offsets)
    return None


def tiled_kernel_name(params: VolumeParams, channels: int, layout: TiledLayout) -> str:
    """volume_tiled's template instance."""
    radii = ", ".join(str(r) for r in (*params.patch_radius, *params.search_radius))
    flags = f"{str(params.exponential).lower()}, {str(params.center_max).lower()}"
    return (
        f"volume_tiled<{radii}, {channels}, {flags}, {layout.planes}, {layout.rows}, {layout.columns}, {layout.warps}, "
        f"{layout.offsets}>"
    )


def tiled_root(params: VolumeParams, channels: int) -> np.float32:
    """volume_tiled's factor on the voxels: its square is u per unit of a patch's summed squared
    difference (in log2 units for exponential weights, which it weighs as 2^-u)."""
    scale = params.patch_sum_scale(channels) * (LOG2_E if params.exponential else 1.0)
    return np.float32(math.sqrt(scale))


def volume_launcher(
    cupy: Any,
    params: VolumeParams,
    shape: tuple[int, int, int, int],
    kind: str = "auto",
    layout: TiledLayout | None = None,
) -> tuple[str, Callable[..., None]]:
    """The kernel for a (planes, rows, columns, C) slab on the current device: its template
    instance and a function (padded slab on the GPU, output (planes, rows, columns, C), the
    volume's plane that is the slab's plane 0 (default 0)) -> None that launches it. ``kind``:
    "auto" (tiled where it fits), "tiled" or "direct"; ``layout`` the tiled kernel's, where not
    ``tiled_layout``'s."""
    planes, rows, columns, channels = shape
    sizes = tuple(np.int32(n) for n in (planes, rows, columns))
    if kind == "direct":
        layout = None
    elif layout is None:
        layout = tiled_layout(params, channels, device_attributes(cupy, cupy.cuda.Device().id)[0])
        if layout is None and kind == "tiled":
            raise ValueError("volume_tiled does not fit these parameters")
    if layout is not None:
        name = tiled_kernel_name(params, channels, layout)
        kernel = kernel_function(cupy, name, "volume.cu")
        kernel.max_dynamic_shared_size_bytes = layout.shared_bytes
        block, root, shared = (32 * layout.warps,), tiled_root(params, channels), layout.shared_bytes

        def run_tiled(source: Any, out: Any, first_plane: int = 0) -> None:
            grid = layout.grid(shape, params.patch_radius[2], first_plane)
            phase = np.int32(first_plane % layout.planes)
            kernel(grid, block, (source, out, *sizes, phase, root), shared_mem=shared)

        return name, run_tiled
    name = kernel_name(params, channels)
    kernel = kernel_function(cupy, name, "volume.cu")
    grid = (-(-columns // BLOCK[0]), -(-rows // BLOCK[1]), -(-planes // voxel_run(params, channels)))
    radii = tuple(np.int32(a) for a in params.search_radius)

    def run_direct(source: Any, out: Any, first_plane: int = 0) -> None:  # its sums do not depend on it
        kernel(grid, BLOCK, (source, out, *sizes, *radii, np.float32(params.patch_sum_scale(channels))))

    return name, run_direct


def filter_padded_gpu(
    cupy: Any, device: int, padded: np.ndarray, params: VolumeParams, first_plane: int = 0
) -> np.ndarray:
    """Filter the planes of a padded slab on ``device``: (planes, Y, X, C) float32 (as volume_cpu's).
    ``first_plane``: the volume's plane that is the slab's plane 0 (the tiled kernel sums a voxel
    in an order that depends on it modulo its tile, so that slabs equal one pass bit for bit)."""
    pad = params.pad
    planes, channels = padded.shape[0] - 2 * pad[0], padded.shape[1]
    rows, columns = padded.shape[2] - 2 * pad[1], padded.shape[3] - 2 * pad[2]
    with cupy.cuda.Device(device):
        _, launch = volume_launcher(cupy, params, (planes, rows, columns, channels))
        source = cupy.asarray(padded)
        out = cupy.empty((planes, rows, columns, channels), dtype=cupy.float32)
        launch(source, out, first_plane)
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
    filters = [lambda slab, p, first, device=device: filter_padded_gpu(cupy, device, slab, p, first) for device in ids]
    return filters, -(-planes // fitting)
