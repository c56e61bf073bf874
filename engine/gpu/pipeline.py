"""The three-stream GPU pipeline: uploads, filtering and downloads of a clip overlapped."""

from __future__ import annotations

import collections
import concurrent.futures
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from nlmeans_studio.engine.filters.fused_gpu import FusedGpuFilter
from nlmeans_studio.engine.frames import check_frame_shape, checked_frame
from nlmeans_studio.engine.gpu.device import empty_device_frame
from nlmeans_studio.engine.params import NLMParams

STAGED_FRAMES = 4  # pinned input buffers of a pipeline: frames read and staged ahead of the GPU
OUTPUT_BUFFERS = 3  # device and pinned output buffers of a pipeline: outputs in flight


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
        self.filter = FusedGpuFilter(cupy)
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
                self.filter(window, index - first, params, out=buffers.device_out[slot])
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
                self.filter.frames.convert(buffers.device_in, buffers.ring[slot])
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
        self.key = (shape, np.dtype(in_dtype), np.dtype(out_dtype), ring_size)
        self.ring = [empty_device_frame(cupy, shape, in_dtype) for _ in range(ring_size)]
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
