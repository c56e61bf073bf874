"""Shared fixtures: the backends under test (seeded clips and the real-clip crops are in clips.py).

GPU tests carry the marker ``gpu`` and are skipped, with the reason, where CuPy or a CUDA
device is missing. Qt runs offscreen.
"""

from __future__ import annotations

import os

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
