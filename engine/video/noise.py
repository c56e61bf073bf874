"""Estimating the noise of frames or a clip: ``estimate_noise`` and ``estimate_noise_over``.

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
(``engine.video.motion_noise.compensated_change``), gives it: the blocks' median (motion the fit leaves
only adds to some), per intensity band where the noise grows with brightness, and the change's
own spatial correlation. White noise's level is read from the change's high-pass residuals,
which the fit's smooth misfit hardly reaches, scaled by the pixels' share in the quietest
blocks; flat blocks that read white noise surely (FLAT_CONFIDENCE) and lower stand. Where the
flat blocks show little noise with a low confidence, the noise an encoder kept in the texture is
read from the quiet quarter of the motion-compensated change instead
(``engine.video.motion_noise.kept_noise``). A region the user chose is read from its own
motion-compensated change where there are two frames: it holds all of the noise, also the part
that chroma subsampling or compression smoothed out of the high-pass residuals.

The estimate itself and what every estimator reads are in ``noise_estimate``; automatic mode's
flat and still blocks in ``noise_in_blocks``; the change between frames in ``motion_noise``.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

import numpy as np

from ..cores import compiled_module
from ..cpu.compiled import announce_compile, in_numba_cache
from ..media.ffmpeg import VideoError
from .motion_noise import region_change
from .noise_estimate import (
    BLOCK,
    CLEAN_SIGMA,
    CORRELATED_RATIO,
    LOW_CONFIDENCE,
    MIN_REGION,
    MORE_NOISE_PLACES,
    NOISE_PLACES,
    REGION_CLIPPED_FRACTION,
    REGION_TILE,
    REPEATED_SHARE,
    TEXTURE_FACTOR,
    UNCLIPPED_CONFIDENCE,
    NoiseEstimate,
    _as_array,
    _block_covariances,
    _checked_region,
    _covariance,
    _finished,
    _float_frames,
    _is_clip,
    _residuals,
    _texture,
    samples_depth,
)
from .noise_in_blocks import (
    _agreement,
    _automatic,
    _block_means,
    _correlated_note,
    _expected_texture,
    _median_covariance,
    clipped_shares,
)


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
    announce_compile(estimate_compiles)  # estimate_noise_over says it for a clip
    return _estimate(clip, roi, bit_depth)


def estimate_noise_over(
    frame: Callable[[int], np.ndarray],
    first: int,
    last: int,
    roi: tuple[int, int, int, int] | None = None,
    *,
    bit_depth: int | None = None,
    unclipped: Callable[[int], np.ndarray] | None = None,
) -> tuple[int, NoiseEstimate]:
    """Return the noise of frames ``first`` .. ``last`` - 1, as ``estimate_clip_noise`` measures it.

    NOISE_PLACES pairs of consecutive frames spread over them, each estimated alone
    (``estimate_noise``), and the estimate of median average sigma, so that one odd scene (a fade, a
    title) does not decide; pairs that look clean where another pair shows noise are left out (an
    encoder's copied frames: MPEG-2 at qscale 5 read 0.05 levels for 5.8 on two pairs of three), and
    so are pairs read with low confidence where another pair reads the noise with confidence. Where
    none does (a picture mostly clipped: saturated colour bars), MORE_NOISE_PLACES pairs in all are
    looked at, and those read with confidence taken if there are any: a test pattern read 1.7 to 3
    times its noise on its bars and right where a grey box passed. Fewer than 2 NOISE_PLACES
    frames, whose pairs would overlap, are measured together. A pair ``frame`` cannot decode (a
    file damaged or cut short there) is left out, and the places of MORE_NOISE_PLACES tried where
    no pair decoded. Where the frames read unsure and ``unclipped`` gives them, they are read
    again so, and that reading kept where it is surer (``unclipped_is_surer``): noise that RGB
    clips (a test pattern's saturated bars, coded in Y'CbCr) is whole there.

    Parameters
    ----------
    frame : callable
        ``frame(i)`` is frame i, (H, W, C) as ``estimate_noise`` takes frames.
    first, last : int
        The frames to measure: ``first`` .. ``last`` - 1 (one pair where they are two).
    roi : (x, y, width, height), optional
        A flat region, in pixels, measured on each pair; None: flat blocks found automatically.
    bit_depth : int, optional
        Bits per sample of uint16 frames, as ``estimate_noise`` takes it; of float frames, the
        source's (``samples_depth``).
    unclipped : callable, optional
        ``unclipped(i)`` is frame i as float32 in 0..1 with what lies past the range kept (a
        reader's ``unclipped_frame``).

    Returns
    -------
    (int, NoiseEstimate)
        The first frame of the pair the estimate comes from (its regions lie on that frame),
        and the estimate.

    Raises
    ------
    ValueError
        Frames ``estimate_noise`` refuses, or a region that leaves them.
    VideoError
        No pair of frames decodes (the first pair's error).
    """
    announce_compile(estimate_compiles)
    place, estimate = _estimate_over(frame, first, last, roi, bit_depth)
    if unclipped is None or estimate.confidence >= LOW_CONFIDENCE:
        return place, estimate
    whole = _estimate_over(unclipped, first, last, roi, bit_depth)
    return whole if unclipped_is_surer(whole[1], estimate) else (place, estimate)


def unclipped_is_surer(unclipped: NoiseEstimate, decoded: NoiseEstimate) -> bool:
    """Whether frames read unclipped tell the noise better than the same frames as decoded.

    Where they read at least as surely, and at least UNCLIPPED_CONFIDENCE: a clean pattern's
    moving parts, read at 0.12 unclipped, do not replace its clean reading.
    """
    return unclipped.confidence >= max(decoded.confidence, UNCLIPPED_CONFIDENCE)


def _estimate_over(
    frame: Callable[[int], np.ndarray],
    first: int,
    last: int,
    roi: tuple[int, int, int, int] | None,
    bit_depth: int | None,
) -> tuple[int, NoiseEstimate]:
    """``estimate_noise_over`` of the frames ``frame`` gives."""
    if last - first < 2 * NOISE_PLACES:  # the pairs would overlap: the few frames measured together
        return first, _estimate(np.stack([frame(i) for i in range(first, last)]), roi, bit_depth)

    def read(count: int, known: dict[int, NoiseEstimate]) -> dict[int, NoiseEstimate]:
        """Return the estimates of ``count`` pairs spread over the frames, those ``known`` kept."""
        estimates = dict(known)
        for place in sorted({round(p) for p in np.linspace(first, max(first, last - 2), count)}):
            if place not in estimates and place not in undecodable:
                try:
                    pair = np.stack([frame(place), frame(place + 1)])
                except VideoError as error:  # a damaged or cut-short part: the other places tell
                    undecodable[place] = error
                    continue
                estimates[place] = _estimate(pair, roi, bit_depth)
        return estimates

    undecodable: dict[int, VideoError] = {}
    estimates = read(NOISE_PLACES, {})
    if not estimates:
        estimates = read(MORE_NOISE_PLACES, {})
    if not estimates:
        raise next(iter(undecodable.values()))
    if all(estimate.confidence < LOW_CONFIDENCE for estimate in estimates.values()):
        # Only a confident reading elsewhere is taken: the unsure ones of more places would outvote
        # the first (a clean clip whose one scene change reads as compressed noise).
        confident = {p: e for p, e in read(MORE_NOISE_PLACES, estimates).items() if e.confidence >= LOW_CONFIDENCE}
        estimates = confident or estimates
    return _median_pair(estimates)


def estimate_compiles() -> bool:
    """Whether the estimate's first call compiles its kernels: numba's cache holds no build of them for this machine.

    The block statistics and the block search (``block_statistics_kernel``, ``block_match_kernel``):
    18-28 s on two cores, once, said as the filter's compile is.
    """
    statistics = compiled_module(".block_statistics_kernel", __package__)
    search = compiled_module(".block_match_kernel", __package__)
    kernels = (statistics.gradient_structure, statistics.plane_covariances, statistics.residual_covariances)
    return not in_numba_cache(*kernels, search.tile_mean_squares)


def _median_pair(estimates: dict[int, NoiseEstimate]) -> tuple[int, NoiseEstimate]:
    """Return the place and estimate of median average sigma among the pairs that tell most.

    A pair that sees no noise where another does shows frames an encoder copied (MPEG-2's P and B
    frames keep the I frame's noise: no change between them) or a fade: not the noise. Of the rest,
    those read with confidence, where there are any.
    """
    places = [p for p, e in estimates.items() if e.average_sigma >= CLEAN_SIGMA] or list(estimates)
    places = [p for p in places if estimates[p].confidence >= LOW_CONFIDENCE] or places
    median = sorted(places, key=lambda p: estimates[p].average_sigma)[len(places) // 2]
    return median, estimates[median]


def _fits(w: int, h: int, width: int, height: int) -> str:
    """Say where a region of w x h pixels fits in a width x height frame: X, Y, W, H as the user gives them."""
    if w > width or h > height:
        return f"a region is at most {width}x{height} pixels there (X,Y,W,H, from 0,0 at the top left)"
    return f"a {w}x{h} region starts at X 0..{width - w} and Y 0..{height - h} (from 0,0 at the top left)"


def _estimate(frames: np.ndarray, roi: tuple[int, int, int, int] | None, bit_depth: int | None) -> NoiseEstimate:
    """``estimate_noise`` of one frame or two, at the frames' depth."""
    images = _float_frames(frames, bit_depth)
    return dataclasses.replace(_measured(images, roi), bit_depth=samples_depth(np.asarray(frames).dtype, bit_depth))


def _measured(images: list[np.ndarray], roi: tuple[int, int, int, int] | None) -> NoiseEstimate:
    """``_estimate`` of the frames as floats in [0, 1]."""
    height, width = images[0].shape[:2]
    if roi is not None:
        x, y, w, h = _checked_region(roi)
        if w < MIN_REGION or h < MIN_REGION:
            raise ValueError(f"the region is {w}x{h} pixels; an estimate needs at least {MIN_REGION}x{MIN_REGION}")
        if x < 0 or y < 0 or x + w > width or y + h > height:
            raise ValueError(
                f"the region ({x}, {y}, {w}, {h}) leaves the {width}x{height} frame: {_fits(w, h, width, height)}"
            )
        return _region(images, (x, y, w, h))
    if height < BLOCK or width < BLOCK:
        raise ValueError(
            f"frames of {width}x{height} pixels are too small for the automatic noise estimate (blocks of "
            f"{BLOCK}x{BLOCK}); give the strength h instead"
        )
    return _finished(_automatic(images))


def _region(images: list[np.ndarray], box: tuple[int, int, int, int]) -> NoiseEstimate:
    """Return the noise in the user's region (``_region_noise``).

    Where more than REGION_CLIPPED_FRACTION of its samples are clipped, its warning starts by saying
    that clipping cut the noise off (black bars, a blown-out sky), which explains a low reading, or
    a clean one.
    """
    x, y, w, h = box
    estimate = _region_noise(images, box)
    clipped = float(np.mean(clipped_shares(np.stack([image[y : y + h, x : x + w] for image in images]))))
    if clipped <= REGION_CLIPPED_FRACTION:
        return _finished(estimate)
    note = (
        f"{clipped:.0%} of the region's samples are clipped at black or white, which cuts the noise off: "
        "it reads too low; choose a region in the mid-tones"
    )
    warning = "; ".join(filter(None, [note, estimate.warning]))
    return dataclasses.replace(estimate, warning=warning, confidence=min(estimate.confidence, 0.3))


def _region_noise(images: list[np.ndarray], box: tuple[int, int, int, int]) -> NoiseEstimate:
    """Return the noise in the user's region.

    From its motion-compensated change between consecutive frames where there are two or more that
    differ there (all of the noise, as the automatic temporal estimate reads it, and the picture's
    structure cancels; the high-pass residuals miss noise that chroma subsampling or compression
    smoothed), else from one frame's residuals.
    """
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
    """Return the region's noise from its change's tiles: their median.

    The tiles' covariances are over REGION_TILE pixels; ``left_out`` more repeated the previous
    frame. It reads all of the noise, also what chroma subsampling or compression smoothed out of
    the high-pass residuals ``spatial`` (their ratio gives the spatial correlation), where the tiles
    agree; tiles that spread more than noise does changed by more or less than noise (motion,
    something passing; an encoder that kept the noise in some blocks only), which the warning says.
    """
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
