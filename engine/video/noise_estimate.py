"""A noise estimate (``NoiseEstimate``) and what every estimator reads.

The estimate: the covariance, the color decorrelation transform, the confidence and its notes. What
every estimator reads: high-pass residuals, covariances, the texture of blocks.

The noise model and how the estimators use these are in ``noise``'s docstring.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..cores import compiled_module
from ..frames import checked_frame, to_float32

BLOCK = 16  # pixels on a side of the blocks automatic mode chooses among
NOISE_PLACES = 3  # places in a clip (pairs of frames) the noise is estimated at
# Where none of them reads the noise with confidence, this many places in all are looked at.
MORE_NOISE_PLACES = 9
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
# Frames read unclipped (a Y'CbCr source's colours past RGB's range, ``unclipped_frame``): a
# channel more than PAST_SHARE of whose samples in a block lie past 0 or full scale by more than
# PAST_MARGIN carries its noise whole there (saturated colour bars' noise read at 0.6 of its sigma
# where RGB clipped it, 0.97 so). Noise clipped in RGB before it was coded in Y'CbCr only spills a
# few samples a level or two past the range (its chroma smoothed by subsampling, rounding): counted
# as clipped, as are samples pinned past the range (a super-white at the largest code).
PAST_MARGIN = 2 / 255
PAST_SHARE = 0.05
# Frames read unclipped replace a reading as decoded where they read at least as surely and at
# least this surely: a 1080p ProRes of saturated bars, its noise in the samples, read 0.4, 7.6,
# 4.4 levels as decoded and 7.9, 5.4, 8.7 unclipped for 7.5, 5.1, 8.4, both at 0.4 (its flat areas
# smoothed by the codec); a clean 10-bit pattern's moving parts read 5.0 levels unclipped at 0.12.
UNCLIPPED_CONFIDENCE = 0.4
# A dark (or bright) clip has no such block: its dark sky, 18 levels up with noise of sigma 10,
# had 9-17 % of each block's samples at 0. The change of the blocks up to the first of these
# fractions clipped that leaves enough of them reads white noise a little low there (sigma 10 and
# 25 on the held-out Hubble deep field: 9.9 and 22.3), not the picture's fine texture 2.8 times
# high (28.2), nor its truncated noise 26 % low, as the flat blocks' residuals did.
DARK_CLIPPED_FRACTIONS = (0.05, 0.2)
# A frame-to-frame change read on fewer than this share of the picture's blocks (the rest clipped:
# saturated colour bars) is of low confidence (under LOW_CONFIDENCE): the few blocks left may all
# be one changing object's, and a clip's estimate prefers pairs of frames read on more. Hubble's
# dark sky, read on blocks up to a fifth clipped, keeps most of its blocks.
FEW_BLOCKS_SHARE = 0.05
FEW_BLOCKS_CONFIDENCE = 0.4
# A picture more than this share of whose blocks repeat the previous frame exactly (and under
# FEW_BLOCKS_SHARE of which change where unclipped) is read as still and clean: noisy footage leaves
# no block unchanged, and an encoder holds still only blocks without noise its quantizer keeps.
STILL_SHARE = 0.5
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
# White noise's motion-compensated change is read from its high-pass residuals, which the smooth
# misfit of motion barely reaches, scaled by the pixels' variance over the residuals' in the
# RESIDUAL_SHARE of blocks that changed least (the fit leaves them no misfit to speak of).
RESIDUAL_SHARE = 0.25
SIGNAL_DEPENDENT_RATIO = 1.5
# Spatially correlated noise (demosaicing, deinterlacing, compression) has less energy in the
# high-pass residuals than in the pixels: flat blocks' variance around a plane over the residual
# variance past this ratio says so, and the pixels' variance is then the estimate (patch
# distances see the pixels' noise, not the residuals').
CORRELATED_RATIO = 1.4
LOW_CONFIDENCE = 0.5
# From this confidence the flat blocks' estimate of white noise stands where the motion-
# compensated change reads more (``noise_in_blocks._automatic``).
FLAT_CONFIDENCE = 0.9
# The confidence of an estimate from the frame-to-frame change (``engine.video.motion_noise``): under
# LOW_CONFIDENCE, so that the warning still offers a region to check it on.
MOTION_CONFIDENCE = 0.4
# Effective channels under SHARED_NOISE_CHANNELS: noise shared by the channels (compressed
# footage reads about 1.1 of 3), which the CLI and the window explain. At least WHITE_SHARE of the
# channels: white noise (independent, one sigma), with nothing to decorrelate. White noise of sigma
# 3 to 40 levels read 2.981 to 3.000 of 3 on the bikes, the sample clip and a flat frame (its
# luminance gain 0.955 to 1.004, either side of 1 by chance); equal sigmas correlated 0.1 read 2.94.
SHARED_NOISE_CHANNELS = 2.0
WHITE_SHARE = 0.98


def samples_depth(dtype: np.dtype, bit_depth: int | None) -> int:
    """Bits per sample of frames of ``dtype``: uint16 ``bit_depth`` or 16, uint8 8, floats ``bit_depth`` or 8.

    Floats (0..1) as 8-bit sources give them, their floor CLEAN_SIGMA, unless their source's depth
    is given (a reader's frames read unclipped, ``unclipped_frame``).
    """
    dtype = np.dtype(dtype)
    if dtype == np.uint16:
        return bit_depth or 16
    return (bit_depth or 8) if dtype.kind == "f" else 8


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
        (compressed footage: ``engine.video.motion_noise``), or the user's region; "synthetic" for noise of a known
        covariance (``engine.video.preview.SyntheticNoise.estimate``), measured from nothing.
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
    bit_depth : int
        Bits per sample of the frames measured (``samples_depth``): a clean picture's sigma is
        taken as at least half a step of them (``clean_sigma``).
    """

    covariance: np.ndarray
    regions: list[tuple[int, int, int, int]]
    samples: int
    warning: str | None = None
    method: str = "spatial"
    confidence: float = 1.0
    bands: tuple[tuple[float, float, float, int], ...] = ()
    spatial_correlation: float = 0.0
    bit_depth: int = 8

    @property
    def clean_sigma(self) -> float:
        """8-bit levels: the least sigma a strength is chosen for, CLEAN_SIGMA in steps of ``bit_depth``.

        Half an 8-bit level is noise-free footage's (its rounding reads about 0.3); a 16-bit
        camera's noise of 26 counts reads 0.1 levels, real noise that a floor of 0.5 filtered 5
        times too hard (a cell image 66.2 dB in, 62.3 out).
        """
        return CLEAN_SIGMA * 2.0 ** (8 - self.bit_depth)

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
        """sqrt(trace(Sigma) / C) in 8-bit levels.

        The noise level h is measured against, which the color transform keeps.
        """
        return float(np.sqrt(np.trace(self.covariance) / len(self.covariance)) * 255)

    @property
    def effective_channels(self) -> float:
        """trace(Sigma)^2 / trace(Sigma^2): how many independent channels' worth of noise a patch distance sums.

        C for white noise of equal sigmas, 1 for noise shared by all channels (compressed footage
        keeps its noise in luma: about 1.1 of 3).
        """
        return _effective_channels(np.asarray(self.covariance, dtype=np.float64))

    @property
    def shared_by_channels(self) -> bool:
        """Whether the channels share the noise.

        ``effective_channels`` under SHARED_NOISE_CHANNELS (``suggest_h`` raises h for it where no
        color transform whitens it).
        """
        return len(self.covariance) > 1 and self.effective_channels < SHARED_NOISE_CHANNELS

    @property
    def white(self) -> bool:
        """Whether the channels' noise is independent and of one sigma (Sigma about s^2 I, so G about I).

        ``effective_channels`` at least WHITE_SHARE of the channels.
        """
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


def _block_covariances(values: np.ndarray, size: int, *, centred: bool = False) -> np.ndarray:
    """(rows * cols, C, C) covariances of ``values`` over size x size blocks.

    About each block's own mean where ``centred``, else about 0.
    """
    rows, cols = values.shape[0] // size, values.shape[1] // size
    blocks = values[: rows * size, : cols * size].reshape(rows, size, cols, size, -1).astype(np.float64)
    samples = size * size
    if centred:
        blocks = blocks - blocks.mean(axis=(1, 3), keepdims=True)
        samples -= 1
    covariances = np.einsum("rycxi,rycxj->rcij", blocks, blocks, optimize=True) / samples
    return covariances.reshape(rows * cols, *covariances.shape[-2:])


def _covariance(residuals: np.ndarray) -> np.ndarray:
    flat = residuals.reshape(-1, residuals.shape[-1]).astype(np.float64)
    return flat.T @ flat / len(flat)


def _texture(frame: np.ndarray, size: int) -> np.ndarray:
    """Largest eigenvalue of each block's summed 2 x 2 gradient covariance, channels summed.

    Computed by ``block_statistics_kernel``.
    """
    kernels = compiled_module(".block_statistics_kernel", __package__)
    return kernels.gradient_structure(np.ascontiguousarray(frame, np.float32), size)


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
        elif estimate.warning:  # why it reads clean
            warning += f" ({estimate.warning})"
        return dataclasses.replace(estimate, warning=warning)
    return estimate
