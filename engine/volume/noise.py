"""The noise of a volume, from its flattest 3D blocks, and the h it suggests.

The residual is the separable second difference [1, -2, 1] along z, y and x, scaled to unit
gain (1/sqrt(216)), as engine/video/noise.py's 2D residual is for frames: on white Gaussian noise of
standard deviation sigma it has standard deviation sigma, and it removes every signal that is
quadratic along each axis. The estimate is a low quantile of the residual's variance over
8^3 blocks (thinner along an axis of fewer than 10 voxels), corrected for that quantile's bias
on pure noise.

Where the Gaussian estimate holds: MRI magnitude images have Rician noise, which is Gaussian
only where the signal is well above sigma (about 3 sigma and up). In the background (air,
signal 0) it is Rayleigh-distributed, with a residual variance of (2 - pi/2) sigma^2, about
0.43 sigma^2, which would drag a low quantile down; blocks with more than a tenth of their
voxels below 3 sigma are therefore left out (at an object's edge a block's mean may be above),
iterating from the estimate over all blocks. A volume with values below zero (its 0.5th
percentile) is signed, not a magnitude image, and keeps all its blocks: a background-subtracted
microscopy stack read 44 where its noise was 29, from 14 blocks of 450. Where no block lies above
the background (a dim object in much air), sigma is read in the air (``rician.background_sigma``,
as the Rician model reads it). The result is the sigma of the underlying
Gaussian noise in the tissue; the filter itself treats the noise as Gaussian.

Noise that grows with the signal (shot noise: photon counts in microscopy, variance = mean) has
no one sigma: the flattest blocks are the darkest, and their sigma set h far too low. The blocks
are therefore also read in brightness bands (equal numbers of blocks, each band's own low
quantile); where the brightest band's sigma exceeds SHOT_NOISE_RATIO times the quietest band's,
sigma^2 is the bands' variances averaged with themselves as weights: the noisiest voxels are where
the filter's error comes from. On the MNI152 template as Poisson counts (25 in the background to
650), the bands read 5 to 22 and this sigma 20.0 (h 22.0); the whole volume's RMSE after the
filter was 8.3 at h 12.7 (the RMS over all blocks), 5.2 at 17 and 4.1 at 23, against 10.9 before
(the flattest blocks' sigma, 5, gave h 5.5, which hardly filters). On crops of the object alone,
as on Gaussian noise, the best h was 1.0-1.1 times the noise's RMS.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..memory import says_what_to_lower
from .checks import all_finite, channels_note, check_channels, fourth_axis
from .params import Radii, VolumeParams
from .rician import background_sigma

BLOCK = 8
QUANTILE = 0.1
QUANTILE_BIAS = 0.814  # the 0.1 quantile of 8^3 blocks' residual variance over the true one, on pure noise
BIAS_BLOCKS = 4096  # simulated blocks that measure the bias of thinner blocks (0.2 % of it, one sigma)
SIGNAL_FLOOR = 3.0  # blocks with voxels below this many sigma hold Rician background
# The share of a block's voxels that may lie under SIGNAL_FLOOR: a block at an object's edge,
# mostly air with a few bright voxels, had a mean above the floor, and its residual measured the
# air's Rayleigh spread (0.43 sigma^2): MRI magnitude noise read 20 % low with half the volume air.
FLOOR_QUANTILE = 0.1
BANDS, BAND_BLOCKS = 8, 40  # brightness bands, and the fewest blocks a band (fewer bands where too few)
SHOT_NOISE_RATIO = 1.5  # brightest band's sigma over the quietest's beyond which the noise grows with the signal
# Channels whose sigmas differ by more than this factor are filtered separately where the mode is
# "auto": one h from their pooled noise blurred a dim fluorescence channel below its noisy input.
SEPARATE_NOISE_RATIO = 1.5
# h / sigma of least squared error on a 48^3 crop of the MNI152 T1 template (0..255) with
# Gaussian noise of sigma 5, 10 and 20, search 11^3 (scripts/calibrate_volume_h.py: geometric
# means over the sigmas, docs/bench/2026-11-25-thirteenth-session.md), per weighting and centre
# weight, for patches of PATCH_VOXELS voxels (radius 0 to 3). A patch of one voxel wants twice the
# h of a 3^3 one: its distance is one squared difference, far noisier than an average of 27.
PATCH_VOXELS = (1, 27, 125, 343)
H_PER_SIGMA = {
    ("exponential", "one"): (2.25, 1.08, 1.11, 1.14),
    ("exponential", "max"): (2.25, 0.84, 0.75, 0.74),
    ("bisquare", "one"): (4.03, 2.32, 2.42, 2.50),
    ("bisquare", "max"): (4.03, 2.15, 2.16, 2.21),
}
# A volume whose noise reads below this fraction of its intensity range (0.5th to 99.5th
# percentile) is taken as clean, and h is suggested at that noise: half an 8-bit level of
# the range, as engine/video/noise.py's CLEAN_SIGMA is for video. A synthetic volume reads 0, which
# no h can be suggested from; the MNI152 template reads 0.43 of a range of 255.
CLEAN_FRACTION = 0.5 / 255
Region = tuple[tuple[int, int], tuple[int, int], tuple[int, int]]  # (z0, z1), (y0, y1), (x0, x1), ends excluded


@dataclass(frozen=True)
class VolumeNoiseEstimate:
    """Gaussian noise of a volume: ``sigma`` per channel (the volume's units), from ``blocks`` blocks.

    ``estimate_volume_noise`` makes it; the constructor takes the attributes below, in order.

    Attributes
    ----------
    sigma : (C,) ndarray
        Standard deviation per channel, in the volume's intensity units.
    blocks : int
        How many blocks (8^3 voxels, thinner in a thin volume) the estimate was taken over (those
        above the Rician background; all of them where sigma was read in the air); 1 for a region
        the user gave.
    clean_sigma : float
        The noise under which the volume is taken as clean: CLEAN_FRACTION of its intensity range.
    average_sigma : float
        sqrt of the mean variance over the channels, in the volume's units.
    clean : bool
        Whether ``average_sigma`` is under ``clean_sigma``: h is then suggested at ``clean_sigma``.
    band_sigmas : tuple of float
        The noise (RMS over the channels) in brightness bands of equal numbers of blocks, darkest
        first; empty where there were too few blocks.
    signal_dependent : bool
        Whether the noise grows with the signal (shot noise): ``sigma`` is then the bands'
        (their variances weighted by themselves), not the flattest blocks'.
    """

    sigma: np.ndarray
    blocks: int
    clean_sigma: float = 0.0
    band_sigmas: tuple[float, ...] = ()
    signal_dependent: bool = False

    @property
    def average_sigma(self) -> float:
        """The sqrt of the mean variance over the channels."""
        return float(np.sqrt(np.mean(self.sigma**2)))

    @property
    def growth(self) -> str:
        """How the noise grows with the signal, for messages ("" where it does not)."""
        if not self.signal_dependent:
            return ""
        darkest, brightest = self.band_sigmas[0], self.band_sigmas[-1]
        return (
            f"the noise grows with the signal (sigma {darkest:.3g} in the darkest blocks, {brightest:.3g} in the "
            "brightest: shot noise, as photon counts have), and h is set for the noisiest parts"
        )

    @property
    def clean(self) -> bool:
        """Whether the volume reads as noise-free (``average_sigma`` < ``clean_sigma``)."""
        return self.average_sigma < self.clean_sigma


def _residual(volume: np.ndarray) -> np.ndarray:
    """(Z - 2, Y - 2, X - 2, C) second differences along every axis, unit gain on white noise."""
    r = volume
    for axis in range(3):
        length = r.shape[axis]
        low, middle, high = (np.take(r, range(start, start + length - 2), axis=axis) for start in range(3))
        r = low - 2 * middle + high
    return r / math.sqrt(216.0)


def _blocks(values: np.ndarray, shape: tuple[int, int, int]) -> np.ndarray:
    """(blocks, voxels a block, C) of a (Z, Y, X, C) array cut into blocks of ``shape``.

    The partial blocks at the ends are left out.
    """
    counts = [n // b for n, b in zip(values.shape[:3], shape, strict=True)]
    cropped = values[: counts[0] * shape[0], : counts[1] * shape[1], : counts[2] * shape[2]]
    shaped = cropped.reshape(counts[0], shape[0], counts[1], shape[1], counts[2], shape[2], -1)
    return shaped.transpose(0, 2, 4, 1, 3, 5, 6).reshape(math.prod(counts), math.prod(shape), -1)


def _block_shape(volume_shape: tuple[int, ...]) -> tuple[int, int, int]:
    """BLOCK^3, thinner along an axis of fewer than BLOCK + 2 voxels (a z-stack of a few planes).

    As thick as the residual there.
    """
    return tuple(min(BLOCK, n - 2) for n in volume_shape[:3])


@functools.cache
def _quantile_bias(shape: tuple[int, int, int]) -> float:
    """Return the QUANTILE quantile of blocks' residual variance over the true variance, on white noise.

    On white Gaussian noise, for blocks of ``shape``: QUANTILE_BIAS for BLOCK^3 (measured once),
    else measured here on BIAS_BLOCKS blocks of simulated noise (the same seed every time).
    """
    if shape == (BLOCK,) * 3:
        return QUANTILE_BIAS
    side = round(BIAS_BLOCKS ** (1 / 3))
    noise = np.random.default_rng(0).standard_normal((side * shape[0] + 2, side * shape[1] + 2, side * shape[2] + 2, 1))
    variances = (_blocks(_residual(noise), shape) ** 2).mean(axis=1)
    return float(np.quantile(variances, QUANTILE))


@says_what_to_lower("crop the volume")
def estimate_volume_noise(
    volume: np.ndarray, region: Region | None = None, *, channel_axis: int | None = None
) -> VolumeNoiseEstimate:
    """Estimate the Gaussian noise of a (Z, Y, X) or (Z, Y, X, C) volume from its flattest blocks.

    Parameters
    ----------
    volume : (Z, Y, X) or (Z, Y, X, C) array_like
        Real, finite voxels in their own units.
    region : ((z0, z1), (y0, y1), (x0, x1)), optional
        A box the user knows to be flat (voxel index ranges, ends excluded, at least 3 voxels on
        each axis): sigma is then the RMS of the residual over all of it, not the flattest blocks'.
    channel_axis : int, optional
        The axis of a 4D ``volume`` that holds its channels, as ``denoise_volume`` takes it (1 for
        an ImageJ hyperstack's (Z, C, Y, X)); None: the last axis of a 4D array.

    Returns
    -------
    VolumeNoiseEstimate
        sigma per channel, in the volume's units.

    Raises
    ------
    ValueError
        A volume that is not 3D or 4D, has more than 16 channels (the last axis of a 4D array),
        is not finite, or is smaller than 3 voxels on an axis; a region outside the volume or
        thinner than 3 voxels on an axis.
    MemoryError
        Memory ran out (the estimate holds float64 copies of the volume); the message says what
        to lower.

    Notes
    -----
    Holds for additive Gaussian noise and, in MRI magnitude volumes, for Rician noise where the
    signal is above about 3 sigma (blocks below are left out); see the module's notes.
    """
    data = np.asarray(volume)
    if channel_axis is not None:
        role = fourth_axis(data.shape, channel_axis=channel_axis, series_axis=None)
        data = np.moveaxis(data, role[1], -1)
    if data.ndim not in (3, 4):
        raise ValueError(f"volume must be a (Z, Y, X) or (Z, Y, X, C) array, got shape {data.shape}")
    check_channels(data.shape)
    given = data.shape
    data = data.astype(np.float64)
    if data.ndim == 3:
        data = data[..., np.newaxis]
    if min(data.shape[:3]) < 3:
        raise ValueError(
            "volume must be at least 3 voxels on each axis to estimate its noise, got "
            f"{' x '.join(str(n) for n in data.shape[:3])} (z, y, x){channels_note(given)}"
        )
    if not all_finite(data):
        raise ValueError("volume must be finite to estimate its noise, got NaN or infinite voxels")
    low, high = np.percentile(data, (0.5, 99.5))
    clean_sigma = CLEAN_FRACTION * float(high - low)
    if region is not None:
        return _region_noise(data[_region_slices(region, data.shape)], clean_sigma)
    shape = _block_shape(data.shape)
    bias = _quantile_bias(shape)
    residual = _blocks(_residual(data), shape)
    variances = (residual**2).mean(axis=1)  # (blocks, C): the residual's mean is 0 on smooth signal
    voxels = _blocks(data[1:-1, 1:-1, 1:-1], shape).mean(axis=2)  # (blocks, voxels a block): over the channels
    means = voxels.mean(axis=1)
    floors = np.quantile(voxels, FLOOR_QUANTILE, axis=1)
    # Blocks of exactly no residual are masked or padded (a skull-stripped scan's zeros, a
    # template's background), not noise, which never cancels exactly: left out where there are
    # others (they read "sigma 0 in the darkest blocks", and the noise was taken to grow with
    # the signal). A volume of nothing else is clean.
    live = variances.max(axis=1) > 0
    if not live.any():
        live[:] = True
    chosen = live
    # Below zero a volume is signed (background subtracted, deconvolved), not a magnitude image:
    # it has no Rician background, and a floor at 0 left all but its brightest blocks out.
    for _ in range(4 if low >= 0 else 0):  # leave out the background as sigma grows
        total = variances[chosen].mean(axis=1)
        sigma = math.sqrt(np.quantile(total, QUANTILE) / bias)
        above = (floors >= SIGNAL_FLOOR * sigma) & live
        if above.sum() < 8 or np.array_equal(above, chosen):
            break
        chosen = above
    if low >= 0 and chosen is live:
        # No block above the background (an object under about 3 sigma in much air: a phantom 73 %
        # air read 33 for 48, its flattest blocks the air's Rayleigh spread): sigma read in the air.
        flattest = np.sqrt(np.quantile(variances[live], QUANTILE, axis=0) / bias)
        in_air = [background_sigma(data[..., c], float(flattest[c])) for c in range(data.shape[3])]
        if None not in in_air:
            return VolumeNoiseEstimate(np.array(in_air), int(live.sum()), clean_sigma)
    per_channel = np.sqrt(np.quantile(variances[chosen], QUANTILE, axis=0) / bias)
    bands = _band_variances(variances[chosen], means[chosen]) / bias  # (bands, C)
    band_sigmas = tuple(float(b) for b in np.sqrt(bands.mean(axis=1)))
    growing = len(band_sigmas) > 1 and band_sigmas[-1] > SHOT_NOISE_RATIO * min(band_sigmas)
    if growing:  # where the error comes from: the noisiest bands
        per_channel = np.sqrt((bands**2).sum(axis=0) / bands.sum(axis=0))
    return VolumeNoiseEstimate(per_channel, int(chosen.sum()), clean_sigma, band_sigmas, growing)


def _region_slices(region: Region, shape: tuple[int, ...]) -> tuple[slice, slice, slice]:
    """Return the user's box as slices; ValueError where it leaves the volume or is thinner than 3 voxels."""
    try:
        bounds = [(int(start), int(stop)) for start, stop in region]
    except (TypeError, ValueError):
        raise ValueError(f"region must be ((z0, z1), (y0, y1), (x0, x1)) voxel ranges, got {region!r}") from None
    if len(bounds) != 3 or any(not 0 <= a < b <= n for (a, b), n in zip(bounds, shape[:3], strict=False)):
        raise ValueError(
            f"region must be ((z0, z1), (y0, y1), (x0, x1)) inside the volume of {' x '.join(map(str, shape[:3]))} "
            f"(z, y, x), got {region!r}"
        )
    if min(b - a for a, b in bounds) < 3:
        raise ValueError(f"region must be at least 3 voxels on each axis to estimate noise, got {region!r}")
    return tuple(slice(a, b) for a, b in bounds)


def _region_noise(crop: np.ndarray, clean_sigma: float) -> VolumeNoiseEstimate:
    """Return the noise of a flat region (Z, Y, X, C): the RMS of its residual per channel, as one "block"."""
    sigma = np.sqrt((_residual(crop) ** 2).mean(axis=(0, 1, 2)))
    return VolumeNoiseEstimate(sigma, 1, clean_sigma)


def _band_variances(variances: np.ndarray, means: np.ndarray) -> np.ndarray:
    """(bands, C) low quantiles of the blocks' residual variance in brightness bands, darkest first.

    The bands hold equal numbers of blocks (by ``means``, each block's over its voxels and
    channels); as for the whole volume (not yet divided by the quantile's bias); (0, C) where there
    are fewer than 2 BAND_BLOCKS blocks.
    """
    count = min(BANDS, len(variances) // BAND_BLOCKS)
    if count < 2:
        return np.empty((0, variances.shape[1]))
    order = np.argsort(means, kind="stable")
    return np.array([np.quantile(variances[band], QUANTILE, axis=0) for band in np.array_split(order, count)])


def suggest_volume_h(
    estimate: VolumeNoiseEstimate | float,
    weighting: str = "exponential",
    *,
    center_weight: str = "one",
    patch_radius: Radii = 1,
) -> float:
    """Suggest h for ``denoise_volume`` (the volume's units) from a noise estimate or a sigma.

    Parameters
    ----------
    estimate : VolumeNoiseEstimate or float
        The noise (its ``average_sigma``, at least its ``clean_sigma``: a clean volume gets a
        gentle h), or a sigma in the volume's units.
    weighting, center_weight, patch_radius
        The settings ``denoise_volume`` will use (as it takes them).

    Returns
    -------
    float
        h in the volume's intensity units.

    Raises
    ------
    ValueError
        A sigma that is not a finite number > 0 (a constant volume), or a bad setting.
    TypeError
        The volume itself given in place of its noise.

    Notes
    -----
    h = k sigma, k of least squared error on the MNI152 T1 template (``H_PER_SIGMA``), read
    between the patch sizes calibrated by the logarithm of the patch's voxel count (anisotropic
    patches included), as at 7^3 beyond. Exponential weights with centre one and 3^3 patches:
    k = 1.08 (the best k 0.93 to 1.26 over sigma 5 to 20 of 255); patches of one voxel 2.25.
    """
    if isinstance(estimate, np.ndarray) and estimate.ndim > 0:
        raise TypeError(
            f"suggest_volume_h takes the noise, not the volume (an array of shape {estimate.shape}): "
            "suggest_volume_h(estimate_volume_noise(volume)), or a sigma in the volume's units"
        )
    if isinstance(estimate, VolumeNoiseEstimate):
        sigma = max(estimate.average_sigma, estimate.clean_sigma)
        if sigma == 0:
            raise ValueError("the volume is constant: there is no noise and nothing to denoise")
    else:
        sigma = float(estimate)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")
    params = VolumeParams.checked(1.0, patch_radius, 0, weighting, center_weight)
    voxels = math.prod(2 * b + 1 for b in params.patch_radius)
    k = np.interp(math.log(voxels), np.log(PATCH_VOXELS), H_PER_SIGMA[(params.weighting, params.center_weight)])
    return float(k) * sigma


def suggested_strengths(
    volume: np.ndarray, channels: str, weighting: str, *, center_weight: str, patch_radius: Radii
) -> float | list[float]:
    """Return the h ``denoise_volume`` takes when none is given: from the noise of ``volume``.

    One h (the volume's units) from the whole volume, or one a channel where its channels are filtered
    ``separately`` (each from its own noise), as ``denoise-volume`` without ``--h`` chooses them.

    Raises
    ------
    ValueError, MemoryError
        As ``estimate_volume_noise`` and ``suggest_volume_h`` (a constant volume, say), saying to give h.
    """
    array = np.asarray(volume)
    apart = channels == "separately" and array.ndim == 4 and array.shape[3] > 1
    parts = [array[..., channel] for channel in range(array.shape[3])] if apart else [array]
    try:
        strengths = [
            suggest_volume_h(
                estimate_volume_noise(part), weighting, center_weight=center_weight, patch_radius=patch_radius
            )
            for part in parts
        ]
    except (ValueError, MemoryError) as error:  # too small, constant, or short of memory: h skips the estimate
        raise type(error)(f"{error}; give h instead") from error
    return strengths if apart else strengths[0]


def automatic_channel_mode(volume: np.ndarray, h: float | Sequence[float] | None = None) -> str:
    """Return how channels="auto" filters a volume's channels: "together" or "separately".

    An h a channel: separately; one h: together (one strength for them all, as given). Without
    h: separately where the channels' sigmas differ by more than SEPARATE_NOISE_RATIO, else
    together. A microscopist's dim channel (noise 5 beside 29) went from 30.7 to 29.0 dB filtered
    together at the pooled noise's h, to 39.0 dB separately. A (Z, Y, X) volume, one channel, or
    channels whose noise cannot be read (NaN, a constant channel): together.
    """
    array = np.asarray(volume)
    if array.ndim != 4 or array.shape[3] == 1:
        return "together"
    if h is not None:
        return "separately" if np.ndim(h) > 0 else "together"
    try:
        sigmas = [estimate_volume_noise(array[..., channel]).average_sigma for channel in range(array.shape[3])]
    except (ValueError, MemoryError):
        return "together"
    if min(sigmas) > 0 and max(sigmas) > SEPARATE_NOISE_RATIO * min(sigmas):
        return "separately"
    return "together"
