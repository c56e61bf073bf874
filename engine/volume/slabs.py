"""Splitting work along one axis into ranges with halos, filtering them apart, stitching the result.

A volume splits along z into slabs, each read with a halo of Az + Bz planes on either side
(mirrored at the volume's ends), filtered, and written into its planes of the output: the union
equals one pass, since every output voxel sees exactly the voxels it would in one pass. Several
runners (one per GPU) take the slabs in turn, concurrently (``run_in_slabs``). On the CPU a
runner reads each next slab (engine/volume/denoise.py's ``padded_volume``, on a thread) while
it filters the current one (``filter_in_slabs``); on the GPU it uploads the slab's own planes
and mirrors them there (engine/volume/filter_gpu.py's ``SlabPipeline``).
(A video over several GPUs is dealt in chunks of frames instead: engine/video/several_gpus.py.)
"""

from __future__ import annotations

import concurrent.futures
import itertools
import math
import threading
from collections.abc import Callable, Sequence

import numpy as np

# (padded slab, params, the volume's plane that is the slab's first) -> (planes, Y, X, C) float32
SlabFilter = Callable[[np.ndarray, object, int], np.ndarray]
SlabReader = Callable[[int, int], np.ndarray]  # output planes [start, stop) -> the padded planes they read
Finished = Callable[[int, int], None]  # output planes [start, stop) are written
# (its ranges of output planes, the (Z, Y, X, C) output, finished) -> None, having written them
SlabRunner = Callable[[Sequence[tuple[int, int]], np.ndarray, Finished], None]


def split_range(length: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous ranges covering [0, length), sizes differing by at most one (none empty)."""
    parts = max(1, min(parts, length))
    bounds = [length * k // parts for k in range(parts + 1)]
    return list(itertools.pairwise(bounds))


def tapered_ranges(
    length: int, runners: int, *, least: int = 1, thinnest: int = 1, thickest: int | None = None, align: int = 4
) -> list[tuple[int, int]]:
    """Contiguous ranges covering [0, length), to be dealt to ``runners`` in turn.

    Each runner's slabs double in thickness from its first to its middle ones and halve again to its
    last (1, 2, .., 2^d, .., 2^d, .., 2, 1 units). A pipeline hides each slab's upload behind the
    GPU's work on the slab before and its download behind the slab after: only the first upload and
    the last download are waited for, and those slabs are the thinnest.

    The deepest ramp whose unit is at least ``thinnest`` planes, with as few middle slabs as give
    at least ``least`` ranges none thicker than ``thickest``; without a ramp, even ranges. Bounds
    fall on multiples of ``align`` (the tiled volume kernel's z tiles start on the volume's
    multiples of 4) where no range is then empty.
    """
    thickest = length if thickest is None else max(1, thickest)
    for depth in range(length.bit_length(), 0, -1):
        top = 1 << depth
        ramp = [1 << k for k in range(depth)]
        units = max(length * top / (runners * thickest), 2 * sum(ramp) + top)  # a runner's, for ``thickest``
        middle = max(math.ceil((units - 2 * sum(ramp)) / top), -(-least // runners) - 2 * depth, 1)
        weights = ramp + [top] * middle + ramp[::-1]
        if length / (runners * sum(weights)) < thinnest:
            continue
        dealt = [weight for weight in weights for _ in range(runners)]  # runner k takes ranges k, k + runners, ..
        exact = [length * sum(dealt[:k]) / sum(dealt) for k in range(len(dealt))]
        for step in (align, 1):
            bounds = [round(bound / step) * step for bound in exact] + [length]
            if all(low < high for low, high in itertools.pairwise(bounds)):
                return list(itertools.pairwise(bounds))
    return split_range(length, max(least, runners, -(-length // thickest)))


def run_in_slabs(
    shape: tuple[int, int, int, int],
    ranges: Sequence[tuple[int, int]],
    runners: Sequence[SlabRunner],
    progress: Callable[[int, int], None] | None = None,
    output: np.ndarray | None = None,
) -> np.ndarray:
    """Return a (Z, Y, X, C) float32 output written in the slabs of output planes ``ranges``.

    ``output`` where given, else a new one. At least one slab per runner, dealt to the runners in
    turn; each runner on a thread of its own.
    """
    planes = shape[0]
    output = np.empty(shape, dtype=np.float32) if output is None else output
    done, lock = [0], threading.Lock()

    def finished(start: int, stop: int) -> None:
        with lock:
            done[0] += stop - start
            if progress is not None:
                progress(done[0], planes)

    def run(worker: int) -> None:
        mine = ranges[worker :: len(runners)]
        if mine:  # else more runners than planes
            runners[worker](mine, output, finished)

    if len(runners) == 1:
        run(0)
        return output
    with concurrent.futures.ThreadPoolExecutor(len(runners)) as pool:
        for future in [pool.submit(run, worker) for worker in range(len(runners))]:
            future.result()
    return output


def filter_in_slabs(
    read_slab: SlabReader,
    shape: tuple[int, int, int, int],
    params: object,
    slabs: int,
    filters: Sequence[SlabFilter],
    progress: Callable[[int, int], None] | None = None,
    output: np.ndarray | None = None,
) -> np.ndarray:
    """Filter a (Z, Y, X, C) volume in at least ``slabs`` slabs along z, the filters running concurrently.

    At least one slab per filter; stitched into ``output`` (where given) or a new array.

    ``read_slab(z0, z1)`` gives the padded planes output planes [z0, z1) read, halos included.
    Each filter's slabs are read one ahead, on a thread of their own, while the filter works on
    the one before: at most two padded slabs per filter are held at a time.
    """

    def runner(slab_filter: SlabFilter) -> SlabRunner:
        def run(mine: Sequence[tuple[int, int]], output: np.ndarray, finished: Finished) -> None:
            with concurrent.futures.ThreadPoolExecutor(1) as reader:
                upcoming = reader.submit(read_slab, *mine[0])
                for index, (start, stop) in enumerate(mine):
                    slab = upcoming.result()
                    if index + 1 < len(mine):
                        upcoming = reader.submit(read_slab, *mine[index + 1])
                    output[start:stop] = slab_filter(slab, params, start)
                    del slab  # before the next is taken: two slabs at most
                    finished(start, stop)

        return run

    ranges = split_range(shape[0], max(slabs, len(filters)))
    return run_in_slabs(shape, ranges, [runner(slab_filter) for slab_filter in filters], progress, output)


def mirrored_indices(start: int, stop: int, size: int) -> np.ndarray:
    """Return indices start .. stop - 1 of an axis of ``size``, mirrored into it without repeating the edge.

    As np.pad mode="reflect", for start >= -(size - 1) and stop <= 2 size - 1.
    """
    wanted = np.abs(np.arange(start, stop))  # reflect below 0 ...
    return np.where(wanted >= size, 2 * (size - 1) - wanted, wanted)  # ... and past the end
