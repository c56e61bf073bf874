"""The window filters: one module per filter, one protocol they share, one table to choose from.

Every filter denoises the centre frame of a temporal window (DESIGN.md §1) and computes the
same result within float32 rounding:

=========  ==========  ==============================================================
backend    method      module
=========  ==========  ==============================================================
cpu        fused       ``fused_cpu``: numba, the cascade fused per tile of pixels
cpu        cascade     ``cascade``: the paper's pass cascade as NumPy array code
gpu        fused       ``fused_gpu``: one CUDA kernel for the whole window (``nlm.cu``)
gpu        cascade     ``cascade_gpu``: one CUDA kernel per pass and offset (``cascade.cu``)
=========  ==========  ==============================================================

``fused_layout`` plans the fused GPU kernel's tiles in pure Python. The volume's 3D filters are
``engine.volume.filter_cpu`` and ``filter_gpu``; what the CPU filters of both share (numba's
cache, parallel launches, the row arithmetic) is in ``engine.cpu``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ...backend import resolve_backend
from ..params import NLMParams

METHODS = ("fused", "cascade")  # the first is the default


class WindowFilter(Protocol):
    """A filter of the table.

    Frames go to its device with ``upload``, windows of uploaded frames are filtered by calling it,
    and outputs come back with ``download`` (or, with ``as_frame``, stay on its device as frames to
    filter again).
    """

    backend: str
    method: str

    def upload(self, frame: np.ndarray) -> Any:
        """Upload a checked (H, W, C) host frame (uint8, uint16 or float32) -> the filter's own frame."""

    def __call__(
        self, window: Sequence[Any], center: int, params: NLMParams, guide: Sequence[Any] | None = None
    ) -> Any:
        """Denoise ``window[center]`` searching ``window`` (uploaded frames, truncated at the clip's ends).

        ``guide``, the same window of another clip, gives the patch distances instead.
        """

    def download(self, output: Any) -> np.ndarray:
        """Download an output -> (H, W, C) float32 on the host."""

    def as_frame(self, output: Any) -> Any:
        """Convert an output -> one of the filter's frames, on its device, equal to ``upload(download(output))``.

        A first pass's output as a second pass's guide (``engine.video.guided``).
        """


def cpu_filter_compiles() -> bool:
    """Whether the fused CPU filter's first call compiles it (it loads numba).

    numba's cache holds no build of its current code for this machine.
    """
    from . import fused_cpu

    return not fused_cpu.compiled()


def filter_compiles(backend: str = "auto") -> bool:
    """Whether the first frame filtered on ``backend`` waits for the CPU filter to compile.

    See ``engine.filter_compiles``.
    """
    return resolve_backend(backend) == "cpu" and cpu_filter_compiles()


def _fused_cpu() -> WindowFilter:
    from ...memory import require_cpu_room

    require_cpu_room(0, compiles=cpu_filter_compiles)  # numba and its threads fit, under an address-space limit
    from .fused_cpu import FusedCpuFilter

    return FusedCpuFilter()


def _cascade_cpu() -> WindowFilter:
    from .cascade import CascadeCpuFilter

    return CascadeCpuFilter()


def _fused_gpu() -> WindowFilter:
    from .fused_gpu import FusedGpuFilter

    return FusedGpuFilter()


def _cascade_gpu() -> WindowFilter:
    from .cascade_gpu import CascadeGpuFilter

    return CascadeGpuFilter()


# (backend, method) -> a new filter. Each imports its module when called, so that numba or CuPy
# load only when their filter is asked for (and a bundler still sees every import).
FILTERS: dict[tuple[str, str], Callable[[], WindowFilter]] = {
    ("cpu", "fused"): _fused_cpu,
    ("cpu", "cascade"): _cascade_cpu,
    ("gpu", "fused"): _fused_gpu,
    ("gpu", "cascade"): _cascade_gpu,
}


def window_filter(backend: str, method: str) -> WindowFilter:
    """Return a new filter for a resolved backend ("cpu" / "gpu") and a method of METHODS (``FILTERS``)."""
    if method not in METHODS:
        raise ValueError(f"method must be {' or '.join(map(repr, METHODS))}, got {method!r}")
    return FILTERS[backend, method]()
