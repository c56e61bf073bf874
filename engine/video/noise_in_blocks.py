"""Automatic mode's estimate from blocks.

The flattest blocks of a frame, iterated as the weak-texture method of Liu, Tanaka and Okutomi
(2013), and those that also stay still from one frame to the next, read from the temporal
differences (``engine.video.noise``'s docstring has the whole method).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics

import numpy as np

from ..cores import compiled_module
from .motion_noise import compensated_change, kept_noise
from .noise_estimate import (
    BAND_EDGES,
    BLOCK,
    CLEAN_SIGMA,
    CLIP_MARGIN,
    CLIPPED_FRACTION,
    CORRELATED_RATIO,
    DARK_CLIPPED_FRACTIONS,
    FEW_BLOCKS_CONFIDENCE,
    FEW_BLOCKS_SHARE,
    FLAT_CONFIDENCE,
    HELD_FACTOR,
    ITERATIONS,
    LOW_CONFIDENCE,
    MIN_BAND_BLOCKS,
    MIN_BAND_CHANGES,
    MIN_STATIC_BLOCKS,
    MOTION_CONFIDENCE,
    PAST_MARGIN,
    PAST_SHARE,
    QUIET_SHARE,
    REPEATED_SHARE,
    RESIDUAL_SHARE,
    STATIC_FACTOR,
    STILL_SHARE,
    TEXTURE_FACTOR,
    NoiseEstimate,
    _block_covariances,
    _effective_channels,
    _residuals,
    _texture,
)

_SIGNAL_DEPENDENT_NOTE = "the noise grows with brightness: sigma is the picture's average, per band in the bands"


def _correlated_note(spatial_correlation: float) -> str:
    """Return the warning for correlated noise, its share as the estimate keeps it and the window shows it."""
    return (
        f"the noise is spatially correlated ({round(spatial_correlation, 3):.0%} of its variance below the "
        "high-pass band: chroma subsampling, demosaicing, deinterlacing or compression); sigma is the "
        "pixels' own, which h allows for"
    )


def _expected_texture(covariance: np.ndarray, pixels: int) -> float:
    """Return what _texture gives on pure noise of this covariance.

    np.gradient's central differences have variance sigma^2 / 2 per axis, summed over the block and
    the channels.
    """
    return float(np.trace(covariance)) / 2 * pixels


def _block_means(frame: np.ndarray, size: int) -> np.ndarray:
    """Mean over each size x size block and the channels, in full scale, flattened."""
    rows, cols = frame.shape[0] // size, frame.shape[1] // size
    cropped = frame[: rows * size, : cols * size].astype(np.float64).mean(axis=-1)
    return cropped.reshape(rows, size, cols, size).mean(axis=(1, 3)).ravel()


def _clipped_fractions(frame: np.ndarray, size: int) -> np.ndarray:
    """``clipped_shares`` of the frame's size x size blocks, row by row."""
    rows, cols = frame.shape[0] // size, frame.shape[1] // size
    channels = frame.shape[2]
    blocks = frame[: rows * size, : cols * size].reshape(rows, size, cols, size, channels).swapaxes(1, 2)
    return clipped_shares(blocks.reshape(rows * cols, size, size, channels))


def clipped_shares(blocks: np.ndarray) -> np.ndarray:
    """Return the share of each (N, h, w, C) block's samples that are clipped or crushed.

    Those within CLIP_MARGIN of 0 or full scale, or past them; except in a channel more than
    PAST_SHARE of whose samples lie past the range by more than PAST_MARGIN (a frame read
    unclipped, whose noise there is whole): none of its samples count.
    """
    if not blocks.size:  # a picture smaller than a block
        return np.zeros(len(blocks))
    low, high = np.percentile(blocks, (100 * PAST_SHARE, 100 * (1 - PAST_SHARE)), axis=(1, 2), keepdims=True)
    whole = (low < -PAST_MARGIN) | (high > 1 + PAST_MARGIN)
    clipped = ((blocks <= CLIP_MARGIN) | (blocks >= 1 - CLIP_MARGIN)) & ~whole
    return clipped.mean(axis=(1, 2, 3))


def _plane_covariances(frame: np.ndarray, size: int) -> np.ndarray:
    """(blocks, C, C) covariances of the pixels around each block's least-squares plane.

    Computed by ``block_statistics_kernel``.
    """
    y, x = np.mgrid[:size, :size]
    fit = np.linalg.pinv(np.stack([np.ones(size * size), x.ravel(), y.ravel()], axis=1))
    kernels = compiled_module(".block_statistics_kernel", __package__)
    return kernels.plane_covariances(np.ascontiguousarray(frame, np.float32), size, fit)


def _weak_texture(texture: np.ndarray, spatial: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Return the candidate blocks of weak structure (Liu, Tanaka and Okutomi's iteration)."""
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
    # Per block, the residual covariance, each block's edge left out (there they mix the neighbouring blocks).
    kernels = compiled_module(".block_statistics_kernel", __package__)
    spatial = np.concatenate([kernels.residual_covariances(np.ascontiguousarray(i, np.float32), size) for i in images])
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
    temporal, held, still = _temporal(images) if len(images) > 1 else (None, 0, False)
    if still:
        return temporal
    kept = kept_noise(images, flat_sigma) if confidence < LOW_CONFIDENCE and len(images) > 1 else None
    if held:
        notes.append(f"{held} blocks held still by the encoder (no change from frame to frame) were not used")
    static = _static_covariances(images, chosen, covariance) if len(images) > 1 else []
    # Flat blocks whose white noise agrees as noise alone, read lower than the change: the
    # motion fit's misfit, which only adds, raised the change (sigma 2 read 2.3 from the change
    # on bigbuckbunny, where its flat blocks read 2.0).
    flat_stands = (
        temporal is not None
        and confidence >= FLAT_CONFIDENCE
        and not (signal_dependent or correlated)
        and np.trace(covariance) < np.trace(temporal.covariance)
    )
    if kept is None and len(static) >= MIN_STATIC_BLOCKS and not signal_dependent and not correlated:
        # Flat blocks that stay in place change by the noise alone, also in footage whose clean
        # picture flickers elsewhere (a compressed source) or whose noise an encoder smoothed
        # unevenly; where there are such blocks, their change is the estimate.
        covariance = _median_covariance(static, size * size - 1)
        samples, method = len(static) * (size * size - 1), "temporal"
    elif kept is None and temporal is not None and flat_sigma * 255 >= CLEAN_SIGMA and not flat_stands:
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
    """Sigma per intensity band from the band's own weakly textured blocks, and each band's covariance.

    The covariance is None where the band has too few flat blocks.
    """
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
    """Return the picture's average covariance for noise that grows with brightness.

    Each band's weighted by the share of the picture's blocks in it (bands without enough blocks of
    their own take the nearest band's).
    """
    known = np.array([i for i, c in enumerate(band_covariances) if c is not None])
    weights = np.bincount(band_of, minlength=len(band_covariances)) / len(band_of)
    return sum(weight * band_covariances[known[np.argmin(np.abs(known - i))]] for i, weight in enumerate(weights))


def _temporal(images: list[np.ndarray]) -> tuple[NoiseEstimate | None, int, bool]:
    """Return the noise from the change of every block between consecutive frames, motion compensated.

    Compensated by ``engine.video.motion_noise.compensated_change``: the blocks' median covariance
    (motion the fit leaves only adds to some blocks' change; compressed noise, smoothed unevenly, is
    read at its middle), per band (``_quiet_covariance``) where the noise grows with brightness, and
    the change's spatial correlation (which, unlike the flat blocks', no texture adds to). None
    where fewer than MIN_STATIC_BLOCKS blocks changed; and the number of blocks that repeat the
    previous frame (held still by an encoder, or a repeated frame), which are left out, as blocks
    with clipped samples are (clipping truncates the noise). And whether the picture was read as
    still (``_still_picture``): its estimate is then the clip's, its held blocks used (none left out).
    """
    changes, covariances, degrees, means, clipped, places, held = [], [], [], [], [], [], 0
    every, every_degrees, held_places, held_texture, held_clipped = [], [], [], [], []  # for a still picture
    for current, reference in itertools.pairwise(images):
        change, block_degrees, corners = compensated_change(current, reference)
        blocks = np.array([current[y : y + BLOCK, x : x + BLOCK] for y, x in corners]).reshape(change.shape)
        repeated = np.mean(change == 0, axis=(1, 2, 3)) >= REPEATED_SHARE
        block_clipped = clipped_shares(blocks)
        held += int(repeated.sum())
        # Each channel pair's covariance over the root of both channels' degrees of freedom.
        block_covariances = np.einsum("nyxi,nyxj->nij", change, change, optimize=True)
        block_covariances /= np.sqrt(block_degrees[:, :, None] * block_degrees[:, None, :])
        every.append(block_covariances)
        every_degrees.append(block_degrees)
        held_places.append(corners[repeated])
        held_texture.append(np.mean(_residuals(np.moveaxis(blocks[repeated], 0, 2)) ** 2, axis=(0, 1, 3)))
        held_clipped.append(block_clipped[repeated])
        changes.append(change[~repeated])
        covariances.append(block_covariances[~repeated])
        degrees.append(block_degrees[~repeated])
        means.append(blocks[~repeated].mean(axis=(1, 2, 3)))
        clipped.append(block_clipped[~repeated])
        places.append(corners[~repeated])
    change, covariances, degrees, means, clipped, places = map(
        np.concatenate, (changes, covariances, degrees, means, clipped, places)
    )
    notes = []
    keep = clipped <= CLIPPED_FRACTION
    for fraction in DARK_CLIPPED_FRACTIONS:
        if keep.sum() >= MIN_STATIC_BLOCKS or (clipped <= fraction).sum() < MIN_STATIC_BLOCKS:
            continue
        keep = clipped <= fraction
        notes.append("the picture is dark or bright: the noise is read where some of it is clipped, a little low")
    every, every_degrees = np.concatenate(every), np.concatenate(every_degrees)
    smooth = _shows_no_noise(np.concatenate(held_texture), np.concatenate(held_clipped))
    if held > STILL_SHARE * len(every) and keep.sum() < FEW_BLOCKS_SHARE * len(every) and smooth:
        return _still_picture(every, every_degrees, np.concatenate(held_places), int(keep.sum())), 0, True
    few = int(keep.sum()) < FEW_BLOCKS_SHARE * len(keep)
    change, covariances, degrees, means = change[keep], covariances[keep], degrees[keep], means[keep]
    used = [(int(x), int(y), BLOCK, BLOCK) for y, x in places[keep]]
    if len(change) < MIN_STATIC_BLOCKS:
        return None, held, False
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
    # The quieter half of the blocks (motion the fit leaves, and a compressed source's flicker,
    # only add to a block's change): how far they agree, and their change's high-pass residuals
    # over its pixels' variance, the noise's spatial correlation.
    variances = np.trace(covariances, axis1=1, axis2=2)
    quiet = variances <= np.median(variances)
    high_pass = _high_pass_covariances(change)
    residual_variance = np.trace(high_pass[quiet].sum(axis=0)) / (len(high_pass[quiet]) * change.shape[-1])
    ratio = residual_variance / np.mean(change[quiet] ** 2)
    spatial_correlation = max(0.0, 1 - float(ratio))
    estimate = NoiseEstimate(_median_covariance(covariances, samples), [], 0, bands=bands)
    if estimate.signal_dependent:
        notes.append(_SIGNAL_DEPENDENT_NOTE)
        estimate = dataclasses.replace(estimate, covariance=_band_average(band_covariances, band_of))
    elif spatial_correlation <= 1 - 1 / CORRELATED_RATIO:
        misfit_free = _without_misfit(estimate.covariance, covariances, high_pass)
        estimate = dataclasses.replace(estimate, covariance=misfit_free)
    confidence = _agreement(covariances[quiet], round(samples))
    if few:
        # The few blocks left may all be one changing object's (a test pattern's animated
        # checkerboard between saturated bars read 1.7 to 3 times the noise).
        notes.append(
            f"the noise is read on {int(keep.sum())} of the picture's {len(keep)} blocks, the rest clipped: "
            "high where the picture changes there"
        )
        confidence = min(confidence, FEW_BLOCKS_CONFIDENCE)
    if spatial_correlation > 1 - 1 / CORRELATED_RATIO:
        notes.append(_correlated_note(spatial_correlation))
    if confidence < LOW_CONFIDENCE:
        notes.append(f"low confidence ({confidence:.2f}): choose a flat region of your own")
    return (
        dataclasses.replace(
            estimate,
            regions=sorted(set(used)),
            samples=int(degrees.mean(axis=-1).sum()),
            warning="; ".join(notes) or None,
            method="temporal",
            confidence=round(confidence, 3),
            spatial_correlation=round(spatial_correlation, 3),
        ),
        held,
        False,
    )


def _high_pass_covariances(change: np.ndarray) -> np.ndarray:
    """(N, C, C) covariances of the high-pass residuals (``_residuals``) of each block's change (N, B, B, C)."""
    blocks, channels = len(change), change.shape[-1]
    residuals = _residuals(np.moveaxis(change, 0, 2).reshape(BLOCK, BLOCK, blocks * channels))
    residuals = residuals.reshape(BLOCK - 2, BLOCK - 2, blocks, channels)
    return np.einsum("yxni,yxnj->nij", residuals, residuals, optimize=True) / (BLOCK - 2) ** 2


def _without_misfit(covariance: np.ndarray, covariances: np.ndarray, high_pass: np.ndarray) -> np.ndarray:
    """``covariance``, the blocks' median change, scaled down to white noise's level read without the motion's misfit.

    The motion fit leaves some blocks a misfit (a zoom, an object that turns, in real video) that
    raises the median of their change: sigma 2 read 2.8 on a zoom, 2.6 on bigbuckbunny. The misfit
    is smooth, and the change's high-pass residuals (``high_pass``, per block) hardly hold it: their
    median, times the pixels' variance over the residuals' in the RESIDUAL_SHARE of blocks that
    changed least (white noise's share after the fit, 0.94), reads the noise alone (2.4 and 2.3).
    Only where the change is not spatially correlated (``_temporal``'s CORRELATED_RATIO test):
    smoothed noise keeps less of itself in the residuals, and unevenly. Never raised: the misfit
    only adds.
    """
    variances = np.trace(covariances, axis1=1, axis2=2)
    quietest = variances <= np.quantile(variances, RESIDUAL_SHARE)
    share = np.trace(covariances[quietest].sum(axis=0)) / max(np.trace(high_pass[quietest].sum(axis=0)), 1e-30)
    level = np.trace(_median_covariance(high_pass, (BLOCK - 2) ** 2)) * share
    return covariance * min(1.0, level / max(np.trace(covariance), 1e-30))


def _shows_no_noise(texture: np.ndarray, clipped: np.ndarray) -> bool:
    """Whether blocks of high-pass residual variance ``texture`` (full scale) show no noise.

    Their median under CLEAN_SIGMA, over those with at most CLIPPED_FRACTION of their samples
    clipped, or up to the first of DARK_CLIPPED_FRACTIONS that leaves MIN_STATIC_BLOCKS of them (a
    dark picture's noise clips part of every block); where none is left (saturated bars, black and
    white), no noise is seen.
    """
    for fraction in (CLIPPED_FRACTION, *DARK_CLIPPED_FRACTIONS):
        seen = texture[clipped <= fraction]
        if len(seen) >= MIN_STATIC_BLOCKS:
            return math.sqrt(np.median(seen)) * 255 < CLEAN_SIGMA
    return True


def _still_picture(
    covariances: np.ndarray, degrees: np.ndarray, held_places: np.ndarray, measured: int
) -> NoiseEstimate:
    """Return the noise of a picture most of whose blocks repeat the previous frame's exactly (a clean clip).

    Noise new in every frame leaves no block unchanged; an encoder holds still only blocks whose noise
    is far under its quantizer's step. So where more than STILL_SHARE of the picture's blocks repeat
    and show no noise of their own either (``_shows_no_noise``: a noisy photograph held still shows
    its noise there), and under FEW_BLOCKS_SHARE of them both change and are unclipped
    (``measured``), that change is the picture's own motion (a test pattern's moving parts between
    saturated bars, clean H.264 at CRF 18, read 18-28 levels from them; a black and white cellular
    automaton, 110). The noise is read at the median of all the blocks, the repeated ones included,
    and the confidence is their share.
    """
    places = [(int(x), int(y), BLOCK, BLOCK) for y, x in held_places]
    note = (
        f"{len(held_places)} of the picture's {len(covariances)} blocks repeat the previous frame exactly and only "
        f"{measured} change where they are not clipped, by the picture's motion"
    )
    return NoiseEstimate(
        _median_covariance(covariances, float(np.median(degrees))),
        sorted(set(places)),
        int(degrees.mean(axis=-1).sum()),
        note,
        "temporal",
        confidence=round(len(held_places) / len(covariances), 3),
    )


def _quiet_covariance(covariances: np.ndarray, samples: float) -> np.ndarray:
    """Return the noise of the QUIET_SHARE of blocks that changed least.

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
    """1 while the chosen blocks' variances spread as noise alone spreads them, less as they spread wider.

    Noise alone: chi-square with ``samples`` degrees of freedom; texture or changing noise widens
    the spread.
    """
    if len(covariances) < 2:
        return 0.5
    variances = np.trace(covariances, axis1=1, axis2=2)
    median = np.median(variances)
    spread = 1.4826 * np.median(np.abs(variances - median)) / max(median, 1e-30)
    expected = math.sqrt(2 / (samples * len(covariances[0])))
    return float(min(1.0, 2.5 * expected / max(spread, 1e-30)))


PAN_REACH = 2  # pixels: the largest whole-pixel pan between two frames the flat blocks' change allows for
PAN_BLOCKS = 256  # flat blocks (evenly spread) the pan is found on: its median's sampling error about 1 %
PAN_GAIN = 0.03  # how much less change a pan must leave than none, to be taken (three such errors)


def _static_covariances(images: list[np.ndarray], chosen: np.ndarray, spatial: np.ndarray) -> np.ndarray:
    """Covariances of (f[t+1] - f[t]) / sqrt(2) over the blocks flat in both frames that stay still.

    Whose temporal variance agrees with the spatial estimate ``spatial`` (STATIC_FACTOR), but for
    blocks an encoder held still (under HELD_FACTOR times it). Where the picture pans a pixel or
    two, f[t+1] is taken at the pan (``_pan``): a flat block moved that far changes by its texture
    as well as its noise, little in the sum over the channels that the test looks at, much in a
    quiet channel (one of sigma 5 read 9.1 beside channels of 15 and 30).
    """
    per_frame = len(chosen) // len(images)
    static = []
    for t in range(len(images) - 1):
        both = chosen[t * per_frame : (t + 1) * per_frame] & chosen[(t + 1) * per_frame : (t + 2) * per_frame]
        before, after = images[t], images[t + 1]
        pan = _pan(before, after, both) if both.any() else (0, 0)
        if pan != (0, 0):
            after = np.roll(after, (-pan[0], -pan[1]), axis=(0, 1))
            inside = np.zeros((before.shape[0] // BLOCK, before.shape[1] // BLOCK), bool)
            inside[1:-1, 1:-1] = True  # the edge blocks' pixels came round from the other side
            both = both & inside.ravel()
        covariances = _block_covariances((after - before) / np.float32(math.sqrt(2)), BLOCK, centred=True)[both]
        variance = np.trace(covariances, axis1=1, axis2=2)
        still = (variance <= STATIC_FACTOR * np.trace(spatial)) & (variance >= HELD_FACTOR * np.trace(spatial))
        static.append(covariances[still])
    return np.concatenate(static)


def _pan(before: np.ndarray, after: np.ndarray, blocks: np.ndarray) -> tuple[int, int]:
    """Return the whole-pixel shift (dy, dx) within PAN_REACH that best carries ``before``'s ``blocks`` into ``after``.

    The one whose change over (up to PAN_BLOCKS of) those blocks has the least median variance,
    where that is PAN_GAIN less than without a shift and no shift a pixel farther does better; else
    (0, 0): a pan beyond PAN_REACH, taken in part, would leave blocks that pass for still with
    texture in their change. A median over the blocks, not a choice block by block, which would
    pick each one's luckiest draw of noise.
    """
    chosen = np.flatnonzero(blocks)
    chosen = chosen[np.linspace(0, len(chosen) - 1, min(len(chosen), PAN_BLOCKS)).astype(int)]
    row, column = np.divmod(chosen, before.shape[1] // BLOCK)
    top, left = row * BLOCK, column * BLOCK
    reach = PAN_REACH + 1
    padded = np.pad(after, ((reach, reach), (reach, reach), (0, 0)), mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, (BLOCK, BLOCK), axis=(0, 1))  # (y, x, C, B, B)
    own = np.lib.stride_tricks.sliding_window_view(before, (BLOCK, BLOCK), axis=(0, 1))[top, left]
    medians = {}
    for dy, dx in itertools.product(range(-reach, reach + 1), repeat=2):  # a ring beyond PAN_REACH: see below
        change = windows[top + reach + dy, left + reach + dx] - own
        change = change - change.mean(axis=(-2, -1), keepdims=True)
        medians[dy, dx] = float(np.median(np.mean(change * change, axis=(-3, -2, -1))))
    best = min(medians, key=medians.get)
    within = max(abs(best[0]), abs(best[1])) <= PAN_REACH  # on the ring: the pan may be farther, and a part
    return best if within and medians[best] < (1 - PAN_GAIN) * medians[0, 0] else (0, 0)  # of it would pass


def _median_covariance(covariances: np.ndarray, samples: int) -> np.ndarray:
    """Elementwise median of per-block covariances, unbiased for Gaussian noise.

    A block's variance estimate from n samples follows sigma^2 chi2(n)/n; its median is
    sigma^2 (1 - 2/(9n))^3 (Wilson-Hilferty), so the median is divided by that.
    """
    median = np.median(covariances, axis=0)
    return (median + median.T) / 2 / (1 - 2 / (9 * samples)) ** 3
