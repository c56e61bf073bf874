"""Y'CbCr planes <-> interleaved RGB, or the luma/chroma filter's float planes, on the GPU.

Sample for sample as ``media.yuv`` converts on the CPU.

A decoded frame's planes cross the bus as they are (4:2:0 8-bit: half the bytes of its RGB) and an
encoder's come back the same way; the conversions run in kernels/yuv.cu, a fraction of a
millisecond at 1080p where the CPU's take milliseconds of every core a worker has.

The planes lie in one contiguous device buffer, luma then Cb then Cr (``frames.yuv_plane_shapes``). The
layout is given as ``media.yuv.YuvLayout`` gives it (the GPU modules do not import the media
ones): ``chroma_shift`` (across, down) and ``coefficients()``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..frames import split_yuv_planes, yuv_plane_shapes, yuv_planes_size
from .device import BLOCK, CUDA_TYPES, kernel_function


def planes_to_rgb(cupy: Any, planes: Any, chroma_shift: tuple[int, int], coefficients: Any, out: Any) -> None:
    """Planes (one device buffer, uint8 / uint16 samples) -> ``out``, (H, W, 3) uint8 / uint16 RGB at full scale.

    Rounded and clipped, as ``media.yuv.planes_to_rgb``. ``coefficients``: the layout's, float64 on the device.
    """
    height, width, _ = out.shape
    name = f"yuv_to_rgb<{CUDA_TYPES[np.dtype(planes.dtype)]}, {CUDA_TYPES[np.dtype(out.dtype)]}>"
    kernel = kernel_function(cupy, name, "yuv.cu")
    across, down = chroma_shift
    full_scale = np.float64(np.iinfo(out.dtype).max)
    arguments = (planes, out, np.int32(height), np.int32(width), np.int32(across), np.int32(down), coefficients)
    kernel((-(-height * width // BLOCK),), (BLOCK,), (*arguments, full_scale))


def rgb_to_planes(
    cupy: Any, rgb: Any, chroma_shift: tuple[int, int], coefficients: Any, out: Any, differences: Any
) -> None:
    """(H, W, 3) uint8 / uint16 RGB at full scale -> ``out``, the planes (one device buffer) of its dtype.

    Rounded and clamped, as ``media.yuv.rgb_to_planes``. ``differences``: float32 scratch of 2 x H x W.
    """
    height, width, _ = rgb.shape
    pixel, sample = CUDA_TYPES[np.dtype(rgb.dtype)], CUDA_TYPES[np.dtype(out.dtype)]
    luma = kernel_function(cupy, f"rgb_to_luma<{pixel}, {sample}>", "yuv.cu")
    scale = np.float64(1.0 / np.iinfo(rgb.dtype).max)
    pixels = height * width
    luma((-(-pixels // BLOCK),), (BLOCK,), (rgb, scale, out, differences, np.int64(pixels), coefficients))
    _decimate(cupy, differences, out, chroma_shift, coefficients)


def planes_to_ycbcr(
    cupy: Any, planes: Any, chroma_shift: tuple[int, int], coefficients: Any, luma: Any, chroma: Any
) -> None:
    """Planes (one device buffer) -> Y' ``luma`` (H, W, 1) and (Pb + 0.5, Pr + 0.5, 0) ``chroma`` (H, W, 3).

    float32 and unclipped, as ``media.yuv.planes_to_ycbcr``.
    """
    height, width = luma.shape[:2]
    kernel = kernel_function(cupy, f"yuv_to_ycbcr<{CUDA_TYPES[np.dtype(planes.dtype)]}>", "yuv.cu")
    across, down = chroma_shift
    arguments = (planes, luma, chroma, np.int32(height), np.int32(width), np.int32(across), np.int32(down))
    kernel((-(-height * width // BLOCK),), (BLOCK,), (*arguments, coefficients))


def ycbcr_to_planes(
    cupy: Any, luma: Any, chroma: Any, chroma_shift: tuple[int, int], coefficients: Any, out: Any, differences: Any
) -> None:
    """``planes_to_ycbcr``'s Y' and chroma -> ``out``, the planes (one device buffer) of its dtype.

    Rounded and clamped, as ``media.yuv.ycbcr_to_planes``. ``differences``: float32 scratch of 2 x H x W.
    """
    height, width = luma.shape[:2]
    kernel = kernel_function(cupy, f"ycbcr_to_luma<{CUDA_TYPES[np.dtype(out.dtype)]}>", "yuv.cu")
    pixels = height * width
    kernel((-(-pixels // BLOCK),), (BLOCK,), (luma, chroma, out, differences, np.int64(pixels), coefficients))
    _decimate(cupy, differences, out, chroma_shift, coefficients)


def _decimate(cupy: Any, differences: Any, out: Any, chroma_shift: tuple[int, int], coefficients: Any) -> None:
    """Pb and Pr at every pixel (``differences``, 2 x H x W) -> the Cb and Cr planes of ``out``, after its luma."""
    _, height, width = differences.shape
    across, down = chroma_shift
    rows, columns = yuv_plane_shapes(height, width, chroma_shift)[1]
    chroma = kernel_function(cupy, f"decimated_chroma<{CUDA_TYPES[np.dtype(out.dtype)]}>", "yuv.cu")
    arguments = (np.int32(height), np.int32(width), np.int32(across), np.int32(down), coefficients)
    chroma((-(-rows * columns // BLOCK), 2), (BLOCK,), (differences, out[height * width :], *arguments))


class YuvOnDevice:
    """Frames' planes uploaded and converted to RGB, and RGB converted and downloaded as planes, a frame at a time.

    For filters that hold one frame on the GPU at a time (the luma/chroma mode); the coefficients,
    the chroma scratch and the host buffer the planes are gathered in for their one copy up are
    kept from frame to frame. Copies are on the current stream.
    """

    def __init__(self, cupy: Any) -> None:
        self.cupy = cupy
        self._coefficients: dict[bytes, Any] = {}
        self._differences: Any = None
        self._gathered = np.empty(0, np.uint8)

    def _on_device(self, coefficients: np.ndarray) -> Any:
        key = coefficients.tobytes()
        if key not in self._coefficients:
            self._coefficients[key] = self.cupy.asarray(coefficients)
        return self._coefficients[key]

    def to_rgb(self, planes: list[np.ndarray], chroma_shift: tuple[int, int], coefficients: np.ndarray) -> Any:
        """Return host planes as (H, W, 3) RGB on the GPU, of the samples' dtype at its full scale."""
        rgb = self.cupy.empty((*planes[0].shape, 3), planes[0].dtype)
        planes_to_rgb(self.cupy, self._uploaded(planes, chroma_shift), chroma_shift, self._on_device(coefficients), rgb)
        return rgb

    def to_ycbcr(self, planes: list[np.ndarray], chroma_shift: tuple[int, int], coefficients: np.ndarray) -> Any:
        """Return host planes as Y' (H, W, 1) and chroma (H, W, 3) on the GPU (``planes_to_ycbcr``)."""
        luma = self.cupy.empty((*planes[0].shape, 1), np.float32)
        chroma = self.cupy.empty((*planes[0].shape, 3), np.float32)
        flat = self._uploaded(planes, chroma_shift)
        planes_to_ycbcr(self.cupy, flat, chroma_shift, self._on_device(coefficients), luma, chroma)
        return luma, chroma

    def to_planes(
        self, rgb: Any, chroma_shift: tuple[int, int], coefficients: np.ndarray, dtype: Any
    ) -> list[np.ndarray]:
        """Return (H, W, 3) uint8 / uint16 RGB on the GPU as host planes of ``dtype``."""
        flat = self._flat_planes(rgb.shape[:2], chroma_shift, dtype)
        rgb_to_planes(self.cupy, rgb, chroma_shift, self._on_device(coefficients), flat, self._differences)
        return split_yuv_planes(flat.get(), *rgb.shape[:2], chroma_shift)

    def ycbcr_planes(
        self, luma: Any, chroma: Any, chroma_shift: tuple[int, int], coefficients: np.ndarray, dtype: Any
    ) -> list[np.ndarray]:
        """Return Y' and chroma on the GPU (``to_ycbcr``'s) as host planes of ``dtype`` (``ycbcr_to_planes``)."""
        flat = self._flat_planes(luma.shape[:2], chroma_shift, dtype)
        coefficients = self._on_device(coefficients)
        ycbcr_to_planes(self.cupy, luma, chroma, chroma_shift, coefficients, flat, self._differences)
        return split_yuv_planes(flat.get(), *luma.shape[:2], chroma_shift)

    def _uploaded(self, planes: list[np.ndarray], chroma_shift: tuple[int, int]) -> Any:
        """Return host planes gathered into one buffer on the GPU (its one copy up)."""
        height, width = planes[0].shape
        size = yuv_planes_size(height, width, chroma_shift)
        if self._gathered.size != size or self._gathered.dtype != planes[0].dtype:
            self._gathered = np.empty(size, planes[0].dtype)
        np.concatenate([plane.ravel() for plane in planes], out=self._gathered)
        return self.cupy.asarray(self._gathered)  # from pageable memory: copied before it returns

    def _flat_planes(self, shape: tuple[int, int], chroma_shift: tuple[int, int], dtype: Any) -> Any:
        """Return a device buffer for a frame's planes of ``dtype``, the chroma scratch made to its size."""
        if self._differences is None or self._differences.shape[1:] != tuple(shape):
            self._differences = self.cupy.empty((2, *shape), np.float32)
        return self.cupy.empty(yuv_planes_size(*shape, chroma_shift), dtype)
