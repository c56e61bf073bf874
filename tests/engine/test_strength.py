"""SURE (engine.video.sure) against the true error on real frames with noise of a known covariance."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from clips import DATA

from nlmeans_studio.engine import Denoiser, LumaChromaDenoiser, NLMParams, add_noise, psnr
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
