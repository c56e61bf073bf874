"""The CPU filters' row arithmetic, shared by the video's fused filter and the volume's.

The filters are ``engine/video/filters/fused_cpu.py`` and ``engine/volume/filter_cpu.py``: one row
of patch distances turned into weights, and one row of weighted candidates added to the numerators
and the denominator.

Exponential weights with the largest weight as the centre's are relative (DESIGN.md §1): the
row of weights holds u, and each pixel weighs by exp(-(u - r)) against a reference r that
follows the smallest u seen so far, u_min, lazily (online softmax): r is lowered, and the sums
rescaled by exp(-(r - u)), only where a u falls more than RESCALE_MARGIN below it.
"""

from __future__ import annotations

import numba
import numpy as np

from .fastmath import FASTMATH

NO_EXPONENT = np.float32(np.finfo(np.float32).max)  # u_min before any offset: finite, exp(-(it - u)) = 0
# 2^f on [0, 1), least squares on Chebyshev nodes: relative error below 1e-7.
EXP2_POLYNOMIAL = (0.0002187751670135185, 0.001238783122971654, 0.009684577584266663, 0.05548042804002762,
                   0.2402305006980896, 0.6931469440460205, 1.0)  # fmt: skip
LOG2_E = np.float32(1.4426950408889634)
# Relative weights: how far u may fall below the reference r before the sums are rescaled; the
# weights are then at most e^32 (float32 holds sums of them to 3e38) and never underflow sooner
# than exp(-(u - u_min)) would.
RESCALE_MARGIN = np.float32(32.0)


@numba.njit(cache=True, fastmath=FASTMATH, inline="always")
def exp_negative(values, exponents):
    """Compute values = exp(-values) in place for values >= 0, in two loops that vectorize.

    Libm's exp does not vectorize without SVML, which made exponential weights several times the
    bisquare's cost (docs/bench/2026-11-22-floor-and-cpu.md). 2^-x is computed as a polynomial of
    the fraction, the integer part added to the float's exponent bits; ``exponents`` is int32
    scratch as long as ``values``. Below 2^-126 the weight is 0, as float32's exp(-u) gives.
    """
    for i in range(values.shape[0]):
        x = max(-values[i] * LOG2_E, np.float32(-126.0))
        whole = np.floor(x)
        fraction = x - whole
        result = np.float32(EXP2_POLYNOMIAL[0])
        for coefficient in EXP2_POLYNOMIAL[1:]:
            result = result * fraction + np.float32(coefficient)
        underflows = x <= np.float32(-126.0)
        values[i] = np.float32(0.0) if underflows else result
        exponents[i] = np.int32(0) if underflows else np.int32(whole)
    bits = values.view(np.int32)
    for i in range(values.shape[0]):
        bits[i] += exponents[i] << 23  # times 2^whole: result is in [1, 2), whole >= -126


@numba.njit(cache=True, fastmath=FASTMATH)
def weights_row(column_sums, radius, scale, exponential, relative, exponents, out):
    """Box-sum ``column_sums`` horizontally over 2 radius + 1 and turn the sums into weights.

    Into u = sum * scale where the weights are ``relative``; ``exponents`` is int32 scratch as long
    as ``out``. A sum is at least 0: the column sums run (a row added, another taken away), and
    rounding left equal patches -1e-7 apart, which a tiny h (0.001 levels: scale 6.5e10) made a
    weight of exp(+4500): garbage where patches of a flat area sat under a sharp edge.

    2B shifted passes over the row: each vectorizes, unlike a running sum (a chain of
    dependent adds) or power-of-two partial sums doubled in place (measured slower).
    """
    length = out.shape[0]
    for i in range(length):
        out[i] = column_sums[i]
    for shift in range(1, 2 * radius + 1):
        shifted = column_sums[shift : shift + length]
        for i in range(length):
            out[i] += shifted[i]
    for i in range(length):  # the running column sums' rounding leaves -1e-7 where patches are equal
        out[i] = max(out[i], np.float32(0.0))
    if exponential:
        for i in range(length):
            out[i] *= scale
        if not relative:
            exp_negative(out, exponents)
    else:
        for i in range(length):
            left = max(np.float32(1.0) - out[i] * scale, np.float32(0.0))
            out[i] = left * left


@numba.njit(cache=True, fastmath=FASTMATH)
def _lower_reference(u, accumulators, accumulator_row, rescale, exponents):
    """Lower r = min(r, u) for one row of relative weights, its sums rescaled by exp(-(r_old - r))."""
    width = u.shape[0]
    channels = accumulators.shape[0] - 3
    reference = accumulators[channels + 1, accumulator_row, :width]
    for i in range(width):
        lowered = min(reference[i], u[i])
        rescale[i] = reference[i] - lowered
        reference[i] = lowered
    exp_negative(rescale, exponents)
    for channel in range(channels + 1):  # the numerators and the denominator
        target = accumulators[channel, accumulator_row, :width]
        for i in range(width):
            target[i] *= rescale[i]


@numba.njit(inline="always")
def center_weight(largest, least, center_max, relative):
    """Return the pixel's own weight.

    1, the largest weight (``center_max``), or for relative weights exp(-(u_min - r)) from the
    reference r and u_min (``largest``, ``least``).
    """
    if relative:
        return np.float32(np.exp(largest - least))
    if center_max and largest > 0:
        return largest
    return np.float32(1.0)


@numba.njit(cache=True, fastmath=FASTMATH, inline="always")
def _add_weighted(weights, y_frames, frame, row, start, accumulators, accumulator_row):
    """Accumulate the numerators += w Y_frame(row, start + i), the denominator += w, over one row."""
    width = weights.shape[0]
    channels = accumulators.shape[0] - 3
    for channel in range(channels):
        candidate = y_frames[frame, channel, row, start : start + width]
        target = accumulators[channel, accumulator_row, :width]
        for i in range(width):
            target[i] += weights[i] * candidate[i]
    denominator = accumulators[channels, accumulator_row, :width]
    for i in range(width):
        denominator[i] += weights[i]


@numba.njit(cache=True, fastmath=FASTMATH)
def accumulate_row(
    weights, y_frames, frame, row, start, accumulators, accumulator_row, center_max, relative, factors, exponents
):
    """Add w Y_frame(row, start + i) to the numerators and w to the denominator of one row.

    ``accumulators`` is (C + 3, rows, columns): C numerators, the denominator, the largest
    weight (kept only with ``center_max``) or where the weights are ``relative`` the reference
    r, and the smallest u so far, u_min (relative weights only). Relative: ``weights`` holds u,
    each pixel's weight is exp(-(u - r)) (module docstring), with ``factors`` ((2, columns))
    for the rescale factors and the weights and ``exponents`` (int32, columns) for their exp.
    Each row is indexed from the C-contiguous whole so that numba knows it is contiguous and the
    loops vectorize.
    """
    width = weights.shape[0]
    channels = accumulators.shape[0] - 3
    if relative:
        reference = accumulators[channels + 1, accumulator_row, :width]
        least = accumulators[channels + 2, accumulator_row, :width]
        falls = False
        for i in range(width):
            least[i] = min(least[i], weights[i])
            falls |= weights[i] < reference[i] - RESCALE_MARGIN
        if falls:
            _lower_reference(weights, accumulators, accumulator_row, factors[0, :width], exponents)
        relative_weights = factors[1, :width]
        for i in range(width):
            relative_weights[i] = weights[i] - reference[i]
        exp_negative(relative_weights, exponents)
        _add_weighted(relative_weights, y_frames, frame, row, start, accumulators, accumulator_row)
        return
    _add_weighted(weights, y_frames, frame, row, start, accumulators, accumulator_row)
    if center_max:
        largest = accumulators[channels + 1, accumulator_row, :width]
        for i in range(width):
            largest[i] = max(largest[i], weights[i])
