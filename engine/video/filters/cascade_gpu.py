"""The paper's pass cascade on the GPU: one kernel of ``kernels/cascade.cu`` per pass and offset."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...backend import cupy_module
from ...gpu.device import BLOCK, DeviceFrame, DeviceFrames, kernel_function
from ..params import NLMParams
from . import cascade


class CascadeGpuFilter:
    """The paper's pass cascade (DESIGN.md §2) on the GPU.

    One kernel of ``kernels/cascade.cu`` per pass and search offset, intermediates in device memory.
    The baseline the fused kernel is measured against, computing the same filter; ``__call__``
    matches ``FusedGpuFilter`` for float32 output, with a guide too (distances on Z = G X of the
    guide's frames).
    """

    backend, method = "gpu", "cascade"
    BLOCK_2D = (32, 8)

    def __init__(self, cupy: Any = None) -> None:
        self.cupy = cupy = cupy if cupy is not None else cupy_module()
        self.frames = DeviceFrames(cupy)
        self.upload = self.frames.upload
        self.download = cupy.asnumpy
        self.as_frame = self.frames.from_output

    def _kernel(self, name: str) -> Any:
        return kernel_function(self.cupy, name, "cascade.cu")

    def _launch(self, kernel: Any, shape: tuple[int, int], *arguments: Any) -> None:
        """Run ``kernel`` over a (rows, cols) grid of threads, one per element."""
        rows, cols = shape
        block_x, block_y = self.BLOCK_2D
        grid = ((cols + block_x - 1) // block_x, (rows + block_y - 1) // block_y)
        kernel(grid, self.BLOCK_2D, arguments)

    def _distance_space(self, frame: Any, params: NLMParams) -> Any:
        """Z = G Y of a planar frame (the frame itself when G is None)."""
        if params.color_transform is None:
            return frame
        channels, height, width = frame.shape
        z = self.cupy.empty_like(frame)
        pixels = height * width
        self._kernel(f"transform_colors<{channels}>")(
            ((pixels + BLOCK - 1) // BLOCK,),
            (BLOCK,),
            (frame, self.frames.transform(params.color_transform), z, np.int32(pixels)),
        )
        return z

    def __call__(
        self,
        window: Sequence[DeviceFrame],
        center: int,
        params: NLMParams,
        guide: Sequence[DeviceFrame] | None = None,
    ) -> Any:
        """Denoise ``window[center]`` searching ``window``, with the distances from ``guide`` where given.

        ``guide``: the same window of another clip.

        Returns the output as interleaved (H, W, C) float32 on the GPU.
        """
        cupy = self.cupy
        frames = [frame.planar for frame in window]
        channels, height, width = frames[center].shape
        radius, search = params.patch_radius, params.search_radius
        margin = search + radius  # of the squared differences; the weights have A
        with self.frames.out_of_memory_as_error(frames[center].shape):
            z = [self._distance_space(frame.planar, params) for frame in (window if guide is None else guide)]
            difference = cupy.empty((height + 2 * margin, width + 2 * margin), cupy.float32)
            horizontal = cupy.empty((height + 2 * margin, width + 2 * search), cupy.float32)
            weights = cupy.empty((height + 2 * search, width + 2 * search), cupy.float32)
            numerator = cupy.zeros((channels, height, width), cupy.float32)
            denominator = cupy.zeros((height, width), cupy.float32)
            relative = cascade.relative_weights(params)
            # The largest weight, or for relative weights the smallest u so far (none: the largest float).
            largest = cupy.full((height, width), np.finfo(np.float32).max if relative else 0, cupy.float32)
            output = cupy.empty((height, width, channels), cupy.float32)
        size = (np.int32(height), np.int32(width))
        scale = np.float32(params.patch_sum_scale(channels))
        # The passes' kernels, looked up once per window rather than once per launch.
        difference_pass = self._kernel(f"squared_difference<{channels}>")
        horizontal_pass = self._kernel(f"horizontal_box_sum<{radius}>")
        vertical_pass = self._kernel(
            f"vertical_box_sum_weight<{radius}, {str(params.weighting == 'exponential').lower()}, "
            f"{str(relative).lower()}>"
        )
        accumulate_pass = {
            same: self._kernel(f"accumulate<{channels}, {str(same).lower()}, {str(relative).lower()}>")
            for same in (False, True)
        }
        for index, frame in enumerate(frames):
            same_frame = index == center
            for qy, qx in cascade.spatial_offsets(search, same_frame=same_frame):
                offset = (np.int32(qy), np.int32(qx))
                self._launch(
                    difference_pass,
                    difference.shape,
                    z[center],
                    z[index],
                    difference,
                    *size,
                    np.int32(margin),
                    *offset,
                )
                self._launch(
                    horizontal_pass,
                    horizontal.shape,
                    difference,
                    horizontal,
                    np.int32(horizontal.shape[0]),
                    np.int32(horizontal.shape[1]),
                )
                self._launch(
                    vertical_pass,
                    weights.shape,
                    horizontal,
                    weights,
                    np.int32(weights.shape[0]),
                    np.int32(weights.shape[1]),
                    scale,
                )
                self._launch(
                    accumulate_pass[same_frame],
                    (height, width),
                    weights,
                    frame,
                    numerator,
                    denominator,
                    largest,
                    *size,
                    np.int32(search),
                    *offset,
                )
        pixels = height * width
        center_max = params.center_weight == "max" and not relative  # relative weights' largest is 1
        self._kernel(f"normalise<{channels}, {str(center_max).lower()}>")(
            ((pixels + BLOCK - 1) // BLOCK,),
            (BLOCK,),
            (numerator, denominator, largest, frames[center], output, np.int32(pixels)),
        )
        return output
