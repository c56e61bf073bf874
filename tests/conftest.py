"""Shared fixtures: the backends under test (seeded clips and the real-clip crops are in clips.py).

GPU tests carry the marker ``gpu`` and are skipped, with the reason, where CuPy or a CUDA
device is missing. Qt runs offscreen.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from nlmeans_studio.engine import gpu_unavailable_reason

# (backend, method) pairs every exactness test runs on; GPU pairs skip without a device.
BACKEND_METHODS = [
    pytest.param(("cpu", "fused"), id="cpu-fused"),
    pytest.param(("cpu", "cascade"), id="cpu-cascade"),
    pytest.param(("gpu", "fused"), id="gpu-fused", marks=pytest.mark.gpu),
    pytest.param(("gpu", "cascade"), id="gpu-cascade", marks=pytest.mark.gpu),
]


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (-n), the controller fills numba's cache with the CPU filters before the
    workers start: in a fresh clone every worker compiled them at once (1-2 minutes of every core)."""
    if config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):
        import numpy as np

        from nlmeans_studio.engine import compile_cpu_filter, denoise_volume

        compile_cpu_filter()
        denoise_volume(np.zeros((8, 8, 8), np.float32), h=1.0, search_radius=1, backend="cpu")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"no GPU: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(params=BACKEND_METHODS)
def backend_method(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param


@pytest.fixture
def started_processes():
    """Processes a test starts, each in a session of its own: ended with all they started, whatever the test did."""
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # whatever of its session is left
        process.wait(timeout=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
