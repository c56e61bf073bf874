"""The runs a parallel launch's threads share (engine/cpu/shared_work.py): every item done once."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from nlmeans_studio.engine.cpu.shared_work import shared_runs, take


@numba.njit(parallel=True)
def _count_items(items, workers, counts):
    runs = shared_runs(items, workers)
    for me in numba.prange(workers):
        item = take(runs, me)
        while item >= 0:
            counts[item] += 1
            item = take(runs, me)


@pytest.mark.parametrize(("items", "workers"), [(0, 3), (1, 4), (5, 8), (97, 1), (97, 2), (1000, 7)])
def test_every_item_is_taken_once_whatever_the_threads(items, workers) -> None:
    """More workers than numba's threads too: a thread that starts late finds its run taken."""
    counts = np.zeros(items, np.int64)
    for _ in range(3):
        _count_items(items, workers, counts)
    assert np.all(counts == 3)


def test_the_runs_are_equal_and_in_order() -> None:
    runs = shared_runs(10, 4)
    assert [(runs[8 * run], runs[8 * run + 1]) for run in range(4)] == [(0, 2), (2, 5), (5, 7), (7, 10)]
