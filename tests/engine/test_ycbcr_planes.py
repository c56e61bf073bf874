"""The luma/chroma filter's planes (``media.yuv.planes_to_ycbcr`` and back): the samples' own Y' and
chroma, nothing clipped, against a float64 reference written from H.273's formulas."""

import numpy as np
import pytest

from nlmeans_studio.engine.frames import yuv_plane_shapes
from nlmeans_studio.engine.media.yuv import planes_to_rgb, planes_to_ycbcr, ycbcr_to_planes, yuv_layout

LAYOUTS = [  # pixel format, color tags, height, width
    ("yuv420p", {}, 7, 9),  # odd sizes: a chroma row and column of their own
    ("yuv422p10le", {"colorspace": 1}, 6, 11),
    ("yuv411p", {"colorspace": 5}, 3, 13),
    ("yuv444p16le", {"colorspace": 9}, 5, 6),
    ("yuvj420p", {}, 4, 4),  # full range
    ("yuv420p12le", {"colorspace": 1, "range": 2}, 9, 6),
]


def random_planes(pixel_format: str, color: dict, height: int, width: int):
    layout = yuv_layout(pixel_format, color, height)
    rng = np.random.default_rng(height * width)
    top = 2**layout.bits - 1
    shapes = yuv_plane_shapes(height, width, layout.chroma_shift)
    planes = [rng.integers(0, top + 1, shape).astype(layout.sample_dtype) for shape in shapes]
    planes[0][0, :2] = (0, top)  # the code range's ends, past limited range's black and white
    return layout, planes


@pytest.mark.parametrize(("pixel_format", "color", "height", "width"), LAYOUTS)
def test_planes_come_back_exactly_over_the_whole_code_range(pixel_format, color, height, width) -> None:
    layout, planes = random_planes(pixel_format, color, height, width)
    for plane, back in zip(planes, ycbcr_to_planes(*planes_to_ycbcr(planes, layout), layout), strict=True):
        np.testing.assert_array_equal(back, plane)


@pytest.mark.parametrize(("pixel_format", "color", "height", "width"), LAYOUTS)
def test_luma_and_co_sited_chroma_are_the_samples_scaled_unclipped(pixel_format, color, height, width) -> None:
    layout, planes = random_planes(pixel_format, color, height, width)
    luma, chroma = planes_to_ycbcr(planes, layout)
    step = 2.0 ** (layout.bits - 8)
    if layout.full_range:
        top = 2.0**layout.bits - 1
        luma_offset, luma_scale, chroma_offset, chroma_scale = 0.0, top, 2.0 ** (layout.bits - 1), top
    else:
        luma_offset, luma_scale, chroma_offset, chroma_scale = 16 * step, 219 * step, 128 * step, 224 * step
    expected = (planes[0].astype(np.float64) - luma_offset) / luma_scale
    np.testing.assert_allclose(luma[..., 0], expected, rtol=0, atol=1e-7)
    assert luma.dtype == chroma.dtype == np.float32 and not chroma[..., 2].any()
    if not layout.full_range:
        assert luma.min() < 0 and luma.max() > 1  # sub-blacks and super-whites kept
    across, down = layout.chroma_shift
    if not down:  # chroma rows are luma rows; its columns every 2^across
        for index, plane in enumerate(planes[1:]):
            sited = chroma[:, :: 1 << across, index]
            wanted = (plane.astype(np.float64) - chroma_offset) / chroma_scale + 0.5
            np.testing.assert_allclose(sited, wanted, rtol=0, atol=1e-7)


def test_the_filters_values_past_the_range_are_clamped_to_the_samples_range() -> None:
    layout = yuv_layout("yuv422p10le", {"colorspace": 1}, 4)
    luma = np.full((4, 8, 1), 1.2, np.float32)  # past 1023 once scaled: (16 + 219 * 1.2) * 4 = 1115
    luma[0, 0] = -0.1  # (16 - 21.9) * 4 = -23.6: 0
    chroma = np.zeros((4, 8, 3), np.float32)
    chroma[..., :2] = 0.5 + 0.25
    planes = ycbcr_to_planes(luma, chroma, layout)
    assert planes[0][0, 0] == 0 and planes[0][1:].min() == planes[0].max() == 1023
    np.testing.assert_array_equal(planes[1], np.rint((128 + 224 * 0.25) * 4))  # 736


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize(("pixel_format", "color"), [layout[:2] for layout in LAYOUTS[:3]])
def test_the_luma_chroma_export_keeps_samples_past_the_range(backend, pixel_format, color) -> None:
    """A near-identity filter (h 0.001, the centre weight one) gives back every sample, 0 and the top code too."""
    from nlmeans_studio.engine import NLMParams
    from nlmeans_studio.engine.media.yuv import YuvFrame
    from nlmeans_studio.engine.video.luma_chroma import LumaChromaDenoiser

    layout, planes = random_planes(pixel_format, color, 23, 41)  # odd: a last chroma row and column
    clip = [YuvFrame([plane.copy() for plane in planes], layout) for _ in range(3)]
    params = NLMParams(center_weight="one", frames_past=1, frames_future=1)
    denoiser = LumaChromaDenoiser(params, 0.001, 0.001, "bt709", backend)
    assert denoiser.converts_yuv
    outputs = list(denoiser.export_yuv(clip, np.uint16, layout))
    assert len(outputs) == 3
    for output in outputs:
        assert output.layout == layout
        for plane, back in zip(planes, output.planes, strict=True):
            np.testing.assert_array_equal(back, plane)


def test_frames_of_another_matrix_are_refused() -> None:
    from nlmeans_studio.engine import NLMParams
    from nlmeans_studio.engine.media.yuv import YuvFrame
    from nlmeans_studio.engine.video.luma_chroma import LumaChromaDenoiser

    layout, planes = random_planes("yuv420p", {"colorspace": 1}, 8, 8)
    other = yuv_layout("yuv420p", {"colorspace": 5}, 8)
    denoiser = LumaChromaDenoiser(NLMParams(), 1.0, 1.0, "bt709", "cpu")
    with pytest.raises(ValueError, match="matrix"):
        list(denoiser.export_yuv([YuvFrame(planes, layout)], np.uint8, other))


@pytest.mark.parametrize(("pixel_format", "color", "height", "width"), LAYOUTS)
def test_rgb_in_floats_is_unclipped_and_rounds_to_rgb_in_integers(pixel_format, color, height, width) -> None:
    """``planes_to_rgb`` to float32: H.273's RGB of the samples, nothing clipped (what the noise
    estimate reads); to integers the same, rounded and clipped."""
    layout, planes = random_planes(pixel_format, color, height, width)
    unclipped = planes_to_rgb(planes, layout, np.dtype(np.float32))
    for dtype in (np.uint8, np.uint16):
        top = np.iinfo(dtype).max
        np.testing.assert_array_equal(
            planes_to_rgb(planes, layout, np.dtype(dtype)), np.rint(np.clip(unclipped, 0, 1) * top)
        )
    assert unclipped.min() < -0.1 and unclipped.max() > 1.1  # random samples: far out of RGB's gamut
    if layout.chroma_shift == (0, 0):  # every pixel has its own chroma: H.273's formulas, in float64
        luma, chroma = planes_to_ycbcr(planes, layout)
        kr, kb = layout.coefficients()[4:6]
        y, pb, pr = luma[..., 0].astype(np.float64), chroma[..., 0] - 0.5, chroma[..., 1] - 0.5
        red, blue = y + 2 * (1 - kr) * pr, y + 2 * (1 - kb) * pb
        green = (y - kr * red - kb * blue) / (1 - kr - kb)
        np.testing.assert_allclose(unclipped, np.stack([red, green, blue], axis=-1), rtol=0, atol=1e-6)
