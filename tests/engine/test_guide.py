"""Reference-guided filtering (KNLMeansCL's rclip): distances from a guide clip, the average
from the source (issue 19), on every backend and method.

Tolerance: as the exactness grid (test_filter_exact), max abs difference <= 1e-4 against the
float64 reference, so two backends agree within 2e-4.
"""

import itertools

import numpy as np
import pytest
from clips import noisy_clip, random_color_transform
from reference import reference_denoise

from nlmeans_studio.engine import Denoiser, NLMParams

TOLERANCE = 1e-4  # as test_filter_exact: float32 rounding is near 1e-6, a wrong weight 1e-2


@pytest.mark.parametrize(
    ("weighting", "center_weight", "transformed"),
    list(itertools.product(["bisquare", "exponential"], ["one", "max"], [False, True])),
)
def test_guided_filter_matches_the_reference(backend_method, weighting, center_weight, transformed) -> None:
    clip = noisy_clip("bikes", seed=3)
    guide = noisy_clip("bikes", seed=4)  # another noisy pass of the same frames, as a pre-filter would differ
    transform = np.array([[1.2, 0.1, 0.0], [0.1, 0.9, 0.2], [0.0, 0.2, 1.1]]) if transformed else None
    params = NLMParams(
        h=30, patch_radius=1, search_radius=2, weighting=weighting, center_weight=center_weight,
        color_transform=transform,
    )  # fmt: skip
    backend, method = backend_method
    denoiser = Denoiser(params, backend, method=method)
    for index in (0, 2, 4):
        result = denoiser.denoise_frame(clip, index, guide=guide)
        assert result.dtype == np.float32 and result.shape == clip[index].shape
        np.testing.assert_allclose(result, reference_denoise(clip, index, params, guide=guide), rtol=0, atol=TOLERANCE)
    # The guide changes the weights, not what is averaged: a guide equal to the clip is no guide
    # (the same arithmetic; the GPU's guided kernel may tile the frame otherwise, which reorders
    # the sums of split tiles: float32 rounding).
    plain = denoiser.denoise_frame(clip, 2)
    np.testing.assert_allclose(denoiser.denoise_frame(clip, 2, guide=clip), plain, rtol=0, atol=1e-6)


# The GPU against the CPU and the reference: both weightings with their centre weights, with
# and without a transform, float and 8-bit frames (the guide of the clip's dtype; 8-bit frames
# take no packed path with a guide), radii and windows of several rounds and tiles, and h from
# 0.5 to 500 levels, where relative exponential weights rebase and redo rounds.
GPU_CASES = [
    pytest.param(
        weighting,
        center,
        transformed,
        dtype,
        window,
        id=f"{weighting}-{center}-{transformed}-{dtype.__name__}-{window}",
    )
    for (weighting, center), (transformed, dtype, window) in itertools.product(
        [("bisquare", "one"), ("exponential", "max")],
        [
            (False, np.float32, (1, 2, 1, 1)),  # (B, A, Dp, Df)
            (False, np.uint8, (4, 3, 2, 0)),
            (True, np.float32, (3, 5, 0, 1)),
            (True, np.uint8, (2, 1, 1, 1)),
        ],
    )
]


@pytest.mark.gpu
@pytest.mark.parametrize(("weighting", "center_weight", "transformed", "dtype", "window"), GPU_CASES)
def test_gpu_guided_frames_equal_the_cpu_and_the_reference(weighting, center_weight, transformed, dtype, window):
    patch, search, past, future = window
    clip = noisy_clip("random", seed=patch + search, frames=3, shape=(40, 70))  # 2 x 2 tiles, partial ones
    guide = noisy_clip("random", seed=patch + search + 1, frames=3, shape=(40, 70))
    if dtype == np.uint8:
        clip, guide = (np.clip(np.rint(frames * 255), 0, 255).astype(np.uint8) for frames in (clip, guide))
    scale = 1 / 255 if dtype == np.uint8 else 1
    for h in (0.5, 30, 500):
        params = NLMParams(
            h=h, patch_radius=patch, search_radius=search, frames_past=past, frames_future=future,
            weighting=weighting, center_weight=center_weight,
            color_transform=random_color_transform(search) if transformed else None,
        )  # fmt: skip
        for index in (0, 1):
            cpu = Denoiser(params, "cpu").denoise_frame(clip, index, guide=guide)
            expected = reference_denoise(clip * scale, index, params, guide=guide * scale)
            for method in ("fused", "cascade"):
                gpu = Denoiser(params, "gpu", method=method).denoise_frame(clip, index, guide=guide)
                np.testing.assert_allclose(gpu, expected, rtol=0, atol=TOLERANCE, err_msg=f"{method} h={h}")
                np.testing.assert_allclose(gpu, cpu, rtol=0, atol=2 * TOLERANCE)  # each within 1e-4 of exact


def test_guide_errors() -> None:
    clip = noisy_clip("random", seed=5)
    params = NLMParams(h=20, patch_radius=1, search_radius=1)
    with pytest.raises(ValueError, match="the guide must have the clip's 5 frames, got 4"):
        Denoiser(params, backend="cpu").denoise_frame(clip, 1, guide=clip[:4])
    with pytest.raises(ValueError, match="all frames of a clip must have one shape"):
        Denoiser(params, backend="cpu").denoise_frame(clip, 1, guide=clip[:, :, :-1])
