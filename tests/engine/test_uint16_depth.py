"""uint16 frames holding fewer bits per sample (VapourSynth hands 10-bit planes as uint16 of
0..1023): taken at the depth declared with ``bit_depth=``, refused where it is ambiguous (issue 32)."""

import numpy as np
import pytest
from clips import noisy_clip

from nlmeans_studio.engine import Denoiser, NLMParams, estimate_noise

PARAMS = NLMParams(h=12, patch_radius=1, search_radius=2)


def ten_bit_clip() -> tuple[np.ndarray, np.ndarray]:
    """A noisy clip as 10-bit samples in uint16 (0..1023), and the same values as floats in [0, 1]."""
    noisy = np.clip(noisy_clip("random", seed=3, frames=3, shape=(24, 28)), 0, 1)
    samples = np.rint(noisy * 1023).astype(np.uint16)
    return samples, samples.astype(np.float32) / 1023


def test_ten_bit_samples_in_uint16_are_filtered_as_ten_bit(backend_method) -> None:
    backend, method = backend_method
    samples, floats = ten_bit_clip()
    expected = Denoiser(PARAMS, "cpu").denoise_frame(floats, 1)
    result = Denoiser(PARAMS, backend, method=method, bit_depth=10).denoise_frame(samples, 1)
    # The samples go to 16-bit full scale first, rounded (within 1/65535 of x / 1023); the
    # backends agree with each other to 1e-4 (DESIGN.md).
    assert np.abs(result - expected).max() < 1e-4
    exported = list(Denoiser(PARAMS, backend, method=method, bit_depth=10).export_stream(samples, np.uint16))
    assert exported[1].dtype == np.uint16 and exported[1].max() <= 1023
    assert np.abs(exported[1].astype(int) - np.rint(expected * 1023)).max() <= 1  # rounded twice


def test_estimate_noise_takes_the_bit_depth_too() -> None:
    samples, floats = ten_bit_clip()
    assert estimate_noise(samples, bit_depth=10).average_sigma == pytest.approx(
        estimate_noise(floats).average_sigma, rel=1e-3
    )


def test_undeclared_uint16_frames_that_fit_in_fewer_bits_are_refused() -> None:
    samples, _ = ten_bit_clip()
    with pytest.raises(ValueError, match=r"values all fit in 10 bits \(the largest is \d+\): pass bit_depth=10"):
        Denoiser(PARAMS, "cpu").denoise_frame(samples, 1)
    with pytest.raises(ValueError, match=r"pass bit_depth=10"):
        estimate_noise(samples)
    with pytest.raises(ValueError, match=r"pass bit_depth=10"):
        list(Denoiser(PARAMS, "cpu").export_stream(samples, np.uint16))


@pytest.mark.parametrize(
    ("bit_depth", "message"),
    [
        (20, r"bit_depth must be an integer in 9..16 \(the bits of uint16 frames' samples\), got 20"),
        (8, r"bit_depth must be an integer in 9..16 \(the bits of uint16 frames' samples\), got 8"),
    ],
)
def test_a_bit_depth_out_of_range_is_refused(bit_depth, message) -> None:
    with pytest.raises(ValueError, match=message):
        Denoiser(PARAMS, "cpu", bit_depth=bit_depth)


def test_samples_beyond_the_declared_depth_are_refused() -> None:
    samples, _ = ten_bit_clip()
    samples[0, 3, 4, 0] = 2000
    with pytest.raises(ValueError, match=r"bit_depth=10 holds samples up to 1023, but this frame has 2000"):
        Denoiser(PARAMS, "cpu", bit_depth=10).denoise_frame(samples, 0)
