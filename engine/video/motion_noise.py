"""The noise an encoder kept, from the frame-to-frame change left after motion compensation.

An encoder such as x264 smooths the noise out of the flat areas and keeps part of it in the
texture, where no flat block sees it: the spatial estimate of ``engine.video.noise`` then reads almost
nothing with a low confidence. The noise that was kept is new in every frame, so a block matched
(by a motion search) in the next frame differs from its match by sqrt(2) times that noise, in
every channel. Changes that the motion search does not explain (occlusions, blur, light) add
to the difference, so the estimate reads the quietest quarter of the blocks, and only footage
whose quiet quarter changes by more than MOTION_GATE (and than the flat blocks' noise: else the
noise was not smoothed away) is taken as noisy. Clean crops of three clips, moving and still,
decoded from H.264 or not, read 0 to 2.3 levels, and 3.0 on a street with a truck passing in
motion blur (which the gate then takes for noise: h about 5). ``region_change`` follows a region
the user chose with the same motion search, for the noise there.

The filter's h must also cover the compression artifacts that differ between similar patches:
ARTIFACT_SIGMA, calibrated on the calibration crops of ``scripts/calibrate_h.py`` with noise of
sigma 7, 10 and 15 encoded by libx264 at CRF 23 (``docs/realistic-noise.md``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

from ..cores import compiled_module

BLOCK = 16  # pixels on a side of a matched block
MAX_BLOCKS = 600  # blocks matched per frame pair, spread over the frame
COARSE_FACTOR = 4  # the coarse search runs on frames averaged over 4 x 4 pixels
COARSE_RADIUS = 8  # coarse pixels: motion up to 32 + FINE_RADIUS pixels is followed
FINE_RADIUS = 2  # pixels searched around the coarse motion (and around no motion)
MATCH_MARGIN = 8  # pixels around a block that its sub-pixel change's match is chosen on
MATCH_GAP = 2  # pixels between a block and the ring its match is chosen on (correlated noise reaches that far)
CORRELATION_REACH = 3  # pixels: the lags the change's spatial correlation is measured to (4:2:0 chroma's reach 3)
CORRELATION_FLOOR = 0.01  # a lag's correlation under this in every channel is taken as none (its sampling error: 0.004)
TILE = 8  # pixels on a side of the tiles a region's match is judged in
MATCHED = 128  # pixels on a side of the largest part of a region its match is found for
QUIET_QUANTILE = 0.25  # the quarter of blocks that changed least
MOTION_GATE = 2.5 / 255  # full scale: a quieter quiet quarter is taken as clean footage
ARTIFACT_SIGMA = 4.0 / 255  # full scale: the compression artifacts' share of the patch differences


def _downsampled(frame: np.ndarray, factor: int) -> np.ndarray:
    """Return ``frame`` averaged over factor x factor pixels (the last partial ones left out).

    By adding strided views, in the frame's dtype: a reshape's mean over two axes took 78 ms a
    1080p frame, this 10.
    """
    rows, cols = frame.shape[0] // factor, frame.shape[1] // factor
    cropped = frame[: rows * factor, : cols * factor]
    down = sum(cropped[offset::factor] for offset in range(factor))
    return sum(down[:, offset::factor] for offset in range(factor)) / factor**2


def _windows(frame: np.ndarray, tops: np.ndarray, lefts: np.ndarray, height: int, width: int) -> np.ndarray:
    """(N, height, width, C) windows of ``frame`` with their corners at (tops, lefts).

    Pixels past its edges repeat the edge's (as edge padding would, without a padded copy of the
    frame).
    """
    rows = np.clip(tops[:, None] + np.arange(height), 0, frame.shape[0] - 1)
    cols = np.clip(lefts[:, None] + np.arange(width), 0, frame.shape[1] - 1)
    return frame[rows[:, :, None], cols[:, None, :]]


def _best_match(
    template: np.ndarray, region: np.ndarray, radius: int, tiled: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """For each template (N, h, w, C) and its region (N, h + 2 r, w + 2 r, C).

    The smallest cost over the region's shifts and the shift (dy, dx) that gives it, the first in
    row order among equals. The cost is the mean squared difference over the window, or ``tiled``
    the median of its TILE x TILE tiles' (a window smaller than TILE is one tile that way).
    """
    height, width = template.shape[1:3]
    tile = (min(TILE, height), min(TILE, width)) if tiled else (height, width)
    return _least(np.median(_tile_costs(template, region, radius, tile), axis=-1), radius)  # one tile: its own


def _tile_costs(template: np.ndarray, region: np.ndarray, radius: int, tile: tuple[int, int]) -> np.ndarray:
    """Return each template's mean squared difference per tile at each shift in its region: (N, 2r+1, 2r+1, tiles)."""
    squares = compiled_module(".block_match_kernel", __package__).tile_mean_squares
    return squares(np.ascontiguousarray(template, np.float32), np.ascontiguousarray(region, np.float32), radius, *tile)


def _least(costs: np.ndarray, radius: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the least of each window's (N, 2 r + 1, 2 r + 1) ``costs`` and its shift (dy, dx), first in row order."""
    costs = costs.reshape(len(costs), (2 * radius + 1) ** 2)
    chosen = costs.argmin(axis=1)
    shift = np.stack(np.divmod(chosen, 2 * radius + 1), axis=1) - radius
    return costs[np.arange(len(costs)), chosen], shift


def _motion(
    current: np.ndarray,
    reference: np.ndarray,
    tops: np.ndarray,
    lefts: np.ndarray,
    height: int,
    width: int,
    refine: Callable[[np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]] = _best_match,
) -> np.ndarray:
    """Where the height x width windows of ``current`` at (tops, lefts) lie in ``reference``.

    (N, 2) integer shifts (dy, dx).

    The motion of each window is found on frames averaged over COARSE_FACTOR pixels, from a
    template twice the window's size around it (noise averages out there, and a flat window's
    surroundings give the search something to hold on to), and refined at full resolution
    within FINE_RADIUS pixels of it by ``refine`` (``_best_match`` by default); the match near no
    motion is also tried, so that windows that stayed still keep their match.
    """
    coarse_height, coarse_width = 2 * height // COARSE_FACTOR, 2 * width // COARSE_FACTOR
    coarse_top = (tops + height // 2) // COARSE_FACTOR - coarse_height // 2
    coarse_left = (lefts + width // 2) // COARSE_FACTOR - coarse_width // 2
    _, coarse = _best_match(
        _windows(_downsampled(current, COARSE_FACTOR), coarse_top, coarse_left, coarse_height, coarse_width),
        _windows(
            _downsampled(reference, COARSE_FACTOR),
            coarse_top - COARSE_RADIUS,
            coarse_left - COARSE_RADIUS,
            coarse_height + 2 * COARSE_RADIUS,
            coarse_width + 2 * COARSE_RADIUS,
        ),
        COARSE_RADIUS,
    )
    windows = _windows(current, tops, lefts, height, width)
    best, motion = np.full(len(windows), np.inf), np.zeros((len(windows), 2), dtype=int)
    for start in COARSE_FACTOR * coarse, np.zeros_like(coarse):
        region = _windows(
            reference,
            tops + start[:, 0] - FINE_RADIUS,
            lefts + start[:, 1] - FINE_RADIUS,
            height + 2 * FINE_RADIUS,
            width + 2 * FINE_RADIUS,
        )
        difference, shift = refine(windows, region, FINE_RADIUS)
        better = difference < best
        best = np.where(better, difference, best)
        motion[better] = (start + shift)[better]
    return motion


def _corners(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Return the (tops, lefts) of the BLOCK x BLOCK blocks of a frame of ``shape``.

    At most MAX_BLOCKS, spread over the frame.
    """
    rows, cols = shape[0] // BLOCK, shape[1] // BLOCK
    tops, lefts = (grid.ravel() * BLOCK for grid in np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij"))
    if len(tops) > MAX_BLOCKS:
        kept = np.linspace(0, len(tops) - 1, MAX_BLOCKS).round().astype(int)
        tops, lefts = tops[kept], lefts[kept]
    return tops, lefts


def motion_residuals(current: np.ndarray, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Blocks of ``current`` matched in ``reference`` and half their difference's covariance.

    Parameters
    ----------
    current, reference : ndarray
        Consecutive frames (H, W, C), float in full scale, H and W at least BLOCK.

    Returns
    -------
    covariances : (N, C, C) ndarray
        Per block, the covariance of (block - its match) / sqrt(2) about zero: the covariance of
        the noise that changed, for noise new in each frame.
    corners : (N, 2) ndarray
        Each block's (y, x) in ``current``; at most MAX_BLOCKS blocks, spread over the frame.

    Notes
    -----
    Each block's match is found as ``_motion`` says: a coarse motion search, refined.
    """
    current, reference = (np.asarray(frame, dtype=np.float32) for frame in (current, reference))
    tops, lefts = _corners(current.shape)
    motion = _motion(current, reference, tops, lefts, BLOCK, BLOCK)
    blocks = _windows(current, tops, lefts, BLOCK, BLOCK)
    matches = _windows(reference, tops + motion[:, 0], lefts + motion[:, 1], BLOCK, BLOCK)
    change = (blocks - matches).reshape(len(blocks), BLOCK * BLOCK, -1).astype(np.float64) / math.sqrt(2)
    covariances = np.einsum("npi,npj->nij", change, change, optimize=True) / (BLOCK * BLOCK)
    return covariances, np.stack([tops, lefts], axis=1)


def compensated_change(current: np.ndarray, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Blocks of ``current`` and the change to their match in ``reference`` that no motion explains.

    Parameters
    ----------
    current, reference : ndarray
        Consecutive frames (H, W, C), float in full scale (smaller than BLOCK + 2: no blocks).

    Returns
    -------
    change : (N, BLOCK, BLOCK, C) ndarray
        float64 in full scale: (block - its match) / sqrt(2), less its least-squares fit on
        the mean of the two's first and second derivatives (``_motion_terms``): the noise new in
        each frame, with the sub-pixel shift, blur and change of light that the block search
        leaves taken out.
    degrees : (N, C) ndarray
        Degrees of freedom that the fit leaves each block's change in each channel, for noise of
        the change's own spatial correlation (``_fit_degrees``): its variance about zero, summed
        over the pixels, over this is the noise's.
    corners : (N, 2) ndarray
        Each block's (y, x) in ``current``: blocks spread over the frame as ``motion_residuals``
        takes them, but for those whose match leaves ``reference``.

    Notes
    -----
    The fit is what makes a sub-pixel pan or a zoom measurable: a shift d leaves d times the
    picture's gradient (its midpoint's, to second order), which on texture is far larger than the
    noise. The terms come from the sum of the block and its match, whose noise is independent of
    their difference's for noise of the same covariance in both frames (Gaussian): on white noise
    the fit takes from it its share of the degrees of freedom and nothing else. Spatially
    correlated noise loses more (its derivatives lie where its energy is), which the degrees
    allow for: 4:2:0 chroma's noise on a flat frame read 18 % low in variance by the share alone.
    The match is chosen on the ring around the block (``_ring_match``), so that the noise it then
    measures plays no part in the choice: chosen with the block, the best of the shifts read white
    noise 3 % low in variance and 4:2:0 chroma's 8 %.
    """
    current, reference = (np.asarray(frame, dtype=np.float32) for frame in (current, reference))
    # One pixel of margin around each block, for the derivatives at its edge.
    size = BLOCK + 2
    tops, lefts = _corners((current.shape[0] - 2, current.shape[1] - 2))
    window = size + 2 * MATCH_MARGIN
    motion = _motion(current, reference, tops - MATCH_MARGIN, lefts - MATCH_MARGIN, window, window, _ring_match)
    match_tops, match_lefts = tops + motion[:, 0], lefts + motion[:, 1]
    # Matches past the frame's edge repeat its pixels, and their noise: left out.
    inside = (np.minimum(match_tops, match_lefts) >= 0) & (match_tops + size <= current.shape[0])
    inside &= match_lefts + size <= current.shape[1]
    tops, lefts = tops[inside], lefts[inside]
    windows = _windows(current, tops, lefts, size, size).astype(np.float64)
    matches = _windows(reference, match_tops[inside], match_lefts[inside], size, size).astype(np.float64)
    channels = current.shape[-1]
    difference = ((windows - matches) / math.sqrt(2))[:, 1:-1, 1:-1].reshape(len(windows), BLOCK * BLOCK, channels)
    terms = _motion_terms((windows + matches) / 2)
    inverse = np.linalg.pinv(terms, rcond=1e-10)
    change = (difference - terms @ (inverse @ difference)).reshape(len(windows), BLOCK, BLOCK, channels)
    corners = np.stack([tops + 1, lefts + 1], axis=1)
    return change, _fit_degrees(terms, inverse, _spatial_correlation(change)), corners


def _spatial_correlation(change: np.ndarray) -> np.ndarray:
    """Return the spatial correlation of the quieter half of the blocks' ``change`` (N, BLOCK, BLOCK, C).

    (2 L + 1, 2 L + 1, C) at lags (dy, dx) up to L = CORRELATION_REACH; 1 at lag (0, 0). Motion
    that the fit leaves only adds to a block's change, smoothly: the quieter half reads the
    noise's correlation.
    """
    reach = CORRELATION_REACH
    sums = np.zeros((2 * reach + 1, 2 * reach + 1, change.shape[-1]))
    if len(change):
        variances = np.sum(change**2, axis=(1, 2, 3))
        quiet = change[variances <= np.median(variances)]
        for dy, dx in itertools.product(range(-reach, reach + 1), repeat=2):
            sums[dy + reach, dx + reach] = np.einsum("nyxc,nyxc->c", *_overlap(quiet, quiet, dy, dx))
    correlation = sums / np.maximum(sums[reach, reach], 1e-30)
    correlation[reach, reach] = 1.0  # also where no block changed
    return correlation


def _fit_degrees(terms: np.ndarray, inverse: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    """Return the (N, C) degrees of freedom the fit on ``terms`` leaves noise of ``correlation`` in each channel.

    tr((I - P) R): P = terms @ inverse the fit's projection, R the noise's correlation between the
    block's pixels (``_spatial_correlation``'s; none past its lags or under CORRELATION_FLOOR).
    tr(P R) is, over the lags d, R(d) times the sum over the terms q and pixels p of
    inverse[q, p] terms[p + d, q]. White noise: the pixels less the terms' rank.
    """
    reach = CORRELATION_REACH
    shape = (len(terms), BLOCK, BLOCK, terms.shape[-1])
    columns = terms.reshape(shape).astype(np.float32)  # float32: 1.7x as fast, degrees within 1e-5
    rows = np.moveaxis(inverse, 1, 2).reshape(shape).astype(np.float32)  # inverse[q, p] at p
    taken = np.zeros((len(terms), correlation.shape[-1]))
    for dy, dx in itertools.product(range(-reach, reach + 1), repeat=2):
        lag = correlation[dy + reach, dx + reach]
        if np.any(np.abs(lag) >= CORRELATION_FLOOR):
            taken += np.einsum("nyxq,nyxq->n", *_overlap(rows, columns, dy, dx))[:, None] * lag
    return BLOCK * BLOCK - taken


def _overlap(first: np.ndarray, second: np.ndarray, dy: int, dx: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the parts of (N, H, W, ...) ``first`` at p and ``second`` at p + (dy, dx) that both lie inside."""
    height, width = first.shape[1:3]
    return (
        first[:, max(0, -dy) : height - max(0, dy), max(0, -dx) : width - max(0, dx)],
        second[:, max(0, dy) : height + min(0, dy), max(0, dx) : width + min(0, dx)],
    )


def _motion_terms(mean: np.ndarray) -> np.ndarray:
    """(N, BLOCK^2, 1 + 5 C) columns a change is fitted on.

    From the mean (N, BLOCK + 2, BLOCK + 2, C) of a block and its match: a constant, and each
    channel's first derivatives (shift), second derivatives (blur) and mixed one, by central
    differences.
    """
    centre = mean[:, 1:-1, 1:-1]
    terms = [
        np.ones((*centre.shape[:-1], 1)),
        (mean[:, 1:-1, 2:] - mean[:, 1:-1, :-2]) / 2,
        (mean[:, 2:, 1:-1] - mean[:, :-2, 1:-1]) / 2,
        mean[:, 1:-1, 2:] - 2 * centre + mean[:, 1:-1, :-2],
        mean[:, 2:, 1:-1] - 2 * centre + mean[:, :-2, 1:-1],
        (mean[:, 2:, 2:] - mean[:, 2:, :-2] - mean[:, :-2, 2:] + mean[:, :-2, :-2]) / 4,
    ]
    return np.concatenate(terms, axis=-1).reshape(len(mean), BLOCK * BLOCK, 1 + 5 * mean.shape[-1])


def kept_noise(
    frames: list[np.ndarray], flat_sigma: float = 0.0
) -> tuple[np.ndarray, list[tuple[int, int, int, int]], int] | None:
    """Return the covariance patch distances see in compressed noisy footage, or None where it looks clean.

    Parameters
    ----------
    frames : list of ndarray
        Two or more consecutive frames (H, W, C), float in full scale.
    flat_sigma : float
        The noise the flat blocks show (full scale): where the moving blocks' quiet quarter
        changes by no more, the flat blocks' estimate stands (the noise was not smoothed away).

    Returns
    -------
    (covariance, regions, samples) or None
        ``covariance`` (C, C) in full scale squared: the quietest quarter of the matched blocks'
        noise (median covariance, rescaled to its quartile sigma), plus ARTIFACT_SIGMA^2 on the
        average sigma; ``regions`` those blocks as (x, y, width, height) in the first frame of
        their pair; ``samples`` their pixels. None where the quiet quarter changed by less than
        MOTION_GATE (clean footage, a repeated frame, a still picture the encoder held) or
        than ``flat_sigma``.
    """
    pairs = [motion_residuals(current, reference) for current, reference in itertools.pairwise(frames)]
    covariance_stack = np.concatenate([covariances for covariances, _ in pairs])
    corner_stack = np.concatenate([corners for _, corners in pairs])
    channels = covariance_stack.shape[-1]
    sigmas = np.sqrt(np.trace(covariance_stack, axis1=1, axis2=2) / channels)
    kept = float(np.quantile(sigmas, QUIET_QUANTILE))
    if kept < max(MOTION_GATE, flat_sigma):
        return None
    quiet = sigmas <= kept
    shape = np.median(covariance_stack[quiet], axis=0)
    shape = (shape + shape.T) / 2
    total = kept**2 + ARTIFACT_SIGMA**2
    covariance = shape * (total / max(np.trace(shape) / channels, 1e-30))
    regions = sorted({(int(x), int(y), BLOCK, BLOCK) for y, x in corner_stack[quiet]})
    return covariance, regions, int(quiet.sum()) * BLOCK * BLOCK


def region_change(current: np.ndarray, reference: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    """Return the region ``box`` of ``current`` less its match in ``reference``, over sqrt(2).

    Parameters
    ----------
    current, reference : ndarray
        Consecutive frames (H, W, C), float in full scale.
    box : (x, y, width, height)
        The region in ``current``, in pixels.

    Returns
    -------
    (height, width, C) ndarray
        float64 in full scale: the noise new in each frame where the region's content only
        moved, plus whatever else changed.

    Notes
    -----
    The match is found as ``motion_residuals`` finds a block's, for the region's middle (at most
    MATCHED pixels on a side: matching a large region whole was slow), and refined by
    ``_steady_match``: robust to something passing through a part of the region, and blind to
    the noise it then measures.
    """
    x, y, width, height = box
    current, reference = (np.asarray(frame, dtype=np.float32) for frame in (current, reference))
    # The region moves as one: its middle, at most MATCHED pixels on a side, finds where to.
    matched_height, matched_width = min(height, MATCHED), min(width, MATCHED)
    top, left = y + (height - matched_height) // 2, x + (width - matched_width) // 2
    ((dy, dx),) = _motion(
        current, reference, np.array([top]), np.array([left]), matched_height, matched_width, _steady_match
    )
    match = _windows(reference, np.array([y + dy]), np.array([x + dx]), height, width)[0]
    return (current[y : y + height, x : x + width] - match).astype(np.float64) / math.sqrt(2)


def _steady_match(template: np.ndarray, region: np.ndarray, radius: int) -> tuple[np.ndarray, np.ndarray]:
    """``_best_match`` on windows blurred over 3 x 3 pixels, by the median over TILE x TILE tiles.

    The median is of their mean squared difference. Chosen on the noise it then measures, the best
    of the 50 shifts tried read white noise 4 % low in a 45 x 26 region of a flat frame (blurred,
    1 %); by the whole window's mean, a bike crossing a fifth of it pulled the match off the rest.
    """
    return _best_match(_blurred(template), _blurred(region), radius, tiled=True)


def _blurred(windows: np.ndarray) -> np.ndarray:
    """(N, h, w, C) windows averaged over 3 x 3 pixels: (N, h - 2, w - 2, C)."""
    height, width = windows.shape[1] - 2, windows.shape[2] - 2
    return sum(windows[:, dy : dy + height, dx : dx + width] for dy in range(3) for dx in range(3)) / 9


def _ring_match(template: np.ndarray, region: np.ndarray, radius: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the least cost and its shift, as ``_best_match`` does, by the ring outside the block.

    The windows are a block's derivative window with MATCH_MARGIN pixels around, blurred over 3 x 3
    pixels; the cost is the mean squared difference of the blurred pixels that no pixel within
    MATCH_GAP of the block's window reaches. Chosen on the noise it then measures, the best of the
    shifts tried would read it low where the picture is flat.
    """
    template, region = _blurred(template), _blurred(region)
    side = template.shape[1]
    # A blurred pixel j averages the window's j .. j + 2: those from here reach within MATCH_GAP of the block's.
    inner = slice(MATCH_MARGIN - 2 - MATCH_GAP, side - (MATCH_MARGIN - 2 - MATCH_GAP))
    inner_side = inner.stop - inner.start
    whole = _tile_costs(template, region, radius, (side, side))[..., 0] * side**2
    around = slice(inner.start, inner.stop + 2 * radius)
    centre = _tile_costs(template[:, inner, inner], region[:, around, around], radius, (inner_side, inner_side))
    return _least((whole - centre[..., 0] * inner_side**2) / (side**2 - inner_side**2), radius)
