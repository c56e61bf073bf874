"""The GPU backend on CuPy: frame upload and the fused kernel of ``kernels/nlm.cu``.

CuPy is imported by the caller (``backend.cupy_module``) and handed in, so importing this
module costs nothing where there is no GPU. Kernels compile once per (device, B, A, C,
weighting, centre weight, output type), with those values in the kernel's name, and are kept.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import functools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .backend import GpuOutOfMemoryError
from .frames import check_frame_shape, checked_frame, integer_scale
from .params import NLMParams

KERNEL_SOURCE = Path(__file__).with_name("kernels") / "nlm.cu"
TILE_WIDTH, THREADS_Y = 32, 16  # as in nlm.cu; a tile is THREADS_Y x PIXELS_PER_THREAD rows
BLOCK = 256  # threads per block of the element-wise kernels
STAGED_FRAMES = 4  # pinned input buffers of a pipeline: frames read and staged ahead of the GPU
OUTPUT_BUFFERS = 3  # device and pinned output buffers of a pipeline: outputs in flight
CUDA_TYPES = {np.dtype(np.uint8): "unsigned char", np.dtype(np.uint16): "unsigned short", np.dtype(np.float32): "float"}


@functools.cache
def _module(cupy: Any, device: int, name_expressions: tuple[str, ...]) -> Any:
    """Compile ``nlm.cu`` for these template instances on ``device`` (cached per process)."""
    return cupy.RawModule(code=KERNEL_SOURCE.read_text(), options=("-std=c++17",), name_expressions=name_expressions)


def _function(cupy: Any, name_expression: str) -> Any:
    module = _module(cupy, cupy.cuda.Device().id, (name_expression,))
    return module.get_function(name_expression)


def shared_memory_bytes(patch_radius: int, search_radius: int, channels: int, tile_height: int) -> int:
    """Shared memory one block of the fused kernel needs, in bytes (see nlm.cu)."""
    pad = search_radius + patch_radius
    z_region = (tile_height + 2 * pad) * (TILE_WIDTH + 2 * pad)
    y_region = (tile_height + 2 * search_radius) * (TILE_WIDTH + 2 * search_radius)
    distance_stride = (TILE_WIDTH + 2 * search_radius + 2 * patch_radius) | 1
    distances = (tile_height + search_radius + 2 * patch_radius) * distance_stride
    return 4 * (channels * (2 * z_region + y_region) + 2 * distances)


def _launch_shape(cupy: Any, patch_radius: int, search_radius: int, channels: int) -> tuple[int, int]:
    """Pixels per thread and blocks per multiprocessor for the fused kernel on this device.

    Two pixels per thread (a 32 x 32 tile) where that block's shared memory fits, else one;
    two blocks per multiprocessor where two blocks' shared memory fits (measured on an H100:
    24 % faster at A = 5, within noise at A = 2 and 3), else one, leaving registers unbounded.
    """
    attributes = _device_attributes(cupy, cupy.cuda.Device().id)
    pixels = 2 if shared_memory_bytes(patch_radius, search_radius, channels, 2 * THREADS_Y) <= attributes[0] else 1
    shared = shared_memory_bytes(patch_radius, search_radius, channels, pixels * THREADS_Y)
    return pixels, 2 if 2 * shared <= attributes[1] else 1


@functools.cache
def _device_attributes(cupy: Any, device: int) -> tuple[int, int]:
    """Shared memory per block (opt-in) and per multiprocessor, in bytes."""
    attributes = cupy.cuda.Device(device).attributes
    return attributes["MaxSharedMemoryPerBlockOptin"], attributes["MaxSharedMemoryPerMultiprocessor"]


class GpuFrames:
    """Uploads host frames and filters windows of device frames with the fused kernel."""

    def __init__(self, cupy: Any) -> None:
        self.cupy = cupy
        self._pointer_arrays: dict[tuple[int, ...], Any] = {}
        self._transform_arrays: dict[bytes, Any] = {}

    @contextlib.contextmanager
    def _out_of_memory_as_error(self, shape: tuple[int, ...]) -> Iterator[None]:
        """Turn CuPy's out-of-memory error into GpuOutOfMemoryError with advice."""
        try:
            yield
        except self.cupy.cuda.memory.OutOfMemoryError as error:
            raise GpuOutOfMemoryError(
                f"the GPU ran out of memory for frames of shape {shape} ({error}); close other GPU programs, "
                "use a smaller temporal window or smaller frames, or switch to the CPU backend"
            ) from error

    def upload(self, frame: np.ndarray) -> Any:
        """A checked (H, W, C) uint8 / uint16 / float32 host frame -> planar float32 (C, H, W) on the GPU.

        The frame crosses the bus in its own dtype and is converted on the GPU.
        """
        with self._out_of_memory_as_error(frame.shape):
            return self.to_planar(self.cupy.asarray(frame))

    def to_planar(self, frame: Any, out: Any = None) -> Any:
        """An interleaved (H, W, C) device frame -> planar float32 (C, H, W), integers scaled to [0, 1]."""
        cupy = self.cupy
        height, width, channels = frame.shape
        if out is None:
            out = cupy.empty((channels, height, width), dtype=cupy.float32)
        convert = _function(cupy, f"frame_to_planar<{CUDA_TYPES[np.dtype(frame.dtype)]}>")
        pixels = height * width
        convert(
            ((pixels + BLOCK - 1) // BLOCK,),
            (BLOCK,),
            (frame, out, np.int32(pixels), np.int32(channels), np.float32(integer_scale(frame.dtype))),
        )
        return out

    def _pointers(self, frames: list[Any]) -> Any:
        """The frames' device addresses as a device array, kept per window (a ring repeats them)."""
        key = tuple(frame.data.ptr for frame in frames)
        pointers = self._pointer_arrays.get(key)
        if pointers is None:
            if len(self._pointer_arrays) > 256:
                self._pointer_arrays.clear()
            pointers = self._pointer_arrays[key] = self.cupy.asarray(np.array(key, dtype=np.uint64))
        return pointers

    def _transform(self, matrix: np.ndarray) -> Any:
        """The color transform as float32 on the GPU, kept while it stays the same."""
        key = matrix.tobytes()
        if key not in self._transform_arrays:
            self._transform_arrays = {key: self.cupy.asarray(matrix, dtype=self.cupy.float32)}
        return self._transform_arrays[key]

    def filter_window(
        self, frames: list[Any], center: int, params: NLMParams, out_dtype: Any = np.float32, *, out: Any = None
    ) -> Any:
        """Denoise ``frames[center]`` searching ``frames`` (planar device frames).

        Returns the output as interleaved (H, W, C) on the GPU, of ``out_dtype`` (or ``out``'s
        dtype): float32, or uint8 / uint16 scaled to their full range, rounded and clamped.
        """
        cupy = self.cupy
        channels, height, width = frames[center].shape
        out_dtype = np.dtype(out.dtype if out is not None else out_dtype)
        radius, search = params.patch_radius, params.search_radius
        pixels_per_thread, min_blocks = _launch_shape(cupy, radius, search, channels)
        tile_height = THREADS_Y * pixels_per_thread
        name = (
            f"nlm_fused<{radius}, {search}, {channels}, {str(params.weighting == 'exponential').lower()}, "
            f"{str(params.center_weight == 'max').lower()}, {CUDA_TYPES[out_dtype]}, {pixels_per_thread}, {min_blocks}>"
        )
        kernel = _function(cupy, name)
        shared = shared_memory_bytes(radius, search, channels, tile_height)
        kernel.max_dynamic_shared_size_bytes = shared
        with self._out_of_memory_as_error(frames[center].shape):
            transform = np.uint64(0) if params.color_transform is None else self._transform(params.color_transform)
            if out is None:
                out = cupy.empty((height, width, channels), dtype=out_dtype)
            grid = ((width + TILE_WIDTH - 1) // TILE_WIDTH, (height + tile_height - 1) // tile_height)
            kernel(
                grid,
                (TILE_WIDTH, THREADS_Y),
                (
                    self._pointers(frames),
                    np.int32(len(frames)),
                    np.int32(center),
                    np.int32(height),
                    np.int32(width),
                    transform,
                    np.float32(params.patch_sum_scale(channels)),
                    out,
                    np.float32(1.0 / integer_scale(out_dtype)),
                ),
                shared_mem=shared,
            )
        return out


class GpuPipeline:
    """Host frames in, host frames out, with uploads, filtering and downloads overlapped.

    Each input frame crosses the bus once, in its own dtype (uint8 / uint16 / float32), from a
    pinned staging buffer (filled by a helper thread, frames ahead) on the upload stream, and
    is converted into a slot of a ring of Dp + Df + 2 device frames that every output needing
    it reads. Outputs are filtered on the compute stream straight into ``out_dtype`` and come
    back on the download stream through pinned buffers, copied into the returned arrays by a
    second helper thread. Buffers are made once, for the first frame's shape; nothing is
    allocated per frame after that but the returned host arrays. ``close`` stops the threads.
    """

    def __init__(self, cupy: Any, params: NLMParams, out_dtype: Any = np.uint8) -> None:
        self.cupy = cupy
        self.params = params
        self.out_dtype = np.dtype(out_dtype)
        self.frames = GpuFrames(cupy)
        self.upload_stream = cupy.cuda.Stream(non_blocking=True)
        self.compute_stream = cupy.cuda.Stream(non_blocking=True)
        self.download_stream = cupy.cuda.Stream(non_blocking=True)
        self._buffers: _PipelineBuffers | None = None
        self._helper = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="nlmeans-staging")
        self._collector = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="nlmeans-collect")

    def close(self) -> None:
        """Wait for the GPU work and the helper threads of an unfinished run, then stop the threads."""
        for stream in (self.upload_stream, self.compute_stream, self.download_stream):
            stream.synchronize()
        self._helper.shutdown(wait=True)
        self._collector.shutdown(wait=True)

    def _buffers_for(self, frame: np.ndarray, ring_size: int) -> _PipelineBuffers:
        """The buffers of the last run when they fit this frame and window (pinned memory is slow to make)."""
        buffers = self._buffers
        if buffers is None or buffers.key != (frame.shape, frame.dtype, self.out_dtype, ring_size):
            buffers = self._buffers = _PipelineBuffers(self.cupy, frame.shape, frame.dtype, self.out_dtype, ring_size)
        else:
            buffers.reset()
        return buffers

    def run(self, host_frames: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
        """Yield the denoised frames in order; frame t once frame t + Df has been read."""
        params = self.params
        ring_size = params.frames_past + params.frames_future + 2
        buffers: _PipelineBuffers | None = None
        arrived = 0
        filtered = 0

        def filter_next(available: int) -> None:
            nonlocal filtered
            index, slot = filtered, filtered % OUTPUT_BUFFERS
            first = max(0, index - params.frames_past)
            last = min(available - 1, index + params.frames_future)
            stream = self.compute_stream
            for position in range(first, last + 1):
                stream.wait_event(buffers.uploaded[position % ring_size])
            if buffers.downloaded[slot] is not None:
                stream.wait_event(buffers.downloaded[slot])  # device_out[slot] was read
            with stream:
                window = [buffers.ring[position % ring_size] for position in range(first, last + 1)]
                self.frames.filter_window(window, index - first, params, out=buffers.device_out[slot])
                buffers.computed[index % ring_size] = stream.record()
            self.download_stream.wait_event(buffers.computed[index % ring_size])
            buffers.device_out[slot].get(stream=self.download_stream, out=buffers.pinned_out[slot])
            buffers.downloaded[slot] = self.download_stream.record()
            filtered += 1

        def collect(index: int) -> np.ndarray:
            """Output ``index`` as a new host array (on the second helper thread)."""
            buffers.downloaded[index % OUTPUT_BUFFERS].synchronize()
            return buffers.pinned_out[index % OUTPUT_BUFFERS].copy()

        collecting: collections.deque[concurrent.futures.Future] = collections.deque()

        def filter_and_collect() -> Iterator[np.ndarray]:
            """Filter the next output, and yield the oldest once OUTPUT_BUFFERS - 1 are in flight.

            An output's pinned buffer is rewritten by the download of output index + OUTPUT_BUFFERS,
            which is issued only after that output was yielded, its copy complete.
            """
            filter_next(arrived)
            collecting.append(self._collector.submit(collect, filtered - 1))
            if len(collecting) >= OUTPUT_BUFFERS - 1:
                yield collecting.popleft().result()

        def stage(frame: np.ndarray, index: int) -> None:
            """Copy frame ``index`` into its pinned buffer (on the helper thread)."""
            staging = index % STAGED_FRAMES
            if buffers.staged[staging] is not None:
                buffers.staged[staging].synchronize()  # its previous frame went to the device
            np.copyto(buffers.pinned_in[staging], frame)

        def next_frame() -> np.ndarray | None:
            frame = next(source, None)
            if frame is None:
                return None
            frame = checked_frame(frame)
            if buffers is not None and frame.shape != buffers.key[0]:
                raise ValueError(
                    f"all frames of a clip must have one shape, got {buffers.key[0]} and then {frame.shape}"
                )
            return frame

        source = iter(host_frames)
        staging_queue: collections.deque[concurrent.futures.Future] = collections.deque()
        read = 0

        def read_ahead() -> None:
            """Keep STAGED_FRAMES - 1 frames being staged ahead of the one uploading."""
            nonlocal buffers, read
            while len(staging_queue) < STAGED_FRAMES - 1:
                frame = next_frame()
                if frame is None:
                    return
                if buffers is None:
                    check_frame_shape(frame.shape, params)
                    buffers = self._buffers_for(frame, ring_size)
                staging_queue.append(self._helper.submit(stage, frame, read))
                read += 1

        read_ahead()
        while staging_queue:
            staging_queue.popleft().result()
            slot, staging = arrived % ring_size, arrived % STAGED_FRAMES
            # The slot's previous frame, arrived - ring_size, is last read by output
            # arrived - ring_size + Dp, which was filtered before: wait for it on the GPU.
            previous = buffers.computed[(arrived - ring_size + params.frames_past) % ring_size]
            if arrived >= ring_size and previous is not None:
                self.upload_stream.wait_event(previous)
            with self.upload_stream:
                buffers.device_in.set(buffers.pinned_in[staging], stream=self.upload_stream)
                buffers.staged[staging] = self.upload_stream.record()
                self.frames.to_planar(buffers.device_in, out=buffers.ring[slot])
                buffers.uploaded[slot] = self.upload_stream.record()
            arrived += 1
            # Later frames are staged on one helper thread while this one filters and earlier
            # outputs are copied out on another: numpy's copies release the GIL.
            read_ahead()
            while filtered + params.frames_future < arrived:
                yield from filter_and_collect()
        while filtered < arrived:
            yield from filter_and_collect()
        while collecting:
            yield collecting.popleft().result()


class _PipelineBuffers:
    """The device ring, the pinned and device staging buffers and the events of a pipeline."""

    def __init__(self, cupy: Any, shape: tuple[int, ...], in_dtype: Any, out_dtype: Any, ring_size: int) -> None:
        height, width, channels = shape
        self.key = (shape, np.dtype(in_dtype), np.dtype(out_dtype), ring_size)
        self.ring = [cupy.empty((channels, height, width), cupy.float32) for _ in range(ring_size)]
        self.pinned_in = [_pinned(cupy, shape, in_dtype) for _ in range(STAGED_FRAMES)]
        self.device_in = cupy.empty(shape, in_dtype)  # the upload stream converts it before the next copy
        self.pinned_out = [_pinned(cupy, shape, out_dtype) for _ in range(OUTPUT_BUFFERS)]
        self.device_out = [cupy.empty(shape, out_dtype) for _ in range(OUTPUT_BUFFERS)]
        self.reset()

    def reset(self) -> None:
        """Forget the events of a previous run (its work has finished: the run collected it all)."""
        ring_size = len(self.ring)
        self.uploaded: list[Any] = [None] * ring_size  # slot -> event: frame converted
        self.computed: list[Any] = [None] * ring_size  # output index mod ring_size -> event: filtered
        self.staged: list[Any] = [None] * STAGED_FRAMES  # event: pinned_in copied to the device
        self.downloaded: list[Any] = [None] * OUTPUT_BUFFERS  # event: device_out copied to pinned_out


def _pinned(cupy: Any, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A page-locked host array, so that copies to and from the GPU run asynchronously."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    memory = cupy.cuda.alloc_pinned_memory(count * dtype.itemsize)
    return np.frombuffer(memory, dtype=dtype, count=count).reshape(shape)
