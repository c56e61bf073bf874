"""The fast CPU path: the pass cascade fused per tile of output pixels, compiled with numba.

Each tile (TILE_ROWS x TILE_COLUMNS pixels) is one parallel task. For every offset the tile
rolls down its rows once: the squared color difference of one new row enters a vertical running
sum (a ring of the last 2B+1 rows), the horizontal box sum of that running sum gives the patch
distances of a whole row, and the weights go straight into the tile's numerator and
denominator. Nothing but a few rows of scratch is written per offset. Within the centre frame
each weight serves +q and -q (the tile computes the distances over itself and itself shifted
by -q), so half the spatial offsets are visited, as in the cascade. Planar frames and
accumulators make every inner loop a contiguous one that LLVM vectorizes.

Exponential weights with the largest weight as the centre's are relative (DESIGN.md §1): the
row of weights holds u, and each pixel weighs by exp(-(u - r)) against a reference r that
follows the smallest u seen so far, u_min, lazily (online softmax): r is lowered, and the sums
rescaled by exp(-(r - u)), only where a u falls more than RESCALE_MARGIN below it, which after
the first offsets is rare, so most rows cost one exp as exponential weights do. The centre
weight is exp(-(u_min - r)), the largest weight; the ratios, and so the result, are those of
exp(-(u - u_min)). With the centre weight 1, u = 0 is the least from the start and the weights
are exp(-u) as they are. The row arithmetic, which the volume's CPU filter shares, is in
``engine/cpu/weighted_rows.py``.

The radii, h and the weighting are run-time arguments: the kernel compiles once per machine
(``cache=True``) and never again when the user moves a slider.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import NamedTuple

import numba
import numpy as np

from ...cpu.compiled import in_numba_cache
from ...cpu.fastmath import FASTMATH
from ...cpu.launches import parallel_turn
from ...cpu.shared_work import shared_runs, take
from ...cpu.weighted_rows import NO_EXPONENT, accumulate_row, center_weight, weights_row
from ...frames import to_float32
from ..params import NLMParams

TILE_ROWS, TILE_COLUMNS = 32, 256  # one parallel task; its rows of frames and sums stay in L2


@numba.njit(cache=True, inline="always")
def _mirror(coordinate, size):
    """Reflect without repeating the edge pixel (np.pad mode="reflect"): -1 -> 1."""
    if coordinate < 0:
        return -coordinate
    if coordinate >= size:
        return 2 * (size - 1) - coordinate
    return coordinate


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH, nogil=True)  # the GUI thread runs meanwhile
def _pad_planar(frames, transform, pad, out):
    """out[k, c] = (transform @ frames[k])[c], mirrored by ``pad``; frames are (K, H, W, C).

    An empty ``transform`` means the identity.
    """
    frame_count, height, width, channels = frames.shape
    padded_height = height + 2 * pad
    for task in numba.prange(frame_count * padded_height):
        frame, row = task // padded_height, task % padded_height
        source = frames[frame, _mirror(row - pad, height)]
        for channel in range(channels):
            target = out[frame, channel, row]
            if transform.size == 0:
                for col in range(width):
                    target[pad + col] = source[col, channel]
            else:
                for col in range(width):
                    total = np.float32(0.0)
                    for k in range(channels):
                        total += transform[channel, k] * source[col, k]
                    target[pad + col] = total
            for col in range(1, pad + 1):
                target[pad - col] = target[pad + col]
                target[pad + width - 1 + col] = target[pad + width - 1 - col]


@numba.njit(cache=True, fastmath=FASTMATH)
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


@numba.njit(cache=True, fastmath=FASTMATH)
def _denoise_tile(z_frames, y_frames, center, search, radius, scale, exponential, center_max, scratch, tile, output):
    """Fill one tile of TILE_ROWS x TILE_COLUMNS pixels of ``output`` (H, W, C); one parallel task."""
    frame_count, channels, padded_height, padded_width = y_frames.shape
    height, width = padded_height - 2 * search, padded_width - 2 * search
    pad = search + radius
    ring_rows = 2 * radius + 1
    tile_columns = (width + TILE_COLUMNS - 1) // TILE_COLUMNS
    first, stop = (tile // tile_columns) * TILE_ROWS, min(height, (tile // tile_columns + 1) * TILE_ROWS)
    begin, end = (tile % tile_columns) * TILE_COLUMNS, min(width, (tile % tile_columns + 1) * TILE_COLUMNS)
    span = end - begin
    accumulators, ring = scratch.accumulators[tile], scratch.ring[tile]  # contiguous: vectorizes
    factors, exponents = scratch.factors[tile], scratch.exponents[tile]
    numerator, denominator, largest = accumulators[:channels], accumulators[channels], accumulators[channels + 1]
    relative = exponential and center_max
    accumulators[:] = 0.0
    if relative:
        accumulators[channels + 1 :] = NO_EXPONENT  # r and u_min
    for frame in range(frame_count):
        same_frame = frame == center
        for qy in range(-search, search + 1):
            for qx in range(-search, search + 1):
                if same_frame and not (qy > 0 or (qy == 0 and qx > 0)):
                    continue
                # Distances over the tile, and for the centre frame also over the tile shifted
                # by -q, whose weights serve the offset -q.
                top, bottom, left, right = first, stop, begin, end
                if same_frame:
                    top, bottom = min(first, first - qy), max(stop, stop - qy)
                    left, right = min(begin, begin - qx), max(end, end - qx)
                columns = right - left
                sums = scratch.column_sums[tile, : columns + 2 * radius]
                row_weights = scratch.weights[tile, :columns]
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
                    weights_row(sums, radius, scale, exponential, relative, exponents[:columns], row_weights)
                    if first <= output_row < stop:
                        accumulate_row(
                            row_weights[begin - left : end - left],
                            y_frames,
                            frame,
                            search + output_row + qy,
                            search + begin + qx,
                            accumulators,
                            output_row - first,
                            center_max,
                            relative,
                            factors,
                            exponents[: end - begin],
                        )
                    mirrored_row = output_row + qy
                    if same_frame and first <= mirrored_row < stop:
                        accumulate_row(
                            row_weights[begin - qx - left : end - qx - left],
                            y_frames,
                            frame,
                            search + output_row,
                            search + begin - qx,
                            accumulators,
                            mirrored_row - first,
                            center_max,
                            relative,
                            factors,
                            exponents[: end - begin],
                        )
    for row in range(stop - first):
        for col in range(span):
            weight = center_weight(largest[row, col], accumulators[channels + 2, row, col], center_max, relative)
            inverse_total = np.float32(1.0) / (denominator[row, col] + weight)
            for channel in range(channels):
                pixel = y_frames[center, channel, search + first + row, search + begin + col]
                output[first + row, begin + col, channel] = (
                    numerator[channel, row, col] + weight * pixel
                ) * inverse_total


@numba.njit(cache=True, parallel=True, nogil=True)
def _denoise(z_frames, y_frames, center, search, radius, scale, exponential, center_max, scratch, workers, output):
    """Fill ``output`` (H, W, C) for the frames' centre, tile by tile on ``workers`` threads that share them.

    Each thread does its own run of tiles, then helps the others (``cpu.shared_work``): one on a
    core another process keeps busy does fewer.
    """
    runs = shared_runs(scratch.accumulators.shape[0], workers)
    for me in numba.prange(workers):
        tile = take(runs, me)
        while tile >= 0:
            _denoise_tile(
                z_frames, y_frames, center, search, radius, scale, exponential, center_max, scratch, tile, output
            )
            tile = take(runs, me)


def compiled() -> bool:
    """Whether the filter is compiled, in this process or numba's cache (``engine.filter_compiles``)."""
    return in_numba_cache(_pad_planar, _denoise)


class Scratch(NamedTuple):
    """Per-tile work memory of ``_denoise``, made once per frame size and reused."""

    accumulators: np.ndarray  # (tiles, C + 3, TILE_ROWS, TILE_COLUMNS): numerators, denominator, largest or r, u_min
    ring: np.ndarray  # (tiles, 2B + 1, TILE_COLUMNS + A + 2B): the rows of the vertical running sum
    column_sums: np.ndarray  # (tiles, TILE_COLUMNS + A + 2B)
    weights: np.ndarray  # (tiles, TILE_COLUMNS + A)
    factors: np.ndarray  # (tiles, 2, TILE_COLUMNS): a row's rescale factors and relative weights
    exponents: np.ndarray  # (tiles, TILE_COLUMNS + A), int32: the powers of two of a row's exp


class _ThreadBuffers(threading.local):
    """Each thread's own buffers by name: calls from several threads never share scratch."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}


class FusedCpuFilter:
    """The fused numba filter with its buffers, which it keeps between frames of one size.

    Its frames are the host frames as (H, W, C) float32 (``upload``); outputs are the same.
    The buffers are per thread, so that one filter may serve several threads at once.
    """

    backend, method = "cpu", "fused"

    def __init__(self) -> None:
        self._buffers = _ThreadBuffers()

    upload = staticmethod(to_float32)
    download = staticmethod(np.asarray)
    as_frame = staticmethod(np.asarray)  # outputs are (H, W, C) float32, as frames

    def _buffer(self, name: str, shape: tuple[int, ...], dtype: type = np.float32) -> np.ndarray:
        arrays = self._buffers.arrays
        buffer = arrays.get(name)
        if buffer is None or buffer.shape != shape:
            buffer = arrays[name] = np.empty(shape, dtype=dtype)
        return buffer

    def __call__(
        self,
        frames: Sequence[np.ndarray],
        center: int,
        params: NLMParams,
        guide: Sequence[np.ndarray] | None = None,
    ) -> np.ndarray:
        """Denoise ``frames[center]`` searching all of ``frames`` ((H, W, C) float32 each).

        Same contract as ``CascadeCpuFilter``, on interleaved host frames; the frames
        are the window's, truncated at the clip's ends. ``guide`` (frames of the same window
        and shape) gives the patch distances instead of ``frames``, which are averaged.
        """
        height, width, channels = frames[center].shape
        search, radius = params.search_radius, params.patch_radius
        identity = np.empty((0, 0), dtype=np.float32)
        transform = identity if params.color_transform is None else params.color_transform.astype(np.float32)
        y_frames = self._buffer("y", (len(frames), channels, height + 2 * search, width + 2 * search))
        z_frames = self._buffer(
            "z", (len(frames), channels, height + 2 * (search + radius), width + 2 * (search + radius))
        )
        distances = frames if guide is None else guide
        with parallel_turn():
            for index, frame in enumerate(frames):  # each frame padded into its slot, no stacked copy
                _pad_planar(frame[np.newaxis], identity, search, y_frames[index : index + 1])
                _pad_planar(distances[index][np.newaxis], transform, search + radius, z_frames[index : index + 1])
        tiles = -(-height // TILE_ROWS) * -(-width // TILE_COLUMNS)
        widest = min(width, TILE_COLUMNS) + search
        scratch = Scratch(
            self._buffer("accumulators", (tiles, channels + 3, TILE_ROWS, min(width, TILE_COLUMNS))),
            self._buffer("ring", (tiles, 2 * radius + 1, widest + 2 * radius)),
            self._buffer("column_sums", (tiles, widest + 2 * radius)),
            self._buffer("weights", (tiles, widest)),
            self._buffer("factors", (tiles, 2, min(width, TILE_COLUMNS))),
            self._buffer("exponents", (tiles, widest), np.int32),
        )
        output = np.empty((height, width, channels), dtype=np.float32)
        scale = np.float32(params.patch_sum_scale(channels))
        exponential, center_max = params.weighting == "exponential", params.center_weight == "max"
        workers = numba.get_num_threads()  # this thread's launches' (cpu.threads)
        with parallel_turn():
            _denoise(
                z_frames, y_frames, center, search, radius, scale, exponential, center_max, scratch, workers, output
            )
        return output
