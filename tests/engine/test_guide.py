"""Reference-guided filtering (KNLMeansCL's rclip): distances from a guide clip, the average
from the source (issue 19)."""

import itertools

import numpy as np
import pytest
from clips import noisy_clip
from reference import reference_denoise

from nlmeans_studio.engine import Denoiser, NLMParams


@pytest.mark.parametrize(
    ("weighting", "center_weight", "transformed"),
    list(itertools.product(["bisquare", "exponential"], ["one", "max"], [False, True])),
)
def test_guided_filter_matches_the_reference(weighting, center_weight, transformed) -> None:
    clip = noisy_clip("bikes", seed=3)
    guide = noisy_clip("bikes", seed=4)  # another noisy pass of the same frames, as a pre-filter would differ
    transform = np.array([[1.2, 0.1, 0.0], [0.1, 0.9, 0.2], [0.0, 0.2, 1.1]]) if transformed else None
    params = NLMParams(
        h=30, patch_radius=1, search_radius=2, weighting=weighting, center_weight=center_weight,
        color_transform=transform,
    )  # fmt: skip
    for index, method in itertools.product((0, 2, 4), ("fused", "cascade")):
        result = Denoiser(params, backend="cpu", method=method).denoise_frame(clip, index, guide=guide)
        expected = reference_denoise(clip, index, params, guide=guide)
        np.testing.assert_allclose(result, expected, rtol=0, atol=1e-4)  # TOLERANCE of test_filter_exact
    # The guide changes the weights, not what is averaged: a guide equal to the clip is no guide.
    plain = Denoiser(params, backend="cpu").denoise_frame(clip, 2)
    np.testing.assert_array_equal(Denoiser(params, backend="cpu").denoise_frame(clip, 2, guide=clip), plain)


def test_guide_errors() -> None:
    clip = noisy_clip("random", seed=5)
    params = NLMParams(h=20, patch_radius=1, search_radius=1)
    on_gpu = Denoiser(params, backend="cpu", method="cascade")
    on_gpu._window_filter.backend = "gpu"  # the branch, without a device
    with pytest.raises(ValueError, match="a guide clip needs the CPU backend, got gpu cascade"):
        on_gpu.denoise_frame(clip, 1, guide=clip)
    with pytest.raises(ValueError, match="the guide must have the clip's 5 frames, got 4"):
        Denoiser(params, backend="cpu").denoise_frame(clip, 1, guide=clip[:4])
    with pytest.raises(ValueError, match="all frames of a clip must have one shape"):
        Denoiser(params, backend="cpu").denoise_frame(clip, 1, guide=clip[:, :, :-1])
