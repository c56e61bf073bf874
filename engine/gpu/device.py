"""Frames on the GPU and the kernels' compile cache (CuPy).

A frame on the GPU is a ``DeviceFrame``: planar float32, plus its bytes packed one word per
pixel when it came as 8-bit. With those, and no color transform, the fused kernel measures
distances on the packed bytes, exactly in integers and with fewer instructions.
``resident.ResidentFrames`` keeps such frames by key for random access that comes back to the
same frames, each uploaded once into a reused slot.

CuPy is imported by the caller (``backend.cupy_module``) and handed in, so importing this
module costs nothing where there is no GPU. Kernels compile once per device and template
instance (B, A, C, weighting, centre weight, output type are in the kernel's name) and are kept.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..backend import GpuOutOfMemoryError
from ..frames import integer_scale

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
BLOCK = 256  # threads per block of the element-wise kernels
CUDA_TYPES = {np.dtype(np.uint8): "unsigned char", np.dtype(np.uint16): "unsigned short", np.dtype(np.float32): "float"}
# Sources whose arithmetic must round as NumPy's does, each operation on its own: no fused multiply-adds.
NUMPY_ROUNDING = {"yuv.cu"}


@functools.cache
def _module(cupy: Any, device: int, folder: Path, source: str, name_expressions: tuple[str, ...]) -> Any:
    """Compile ``folder/source`` for these template instances on ``device`` (cached per process)."""
    code = (folder / source).read_text()
    options = ("-std=c++17", f"-I{folder}")  # for common.cuh
    if source in NUMPY_ROUNDING:
        options += ("--fmad=false",)
    return cupy.RawModule(code=code, options=options, name_expressions=name_expressions)


def kernel_function(cupy: Any, name_expression: str, source: str = "nlm.cu") -> Any:
    """Return a kernel from the sources in KERNELS (scripts/notebooks/kernel_ab.py points it at other versions)."""
    module = _module(cupy, cupy.cuda.Device().id, KERNELS, source, (name_expression,))
    return module.get_function(name_expression)


@dataclass(frozen=True)
class DeviceFrame:
    """A frame on the GPU.

    ``planar`` float32 (C, H, W) in [0, 1], and for 8-bit frames ``packed``, (H, W) uint32 words
    holding each pixel's C bytes (channel c in byte c).
    """

    planar: Any
    packed: Any = None

    @property
    def shape(self) -> tuple[int, int, int]:
        """(C, H, W)."""
        return self.planar.shape


def empty_device_frame(cupy: Any, shape: tuple[int, int, int], dtype: Any) -> DeviceFrame:
    """Return an empty DeviceFrame for (H, W, C) host frames of ``dtype``: with packed words for 8-bit ones."""
    height, width, channels = shape
    packed = cupy.empty((height, width), dtype=cupy.uint32) if np.dtype(dtype) == np.uint8 else None
    return DeviceFrame(cupy.empty((channels, height, width), dtype=cupy.float32), packed)


def pinned_array(cupy: Any, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Return a page-locked host array: copies to and from the GPU run asynchronously, at the bus's speed."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    memory = cupy.cuda.alloc_pinned_memory(count * dtype.itemsize)
    return np.frombuffer(memory, dtype=dtype, count=count).reshape(shape)


@functools.cache
def device_attributes(cupy: Any, device: int) -> tuple[int, int, int]:
    """Shared memory per block (opt-in) and per multiprocessor, in bytes, and the multiprocessors."""
    attributes = cupy.cuda.Device(device).attributes
    return (
        attributes["MaxSharedMemoryPerBlockOptin"],
        attributes["MaxSharedMemoryPerMultiprocessor"],
        attributes["MultiProcessorCount"],
    )


class DeviceFrames:
    """Uploads host frames and converts device frames; the color transform kept on the GPU."""

    def __init__(self, cupy: Any) -> None:
        self.cupy = cupy
        self._transform_arrays: dict[bytes, Any] = {}
        self._staging: Any = None  # upload_into's device copy of the last host frame, before conversion

    @contextlib.contextmanager
    def out_of_memory_as_error(self, shape: tuple[int, ...]) -> Iterator[None]:
        """Turn CuPy's out-of-memory error into GpuOutOfMemoryError with advice."""
        try:
            yield
        except self.cupy.cuda.memory.OutOfMemoryError as error:
            raise GpuOutOfMemoryError(
                f"the GPU ran out of memory for frames of shape {shape} ({error}); close other GPU programs, "
                "use a smaller temporal window or smaller frames, or switch to the CPU backend"
            ) from error

    def upload(self, frame: np.ndarray) -> DeviceFrame:
        """Upload a checked (H, W, C) uint8 / uint16 / float32 host frame -> a DeviceFrame.

        The frame crosses the bus in its own dtype and is converted on the GPU.
        """
        with self.out_of_memory_as_error(frame.shape):
            device_frame = empty_device_frame(self.cupy, frame.shape, frame.dtype)
            self.convert(self.cupy.asarray(frame), device_frame)
            return device_frame

    def from_output(self, output: Any) -> DeviceFrame:
        """Convert a filter's interleaved (H, W, C) float32 output -> a new DeviceFrame, on the GPU.

        As ``upload`` of the downloaded output, without the trips over the bus.
        """
        device_frame = self.empty(output.shape, np.float32)
        self.convert(output, device_frame)
        return device_frame

    def empty(self, shape: tuple[int, int, int], dtype: Any) -> DeviceFrame:
        """Return an empty DeviceFrame for (H, W, C) host frames of ``dtype`` (``empty_device_frame``)."""
        with self.out_of_memory_as_error(shape):
            return empty_device_frame(self.cupy, shape, dtype)

    def upload_into(self, frame: np.ndarray, out: DeviceFrame) -> None:
        """Upload a checked (H, W, C) host frame -> ``out``, a DeviceFrame of ``empty(frame.shape, frame.dtype)``.

        As ``upload``, the frame crosses the bus in its own dtype, into a device buffer kept from
        call to call while the frames' shape and dtype stay, and is converted on the GPU (on the
        current stream, which orders the next call's copy after this conversion).
        """
        staging = self._staging
        if staging is None or staging.shape != frame.shape or staging.dtype != frame.dtype:
            with self.out_of_memory_as_error(frame.shape):
                staging = self._staging = self.cupy.empty(frame.shape, frame.dtype)
        staging.set(frame)
        self.convert(staging, out)

    def convert(self, frame: Any, out: DeviceFrame) -> None:
        """Convert an interleaved (H, W, C) device frame -> ``out``.

        Planar float32, integers scaled to [0, 1], and the packed words if ``out`` has them.
        """
        height, width, channels = frame.shape
        kernel = kernel_function(self.cupy, f"frame_to_planar<{CUDA_TYPES[np.dtype(frame.dtype)]}>")
        pixels = height * width
        packed = out.packed if out.packed is not None else np.uint64(0)
        kernel(
            ((pixels + BLOCK - 1) // BLOCK,),
            (BLOCK,),
            (frame, out.planar, packed, np.int32(pixels), np.int32(channels), np.float32(integer_scale(frame.dtype))),
        )

    def transform(self, matrix: np.ndarray) -> Any:
        """Return the color transform as float32 on the GPU, kept while it stays the same."""
        key = matrix.tobytes()
        if key not in self._transform_arrays:
            self._transform_arrays = {key: self.cupy.asarray(matrix, dtype=self.cupy.float32)}
        return self._transform_arrays[key]


def round_to_integers(cupy: Any, frame: Any, out: Any, scratch: Any) -> None:
    """Round a float32 device frame in [0, 1] -> ``out`` (uint8 / uint16 of its shape).

    Rounded as ``frames.from_float32`` rounds: rint(frame x full scale), halves to even, clamped.

    ``scratch`` is float32 of the frame's shape. The fused kernel's own integer output adds 0.5
    and truncates (halves up), which can differ by one level where float32 sits on a half step.
    """
    full_scale = np.iinfo(out.dtype).max
    cupy.multiply(frame, np.float32(full_scale), out=scratch)
    cupy.rint(scratch, out=scratch)
    cupy.clip(scratch, 0, full_scale, out=scratch)
    cupy.copyto(out, scratch, casting="unsafe")
