"""NLMParams refuses every bad value with a message naming the field, the value and the range."""

import numpy as np
import pytest

from nlmeans_studio.engine import NLMParams


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(h=0), r"h must be a finite number > 0 \(8-bit levels\) in 0.001..10000, got 0"),
        (dict(h=1e-300), r"h must be a finite number > 0 .* in 0.001..10000, got 1e-300"),
        (dict(h=2e4), r"h must be a finite number > 0 .* in 0.001..10000, got 20000.0"),
        (dict(h=-3.0), r"h must be a finite number > 0 .*got -3.0"),
        (dict(h=float("nan")), r"h must be a finite number > 0 .*got nan"),
        (dict(h=float("inf")), r"h must be a finite number > 0 .*got inf"),
        (dict(h="10"), r"h must be a finite number > 0 .*got '10'"),
        (dict(h=True), r"h must be a finite number > 0 .*got True"),
        (dict(patch_radius=9), r"patch_radius must be an integer in 0..8, got 9"),
        (dict(patch_radius=-1), r"patch_radius must be an integer in 0..8, got -1"),
        (dict(patch_radius=2.0), r"patch_radius must be an integer in 0..8, got 2.0"),
        (dict(search_radius=17), r"search_radius must be an integer in 0..16, got 17"),
        (dict(frames_past=9), r"frames_past must be an integer in 0..8, got 9"),
        (dict(frames_future=-1), r"frames_future must be an integer in 0..8, got -1"),
        (dict(weighting="gaussian"), r"weighting must be 'bisquare' or 'exponential', got 'gaussian'"),
        (dict(center_weight="zero"), r"center_weight must be 'one' or 'max', got 'zero'"),
        (
            dict(color_transform=np.eye(2)),
            r"color_transform must be None or a C x C matrix with C = 1 or 3, .*\(2, 2\)",
        ),
        (dict(color_transform=np.ones((3, 2))), r"color_transform must be None or a C x C matrix.*\(3, 2\)"),
        (dict(color_transform=np.full((3, 3), np.nan)), r"color_transform must be finite"),
        (dict(color_transform=np.ones((3, 3))), r"color_transform must be invertible"),
    ],
)
def test_bad_values_are_refused(changes: dict, message: str) -> None:
    arguments = dict(h=10.0) | changes
    with pytest.raises(ValueError, match=message):
        NLMParams(**arguments)


def test_defaults_and_normalisation() -> None:
    params = NLMParams(h=np.float32(12), search_radius=np.int64(5))
    assert (params.h, params.patch_radius, params.search_radius, params.frames_past, params.frames_future) == (
        12.0,
        4,
        5,
        1,
        1,
    )
    assert type(params.h) is float and type(params.search_radius) is int
    assert (params.weighting, params.center_weight, params.color_transform) == ("exponential", "max", None)
    assert params.min_frame_size == 10


def test_frozen_hashable_and_compared_by_value() -> None:
    transform = np.diag([1.0, 2.0, 3.0])
    first = NLMParams(h=10, color_transform=transform)
    second = NLMParams(h=10, color_transform=transform.copy())
    assert first == second and hash(first) == hash(second)
    assert first != NLMParams(h=10)
    with pytest.raises(AttributeError):
        first.h = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        first.color_transform[0, 0] = 5


def test_patch_sum_scale_is_one_over_c_patch_area_and_h_squared() -> None:
    params = NLMParams(h=51, patch_radius=2)
    assert params.patch_sum_scale(3) == pytest.approx(1 / (3 * 25 * 0.2**2), rel=1e-12)  # h/255 = 0.2
