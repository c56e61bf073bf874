"""Planar host frames (VapourSynth's layout) to and from the GPU through page-locked buffers.

A frame's planes, each a 2D array with its own row pitch, are gathered into one page-locked
buffer and go over the bus in one copy; they are interleaved and converted to a ``DeviceFrame``
on the GPU. An output is rounded to the planes' dtype there and comes back the same way into the
host planes given.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .device import DeviceFrame, DeviceFrames, pinned_array


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
    """A thread's device and page-locked host buffers by name, kept while the frames' shape and dtype stay."""

    def __init__(self) -> None:
        self.device: dict[str, Any] = {}
        self.pinned: dict[str, np.ndarray] = {}


class PlaneTransfers:
    """Uploads planar host frames into DeviceFrames and downloads outputs into host planes, from many threads.

    Each thread has its own buffers, and its copies run on its current stream. A frame's planes
    are copied into a page-locked buffer of the thread's (NumPy's copy, which lets other threads
    run) and go over the bus in one asynchronous copy; an output comes back the same way. (Copies
    straight from and into VapourSynth's pageable planes, staged by the driver, and a copied
    output frame: 235-247 fps at 1080p; these and a new output frame: 285-299.) An upload ends
    with the stream synchronised, so that the frame is ready for any stream (the use
    ``resident.ResidentFrames`` makes of it from many threads) and the page-locked buffer free
    for the next.
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
        given = len(frame.planes)
        staged = self.pinned("planes in", (given, height, width), frame.dtype)
        for into, plane in zip(staged, frame.planes, strict=True):
            np.copyto(into, _checked(plane, into))
        staging = self.buffer("staging", (channels, height, width), frame.dtype)
        staging[:given].set(staged, stream=cupy.cuda.get_current_stream())
        if given < channels:
            staging[given:].fill(0)
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
        height, width, _ = output.shape
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
        wanted = len(planes)
        planar = self.buffer("planar", (wanted, height, width), dtype)
        cupy.copyto(planar, output.transpose(2, 0, 1)[:wanted])
        staged = self.pinned("planes out", (wanted, height, width), dtype)
        planar.get(stream=cupy.cuda.get_current_stream(), out=staged)  # returns once copied
        for plane, back in zip(planes, staged, strict=True):
            np.copyto(_checked(plane, back), back)

    def buffer(self, name: str, shape: tuple[int, ...], dtype: Any) -> Any:
        """Return this thread's device buffer ``name`` of ``shape`` and ``dtype``, made when either changes."""
        array = self._buffers.device.get(name)
        if array is None or array.shape != tuple(shape) or array.dtype != dtype:
            with self.frames.out_of_memory_as_error(tuple(shape)):
                array = self._buffers.device[name] = self.cupy.empty(shape, dtype)
        return array

    def pinned(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """Return this thread's page-locked host buffer ``name`` of ``shape`` and ``dtype`` (made as ``buffer``'s)."""
        array = self._buffers.pinned.get(name)
        if array is None or array.shape != tuple(shape) or array.dtype != dtype:
            array = self._buffers.pinned[name] = pinned_array(self.cupy, shape, dtype)
        return array


def _checked(plane: np.ndarray, like: np.ndarray) -> np.ndarray:
    """Return ``plane`` where it has ``like``'s (H, W) and dtype (its rows in any pitch), else raise ValueError."""
    if plane.shape != like.shape or plane.dtype != like.dtype:
        raise ValueError(f"a plane must be (H, W) = {like.shape} of {like.dtype}, got {plane.shape} of {plane.dtype}")
    return plane
