"""Every backend against the float64 reference over the grid of the foundation issue.

Tolerance: max abs difference <= 1e-4 on values in [0, 1]. float32 rounding of the distances,
running sums and accumulations stays near 1e-6 here; 1e-4 leaves room for long sums without
letting a wrong offset, border or weight (errors of 1e-2 and more) through.
"""

import itertools

import numpy as np
import pytest
from conftest import noisy_clip, random_color_transform
from reference import reference_denoise

from engine import Denoiser, NLMParams

TOLERANCE = 1e-4
GRID = list(
    itertools.product(
        [0, 1, 2, 4],  # patch_radius
        [0, 1, 3, 5],  # search_radius
        [(0, 0), (1, 0), (0, 1), (2, 1)],  # frames_past, frames_future
        ["bisquare", "exponential"],
        ["one", "max"],
        [False, True],  # color transform
    )
)
CLIP_KINDS = ["random", "bigbuckbunny", "bikes"]


@pytest.mark.parametrize(("patch", "search", "temporal", "weighting", "center", "transformed"), GRID)
def test_backend_matches_reference(backend_method, patch, search, temporal, weighting, center, transformed) -> None:
    case = GRID.index((patch, search, temporal, weighting, center, transformed))
    clip = noisy_clip(CLIP_KINDS[case % 3], seed=case, frames=4, shape=(13, 16))
    params = NLMParams(
        h=25 if weighting == "exponential" else 40,
        patch_radius=patch,
        search_radius=search,
        frames_past=temporal[0],
        frames_future=temporal[1],
        weighting=weighting,
        center_weight=center,
        color_transform=random_color_transform(case) if transformed else None,
    )
    backend, method = backend_method
    denoiser = Denoiser(params, backend, method=method)
    for index in (0, 1, 3):  # the first, an inner and the last frame: truncated windows too
        result = denoiser.denoise_frame(clip, index)
        assert result.dtype == np.float32 and result.shape == clip[index].shape
        np.testing.assert_allclose(result, reference_denoise(clip, index, params), rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize(("search", "patch"), [(0, 0), (1, 2), (3, 4), (5, 1)])
def test_frames_at_the_size_limit(backend_method, search, patch) -> None:
    """Frames of A + B + 1 pixels, the smallest accepted, in one dimension and in both."""
    smallest = search + patch + 1
    params = NLMParams(h=40, patch_radius=patch, search_radius=search, frames_past=1, frames_future=1)
    backend, method = backend_method
    for shape in [(smallest, smallest), (smallest, 11), (12, smallest)]:
        clip = noisy_clip("random", seed=smallest, frames=3, shape=shape)
        result = Denoiser(params, backend, method=method).denoise_frame(clip, 1)
        np.testing.assert_allclose(result, reference_denoise(clip, 1, params), rtol=0, atol=TOLERANCE)


def test_real_frames_larger_window(backend_method) -> None:
    """A real crop at its full 36 x 44 with the default patch and a wide window."""
    clip = noisy_clip("bigbuckbunny", seed=5, frames=5, shape=(36, 44))
    params = NLMParams(h=35, search_radius=7, frames_past=2, frames_future=2)
    backend, method = backend_method
    result = Denoiser(params, backend, method=method).denoise_frame(clip, 2)
    np.testing.assert_allclose(result, reference_denoise(clip, 2, params), rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_integer_gray_and_color_input(backend_method, dtype) -> None:
    """Integers are scaled by their full scale; gray (T, H, W) clips come back as (H, W, 1)."""
    full_scale = np.iinfo(dtype).max
    color = (noisy_clip("bikes", seed=3, frames=3, shape=(20, 22)).clip(0, 1) * full_scale).round().astype(dtype)
    gray = color[..., 1]
    params = NLMParams(h=40, patch_radius=2, search_radius=2)
    backend, method = backend_method
    denoiser = Denoiser(params, backend, method=method)
    for clip in (color, gray, list(color)):
        result = denoiser.denoise_frame(clip, 2)
        as_float = np.asarray(clip, dtype=np.float64).reshape(3, 20, 22, -1) / full_scale
        assert result.dtype == np.float32 and result.shape == as_float.shape[1:]
        np.testing.assert_allclose(result, reference_denoise(as_float, 2, params), rtol=0, atol=TOLERANCE)
