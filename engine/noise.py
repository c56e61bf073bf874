"""Noise covariance from flat regions, the color decorrelation transform, synthetic noise.

The noise model is Y = X + N with N ~ Normal(0, Sigma) per pixel, white in space and correlated
across channels (DESIGN.md §1). The estimator works on high-pass residuals: the 3 x 3 kernel
[1 -2 1; -2 4 -2; 1 -2 1] / 6 removes planes and smooth ramps, and on white noise its output
has exactly the noise's covariance (the squared coefficients sum to 36/36 = 1), applied to all
channels alike so that the cross-channel covariances survive. Automatic mode keeps the blocks
whose structure is weakest, iterating as the weak-texture method of Liu, Tanaka and Okutomi
(2013) does: the threshold on a block's gradient covariance follows from the current noise
estimate, blocks over it are dropped, and the estimate is made again from the rest. Given
consecutive frames, the flat blocks that also stay still from one frame to the next (their
temporal differences (f[t+1] - f[t]) / sqrt(2) agree with the spatial estimate) give the final
estimate from those differences: every pixel of the block counts, with no high-pass weighting.

``suggest_h`` reads the PSNR-best h / sigma from a table measured on the sample clip
(``scripts/calibrate_h.py`` regenerates it).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .frames import checked_frame, to_float32
from .params import NLMParams

BLOCK = 16  # pixels on a side of the blocks automatic mode chooses among
MIN_REGION = 16  # pixels on a side of the smallest region an estimate is made from
ITERATIONS = 5
CLEAN_SIGMA = 0.5  # 8-bit levels: below this the footage is taken as noise-free
# A block is weakly textured while the largest eigenvalue of its summed gradient covariance
# stays under this many times what noise alone gives (a generous chi-square quantile).
TEXTURE_FACTOR = 1.6
# A weakly textured block is still while its temporal-difference variance stays under this many
# times the spatial estimate's (noise alone spreads a block's by about 5 %: 16 x 16 x 3 samples;
# looser bounds let slight motion and compression flicker in, biasing sigma up by 2 to 6 %).
STATIC_FACTOR = 1.1
MIN_STATIC_BLOCKS = 8
CALIBRATION_FILE = Path(__file__).with_name("h_calibration.json")


@dataclass(frozen=True)
class NoiseEstimate:
    """The noise of a clip, as ``estimate_noise`` measured it.

    Attributes
    ----------
    covariance : (C, C) ndarray
        Sigma, in units of full scale squared ([0, 1] frames).
    regions : list of (x, y, width, height)
        The boxes the estimate comes from, in pixels, for a GUI to draw.
    samples : int
        Residual pixels used.
    warning : str or None
        Why the estimate may be poor (a region too textured, footage that looks clean).
    method : {"spatial", "temporal", "region", "synthetic"}
        Where the residuals came from: high-pass residuals of flat blocks, temporal differences
        of flat blocks that stay still, or the user's region; "synthetic" for noise of a known
        covariance (``engine.preview.SyntheticNoise.estimate``), measured from nothing.
    """

    covariance: np.ndarray
    regions: list[tuple[int, int, int, int]]
    samples: int
    warning: str | None = None
    method: str = "spatial"

    @property
    def sigma(self) -> np.ndarray:
        """Standard deviation per channel, in 8-bit levels."""
        return np.sqrt(np.diag(self.covariance)) * 255

    @property
    def average_sigma(self) -> float:
        """sqrt(trace(Sigma) / C) in 8-bit levels: the noise level h is measured against, which
        the color transform keeps."""
        return float(np.sqrt(np.trace(self.covariance) / len(self.covariance)) * 255)

    @property
    def correlation(self) -> np.ndarray:
        """The correlation matrix of the channels' noise (identity where a channel has none)."""
        scale = np.sqrt(np.diag(self.covariance))
        safe = np.where(scale > 0, scale, 1)
        correlation = self.covariance / np.outer(safe, safe)
        np.fill_diagonal(correlation, 1.0)
        return correlation

    def color_transform(self) -> np.ndarray:
        """G = s Sigma^(-1/2) with s = sqrt(trace(Sigma) / C) (DESIGN.md §1).

        Noise in Z = G Y is white with the same average variance as in Y, so h keeps its meaning.

        Raises
        ------
        ValueError
            Sigma is singular (a channel without noise): there is nothing to decorrelate.
        """
        values, vectors = np.linalg.eigh(self.covariance)
        if values.min() <= values.max() * 1e-6:
            raise ValueError("the noise covariance is singular (a channel without noise); no color transform")
        inverse_root = vectors @ np.diag(values**-0.5) @ vectors.T
        return np.sqrt(np.trace(self.covariance) / len(values)) * inverse_root

    def luminance_gain(self) -> float:
        """|G u| for the gray axis u = (1, 1, 1) / sqrt(3): how G scales luminance differences.

        Detail in pictures is mostly luminance. Measured on the real clips (sigma 8..30 levels),
        decorrelating gained 0.4 to 1.2 dB of PSNR, each at its best h, wherever this gain was
        1.0 or more (unequal channel sigmas, negative correlations) and lost 0.4 to 0.9 dB
        wherever it was under 1 (equal sigmas, positive correlations: the noise lies along
        the gray axis, so G shrinks the picture's own differences with it).
        """
        return _luminance_gain(self.color_transform())


def _luminance_gain(transform: np.ndarray) -> float:
    gray = np.ones(len(transform)) / np.sqrt(len(transform))
    return float(np.linalg.norm(transform @ gray))


def _residuals(frame: np.ndarray) -> np.ndarray:
    """High-pass residuals (H-2, W-2, C) whose covariance on white noise is the noise's."""
    f = frame
    return (
        f[:-2, :-2] - 2 * f[:-2, 1:-1] + f[:-2, 2:]
        - 2 * f[1:-1, :-2] + 4 * f[1:-1, 1:-1] - 2 * f[1:-1, 2:]
        + f[2:, :-2] - 2 * f[2:, 1:-1] + f[2:, 2:]
    ) / 6  # fmt: skip


def _block_covariances(residual: np.ndarray, size: int, border: int) -> np.ndarray:
    """(rows * cols, C, C) covariances of ``residual`` over size x size blocks, ``border``
    pixels of each block's edge left out, each block's own mean removed when border is 0."""
    rows, cols = residual.shape[0] // size, residual.shape[1] // size
    blocks = residual[: rows * size, : cols * size].reshape(rows, size, cols, size, -1).astype(np.float64)
    blocks = blocks[:, border : size - border, :, border : size - border]
    samples = (size - 2 * border) ** 2
    if border == 0:
        blocks = blocks - blocks.mean(axis=(1, 3), keepdims=True)
        samples -= 1
    covariances = np.einsum("rycxi,rycxj->rcij", blocks, blocks) / samples
    return covariances.reshape(rows * cols, *covariances.shape[-2:])


def _covariance(residuals: np.ndarray) -> np.ndarray:
    flat = residuals.reshape(-1, residuals.shape[-1]).astype(np.float64)
    return flat.T @ flat / len(flat)


def _texture(frame: np.ndarray, size: int) -> np.ndarray:
    """Largest eigenvalue of each block's summed 2 x 2 gradient covariance, channels summed."""
    gy, gx = np.gradient(frame.astype(np.float64), axis=(0, 1))
    rows, cols = frame.shape[0] // size, frame.shape[1] // size

    def block_sum(values: np.ndarray) -> np.ndarray:
        cropped = values[: rows * size, : cols * size].sum(axis=-1)
        return cropped.reshape(rows, size, cols, size).sum(axis=(1, 3))

    xx, yy, xy = block_sum(gx * gx), block_sum(gy * gy), block_sum(gx * gy)
    return (xx + yy) / 2 + np.sqrt(((xx - yy) / 2) ** 2 + xy**2)


def _float_frames(frames: np.ndarray) -> list[np.ndarray]:
    array = np.asarray(frames)
    if array.ndim == 4 or (array.ndim == 3 and array.shape[-1] not in (1, 3)):
        return [to_float32(checked_frame(frame)) for frame in array]
    return [to_float32(checked_frame(array))]


def estimate_noise(frames: np.ndarray, roi: tuple[int, int, int, int] | None = None) -> NoiseEstimate:
    """Estimate the noise covariance of one frame or a few frames.

    Parameters
    ----------
    frames : array
        One frame (H, W[, C]) or several (T, H, W[, C]); uint8, uint16 or float in [0, 1].
    roi : (x, y, width, height), optional
        A flat region chosen by the user, in pixels. Without it the flattest blocks are found.

    Returns
    -------
    NoiseEstimate

    Raises
    ------
    ValueError
        The region is smaller than 16 x 16 pixels or leaves the frame, or (without a region)
        the frames are smaller than one 16 x 16 block.

    Notes
    -----
    Gaussian noise of sigma levels per channel is found within a few percent on footage with
    some flat areas; strong texture everywhere biases it upwards (the warning then says so).
    """
    images = _float_frames(frames)
    height, width = images[0].shape[:2]
    if roi is not None:
        x, y, w, h = (int(v) for v in roi)
        if w < MIN_REGION or h < MIN_REGION:
            raise ValueError(f"the region is {w}x{h} pixels; an estimate needs at least {MIN_REGION}x{MIN_REGION}")
        if x < 0 or y < 0 or x + w > width or y + h > height:
            raise ValueError(f"the region ({x}, {y}, {w}, {h}) leaves the {width}x{height} frame")
        crops = [image[y : y + h, x : x + w] for image in images]
        residuals = np.concatenate([_residuals(c).reshape(-1, c.shape[-1]) for c in crops])
        covariance = _covariance(residuals)
        texture = max(float(_texture(c, min(w, h)).max()) for c in crops)
        expected = _expected_texture(covariance, min(w, h) ** 2)
        warning = None
        if texture > TEXTURE_FACTOR * expected:
            warning = "the region is not flat: its structure adds to the estimate, which is too high"
        return _finished(NoiseEstimate(covariance, [(x, y, w, h)], len(residuals), warning, "region"))
    if height < BLOCK or width < BLOCK:
        raise ValueError(
            f"frames of {width}x{height} pixels are too small for the automatic noise estimate (blocks of "
            f"{BLOCK}x{BLOCK}); give the strength h instead"
        )
    return _finished(_automatic(images))


def _expected_texture(covariance: np.ndarray, pixels: int) -> float:
    """What _texture gives on pure noise of this covariance: np.gradient's central differences
    have variance sigma^2 / 2 per axis, summed over the block and the channels."""
    return float(np.trace(covariance)) / 2 * pixels


def _automatic(images: list[np.ndarray]) -> NoiseEstimate:
    size = BLOCK
    textures = [_texture(image, size) for image in images]
    # Per block, the residual covariance; the residuals are padded back to the frame's size and
    # each block's edge left out (there they mix the neighbouring blocks).
    spatial = np.concatenate(
        [_block_covariances(np.pad(_residuals(i), ((1, 1), (1, 1), (0, 0)), mode="edge"), size, 1) for i in images]
    )
    texture = np.concatenate([t.ravel() for t in textures])
    # Start from the tenth of the blocks with the weakest structure, then iterate the threshold.
    chosen = texture <= np.quantile(texture, 0.1)
    for _ in range(ITERATIONS):
        covariance = np.median(spatial[chosen], axis=0)
        threshold = TEXTURE_FACTOR * _expected_texture(covariance, size * size)
        updated = texture <= max(threshold, texture.min())
        if np.array_equal(updated, chosen):
            break
        chosen = updated
    covariance = _median_covariance(spatial[chosen], (size - 2) ** 2)
    samples, method = int(chosen.sum()) * (size - 2) ** 2, "spatial"
    static = _static_covariances(images, chosen, covariance) if len(images) > 1 else []
    if len(static) >= MIN_STATIC_BLOCKS:
        covariance = _median_covariance(static, size * size - 1)
        samples, method = len(static) * (size * size - 1), "temporal"
    cols = textures[0].shape[1]
    per_frame = textures[0].size
    blocks = (int(i) % per_frame for i in np.flatnonzero(chosen))
    regions = sorted({(block % cols * size, block // cols * size, size, size) for block in blocks})
    warning = None
    if chosen.sum() < 4:
        warning = "few flat regions: the estimate rests on little data; try a region of your own"
    return NoiseEstimate(covariance, regions, samples, warning, method)


def _static_covariances(images: list[np.ndarray], chosen: np.ndarray, spatial: np.ndarray) -> np.ndarray:
    """Covariances of (f[t+1] - f[t]) / sqrt(2) over the blocks flat in both frames that stay
    still: whose temporal variance agrees with the spatial estimate ``spatial``."""
    per_frame = len(chosen) // len(images)
    static = []
    for t in range(len(images) - 1):
        both = chosen[t * per_frame : (t + 1) * per_frame] & chosen[(t + 1) * per_frame : (t + 2) * per_frame]
        difference = (images[t + 1] - images[t]) / np.float32(math.sqrt(2))
        covariances = _block_covariances(difference, BLOCK, 0)[both]
        still = np.trace(covariances, axis1=1, axis2=2) <= STATIC_FACTOR * np.trace(spatial)
        static.append(covariances[still])
    return np.concatenate(static)


def _median_covariance(covariances: np.ndarray, samples: int) -> np.ndarray:
    """Elementwise median of per-block covariances, unbiased for Gaussian noise.

    A block's variance estimate from n samples follows sigma^2 chi2(n)/n; its median is
    sigma^2 (1 - 2/(9n))^3 (Wilson-Hilferty), so the median is divided by that.
    """
    median = np.median(covariances, axis=0)
    return (median + median.T) / 2 / (1 - 2 / (9 * samples)) ** 3


def _finished(estimate: NoiseEstimate) -> NoiseEstimate:
    if estimate.sigma.max() < CLEAN_SIGMA:
        warning = f"the footage looks clean (noise below {CLEAN_SIGMA} levels); denoising may only soften it"
        return dataclasses.replace(estimate, warning=warning)
    return estimate


def add_noise(frames: np.ndarray, covariance: np.ndarray, seed: int) -> np.ndarray:
    """Frames (float in [0, 1], or integers, scaled) plus Gaussian noise of ``covariance``.

    White in space, correlated across channels as ``covariance`` (C x C, full-scale units)
    says; float32 out, not clipped, so that the noise stays exactly Gaussian.
    """
    images = np.stack(_float_frames(frames))
    covariance = np.asarray(covariance, dtype=np.float64)
    channels = images.shape[-1]
    if covariance.shape != (channels, channels):
        raise ValueError(f"covariance must be {channels}x{channels} for these frames, got shape {covariance.shape}")
    values, vectors = np.linalg.eigh(covariance)
    if values.min() < -1e-12:
        raise ValueError("covariance must be positive semi-definite")
    root = vectors @ np.diag(np.sqrt(np.clip(values, 0, None))) @ vectors.T
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(images.shape) @ root.T
    result = (images + noise).astype(np.float32)
    return result if np.asarray(frames).ndim == 4 or len(images) > 1 else result[0]


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
    """The h (8-bit levels) that gives the highest PSNR for this noise, window and color transform.

    h / sigma comes from a table measured on the sample clip with white Gaussian noise
    (``scripts/calibrate_h.py``), interpolated linearly in the patch radius, the search radius,
    the window's frames and log sigma, clamped to the table's ranges; sigma is the estimate's
    ``average_sigma``, which decorrelated noise keeps. A color transform G also scales the
    picture's luminance differences by g = |G u| (u the gray axis), so the picture stands out
    more from the same noise: the ratio is read at sigma / g^2. That exponent was measured on
    the calibration crops with four decorrelated noises (g from 1.35 to 2.24): at g^2 the
    suggested h was within 0.3 dB of the best, at g^1 up to 1.6 dB below. ``params.h`` is ignored.
    """
    table = _calibration()
    sigma = max(estimate.average_sigma, CLEAN_SIGMA)
    gain = 1.0 if params.color_transform is None else _luminance_gain(params.color_transform)
    axes = [table["patch_radius"], table["search_radius"], table["window_frames"], np.log(table["sigma"]).tolist()]
    point = [
        params.patch_radius,
        params.search_radius,
        params.frames_past + params.frames_future + 1,
        math.log(sigma / gain**2),
    ]
    return _interpolate(np.array(table["ratio"][params.weighting]), axes, point) * sigma


def apply_estimate(params: NLMParams, estimate: NoiseEstimate, h: float | None = None) -> NLMParams:
    """``params`` with the color transform and the h that ``estimate`` suggests (``h`` wins if given).

    The color transform is used where it raises PSNR: when it does not shrink luminance
    differences (``NoiseEstimate.luminance_gain`` at least 1). None for gray footage, footage
    that looks clean or a singular covariance: there is no correlation to undo.
    """
    transform = None
    if len(estimate.covariance) > 1 and estimate.sigma.max() >= CLEAN_SIGMA:
        try:
            if estimate.luminance_gain() >= 1:
                transform = estimate.color_transform()
        except ValueError:
            transform = None
    params = dataclasses.replace(params, color_transform=transform)
    return dataclasses.replace(params, h=suggest_h(estimate, params) if h is None else h)
