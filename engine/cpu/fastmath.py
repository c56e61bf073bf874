"""The fastmath flags every numba kernel of the engine is compiled with: those that change no result.

numba compiles a kernel once a machine and loads it from its cache after; the code it runs the
first time (compiled in the process) and the code it loads later are optimised apart. Flags that
let the compiler reorder or fuse arithmetic ("reassoc", "contract", "arcp", "afn", or
``fastmath=True``) then give the first run other roundings than every later one: 1,067 of 11.5
million samples one level apart in a 10-bit export. Without them every run of the same command
writes the same bits. The kernels' inputs are checked finite, so the flags kept change nothing.
"""

from __future__ import annotations

FASTMATH = {"nnan", "ninf", "nsz"}  # a set: numba refuses a frozenset ("either a bool, dict or set")
