"""SURE (engine.video.sure) against the true error on real frames with noise of a known covariance,
and the noise's shape its probe is drawn with (engine.video.noise_shape)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from clips import DATA, noise_in_4_2_0_samples

from nlmeans_studio.engine import (
    Denoiser,
    LumaChromaDenoiser,
    NLMParams,
    add_noise,
    choose_filter,
    estimate_noise,
    psnr,
)
from nlmeans_studio.engine.video.default_filter import SURE_RANGE, encoder_noise
from nlmeans_studio.engine.video.luma_chroma import yuv_matrix
from nlmeans_studio.engine.video.noise_shape import LAG, WHITE, NoiseShape, noise_shape
from nlmeans_studio.engine.video.sure import choose_strength, golden_minimum, sure_mse

SIGMA = 10 / 255
COVARIANCES = {  # full scale squared
    "white": SIGMA**2 * np.eye(3),
    "correlated across channels": SIGMA**2 * np.array([[1.0, 0.6, 0.3], [0.6, 1.2, 0.5], [0.3, 0.5, 0.8]]),
}


def bikes_clip(covariance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(clean, noisy): three 96 x 128 frames of tests/data's bikes, the noise not clipped."""
    with np.load(DATA / "bikes_frames.npz") as archive:
        clean = archive["frames"][:, 100:196, 100:228].astype(np.float32) / 255
    return clean, add_noise(clean, covariance, seed=3)


@pytest.mark.parametrize("noise", list(COVARIANCES))
@pytest.mark.parametrize(("weighting", "center", "h"), [("bisquare", "one", 25.0), ("exponential", "max", 8.0)])
def test_sure_reads_the_true_error(noise, weighting, center, h) -> None:
    covariance = COVARIANCES[noise]
    clean, noisy = bikes_clip(covariance)
    denoiser = Denoiser(NLMParams(h=h, weighting=weighting, center_weight=center, search_radius=2), "cpu")
    true_error = float(np.mean((denoiser.denoise_frame(noisy, 1) - clean[1]) ** 2))
    estimated = sure_mse(denoiser, noisy, 1, covariance)
    # One probe and one noise draw over 37k samples: the estimate scatters by a few percent.
    assert estimated == pytest.approx(true_error, rel=0.08)


def test_the_strength_of_least_risk_is_near_the_best() -> None:
    covariance = COVARIANCES["white"]
    clean, noisy = bikes_clip(covariance)
    params = NLMParams(weighting="exponential", center_weight="max", search_radius=2)

    def denoiser_at(h: float) -> Denoiser:
        return Denoiser(dataclasses.replace(params, h=h), "cpu")

    chosen, risk = choose_strength(denoiser_at, noisy, [1], covariance, 1.0, 60.0)
    grid = np.geomspace(1.0, 60.0, 15)
    scores = [psnr(clean[1], denoiser_at(h).denoise_frame(noisy, 1)) for h in grid]
    # Within 0.2 dB of the best h of a grid 1.34x apart, whose own best may sit 0.1 dB low.
    assert psnr(clean[1], denoiser_at(chosen).denoise_frame(noisy, 1)) >= max(scores) - 0.2
    assert -10 * math.log10(risk) == pytest.approx(max(scores), abs=0.3)


def test_sure_judges_the_luma_chroma_filter_in_rgb() -> None:
    covariance = COVARIANCES["correlated across channels"]
    clean, noisy = bikes_clip(covariance)
    denoiser = LumaChromaDenoiser(NLMParams(weighting="exponential", center_weight="max"), 4.0, 9.0, backend="cpu")
    true_error = float(np.mean((denoiser.denoise_frame(noisy, 1) - clean[1]) ** 2))
    assert sure_mse(denoiser, noisy, 1, covariance) == pytest.approx(true_error, rel=0.08)


def test_golden_minimum_finds_a_parabola_s_least() -> None:
    x, value = golden_minimum(lambda x: (x - 1.7) ** 2 + 3, -5.0, 5.0, 30)
    assert x == pytest.approx(1.7, abs=1e-4)
    assert value == pytest.approx(3.0, abs=1e-6)


GRAIN_CORRELATION = {(0, 1): 2 / 3, (1, 1): 4 / 9, (0, 2): 1 / 6, (0, 3): 0.0}  # [1, 2, 1] / 4 along both axes


def grain(shape: tuple[int, ...], sigma: float, seed: int) -> np.ndarray:
    """Noise of ``sigma`` (full scale) smoothed as film grain is: [1, 2, 1] / 4 along rows and columns.

    Over the last three axes but the channels: (..., H, W, C), its channels independent.
    """
    draw = np.random.default_rng(seed).standard_normal(shape)
    for axis in (-3, -2):
        draw = (np.roll(draw, 1, axis) + 2 * draw + np.roll(draw, -1, axis)) / 4
    return (draw * sigma / draw.std()).astype(np.float32)


def grain_autocorrelation() -> np.ndarray:
    """The exact autocorrelation of ``grain``, lags -LAG..LAG."""
    one_axis = np.zeros(2 * LAG + 1)
    one_axis[LAG - 2 : LAG + 3] = np.array([1, 4, 6, 4, 1]) / 6
    return np.outer(one_axis, one_axis)


def test_the_noise_s_correlation_between_pixels_is_measured_on_the_flat_blocks() -> None:
    rows, columns = np.mgrid[0:96, 0:128]
    clean = np.stack([0.4 + rows / 960, 0.5 + columns / 1280, 0.45 + 0 * rows], axis=-1)  # gentle ramps
    frames = np.stack([clean, clean]) + grain((2, 96, 128, 3), SIGMA, seed=5)
    estimate = estimate_noise(frames)
    assert estimate.spatially_correlated
    shape = noise_shape(frames, estimate)
    for (dy, dx), expected in GRAIN_CORRELATION.items():
        # 24 blocks of 256 pixels, each less its plane: the median correlation scatters by a few hundredths.
        assert shape.autocorrelation[LAG + dy, LAG + dx] == pytest.approx(expected, abs=0.06)
        assert shape.autocorrelation[LAG + dx, LAG + dy] == pytest.approx(expected, abs=0.06)


def test_white_noise_keeps_a_white_probe() -> None:
    _, noisy = bikes_clip(COVARIANCES["white"])
    assert noise_shape(noisy, estimate_noise(noisy)) == WHITE


def test_a_probe_has_the_correlation_and_level_it_is_drawn_with() -> None:
    covariance = COVARIANCES["correlated across channels"]
    flat = np.full((256, 256, 3), 0.5, np.float32)
    probe = NoiseShape(grain_autocorrelation()).probe(flat, covariance, np.random.default_rng(0)).astype(np.float64)
    # 65k pixels: sample covariances and correlations within a few hundredths.
    assert np.cov(probe.reshape(-1, 3).T) == pytest.approx(covariance, rel=0.05, abs=SIGMA**2 * 0.05)
    for (dy, dx), expected in GRAIN_CORRELATION.items():
        measured = np.mean(probe * np.roll(probe, (dy, dx), axis=(0, 1))) / np.mean(probe**2)
        assert measured == pytest.approx(expected, abs=0.03)
    half_and_half = np.concatenate([np.full((128, 256, 3), 0.2), np.full((128, 256, 3), 0.8)]).astype(np.float32)
    bands = ((0.0, 0.5, 5.0, 10), (0.5, 1.0, 15.0, 10))  # sigma 5 levels in the dark, 15 in the light
    levelled = NoiseShape(None, bands, reference=10.0).probe(half_and_half, covariance, np.random.default_rng(1))
    dark, light = levelled[:124].std(), levelled[132:].std()  # away from the edge the brightness is averaged over
    assert light / dark == pytest.approx(3.0, rel=0.05)
    assert dark**2 == pytest.approx(np.trace(covariance) / 3 * 0.25, rel=0.05)  # (5 / 10)^2 of the covariance's


@pytest.mark.parametrize("h", [4.0, 8.0, 16.0])
def test_sure_with_the_noise_s_shape_reads_the_true_error_of_smooth_noise(h) -> None:
    with np.load(DATA / "bikes_frames.npz") as archive:
        clean = archive["frames"][:, 100:196, 100:228].astype(np.float32) / 255
    noisy = clean + grain(clean.shape, SIGMA, seed=3)
    covariance = SIGMA**2 * np.eye(3)
    denoiser = LumaChromaDenoiser(NLMParams(weighting="exponential", center_weight="max"), h, h, backend="cpu")
    true_error = float(np.mean((denoiser.denoise_frame(noisy, 1) - clean[1]) ** 2))
    shaped = sure_mse(denoiser, noisy, 1, covariance, shape=NoiseShape(grain_autocorrelation()))
    assert shaped == pytest.approx(true_error, rel=0.1)
    white = sure_mse(denoiser, noisy, 1, covariance)
    assert white < 0.8 * true_error  # why the shape: a white probe reads smooth noise's error too low


def test_the_default_filter_chooses_the_strength_of_smooth_noise_by_sure() -> None:
    with np.load(DATA / "bikes_frames.npz") as archive:
        clean = archive["frames"][:, 60:252, 40:296].astype(np.float32) / 255
    noisy = clean + grain(clean.shape, SIGMA, seed=4)
    estimate = estimate_noise(noisy)
    choice = choose_filter(estimate, NLMParams(), sample=noisy, backend="cpu")
    assert estimate.spatially_correlated and choice.how == "SURE on the clip"
    assert SURE_RANGE[0] <= choice.factor <= SURE_RANGE[1]


def subsampled_chroma_noise(shape: tuple[int, ...], sigma: float, seed: int) -> np.ndarray:
    """Noise as a 4:2:0 source's samples carry it, in RGB (T, H, W, 3): white in Y, and in Cb and Cr
    drawn at half the size each way, each sample over 2 x 2 pixels (BT.709, ``sigma`` in each)."""
    rng = np.random.default_rng(seed)
    frames, height, width = shape[:3]
    luma = rng.standard_normal((frames, height, width, 1))
    chroma = rng.standard_normal((frames, height // 2, width // 2, 2)).repeat(2, axis=1).repeat(2, axis=2)
    return (np.concatenate([luma, chroma], axis=-1) * sigma @ np.linalg.inv(yuv_matrix("bt709")).T).astype(np.float32)


def test_luma_s_and_chroma_s_correlation_are_measured_apart() -> None:
    rows, columns = np.mgrid[0:96, 0:128]
    clean = np.stack([0.4 + rows / 960, 0.5 + columns / 1280, 0.45 + 0 * rows], axis=-1)  # gentle ramps
    frames = np.stack([clean, clean]) + subsampled_chroma_noise((2, 96, 128), SIGMA, seed=5)
    estimate = estimate_noise(frames)
    assert estimate.spatially_correlated
    shape = noise_shape(frames, estimate, yuv_matrix("bt709"))
    luma, chroma = shape.autocorrelation[0], shape.autocorrelation[1]
    # Y white; Cb and Cr: half the pixel pairs one apart share a sample, a quarter of those one apart both ways.
    for (dy, dx), expected in {(0, 1): 0.5, (1, 0): 0.5, (1, 1): 0.25, (0, 2): 0.0}.items():
        assert luma[LAG + dy, LAG + dx] == pytest.approx(0.0, abs=0.06)
        assert chroma[LAG + dy, LAG + dx] == pytest.approx(expected, abs=0.08)
    probe = shape.probe(np.full((256, 256, 3), 0.5, np.float32), estimate.covariance, np.random.default_rng(0))
    ycc = probe.astype(np.float64) @ yuv_matrix("bt709").T
    along = np.mean(ycc * np.roll(ycc, 1, axis=1), axis=(0, 1)) / np.mean(ycc**2, axis=(0, 1))
    assert along == pytest.approx([0.0, 0.5, 0.5], abs=0.08)  # drawn so, in Y'CbCr
    assert np.cov(probe.reshape(-1, 3).T) == pytest.approx(estimate.covariance, rel=0.1)


def test_noise_of_rgb_samples_keeps_one_correlation_for_all_channels() -> None:
    """Smooth noise drawn in R, G and B apart has Y's correlated with Cb's and Cr's: coloured
    apart, the probe would lose that."""
    rows, columns = np.mgrid[0:96, 0:128]
    clean = np.stack([0.4 + rows / 960, 0.5 + columns / 1280, 0.45 + 0 * rows], axis=-1)
    frames = np.stack([clean, clean]) + grain((2, 96, 128, 3), SIGMA, seed=5)
    estimate = estimate_noise(frames)
    shape = noise_shape(frames, estimate, yuv_matrix("bt709"))
    assert shape.basis is None and shape.autocorrelation.shape == (2 * LAG + 1, 2 * LAG + 1)


def test_noise_in_a_sources_samples_gets_luma_s_and_chroma_s_strengths_near_the_best() -> None:
    """Noise in a 4:2:0 source's samples, read as a file's frames are (``planes_to_rgb``): not an
    encoder's, though its channels' count is under 2 (it had x1.5 and no SURE: 2.3 dB lost), and
    chroma's strength chosen apart from luma's."""
    with np.load(DATA / "bikes_frames.npz") as archive:
        clean, noisy = noise_in_4_2_0_samples(archive["frames"][:, 60:252, 40:296], 10, seed=4)
    estimate = estimate_noise(noisy)
    assert estimate.shared_by_channels and not encoder_noise(estimate)
    choice = choose_filter(estimate, sample=noisy, backend="cpu")
    assert choice.how == "SURE on the clip" and choice.chroma_factor is not None
    assert "on luma, x" in choice.describe()
    h_luma, h_chroma, matrix = choose_filter(estimate).luma_chroma  # the suggested strengths

    def score(luma: float, chroma: float) -> float:
        denoiser = LumaChromaDenoiser(choice.params, luma * h_luma, chroma * h_chroma, matrix, backend="cpu")
        return float(np.mean([psnr(clean[i], denoiser.denoise_frame(noisy, i)) for i in range(1, 3)]))

    # Within 0.3 dB of the best of a grid 1.25x apart each way (whose own best may sit 0.1 dB low).
    grid = (0.8, 1.0, 1.25, 1.56, 1.95)
    assert score(*choice.factors) >= max(score(luma, chroma) for luma in grid for chroma in grid) - 0.3
