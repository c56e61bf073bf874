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
Where no flat block stays still (a pan, also a sub-pixel one), where the flat blocks' estimate
looks spatially correlated (texture passes for that) or signal dependent, every block's change to
its match in the next frame, with what a sub-pixel shift and a blur explain fitted out
(``engine.motion_noise.compensated_change``), gives it: the blocks' median (motion the fit leaves
only adds to some), per intensity band where the noise grows with brightness, and the change's
own spatial correlation. Where the flat blocks show little noise with a low confidence, the noise
an encoder kept in the texture is read from the quiet quarter of the motion-compensated change
instead (``engine.motion_noise.kept_noise``). A region the user chose is read from its own
motion-compensated change where there are two frames: it holds all of the noise, also the part
that chroma subsampling or compression smoothed out of the high-pass residuals.

``suggest_h`` reads the PSNR-best h / sigma from a table measured on the sample clip
(``scripts/calibrate_h.py`` regenerates it).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nlmeans_studio.engine.frames import checked_frame, to_float32
from nlmeans_studio.engine.motion_noise import compensated_change, kept_noise, region_change
from nlmeans_studio.engine.params import NLMParams

BLOCK = 16  # pixels on a side of the blocks automatic mode chooses among
NOISE_PLACES = 3  # places in a clip (pairs of frames) the noise is estimated at
MIN_REGION = 16  # pixels on a side of the smallest region an estimate is made from
REGION_TILE = 8  # pixels on a side of the tiles a region's frame-to-frame change is read in
# A tile of a region repeats the previous frame (a repeated frame, a block the encoder held) where
# at least this share of its samples are equal: 8-bit noise of 1 level leaves 28 % equal, 2 levels 14 %.
REPEATED_SHARE = 0.5
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
# A still block's temporal variance is at least this fraction of the spatial estimate: blocks an
# encoder held still (skipped macroblocks repeat the previous frame) have almost none and are
# never trusted.
HELD_FACTOR = 0.6
# Samples within half a level of 0 or full scale are clipped or crushed: clipping truncates the
# noise, so blocks with more than this fraction of them are left out (a block whose mean is 2.6
# sigma from the range's end has 0.5 % of its samples clipped and its variance within 2 % of the
# noise's).
CLIP_MARGIN = 0.5 / 255
CLIPPED_FRACTION = 0.005
# A user's region is measured as it is; past this fraction of clipped samples its noise reads
# more than 2 % low (a region whose mean is 2 sigma from the range's end), which the warning says.
REGION_CLIPPED_FRACTION = 0.02
# Intensity bands (mean over channels) sigma is estimated in; the noise is reported signal
# dependent when the bands' variances differ by more than SIGNAL_DEPENDENT_RATIO.
BAND_EDGES = (0.0, 0.25, 0.5, 0.75, 1.0)
MIN_BAND_BLOCKS = 4
# A band of the motion-compensated change is read from the QUIET_SHARE of its blocks that changed
# least, where it has MIN_BAND_CHANGES blocks: a band's few blocks may all be one moving object's,
# whose misfit would pull their median (and call white noise signal dependent).
QUIET_SHARE = 0.1
MIN_BAND_CHANGES = 20
SIGNAL_DEPENDENT_RATIO = 1.5
# Spatially correlated noise (demosaicing, deinterlacing, compression) has less energy in the
# high-pass residuals than in the pixels: flat blocks' variance around a plane over the residual
# variance past this ratio says so, and the pixels' variance is then the estimate (patch
# distances see the pixels' noise, not the residuals').
CORRELATED_RATIO = 1.4
LOW_CONFIDENCE = 0.5
# The confidence of an estimate from the frame-to-frame change (``engine.motion_noise``): under
# LOW_CONFIDENCE, so that the warning still offers a region to check it on.
MOTION_CONFIDENCE = 0.4
CALIBRATION_FILE = Path(__file__).with_name("h_calibration.json")
CALIBRATION_CHANNELS = 3  # the calibration's white noise: R, G and B independent
# Effective channels under SHARED_NOISE_CHANNELS: noise shared by the channels (compressed
# footage reads about 1.1 of 3), which the CLI and the window explain. At least WHITE_SHARE of the
# channels: white noise (independent, one sigma), with nothing to decorrelate. White noise of sigma
# 3 to 40 levels read 2.981 to 3.000 of 3 on the bikes, the sample clip and a flat frame (its
# luminance gain 0.955 to 1.004, either side of 1 by chance); equal sigmas correlated 0.1 read 2.94.
SHARED_NOISE_CHANNELS = 2.0
WHITE_SHARE = 0.98


@dataclass(frozen=True)
class NoiseEstimate:
    """The noise of a clip, as ``estimate_noise`` measured it.

    ``estimate_noise`` makes it; the constructor takes the attributes below, in order.

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
    method : {"spatial", "temporal", "motion", "region", "synthetic"}
        Where the residuals came from: high-pass residuals of flat blocks, the change from frame
        to frame of flat blocks that stay still or else of all blocks, motion compensated (a
        pan, texture, noise that grows with brightness or is spatially correlated), the change
        of the quietest motion-compensated blocks where the flat blocks show little noise
        (compressed footage: ``engine.motion_noise``), or the user's region; "synthetic" for noise of a known
        covariance (``engine.preview.SyntheticNoise.estimate``), measured from nothing.
    confidence : float
        0 to 1: how far the estimate can be trusted (enough flat blocks, blocks that agree with
        each other, little clipping); under 0.5 the warning asks for a region.
    bands : tuple of (low, high, sigma, blocks)
        Sigma (8-bit levels, channels' average) per intensity band [low, high) of full scale,
        for the bands with enough flat blocks: camera noise grows with brightness.
    spatial_correlation : float
        1 - (high-pass residual variance) / (pixel variance) of the noise (the frame-to-frame
        change, or one frame's flat blocks): 0 for white noise, towards 1 for noise that
        demosaicing, deinterlacing or compression smoothed.
    """

    covariance: np.ndarray
    regions: list[tuple[int, int, int, int]]
    samples: int
    warning: str | None = None
    method: str = "spatial"
    confidence: float = 1.0
    bands: tuple[tuple[float, float, float, int], ...] = ()
    spatial_correlation: float = 0.0

    @property
    def sigma(self) -> np.ndarray:
        """Standard deviation per channel, in 8-bit levels."""
        return np.sqrt(np.diag(self.covariance)) * 255

    @property
    def signal_dependent(self) -> bool:
        """Whether the bands' variances differ by more than SIGNAL_DEPENDENT_RATIO."""
        sigmas = [band[2] for band in self.bands]
        return len(sigmas) > 1 and max(sigmas) ** 2 > SIGNAL_DEPENDENT_RATIO * max(min(sigmas), CLEAN_SIGMA) ** 2

    @property
    def spatially_correlated(self) -> bool:
        """Whether the noise is smoother than white noise (``spatial_correlation`` past 1 - 1/1.4)."""
        return self.spatial_correlation > 1 - 1 / CORRELATED_RATIO

    @property
    def average_sigma(self) -> float:
        """sqrt(trace(Sigma) / C) in 8-bit levels: the noise level h is measured against, which
        the color transform keeps."""
        return float(np.sqrt(np.trace(self.covariance) / len(self.covariance)) * 255)

    @property
    def effective_channels(self) -> float:
        """trace(Sigma)^2 / trace(Sigma^2): how many independent channels' worth of noise a patch
        distance sums. C for white noise of equal sigmas, 1 for noise shared by all channels
        (compressed footage keeps its noise in luma: about 1.1 of 3)."""
        return _effective_channels(np.asarray(self.covariance, dtype=np.float64))

    @property
    def shared_by_channels(self) -> bool:
        """Whether the channels share the noise: ``effective_channels`` under SHARED_NOISE_CHANNELS
        (``suggest_h`` raises h for it where no color transform whitens it)."""
        return len(self.covariance) > 1 and self.effective_channels < SHARED_NOISE_CHANNELS

    @property
    def white(self) -> bool:
        """Whether the channels' noise is independent and of one sigma (Sigma about s^2 I, so G
        about I): ``effective_channels`` at least WHITE_SHARE of the channels."""
        return self.effective_channels >= WHITE_SHARE * len(self.covariance)

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


def _effective_channels(covariance: np.ndarray) -> float:
    squares = float(np.trace(covariance @ covariance))
    return float(np.trace(covariance)) ** 2 / squares if squares > 0 else float(len(covariance))


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


def _block_covariances(values: np.ndarray, size: int, *, border: int = 0, centred: bool = False) -> np.ndarray:
    """(rows * cols, C, C) covariances of ``values`` over size x size blocks, ``border`` pixels
    of each block's edge left out, about each block's own mean where ``centred``, else about 0."""
    rows, cols = values.shape[0] // size, values.shape[1] // size
    blocks = values[: rows * size, : cols * size].reshape(rows, size, cols, size, -1).astype(np.float64)
    blocks = blocks[:, border : size - border, :, border : size - border]
    samples = (size - 2 * border) ** 2
    if centred:
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


def _as_array(frames: np.ndarray) -> np.ndarray:
    try:
        array = np.asarray(frames)
    except ValueError:  # a list of frames of different shapes
        raise ValueError("frames must be one frame or several of one shape (T, H, W[, C])") from None
    if not array.size:
        raise ValueError(f"frames must hold at least one frame of at least 1x1 pixels, got shape {array.shape}")
    return array


def _is_clip(array: np.ndarray) -> bool:
    """Whether ``array`` holds several frames (T, H, W[, C]) rather than one (H, W[, C])."""
    return array.ndim == 4 or (array.ndim == 3 and array.shape[-1] not in (1, 3))


def _float_frames(frames: np.ndarray, bit_depth: int | None) -> list[np.ndarray]:
    array = _as_array(frames)
    if _is_clip(array):
        return [to_float32(checked_frame(frame, bit_depth)) for frame in array]
    return [to_float32(checked_frame(array, bit_depth))]


def _checked_region(roi: object) -> tuple[int, int, int, int]:
    """``roi`` as (x, y, width, height) whole pixels, or ValueError saying what it should be."""
    values = list(roi) if isinstance(roi, (tuple, list, np.ndarray)) else []
    if len(values) != 4 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        raise ValueError(f"roi must be (x, y, width, height) in whole pixels, like (10, 20, 64, 64), got {roi!r}")
    x, y, w, h = (int(v) for v in values)
    return x, y, w, h


def estimate_noise(
    frames: np.ndarray, roi: tuple[int, int, int, int] | None = None, *, bit_depth: int | None = None
) -> NoiseEstimate:
    """Estimate the noise covariance of one frame or of a clip.

    Parameters
    ----------
    frames : array_like
        One frame (H, W[, C]) or several consecutive ones (T, H, W[, C]), C = 1 or 3; uint8,
        uint16 or float in [0, 1] (full scale). Two frames or more give a temporal estimate
        (the motion-compensated change); a clip is measured as ``denoise`` and the window
        measure a file (``estimate_noise_over``: NOISE_PLACES pairs spread over it, the median;
        a few frames together), so that the API, the command line and the window read the
        same noise.
    roi : (x, y, width, height), optional
        A region chosen by the user, in pixels, in the first frame. Without it the flattest
        blocks are found. Given two frames or more, the region's change from frame to frame
        (motion-compensated) is the estimate: all of the noise, also what chroma subsampling or
        compression smoothed, and the picture's structure cancels (a region that stays still
        need not be flat); one frame gives its high-pass residuals, exact for white noise on a
        flat region.
    bit_depth : int, optional
        Bits per sample of uint16 frames, 9..16, as ``Denoiser`` takes it (10 for 10-bit samples
        in uint16); needed where all their values fit in 12 bits.

    Returns
    -------
    NoiseEstimate
        The covariance in full scale squared, where it came from and how far to trust it.

    Raises
    ------
    ValueError
        The region is not four whole numbers, is smaller than 16 x 16 pixels or leaves the frame,
        or (without a region)
        the frames are smaller than one 16 x 16 block; frames of another dtype, shape or
        channel count, with NaN or infinite values, or float frames not on the 0..1 scale; uint16
        frames beyond ``bit_depth``, or all within 12 bits without one.

    Notes
    -----
    Gaussian noise of sigma levels per channel is found within a few percent on footage with
    some flat areas; strong texture everywhere biases it upwards (the warning then says so).
    """
    clip = _as_array(frames)
    if _is_clip(clip) and len(clip) > 2:
        return estimate_noise_over(clip.__getitem__, 0, len(clip), roi, bit_depth=bit_depth)[1]
    return _estimate(clip, roi, bit_depth)


def estimate_noise_over(
    frame: Callable[[int], np.ndarray],
    first: int,
    last: int,
    roi: tuple[int, int, int, int] | None = None,
    *,
    bit_depth: int | None = None,
) -> tuple[int, NoiseEstimate]:
    """The noise of frames ``first`` .. ``last`` - 1, as ``estimate_clip_noise`` measures it:
    NOISE_PLACES pairs of consecutive frames spread over them, each estimated alone
    (``estimate_noise``), and the estimate of median average sigma, so that one odd scene (a
    fade, a title) does not decide; pairs that look clean where another pair shows noise are
    left out (an encoder's copied frames: MPEG-2 at qscale 5 read 0.05 levels for 5.8 on two
    pairs of three). Fewer than 2 NOISE_PLACES frames, whose pairs would overlap, are measured
    together.

    Parameters
    ----------
    frame : callable
        ``frame(i)`` is frame i, (H, W, C) as ``estimate_noise`` takes frames.
    first, last : int
        The frames to measure: ``first`` .. ``last`` - 1 (one pair where they are two).
    roi : (x, y, width, height), optional
        A flat region, in pixels, measured on each pair; None: flat blocks found automatically.
    bit_depth : int, optional
        Bits per sample of uint16 frames, as ``estimate_noise`` takes it.

    Returns
    -------
    (int, NoiseEstimate)
        The first frame of the pair the estimate comes from (its regions lie on that frame),
        and the estimate.

    Raises
    ------
    ValueError
        Frames ``estimate_noise`` refuses, or a region that leaves them.
    """
    if last - first < 2 * NOISE_PLACES:  # the pairs would overlap: the few frames measured together
        return first, _estimate(np.stack([frame(i) for i in range(first, last)]), roi, bit_depth)
    places = sorted({round(p) for p in np.linspace(first, max(first, last - 2), NOISE_PLACES)})
    estimates = [
        _estimate(np.stack([frame(i) for i in range(place, min(place + 2, last))]), roi, bit_depth) for place in places
    ]
    # A pair that sees no noise where another does shows frames an encoder copied (MPEG-2's P
    # and B frames keep the I frame's noise: no change between them) or a fade: not the noise.
    seen = [i for i in range(len(places)) if estimates[i].average_sigma >= CLEAN_SIGMA] or list(range(len(places)))
    median = sorted(seen, key=lambda i: estimates[i].average_sigma)[len(seen) // 2]
    return places[median], estimates[median]


def _estimate(frames: np.ndarray, roi: tuple[int, int, int, int] | None, bit_depth: int | None) -> NoiseEstimate:
    """``estimate_noise`` of one frame or two."""
    images = _float_frames(frames, bit_depth)
    height, width = images[0].shape[:2]
    if roi is not None:
        x, y, w, h = _checked_region(roi)
        if w < MIN_REGION or h < MIN_REGION:
            raise ValueError(f"the region is {w}x{h} pixels; an estimate needs at least {MIN_REGION}x{MIN_REGION}")
        if x < 0 or y < 0 or x + w > width or y + h > height:
            raise ValueError(f"the region ({x}, {y}, {w}, {h}) leaves the {width}x{height} frame")
        return _region(images, (x, y, w, h))
    if height < BLOCK or width < BLOCK:
        raise ValueError(
            f"frames of {width}x{height} pixels are too small for the automatic noise estimate (blocks of "
            f"{BLOCK}x{BLOCK}); give the strength h instead"
        )
    return _finished(_automatic(images))


def _region(images: list[np.ndarray], box: tuple[int, int, int, int]) -> NoiseEstimate:
    """The noise in the user's region (``_region_noise``); where more than REGION_CLIPPED_FRACTION
    of its samples are clipped, its warning starts by saying that clipping cut the noise off (black
    bars, a blown-out sky), which explains a low reading, or a clean one."""
    x, y, w, h = box
    estimate = _region_noise(images, box)
    clipped = float(np.mean([_clipped(image[y : y + h, x : x + w]).mean() for image in images]))
    if clipped <= REGION_CLIPPED_FRACTION:
        return _finished(estimate)
    note = (
        f"{clipped:.0%} of the region's samples are clipped at black or white, which cuts the noise off: "
        "it reads too low; choose a region in the mid-tones"
    )
    warning = "; ".join(filter(None, [note, estimate.warning]))
    return dataclasses.replace(estimate, warning=warning, confidence=min(estimate.confidence, 0.3))


def _region_noise(images: list[np.ndarray], box: tuple[int, int, int, int]) -> NoiseEstimate:
    """The noise in the user's region: from its motion-compensated change between consecutive
    frames where there are two or more that differ there (all of the noise, as the automatic
    temporal estimate reads it, and the picture's structure cancels; the high-pass residuals miss
    noise that chroma subsampling or compression smoothed), else from one frame's residuals."""
    x, y, w, h = box
    crops = [image[y : y + h, x : x + w] for image in images]
    residuals = np.concatenate([_residuals(c).reshape(-1, c.shape[-1]) for c in crops])
    spatial = _covariance(residuals)
    notes = []
    if len(images) > 1:
        # Per pair of frames, tiles of the change about their own mean (a change of light); tiles
        # that repeat the previous frame (a repeated frame, blocks the encoder held) are left out.
        changes = [region_change(current, reference, box) for current, reference in itertools.pairwise(images)]
        tiles = np.concatenate([_block_covariances(change, REGION_TILE, centred=True) for change in changes])
        repeated = np.concatenate([_block_means(change == 0, REGION_TILE) >= REPEATED_SHARE for change in changes])
        if not repeated.all():
            return _region_change_estimate(tiles[~repeated], spatial, box, int(repeated.sum()))
        notes.append(
            "the region repeats the previous frame (a repeated frame, or held still by the encoder): sigma is "
            "from the frame alone, whose high-pass residuals miss smoothed noise; measure at another frame"
        )
    texture = max(float(_texture(c, min(w, h)).max()) for c in crops)
    confidence = 1.0
    if texture > TEXTURE_FACTOR * _expected_texture(spatial, min(w, h) ** 2):
        # Structure and noise smoother than white noise both leave more gradient than the
        # high-pass residuals account for; one frame cannot tell them apart.
        notes.append(
            "the region is not flat, or its noise is smoothed (compression): structure makes this one-frame "
            "estimate too high, smoothed noise too low; choose a flatter region, or give two frames or more"
        )
        confidence = 0.3
    return NoiseEstimate(spatial, [box], len(residuals), "; ".join(notes) or None, "region", confidence)


def _region_change_estimate(
    tiles: np.ndarray, spatial: np.ndarray, box: tuple[int, int, int, int], left_out: int
) -> NoiseEstimate:
    """The region's noise from its change's tiles (covariances over REGION_TILE pixels; ``left_out``
    more repeated the previous frame): their median. It reads all of the noise, also what chroma
    subsampling or compression smoothed out of the high-pass residuals ``spatial`` (their ratio
    gives the spatial correlation), where the tiles agree; tiles that spread more than noise does
    changed by more or less than noise (motion, something passing; an encoder that kept the noise
    in some blocks only), which the warning says."""
    temporal = _median_covariance(tiles, REGION_TILE**2 - 1)
    agreement = _agreement(tiles, REGION_TILE**2 - 1)
    ratio = float(np.trace(temporal) / max(np.trace(spatial), 1e-30))
    spatial_correlation, notes = max(0.0, 1 - 1 / ratio), []
    if agreement < LOW_CONFIDENCE:
        spatial_correlation = 0.0  # the ratio is the change's, not the noise's
        notes.append(
            "the region changes unevenly from frame to frame (motion or something passing raises the estimate, "
            "blocks an encoder smoothed lower it): it is uncertain; choose a flat region that stays still"
        )
    elif ratio > CORRELATED_RATIO:
        notes.append(_correlated_note(spatial_correlation))
    if left_out:
        notes.append(
            f"{left_out} of the region's {left_out + len(tiles)} tiles repeat the previous frame (a repeated "
            "frame, or blocks the encoder held still) and were left out"
        )
    return NoiseEstimate(
        temporal,
        [box],
        len(tiles) * REGION_TILE**2,
        "; ".join(notes) or None,
        "region",
        round(agreement, 3),
        spatial_correlation=round(spatial_correlation, 3),
    )


_SIGNAL_DEPENDENT_NOTE = "the noise grows with brightness: sigma is the picture's average, per band in the bands"


def _correlated_note(spatial_correlation: float) -> str:
    return (
        f"the noise is spatially correlated ({spatial_correlation:.0%} of its variance below the "
        "high-pass band: demosaicing, deinterlacing or compression); sigma is the pixels'"
    )


def _expected_texture(covariance: np.ndarray, pixels: int) -> float:
    """What _texture gives on pure noise of this covariance: np.gradient's central differences
    have variance sigma^2 / 2 per axis, summed over the block and the channels."""
    return float(np.trace(covariance)) / 2 * pixels


def _block_means(frame: np.ndarray, size: int) -> np.ndarray:
    """Mean over each size x size block and the channels, in full scale, flattened."""
    rows, cols = frame.shape[0] // size, frame.shape[1] // size
    cropped = frame[: rows * size, : cols * size].astype(np.float64).mean(axis=-1)
    return cropped.reshape(rows, size, cols, size).mean(axis=(1, 3)).ravel()


def _clipped_fractions(frame: np.ndarray, size: int) -> np.ndarray:
    """Fraction of each block's samples within CLIP_MARGIN of 0 or full scale, flattened."""
    rows, cols = frame.shape[0] // size, frame.shape[1] // size
    clipped = _clipped(frame[: rows * size, : cols * size]).mean(axis=-1)
    return clipped.reshape(rows, size, cols, size).mean(axis=(1, 3)).ravel()


def _clipped(values: np.ndarray) -> np.ndarray:
    """Whether each sample lies within CLIP_MARGIN of 0 or full scale (clipped or crushed)."""
    return (np.abs(values) <= CLIP_MARGIN) | (np.abs(values - 1) <= CLIP_MARGIN)


def _plane_covariances(frame: np.ndarray, size: int) -> np.ndarray:
    """(blocks, C, C) covariances of the pixels around each block's least-squares plane."""
    rows, cols = frame.shape[0] // size, frame.shape[1] // size
    blocks = frame[: rows * size, : cols * size].astype(np.float64).reshape(rows, size, cols, size, -1)
    blocks = blocks.transpose(0, 2, 1, 3, 4).reshape(rows * cols, size * size, -1)
    y, x = np.mgrid[:size, :size]
    design = np.stack([np.ones(size * size), x.ravel(), y.ravel()], axis=1)
    residual = blocks - design @ (np.linalg.pinv(design) @ blocks)
    return np.einsum("bpi,bpj->bij", residual, residual) / (size * size - 3)


def _weak_texture(texture: np.ndarray, spatial: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """The candidate blocks of weak structure (Liu, Tanaka and Okutomi's iteration)."""
    chosen = candidates & (texture <= np.quantile(texture[candidates], 0.1))
    for _ in range(ITERATIONS):
        covariance = np.median(spatial[chosen], axis=0)
        threshold = TEXTURE_FACTOR * _expected_texture(covariance, BLOCK * BLOCK)
        updated = candidates & (texture <= max(threshold, texture[candidates].min()))
        if np.array_equal(updated, chosen):
            break
        chosen = updated
    return chosen


def _automatic(images: list[np.ndarray]) -> NoiseEstimate:
    size = BLOCK
    textures = [_texture(image, size) for image in images]
    # Per block, the residual covariance; the residuals are padded back to the frame's size and
    # each block's edge left out (there they mix the neighbouring blocks).
    spatial = np.concatenate(
        [
            _block_covariances(np.pad(_residuals(i), ((1, 1), (1, 1), (0, 0)), mode="edge"), size, border=1)
            for i in images
        ]
    )
    texture = np.concatenate([t.ravel() for t in textures])
    means = np.concatenate([_block_means(i, size) for i in images])
    unclipped = np.concatenate([_clipped_fractions(i, size) for i in images]) <= CLIPPED_FRACTION
    notes, confidence = [], 1.0
    if unclipped.sum() < MIN_BAND_BLOCKS:
        notes.append("most of the picture is clipped at black or white: the estimate is low")
        unclipped[:], confidence = True, 0.3
    elif unclipped.mean() < 0.5:
        confidence *= 0.8
    chosen = _weak_texture(texture, spatial, unclipped)
    residual_samples = (size - 2) ** 2
    covariance = _median_covariance(spatial[chosen], residual_samples)
    bands, band_covariances = _bands(texture, spatial, means, unclipped, residual_samples)
    band_of = np.clip(np.searchsorted(BAND_EDGES, means, side="right") - 1, 0, len(BAND_EDGES) - 2)
    estimate_bands = tuple(bands)
    samples, method = int(chosen.sum()) * residual_samples, "spatial"
    plane = np.concatenate([_plane_covariances(i, size) for i in images])
    raw = _median_covariance(plane[chosen], size * size - 3)
    spatial_correlation = max(0.0, 1 - float(np.trace(covariance) / max(np.trace(raw), 1e-30)))
    if np.sqrt(np.trace(covariance) / len(covariance)) * 255 < CLEAN_SIGMA:
        spatial_correlation = 0.0  # clean footage: what is left around the plane is the picture
    signal_dependent = NoiseEstimate(covariance, [], 0, bands=estimate_bands).signal_dependent
    measured, measured_samples = spatial, residual_samples  # the blocks' covariances the estimate rests on
    correlated = spatial_correlation > 1 - 1 / CORRELATED_RATIO
    if correlated:
        # Patch distances see the pixels' noise: the plane-fit variance of the flat blocks. The
        # blocks are chosen again against the pixels' noise: the residuals' understates the
        # gradients smooth noise gives, and that threshold kept only the quietest blocks (often
        # one, which would make the estimate look untrustworthy).
        chosen = chosen | (unclipped & (texture <= TEXTURE_FACTOR * _expected_texture(raw, size * size)))
        measured, measured_samples = plane, size * size - 3
        covariance = _median_covariance(plane[chosen], measured_samples)
        samples = int(chosen.sum()) * measured_samples
        notes.append(_correlated_note(spatial_correlation))
        confidence *= 0.8
    elif signal_dependent:
        covariance = _band_average(band_covariances, band_of)
        notes.append(_SIGNAL_DEPENDENT_NOTE)
    cols = textures[0].shape[1]
    per_frame = textures[0].size
    blocks = (int(i) % per_frame for i in np.flatnonzero(chosen))
    regions = sorted({(block % cols * size, block // cols * size, size, size) for block in blocks})
    confidence *= min(1.0, chosen.sum() / 16) * _agreement(measured[chosen], measured_samples)
    flat_sigma = math.sqrt(np.trace(covariance) / len(covariance))
    kept = kept_noise(images, flat_sigma) if confidence < LOW_CONFIDENCE and len(images) > 1 else None
    temporal, held = _temporal(images) if len(images) > 1 else (None, 0)
    if held:
        notes.append(f"{held} blocks held still by the encoder (no change from frame to frame) were not used")
    static = _static_covariances(images, chosen, covariance) if len(images) > 1 else []
    if kept is None and len(static) >= MIN_STATIC_BLOCKS and not signal_dependent and not correlated:
        # Flat blocks that stay in place change by the noise alone, also in footage whose clean
        # picture flickers elsewhere (a compressed source) or whose noise an encoder smoothed
        # unevenly; where there are such blocks, their change is the estimate.
        covariance = _median_covariance(static, size * size - 1)
        samples, method = len(static) * (size * size - 1), "temporal"
    elif kept is None and temporal is not None and flat_sigma * 255 >= CLEAN_SIGMA:
        # The change measures what the flat blocks' notes guessed at (texture passes for
        # spatially correlated noise there); footage whose flat blocks look clean is left to the
        # compressed-noise check.
        warning = "; ".join(filter(None, [temporal.warning, notes[-1] if held else None])) or None
        return dataclasses.replace(temporal, warning=warning)
    if kept is not None:
        # The flat blocks' notes and bands describe the noise the encoder left there, not this.
        covariance, regions, samples = kept
        method, confidence, estimate_bands = "motion", MOTION_CONFIDENCE, ()
        notes = [
            "the flat areas show little noise, but the texture changes from frame to frame as noise does "
            "(compressed footage): sigma is that change after motion compensation, plus the compression artifacts"
        ]
    elif chosen.sum() < 4:
        notes.insert(0, "few flat regions: the estimate rests on little data")
    if confidence < LOW_CONFIDENCE:
        region = "a region (of the texture) to check it on" if method == "motion" else "a flat region of your own"
        notes.append(f"low confidence ({confidence:.2f}): choose {region}")
    warning = "; ".join(notes) or None
    return NoiseEstimate(
        covariance,
        regions,
        samples,
        warning,
        method,
        confidence=round(float(confidence), 3),
        bands=estimate_bands,
        spatial_correlation=round(spatial_correlation, 3),
    )


def _bands(
    texture: np.ndarray, spatial: np.ndarray, means: np.ndarray, candidates: np.ndarray, samples: int
) -> tuple[list[tuple[float, float, float, int]], list[np.ndarray | None]]:
    """Sigma per intensity band from the band's own weakly textured blocks, and each band's
    covariance (None where the band has too few flat blocks)."""
    bands, covariances = [], []
    for low, high in itertools.pairwise(BAND_EDGES):
        inside = candidates & (means >= low) & ((means < high) | (high == BAND_EDGES[-1]))
        covariance = None
        if inside.sum() >= MIN_BAND_BLOCKS:
            chosen = _weak_texture(texture, spatial, inside)
            if chosen.sum() >= MIN_BAND_BLOCKS:
                covariance = _median_covariance(spatial[chosen], samples)
                sigma = float(np.sqrt(np.trace(covariance) / len(covariance)) * 255)
                bands.append((low, high, round(sigma, 3), int(chosen.sum())))
        covariances.append(covariance)
    return bands, covariances


def _band_average(band_covariances: list[np.ndarray | None], band_of: np.ndarray) -> np.ndarray:
    """The picture's average covariance for noise that grows with brightness: each band's weighted
    by the share of the picture's blocks in it (bands without enough blocks of their own take the
    nearest band's)."""
    known = np.array([i for i, c in enumerate(band_covariances) if c is not None])
    weights = np.bincount(band_of, minlength=len(band_covariances)) / len(band_of)
    return sum(weight * band_covariances[known[np.argmin(np.abs(known - i))]] for i, weight in enumerate(weights))


def _temporal(images: list[np.ndarray]) -> tuple[NoiseEstimate | None, int]:
    """The noise from the change of every block between consecutive frames, motion compensated
    (``engine.motion_noise.compensated_change``): the blocks' median covariance (motion the fit
    leaves only adds to some blocks' change; compressed noise, smoothed unevenly, is read at its
    middle), per band (``_quiet_covariance``) where the noise grows with brightness, and the
    change's spatial correlation (which, unlike the flat blocks', no texture adds to). None where
    fewer than MIN_STATIC_BLOCKS blocks changed; and the number of blocks that repeat the previous
    frame (held still by an encoder, or a repeated frame), which are left out, as blocks with
    clipped samples are (clipping truncates the noise)."""
    changes, degrees, means, used, held = [], [], [], [], 0
    for current, reference in itertools.pairwise(images):
        change, block_degrees, corners = compensated_change(current, reference)
        blocks = np.array([current[y : y + BLOCK, x : x + BLOCK] for y, x in corners]).reshape(change.shape)
        repeated = np.mean(change == 0, axis=(1, 2, 3)) >= REPEATED_SHARE
        clipped = _clipped(blocks).mean(axis=(1, 2, 3)) > CLIPPED_FRACTION
        held += int(repeated.sum())
        keep = ~repeated & ~clipped
        changes.append(change[keep])
        degrees.append(block_degrees[keep])
        means.append(blocks[keep].mean(axis=(1, 2, 3)))
        used.extend((int(x), int(y), BLOCK, BLOCK) for y, x in corners[keep])
    change, degrees, means = (np.concatenate(values) for values in (changes, degrees, means))
    if len(change) < MIN_STATIC_BLOCKS:
        return None, held
    covariances = np.einsum("nyxi,nyxj->nij", change, change) / degrees[:, None, None]
    samples = float(np.median(degrees))
    band_of = np.clip(np.searchsorted(BAND_EDGES, means, side="right") - 1, 0, len(BAND_EDGES) - 2)
    counts = np.bincount(band_of, minlength=len(BAND_EDGES) - 1)
    band_covariances = [
        _quiet_covariance(covariances[band_of == band], samples) if count >= MIN_BAND_CHANGES else None
        for band, count in enumerate(counts)
    ]
    bands = tuple(
        (low, high, round(float(np.sqrt(np.trace(c) / len(c)) * 255), 3), int(count))
        for low, high, c, count in zip(BAND_EDGES, BAND_EDGES[1:], band_covariances, counts, strict=False)
        if c is not None
    )
    estimate = NoiseEstimate(_median_covariance(covariances, samples), [], 0, bands=bands)
    notes = []
    if estimate.signal_dependent:
        notes.append(_SIGNAL_DEPENDENT_NOTE)
        estimate = dataclasses.replace(estimate, covariance=_band_average(band_covariances, band_of))
    # The quieter half of the blocks (motion the fit leaves, and a compressed source's flicker,
    # only add to a block's change): how far they agree, and their change's high-pass residuals
    # over its pixels' variance, the noise's spatial correlation.
    variances = np.trace(covariances, axis1=1, axis2=2)
    quiet = variances <= np.median(variances)
    confidence = _agreement(covariances[quiet], round(samples))
    high_pass = _residuals(np.moveaxis(change[quiet], 0, 2).reshape(BLOCK, BLOCK, -1))
    ratio = np.mean(high_pass**2) / np.mean(change[quiet] ** 2)
    spatial_correlation = max(0.0, 1 - float(ratio))
    if spatial_correlation > 1 - 1 / CORRELATED_RATIO:
        notes.append(_correlated_note(spatial_correlation))
    if confidence < LOW_CONFIDENCE:
        notes.append(f"low confidence ({confidence:.2f}): choose a flat region of your own")
    return dataclasses.replace(
        estimate,
        regions=sorted(set(used)),
        samples=int(degrees.sum()),
        warning="; ".join(notes) or None,
        method="temporal",
        confidence=round(confidence, 3),
        spatial_correlation=round(spatial_correlation, 3),
    ), held


def _quiet_covariance(covariances: np.ndarray, samples: float) -> np.ndarray:
    """The noise of the QUIET_SHARE of blocks that changed least.

    Motion that the fit does not explain (occlusion, several motions in a block) and the clean
    picture's own flicker (a compressed source) only add to a block's change, so the quiet blocks
    read the noise: the quiet share's variance over what that quantile of noise alone gives
    (chi-square with the blocks' samples times the noise's effective channels degrees of freedom,
    Wilson-Hilferty), in the shape (the channels' sigmas and correlations) of the quieter half's
    median covariance (a shape from the quiet share alone would have weaker correlations: the
    blocks whose channels' noise happened to agree less).
    """
    variances = np.trace(covariances, axis1=1, axis2=2)
    quantile = np.quantile(variances, QUIET_SHARE)
    shape = np.median(covariances[variances <= np.median(variances)], axis=0)
    shape = (shape + shape.T) / 2
    spread = math.sqrt(2 / (9 * samples * _effective_channels(shape)))
    noise_quantile = (1 - spread**2 + statistics.NormalDist().inv_cdf(QUIET_SHARE) * spread) ** 3
    return shape * (quantile / noise_quantile / max(np.trace(shape), 1e-30))


def _agreement(covariances: np.ndarray, samples: int) -> float:
    """1 while the chosen blocks' variances spread as noise alone spreads them (chi-square with
    ``samples`` degrees of freedom), less as texture or changing noise widens the spread."""
    if len(covariances) < 2:
        return 0.5
    variances = np.trace(covariances, axis1=1, axis2=2)
    median = np.median(variances)
    spread = 1.4826 * np.median(np.abs(variances - median)) / max(median, 1e-30)
    expected = math.sqrt(2 / (samples * len(covariances[0])))
    return float(min(1.0, 2.5 * expected / max(spread, 1e-30)))


def _static_covariances(images: list[np.ndarray], chosen: np.ndarray, spatial: np.ndarray) -> np.ndarray:
    """Covariances of (f[t+1] - f[t]) / sqrt(2) over the blocks flat in both frames that stay
    still: whose temporal variance agrees with the spatial estimate ``spatial`` (STATIC_FACTOR),
    but for blocks an encoder held still (under HELD_FACTOR times it)."""
    per_frame = len(chosen) // len(images)
    static = []
    for t in range(len(images) - 1):
        both = chosen[t * per_frame : (t + 1) * per_frame] & chosen[(t + 1) * per_frame : (t + 2) * per_frame]
        difference = (images[t + 1] - images[t]) / np.float32(math.sqrt(2))
        covariances = _block_covariances(difference, BLOCK, centred=True)[both]
        variance = np.trace(covariances, axis1=1, axis2=2)
        still = (variance <= STATIC_FACTOR * np.trace(spatial)) & (variance >= HELD_FACTOR * np.trace(spatial))
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
        if estimate.confidence < LOW_CONFIDENCE:
            # Compressed footage: the encoder flattened the flat areas, its artifacts sit in the
            # texture, where no flat block sees them.
            warning += (
                f"; low confidence ({estimate.confidence:.2f}): if the footage was compressed, its noise may "
                "hide in the texture; choose a region of your own"
            )
        return dataclasses.replace(estimate, warning=warning)
    return estimate


def add_noise(frames: np.ndarray, covariance: np.ndarray, seed: int, *, bit_depth: int | None = None) -> np.ndarray:
    """Frames (float in [0, 1], or integers, scaled) plus Gaussian noise of ``covariance``.

    White in space, correlated across channels as ``covariance`` says; float32 out, not
    clipped, so that the noise stays exactly Gaussian.

    Parameters
    ----------
    frames : array_like
        One frame (H, W[, C]) or several (T, H, W[, C]), C = 1 or 3; uint8 and uint16 are
        scaled to [0, 1], floats taken in [0, 1] (full scale).
    covariance : (C, C) array_like
        The noise covariance in full scale squared (a sigma of 10 levels is (10/255)^2 on the
        diagonal); positive semi-definite.
    seed : int
        Seed of NumPy's random generator: the same seed gives the same noise.
    bit_depth : int, optional
        Bits per sample of uint16 frames, as ``estimate_noise`` takes it.

    Returns
    -------
    numpy.ndarray
        float32 in full scale, not clipped: (T, H, W, C) for several frames or a 4D input,
        else (H, W, C).

    Raises
    ------
    ValueError
        ``covariance`` is not C x C for these frames or not positive semi-definite, or the
        frames are not frames (dtype, shape, NaN or infinite values).
    """
    images = np.stack(_float_frames(frames, bit_depth))
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
    sigma = max(estimate.average_sigma, CLEAN_SIGMA)
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
    """0 for noise as independent in the filtered channels as the calibration's white noise
    (3 effective channels), 1 for noise shared by them all (1), log-linear between."""
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


REALISTIC_NOISES = ("clipped", "yuv", "signal", "demosaic", "h264")
BT601 = np.array([[0.299, 0.587, 0.114], [-0.168736, -0.331264, 0.5], [0.5, -0.418688, -0.081312]])


def add_realistic_noise(
    frames: np.ndarray, kind: str, sigma: float, seed: int, *, bit_depth: int | None = None
) -> np.ndarray:
    """Frames as footage brings its noise: 8-bit, clipped, in YUV, signal dependent or compressed.

    Parameters
    ----------
    frames : array
        Clean frames (T, H, W, 3), uint8, uint16 or float in [0, 1].
    kind : {"clipped", "yuv", "signal", "demosaic", "h264"}
        "clipped": white Gaussian noise of ``sigma`` per RGB channel, rounded to 8 bits and
        clipped; "yuv": Gaussian noise of ``sigma`` on Y, Cb and Cr (BT.601, full range) as
        FFmpeg's ``noise`` filter and tape add it, then RGB, 8 bits, clipped; "signal":
        Poisson-Gaussian camera noise, variance sigma^2 (0.2 + 1.6 I) for intensity I in [0, 1]
        (sigma at mid gray), 8 bits, clipped; "demosaic": white noise of ``sigma`` on a Bayer
        mosaic (RGGB), interpolated bilinearly to RGB as a camera's demosaicing does (spatially
        correlated, weaker in R and B), 8 bits, clipped; "h264": "clipped" noise encoded with
        libx264 (CRF 23, 4:2:0) and decoded, which smooths the noise and holds static blocks still.
    sigma : float
        Noise level in 8-bit levels.
    seed : int
        Seed of NumPy's random generator: the same seed gives the same noise.
    bit_depth : int, optional
        Bits per sample of uint16 frames, as ``estimate_noise`` takes it.

    Returns
    -------
    numpy.ndarray
        (T, H, W, 3) float32 in [0, 1], on the 8-bit grid ("h264": height and width cropped to
        even numbers).

    Raises
    ------
    ValueError
        An unknown ``kind``, or frames that are not frames (dtype, shape, NaN or infinite values).

    Notes
    -----
    "h264" needs PyAV (imported when first used).
    """
    if kind not in REALISTIC_NOISES:
        raise ValueError(f"kind must be one of {', '.join(REALISTIC_NOISES)}, got {kind!r}")
    images = np.stack(_float_frames(frames, bit_depth)).astype(np.float64)
    rng = np.random.default_rng(seed)
    scale = sigma / 255
    if kind == "yuv":
        yuv = images @ BT601.T + scale * rng.standard_normal(images.shape)
        noisy = yuv @ np.linalg.inv(BT601).T
    elif kind == "signal":
        noisy = images + scale * np.sqrt(0.2 + 1.6 * np.clip(images, 0, 1)) * rng.standard_normal(images.shape)
    elif kind == "demosaic":
        noisy = images + scale * _demosaiced(rng.standard_normal(images.shape[:-1]))
    else:
        noisy = images + scale * rng.standard_normal(images.shape)
    result = np.clip(np.rint(noisy * 255), 0, 255).astype(np.uint8)
    if kind == "h264":
        result = _h264_round_trip(result)
    return result.astype(np.float32) / 255


def _demosaiced(mosaic: np.ndarray) -> np.ndarray:
    """(..., H, W) samples of an RGGB Bayer mosaic, interpolated bilinearly to (..., H, W, 3)
    (wrapping at the edges): each channel keeps its own sites and averages its 2 or 4 nearest."""
    rows, columns = np.indices(mosaic.shape[-2:])
    sites = [(rows % 2 == 0) & (columns % 2 == 0), (rows + columns) % 2 == 1, (rows % 2 == 1) & (columns % 2 == 1)]

    def spread(values: np.ndarray, shifts: list[tuple[int, int]], weight: float) -> np.ndarray:
        return weight * sum(np.roll(values, shift, axis=(-2, -1)) for shift in shifts)

    sides, corners = [(0, 1), (0, -1), (1, 0), (-1, 0)], [(1, 1), (1, -1), (-1, 1), (-1, -1)]
    channels = []
    for index, site in enumerate(sites):
        own = mosaic * site
        nearest = spread(own, sides, 0.25) if index == 1 else spread(own, sides, 0.5) + spread(own, corners, 0.25)
        channels.append(np.where(site, own, nearest))
    return np.stack(channels, axis=-1)


def _h264_round_trip(frames: np.ndarray) -> np.ndarray:
    """RGB uint8 frames encoded with libx264 (CRF 23, yuv420p) and decoded back."""
    import io

    import av

    buffer = io.BytesIO()
    height, width = frames.shape[1] // 2 * 2, frames.shape[2] // 2 * 2
    with av.open(buffer, "w", format="matroska") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"crf": "23", "preset": "fast"}
        for frame in frames[:, :height, :width]:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")))
        container.mux(stream.encode())
    buffer.seek(0)
    with av.open(buffer) as container:
        decoded = [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]
    return np.stack(decoded)
