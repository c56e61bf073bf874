"""The volume filter on one or several GPUs: the kernels of ``kernels/volume.cu``, one slab filter per device.

``volume_tiled`` (separable box sums, a tile per block in shared memory) runs wherever its tile
fits the shared memory and its sums the registers (``tiled_layout``); ``volume_direct`` (each
thread a run of voxels' patches, summed directly) covers the rest: large search windows, many
channels with large patches. Kernels compile once per device and template instance through the
video filter's compile cache (``gpu.device.kernel_function``), with the radii (the tiled
kernel's search radii too), channels and options in the kernel's name.
"""

from __future__ import annotations

import concurrent.futures
import functools
import math
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backend import GpuOutOfMemoryError, cupy_module
from ..gpu.device import device_attributes, kernel_function, pinned_array
from .checks import non_finite_error
from .params import VolumeParams
from .slabs import Finished, mirrored_indices, split_range

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
# shuffles a voxel (4 x 4 x 2 with 8 warps measured as fast as 4 x 4 x 1 with 16 on the study's
# volume: docs/bench/2026-11-26-figures-from-docstrings.md).
THREAD_TILES = ((4, 4, 2), (8, 4, 1), (4, 2, 2), (4, 4, 1), (4, 2, 1), (2, 2, 1), (2, 1, 1), (1, 1, 1))
# Tiles that run more warps a block where their sums and region fit (then WARPS): the 4 x 2 x 2
# tile of the centre-max weightings, 12 warps, measured faster on the study's volume (the 4 x 4 x 2
# tile measured no faster with more warps of a smaller tile: its instructions rule).
TILE_WARPS = {(4, 2, 2): 12}
# The strip's one-column tile (the slab's last columns, where they fit its width): 16 warps where
# they fit (4 a scheduler; as the whole layout on the study's volume 4 x 4 x 1 with 16 measured
# only a little slower than 4 x 4 x 2 with 8, though it computes 11 % more instructions).
STRIP_WARPS = 16
LOG2_E = 1.4426950408889634
HOST_TO_DEVICE, DEVICE_TO_HOST = 1, 2  # cudaMemcpyKind


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
    """volume_tiled's tile: each thread filters ``planes`` x ``rows`` x ``columns`` voxels.

    A block of ``warps`` warps ``warps`` x ``rows`` rows and 32 ``columns`` - 2 Bx columns of
    ``planes`` planes, with ``shared_bytes`` of shared memory for the padded voxels they read;
    ``offsets`` offsets at a time. ``strip``: the one-column tile that filters a slab's last columns
    where they fit its width (None: whole tiles of this one cover every column).
    """

    planes: int
    rows: int
    columns: int
    warps: int
    shared_bytes: int
    offsets: int = OFFSETS
    strip: TiledLayout | None = None

    def width(self, patch_radius_x: int) -> int:
        """Return the output columns of a block."""
        return 32 * self.columns - 2 * patch_radius_x

    def launches(
        self, shape: tuple[int, ...], patch_radius_x: int, first_plane: int = 0
    ) -> list[tuple[TiledLayout, int, tuple[int, int, int]]]:
        """(tile, first column, blocks along x, y, z) of each launch over a (planes, rows, columns, ...) slab.

        The slab's plane 0 is the volume's ``first_plane`` (the z tiles start at the volume's
        multiples of ``planes``): this tile's blocks, then the strip's where the columns left after
        at least one whole tile fit its width (else this tile covers them).
        """
        planes, rows, columns = shape[:3]
        width = self.width(patch_radius_x)
        whole, rest = divmod(columns, width)
        parts = [(self, 0, -(-columns // width))]
        if self.strip is not None and whole > 0 and 0 < rest <= self.strip.width(patch_radius_x):
            parts = [(self, 0, whole), (self.strip, whole * width, 1)]
        depth = first_plane % self.planes + planes
        return [
            (tile, first, (blocks, -(-rows // (tile.warps * tile.rows)), -(-depth // tile.planes)))
            for tile, first, blocks in parts
        ]


def tiled_layout(
    params: VolumeParams,
    channels: int,
    shared_limit: int,
    warps: int | None = None,
    tiles: Sequence[tuple[int, int, int]] = THREAD_TILES,
    offsets: int = OFFSETS,
) -> TiledLayout | None:
    """Return the first of ``tiles`` (planes, rows, columns) that fits the register budget and shared memory.

    Its patch values and sums must fit the register budget and its block's region ``shared_limit``
    bytes, with ``warps`` warps a block (None: TILE_WARPS's, else WARPS), or None (then
    volume_direct filters); its sweeps take ``offsets`` offsets at a time. A tile of several columns
    a lane gets the one-column tile of its planes and rows, where that fits, as its ``strip``.
    """
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
                strip = None
                if columns > 1:  # STRIP_WARPS warps where they fit, else as many as the tile takes alone
                    narrow = [(planes, rows, 1)]
                    strip = tiled_layout(params, channels, shared_limit, STRIP_WARPS, narrow, offsets)
                    strip = strip or tiled_layout(params, channels, shared_limit, None, narrow, offsets)
                return TiledLayout(planes, rows, columns, tile_warps, shared, offsets, strip)
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
    """volume_tiled's factor on the voxels.

    Its square is u per unit of a patch's summed squared difference (in log2 units for exponential
    weights, which it weighs as 2^-u).
    """
    scale = params.patch_sum_scale(channels) * (LOG2_E if params.exponential else 1.0)
    return np.float32(math.sqrt(scale))


def volume_launcher(
    cupy: Any,
    params: VolumeParams,
    shape: tuple[int, int, int, int],
    kind: str = "auto",
    layout: TiledLayout | None = None,
) -> tuple[str, Callable[..., None]]:
    """Return the kernel for a (planes, rows, columns, C) slab on the current device.

    Its template instance (the tiled kernel's, joined by " + " to its strip's where the slab has
    one) and a function (padded slab on the GPU, output (planes, rows, columns, C), the volume's
    plane that is the slab's plane 0 (default 0)) -> None that launches it. ``kind``: "auto" (tiled
    where it fits), "tiled" or "direct"; ``layout`` the tiled kernel's, where not
    ``tiled_layout``'s.
    """
    planes, rows, columns, channels = shape
    sizes = tuple(np.int32(n) for n in (planes, rows, columns))
    if kind == "direct":
        layout = None
    elif layout is None:
        layout = tiled_layout(params, channels, device_attributes(cupy, cupy.cuda.Device().id)[0])
        if layout is None and kind == "tiled":
            raise ValueError("volume_tiled does not fit these parameters")
    if layout is not None:
        root, kernels = tiled_root(params, channels), {}
        for tile, _, _ in layout.launches(shape, params.patch_radius[2]):  # the same tiles for every first plane
            kernels[tile] = kernel_function(cupy, tiled_kernel_name(params, channels, tile), "volume.cu")
            kernels[tile].max_dynamic_shared_size_bytes = tile.shared_bytes
        name = " + ".join(tiled_kernel_name(params, channels, tile) for tile in kernels)

        def run_tiled(source: Any, out: Any, first_plane: int = 0) -> None:
            for tile, first_column, grid in layout.launches(shape, params.patch_radius[2], first_plane):
                arguments = (source, out, *sizes, np.int32(first_column), np.int32(first_plane % tile.planes), root)
                kernels[tile](grid, (32 * tile.warps,), arguments, shared_mem=tile.shared_bytes)

        return name, run_tiled
    name = kernel_name(params, channels)
    kernel = kernel_function(cupy, name, "volume.cu")
    grid = (-(-columns // BLOCK[0]), -(-rows // BLOCK[1]), -(-planes // voxel_run(params, channels)))
    radii = tuple(np.int32(a) for a in params.search_radius)

    def run_direct(source: Any, out: Any, first_plane: int = 0) -> None:  # its sums do not depend on it
        kernel(grid, BLOCK, (source, out, *sizes, *radii, np.float32(params.patch_sum_scale(channels))))

    return name, run_direct


SLAB_PADDING = r"""
const int column = i % padded_width;
const ptrdiff_t line = i / padded_width;  // (plane, channel, row) of the padded slab
const int row = line % padded_height;
const ptrdiff_t layer = line / padded_height;  // (plane, channel)
const int channel = layer % channels;
const ptrdiff_t voxel = (ptrdiff_t(planes[layer / channels]) * height + rows[row]) * width + columns[column];
padded = source[voxel * channels + channel];
if (!isfinite(padded)) atomicAdd(&non_finite[0], 1);  // denoise_volume checks for these on the GPU
"""
STAGING_BYTES = 32 << 20  # each of a device's two pinned staging buffers (whole planes, at least one)
# Host threads that copy between the volume and the staging buffers, shared by the devices: one
# thread copies more slowly than a GPU filters the study's volume (0.5 GB in and out).
COPY_THREADS = min(8, os.cpu_count() or 1)
COPY_THREAD_NAME = "nlmeans-copy"
FEED_THREAD_NAME = "nlmeans-slab-feed"  # a device pipeline's, for one call
# Output slabs on a device: the GPU may filter slabs k + 1 and k + 2 while slab k is copied out.
OUTPUT_SLOTS = 3


@functools.cache
def _copiers() -> concurrent.futures.ThreadPoolExecutor:
    """Return the copy threads, made at the first GPU volume call and kept, idle, for the process.

    Made for each call they cost more than they saved (a new thread waits for the GIL to start;
    docs/bench/2026-11-23-eleventh-session-two-gpus.md).
    """
    return concurrent.futures.ThreadPoolExecutor(COPY_THREADS, thread_name_prefix=COPY_THREAD_NAME)


def copy_planes(target: np.ndarray, source: np.ndarray) -> None:
    """``np.copyto(target, source)`` for arrays of planes (axis 0), in runs of planes on COPY_THREADS threads.

    NumPy's copies release the GIL.
    """
    runs = split_range(len(target), min(COPY_THREADS, len(target)))
    if len(runs) == 1:
        np.copyto(target, source)
        return
    for done in [_copiers().submit(np.copyto, target[a:b], source[a:b]) for a, b in runs]:
        done.result()


@functools.cache
def _slab_padding(cupy: Any) -> Any:
    """Return the element-wise kernel that gathers a padded (Zp, C, Yp, Xp) slab from its source planes.

    The source planes are (planes, Y, X, C), gathered by three index maps (compiled once per device
    by CuPy).
    """
    return cupy.ElementwiseKernel(
        "raw float32 source, raw int32 planes, raw int32 rows, raw int32 columns, int32 height, int32 width, "
        "int32 channels, int32 padded_height, int32 padded_width",
        "float32 padded, raw int32 non_finite",
        SLAB_PADDING,
        "volume_slab_padding",
    )


def source_planes(start: int, stop: int, depth: int, pad_z: int) -> tuple[int, int, np.ndarray]:
    """Return the volume's planes [low, high) the output planes [start, stop) read, and the padded ones' places.

    For each padded plane, its index among them (mirrored at the volume's ends as ``padded_volume``
    mirrors).
    """
    low, high = max(0, start - pad_z), min(depth, stop + pad_z)
    return low, high, (mirrored_indices(start - pad_z, stop + pad_z, depth) - low).astype(np.int32)


def pad_slab_gpu(
    cupy: Any, source: Any, planes: Any, pad: tuple[int, int, int], out: Any = None, non_finite: Any = None
) -> Any:
    """Return the padded slab (len(planes), C, Y + 2 py, X + 2 px) that ``padded_volume`` makes, built on the GPU.

    Built from ``source`` (its (n, Y, X, C) float32 planes, contiguous) and ``planes`` (int32, each
    padded plane's index in ``source``, as ``source_planes`` gives), into ``out`` where given.
    ``non_finite`` (one int32 on the device), where given, grows by the NaN and infinite values read
    (a voxel may be read more than once: the halos, the mirrors).
    """
    _, rows, columns, channels = source.shape
    padded_rows, padded_columns = rows + 2 * pad[1], columns + 2 * pad[2]
    if out is None:
        out = cupy.empty((len(planes), channels, padded_rows, padded_columns), dtype=cupy.float32)
    if non_finite is None:
        non_finite = cupy.zeros(1, dtype=cupy.int32)
    row_map = cupy.asarray(mirrored_indices(-pad[1], rows + pad[1], rows), dtype=cupy.int32)
    column_map = cupy.asarray(mirrored_indices(-pad[2], columns + pad[2], columns), dtype=cupy.int32)
    sizes = (rows, columns, channels, padded_rows, padded_columns)
    _slab_padding(cupy)(source.reshape(-1), planes, row_map, column_map, *(np.int32(n) for n in sizes), out, non_finite)
    return out


class SlabPipeline:
    """One device's slabs of a (Z, Y, X, C) float32 volume, several in flight.

    A feeder thread of its own uploads each slab's own planes and its z halo (the volume's
    planes [low, high) of ``source_planes``) unpadded, in chunks through two pinned staging
    buffers on the upload stream, into one of two input slabs, and queues it on the compute
    stream, which mirrors it into the padded slab (``pad_slab_gpu``) and filters it into one of
    OUTPUT_SLOTS output slabs. The caller's thread copies the outputs back in order, through two
    other staging buffers on the download stream. So while the GPU filters slab k, the host
    stages slab k + 1 and copies slab k - 1 out at once, and the GPU waits for neither (one thread
    doing both in turn, with two output slabs, left it idle wherever a thick slab's download came
    before a thin slab's upload and kernel). Buffers are made once for the thickest slab. The
    padding counts the NaN and infinite values it reads: a slab that had any raises
    ``non_finite_error`` (so that ``denoise_volume`` needs no pass over the volume on the host to
    check it).
    """

    def __init__(self, cupy: Any, device: int, data: np.ndarray, params: VolumeParams, thickest: int) -> None:
        """Buffers on ``device`` for ``data`` (Z, Y, X, C) float32 in slabs of at most ``thickest`` planes."""
        self.cupy, self.device, self.data, self.params = cupy, device, data, params
        _, rows, columns, channels = data.shape
        pz, py, px = params.pad
        self.plane = rows * columns * channels  # floats a plane
        padded_plane = channels * (rows + 2 * py) * (columns + 2 * px)
        self.chunk = max(1, STAGING_BYTES // (4 * self.plane))  # planes a staging buffer holds
        with cupy.cuda.Device(device):
            self.compute, self.uploads, self.downloads = (cupy.cuda.Stream(non_blocking=True) for _ in range(3))
            self.inputs = [cupy.empty((thickest + 2 * pz) * self.plane, cupy.float32) for _ in range(2)]
            self.padded = cupy.empty((thickest + 2 * pz) * padded_plane, cupy.float32)
            self.outputs = [cupy.empty(thickest * self.plane, cupy.float32) for _ in range(OUTPUT_SLOTS)]
            self.consumed = [cupy.cuda.Event(disable_timing=True) for _ in range(2)]  # an input's padding done
            self.non_finite = cupy.zeros(1, cupy.int32)  # NaN and infinite values the padding read
            size = self.chunk * self.plane
            self.staging = {  # page-locked, so that the copies run asynchronously; each with its last copy's event
                stream: [
                    (
                        pinned_array(cupy, (size,), np.float32),
                        cupy.cuda.Event(disable_timing=True),
                    )
                    for _ in range(2)
                ]
                for stream in (self.uploads, self.downloads)
            }

    def run(self, ranges: Sequence[tuple[int, int]], output: np.ndarray, finished: Finished, origin: int = 0) -> None:
        """Filter the output planes of ``ranges`` into ``output``, calling ``finished(start, stop)`` after each slab.

        ``output``'s plane 0 is the volume's plane ``origin``.
        """
        queued = [concurrent.futures.Future() for _ in ranges]  # each slab's "filtered" event
        free = threading.Semaphore(OUTPUT_SLOTS)  # output slots copied out (or not used yet)
        cancelled = threading.Event()

        def feed() -> None:  # each slab uploaded, then queued to be padded and filtered
            try:
                with self.cupy.cuda.Device(self.device):
                    for index, (start, stop) in enumerate(ranges):
                        uploaded = self._upload(index % 2, start, stop)
                        free.acquire()
                        if cancelled.is_set():
                            return
                        queued[index].set_result(self._filter(index, start, stop, uploaded))
            except BaseException as error:  # the caller raises it
                for future in queued:
                    if not future.done():
                        future.set_exception(error)

        with self.cupy.cuda.Device(self.device):
            try:
                with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=FEED_THREAD_NAME) as feeder:
                    feeder.submit(feed)
                    try:
                        for index, planes in enumerate(ranges):
                            self._deliver(index, planes, queued[index].result(), output, origin, finished)
                            free.release()
                    finally:
                        cancelled.set()
                        free.release()  # a feeder waiting for a slot sees it cancelled
            finally:
                for stream in (self.uploads, self.compute, self.downloads):
                    stream.synchronize()  # nothing of the call left running

    def _filter(self, index: int, start: int, stop: int, uploaded: Any) -> Any:
        """Queue slab ``index`` to be padded and filtered into its output slot; return the event that marks it filtered.

        The slab is [start, stop), uploaded into input slot index mod 2 once ``uploaded``.
        """
        cupy, params = self.cupy, self.params
        depth, rows, columns, channels = self.data.shape
        low, high, planes = source_planes(start, stop, depth, params.pad[0])
        source = self.inputs[index % 2]
        pad = params.pad
        shape = (stop - start, rows, columns, channels)
        padded_shape = (len(planes), channels, rows + 2 * pad[1], columns + 2 * pad[2])
        self.compute.wait_event(uploaded)
        with self.compute:
            padded = self.padded[: math.prod(padded_shape)].reshape(padded_shape)
            source_shape = (high - low, rows, columns, channels)
            pad_slab_gpu(
                cupy,
                source[: math.prod(source_shape)].reshape(source_shape),
                cupy.asarray(planes),
                pad,
                padded,
                self.non_finite,
            )
            self.consumed[index % 2].record(self.compute)
            _, launch = volume_launcher(cupy, params, shape)
            launch(padded, self.outputs[index % OUTPUT_SLOTS][: math.prod(shape)].reshape(shape), start)
            filtered = cupy.cuda.Event(disable_timing=True)
            filtered.record(self.compute)
        return filtered

    def _upload(self, slot: int, start: int, stop: int) -> Any:
        """Copy the volume's planes slab [start, stop) reads into input ``slot`` on the upload stream.

        Once the slot's last padding is done, a staging buffer's chunk at a time (one staged while
        the other is on the bus); the event that marks them uploaded is returned.
        """
        _, rows, columns, channels = self.data.shape
        low, high, _ = source_planes(start, stop, len(self.data), self.params.pad[0])
        self.uploads.wait_event(self.consumed[slot])
        pointer = self.inputs[slot].data.ptr
        for index, first in enumerate(range(low, high, self.chunk)):
            last = min(high, first + self.chunk)
            staging, staged = self.staging[self.uploads][index % 2]
            staged.synchronize()  # its previous copy is done
            view = staging[: (last - first) * self.plane]
            copy_planes(view.reshape(last - first, rows, columns, channels), self.data[first:last])
            offset = 4 * (first - low) * self.plane
            self.cupy.cuda.runtime.memcpyAsync(
                pointer + offset, view.ctypes.data, view.nbytes, HOST_TO_DEVICE, self.uploads.ptr
            )
            staged.record(self.uploads)
        uploaded = self.cupy.cuda.Event(disable_timing=True)
        uploaded.record(self.uploads)
        return uploaded

    def _deliver(
        self,
        index: int,
        planes: tuple[int, int],
        filtered: Any,
        output: np.ndarray,
        origin: int,
        finished: Finished,
    ) -> None:
        """Copy slab ``index`` (output ``planes``) into ``output`` once ``filtered``, a staging chunk at a time.

        A staging buffer's chunk at a time, the next chunk on the bus while one is copied out; then
        raise ``non_finite_error`` if its padding (or an earlier one) read NaN or infinite values,
        or report it finished.
        """
        start, stop = planes
        target = output[start - origin : stop - origin]
        self.downloads.wait_event(filtered)
        chunks = list(range(0, len(target), self.chunk))
        pointer = self.outputs[index % OUTPUT_SLOTS].data.ptr

        def start_copy(number: int) -> None:
            first = chunks[number]
            staging, staged = self.staging[self.downloads][number % 2]
            view = staging[: (min(len(target), first + self.chunk) - first) * self.plane]
            self.cupy.cuda.runtime.memcpyAsync(
                view.ctypes.data, pointer + 4 * first * self.plane, view.nbytes, DEVICE_TO_HOST, self.downloads.ptr
            )
            staged.record(self.downloads)

        start_copy(0)
        for number, first in enumerate(chunks):
            if number + 1 < len(chunks):
                start_copy(number + 1)
            staging, staged = self.staging[self.downloads][number % 2]
            staged.synchronize()
            last = min(len(target), first + self.chunk)
            copy_planes(target[first:last], staging[: (last - first) * self.plane].reshape(target[first:last].shape))
        if self.non_finite.get()[0]:  # padded (and filtered) before its download
            raise non_finite_error(self.data)
        finished(start, stop)


def gpu_slab_filters(
    shape: tuple[int, int, int, int], params: VolumeParams, devices: Sequence[int] | None
) -> tuple[list[Callable[[np.ndarray, VolumeParams, int], SlabPipeline]], int]:
    """One slab filter per device (the current one where ``devices`` is None).

    Given the (Z, Y, X, C) float32 volume, the parameters and the thickest slab's planes, it makes
    the device's ``SlabPipeline``; and the fewest slabs for which a device's buffers (two input
    slabs, the padded slab, OUTPUT_SLOTS output slabs) fit the smallest free memory among them.
    """
    cupy = cupy_module()
    ids = [cupy.cuda.Device().id] if devices is None else list(devices)
    count = cupy.cuda.runtime.getDeviceCount()
    if any(not 0 <= d < count for d in ids):
        raise ValueError(f"devices must be GPU ids in 0..{count - 1}, got {list(ids)!r}")
    free = []
    for device in ids:
        with cupy.cuda.Device(device):  # the pool's free blocks count as free, kept for the buffers
            free.append(cupy.cuda.runtime.memGetInfo()[0] + cupy.get_default_memory_pool().free_bytes())
    planes, rows, columns, channels = shape
    pz, py, px = params.pad
    halo_plane = 4 * channels * (2 * rows * columns + (rows + 2 * py) * (columns + 2 * px))  # inputs, padded
    per_plane = halo_plane + 4 * channels * OUTPUT_SLOTS * rows * columns  # and the outputs
    fitting = (int(min(free) * MEMORY_SHARE) - 2 * pz * halo_plane) // per_plane
    if fitting < 1:
        raise GpuOutOfMemoryError(
            f"not one plane of this volume fits the GPU memory free ({min(free) / 2**30:.1f} GiB); close other GPU "
            "programs, crop the volume or use the CPU backend"
        )
    filters = [functools.partial(SlabPipeline, cupy, device) for device in ids]
    return filters, -(-planes // fitting)
