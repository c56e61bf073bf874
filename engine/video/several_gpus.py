"""A clip denoised over several GPUs as it streams: chunks of frames dealt to the devices in turn.

Chunk k outputs frames [kK, (k+1)K) and is read with its Dp frames before and Df after (the
temporal window, truncated at the clip's ends as DESIGN.md §1 does), so its outputs equal the
whole clip's; the context frames are uploaded but not filtered (``GpuPipeline.run``'s
``outputs``), so the chunks cost (Dp + Df) / K more uploads and no more filtering, and K can be
small enough that every device gets chunks of a short clip. The devices filter chunks concurrently, each with its own
``GpuPipeline``; chunks are yielded in order, and at most one chunk per device waits or runs,
so memory stays bounded however long the clip (unlike contiguous ranges, one per device, which
would hold a device's whole range until the ranges before it were written).
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..backend import cupy_module, gpu_name, resolve_devices
from ..frames import output_dtype
from .params import NLMParams

CHUNK_BYTES = 1 << 28  # input frames of one chunk: K is as many frames as fit (at least MIN_CHUNK)
MIN_CHUNK = 8

ChunkFilter = Callable[[list[np.ndarray], range], list[np.ndarray]]  # frames read, outputs wanted -> those outputs


def chunk_frames(frame_bytes: int, params: NLMParams) -> int:
    """K for frames of ``frame_bytes``.

    CHUNK_BYTES of frames (10 at 4K, 43 at 1080p, RGB uint8), and at least 4 (Dp + Df) so that
    the context frames are at most a fifth of the uploads.
    """
    return max(MIN_CHUNK, 4 * (params.frames_past + params.frames_future), CHUNK_BYTES // max(frame_bytes, 1))


def filter_in_chunks(
    frames: Iterable[np.ndarray], params: NLMParams, filters: Sequence[ChunkFilter], chunk: int
) -> Iterator[np.ndarray]:
    """Yield the outputs of ``frames`` in order, chunks of ``chunk`` outputs dealt to ``filters`` in turn.

    Each filter runs on its own thread, its chunks one after another.
    """
    past, future = params.frames_past, params.frames_future
    held: collections.deque[np.ndarray] = collections.deque()  # frames [first_held, first_held + len)
    first_held = 0
    pending: collections.deque[concurrent.futures.Future] = collections.deque()
    workers = [
        concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"nlmeans-device-{n}") for n in range(len(filters))
    ]
    submitted = 0  # chunks

    def submit(stop: int) -> None:
        """Chunk ``submitted``: outputs [start, stop) from the held frames [read_start, read_stop)."""
        nonlocal submitted, first_held
        start = submitted * chunk
        read_start = max(0, start - past)
        window = list(held)[read_start - first_held :]
        lead = start - read_start
        filter_ = filters[submitted % len(filters)]
        pending.append(workers[submitted % len(filters)].submit(filter_, window, range(lead, lead + stop - start)))
        submitted += 1
        while held and first_held < submitted * chunk - past:  # no later chunk reads these
            held.popleft()
            first_held += 1

    try:
        for frame in frames:
            held.append(frame)
            read = first_held + len(held)  # frames read so far
            if read == (submitted + 1) * chunk + future:
                submit((submitted + 1) * chunk)
                while len(pending) > len(filters):
                    yield from pending.popleft().result()
        read = first_held + len(held)
        while submitted * chunk < read:
            submit(min((submitted + 1) * chunk, read))
        while pending:
            yield from pending.popleft().result()
    finally:
        for worker in workers:
            worker.shutdown(wait=True, cancel_futures=True)


class DevicesDenoiser:
    """``Denoiser.export_stream`` over several GPUs (the fused filter, one ``GpuPipeline`` each).

    Parameters
    ----------
    params : NLMParams
    devices : "all" or sequence of int
        CUDA device ids (``backend.resolve_devices``).
    chunk : int, optional
        Outputs per chunk, K; by default as many frames as CHUNK_BYTES holds (``chunk_frames``).
    """

    backend, method = "gpu", "fused"

    def __init__(self, params: NLMParams, devices: Sequence[int] | str, chunk: int | None = None) -> None:
        if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
            raise ValueError(f"chunk must be a whole number of frames >= 1, got {chunk!r}")
        self.params = params
        self.chunk = chunk
        self.devices = resolve_devices(devices)
        self.cupy = cupy_module()
        self.device_name = f"{len(self.devices)} x {gpu_name()}" if len(self.devices) > 1 else gpu_name()

    def export_stream(self, frames: Iterable[np.ndarray], dtype: Any = np.uint8) -> Iterator[np.ndarray]:
        """Yield the denoised frames of ``frames`` in order, as (H, W, C) arrays of ``dtype``.

        Equal to one GPU's ``Denoiser.export_stream``.
        """
        from .gpu_pipeline import GpuPipeline

        dtype = output_dtype(dtype)
        source = iter(frames)
        first = next(source, None)
        if first is None:
            return
        with contextlib.ExitStack() as stack:
            pipelines = []
            for device in self.devices:
                with self.cupy.cuda.Device(device):
                    pipelines.append(
                        stack.enter_context(contextlib.closing(GpuPipeline(self.cupy, self.params, dtype)))
                    )

            def on_device(device: int, pipeline: GpuPipeline) -> ChunkFilter:
                def run(window: list[np.ndarray], outputs: range) -> list[np.ndarray]:
                    with self.cupy.cuda.Device(device):
                        return list(pipeline.run(window, outputs=outputs))

                return run

            filters = [on_device(device, pipeline) for device, pipeline in zip(self.devices, pipelines, strict=True)]
            yield from filter_in_chunks(itertools.chain([first], source), self.params, filters, self.chunk_size(first))

    def chunk_size(self, frame: np.ndarray) -> int:
        """K, the outputs of a chunk, for a clip of frames like ``frame``."""
        return self.chunk or chunk_frames(np.asarray(frame).nbytes, self.params)
