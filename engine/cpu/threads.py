"""How many of numba's threads a CPU filter's call uses, and that idle ones sleep rather than spin.

numba's pool holds NUMBA_NUM_THREADS threads (one a CPU this process may run on, by default),
fixed when it starts; a call may use fewer (``numba.set_num_threads``, which holds for the
launches of the thread that sets it). numba gives each thread one equal run of a ``prange``
loop's iterations, on every threading layer (numba 0.68: ``parallel_chunksize`` and
OMP_SCHEDULE changed no thread's share, with one iteration millions of times slower than the
rest): a thread on a core that another process keeps busy finishes last, and the launch
waits for it. Fewer threads do not help there (one thread does all the work alone), but they
leave cores to the other work. The volume filter's threads take planes as they finish one
instead (``cpu.shared_work``), so its launches wait for a plane, not for a share.

numba's OpenMP layer (libgomp, where it loads) lets idle threads spin between launches, and a
filter launches three loops an offset pair: on a machine shared with other work they spin on
cores that work needs, and beside a process busy on one core the call itself took longer
spinning than sleeping. Unless the user set OMP_WAIT_POLICY, they sleep (passive), set before
numba's pool starts (scripts/bench_cpu_threads.py measures both, idle and beside a process
spinning on one core).
"""

from __future__ import annotations

import contextlib
import numbers
from collections.abc import Iterator

import numba

from ..cores import free_cores, let_idle_threads_sleep


def threads_available() -> int:
    """Return the most threads a call may use: numba's pool (NUMBA_NUM_THREADS, one a CPU by default)."""
    return int(numba.config.NUMBA_NUM_THREADS)


def preview_threads() -> int:
    """Return the threads an interactive preview filters on: the free cores but one, left to the window.

    At least 1 and at most numba's pool. A preview the window waits for is small work (a few tenths
    of a second); the core left free keeps the window drawing and answering while it runs.
    """
    return max(1, min(threads_available(), free_cores() - 1))


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
    """Run this thread's numba launches inside on ``threads`` threads (None: all of the pool's).

    OpenMP's idle threads sleep unless OMP_WAIT_POLICY says otherwise (module docstring); the
    thread count in force before is restored on leaving.
    """
    let_idle_threads_sleep()  # before numba's pool starts (next line)
    before = numba.get_num_threads()
    numba.set_num_threads(threads_available() if threads is None else threads)
    try:
        yield
    finally:
        numba.set_num_threads(before)
