"""The CPUs this process may run on: what thread pools and encoders size themselves by."""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def free_cores() -> int:
    """Return the CPUs this process may run on (its affinity: a container's or ``taskset``'s share), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def let_idle_threads_sleep() -> None:
    """Have numba's OpenMP threads sleep between launches, unless the user set OMP_WAIT_POLICY.

    libgomp lets idle threads spin by default: on a machine shared with other work (a batch's other
    workers, the encoder's threads, another process) they spin on cores that work needs. Read once,
    when numba's pool starts: call before a process's first parallel launch (engine.cpu.threads says
    what was measured).
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def compiled_module(name: str, package: str) -> ModuleType:
    """Return the module of numba kernels ``name`` (relative to ``package``), imported, numba with it, at first use.

    Its idle threads sleep (``let_idle_threads_sleep``); importing numba takes a few tenths of a
    second that commands which filter nothing on the CPU do not pay.
    """
    let_idle_threads_sleep()
    return importlib.import_module(name, package)
