"""Noise covariance from flat regions, the color decorrelation transform, synthetic noise.

The noise model is Y = X + N with N ~ Normal(0, Sigma) per pixel, white in space and correlated
across channels (DESIGN.md §1). The estimator works on high-pass residuals: the 3 x 3 kernel
[1 -2 1; -2 4 -2; 1 -2 1] / 6 removes planes and smooth ramps, and on white noise its output
has exactly the noise's covariance (the squared coefficients sum to 36/36 = 1), applied to all
channels alike so that the cross-channel covariances survive. Automatic mode keeps the blocks
whose structure is weakest, iterating as the weak-texture method of Liu, Tanaka and Okutomi
(2013) does: the threshold on a block's gradient covariance follows from the current noise
estimate, blocks over it are dropped, and the estimate is made again from the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .frames import checked_frame, to_float32

BLOCK = 16  # pixels on a side of the blocks automatic mode chooses among
MIN_REGION = 16  # pixels on a side of the smallest region an estimate is made from
ITERATIONS = 5
CLEAN_SIGMA = 0.5  # 8-bit levels: below this the footage is taken as noise-free
# A block is weakly textured while the largest eigenvalue of its summed gradient covariance
# stays under this many times what noise alone gives (a generous chi-square quantile).
TEXTURE_FACTOR = 1.6


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
    """

    covariance: np.ndarray
    regions: list[tuple[int, int, int, int]]
    samples: int
    warning: str | None = None

    @property
    def sigma(self) -> np.ndarray:
        """Standard deviation per channel, in 8-bit levels."""
        return np.sqrt(np.diag(self.covariance)) * 255

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


def _residuals(frame: np.ndarray) -> np.ndarray:
    """High-pass residuals (H-2, W-2, C) whose covariance on white noise is the noise's."""
    f = frame
    return (
        f[:-2, :-2] - 2 * f[:-2, 1:-1] + f[:-2, 2:]
        - 2 * f[1:-1, :-2] + 4 * f[1:-1, 1:-1] - 2 * f[1:-1, 2:]
        + f[2:, :-2] - 2 * f[2:, 1:-1] + f[2:, 2:]
    ) / 6  # fmt: skip


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
        The region is smaller than 16 x 16 pixels or leaves the frame.

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
        return _finished(NoiseEstimate(covariance, [(x, y, w, h)], len(residuals), warning))
    return _finished(_automatic(images))


def _expected_texture(covariance: np.ndarray, pixels: int) -> float:
    """What _texture gives on pure noise of this covariance: np.gradient's central differences
    have variance sigma^2 / 2 per axis, summed over the block and the channels."""
    return float(np.trace(covariance)) / 2 * pixels


def _automatic(images: list[np.ndarray]) -> NoiseEstimate:
    size = BLOCK
    textures = [_texture(image, size) for image in images]
    block_residuals = []
    for image in images:
        rows, cols = image.shape[0] // size, image.shape[1] // size
        residual = _residuals(image)
        padded = np.pad(residual, ((1, 1), (1, 1), (0, 0)), mode="edge")[: rows * size, : cols * size]
        # Per block, the residual covariance (edges of each block excluded: their residuals
        # mix neighbours).
        blocks = padded.reshape(rows, size, cols, size, -1)[:, 1:-1, :, 1:-1].astype(np.float64)
        block_residuals.append(np.einsum("rycxi,rycxj->rcij", blocks, blocks) / (size - 2) ** 2)
    covariances = np.concatenate([b.reshape(-1, *b.shape[-2:]) for b in block_residuals])
    texture = np.concatenate([t.ravel() for t in textures])
    # Start from the tenth of the blocks with the weakest structure, then iterate the threshold.
    chosen = texture <= np.quantile(texture, 0.1)
    for _ in range(ITERATIONS):
        covariance = np.median(covariances[chosen], axis=0)
        threshold = TEXTURE_FACTOR * _expected_texture(covariance, size * size)
        updated = texture <= max(threshold, texture.min())
        if np.array_equal(updated, chosen):
            break
        chosen = updated
    covariance = _median_covariance(covariances[chosen])
    cols_per_frame = [t.shape[1] for t in textures]
    regions = []
    offset = 0
    for index, t in enumerate(textures):
        count = t.size
        for flat_index in np.flatnonzero(chosen[offset : offset + count]):
            row, col = divmod(int(flat_index), cols_per_frame[index])
            regions.append((col * size, row * size, size, size))
        offset += count
    warning = None
    if chosen.sum() < 4:
        warning = "few flat regions: the estimate rests on little data; try a region of your own"
    return NoiseEstimate(covariance, sorted(set(regions)), int(chosen.sum()) * (size - 2) ** 2, warning)


def _median_covariance(covariances: np.ndarray) -> np.ndarray:
    """Elementwise median of per-block covariances, unbiased for Gaussian noise.

    A block's variance estimate follows sigma^2 chi2(n)/n; its median is sigma^2 (1 - 2/(9n))^3
    (Wilson-Hilferty), so the median is divided by that.
    """
    samples = (BLOCK - 2) ** 2
    median = np.median(covariances, axis=0)
    return (median + median.T) / 2 / (1 - 2 / (9 * samples)) ** 3


def _finished(estimate: NoiseEstimate) -> NoiseEstimate:
    if estimate.sigma.max() < CLEAN_SIGMA:
        return NoiseEstimate(
            estimate.covariance,
            estimate.regions,
            estimate.samples,
            f"the footage looks clean (noise below {CLEAN_SIGMA} levels); denoising may only soften it",
        )
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
