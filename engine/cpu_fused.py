"""The fast CPU path: the pass cascade fused per band of output rows, compiled with numba.

Each band of rows is one parallel task. For every offset the band rolls down its rows once:
the squared color difference of one new row enters a vertical running sum (a ring of the last
2B+1 rows), the horizontal box sum of that running sum gives the patch distances of a whole row,
and the weights go straight into the band's numerator and denominator. Nothing but a few rows
of scratch is written per offset. Within the centre frame each weight serves +q and -q (the
band computes the distances over its rows and the rows shifted by -q), so half the spatial
offsets are visited, as in the cascade.

The radii, h and the weighting are run-time arguments: the kernel compiles once per machine
(``cache=True``) and never again when the user moves a slider.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numba
import numpy as np

from .params import NLMParams

BAND_ROWS = 64  # rows per parallel task: the band's accumulators stay in L2


FAST = {"nnan", "ninf", "nsz", "arcp", "contract", "reassoc"}  # inputs are checked finite


@numba.njit(cache=True, inline="always")
def _mirror(coordinate, size):
    """Reflect without repeating the edge pixel (np.pad mode="reflect"): -1 -> 1."""
    if coordinate < 0:
        return -coordinate
    if coordinate >= size:
        return 2 * (size - 1) - coordinate
    return coordinate


@numba.njit(cache=True, parallel=True, fastmath=FAST)
def _pad_planar(frames, transform, pad, out):
    """out[k, c] = (transform @ frames[k])[c], mirrored by ``pad``; frames are (K, H, W, C).

    An empty ``transform`` means the identity.
    """
    frame_count, height, width, channels = frames.shape
    padded_height = height + 2 * pad
    for task in numba.prange(frame_count * padded_height):
        frame, row = task // padded_height, task % padded_height
        source = frames[frame, _mirror(row - pad, height)]
        for col in range(width + 2 * pad):
            pixel = source[_mirror(col - pad, width)]
            for channel in range(channels):
                if transform.size == 0:
                    out[frame, channel, row, col] = pixel[channel]
                    continue
                total = np.float32(0.0)
                for k in range(channels):
                    total += transform[channel, k] * pixel[k]
                out[frame, channel, row, col] = total


@numba.njit(cache=True, fastmath=FAST)
def _difference_row(z_frames, reference, other, row, row_other, start, start_other, slot, sums):
    """Enter one row of ||Z_reference - Z_other||^2 into the vertical running ``sums``.

    ``slot`` holds the row leaving the running sum (zeros at first) and receives the new one.
    """
    length = slot.shape[0]
    if z_frames.shape[1] == 3:
        a0 = z_frames[reference, 0, row, start : start + length]
        a1 = z_frames[reference, 1, row, start : start + length]
        a2 = z_frames[reference, 2, row, start : start + length]
        b0 = z_frames[other, 0, row_other, start_other : start_other + length]
        b1 = z_frames[other, 1, row_other, start_other : start_other + length]
        b2 = z_frames[other, 2, row_other, start_other : start_other + length]
        for i in range(length):
            d0, d1, d2 = a0[i] - b0[i], a1[i] - b1[i], a2[i] - b2[i]
            difference = d0 * d0 + d1 * d1 + d2 * d2
            sums[i] += difference - slot[i]
            slot[i] = difference
    else:
        a0 = z_frames[reference, 0, row, start : start + length]
        b0 = z_frames[other, 0, row_other, start_other : start_other + length]
        for i in range(length):
            d0 = a0[i] - b0[i]
            difference = d0 * d0
            sums[i] += difference - slot[i]
            slot[i] = difference


@numba.njit(cache=True, fastmath=FAST)
def _weights_row(column_sums, radius, scale, exponential, out):
    """Box-sum ``column_sums`` horizontally over 2 radius + 1 and turn the sums into weights."""
    length = out.shape[0]
    for i in range(length):
        out[i] = column_sums[i]
    for shift in range(1, 2 * radius + 1):
        shifted = column_sums[shift : shift + length]
        for i in range(length):
            out[i] += shifted[i]
    if exponential:
        for i in range(length):
            out[i] = np.exp(-out[i] * scale)
    else:
        for i in range(length):
            remaining = max(np.float32(1.0) - out[i] * scale, np.float32(0.0))
            out[i] = remaining * remaining


@numba.njit(cache=True, fastmath=FAST)
def _accumulate_row(weights, y_frames, frame, row, start, numerator, denominator, largest, center_max):
    """numerator += w Y_frame(row, start + i); denominator += w; with center_max, largest = max(largest, w)."""
    width = denominator.shape[0]
    for channel in range(numerator.shape[0]):
        candidate = y_frames[frame, channel, row, start : start + width]
        target = numerator[channel]
        for i in range(width):
            target[i] += weights[i] * candidate[i]
    for i in range(width):
        denominator[i] += weights[i]
    if center_max:
        for i in range(width):
            largest[i] = max(largest[i], weights[i])


@numba.njit(cache=True, fastmath=FAST)
def _denoise_band(z_frames, y_frames, center, search, radius, scale, exponential, center_max, scratch, band, output):
    """Fill rows [band * BAND_ROWS, ...) of ``output`` (H, W, C); one parallel task."""
    frame_count, channels, padded_height, padded_width = y_frames.shape
    height, width = padded_height - 2 * search, padded_width - 2 * search
    pad = search + radius
    ring_rows = 2 * radius + 1
    first, stop = band * BAND_ROWS, min(height, (band + 1) * BAND_ROWS)
    accumulators, ring = scratch.accumulators[band], scratch.ring[band]  # contiguous: vectorizes
    numerator, denominator, largest = accumulators[:channels], accumulators[channels], accumulators[channels + 1]
    accumulators[:] = 0.0
    for frame in range(frame_count):
        same_frame = frame == center
        for qy in range(-search, search + 1):
            for qx in range(-search, search + 1):
                if same_frame and not (qy > 0 or (qy == 0 and qx > 0)):
                    continue
                # Distances over the band's rows, and for the centre frame also over the rows
                # and columns shifted by -q, whose weights serve the offset -q.
                top, bottom, left, right = first, stop, 0, width
                if same_frame:
                    top, bottom = min(first, first - qy), max(stop, stop - qy)
                    left, right = min(0, -qx), max(width, width - qx)
                columns = right - left
                sums = scratch.column_sums[band, : columns + 2 * radius]
                row_weights = scratch.weights[band, :columns]
                sums[:] = 0.0
                ring[:, : columns + 2 * radius] = 0.0
                start = pad + left - radius
                for row in range(top - radius, bottom + radius):
                    # The row leaving the running sum, 2B+1 rows up, shares the new row's slot.
                    slot = ring[(row - top + radius) % ring_rows, : columns + 2 * radius]
                    _difference_row(z_frames, center, frame, pad + row, pad + row + qy, start, start + qx, slot, sums)
                    output_row = row - radius
                    if output_row < top:
                        continue
                    _weights_row(sums, radius, scale, exponential, row_weights)
                    if first <= output_row < stop:
                        _accumulate_row(
                            row_weights[-left : width - left],
                            y_frames,
                            frame,
                            search + output_row + qy,
                            search + qx,
                            numerator[:, output_row - first],
                            denominator[output_row - first],
                            largest[output_row - first],
                            center_max,
                        )
                    mirrored_row = output_row + qy
                    if same_frame and first <= mirrored_row < stop:
                        _accumulate_row(
                            row_weights[-qx - left : width - qx - left],
                            y_frames,
                            frame,
                            search + output_row,
                            search - qx,
                            numerator[:, mirrored_row - first],
                            denominator[mirrored_row - first],
                            largest[mirrored_row - first],
                            center_max,
                        )
    for row in range(stop - first):
        for col in range(width):
            weight = np.float32(1.0)
            if center_max and largest[row, col] > 0:
                weight = largest[row, col]
            inverse_total = np.float32(1.0) / (denominator[row, col] + weight)
            for channel in range(channels):
                pixel = y_frames[center, channel, search + first + row, search + col]
                output[first + row, col, channel] = (numerator[channel, row, col] + weight * pixel) * inverse_total


@numba.njit(cache=True, parallel=True)
def _denoise(z_frames, y_frames, center, search, radius, scale, exponential, center_max, scratch, output):
    """Fill ``output`` (H, W, C) for the frames' centre, one parallel task per band of rows."""
    for band in numba.prange(scratch.accumulators.shape[0]):
        _denoise_band(z_frames, y_frames, center, search, radius, scale, exponential, center_max, scratch, band, output)


class Scratch(NamedTuple):
    """Per-band work memory of ``_denoise``, made once per frame size and reused."""

    accumulators: np.ndarray  # (bands, C + 2, BAND_ROWS, W): numerator, denominator, largest weight
    ring: np.ndarray  # (bands, 2B + 1, W + A + 2B): the rows of the vertical running sum
    column_sums: np.ndarray  # (bands, W + A + 2B)
    weights: np.ndarray  # (bands, W + A)


class FusedCpuFilter:
    """The fused numba filter with its buffers, which it keeps between frames of one size."""

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}

    def _buffer(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        buffer = self._buffers.get(name)
        if buffer is None or buffer.shape != shape:
            buffer = self._buffers[name] = np.empty(shape, dtype=np.float32)
        return buffer

    def __call__(self, frames: Sequence[np.ndarray], center: int, params: NLMParams) -> np.ndarray:
        """Denoise ``frames[center]`` searching all of ``frames`` ((H, W, C) float32 each).

        Same contract as ``cascade.denoise_window``, on interleaved host frames; the frames
        are the window's, truncated at the clip's ends.
        """
        height, width, channels = frames[center].shape
        search, radius = params.search_radius, params.patch_radius
        stacked = np.stack(frames) if len(frames) > 1 else frames[0][np.newaxis]
        identity = np.empty((0, 0), dtype=np.float32)
        transform = identity if params.color_transform is None else params.color_transform.astype(np.float32)
        y_frames = self._buffer("y", (len(frames), channels, height + 2 * search, width + 2 * search))
        z_frames = self._buffer("z", (len(frames), channels, height + 2 * (search + radius), width + 2 * (search + radius)))
        _pad_planar(stacked, identity, search, y_frames)
        _pad_planar(stacked, transform, search + radius, z_frames)
        bands = (height + BAND_ROWS - 1) // BAND_ROWS
        widest = width + search
        scratch = Scratch(
            self._buffer("accumulators", (bands, channels + 2, BAND_ROWS, width)),
            self._buffer("ring", (bands, 2 * radius + 1, widest + 2 * radius)),
            self._buffer("column_sums", (bands, widest + 2 * radius)),
            self._buffer("weights", (bands, widest)),
        )
        output = np.empty((height, width, channels), dtype=np.float32)
        scale = np.float32((255.0 / params.h) ** 2 / (channels * (2 * radius + 1) ** 2))
        exponential, center_max = params.weighting == "exponential", params.center_weight == "max"
        _denoise(z_frames, y_frames, center, search, radius, scale, exponential, center_max, scratch, output)
        return output
