"""Splitting work along one axis into ranges with halos, filtering them apart, stitching the result.

A volume splits along z into slabs, each read with a halo of Az + Bz planes on either side
(mirrored at the volume's ends: engine/volume/denoise.py's ``padded_volume`` makes a slab's
padded planes when the slab is filtered, so the whole volume is never padded at once),
filtered, and written into its planes of the output: the union equals one pass, since every
output voxel sees exactly the voxels it would in one pass. Several filters (one per GPU) take
the slabs in turn, concurrently. (A video over several GPUs is dealt in chunks of frames
instead: ``video_devices``.)
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
from collections.abc import Callable, Sequence

import numpy as np

SlabFilter = Callable[[np.ndarray, object], np.ndarray]  # (padded slab, params) -> (planes, Y, X, C) float32
SlabReader = Callable[[int, int], np.ndarray]  # output planes [start, stop) -> the padded planes they read


def split_range(length: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous ranges covering [0, length), sizes differing by at most one (none empty)."""
    parts = max(1, min(parts, length))
    bounds = [length * k // parts for k in range(parts + 1)]
    return list(itertools.pairwise(bounds))


def filter_in_slabs(
    read_slab: SlabReader,
    shape: tuple[int, int, int, int],
    params: object,
    slabs: int,
    filters: Sequence[SlabFilter],
    progress: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """Filter a (Z, Y, X, C) volume in at least ``slabs`` slabs along z (at least one per filter),
    the filters running concurrently, each slab read when its filter takes it; stitched output.

    ``read_slab(z0, z1)`` gives the padded planes output planes [z0, z1) read, halos included.
    """
    planes = shape[0]
    ranges = split_range(planes, max(slabs, len(filters)))
    output = np.empty(shape, dtype=np.float32)
    done, lock = [0], threading.Lock()

    def run(worker: int) -> None:
        for start, stop in ranges[worker :: len(filters)]:
            output[start:stop] = filters[worker](read_slab(start, stop), params)
            with lock:
                done[0] += stop - start
                if progress is not None:
                    progress(done[0], planes)

    if len(filters) == 1:
        run(0)
        return output
    with concurrent.futures.ThreadPoolExecutor(len(filters)) as pool:
        for future in [pool.submit(run, worker) for worker in range(len(filters))]:
            future.result()
    return output
