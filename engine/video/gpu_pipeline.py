"""The three-stream GPU pipeline: uploads, filtering and downloads of a clip overlapped."""

from __future__ import annotations

import collections
import concurrent.futures
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..frames import FULL_SCALE_BITS, checked_frame, split_yuv_planes, yuv_planes_size
from ..gpu.device import empty_device_frame, pinned_array
from ..gpu.yuv import planes_to_rgb, rgb_to_planes
from ..media.yuv import YuvFrame, YuvLayout
from .filters.fused_gpu import FusedGpuFilter
from .params import NLMParams, check_frame_shape

STAGING_THREADS = 3  # frames copied into pinned memory at once: one thread copies 7-11 GB/s, the bus takes 50
STAGED_FRAMES = STAGING_THREADS + 2  # pinned input buffers of a pipeline: frames read and staged ahead of the GPU
OUTPUT_BUFFERS = 3  # device and pinned output buffers of a pipeline: outputs in flight


class GpuPipeline:
    """Host frames in, host frames out, with uploads, filtering and downloads overlapped.

    Frames are (H, W, C) arrays or ``YuvFrame``s: Y'CbCr planes cross the bus as decoded and are
    converted to RGB of their samples' dtype on the GPU, and outputs come back as planes of a
    layout the caller names (``run``'s ``yuv``): the same samples ``media.yuv`` gives on the CPU.

    Each input frame crosses the bus once, in its own dtype (uint8 / uint16 / float32), from a
    pinned staging buffer (filled by one of STAGING_THREADS helper threads, frames ahead, several
    frames at once: one thread's copy takes longer than the filter at small windows) on the upload stream, and
    is converted into a slot of a ring of Dp + Df + 2 device frames that every output needing
    it reads. Outputs are filtered on the compute stream straight into ``out_dtype`` and come
    back on the download stream through pinned buffers, copied into the returned arrays by a
    second helper thread, or handed out as they are (``views``). Buffers are made once, for the
    first frame's shape; nothing is allocated per frame after that but the returned host arrays
    (none with ``views``). ``close`` stops the threads.
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
        self._helper = concurrent.futures.ThreadPoolExecutor(STAGING_THREADS, thread_name_prefix="nlmeans-staging")
        self._collector = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="nlmeans-collect")

    def close(self) -> None:
        """Wait for the GPU work and the helper threads of an unfinished run, then stop the threads."""
        for stream in (self.upload_stream, self.compute_stream, self.download_stream):
            stream.synchronize()
        self._helper.shutdown(wait=True)
        self._collector.shutdown(wait=True)

    def _buffers_for(self, frame: np.ndarray | YuvFrame, ring_size: int, yuv: YuvLayout | None) -> _PipelineBuffers:
        """Return the buffers of the last run when they fit this frame and window (pinned memory is slow to make)."""
        planes_in = frame.layout if isinstance(frame, YuvFrame) else None
        dtype = frame.layout.sample_dtype if planes_in is not None else frame.dtype
        key = (frame.shape, np.dtype(dtype), self.out_dtype, ring_size, planes_in, yuv)
        if self._buffers is None or self._buffers.key != key:
            self._buffers = _PipelineBuffers(self.cupy, key)
        return self._buffers

    def run(
        self,
        host_frames: Iterable[np.ndarray | YuvFrame],
        *,
        views: bool = False,
        outputs: range | None = None,
        yuv: YuvLayout | None = None,
    ) -> Iterator[np.ndarray | YuvFrame]:
        """Yield the denoised frames in order; frame t once frame t + Df has been read.

        ``views``: yield the pipeline's own pinned output buffers instead of new arrays (one host
        copy a frame less), each valid until the output after it is asked for. ``outputs``: only
        the frames with these indices are filtered and yielded, the others are read as the
        window's context alone (a chunk of a longer clip). ``yuv``: yield each output as a
        ``YuvFrame`` of this layout, converted from the RGB of ``out_dtype`` on the GPU.
        """
        wanted = range(0, 2**62) if outputs is None else outputs
        if wanted.step != 1:
            raise ValueError(f"outputs must be a range of consecutive frames, got {outputs}")
        yield from _PipelineRun(self, host_frames, views, wanted, yuv).outputs()


class _PipelineRun:
    """One clip through a ``GpuPipeline``: the counters and queues its stages share.

    Frames are read and staged into pinned buffers on a helper thread (``read_ahead``),
    uploaded and converted into the ring on the upload stream (``upload_next``), filtered on
    the compute stream and downloaded on the download stream (``filter_next``), and copied out
    of the pinned output buffers on a second helper thread (``collect``). Events order the
    streams; the buffers are the pipeline's, made when the first frame shows their shape.
    """

    def __init__(
        self,
        pipeline: GpuPipeline,
        host_frames: Iterable[np.ndarray | YuvFrame],
        views: bool,
        wanted: range,
        yuv: YuvLayout | None,
    ) -> None:
        self.pipeline = pipeline
        self.views = views
        self.wanted = wanted
        self.yuv = yuv
        self.params = params = pipeline.params
        self.ring_size = params.frames_past + params.frames_future + 2
        self.source = iter(host_frames)
        self.buffers: _PipelineBuffers | None = None
        self.read = 0  # frames read from the source (and sent to staging)
        self.arrived = 0  # frames uploaded into the ring
        self.filtered = 0  # outputs filtered
        self.staging: collections.deque[concurrent.futures.Future] = collections.deque()
        self.collecting: collections.deque[int | concurrent.futures.Future] = collections.deque()

    def outputs(self) -> Iterator[np.ndarray]:
        """Yield the run's outputs.

        Each frame uploaded as soon as it is staged, each output filtered as soon as its window has
        arrived, outputs yielded once OUTPUT_BUFFERS - 1 are in flight.
        """
        frames_future = self.params.frames_future
        self.read_ahead()
        while self.staging:
            self.upload_next()
            # Later frames are staged on one helper thread while this one filters and earlier
            # outputs are copied out on another: numpy's copies release the GIL.
            self.read_ahead()
            while self.filtered + frames_future < self.arrived:
                if (output := self.filter_next()) is not None:
                    yield output
        while self.filtered < self.arrived:
            if (output := self.filter_next()) is not None:
                yield output
        while self.collecting:
            yield self._collected(self.collecting.popleft())

    def read_ahead(self) -> None:
        """Keep STAGED_FRAMES - 1 frames being staged ahead of the one uploading."""
        while len(self.staging) < STAGED_FRAMES - 1:
            frame = self._next_frame()
            if frame is None:
                return
            if self.buffers is None:
                check_frame_shape(frame.shape, self.params)
                self.buffers = self.pipeline._buffers_for(frame, self.ring_size, self.yuv)
            self.staging.append(self.pipeline._helper.submit(self._stage, frame, self.read))
            self.read += 1

    def _next_frame(self) -> np.ndarray | YuvFrame | None:
        frame = next(self.source, None)
        if frame is None:
            return None
        if not isinstance(frame, YuvFrame):
            frame = checked_frame(frame, FULL_SCALE_BITS)  # callers give uint16 frames at full scale
        if self.buffers is not None and frame.shape != self.buffers.key[0]:
            raise ValueError(
                f"all frames of a clip must have one shape, got {self.buffers.key[0]} and then {frame.shape}"
            )
        return frame

    def _stage(self, frame: np.ndarray | YuvFrame, index: int) -> None:
        """Copy frame ``index`` into its pinned buffer (on the helper thread)."""
        staging = index % STAGED_FRAMES
        self.buffers.staged[staging].synchronize()  # its previous frame went to the device
        if isinstance(frame, YuvFrame):
            for part, plane in zip(self.buffers.planes_in(staging), frame.planes, strict=True):
                np.copyto(part, plane)
        else:
            np.copyto(self.buffers.pinned_in[staging], frame)

    def upload_next(self) -> None:
        """Upload the oldest staged frame and convert it into its slot of the ring."""
        self.staging.popleft().result()
        buffers, stream, arrived = self.buffers, self.pipeline.upload_stream, self.arrived
        slot, staging = arrived % self.ring_size, arrived % STAGED_FRAMES
        if arrived >= self.ring_size:
            # The slot's previous frame, arrived - ring_size, is last read by output
            # arrived - ring_size + Dp, which was filtered before: wait for it on the GPU.
            stream.wait_event(buffers.computed[(arrived - self.ring_size + self.params.frames_past) % self.ring_size])
        with stream:
            buffers.device_staged.set(buffers.pinned_in[staging], stream=stream)
            buffers.staged[staging].record(stream)
            if buffers.in_layout is not None:
                shift, coefficients = buffers.in_layout.chroma_shift, buffers.in_coefficients
                planes_to_rgb(self.pipeline.cupy, buffers.device_staged, shift, coefficients, buffers.device_in)
            self.pipeline.filter.frames.convert(buffers.device_in, buffers.ring[slot])
            buffers.uploaded[slot].record(stream)
        self.arrived += 1

    def filter_next(self) -> np.ndarray | None:
        """Filter the next output and start its download (an output not wanted: none of it).

        Return the oldest output once OUTPUT_BUFFERS - 1 are in flight, else None.

        An output's pinned buffer is rewritten by the download of output index + OUTPUT_BUFFERS,
        which is issued only after that output was returned, its copy complete.
        """
        buffers, params, ring_size = self.buffers, self.params, self.ring_size
        index, slot = self.filtered, self.filtered % OUTPUT_BUFFERS
        first = max(0, index - params.frames_past)
        last = min(self.arrived - 1, index + params.frames_future)
        compute, download = self.pipeline.compute_stream, self.pipeline.download_stream
        if index not in self.wanted:
            buffers.computed[index % ring_size].record(compute)  # after the outputs before it, which read the ring
            self.filtered += 1
            return None
        for position in range(first, last + 1):
            compute.wait_event(buffers.uploaded[position % ring_size])
        compute.wait_event(buffers.downloaded[slot])  # device_out[slot] was read
        with compute:
            window = [buffers.ring[position % ring_size] for position in range(first, last + 1)]
            self.pipeline.filter(window, index - first, params, out=buffers.device_out[slot])
            if self.yuv is not None:
                shift, coefficients = self.yuv.chroma_shift, buffers.out_coefficients
                rgb_to_planes(self.pipeline.cupy, buffers.device_out[slot], shift, coefficients,
                              buffers.device_yuv[slot], buffers.differences)  # fmt: skip
            buffers.computed[index % ring_size].record(compute)
        download.wait_event(buffers.computed[index % ring_size])
        # Not blocking: the collector thread waits for it (a blocking copy held this thread for the
        # filter and the copy, 0.3 ms of a 0.6 ms frame at 1080p, so that the next frame waited).
        downloaded = buffers.device_out[slot] if self.yuv is None else buffers.device_yuv[slot]
        downloaded.get(stream=download, out=buffers.pinned_out[slot], blocking=False)
        buffers.downloaded[slot].record(download)
        self.filtered += 1
        # A view is waited for here (its copy is done by the time it is yielded, OUTPUT_BUFFERS - 2
        # outputs later: a hand-off to the helper thread would cost more); a new array is made there.
        self.collecting.append(index if self.views else self.pipeline._collector.submit(self.collect, index))
        if len(self.collecting) >= OUTPUT_BUFFERS - 1:
            return self._collected(self.collecting.popleft())
        return None

    def _collected(self, output: int | concurrent.futures.Future) -> np.ndarray:
        """Return the output a ``collecting`` entry stands for: a view's index, or a copy's future."""
        return self.collect(output) if isinstance(output, int) else output.result()

    def collect(self, index: int) -> np.ndarray | YuvFrame:
        """Output ``index``: its pinned buffer with ``views``, else a new host array (on the helper thread).

        As a ``YuvFrame`` of that buffer's planes where ``run`` was given ``yuv``.
        """
        self.buffers.downloaded[index % OUTPUT_BUFFERS].synchronize()
        output = self.buffers.pinned_out[index % OUTPUT_BUFFERS]
        output = output if self.views else output.copy()
        if self.yuv is None:
            return output
        height, width, _ = self.buffers.key[0]
        return YuvFrame(split_yuv_planes(output, height, width, self.yuv.chroma_shift), self.yuv)


class _PipelineBuffers:
    """The device ring, the pinned and device staging buffers and the events of a pipeline.

    ``key``: the frames' (H, W, C), their dtype (a ``YuvFrame``'s samples'), the outputs' dtype,
    the ring's size, the inputs' Y'CbCr layout (``in_layout``, None for arrays) and the outputs'
    (``out_layout``: ``run``'s ``yuv``), with their coefficients on the device (None without a layout).
    Y'CbCr frames are staged and uploaded as one buffer of their planes (``device_staged``)
    and converted into ``device_in``; Y'CbCr outputs are converted from ``device_out`` into
    ``device_yuv`` and downloaded from there.

    Events are made here too and recorded again for every frame. One not yet recorded is
    complete (waiting on it or synchronizing with it returns at once), as is one a previous run
    recorded: that run has finished or, abandoned, been waited for by ``GpuPipeline.close``, or
    its work is merely ordered before the new run's.
    """

    def __init__(self, cupy: Any, key: tuple) -> None:
        self.key = key
        shape, in_dtype, out_dtype, ring_size, self.in_layout, self.out_layout = key
        height, width, _ = shape

        def planes(layout: Any) -> tuple[int]:
            return (yuv_planes_size(height, width, layout.chroma_shift),)

        def coefficients(layout: Any) -> Any:
            return None if layout is None else cupy.asarray(layout.coefficients())

        staged = shape if self.in_layout is None else planes(self.in_layout)
        self.ring = [empty_device_frame(cupy, shape, in_dtype) for _ in range(ring_size)]
        self.pinned_in = [pinned_array(cupy, staged, in_dtype) for _ in range(STAGED_FRAMES)]
        self.device_staged = cupy.empty(staged, in_dtype)  # the upload stream converts it before the next copy
        self.device_in = self.device_staged if self.in_layout is None else cupy.empty(shape, in_dtype)
        self.device_out = [cupy.empty(shape, out_dtype) for _ in range(OUTPUT_BUFFERS)]
        self.in_coefficients, self.out_coefficients = coefficients(self.in_layout), coefficients(self.out_layout)
        if self.out_layout is None:
            self.device_yuv, self.differences = [], None
            self.pinned_out = [pinned_array(cupy, shape, out_dtype) for _ in range(OUTPUT_BUFFERS)]
        else:
            out_planes, sample = planes(self.out_layout), self.out_layout.sample_dtype
            self.device_yuv = [cupy.empty(out_planes, sample) for _ in range(OUTPUT_BUFFERS)]
            self.pinned_out = [pinned_array(cupy, out_planes, sample) for _ in range(OUTPUT_BUFFERS)]
            self.differences = cupy.empty((2, height, width), np.float32)  # the compute stream's chroma scratch

        def events(count: int) -> list[Any]:
            return [cupy.cuda.Event(disable_timing=True) for _ in range(count)]

        self.uploaded = events(ring_size)  # slot -> frame converted
        self.computed = events(ring_size)  # output index mod ring_size -> filtered
        self.staged = events(STAGED_FRAMES)  # pinned_in copied to the device
        self.downloaded = events(OUTPUT_BUFFERS)  # device_out copied to pinned_out

    def planes_in(self, staging: int) -> list[np.ndarray]:
        """Return the Y, Cb, Cr planes of staging buffer ``staging`` (views)."""
        height, width, _ = self.key[0]
        return split_yuv_planes(self.pinned_in[staging], height, width, self.in_layout.chroma_shift)
