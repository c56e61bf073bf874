"""The filter chosen when a person sets nothing (engine.video.default_filter), through the public API and the CLI."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from clips import DATA, panning_texture

from nlmeans_studio.engine import (
    Denoiser,
    LumaChromaDenoiser,
    NLMParams,
    SyntheticNoise,
    add_noise,
    add_realistic_noise,
    apply_estimate,
    choose_filter,
    denoise,
    estimate_noise,
    psnr,
    split_estimate,
    suggest_luma_chroma_h,
)
from nlmeans_studio.engine.video.default_filter import ENCODER, ENCODER_FACTOR, FROM_NOISE, SURE, SURE_RANGE

CLI = [sys.executable, "-m", "nlmeans_studio.engine"]
SIGMA = 10 / 255


@pytest.fixture(scope="module")
def bikes() -> np.ndarray:
    """Three clean 128 x 160 RGB frames of tests/data's bikes, float in [0, 1]."""
    with np.load(DATA / "bikes_frames.npz") as archive:
        return archive["frames"][:, 80:208, 80:240].astype(np.float32) / 255


def test_a_colour_clip_is_filtered_in_luma_chroma_and_a_gray_one_as_it_is(bikes) -> None:
    noisy = add_noise(bikes, SIGMA**2 * np.eye(3), seed=1)
    estimate = estimate_noise(noisy)
    choice = choose_filter(estimate, matrix="bt601")
    window = NLMParams()
    assert (window.weighting, window.center_weight) == ("exponential", "max")  # the study's choice
    assert choice.luma_chroma == (*suggest_luma_chroma_h(split_estimate(estimate, "bt601"), window), "bt601")
    assert choice.how == FROM_NOISE and isinstance(choice.denoiser("cpu"), LumaChromaDenoiser)
    gray = noisy[..., :1]
    gray_choice = choose_filter(estimate_noise(gray))
    assert gray_choice.luma_chroma is None and isinstance(gray_choice.denoiser("cpu"), Denoiser)
    assert gray_choice.params.h == pytest.approx(apply_estimate(window, estimate_noise(gray)).h)
    off = choose_filter(estimate, luma_chroma=None)  # the clip's own channels, one h
    assert off.luma_chroma is None and off.params.h == pytest.approx(apply_estimate(window, estimate).h)
    given = choose_filter(estimate, luma_chroma=(4.0, 9.0))
    assert given.luma_chroma == (4.0, 9.0, "bt709") and given.how == "given"


def test_sure_chooses_the_strength_on_white_noise_near_the_best(bikes) -> None:
    noisy = add_noise(np.concatenate([bikes, bikes[::-1]]), SIGMA**2 * np.eye(3), seed=2)  # four frames
    estimate = estimate_noise(noisy)
    choice = choose_filter(estimate, sample=noisy, backend="cpu", rgb_allowed=False)  # the mode's choice: apart
    assert choice.how == SURE and SURE_RANGE[0] <= choice.factor <= SURE_RANGE[1]
    clean = np.concatenate([bikes, bikes[::-1]])

    def score(factor: float) -> float:
        scaled = choose_filter(estimate, strength=factor)
        return np.mean([psnr(clean[i], scaled.denoiser("cpu").denoise_frame(noisy, i)) for i in (1, 2)])

    grid = np.geomspace(*SURE_RANGE, 9)  # 1.19x apart
    best = max(score(factor) for factor in grid)
    # SURE scores the frames' 192 x 192 centre (all of these 128 x 160): within 0.2 dB of the grid's best.
    assert score(choice.factor) >= best - 0.2
    assert f"(SURE on the clip: x{choice.factor:.2f})" in choice.describe()


@pytest.mark.parametrize("picture", ["rocket", "gray bikes"])
def test_sure_chooses_rgb_or_luma_chroma_as_the_clip_filters_better(picture, bikes) -> None:
    """Y'CbCr unless RGB's risk is clearly under it: rocket's dark, smooth sky filters 0.7 dB better
    in RGB (the defaults study's rocket: 0.5-1.4 dB lost in Y'CbCr); a gray picture in three
    channels, whose chroma has no detail, 1 dB better in Y'CbCr."""
    if picture == "rocket":
        with np.load(DATA / "rocket_frames.npz") as archive:
            clean = archive["frames"].astype(np.float32) / 255
    else:
        clean = np.repeat(bikes @ np.float32([0.2126, 0.7152, 0.0722])[:, None], 3, axis=-1)
    noisy = np.clip(add_noise(clean, SIGMA**2 * np.eye(3), seed=1), 0, 1)
    estimate = estimate_noise(noisy)
    choice = choose_filter(estimate, sample=noisy, backend="cpu")
    in_rgb = choose_filter(estimate, sample=noisy, backend="cpu", luma_chroma=None)

    def score(denoiser) -> float:
        return psnr(clean[1], denoiser.denoise_frame(noisy, 1))

    grid = np.geomspace(*SURE_RANGE, 7)  # 1.26x apart
    best_rgb = max(score(Denoiser(NLMParams(h=f * in_rgb.params.h / in_rgb.factor), "cpu")) for f in grid)
    best_ycbcr = max(score(choose_filter(estimate, strength=f).denoiser("cpu")) for f in grid)
    assert abs(best_rgb - best_ycbcr) > 0.5  # the pictures tell the two modes apart
    assert (choice.luma_chroma is None) == (best_rgb > best_ycbcr) == (picture == "rocket")
    assert choice.how == SURE and score(choice.denoiser("cpu")) >= max(best_rgb, best_ycbcr) - 0.2
    if choice.luma_chroma is None:  # the RGB filter as luma/chroma off chooses it, which the line says
        assert dataclasses.replace(choice, over_ycbcr=False) == in_rgb and not in_rgb.over_ycbcr
        assert "; RGB filters it better than Y'CbCr), color decorrelation off" in choice.describe()


@pytest.mark.gpu
def test_sure_chooses_the_same_mode_and_strength_on_the_gpu() -> None:
    """SURE on the GPU (``denoise --backend gpu`` and the window's GPU) chooses as on the CPU: the
    backends agree to 1e-4 of full scale, and the risks' margin is 0.2 % of the noise's variance."""
    with np.load(DATA / "rocket_frames.npz") as archive:
        clean = archive["frames"].astype(np.float32) / 255
    noisy = np.clip(add_noise(clean, SIGMA**2 * np.eye(3), seed=1), 0, 1)
    estimate = estimate_noise(noisy)
    on_cpu, on_gpu = (choose_filter(estimate, sample=noisy, backend=backend) for backend in ("cpu", "gpu"))
    assert on_gpu.luma_chroma is None and on_cpu.luma_chroma is None  # rocket's sky: RGB on both
    assert on_gpu.factor == pytest.approx(on_cpu.factor, rel=0.02)


@pytest.mark.parametrize(
    ("kind", "sigma", "said"), [("demosaic", 15, "spatially_correlated"), ("signal", 20, "signal_dependent")]
)
def test_sure_chooses_for_smooth_noise_and_noise_that_grows_with_brightness_by_their_shape(kind, sigma, said) -> None:
    with np.load(DATA / "bikes_frames.npz") as archive:
        frames = archive["frames"].astype(np.float32) / 255  # whole frames: bands of brightness to compare
    noisy = add_realistic_noise(frames, kind, sigma, seed=2)
    estimate = estimate_noise(noisy)
    assert getattr(estimate, said)  # the estimate knows: SURE's probe takes that shape (noise_shape)
    choice = choose_filter(estimate, sample=noisy, backend="cpu")
    assert choice.how == SURE and SURE_RANGE[0] <= choice.factor <= SURE_RANGE[1]

    def score(factor: float) -> float:
        denoiser = choose_filter(estimate, strength=factor).denoiser("cpu")
        return float(np.mean([psnr(frames[i], denoiser.denoise_frame(noisy, i)) for i in range(3)]))

    # Within 0.3 dB of the best factor on a grid 1.25x apart (whose own best may sit 0.1 dB low).
    assert score(choice.factor) >= max(score(factor) for factor in (0.64, 0.8, 1.0, 1.25, 1.56)) - 0.3


def test_an_encoders_noise_gets_stronger_strengths_and_no_sure() -> None:
    """H.264 keeps the noise in luma and quantizes it in blocks: SURE's white-noise risk misjudged
    it (held-out retina: -2.11 dB); the study's factor on the suggested strengths is used instead."""
    with np.load(DATA / "bikes_frames.npz") as archive:
        frames = archive["frames"].astype(np.float32) / 255
    noisy = add_realistic_noise(frames, "h264", 15, seed=2)
    estimate = estimate_noise(noisy)
    choice = choose_filter(estimate, sample=noisy, backend="cpu")
    suggested = choose_filter(estimate, sample=None, strength=1 / ENCODER_FACTOR)
    assert choice.how == ENCODER and choice.factor == ENCODER_FACTOR
    assert choice.params.center_weight == "max"  # read at 8 levels: heavier than light noise
    np.testing.assert_allclose(choice.luma_chroma[:2], np.multiply(suggested.luma_chroma[:2], ENCODER_FACTOR))
    assert f"(an encoder's noise: x{ENCODER_FACTOR:.2f})" in choice.describe()

    def score(factor: float) -> float:
        denoiser = choose_filter(estimate, strength=factor).denoiser("cpu")
        return float(np.mean([psnr(frames[i], denoiser.denoise_frame(noisy, i)) for i in range(3)]))

    # Within 0.5 dB of the best factor on a grid 1.25x apart (0.33 dB below it on this clip).
    assert score(1.0) >= max(score(factor) for factor in (0.5, 0.64, 0.8, 1.25)) - 0.5


def test_a_preset_strength_scales_what_sure_finds_best(bikes) -> None:
    noisy = add_noise(np.concatenate([bikes, bikes[::-1]]), SIGMA**2 * np.eye(3), seed=2)
    estimate = estimate_noise(noisy)
    best = choose_filter(estimate, sample=noisy, backend="cpu", rgb_allowed=False)
    light = choose_filter(estimate, sample=noisy, strength=0.7, backend="cpu", rgb_allowed=False)
    assert light.factor == best.factor  # the preset does not move SURE's search
    np.testing.assert_allclose(light.luma_chroma[:2], np.multiply(best.luma_chroma[:2], 0.7))


def test_noise_all_channels_share_gives_finite_strengths(bikes) -> None:
    """Film grain is one draw for R, G and B: Cb and Cr have no noise, and rounding made their
    variance negative (a NaN strength refused by NLMParams)."""
    draw = np.random.default_rng(4).normal(0, 12 / 255, bikes.shape[:3]).astype(np.float32)
    grain = np.clip(bikes + draw[..., None], 0, 1)
    choice = choose_filter(estimate_noise(grain))
    h_luma, h_chroma, _ = choice.luma_chroma
    assert np.isfinite([h_luma, h_chroma]).all() and h_chroma < h_luma / 4
    choice.denoiser("cpu").denoise_frame(grain, 1)


def test_the_api_reads_the_noise_the_command_line_reads(tmp_path) -> None:
    """estimate_noise on a clip's frames and denoise --noise auto on its file read the same noise
    (they read 0.9 and 3.6 dB apart before: all frames at once against pairs spread over it)."""
    av = pytest.importorskip("av", reason="the clip is written with PyAV")
    from nlmeans_studio.engine import estimate_clip_noise

    rng = np.random.default_rng(5)
    rows, columns = np.mgrid[0:64, 0:96]
    clean = np.stack([np.stack([rows * 2 + t, columns + 3 * t, rows + columns], -1) % 200 + 20 for t in range(9)])
    frames = np.clip(clean + rng.normal(0, 8, clean.shape), 0, 255).astype(np.uint8)
    with av.open(str(tmp_path / "noisy.mkv"), "w") as container:
        stream = container.add_stream("ffv1", rate=25)
        stream.height, stream.width, stream.pix_fmt = 64, 96, "bgr0"
        for index, frame in enumerate(frames):
            video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
            video_frame.pts, video_frame.time_base = index, Fraction(1, 25)
            container.mux(stream.encode(video_frame))
        container.mux(stream.encode(None))
    from_file = estimate_clip_noise(tmp_path / "noisy.mkv")
    from_array = estimate_noise(frames)
    np.testing.assert_array_equal(from_array.covariance, from_file.covariance)
    assert from_array.method == from_file.method


def test_denoise_filters_a_gray_clip_as_it_is_and_a_colour_one_in_luma_chroma(tmp_path) -> None:
    av = pytest.importorskip("av", reason="the clips are written with PyAV")
    rng = np.random.default_rng(6)
    rows, columns = np.mgrid[0:48, 0:64]
    picture = (rows * 3 + columns * 2) % 200 + 20
    for name, pixel_format, channels in (("gray.mkv", "gray", 1), ("colour.mkv", "bgr0", 3)):
        with av.open(str(tmp_path / name), "w") as container:
            stream = container.add_stream("ffv1", rate=25)
            stream.height, stream.width, stream.pix_fmt = 48, 64, pixel_format
            for index in range(6):
                frame = np.clip(picture[..., None] + rng.normal(0, 10, (48, 64, channels)), 0, 255).astype(np.uint8)
                video_frame = av.VideoFrame.from_ndarray(
                    frame[..., 0] if channels == 1 else frame, format="gray" if channels == 1 else "rgb24"
                )
                video_frame.pts, video_frame.time_base = index, Fraction(1, 25)
                container.mux(stream.encode(video_frame))
            container.mux(stream.encode(None))
        run = subprocess.run(
            [
                *CLI,
                "denoise",
                str(tmp_path / name),
                str(tmp_path / f"out-{name}"),
                "--codec",
                "ffv1",
                "--backend",
                "cpu",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr
        noise_line = next(line for line in run.stderr.splitlines() if line.startswith("noise:"))
        if channels == 1:
            assert "; exponential/max, h = " in noise_line and "luma/chroma" not in noise_line
        else:
            assert "; luma/chroma (bt601) exponential/max, h_Y = " in noise_line


@pytest.mark.parametrize("pixel_format", ["bgr0", "yuv444p"])
def test_denoise_filters_an_rgb_source_in_rgb_where_sure_finds_it_better(tmp_path, pixel_format) -> None:
    """Rocket's sky with white noise in an RGB file: filtered in RGB, as SURE chooses on the clip;
    the same frames in a Y'CbCr file stay in Y'CbCr, whose export keeps what RGB would clip."""
    pytest.importorskip("av", reason="the clips are written with PyAV")
    from clips import write_ffv1

    from nlmeans_studio.engine import estimate_clip_noise, read_frames

    with np.load(DATA / "rocket_frames.npz") as archive:
        clean = archive["frames"]
    noisy = np.clip(np.rint(clean + np.random.default_rng(1).normal(0, 10, clean.shape)), 0, 255).astype(np.uint8)
    source, output = tmp_path / f"rocket-{pixel_format}.mkv", tmp_path / "out.mkv"
    write_ffv1(source, noisy, pixel_format=pixel_format)
    command = [*CLI, "denoise", str(source), str(output), "--codec", "ffv1", "--backend", "cpu"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    noise_line = next(line for line in run.stderr.splitlines() if line.startswith("noise:"))
    frames = read_frames(source)
    rgb = pixel_format == "bgr0"
    choice = choose_filter(estimate_clip_noise(source), matrix="bt601", sample=frames, rgb_allowed=rgb)
    assert choice.how == SURE and (choice.luma_chroma is None) == rgb
    assert noise_line.endswith(choice.describe())
    assert ("luma/chroma" in noise_line) != rgb
    if rgb:  # the file is that filter's export, frame by frame
        expected = np.stack(list(choice.denoiser("cpu").export_stream(iter(frames))))
        np.testing.assert_array_equal(read_frames(output), expected)


def _psnr(clean: np.ndarray, frames: np.ndarray) -> float:
    return float(np.mean([psnr(clean[i] / 255, frames[i] / 255) for i in range(len(clean))]))


@pytest.mark.parametrize(("sigma", "center"), [(2.0, "one"), (10.0, "max")])
def test_light_noise_on_fine_texture_gets_the_centre_weight_that_keeps_the_picture(sigma, center) -> None:
    """With the centre weight "max" a pixel weighs as much as its best match, however far: on light
    noise over texture that has no twin, the defaults made the picture worse than the noisy input
    (sigma 2: 34.0 dB for 42.0). SURE now also scores "one" for light noise; heavier noise keeps "max"."""
    clean, noisy = panning_texture(sigma)
    choice = choose_filter(estimate_noise(noisy), sample=noisy, backend="cpu")
    assert choice.how == SURE and choice.params.center_weight == center
    assert f"exponential/{center}" in choice.describe()
    chosen = denoise(noisy, time_axis=0, backend="cpu")  # the public API's defaults: the same choice
    pinned = denoise(noisy, time_axis=0, backend="cpu", center_weight="max")
    if center == "one":
        assert _psnr(clean, chosen) > _psnr(clean, noisy) and _psnr(clean, chosen) > _psnr(clean, pinned) + 5
        # An h given (a restorer typed the one the window suggests): the same centre weight, not "max".
        h = apply_estimate(NLMParams(center_weight="one"), estimate_noise(noisy)).h
        given = denoise(noisy, time_axis=0, backend="cpu", h=h)
        np.testing.assert_array_equal(given, denoise(noisy, time_axis=0, backend="cpu", h=h, center_weight="one"))
        at_max = denoise(noisy, time_axis=0, backend="cpu", h=h, center_weight="max")
        assert _psnr(clean, given) >= _psnr(clean, noisy) and _psnr(clean, given) > _psnr(clean, at_max) + 5
    else:
        np.testing.assert_array_equal(chosen, pinned)
        assert _psnr(clean, chosen) > _psnr(clean, noisy) + 2


@pytest.mark.parametrize(("sigma", "center"), [(0.5, "one"), (4.0, "one"), (8.0, "max")])
def test_where_sure_cannot_judge_light_noise_gets_the_centre_weight_one(sigma, center) -> None:
    """Without frames to score (or for an encoder's noise) the centre weight follows the noise's level."""
    estimate = SyntheticNoise(sigma).estimate(3)
    assert choose_filter(estimate).params.center_weight == center
    assert choose_filter(estimate, center_weight="max").params.center_weight == "max"  # pinned: as asked
    # Strengths given, as a person types those the defaults chose: the same centre weight.
    assert choose_filter(estimate, luma_chroma=(3.0, 2.0)).params.center_weight == center
    assert choose_filter(estimate, luma_chroma=(3.0, 2.0), center_weight="max").params.center_weight == "max"


def test_the_command_line_chooses_the_centre_weight_unless_it_is_given(tmp_path) -> None:
    pytest.importorskip("av", reason="the clip is written with PyAV")
    from clips import write_ffv1

    _, noisy = panning_texture(2.0)
    write_ffv1(tmp_path / "texture.mkv", noisy)
    cases = [
        ([], "one"),
        (["--center-weight", "max"], "max"),
        (["--luma-chroma", "3,2"], "one"),  # strengths given: the centre weight the noise calls for
        (["--h", "3"], "one"),
        (["--h", "3", "--center-weight", "max"], "max"),
    ]
    for number, (given, center) in enumerate(cases):
        command = [*CLI, "denoise", str(tmp_path / "texture.mkv"), str(tmp_path / f"out-{number}.mkv")]
        run = subprocess.run(
            [*command, "--codec", "ffv1", "--backend", "cpu", *given], capture_output=True, text=True, timeout=600
        )
        assert run.returncode == 0, run.stderr
        noise_line = next(line for line in run.stderr.splitlines() if line.startswith("noise:"))
        assert f"exponential/{center}, h" in noise_line  # in RGB or Y'CbCr: the colour texture filters better in RGB
