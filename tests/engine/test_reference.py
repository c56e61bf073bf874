"""The float64 reference against a one-pixel-at-a-time scalar evaluation of DESIGN.md §1."""

import numpy as np
import pytest
from clips import noisy_clip, random_color_transform
from reference import reference_denoise, scalar_denoise_pixel

from nlmeans_studio.engine import NLMParams

CASES = [
    dict(h=30, patch_radius=1, search_radius=2, frames_past=1, frames_future=1),
    dict(h=45, patch_radius=2, search_radius=1, frames_past=0, frames_future=2, weighting="exponential"),
    dict(h=35, patch_radius=0, search_radius=3, frames_past=2, frames_future=0, center_weight="max"),
    dict(
        h=40, patch_radius=1, search_radius=1, frames_past=1, frames_future=1, color_transform=random_color_transform(3)
    ),
    # u in the hundreds to thousands: exp(-u) leaves float64's range, the relative weights do not.
    dict(h=0.5, patch_radius=1, search_radius=2, frames_past=1, frames_future=1, weighting="exponential"),
    dict(h=0.5, patch_radius=2, search_radius=1, frames_past=1, weighting="exponential", center_weight="max"),
]


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_reference_matches_scalar_evaluation(case: dict) -> None:
    clip = noisy_clip("random", seed=11, frames=3, shape=(7, 8))
    params = NLMParams(**case)
    for index in range(3):
        expected = reference_denoise(clip, index, params)
        for y, x in [(0, 0), (3, 4), (6, 7), (0, 7), (5, 1)]:
            # Both are float64 sums of the same terms in another order: rounding only.
            np.testing.assert_allclose(
                expected[y, x], scalar_denoise_pixel(clip, index, y, x, params), rtol=0, atol=1e-12
            )


def test_reference_is_not_the_identity() -> None:
    """The cases above would hide nothing if the filter did nothing."""
    clip = noisy_clip("random", seed=11, frames=3, shape=(7, 8))
    assert np.abs(reference_denoise(clip, 1, NLMParams(**CASES[0])) - clip[1]).max() > 0.01


def test_reference_keeps_relative_weights_where_exp_underflows() -> None:
    """At h = 0.5 every u of the window passes 745, where float64's exp(-u) is 0; with the
    largest weight as the centre's, the best other offset still weighs as much as the centre."""
    clip = noisy_clip("random", seed=11, frames=3, shape=(7, 8))
    params = NLMParams(**CASES[-1])
    result = reference_denoise(clip, 1, params)
    assert np.isfinite(result).all()
    assert np.abs(result - clip[1]).min(axis=-1).max() > 0.01
