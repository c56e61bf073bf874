"""The preview path the window's worker runs (engine.preview), without Qt."""

import numpy as np
import pytest

from nlmeans_studio.engine import Denoiser, NLMParams, psnr, suggest_h
from nlmeans_studio.engine.frames import from_float32, to_float32
from nlmeans_studio.engine.luma_chroma import LumaChromaDenoiser
from nlmeans_studio.engine.preview import ArrayFrames, Previewer, SyntheticNoise, difference_image

PARAMS = NLMParams(h=40, patch_radius=2, search_radius=2)


@pytest.fixture
def clip() -> np.ndarray:
    rng = np.random.default_rng(1)
    return rng.integers(0, 256, (5, 24, 32, 3), dtype=np.uint8)


def test_a_preview_is_the_denoiser_output_as_uint8(clip) -> None:
    preview = Previewer(ArrayFrames(clip), "cpu").render(2, PARAMS)
    expected = Denoiser(PARAMS, "cpu").denoise_frame(clip, 2)
    np.testing.assert_array_equal(preview.after, from_float32(expected, np.dtype(np.uint8)))
    np.testing.assert_array_equal(preview.before, clip[2])
    assert preview.psnr_after is None and "no clean reference" in preview.psnr_note
    assert preview.backend == "cpu" and preview.engine_ms > 0


def test_synthetic_noise_is_the_same_for_a_frame_whichever_frame_it_serves(clip) -> None:
    noise = SyntheticNoise(20, 0.5, seed=3)
    previewer = Previewer(ArrayFrames(clip), "cpu")
    first = previewer.noisy_frame(2, noise).copy()
    previewer.render(1, PARAMS, noise)  # frame 2 serves as a future frame here
    fresh = Previewer(ArrayFrames(clip), "cpu")
    np.testing.assert_array_equal(fresh.noisy_frame(2, noise), first)
    noise_of = [fresh.noisy_frame(i, noise) - to_float32(clip[i]) for i in (2, 3)]
    assert not np.allclose(*noise_of)  # each frame has its own noise
    # 24 x 32 x 3 samples: the sample standard deviation is within 5 % of 20 levels.
    assert abs(np.std(first - to_float32(clip[2])) * 255 - 20) < 1.0


def test_psnr_against_the_clip_in_synthetic_mode_and_against_a_reference(clip) -> None:
    noise = SyntheticNoise(25, 0.0, seed=1)
    previewer = Previewer(ArrayFrames(clip), "cpu")
    preview = previewer.render(2, PARAMS, noise)
    noisy = np.stack([previewer.noisy_frame(i, noise) for i in range(5)])
    clean = to_float32(clip[2])
    assert preview.psnr_before == psnr(clean, noisy[2])
    assert preview.psnr_after == psnr(clean, Denoiser(PARAMS, "cpu").denoise_frame(noisy, 2))
    noisy_clip = np.stack([from_float32(frame, np.dtype(np.uint8)) for frame in noisy])
    with_reference = Previewer(ArrayFrames(noisy_clip), "cpu", reference=ArrayFrames(clip)).render(2, PARAMS)
    assert with_reference.psnr_before == psnr(clean, to_float32(noisy_clip[2]))
    with pytest.raises(ValueError, match="the reference clip has 4 frames, the clip 5"):
        Previewer(ArrayFrames(clip), "cpu", reference=ArrayFrames(clip[:4]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sigma": -1}, "sigma must be in 0..255"),
        ({"sigma": 5, "correlation": 1.0}, r"correlation must be in \(-0.5, 1\)"),
    ],
)
def test_nonsense_synthetic_noise_is_refused(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        SyntheticNoise(**kwargs)


def test_play_yields_the_renders_of_consecutive_frames(clip) -> None:
    params = NLMParams(h=40, patch_radius=2, search_radius=2, frames_past=2, frames_future=1)
    noise = SyntheticNoise(20, seed=2)
    previewer = Previewer(ArrayFrames(clip), "cpu")
    played = list(previewer.play(1, 4, params, noise))
    assert [preview.index for preview in played] == [1, 2, 3]
    for preview in played:
        # Streaming equals random access (DESIGN.md §1), and on the CPU both round the same float32.
        still = Previewer(ArrayFrames(clip), "cpu").render(preview.index, params, noise)
        np.testing.assert_array_equal(preview.after, still.after)
        np.testing.assert_array_equal(preview.before, still.before)
        assert preview.psnr_after is None and "paused" in preview.psnr_note


def test_luma_chroma_previews_and_plays_the_luma_chroma_filter(clip) -> None:
    """With (h_luma, h_chroma, matrix) the preview and playback are LumaChromaDenoiser's frames,
    and the plain Denoiser is used again without it."""
    params, luma_chroma = NLMParams(h=40, patch_radius=1, search_radius=2, frames_future=1), (12.0, 30.0, "bt601")
    previewer = Previewer(ArrayFrames(clip), "cpu")
    expected = LumaChromaDenoiser(params, *luma_chroma, backend="cpu").denoise_frame(clip, 2)
    rendered = previewer.render(2, params, luma_chroma=luma_chroma)
    np.testing.assert_array_equal(rendered.after, from_float32(expected, np.dtype(np.uint8)))
    played = list(previewer.play(1, 4, params, luma_chroma=luma_chroma))
    np.testing.assert_array_equal(played[1].after, rendered.after)  # the CPU rounds both the same
    plain = from_float32(Denoiser(params, "cpu").denoise_frame(clip, 2), np.dtype(np.uint8))
    np.testing.assert_array_equal(previewer.render(2, params).after, plain)


def test_synthetic_noise_as_an_estimate_gives_h_from_its_sigma() -> None:
    estimate = SyntheticNoise(25, 0.5).estimate()
    assert estimate.method == "synthetic" and estimate.average_sigma == pytest.approx(25)
    h = suggest_h(estimate, PARAMS)
    assert 1.5 * 25 < h < 2.5 * 25 and h > 1.8 * suggest_h(SyntheticNoise(12.5, 0.5).estimate(), PARAMS)


def test_the_difference_image_is_what_the_filter_removed_amplified() -> None:
    before = np.array([[[10, 200, 0]]], np.uint8)
    after = np.array([[[12, 100, 0]]], np.uint8)
    np.testing.assert_array_equal(difference_image(before, after, gain=4), [[[8, 255, 0]]])
