"""psnr against its definition."""

import math

import numpy as np
import pytest

from nlmeans_studio.engine import psnr


def test_psnr_matches_definition() -> None:
    rng = np.random.default_rng(1)
    reference = rng.random((8, 9, 3))
    estimate = reference + rng.normal(0, 0.05, reference.shape)
    mse = np.mean((reference - estimate) ** 2)
    assert psnr(reference, estimate) == pytest.approx(10 * math.log10(1 / mse), abs=1e-12)
    assert psnr(reference * 255, estimate * 255, data_range=255) == pytest.approx(psnr(reference, estimate), abs=1e-9)


def test_psnr_known_value_and_identity() -> None:
    assert psnr(np.zeros(4), np.full(4, 0.1)) == pytest.approx(20.0, abs=1e-12)  # MSE 0.01
    assert psnr(np.ones(3), np.ones(3)) == math.inf


@pytest.mark.parametrize(
    ("reference", "estimate", "data_range", "message"),
    [
        (np.zeros(3), np.zeros(4), 1.0, r"one shape, got \(3,\) and \(4,\)"),
        (np.zeros(0), np.zeros(0), 1.0, "non-empty"),
        (np.zeros(3), np.zeros(3), 0.0, "data_range must be a finite number > 0, got 0.0"),
    ],
)
def test_psnr_refuses_bad_input(reference, estimate, data_range, message) -> None:
    with pytest.raises(ValueError, match=message):
        psnr(reference, estimate, data_range)


def test_psnr_of_integer_frames_is_at_their_full_scale() -> None:
    """A new user's uint8 frames read -23.9 dB where they were 24.2: the full scale comes from the dtype."""
    rng = np.random.default_rng(2)
    clean = rng.integers(0, 256, (16, 16, 3)).astype(np.uint8)
    noisy = np.clip(clean + rng.normal(0, 16, clean.shape), 0, 255).astype(np.uint8)
    assert psnr(clean, noisy) == pytest.approx(psnr(clean / 255, noisy / 255), abs=1e-9)
    assert psnr(clean.astype(np.uint16) * 257, noisy.astype(np.uint16) * 257) == pytest.approx(psnr(clean, noisy))
    assert psnr(clean, noisy, 255) == psnr(clean, noisy)


@pytest.mark.parametrize(
    ("reference", "estimate"),
    [(np.zeros(3, np.uint8), np.zeros(3, np.float32)), (np.zeros(3, np.int64), np.zeros(3, np.int64))],
)
def test_psnr_without_a_full_scale_for_its_arrays_asks_for_one(reference, estimate) -> None:
    with pytest.raises(ValueError, match=r"^psnr compares \w+ and \w+ arrays: give data_range"):
        psnr(reference, estimate)
