"""The per-pixel loops of ``media.yuv``, compiled with numba (cached on disk after the first run).

One pass over the frame each way, rows in parallel: a 1080p frame takes milliseconds, as FFmpeg's
swscale does. Chroma sites follow MPEG-2 / H.264 / HEVC's default: on the even luma columns (every
fourth for 4:1:1, as DV sites them), and for 4:2:0 halfway between two luma rows. Edges repeat
their last sample, under which the down filters undo the up filters exactly; the last chroma row
of a 4:2:0 frame of odd height (one luma row under it, not two) has taps of its own that undo it
exactly (CENTERED_LAST_DOWN).

``coefficients`` is ``YuvLayout.coefficients()``: luma offset, luma scale, chroma offset, chroma
scale (in samples), Kr, Kb, the largest sample.
"""

from __future__ import annotations

import numba
import numpy as np

from .yuv import CHROMA_CENTRE

# The down filters that undo the up filters' linear interpolation exactly (see media.yuv):
# LeGall 5/3's low-pass on co-sited samples, and its counterpart for samples halfway between.
COSITED_DOWN = np.array([-1, 2, 6, 2, -1], np.float32) / 8
# 4:1:1's (a quarter of the columns, DV): 9 taps that undo linear interpolation between samples 4
# columns apart exactly, least squares to a low-pass otherwise (1 at 0, under 0.12 past pi/2).
COSITED_QUARTER_DOWN = np.array([-117, -44, 136, 328, 418, 328, 136, -44, -117], np.float32) / 1024
CENTERED_DOWN = np.array([-1, 3, 3, -1], np.float32) / 4
CENTERED_LAST_DOWN = np.array([-1, 3], np.float32) / 2  # on the two last rows, where the pair is cut
NOT_SUBSAMPLED = np.ones(1, np.float32)


@numba.njit(cache=True, inline="always")
def _across(plane: np.ndarray, row: int, x: int, shift: int) -> float:
    """Chroma at luma column ``x`` of chroma row ``row``, a sample every 2 ** ``shift`` columns.

    Co-sited on the columns of a sample, interpolated linearly between two samples on the others
    (4:2:0 and 4:2:2: the mean of the two on odd columns).
    """
    if not shift:
        return plane[row, x]
    column = x >> shift
    part = (x & ((1 << shift) - 1)) / (1 << shift)
    if part:
        return (1 - part) * plane[row, column] + part * plane[row, min(column + 1, plane.shape[1] - 1)]
    return plane[row, column]


@numba.njit(cache=True, inline="always")
def _sampled(luma, blue, red, y, x, across, down, coefficients):
    """(Y' in 0..1, Pb, Pr in -0.5..0.5) at pixel (y, x): chroma interpolated at its site, nothing clipped."""
    luma_offset, luma_scale, chroma_offset, chroma_scale, _, _, _ = coefficients
    chroma_rows = blue.shape[0]
    near = y >> down  # 4:2:0: 3/4 of the nearer chroma row, 1/4 of the next one on this side
    other = max(near - 1, 0) if y % 2 == 0 else min(near + 1, chroma_rows - 1)
    cb = _across(blue, near, x, across)
    cr = _across(red, near, x, across)
    if down:
        cb = 0.75 * cb + 0.25 * _across(blue, other, x, across)
        cr = 0.75 * cr + 0.25 * _across(red, other, x, across)
    value = (luma[y, x] - luma_offset) / luma_scale
    return value, (cb - chroma_offset) / chroma_scale, (cr - chroma_offset) / chroma_scale


@numba.njit(cache=True, parallel=True, nogil=True)
def to_rgb(
    luma: np.ndarray,
    blue: np.ndarray,
    red: np.ndarray,
    across: int,
    down: int,
    coefficients: np.ndarray,
    full_scale: float,
    rounded: bool,
    out: np.ndarray,
) -> None:
    """Y, Cb, Cr sample planes -> ``out`` (H, W, 3) RGB at ``full_scale``.

    ``rounded``: rounded and clipped, for integer ``out``; otherwise neither, colours past RGB's
    range staying past it.
    """
    kr, kb = coefficients[4], coefficients[5]
    height, width = luma.shape
    for y in numba.prange(height):
        for x in range(width):
            value, pb, pr = _sampled(luma, blue, red, y, x, across, down, coefficients)
            r = value + 2 * (1 - kr) * pr
            b = value + 2 * (1 - kb) * pb
            g = (value - kr * r - kb * b) / (1 - kr - kb)
            out[y, x, 0] = _stored(r, full_scale, rounded)
            out[y, x, 1] = _stored(g, full_scale, rounded)
            out[y, x, 2] = _stored(b, full_scale, rounded)


@numba.njit(cache=True, inline="always")
def _stored(value: float, full_scale: float, rounded: bool) -> float:
    """Return a component in 0..1 at ``full_scale``: rounded and clipped to it, or as it is."""
    if rounded:
        return np.rint(min(max(value, 0.0), 1.0) * full_scale)
    return value * full_scale


@numba.njit(cache=True, parallel=True, nogil=True)
def to_ycbcr(
    luma: np.ndarray,
    blue: np.ndarray,
    red: np.ndarray,
    across: int,
    down: int,
    coefficients: np.ndarray,
    out_luma: np.ndarray,
    out_chroma: np.ndarray,
) -> None:
    """Y, Cb, Cr sample planes -> Y' (H, W, 1) and (Pb + 0.5, Pr + 0.5, 0) (H, W, 3), float32, unclipped.

    What the luma/chroma filter's two passes take: values past the range (super-whites, sub-blacks,
    colours out of RGB's gamut) are kept.
    """
    height, width = luma.shape
    for y in numba.prange(height):
        for x in range(width):
            value, pb, pr = _sampled(luma, blue, red, y, x, across, down, coefficients)
            out_luma[y, x, 0] = value
            out_chroma[y, x, 0] = pb + CHROMA_CENTRE
            out_chroma[y, x, 1] = pr + CHROMA_CENTRE
            out_chroma[y, x, 2] = 0.0


@numba.njit(cache=True, parallel=True, nogil=True)
def _full_resolution(rgb, scale, coefficients, luma, differences):
    """``luma`` samples, and Pb, Pr (-0.5..0.5) at every pixel into ``differences``."""
    luma_offset, luma_scale, _, _, kr, kb, top = coefficients
    height, width = luma.shape
    for y in numba.prange(height):
        for x in range(width):
            r, g, b = rgb[y, x, 0] * scale, rgb[y, x, 1] * scale, rgb[y, x, 2] * scale
            value = kr * r + (1 - kr - kb) * g + kb * b
            luma[y, x] = min(max(np.rint(value * luma_scale + luma_offset), 0.0), top)
            differences[0, y, x] = (b - value) / (2 * (1 - kb))
            differences[1, y, x] = (r - value) / (2 * (1 - kr))


@numba.njit(cache=True, parallel=True, nogil=True)
def _luma_from_ycbcr(values, chroma, coefficients, luma, differences):
    """``luma`` samples of Y' (H, W, 1), and Pb, Pr of (Pb + 0.5, Pr + 0.5, 0) (H, W, 3) into ``differences``."""
    luma_offset, luma_scale, _, _, _, _, top = coefficients
    height, width = luma.shape
    for y in numba.prange(height):
        for x in range(width):
            luma[y, x] = min(max(np.rint(values[y, x, 0] * luma_scale + luma_offset), 0.0), top)
            differences[0, y, x] = chroma[y, x, 0] - CHROMA_CENTRE
            differences[1, y, x] = chroma[y, x, 1] - CHROMA_CENTRE


@numba.njit(cache=True, parallel=True, nogil=True)
def _decimated(difference, vertical, horizontal, before_y, before_x, stride_x, coefficients, out):
    """``out`` (chroma samples).

    ``difference`` filtered with the separable taps at the chroma sites (every ``stride_x``
    columns), the first tap ``before_y`` / ``before_x`` full-resolution samples before the site:
    down the columns into one row, then along it.
    """
    _, _, chroma_offset, chroma_scale, _, _, top = coefficients
    height, width = difference.shape
    rows, columns = out.shape
    stride_y = 2 if len(vertical) > 1 else 1
    for cy in numba.prange(rows):
        row = np.zeros(width, np.float64)
        taps, first = vertical, cy * stride_y - before_y
        if stride_y == 2 and 2 * cy + 1 == height:  # a 4:2:0 frame of odd height: half a pair left
            taps, first = CENTERED_LAST_DOWN, 2 * cy - 1
        for i in range(len(taps)):
            y = min(max(first + i, 0), height - 1)
            for x in range(width):
                row[x] += taps[i] * difference[y, x]
        for cx in range(columns):
            total = 0.0
            for j in range(len(horizontal)):
                total += horizontal[j] * row[min(max(cx * stride_x + j - before_x, 0), width - 1)]
            out[cy, cx] = min(max(np.rint(total * chroma_scale + chroma_offset), 0.0), top)


def to_planes(
    rgb: np.ndarray,
    scale: float,
    coefficients: np.ndarray,
    luma: np.ndarray,
    blue: np.ndarray,
    red: np.ndarray,
    differences: np.ndarray,
    across: int,
    down: int,
) -> None:
    """RGB (uint8 / uint16 times ``scale`` = 0..1) -> the ``luma``, ``blue``, ``red`` sample planes."""
    _full_resolution(rgb, scale, coefficients, luma, differences)
    _decimate(differences, coefficients, blue, red, across, down)


def from_ycbcr(
    values: np.ndarray,
    chroma: np.ndarray,
    coefficients: np.ndarray,
    luma: np.ndarray,
    blue: np.ndarray,
    red: np.ndarray,
    differences: np.ndarray,
    across: int,
    down: int,
) -> None:
    """``to_ycbcr``'s Y' and chroma (float32) -> the ``luma``, ``blue``, ``red`` sample planes, rounded and clamped."""
    _luma_from_ycbcr(values, chroma, coefficients, luma, differences)
    _decimate(differences, coefficients, blue, red, across, down)


def _decimate(differences, coefficients, blue, red, across, down) -> None:
    """Pb and Pr at every pixel (``differences``) -> the ``blue`` and ``red`` sample planes at their sites."""
    vertical = CENTERED_DOWN if down else NOT_SUBSAMPLED
    horizontal = (NOT_SUBSAMPLED, COSITED_DOWN, COSITED_QUARTER_DOWN)[across]
    for difference, plane in zip(differences, (blue, red), strict=True):
        _decimated(
            difference, vertical, horizontal, 1 if down else 0, len(horizontal) // 2, 1 << across, coefficients, plane
        )
