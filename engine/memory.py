"""Room in memory for a CPU run.

One that cannot fit stops before it starts, saying how much it needs and what to lower; memory that
runs out mid-run says what to lower too.

Under an address-space limit (``ulimit -v``, RLIMIT_AS) a run that outgrows it failed wherever
its next mapping happened: loading numba's LLVM ("Could not find/load shared object file"),
FFmpeg's threads ("Resource temporarily unavailable"), numba's pool of threads (libgomp exits,
or the run never ends), a NumPy array, or LLVM while it compiles (an abort). Each new thread
mapped its stack and a malloc arena, 72 MB of address space and little of it memory: numba's
pool, one thread a CPU, was most of what a run mapped. Under a limit the threads now share the
arenas (8 MB a thread), and a run that still cannot fit is refused with both sizes. Measured on
Linux x86-64 with numba 0.68: numba and LLVM loaded, 171 MB; a compile, 63 MB more than loading
the cached filter. Where there is no such limit (or no Linux /proc), nothing is checked, and
only a MemoryError that comes is turned into one that says what to lower
(``says_what_to_lower``, ``out_of_memory``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from .cores import free_cores

NUMBA_BYTES = 180 << 20  # numba and its LLVM, loaded
PYAV_BYTES = 100 << 20  # PyAV and FFmpeg's libraries, loaded (98 MB measured)
COMPILE_BYTES = 96 << 20  # LLVM while it compiles the filter
M_ARENA_MAX = -8  # glibc's mallopt parameter: the most malloc arenas
DEFAULT_STACK_BYTES = 8 << 20  # a thread's stack where RLIMIT_STACK is unlimited
THREAD_FAILED = "can't start new thread"  # CPython's RuntimeError where a thread's stack finds no room
P, R = ParamSpec("P"), TypeVar("R")
# What a CPU run can lower, said where memory runs out mid-run (its filter's threads, its input)
CPU_WAYS = "use fewer threads (NUMBA_NUM_THREADS, one a CPU by default) or a smaller input"


class ShortOfMemoryError(MemoryError):
    """Memory too short for a run; the message says how much or where, and what to lower."""


def address_space() -> tuple[int, int] | None:
    """(bytes mapped now, the limit) under RLIMIT_AS, or None where there is no limit."""
    if not sys.platform.startswith("linux"):
        return None
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    with open("/proc/self/status") as status:
        mapped = re.search(r"VmSize:\s+(\d+) kB", status.read())
    return None if mapped is None else (int(mapped.group(1)) << 10, limit)


def thread_bytes() -> int:
    """Address space a new thread maps once the arenas are shared (``share_malloc_arenas``).

    Its stack, which glibc sizes by RLIMIT_STACK.
    """
    import resource

    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    return DEFAULT_STACK_BYTES if stack == resource.RLIM_INFINITY else stack


def share_malloc_arenas() -> None:
    """Under an address-space limit, have new threads share glibc's malloc arenas.

    Instead of reserving 64 MB of address space each: that space is what the run's arrays need. The
    filters' threads hardly call malloc, so they do not wait on each other for it.
    """
    if address_space() is None:
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # not glibc: no per-thread arenas to share
        ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, 1)


def pool_threads() -> int:
    """Threads numba's pool has yet to start.

    NUMBA_NUM_THREADS, else one a CPU this process may run on (numba's default); 0 once the pool
    runs.
    """
    if "numba" in sys.modules:
        import numba

        try:
            numba.threading_layer()  # ValueError until the pool is started
        except ValueError:
            return numba.config.NUMBA_NUM_THREADS
        return 0
    configured = os.environ.get("NUMBA_NUM_THREADS", "")
    return int(configured) if configured.isdigit() and int(configured) > 0 else free_cores()


def says_what_to_lower(ways: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a function so that memory running out in it raises ``out_of_memory(error, ways)`` instead.

    Running out: a MemoryError, numba's SystemError for one in its threads, or a thread that cannot
    start (no room for its stack).
    """

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def wrapped(*arguments: P.args, **options: P.kwargs) -> R:
            try:
                return function(*arguments, **options)
            except ShortOfMemoryError:
                raise
            except MemoryError as error:
                raise out_of_memory(error, ways) from error
            except SystemError as error:  # numba's, for a MemoryError in its threads
                if not isinstance(error.__cause__, MemoryError):
                    raise
                raise out_of_memory(error.__cause__, ways) from error
            except RuntimeError as error:
                if str(error) != THREAD_FAILED:
                    raise
                raise out_of_memory(error, ways) from error

        return wrapped

    return decorate


def out_of_memory(error: BaseException, ways: str) -> ShortOfMemoryError:
    """Return the error for one that came mid-run, saying what to lower: ``ways`` ("crop the volume").

    Mid-run: past ``require_cpu_room``'s estimate, or with no limit at all.
    """
    flags = " or ".join(f"ulimit -{flag}" for flag in limited_flags())
    last = f"raise the limit ({flags})" if flags else "close other programs"
    what = f" ({error})" if str(error) else ""  # an import that finds no room says nothing
    return ShortOfMemoryError(f"out of memory{what}; {ways}, or {last}")


def limited_flags() -> list[str]:
    """Return the ``ulimit`` flags of the memory limits set on this process.

    "v" (address space), "d" (data: the heap and every private writable mapping, thread stacks too).
    """
    if not sys.platform.startswith("linux"):
        return []
    import resource

    limits = {"v": resource.RLIMIT_AS, "d": resource.RLIMIT_DATA}
    return [flag for flag, limit in limits.items() if resource.getrlimit(limit)[0] != resource.RLIM_INFINITY]


def require_cpu_room(data_bytes: int, *, compiles: Callable[[], bool], smaller: str | None = None) -> None:
    """ShortOfMemoryError where the run would not fit the process's address-space limit.

    Raised before the CPU filter loads or starts its threads. The run needs ``data_bytes`` of
    arrays, numba with LLVM (and a compile, where ``compiles()``, which loads numba, says so),
    numba's pool of threads. ``smaller`` names another way to need less ("crop the volume"). Where
    there is a limit, new threads share malloc's arenas from now on, and numba is loaded (to tell
    whether it compiles).

    Raises
    ------
    ShortOfMemoryError
        The run would not fit; the message gives both sizes and what to lower.
    """
    if address_space() is None:
        return
    share_malloc_arenas()  # before numba's threads start
    if "numba" not in sys.modules:
        _require(data_bytes + NUMBA_BYTES, pool_threads(), smaller)
    compiling = compiles()  # loads numba
    _require(data_bytes + (COMPILE_BYTES if compiling else 0), pool_threads(), smaller)


def require_room(nbytes: int) -> None:
    """Raise ShortOfMemoryError where ``nbytes`` more would not fit the process's address-space limit.

    Nothing is checked where there is no limit. For libraries loaded on first use (PyAV's), whose
    mapping under the limit otherwise fails as if they were missing.
    """
    _require(nbytes, 0, None)


def _require(fixed_bytes: int, threads: int, smaller: str | None) -> None:
    """ShortOfMemoryError unless ``fixed_bytes`` and ``threads`` new threads fit the limit now."""
    space = address_space()
    if space is None:
        return
    mapped, limit = space
    left, per_thread = limit - mapped, thread_bytes()
    needed = fixed_bytes + threads * per_thread
    if needed <= left:
        return
    fitting = (left - fixed_bytes) // per_thread
    ways = [smaller] if smaller else []
    if 1 <= fitting < threads:
        ways.insert(0, f"use fewer threads: NUMBA_NUM_THREADS={fitting} ({threads} now, {per_thread >> 20} MB each)")
    ways.append("raise the limit (ulimit -v)")
    raise ShortOfMemoryError(
        f"not enough memory for this run: it needs about {needed >> 20} MB of address space, and "
        f"{max(left, 0) >> 20} MB are left under this process's limit of {limit >> 20} MB; " + ", or ".join(ways)
    )
