"""Every backend against the float64 reference over the grid of the foundation issue, and over
h from 0.5 to 500 levels, where exponential weights leave float32's range (DESIGN.md §1:
weights are relative).

Tolerance: max abs difference <= 1e-4 on values in [0, 1]. float32 rounding of the distances,
running sums and accumulations stays near 1e-6 here (near 1e-5 at h = 0.5, where u reaches
thousands and its rounding moves the weights); 1e-4 leaves room for long sums without letting
a wrong offset, border or weight (errors of 1e-2 and more) through.
"""

import itertools

import numpy as np
import pytest
from clips import noisy_clip, random_color_transform
from reference import reference_denoise

from nlmeans_studio.engine import Denoiser, NLMParams
from nlmeans_studio.engine.video.params import CENTER_WEIGHTS, H_MAX, H_MIN, WEIGHTINGS

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
    """Integers are scaled by their full scale; gray (T, H, W) clips come back as (H, W)."""
    full_scale = np.iinfo(dtype).max
    color = (noisy_clip("bikes", seed=3, frames=3, shape=(20, 22)).clip(0, 1) * full_scale).round().astype(dtype)
    gray = color[..., 1]
    params = NLMParams(h=40, patch_radius=2, search_radius=2)
    backend, method = backend_method
    denoiser = Denoiser(params, backend, method=method)
    for clip in (color, gray, list(color)):
        result = denoiser.denoise_frame(clip, 2)
        as_float = np.asarray(clip, dtype=np.float64).reshape(3, 20, 22, -1) / full_scale
        assert result.dtype == np.float32 and result.shape == np.shape(clip)[1:]
        expected = reference_denoise(as_float, 2, params).reshape(result.shape)
        np.testing.assert_allclose(result, expected, rtol=0, atol=TOLERANCE)


H_VALUES = np.geomspace(0.5, 500, 7).round(3).tolist()  # 0.5, 1.58, 5, 15.8, 50, 158, 500 levels
H_GRID = list(itertools.product(H_VALUES, WEIGHTINGS, CENTER_WEIGHTS, ["random", "real"]))


@pytest.mark.parametrize(("h", "weighting", "center", "kind"), H_GRID)
def test_backend_matches_reference_for_every_h(backend_method, h, weighting, center, kind) -> None:
    """B = 4, A = 3, Dp = Df = 1, as KNLMeansCL users run it at h = 0.5-5: u reaches thousands,
    exp(-u) is 0 in float32 and only relative weights keep the filter."""
    case = H_GRID.index((h, weighting, center, kind))
    clip_kind = kind if kind == "random" else CLIP_KINDS[1 + case % 2]
    clip = noisy_clip(clip_kind, seed=case, frames=3, shape=(16, 20))
    params = NLMParams(h=h, weighting=weighting, center_weight=center)
    backend, method = backend_method
    result = Denoiser(params, backend, method=method).denoise_frame(clip, 1)
    np.testing.assert_allclose(result, reference_denoise(clip, 1, params), rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("h", [2.0, 5.0])
def test_color_transform_of_large_gain_at_small_h(backend_method, h) -> None:
    """Four times a decorrelating transform multiplies the distances by 16: u passes float32's
    exp range (87) at h = 5 already, and at h = 2 reaches the thousands that h = 0.5 gives
    without a transform (lower h puts u's own float32 rounding near the tolerance)."""
    clip = noisy_clip("bikes", seed=7, frames=3, shape=(16, 20))
    params = NLMParams(
        h=h,
        patch_radius=2,
        search_radius=2,
        weighting="exponential",
        center_weight="max",
        color_transform=4 * random_color_transform(7),
    )
    backend, method = backend_method
    result = Denoiser(params, backend, method=method).denoise_frame(clip, 1)
    np.testing.assert_allclose(result, reference_denoise(clip, 1, params), rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize(("weighting", "center"), list(itertools.product(WEIGHTINGS, CENTER_WEIGHTS)))
def test_outputs_are_finite_for_every_valid_h(backend_method, weighting, center) -> None:
    """No inf or NaN pixel for finite input, h from 0.5 to 500 levels and at the ends of its
    range, on a textured crop whose noise passes [0, 1]."""
    clip = noisy_clip("bikes", seed=8, frames=3, shape=(16, 20))
    backend, method = backend_method
    for h in [H_MIN, *np.geomspace(0.5, 500, 13).tolist(), H_MAX]:
        params = NLMParams(h=h, weighting=weighting, center_weight=center)
        result = Denoiser(params, backend, method=method).denoise_frame(clip, 1)
        assert np.isfinite(result).all(), f"h = {h}: {np.count_nonzero(~np.isfinite(result))} pixels not finite"


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("weighting", WEIGHTINGS)
def test_the_smallest_h_leaves_colour_bars_as_they_are(backend, weighting) -> None:
    """h 0.001 and 0.002 levels with the centre weight one: every other patch weighs nothing, so the
    frame comes back. The CPU's running column sums left equal patches -1e-7 apart under a sharp
    edge, which h 0.001 (u = sum * 6.5e10) turned into NaN and weights of exp(+4500) on ffmpeg's
    SMPTE bars in 10 bits: Y' 0 and 1.9 in flat grey."""
    av = pytest.importorskip("av", reason="PyAV is not installed")
    from nlmeans_studio.engine.media.yuv import frame_planes, planes_to_ycbcr, yuv_layout

    with av.open("smptebars=s=160x120:d=0.04", format="lavfi") as container:
        frame = next(container.decode(video=0)).reformat(format="yuv422p10le")
    layout = yuv_layout("yuv422p10le", {}, 120)
    luma = planes_to_ycbcr(frame_planes(frame, layout), layout)[0]
    for h in (H_MIN, 2 * H_MIN):
        params = NLMParams(h=h, weighting=weighting, center_weight="one", frames_past=0, frames_future=0)
        out = np.asarray(Denoiser(params, backend).denoise_frame([luma], 0)).reshape(luma.shape)
        assert np.abs(out - luma).max() <= 1e-6
