"""Rician noise (MRI magnitude images): the filter averages squared magnitudes and removes their bias.

A magnitude M = |S + n1 + i n2|, n1 and n2 Gaussian of standard deviation sigma, has
E[M^2] = S^2 + 2 sigma^2 whatever S. Averaging M itself leaves the Rician floor where the signal
is dark: in the background (S = 0) M is Rayleigh-distributed, of mean sigma sqrt(pi / 2), about
1.25 sigma. With ``noise_model="rician"`` the filter's weights still come from the magnitudes'
patches, the voxels averaged are M^2, and the result is sqrt(max(mean - 2 sigma^2, 0)), as
DIPY's ``nlmeans(..., rician=True)`` does (Wiest-Daesslé et al., MICCAI 2008,
doi:10.1007/978-3-540-85990-1_21; Coupé et al., IEEE TMI 2008, doi:10.1109/TMI.2007.906087).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

NOISE_MODELS = ("gaussian", "rician")


def checked_sigmas(sigma: float | Sequence[float], channels: int) -> np.ndarray:
    """Return ``sigma`` as (C,) float32, one a channel, or ValueError unless each is a finite number > 0.

    One number serves every channel; a sequence must hold one a channel.
    """
    values = list(sigma) if isinstance(sigma, (list, tuple, np.ndarray)) else [sigma] * channels
    if len(values) != channels:
        raise ValueError(f"sigma must be one number or one a channel ({channels}), got {len(values)}: {values!r}")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"sigma must be a finite number > 0 in the volume's units, got {value!r}")
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"sigma must be a finite number > 0 in the volume's units, got {value!r}")
    return np.array(values, dtype=np.float32)


def estimated_sigmas(volume: np.ndarray, channels: str) -> np.ndarray:
    """Return each channel's noise sigma (C,) from ``estimate_volume_noise``, for a (Z, Y, X, C) ``volume``.

    Each channel's own estimate where they are filtered separately, else the channels' sigmas
    of one estimate of the whole (its blocks chosen over all channels).
    """
    from .noise import estimate_volume_noise

    if channels == "separately":
        return np.array([estimate_volume_noise(volume[..., c]).sigma[0] for c in range(volume.shape[3])], np.float32)
    return np.asarray(estimate_volume_noise(volume).sigma, dtype=np.float32)


def remove_bias(mean_squares: np.ndarray, sigmas: np.ndarray) -> np.ndarray:
    """Turn (..., C) weighted means of squared magnitudes into magnitudes, in place: sqrt(max(m - 2 sigma^2, 0))."""
    mean_squares -= 2 * np.square(sigmas)
    np.maximum(mean_squares, 0, out=mean_squares)
    return np.sqrt(mean_squares, out=mean_squares)
