"""A clip split over every GPU (engine/gpu/video_devices.py) equals one GPU's export stream."""

from __future__ import annotations

import numpy as np
import pytest

from nlmeans_studio.engine import Denoiser, NLMParams
from nlmeans_studio.engine.backend import gpu_unavailable_reason


@pytest.mark.gpu
@pytest.mark.parametrize(("past", "future"), [(1, 1), (2, 0)])
def test_every_gpu_equals_one(past, future) -> None:
    if gpu_unavailable_reason() is not None:
        pytest.skip(gpu_unavailable_reason())
    import cupy

    from nlmeans_studio.engine.gpu.video_devices import denoise_clip_on_devices

    frames = list(np.random.default_rng(5).integers(0, 256, (9, 40, 48, 3), dtype=np.uint8))
    params = NLMParams(h=30.0, patch_radius=2, search_radius=3, frames_past=past, frames_future=future)
    one = list(Denoiser(params, backend="gpu", method="fused").export_stream(frames))
    devices = list(range(cupy.cuda.runtime.getDeviceCount()))
    several = list(denoise_clip_on_devices(frames, params, devices))
    assert len(several) == len(frames)
    np.testing.assert_array_equal(np.array(several), np.array(one))
