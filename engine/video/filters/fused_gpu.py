"""The fused GPU filter: the whole window in one launch of the kernel of ``kernels/nlm.cu``."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...backend import cupy_module
from ...frames import integer_scale
from ...gpu.device import CUDA_TYPES, DeviceFrame, DeviceFrames, device_attributes, kernel_function
from ..params import NLMParams
from .fused_layout import (
    FUSED_THREADS,
    FusedLayout,
    fused_grid,
    fused_layout,
    patch_scale,
)


def fused_kernel_name(
    params: NLMParams,
    channels: int,
    layout: FusedLayout,
    *,
    packed: bool,
    guided: bool = False,
    out_dtype: Any = np.float32,
    min_blocks: int = 1,
) -> str:
    """nlm_fused's template instance (``kernels/nlm.cu``) for these parameters and ``layout``.

    ``packed``: distances on 8-bit frames' packed words; ``guided``: distances on a guide
    window's frames; ``out_dtype``: float32, uint8 or uint16 output; ``min_blocks``: blocks per
    multiprocessor the registers must allow. The launch and the tests that run the kernel on
    the CPU both take their name from here.
    """
    options = (
        params.color_transform is not None,
        packed,
        params.weighting == "exponential",
        params.center_weight == "max",
    )
    flags = ", ".join(str(option).lower() for option in options)
    return (
        f"nlm_fused<{params.patch_radius}, {params.search_radius}, {channels}, {layout.template_arguments}, "
        f"{flags}, {CUDA_TYPES[np.dtype(out_dtype)]}, {min_blocks}{', true' if guided else ''}>"
    )


class _ThreadScratch(threading.local):
    """Each thread's launch buffers.

    A thread's launches are ordered on its stream, and no two threads share these, so calls from
    several threads (each on its own stream or all on the default one) never write each other's
    partial sums.
    """

    def __init__(self) -> None:
        self.pointer_arrays: dict[tuple[int, ...], Any] = {}
        self.split_buffers: tuple[Any, Any] | None = None  # (partials, arrivals)


class FusedGpuFilter:
    """Denoises windows of device frames with the fused kernel, on the current device.

    Its frames are ``DeviceFrame``s (``upload``: each crosses the bus once, in its own dtype);
    outputs are interleaved (H, W, C) device arrays. Launch buffers are kept between calls, per
    thread (one filter may serve several threads at once). A guide window (KNLMeansCL's rclip)
    gives the distances: the kernel's guided instance, which loads Z = G X from the guide's
    planes and Y from the frames' (never the packed path).
    """

    backend, method = "gpu", "fused"

    def __init__(self, cupy: Any = None) -> None:
        self.cupy = cupy = cupy if cupy is not None else cupy_module()
        self.frames = DeviceFrames(cupy)
        self.upload = self.frames.upload
        self.download = cupy.asnumpy
        self.as_frame = self.frames.from_output
        self._scratch = _ThreadScratch()

    def _pointers(self, arrays: list[Any]) -> Any:
        """Return the arrays' device addresses as a device array, kept per window (a ring repeats them)."""
        key = tuple(array.data.ptr for array in arrays)
        pointer_arrays = self._scratch.pointer_arrays
        pointers = pointer_arrays.get(key)
        if pointers is None:
            if len(pointer_arrays) > 256:
                pointer_arrays.clear()
            pointers = pointer_arrays[key] = self.cupy.asarray(np.array(key, dtype=np.uint64))
        return pointers

    def _split_buffers_for(self, floats: int, counters: int) -> tuple[Any, Any]:
        """Partial sums and arrival counters for split tiles, kept from launch to launch.

        The kernel sets the counters back to zero, and one thread's launches on its stream never
        overlap.
        """
        buffers = self._scratch.split_buffers
        if buffers is None or buffers[0].size < floats or buffers[1].size < counters:
            buffers = self._scratch.split_buffers = (
                self.cupy.empty(floats, dtype=self.cupy.float32),
                self.cupy.zeros(counters, dtype=self.cupy.int32),
            )
        return buffers

    def __call__(
        self,
        frames: Sequence[DeviceFrame],
        center: int,
        params: NLMParams,
        guide: Sequence[DeviceFrame] | None = None,
        *,
        out_dtype: Any = np.float32,
        out: Any = None,
    ) -> Any:
        """Denoise ``frames[center]`` searching ``frames``, with the distances from ``guide`` where given.

        ``guide``: the same window of another clip.

        Returns the output as interleaved (H, W, C) on the GPU, of ``out_dtype`` (or ``out``'s
        dtype): float32, or uint8 / uint16 scaled to their full range, rounded and clamped.
        """
        cupy = self.cupy
        channels, height, width = frames[center].shape
        out_dtype = np.dtype(out.dtype if out is not None else out_dtype)
        radius, search = params.patch_radius, params.search_radius
        transformed, guided = params.color_transform is not None, guide is not None
        packed = not transformed and not guided and all(frame.packed is not None for frame in frames)
        per_block, per_multiprocessor, multiprocessors = device_attributes(cupy, cupy.cuda.Device().id)
        layout = fused_layout(radius, search, channels, transformed or guided, per_block, packed)
        min_blocks = 2 if 2 * layout.shared_bytes <= per_multiprocessor else 1
        name = fused_kernel_name(
            params, channels, layout, packed=packed, guided=guided, out_dtype=out_dtype, min_blocks=min_blocks
        )
        kernel = kernel_function(cupy, name)
        kernel.max_dynamic_shared_size_bytes = layout.shared_bytes
        with self.frames.out_of_memory_as_error(frames[center].shape):
            matrix = params.color_transform
            transform = np.uint64(0) if matrix is None else self.frames.transform(matrix)
            if out is None:
                out = cupy.empty((height, width, channels), dtype=out_dtype)
            grid = fused_grid(layout, height, width, len(frames), min_blocks * multiprocessors)
            partials, arrivals = np.uint64(0), np.uint64(0)
            if grid.split:
                partials, arrivals = self._split_buffers_for(
                    grid.split * grid.pieces * layout.partial_floats(channels), grid.split
                )
            kernel(
                (grid.blocks,),
                (FUSED_THREADS,),
                (
                    self._pointers([frame.planar for frame in frames]),
                    self._pointers([frame.packed for frame in frames]) if packed else np.uint64(0),
                    np.int32(len(frames)),
                    np.int32(center),
                    np.int32(height),
                    np.int32(width),
                    transform,
                    np.float32(patch_scale(params, channels, packed)),
                    out,
                    np.float32(1.0 / integer_scale(out_dtype)),
                    np.int32(grid.tiles_x),
                    np.int32(grid.whole_tiles),
                    np.int32(grid.parts),
                    partials,
                    arrivals,
                    self._pointers([frame.planar for frame in guide]) if guided else np.uint64(0),
                ),
                shared_mem=layout.shared_bytes,
            )
        return out
