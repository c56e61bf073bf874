"""The CPUs this process may run on: what thread pools and encoders size themselves by."""

from __future__ import annotations

import os


def free_cores() -> int:
    """Return the CPUs this process may run on (its affinity: a container's or ``taskset``'s share), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1
