"""The preview path the window's worker runs (engine.video.preview), without Qt."""

import dataclasses

import numpy as np
import pytest
from clips import noisy_clip

from nlmeans_studio.engine import Denoiser, NLMParams, psnr, quick_preview, suggest_h
from nlmeans_studio.engine.frames import from_float32, to_float32
from nlmeans_studio.engine.gpu.device import DeviceFrame
from nlmeans_studio.engine.gpu.resident import ResidentFrames
from nlmeans_studio.engine.video.luma_chroma import LumaChromaDenoiser
from nlmeans_studio.engine.video.preview import ArrayFrames, Previewer, SyntheticNoise, difference_image

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


@pytest.mark.parametrize("luma_chroma", [None, (30.0, 20.0, "bt709")])
def test_the_quick_pass_runs_while_the_cpu_filter_compiles_without_it(clip, monkeypatch, luma_chroma) -> None:
    """A first launch: numba's cache holds no filter, so the quick pass takes the cascade (plain
    NumPy, the same filter) and never waits for the compile; with the filter compiled, the same
    picture within float32 rounding."""
    from nlmeans_studio.engine.video import preview_passes
    from nlmeans_studio.engine.video.filters import fused_cpu

    previewer = Previewer(ArrayFrames(clip), "cpu")
    params = NLMParams(h=40, patch_radius=2, search_radius=4, frames_past=1, frames_future=1)
    compiled = quick_preview(previewer, 1, params, luma_chroma=luma_chroma)
    monkeypatch.setattr(preview_passes, "cpu_filter_compiles", lambda: True)

    def waits_for_the_compile(*args, **kwargs):
        raise AssertionError("the quick pass called the compiled filter")

    monkeypatch.setattr(fused_cpu, "_denoise", waits_for_the_compile)
    compiling = quick_preview(previewer, 1, params, luma_chroma=luma_chroma)
    assert compiling.stage == compiled.stage == "quick" and compiling.psnr_after is None
    assert np.abs(compiling.after.astype(int) - compiled.after.astype(int)).max() <= 1
    assert not np.array_equal(compiling.after, compiling.before)
    np.testing.assert_array_equal(compiling.before, clip[1])


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
    bisquare = dataclasses.replace(PARAMS, weighting="bisquare", center_weight="one")  # the paper's: h ~ 2 sigma
    h = suggest_h(estimate, bisquare)
    assert 1.5 * 25 < h < 2.5 * 25 and h > 1.8 * suggest_h(SyntheticNoise(12.5, 0.5).estimate(), bisquare)


def test_the_difference_image_is_what_the_filter_removed_amplified() -> None:
    before = np.array([[[10, 200, 0]]], np.uint8)
    after = np.array([[[12, 100, 0]]], np.uint8)
    np.testing.assert_array_equal(difference_image(before, after, gain=4), [[[8, 255, 0]]])


class HostFrames:
    """``DeviceFrames``' two methods that ResidentFrames uses, on NumPy: DeviceFrames with planar
    float32 and packed words for 8-bit frames, and a record of what was made and uploaded."""

    def __init__(self) -> None:
        self.made: list[DeviceFrame] = []
        self.uploaded: list[np.ndarray] = []

    def empty(self, shape, dtype) -> DeviceFrame:
        height, width, channels = shape
        packed = np.empty((height, width), np.uint32) if np.dtype(dtype) == np.uint8 else None
        self.made.append(DeviceFrame(np.empty((channels, height, width), np.float32), packed))
        return self.made[-1]

    def upload_into(self, frame: np.ndarray, out: DeviceFrame) -> None:
        self.uploaded.append(frame)
        out.planar[...] = np.moveaxis(to_float32(frame), -1, 0)
        if out.packed is not None:
            out.packed[...] = sum(frame[..., c].astype(np.uint32) << (8 * c) for c in range(frame.shape[-1]))


def test_resident_frames_upload_each_frame_once_into_reused_slots(clip) -> None:
    host = HostFrames()
    resident = ResidentFrames(host, spare=2)
    reads = []

    def read(key):
        reads.append(key)
        return clip[key]

    window = resident.window([0, 1, 2], read)
    assert resident.uploads == 3 and reads == [0, 1, 2] and len(host.made) == 3
    for index, frame in zip([0, 1, 2], window, strict=True):
        np.testing.assert_array_equal(frame.planar, np.moveaxis(to_float32(clip[index]), -1, 0))
        assert frame.packed is not None  # uint8 frames keep their packed words
    assert resident.window([0, 1, 2], read) == window and resident.uploads == 3  # the same slots, no upload
    resident.window([1, 2, 3], read)  # the next frame: one upload, 0 stays as a spare
    resident.window([2, 3, 4], read)  # 0 and 1 are the spares now
    assert resident.uploads == 5 and len(resident) == 5 and 0 in resident
    resident.window([1, 2, 3], read)  # back a frame: nothing sent again
    assert resident.uploads == 5
    resident.window([0, 1, 2, 3], read)  # 4 and 0 least recently used, 4 outside: 0 resident still
    assert resident.uploads == 5 and reads == [0, 1, 2, 3, 4]
    assert len(host.made) == 5  # at most window + spare slots were ever made


def test_resident_frames_give_up_the_least_recently_used_and_reuse_its_slot(clip) -> None:
    host = HostFrames()
    resident = ResidentFrames(host, spare=0)
    first = resident.window([0, 1], clip.__getitem__)
    second = resident.window([1, 2], clip.__getitem__)
    assert 0 not in resident and second[0] is first[1] and second[1] is first[0]  # 0's slot took 2
    np.testing.assert_array_equal(second[1].planar, np.moveaxis(to_float32(clip[2]), -1, 0))
    # Float frames (the synthetic noise's) need no packed words: another slot, made once.
    noisy = resident.window([("noisy", 2)], lambda key: to_float32(clip[key[1]]))
    assert noisy[0].packed is None and resident.uploads == 4 and len(host.made) == 3


@pytest.mark.gpu
@pytest.mark.parametrize("noise", [None, SyntheticNoise(20, 0.5, seed=4)], ids=["clip", "synthetic-noise"])
def test_a_gpu_preview_is_the_gpu_denoiser_output_rounded_as_on_the_host(noise) -> None:
    """The resident-frame path changes where frames live, not the result: the same filter, and
    the rounding of frames.from_float32 (halves to even) made on the GPU."""
    clip = (noisy_clip("bigbuckbunny", seed=5, frames=5, shape=(36, 44)).clip(0, 1) * 255).round().astype(np.uint8)
    params = NLMParams(h=30, patch_radius=2, search_radius=3, frames_past=1, frames_future=2)
    previewer = Previewer(ArrayFrames(clip), "gpu")
    denoiser = Denoiser(params, "gpu")
    for index in (0, 2, 3, 4):
        preview = previewer.render(index, params, noise)
        seen = np.stack([previewer.filter_input(i, noise) for i in range(len(clip))])
        expected = denoiser.denoise_frame(seen, index)
        assert preview.after.dtype == np.uint8 and preview.backend == "gpu"
        np.testing.assert_array_equal(preview.after, from_float32(expected, np.dtype(np.uint8)))
        if noise is not None:
            assert preview.psnr_after == psnr(to_float32(clip[index]), expected)


@pytest.mark.gpu
def test_a_gpu_preview_rounds_halves_to_even_like_the_host() -> None:
    """A frame whose filtered values sit on half steps: with h tiny every weight but the centre
    is 0, the output is the input, and float inputs k + 1/2 levels must round to even."""
    levels = np.arange(12 * 16 * 3, dtype=np.float32).reshape(12, 16, 3) % 250 + np.float32(0.5)
    clip = np.stack([levels / np.float32(255)] * 3)  # neighbours 3 levels apart: u = 36 at h = 0.5
    params = NLMParams(h=0.5, patch_radius=1, search_radius=1, frames_past=0, frames_future=0)
    preview = Previewer(ArrayFrames(clip), "gpu").render(1, params)
    expected = from_float32(Denoiser(params, "gpu").denoise_frame(clip, 1), np.dtype(np.uint8))
    assert (expected != np.floor(levels + 0.5)).any()  # halves up (the kernel's own uint8 output) would differ
    np.testing.assert_array_equal(preview.after, expected)


@pytest.mark.gpu
def test_gray_and_16_bit_clips_preview_on_the_gpu_as_the_denoiser_filters_them() -> None:
    rng = np.random.default_rng(6)
    params = NLMParams(h=30, patch_radius=1, search_radius=2)
    for clip in (rng.integers(0, 256, (3, 20, 24), dtype=np.uint8), rng.integers(0, 65536, (3, 20, 24, 3), np.uint16)):
        preview = Previewer(ArrayFrames(clip), "gpu").render(1, params)
        expected = Denoiser(params, "gpu").denoise_frame(clip, 1).reshape(clip[1].shape)
        assert preview.after.shape == clip[1].shape
        np.testing.assert_array_equal(preview.after, from_float32(expected, np.dtype(np.uint8)))


@pytest.mark.gpu
def test_a_slider_change_on_the_gpu_sends_no_frame_again(clip) -> None:
    """Each frame crosses the bus once while it stays resident: new parameters on the same frame
    (h, the radii, the weighting) reuse the frames on the GPU; a step to the next frame sends the
    one new frame; synthetic noise is another input, sent once too."""
    previewer = Previewer(ArrayFrames(clip), "gpu")
    assert previewer.frames_uploaded == 0
    previewer.render(2, PARAMS)
    assert previewer.frames_uploaded == 3  # frames 1, 2, 3 (Dp = Df = 1)
    for change in ({"h": 55}, {"search_radius": 3}, {"patch_radius": 1}, {"weighting": "exponential"}):
        previewer.render(2, dataclasses.replace(PARAMS, **change))
    assert previewer.frames_uploaded == 3
    previewer.render(3, PARAMS)
    assert previewer.frames_uploaded == 4  # frame 4
    previewer.render(2, dataclasses.replace(PARAMS, frames_past=2))
    assert previewer.frames_uploaded == 5  # frame 0
    noise = SyntheticNoise(20, seed=1)
    previewer.render(2, PARAMS, noise)
    previewer.render(2, dataclasses.replace(PARAMS, h=60), noise)
    assert previewer.frames_uploaded == 8  # the noisy frames 1, 2, 3, once


@pytest.mark.gpu
def test_gpu_previews_refuse_what_the_denoiser_refuses(clip) -> None:
    previewer = Previewer(ArrayFrames(clip), "gpu")
    with pytest.raises(IndexError, match=r"index must be an integer in 0..4, got -1"):
        previewer.render(-1, PARAMS)
    with pytest.raises(ValueError, match="too small"):
        previewer.render(2, NLMParams(h=10, search_radius=16, patch_radius=8))
    wrong_size = dataclasses.replace(PARAMS, color_transform=np.eye(1))
    with pytest.raises(ValueError, match="color_transform is 1x1 but the frames have 3 channel"):
        previewer.render(2, wrong_size)
    assert previewer.frames_uploaded == 3  # the refusals came after the frames were resident, and sent none


def test_the_cpu_preview_uploads_nothing_to_a_gpu(clip) -> None:
    previewer = Previewer(ArrayFrames(clip), "cpu")
    assert previewer.render(2, PARAMS).after.dtype == np.uint8
    assert previewer.frames_uploaded == 0
