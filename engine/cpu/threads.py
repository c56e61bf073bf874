"""How many of numba's threads a CPU filter's call uses, and how its parallel loops share the work.

numba's pool holds NUMBA_NUM_THREADS threads (one a CPU this process may run on, by default),
fixed when it starts; a call may use fewer (``numba.set_num_threads``, which holds for the
launches of the thread that sets it). numba splits a ``prange`` loop into one equal run of
iterations a thread: where another process keeps one core busy, the thread that shares it
finishes its run last, at about half speed, and every launch waits for it. Chunks of
LOOP_CHUNK iterations (planes, in the volume's filter) are instead taken by whichever thread is
free, so that a thread on a busy core does only what it can. numba's OpenMP layer (libgomp, where it
loads) lets idle threads spin between launches, and a filter launches three loops an offset
pair: on a machine shared with other work they spun on cores others needed. Unless the user set
OMP_WAIT_POLICY, they sleep (passive), set before numba's pool starts. Together the call took
0.98-1.37 times its idle time beside a process spinning on one of 2 cores, against 1.6-3.0 with
either alone (scripts/bench_volume_threads.py, two runs on a loaded 2-core machine: the figures spread).
"""

from __future__ import annotations

import contextlib
import numbers
import os
from collections.abc import Iterator

import numba

LOOP_CHUNK = 1  # iterations a thread takes at a time from a parallel loop: one plane of a slab


def threads_available() -> int:
    """Return the most threads a call may use: numba's pool (NUMBA_NUM_THREADS, one a CPU by default)."""
    return int(numba.config.NUMBA_NUM_THREADS)


def check_threads(threads: object) -> int | None:
    """Return ``threads`` as an int (None stays None), or ValueError unless it is in 1..``threads_available()``."""
    if threads is None:
        return None
    most = threads_available()
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or not 1 <= threads <= most:
        raise ValueError(
            f"threads must be an integer in 1..{most} (numba's pool: NUMBA_NUM_THREADS, one a CPU by default), "
            f"got {threads!r}"
        )
    return int(threads)


@contextlib.contextmanager
def cpu_threads(threads: int | None) -> Iterator[None]:
    """Run this thread's numba launches inside on ``threads`` threads (None: all of the pool's), in chunks.

    The parallel loops are handed out LOOP_CHUNK iterations at a time, and OpenMP's idle threads
    sleep unless OMP_WAIT_POLICY says otherwise (module docstring); the thread count and the
    chunks in force before are restored on leaving.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read once, when numba's pool starts (next line)
    before = numba.get_num_threads()
    numba.set_num_threads(threads_available() if threads is None else threads)
    try:
        with numba.parallel_chunksize(LOOP_CHUNK):
            yield
    finally:
        numba.set_num_threads(before)
