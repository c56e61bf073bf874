"""A clip in memory denoised over several GPUs: contiguous frame ranges, one per device, each
read with its Dp frames before and Df after (engine/gpu/slabs.py ``frame_ranges``) and filtered by
that device's own ``GpuPipeline`` concurrently; the ranges' outputs, in order, equal one GPU's."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from nlmeans_studio.engine.backend import cupy_module
from nlmeans_studio.engine.gpu.slabs import frame_ranges
from nlmeans_studio.engine.params import NLMParams


def denoise_clip_on_devices(
    frames: Sequence[np.ndarray], params: NLMParams, devices: Sequence[int], dtype: Any = np.uint8
) -> Iterator[np.ndarray]:
    """Yield the denoised frames of ``frames`` ((H, W, C) each, all in memory) in order, as
    ``Denoiser.export_stream`` would on one GPU, the clip split over ``devices``.

    The first Dp outputs of each range but the first are the window's lead-in, filtered with a
    truncated window and dropped; a range's frames are yielded once all ranges before it are.
    """
    cupy = cupy_module()
    from nlmeans_studio.engine.gpu.pipeline import GpuPipeline

    def run(device: int, start: int, stop: int, read_start: int, read_stop: int) -> list[np.ndarray]:
        with cupy.cuda.Device(device):
            pipeline = GpuPipeline(cupy, params, np.dtype(dtype))
            try:
                outputs = list(pipeline.run(frames[read_start:read_stop]))
            finally:
                pipeline.close()
        return outputs[start - read_start : stop - read_start]

    ranges = frame_ranges(len(frames), len(devices), params.frames_past, params.frames_future)
    with concurrent.futures.ThreadPoolExecutor(len(ranges)) as pool:
        futures = [pool.submit(run, device, *frame_range) for device, frame_range in zip(devices, ranges, strict=False)]
        for future in futures:
            yield from future.result()
