"""Whether a CPU filter's first call compiles it, so that a run says so only when it does.

numba keeps what it compiles in an on-disk cache (``cache=True``), per machine and per version
of the code: only a first run, or the first after an update, waits for the compile (16-126 s
for the video filter on 2 cores, by how busy they are; as long for the volume's); every later run loads it in a
fraction of a second. Telling beforehand means reading numba's cache index, a peek at numba's internals: where
they have moved, no compile is announced, rather than a wrong one on every run.
"""

from __future__ import annotations

import logging
import pickle
import threading
from collections.abc import Callable
from typing import Any

# What a run says before a first frame that compiles (``engine.filter_compiles``): the wait is once.
COMPILING = "Compiling the CPU code, once for this machine: one to two minutes (later runs start at once)."
_LOGGER = logging.getLogger(__name__)
_ANNOUNCED = threading.Event()  # set once COMPILING has been logged: a process says it once
_ANNOUNCING = threading.Lock()  # one thread asks numba's cache and logs; the others wait and find it said


def announce_compile(compiles: Callable[[], bool]) -> None:
    """Log COMPILING (a warning of this module's logger), once per process, where ``compiles()`` says a filter will.

    For the Python API, which has no terminal to print on: logging's last-resort handler writes a
    warning to stderr where the program configured no logging. ``compiles`` is the filter's
    ``filter_compiles``; it is not asked again once the message has been logged.
    """
    with _ANNOUNCING:
        if not _ANNOUNCED.is_set() and compiles():
            _LOGGER.warning(COMPILING)
            _ANNOUNCED.set()


def silence_compile_notice() -> None:
    """Log no COMPILING in this process from now on: a command run with ``--quiet``."""
    _ANNOUNCED.set()


def in_numba_cache(*functions: Any) -> bool:
    """Whether each numba ``cache=True`` function is compiled in this process already, or its code is cached.

    Cached: its current code is in numba's cache for this machine. Its first call then compiles
    nothing.
    """
    for function in functions:
        try:
            if function.overloads:
                continue
            cache = function._cache
            current = cache._index_key((), function.targetctx.codegen())[1:]  # the machine, the code's hashes
            cached = cache._cache_file._load_index()  # empty where missing or stale (numba's own check)
        except (AttributeError, TypeError, OSError, EOFError, pickle.UnpicklingError):
            return True  # numba's internals moved, or NUMBA_DISABLE_JIT left plain functions
        if not any(key[1:] == current for key in cached):
            return False
    return True
