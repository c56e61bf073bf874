"""How many threads the window's CPU preview filters on: the cores of the process's affinity but one."""

from __future__ import annotations

import pytest

from nlmeans_studio.engine import cores as cores_module
from nlmeans_studio.engine.cpu import threads


@pytest.mark.parametrize(
    ("cores", "pool", "expected"), [({0, 1}, 2, 1), ({0}, 2, 1), ({0, 1, 2, 3}, 8, 3), ({4, 5, 6}, 2, 2)]
)
def test_the_preview_leaves_one_free_core_to_the_window(monkeypatch, cores, pool, expected) -> None:
    # A container or taskset gives the process fewer cores than the machine has (os.cpu_count).
    monkeypatch.setattr(cores_module.os, "sched_getaffinity", lambda pid: cores, raising=False)
    monkeypatch.setattr(threads, "threads_available", lambda: pool)  # numba's pool caps it
    assert cores_module.free_cores() == len(cores)
    assert threads.preview_threads() == expected
