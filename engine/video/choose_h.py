"""Choosing h from a noise estimate.

``suggest_h`` reads the PSNR-best h / sigma from a table measured on the sample clip
(h_calibration.json beside this module; ``scripts/calibrate_h.py`` regenerates it);
``decorrelation_decision`` says whether to filter in decorrelated channels, ``apply_estimate`` sets
both on a filter's parameters.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from pathlib import Path

import numpy as np

from .noise_estimate import CLEAN_SIGMA, NoiseEstimate, _effective_channels, _luminance_gain
from .params import NLMParams

CALIBRATION_FILE = Path(__file__).with_name("h_calibration.json")
CALIBRATION_CHANNELS = 3  # the calibration's white noise: R, G and B independent


@functools.cache
def _calibration() -> dict:
    return json.loads(CALIBRATION_FILE.read_text())


def _interpolate(table: np.ndarray, axes: list[list[float]], point: list[float]) -> float:
    """Multilinear interpolation of ``table`` at ``point``, clamped to the axes' ends."""
    result = table
    for values, x in zip(axes, point, strict=True):
        x = min(max(x, values[0]), values[-1])
        i = min(int(np.searchsorted(values, x, side="right")) - 1, len(values) - 2)
        t = (x - values[i]) / (values[i + 1] - values[i])
        result = result[i] * (1 - t) + result[i + 1] * t
    return float(result)


def suggest_h(estimate: NoiseEstimate, params: NLMParams) -> float:
    """Return the h (8-bit levels) that gives the highest PSNR for this noise, window and color transform.

    Parameters
    ----------
    estimate : NoiseEstimate
        The noise, from ``estimate_noise`` (or ``SyntheticNoise.estimate``).
    params : NLMParams
        The window, weighting, centre weight and color transform the h is for; ``params.h``
        is ignored.

    Returns
    -------
    float
        h in 8-bit levels.

    Notes
    -----
    h / sigma comes from a table measured on the sample clip with 8-bit, clipped Gaussian noise
    (``scripts/calibrate_h.py``), per weighting and centre weight, interpolated linearly in the
    patch radius, the search radius, the window's frames and log sigma, clamped to the table's
    ranges; sigma is the estimate's ``average_sigma``, which decorrelated noise keeps. A color
    transform G also scales the picture's luminance differences by g = |G u| (u the gray axis),
    so the picture stands out more from the same noise: the ratio is read at sigma / g^2. That
    exponent was measured on the calibration crops with four decorrelated noises (g from 1.35 to
    2.24): at g^2 the suggested h was within 0.3 dB of the best, at g^1 up to 1.6 dB below.

    Noise that grows with brightness (``NoiseEstimate.signal_dependent``) is read at its
    noisiest band's sigma for the bisquare weighting: a bisquare h under the noise of a bright
    region gives its patches no weight there, and the output is the input (a cliff of 3 to 5 dB
    on Poisson-Gaussian noise); exponential weights degrade gently and keep the average.

    Noise shared by the channels wants a larger h than white noise of the same sigma: a patch
    distance then sums fewer independent terms and scatters more between patches of the same
    content. Compressed footage is the common case: the encoder keeps the noise in luma and
    quantizes the subsampled chroma away, so its R, G and B noise correlate about 0.9 (1.1
    effective channels of 3). h is raised by the table's gray-noise factor (measured with one
    draw for R, G and B, 1 effective channel; 1.0-1.34 by weighting and sigma), to the power
    log(3 / C_eff) / log 3 for the noise's effective channels C_eff as filtered
    (``NoiseEstimate.effective_channels``; after the color transform, which whitens it, 3).

    Spatially correlated noise (demosaicing, deinterlacing) wants a higher h still, most with
    exponential weights: its patches differ by smooth blotches that look like the picture. h is
    raised by the table's smooth-noise factor at the estimate's ``spatial_correlation``, measured
    with white noise filtered by [a, 1, a] along rows and columns (a = 0.125 to 0.5, lag-1
    correlation 0.24 to 0.67) and read by ``estimate_noise`` as 0.5 to 0.97; 1 up to the largest
    reading white noise gave. Exponential/max at sigma 25 wants about twice the white-noise h.
    """
    if not isinstance(estimate, NoiseEstimate) or not isinstance(params, NLMParams):
        raise TypeError(
            f"suggest_h takes a NoiseEstimate and NLMParams, got {type(estimate).__name__} and {type(params).__name__}"
        )
    table = _calibration()
    sigma = max(estimate.average_sigma, estimate.clean_sigma)
    if params.weighting == "bisquare" and estimate.signal_dependent:
        sigma = max(sigma, max(band[2] for band in estimate.bands))
    gain = 1.0 if params.color_transform is None else _luminance_gain(params.color_transform)
    axes = [table["patch_radius"], table["search_radius"], table["window_frames"], np.log(table["sigma"]).tolist()]
    point = [
        params.patch_radius,
        params.search_radius,
        params.frames_past + params.frames_future + 1,
        math.log(sigma / gain**2),
    ]
    variant = f"{params.weighting}/{params.center_weight}"
    ratio = _interpolate(np.array(table["ratio"][variant]), axes, point)
    gray_factor = _interpolate(np.array(table["gray_noise_factor"][variant]), axes[-1:], point[-1:])
    smooth = table["smooth_noise_factor"]
    # The flat blocks' spatial correlation describes the noise unless the motion-compensated
    # change measured it (the flat blocks then showed little of it).
    correlation = 0.0 if estimate.method == "motion" else estimate.spatial_correlation
    smooth_factor = _interpolate(
        np.array(smooth[variant]), [smooth["spatial_correlation"], axes[-1]], [correlation, point[-1]]
    )
    return ratio * sigma * gray_factor ** _shared_noise(estimate, params) * smooth_factor


def _shared_noise(estimate: NoiseEstimate, params: NLMParams) -> float:
    """0 for noise as independent in the filtered channels as the calibration's white noise, 1 for shared.

    0: as independent as the calibration's white noise (3 effective channels); 1: noise shared by
    them all (1); log-linear between.
    """
    covariance = np.asarray(estimate.covariance, dtype=np.float64)
    if params.color_transform is not None:
        transform = np.asarray(params.color_transform, dtype=np.float64)
        covariance = transform @ covariance @ transform.T
    channels = min(max(_effective_channels(covariance), 1.0), CALIBRATION_CHANNELS)
    return math.log(CALIBRATION_CHANNELS / channels) / math.log(CALIBRATION_CHANNELS)


def decorrelation_decision(estimate: NoiseEstimate) -> tuple[bool, str]:
    """Whether the color transform G helps this noise, and why, in a sentence the window shows.

    The criterion is the luminance gain g = |G u| (``NoiseEstimate.luminance_gain``): G helps
    where g >= 1. Gray footage, footage that looks clean (sigma under 0.5 levels), white noise
    (``NoiseEstimate.white``: G is about the identity, and g about 1 either side by chance) and
    a singular covariance get no G.

    Parameters
    ----------
    estimate : NoiseEstimate
        The noise, from ``estimate_noise``.

    Returns
    -------
    decorrelate : bool
        Whether to use ``estimate.color_transform()``.
    reason : str
        Why, in one sentence (with the gain where there is one).

    Notes
    -----
    Measured at each one's best h (bisquare, centre "one", tests/data bikes and
    the sample clip): g of 1.46 to 1.94 (a noisy blue channel, negative correlations, unequal
    sigmas) gained 1.2 to 1.6 dB; g of 0.62 to 0.97 (equal-sigma correlations 0.6 and 0.8,
    sigmas 20/25/30 at 0.5, YUV-domain noise) changed PSNR by -0.1 to +0.25 dB, and at the
    suggested h lost 0.2 to 0.9 dB (tests/engine/test_noise.py).
    """
    if len(estimate.covariance) == 1:
        return False, "gray footage: there are no channels to decorrelate"
    if estimate.sigma.max() < CLEAN_SIGMA:
        return False, "the footage looks clean: there is no noise to decorrelate"
    if estimate.white:
        channels = len(estimate.covariance)
        return False, (
            f"the noise is white ({estimate.effective_channels:.2f} effective channels of {channels}: independent, "
            "of one sigma), so there is nothing to decorrelate"
        )
    try:
        gain = estimate.luminance_gain()
    except ValueError:
        return False, "a channel has no noise: the covariance cannot be inverted"
    if gain >= 1:
        return True, (
            f"luminance gain {gain:.2f} >= 1: the noise lies off the gray axis, so whitening it leaves the "
            "picture's luminance detail standing out more (measured +1.2 to +1.6 dB where the gain was 1.4 or more)"
        )
    shown = math.floor(gain * 100) / 100  # 0.998 reads 0.99, not "1.00 < 1"
    return False, (
        f"luminance gain {shown:.2f} < 1: the noise lies along the gray axis, so whitening it would shrink "
        "the picture's luminance detail with it (measured -0.1 to +0.25 dB at the best h, a loss at the suggested h)"
    )


def apply_estimate(params: NLMParams, estimate: NoiseEstimate, h: float | None = None) -> NLMParams:
    """``params`` with the color transform and the h that ``estimate`` suggests (``h`` wins if given).

    The color transform is used where ``decorrelation_decision`` says it helps: when it does
    not shrink luminance differences (``NoiseEstimate.luminance_gain`` at least 1). None for
    gray footage, footage that looks clean or a singular covariance: there is no correlation
    to undo.

    Parameters
    ----------
    params : NLMParams
        The filter; its window, weighting and centre weight are kept.
    estimate : NoiseEstimate
        The noise, from ``estimate_noise``.
    h : float, optional
        The strength in 8-bit levels; None (the default): ``suggest_h`` for the new color
        transform.

    Returns
    -------
    NLMParams
        A copy of ``params`` with ``color_transform`` and ``h`` replaced.

    Raises
    ------
    ValueError
        ``h`` out of 0.001..10000 (``NLMParams``).
    """
    decorrelate, _ = decorrelation_decision(estimate)
    transform = estimate.color_transform() if decorrelate else None
    params = dataclasses.replace(params, color_transform=transform)
    return dataclasses.replace(params, h=suggest_h(estimate, params) if h is None else h)
