"""The shape of a clip's noise for SURE's probe: its correlation between pixels, its level by brightness.

SURE (``sure``) estimates tr(Sigma J) with a probe of the noise's own covariance. A white probe
fits noise independent from pixel to pixel and of one level. Noise that demosaicing, film grain
or a camera's processing correlated between neighbouring pixels, or whose level grows with
brightness, has another covariance, and with a white probe SURE reads the risk too low at small
h (the defaults study: 1 to 9 dB lost where it chose so). The shape is measured on the clip:
the noise's autocorrelation at lags up to LAG pixels on the estimate's flat blocks, each less
its least-squares plane (the median over blocks: a block with some texture does not sway it),
and the estimate's bands for its level. The probe is white noise of covariance Sigma between
channels, coloured to that autocorrelation (through its power spectrum) and scaled pixel by
pixel to the band of the picture's brightness there.

Where the filter works in Y'CbCr (``luma_chroma``) and the noise is in a Y'CbCr source's own
samples (Y's independent of Cb's and Cr's), the autocorrelation is measured apart for Y and for
Cb and Cr, and the probe coloured so in Y'CbCr: chroma subsampling correlates chroma's noise
between pixels and leaves luma's white (ffmpeg's test pattern with noise in its 4:2:0 samples:
lag-1 correlation 0.19 in Y, 0.7 in Cb and Cr), and one autocorrelation for both reads chroma's
risk too low at small h. Noise of RGB samples (white, demosaiced: Y's and Cb's correlate at
-0.55) keeps one for all channels: coloured apart, the groups would lose that correlation.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ..frames import to_float32
from .noise_estimate import NoiseEstimate

LAG = 3  # pixels: the autocorrelation's reach (demosaicing and grain correlate over one or two)
MIN_BLOCKS = 4  # flat blocks (over the frames) the autocorrelation is measured on, at least
FLAT_METHODS = ("spatial", "temporal")  # NoiseEstimate.method whose regions are flat blocks
INDEPENDENT = 0.2  # |correlation| of Y's noise with Cb's and Cr's under which the groups are measured apart
LEVEL_BOX = 7  # pixels: the side of the square the brightness a band is read at is averaged over
Band = tuple[float, float, float, int]  # NoiseEstimate.bands': (low, high, sigma, blocks)


@dataclasses.dataclass(frozen=True)
class NoiseShape:
    """How the noise varies over a frame beyond its covariance between channels.

    Attributes
    ----------
    autocorrelation : (2 LAG + 1, 2 LAG + 1) or (C, 2 LAG + 1, 2 LAG + 1) ndarray, or None
        The noise's correlation between pixels (dy + LAG, dx + LAG) apart, 1 at the centre: one
        for every channel, or one per channel of ``basis``; None: independent from pixel to pixel.
    bands : tuple of (low, high, sigma, blocks)
        Sigma (8-bit levels) by brightness band of full scale (``NoiseEstimate.bands``) where the
        level follows brightness; () where it is one level.
    reference : float
        The bands' sigma whose square the covariance is (the root mean square over the clip's
        pixels of their band's sigma), 8-bit levels; 1 without bands.
    basis : (C, C) ndarray or None
        The channels the autocorrelations are of, from the frame's (RGB -> Y'CbCr); None: the
        frame's own.
    """

    autocorrelation: np.ndarray | None = None
    bands: tuple[Band, ...] = ()
    reference: float = 1.0
    basis: np.ndarray | None = None

    def level(self, frame: np.ndarray) -> np.ndarray:
        """Return the noise's standard deviation at each pixel of ``frame`` (H, W, C) over the covariance's.

        From the band of the pixel's brightness (``bands``), relative to ``reference``; 1
        everywhere for noise of one level.
        """
        if not self.bands:
            return np.ones(frame.shape[:2])
        return _band_sigma(frame, self.bands) / self.reference

    def probe(self, frame: np.ndarray, covariance: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Return a draw of noise of this shape for ``frame`` (H, W, C), float32.

        Of covariance ``covariance`` (C x C, full scale squared) between channels, times
        ``level`` squared at each pixel, and correlated between pixels as ``autocorrelation``
        says (in ``basis``'s channels where it is given).
        """
        values, vectors = np.linalg.eigh(np.asarray(covariance, dtype=np.float64))
        root = vectors * np.sqrt(np.clip(values, 0, None))  # a square root also of a singular covariance
        draw = rng.standard_normal(frame.shape) @ root.T
        if self.autocorrelation is not None and self.basis is None:
            draw = _coloured(draw, self.autocorrelation)
        elif self.autocorrelation is not None:
            draw = _coloured(draw @ self.basis.T, self.autocorrelation) @ np.linalg.inv(self.basis).T
        if self.bands:
            draw = draw * self.level(frame)[..., None]
        return draw.astype(np.float32)


WHITE = NoiseShape()


def noise_shape(frames: np.ndarray, estimate: NoiseEstimate, basis: np.ndarray | None = None) -> NoiseShape | None:
    """Return the shape of ``estimate``'s noise, measured on ``frames``; None where it cannot be.

    Parameters
    ----------
    frames : (T, H, W, C) array
        Frames of the clip, whole (``estimate.regions`` are in their pixels): uint8, uint16 at
        16-bit full scale, or float in [0, 1].
    estimate : NoiseEstimate
        The clip's noise: its ``spatially_correlated`` and ``signal_dependent`` say what to
        measure; its ``regions`` are the flat blocks the autocorrelation is measured on.
    basis : (3, 3) array_like, optional
        RGB -> Y'CbCr (``luma_chroma.yuv_matrix``) where the filter works in Y'CbCr: for a colour
        clip, the autocorrelation measured apart for Y and for Cb and Cr where their noise is
        independent (``independent_groups``); None: one for all channels.

    Returns
    -------
    NoiseShape or None
        ``WHITE`` for noise independent from pixel to pixel and of one level; None for
        spatially correlated noise measured elsewhere than on flat blocks (a user's region,
        motion-compensated texture), or with fewer than MIN_BLOCKS of them inside ``frames``.
    """
    bands = estimate.bands if estimate.signal_dependent else ()
    if bands:
        levels = [_band_sigma(to_float32(frame), bands) ** 2 for frame in frames]
        reference = float(np.sqrt(np.mean(levels)))
    else:
        reference = 1.0
    if not estimate.spatially_correlated:
        return NoiseShape(None, bands, reference)
    if estimate.method not in FLAT_METHODS:  # a region of the user's, or texture: the picture is in its pixels
        return None
    blocks = [
        to_float32(frame[y : y + height, x : x + width])
        for frame in frames
        for x, y, width, height in estimate.regions
        if y + height <= frame.shape[0] and x + width <= frame.shape[1] and min(width, height) > 2 * LAG
    ]
    if len(blocks) < MIN_BLOCKS:
        return None
    if basis is None or len(estimate.covariance) != 3 or not independent_groups(estimate.covariance, basis):
        return NoiseShape(_median_autocorrelation(blocks), bands, reference)
    basis = np.asarray(basis, dtype=np.float64)
    converted = [block @ basis.T for block in blocks]
    luma, chroma = (
        _median_autocorrelation([block[..., group] for block in converted]) for group in (slice(0, 1), slice(1, 3))
    )
    return NoiseShape(np.stack([luma, chroma, chroma]), bands, reference, basis)


def independent_groups(covariance: np.ndarray, basis: np.ndarray) -> bool:
    """Whether the noise of covariance ``covariance`` (RGB, C x C) is in Y independent of Cb and Cr.

    Its correlation between Y and each of Cb and Cr, in ``basis`` (RGB -> Y'CbCr), under
    INDEPENDENT: noise added to a Y'CbCr source's samples (about 0), not to RGB's (white: -0.55
    and -0.43 in BT.709). Where Cb and Cr carry about none (grain, one draw for R, G and B), either
    answer measures the same: Y's.
    """
    basis = np.asarray(basis, dtype=np.float64)
    converted = basis @ np.asarray(covariance, dtype=np.float64) @ basis.T
    scale = np.sqrt(np.clip(np.diag(converted), 0, None))
    return bool(np.all(np.abs(converted[0, 1:]) <= INDEPENDENT * scale[0] * scale[1:]))


def _median_autocorrelation(blocks: list[np.ndarray]) -> np.ndarray:
    """Return the median over ``blocks`` of their autocorrelation (``_block_autocorrelation``), 1 at lag 0."""
    median = np.median(np.stack([_block_autocorrelation(block) for block in blocks]), axis=0)
    return median / median[LAG, LAG]


def _block_autocorrelation(block: np.ndarray) -> np.ndarray:
    """Return the noise's autocorrelation to LAG measured on ``block`` (h, w, C), the picture's plane taken out.

    Each lag's products of the residuals, averaged over the pixel pairs it has and summed over
    the channels, are what the noise's covariance at lags up to LAG leaves after each channel's
    least-squares plane is taken out (``_plane_products``); solved for that covariance (the plane
    takes a share of smooth noise's low frequencies: on 16 x 16 blocks grain's lag-2 correlation
    read 0.10 for 0.17 without this), divided by lag 0's.
    """
    height, width = block.shape[:2]
    samples = block.reshape(height * width, -1).astype(np.float64)
    design, inverse = _plane_fit(height, width)
    residual = (samples - design @ (inverse @ samples)).reshape(block.shape)
    spectrum = np.fft.rfft2(residual, s=(height + LAG, width + LAG), axes=(0, 1))
    products = np.fft.irfft2(np.abs(spectrum) ** 2, s=(height + LAG, width + LAG), axes=(0, 1)).sum(axis=-1)
    lags = np.arange(-LAG, LAG + 1)
    pairs = np.outer(height - np.abs(lags), width - np.abs(lags))
    measured = (products[np.ix_(lags % (height + LAG), lags % (width + LAG))] / pairs).ravel()
    half = np.linalg.lstsq(_plane_products(height, width), measured, rcond=None)[0]
    correlation = np.concatenate([half, half[-2::-1]]).reshape(2 * LAG + 1, 2 * LAG + 1)  # R(-lag) = R(lag)
    return correlation / correlation[LAG, LAG]


@functools.cache
def _plane_fit(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the design matrix of a plane over a height x width block, and its pseudo-inverse."""
    rows, columns = np.mgrid[:height, :width]
    design = np.stack([np.ones(height * width), columns.ravel(), rows.ravel()], axis=1)
    return design, np.linalg.pinv(design)


@functools.cache
def _plane_products(height: int, width: int) -> np.ndarray:
    """Return how each lag's covariance shows in a block's residuals less their plane.

    Column j: the products at each of the (2 LAG + 1)^2 lags (in ``_block_autocorrelation``'s
    order, averaged over pairs) of noise whose covariance is 1 at lag j and at its opposite and
    0 elsewhere, after the plane is taken out; j over the first half of the lags and the
    centre, which with the opposite lags are all of them.
    """
    design, inverse = _plane_fit(height, width)
    keep = np.eye(height * width) - design @ inverse
    rows, columns = np.divmod(np.arange(height * width), width)
    apart = (rows[None, :] - rows[:, None], columns[None, :] - columns[:, None])  # (dy, dx) from pixel a to b
    lags = [(dy, dx) for dy in range(-LAG, LAG + 1) for dx in range(-LAG, LAG + 1)]
    at = {lag: (apart[0] == lag[0]) & (apart[1] == lag[1]) for lag in lags}
    columns_of = []
    for dy, dx in lags[: len(lags) // 2 + 1]:
        covariance = (at[(dy, dx)] | at[(-dy, -dx)]).astype(np.float64)
        left = keep @ covariance @ keep
        columns_of.append([left[at[lag]].mean() for lag in lags])
    return np.array(columns_of).T


def _coloured(draw: np.ndarray, autocorrelation: np.ndarray) -> np.ndarray:
    """Return ``draw`` (H, W, C), white, filtered to ``autocorrelation`` between pixels, its variance kept.

    ``autocorrelation``: one for all channels (2 LAG + 1, 2 LAG + 1), or one per channel (C, ...).
    Through the power spectrum (the autocorrelation's Fourier transform, circular over the frame;
    negative values of a truncated autocorrelation taken as 0).
    """
    height, width = draw.shape[:2]
    lags = np.arange(-LAG, LAG + 1)
    gains = []
    for correlation in autocorrelation.reshape(-1, 2 * LAG + 1, 2 * LAG + 1):
        grid = np.zeros((height, width))
        grid[np.ix_(lags % height, lags % width)] += correlation  # += : lags that wrap on a tiny frame add up
        power = np.clip(np.fft.fft2(grid).real, 0, None)
        gains.append(np.sqrt(power[:, : width // 2 + 1] / power.mean()))
    spectrum = np.fft.rfft2(draw, axes=(0, 1)) * np.stack(gains, axis=-1)
    return np.fft.irfft2(spectrum, s=(height, width), axes=(0, 1))


def _band_sigma(frame: np.ndarray, bands: tuple[Band, ...]) -> np.ndarray:
    """Return the sigma (8-bit levels) of the band of each pixel's brightness.

    The brightness: the channels' mean averaged over LEVEL_BOX x LEVEL_BOX pixels around it
    (the bands are of blocks' means); between the bands' centres, interpolated.
    """
    brightness = _box_mean(frame.mean(axis=-1, dtype=np.float64), LEVEL_BOX)
    centres = [(low + high) / 2 for low, high, _, _ in bands]
    return np.interp(brightness, centres, [sigma for _, _, sigma, _ in bands])


def _box_mean(plane: np.ndarray, side: int) -> np.ndarray:
    """Return the mean of ``plane`` over side x side pixels around each pixel, its edges repeated."""
    padded = np.pad(plane, side // 2, mode="edge")
    sums = np.pad(padded.cumsum(axis=0).cumsum(axis=1), ((1, 0), (1, 0)))
    height, width = plane.shape
    return (
        sums[side : side + height, side : side + width]
        - sums[:height, side : side + width]
        - sums[side : side + height, :width]
        + sums[:height, :width]
    ) / side**2
