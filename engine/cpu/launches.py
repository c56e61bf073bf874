"""The CPU filters' parallel numba launches, taking turns where numba's threading layer is not thread-safe.

numba runs ``parallel=True`` code on OpenMP or TBB where either loads, and otherwise on its own
"workqueue" layer (macOS wheels without libomp, slim Linux images without libgomp), which aborts
the whole process ("Terminating: Concurrent access has been detected") when two threads launch
parallel code at once: one Denoiser shared by a pool, or the window's preview beside an export.
There, launches take turns; elsewhere they run side by side.
"""

from __future__ import annotations

import contextlib
import threading

import numba

_TURNS = threading.Lock()


def parallel_turn() -> contextlib.AbstractContextManager[object]:
    """Return a context to launch parallel numba code in.

    This process's one turn where the threading layer is workqueue (or not chosen yet: the first
    launch chooses it), else no wait.
    """
    try:
        layer = numba.threading_layer()
    except ValueError:  # no launch yet
        layer = "workqueue"
    return _TURNS if layer == "workqueue" else contextlib.nullcontext()
