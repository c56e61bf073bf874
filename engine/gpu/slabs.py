"""Splitting work along one axis into ranges with halos, filtering them apart, stitching the result.

A volume splits along z into slabs, each read with a halo of Az + Bz planes on either side
(mirrored at the volume's ends: engine/volume/denoise.py's ``padded_volume`` makes a slab's
padded planes when the slab is filtered, so the whole volume is never padded at once),
filtered, and written into its planes of the output: the union equals one pass, since every
output voxel sees exactly the voxels it would in one pass. Several filters (one per GPU) take
the slabs in turn, concurrently; each filter's next slab is read (padded, on a CPU thread)
while it filters the current one, so that the host's padding hides behind the GPU's work.
(A video over several GPUs is dealt in chunks of frames instead: ``video_devices``.)
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
from collections.abc import Callable, Sequence

import numpy as np

# (padded slab, params, the volume's plane that is the slab's first) -> (planes, Y, X, C) float32
SlabFilter = Callable[[np.ndarray, object, int], np.ndarray]
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
    the filters running concurrently; stitched output.

    ``read_slab(z0, z1)`` gives the padded planes output planes [z0, z1) read, halos included.
    Each filter's slabs are read one ahead, on a thread of their own, while the filter works on
    the one before: at most two padded slabs per filter are held at a time.
    """
    planes = shape[0]
    ranges = split_range(planes, max(slabs, len(filters)))
    output = np.empty(shape, dtype=np.float32)
    done, lock = [0], threading.Lock()

    def run(worker: int) -> None:
        mine = ranges[worker :: len(filters)]
        if not mine:  # more filters than planes
            return
        with concurrent.futures.ThreadPoolExecutor(1) as reader:
            upcoming = reader.submit(read_slab, *mine[0])
            for index, (start, stop) in enumerate(mine):
                slab = upcoming.result()
                if index + 1 < len(mine):
                    upcoming = reader.submit(read_slab, *mine[index + 1])
                output[start:stop] = filters[worker](slab, params, start)
                del slab  # before the next is taken: two slabs at most
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
