"""The volume filter on the CPU, compiled with numba.

Per offset pair, separable box sums and weight symmetry over the whole slab.

For each offset q of half the window (q > 0 in (z, y, x) order), the squared difference
||V(s) - V(s + q)||^2 is box-summed over the patch for every s the two offsets +q and -q need
(the slab's voxels and the slab shifted by -q), in three separable passes, each parallel over
planes: y (``_row_sums``), then z and x with the weight (``_weight_planes``, reusing the video
filter's ``weights_row``), then each voxel p takes w(p, q) V(p + q) and w(p - q, q) V(p - q)
(``_accumulate_planes``, reusing ``accumulate_row`` with its relative exponential weights).
Box sums are direct sums of 2B + 1 terms, never running sums: no drift, whatever the slab.
Each launch's threads do their own run of planes, then help the others with theirs
(``cpu.shared_work``): beside other work, a thread on a busy core does fewer, and the launch
does not wait for its equal share.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numba
import numpy as np

from ..cpu.compiled import in_numba_cache
from ..cpu.fastmath import FASTMATH
from ..cpu.launches import parallel_turn
from ..cpu.shared_work import shared_runs, take
from ..cpu.weighted_rows import NO_EXPONENT, accumulate_row, center_weight, weights_row
from .params import VolumeParams


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH, nogil=True)
def _row_sums(padded, offset, low, patch, pad, workers, out):
    """out[k, j, i] = sum over dy and channels of (V(s + d) - V(s + q + d))^2, over the patch's rows.

    Summed over the patch's rows, for s = low + (k - Bz, j, i - Bx) (slab coordinates).
    """
    planes, rows, columns = out.shape
    channels = padded.shape[1]
    qz, qy, qx = offset
    bz, by, bx = patch
    span = 2 * by + 1
    x = pad[2] + low[2] - bx
    runs = shared_runs(planes, workers)
    for me in numba.prange(workers):
        squared = np.empty((rows + 2 * by, columns), dtype=np.float32)
        k = take(runs, me)
        while k >= 0:
            z = pad[0] + low[0] - bz + k
            squared[:] = 0
            for r in range(rows + 2 * by):
                y = pad[1] + low[1] - by + r
                target = squared[r]
                for channel in range(channels):
                    here = padded[z, channel, y, x : x + columns]
                    there = padded[z + qz, channel, y + qy, x + qx : x + qx + columns]
                    for i in range(columns):
                        difference = here[i] - there[i]
                        target[i] += difference * difference
            for j in range(rows):
                target = out[k, j]
                target[:] = squared[j]
                for dy in range(1, span):
                    source = squared[j + dy]
                    for i in range(columns):
                        target[i] += source[i]
            k = take(runs, me)


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH, nogil=True)
def _weight_planes(row_sums, patch, scale, exponential, relative, workers, out):
    """out[k, j] = the weights (u where ``relative``) of the z- then x-box sums of ``row_sums``."""
    planes, rows, columns = out.shape
    bz, bx = patch[0], patch[2]
    runs = shared_runs(planes, workers)
    for me in numba.prange(workers):
        sums = np.empty(columns + 2 * bx, dtype=np.float32)
        exponents = np.empty(columns, dtype=np.int32)
        k = take(runs, me)
        while k >= 0:
            for j in range(rows):
                sums[:] = row_sums[k, j]
                for dz in range(1, 2 * bz + 1):
                    source = row_sums[k + dz, j]
                    for i in range(sums.shape[0]):
                        sums[i] += source[i]
                weights_row(sums, bx, scale, exponential, relative, exponents, out[k, j])
            k = take(runs, me)


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH, nogil=True)
def _accumulate_planes(weights, values, offset, low, pad, center_max, relative, workers, accumulators):
    """Each voxel p of the slab takes w(p, q) V(p + q) and w(p - q, q) V(p - q), V the padded ``values``."""
    planes, _, rows, columns = accumulators.shape
    qz, qy, qx = offset
    runs = shared_runs(planes, workers)
    for me in numba.prange(workers):
        factors = np.empty((2, columns), dtype=np.float32)
        exponents = np.empty(columns, dtype=np.int32)
        z = take(runs, me)
        while z >= 0:
            plane = accumulators[z]
            for y in range(rows):
                here = weights[z - low[0], y - low[1], -low[2] : -low[2] + columns]
                accumulate_row(
                    here,
                    values,
                    pad[0] + z + qz,
                    pad[1] + y + qy,
                    pad[2] + qx,
                    plane,
                    y,
                    center_max,
                    relative,
                    factors,
                    exponents,
                )
                there = weights[z - qz - low[0], y - qy - low[1], -qx - low[2] : -qx - low[2] + columns]
                accumulate_row(
                    there,
                    values,
                    pad[0] + z - qz,
                    pad[1] + y - qy,
                    pad[2] - qx,
                    plane,
                    y,
                    center_max,
                    relative,
                    factors,
                    exponents,
                )
            z = take(runs, me)


@numba.njit(cache=True, parallel=True, fastmath=FASTMATH, nogil=True)
def _finish(accumulators, values, pad, center_max, relative, workers, out):
    """Compute out = (numerator + w_centre V(p)) / (denominator + w_centre), (Z, Y, X, C), V the padded ``values``."""
    planes, rows, columns, channels = out.shape
    runs = shared_runs(planes, workers)
    for me in numba.prange(workers):
        z = take(runs, me)
        while z >= 0:
            for y in range(rows):
                for x in range(columns):
                    largest, least = accumulators[z, channels + 1, y, x], accumulators[z, channels + 2, y, x]
                    weight = center_weight(largest, least, center_max, relative)
                    inverse = np.float32(1.0) / (accumulators[z, channels, y, x] + weight)
                    for channel in range(channels):
                        voxel = values[pad[0] + z, channel, pad[1] + y, pad[2] + x]
                        out[z, y, x, channel] = (accumulators[z, channel, y, x] + weight * voxel) * inverse
            z = take(runs, me)


def compiled() -> bool:
    """Whether the filter is compiled, in this process or numba's cache (``engine.filter_compiles``)."""
    return in_numba_cache(_row_sums, _weight_planes, _accumulate_planes, _finish)


def half_window(search: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """Return the offsets q > 0 (lexicographic in z, y, x) of the window: each serves +q and -q."""
    ranges = (range(-a, a + 1) for a in search)
    return [q for q in itertools.product(*ranges) if q > (0, 0, 0)]


def filter_padded_cpu(
    padded: np.ndarray,
    params: VolumeParams,
    on_offset: Callable[[int, int], None] | None = None,
    values: np.ndarray | None = None,
) -> np.ndarray:
    """Filter the planes of a padded slab ((planes + 2 pz, C, Yp, Xp), engine/volume/denoise.py): (planes, Y, X, C).

    The weights come from ``padded``'s patches; the voxels they average are ``values`` (of
    ``padded``'s shape: the squared magnitudes, for Rician noise), or ``padded``'s own where None.
    ``on_offset`` is called with (offset pairs done, offset pairs in all) after each pair.
    """
    values = padded if values is None else values
    pad = params.pad
    planes, channels = padded.shape[0] - 2 * pad[0], padded.shape[1]
    rows, columns = padded.shape[2] - 2 * pad[1], padded.shape[3] - 2 * pad[2]
    size = (planes, rows, columns)
    patch = params.patch_radius
    scale = np.float32(params.patch_sum_scale(channels))
    relative = params.exponential and params.center_max
    accumulators = np.zeros((planes, channels + 3, rows, columns), dtype=np.float32)
    if relative:
        accumulators[:, channels + 1 :] = NO_EXPONENT  # r and u_min
    search = params.search_radius
    most = [n + a for n, a in zip(size, search, strict=True)]
    row_buffer = np.empty((most[0] + 2 * patch[0]) * most[1] * (most[2] + 2 * patch[2]), dtype=np.float32)
    weight_buffer = np.empty(most[0] * most[1] * most[2], dtype=np.float32)
    pad_array = np.array(pad, dtype=np.int64)
    patch_array = np.array(patch, dtype=np.int64)
    offsets = half_window(search)
    workers = numba.get_num_threads()  # this thread's launches' (cpu.threads), each sharing its planes
    for done, offset in enumerate(offsets, 1):
        low = np.array([min(0, -q) for q in offset], dtype=np.int64)
        extent = [n + abs(q) for n, q in zip(size, offset, strict=True)]
        row_shape = (extent[0] + 2 * patch[0], extent[1], extent[2] + 2 * patch[2])
        row_sums = row_buffer[: np.prod(row_shape)].reshape(row_shape)
        weights = weight_buffer[: np.prod(extent)].reshape(extent)
        offset_array = np.array(offset, dtype=np.int64)
        with parallel_turn():
            _row_sums(padded, offset_array, low, patch_array, pad_array, workers, row_sums)
            _weight_planes(row_sums, patch_array, scale, params.exponential, relative, workers, weights)
            _accumulate_planes(
                weights, values, offset_array, low, pad_array, params.center_max, relative, workers, accumulators
            )
        if on_offset is not None:
            on_offset(done, len(offsets))
    out = np.empty((*size, channels), dtype=np.float32)
    with parallel_turn():
        _finish(accumulators, values, pad_array, params.center_max, relative, workers, out)
    return out
