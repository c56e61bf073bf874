"""Shared fixtures: the backends under test (seeded clips and the real-clip crops are in clips.py).

GPU tests carry the marker ``gpu`` and are skipped, with the reason, where CuPy or a CUDA
device is missing. Qt runs offscreen.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from compile_kernels import GROUPS

from nlmeans_studio.engine import gpu_unavailable_reason

# (backend, method) pairs every exactness test runs on; GPU pairs skip without a device.
BACKEND_METHODS = [
    pytest.param(("cpu", "fused"), id="cpu-fused"),
    pytest.param(("cpu", "cascade"), id="cpu-cascade"),
    pytest.param(("gpu", "fused"), id="gpu-fused", marks=pytest.mark.gpu),
    pytest.param(("gpu", "cascade"), id="gpu-cascade", marks=pytest.mark.gpu),
]


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (-n), the controller fills numba's cache with every CPU kernel before the
    workers start, each group in a process of its own (compile_kernels.py): in a fresh clone every
    worker compiled each group itself, at once, when a test first needed it."""
    if config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):
        script = Path(__file__).with_name("compile_kernels.py")
        compiles = [
            subprocess.Popen([sys.executable, str(script), group], stderr=subprocess.PIPE, text=True)
            for group in GROUPS
        ]
        for process in compiles:
            _, error = process.communicate()
            if process.returncode:
                raise pytest.UsageError(f"compiling the CPU kernels failed:\n{error}")


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
