"""Planar host frames (VapourSynth's layout) to and from the GPU, each plane copied as it lies in memory.

A frame's planes go over the bus as they are, each a 2D array with its own row pitch (one
``cudaMemcpy2DAsync`` a plane, no host-side stacking), and are interleaved and converted to a
``DeviceFrame`` on the GPU; an output comes back plane by plane, rounded to the planes' dtype
there, straight into the host planes given.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .device import DeviceFrame, DeviceFrames


@dataclass(frozen=True)
class HostPlanes:
    """A frame's planes on the host: 1 to 3 (H, W) arrays of one dtype, rows in any pitch.

    ``channels``: the DeviceFrame's, 1 or 3; two planes (U, V) go in as (U, V, 0). ``peak``: the
    samples' largest value where they are integers scaled by it in float32 (9 to 15 bits, as
    KNLMeansCL scales them), else None (uint8 and uint16 at full scale, floats as they are).
    """

    planes: Sequence[np.ndarray]
    channels: int
    peak: int | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        """(H, W, C) of the DeviceFrame."""
        height, width = self.planes[0].shape
        return height, width, self.channels

    @property
    def dtype(self) -> np.dtype:
        """The samples' dtype: uint8 frames get packed words."""
        return self.planes[0].dtype


class _ThreadBuffers(threading.local):
    """A thread's device buffers by name, kept while the frames' shape and dtype stay."""

    def __init__(self) -> None:
        self.arrays: dict[str, Any] = {}


class PlaneTransfers:
    """Uploads planar host frames into DeviceFrames and downloads outputs into host planes, from many threads.

    Each thread has its own device buffers, and its copies run on its current stream; an upload
    ends with the stream synchronised, so that the frame is ready for any stream (the use
    ``resident.ResidentFrames`` makes of it from many threads).
    """

    def __init__(self, frames: DeviceFrames) -> None:
        self.frames = frames
        self.cupy = frames.cupy
        self._buffers = _ThreadBuffers()

    def empty(self, shape: tuple[int, int, int], dtype: Any) -> DeviceFrame:
        """Return an empty DeviceFrame for frames of (H, W, C) and ``dtype`` (``DeviceFrames.empty``)."""
        return self.frames.empty(shape, dtype)

    def upload_into(self, frame: HostPlanes, out: DeviceFrame) -> None:
        """Upload ``frame``'s planes into ``out``, interleave and convert them on the GPU, and wait for it."""
        cupy = self.cupy
        height, width, channels = frame.shape
        staging = self.buffer("staging", (channels, height, width), frame.dtype)
        for plane, host in zip(staging, frame.planes, strict=False):
            self._copy(plane, host, to_device=True)
        if len(frame.planes) < channels:
            staging[len(frame.planes) :].fill(0)
        floats = frame.peak is not None or frame.dtype == np.float16  # converted to float32 on the way
        interleaved = self.buffer("interleaved", (height, width, channels), np.float32 if floats else frame.dtype)
        cupy.copyto(interleaved, staging.transpose(1, 2, 0))
        if frame.peak is not None:  # as the host divided: float32(sample) / float32(peak), correctly rounded
            cupy.divide(interleaved, np.float32(frame.peak), out=interleaved)
        self.frames.convert(interleaved, out)
        cupy.cuda.get_current_stream().synchronize()

    def download_into(self, output: Any, planes: Sequence[np.ndarray], peak: int | None = None) -> None:
        """Write an (H, W, C) device output into host ``planes`` (its first channels), in their dtype.

        An output of the planes' dtype comes as it is; float32 goes to integer planes as
        clip(rint(x * peak), 0, peak) and to half floats rounded to nearest, both on the GPU.
        Returns once the planes are written.
        """
        cupy = self.cupy
        height, width, channels = output.shape
        dtype = planes[0].dtype
        if output.dtype != dtype:
            converted = self.buffer("converted", output.shape, dtype)
            if peak is None:
                cupy.copyto(converted, output, casting="same_kind")
            else:
                scaled = self.buffer("scaled", output.shape, np.float32)
                cupy.multiply(output, np.float32(peak), out=scaled)
                cupy.rint(scaled, out=scaled)
                cupy.clip(scaled, 0, peak, out=scaled)
                cupy.copyto(converted, scaled, casting="unsafe")
            output = converted
        if channels == 1:
            planar = output.reshape(1, height, width)
        else:
            planar = self.buffer("planar", (channels, height, width), dtype)
            cupy.copyto(planar, output.transpose(2, 0, 1))
        for plane, host in zip(planar, planes, strict=False):
            self._copy(plane, host, to_device=False)
        cupy.cuda.get_current_stream().synchronize()

    def buffer(self, name: str, shape: tuple[int, ...], dtype: Any) -> Any:
        """Return this thread's device buffer ``name`` of ``shape`` and ``dtype``, made when either changes."""
        array = self._buffers.arrays.get(name)
        if array is None or array.shape != tuple(shape) or array.dtype != dtype:
            with self.frames.out_of_memory_as_error(tuple(shape)):
                array = self._buffers.arrays[name] = self.cupy.empty(shape, dtype)
        return array

    def _copy(self, device: Any, host: np.ndarray, *, to_device: bool) -> None:
        """Copy a host plane to or from a contiguous (H, W) device array of its shape, row pitch as it lies."""
        runtime = self.cupy.cuda.runtime
        if host.shape != device.shape or host.dtype != device.dtype or host.strides[1] != host.itemsize:
            raise ValueError(f"a plane must be (H, W) {device.dtype} of rows of adjacent samples, got {host.shape}")
        row_bytes = host.shape[1] * host.itemsize
        host_pointer, host_pitch = host.ctypes.data, host.strides[0]
        stream = self.cupy.cuda.get_current_stream().ptr
        if to_device:
            arguments = (device.data.ptr, row_bytes, host_pointer, host_pitch, runtime.memcpyHostToDevice)
        else:
            arguments = (host_pointer, host_pitch, device.data.ptr, row_bytes, runtime.memcpyDeviceToHost)
        destination, destination_pitch, source, source_pitch, kind = arguments
        runtime.memcpy2DAsync(
            destination, destination_pitch, source, source_pitch, row_bytes, host.shape[0], kind, stream
        )
