"""Backend selection, in one place: explicit argument, then NLMEANS_BACKEND, then CuPy, then NumPy.

CuPy is imported here lazily, only when the GPU is asked for or probed, so the engine imports
and runs with NumPy alone.
"""

from __future__ import annotations

import functools
import os
import platform
from collections.abc import Sequence
from typing import Any

from .shared_params import check_int

BACKENDS = ("auto", "cpu", "gpu")
ENVIRONMENT_VARIABLE = "NLMEANS_BACKEND"


class BackendUnavailableError(RuntimeError):
    """The backend asked for cannot run here; the message says why and what to do.

    Parameters
    ----------
    message : str
        Why (CuPy missing or not importing, no CUDA device, a driver too old) and what to do.
    """


@functools.cache
def gpu_unavailable_reason() -> str | None:
    """Why the GPU backend cannot run on this machine, or None when it can.

    Returns
    -------
    str or None
        One sentence a person can act on (CuPy missing or not importing, no NVIDIA driver or
        one too old, no CUDA device), or None when CuPy imports and sees a CUDA device.

    Notes
    -----
    Probed once per process (the answer is cached); CuPy is imported here, not before.
    """
    try:
        import cupy
    except ImportError as error:
        if isinstance(error, ModuleNotFoundError) and error.name == "cupy":
            return (
                "CuPy is not installed (install nlmeans-studio[cuda12] or nlmeans-studio[cuda13] "
                f"to match your CUDA driver): {error}"
            )
        return f"CuPy is installed but does not import: {_original_error(str(error))}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as error:
        if "insufficient" in str(error).lower():
            return f"no NVIDIA driver, or one too old for this CuPy build: install or update it ({error})"
        return f"no usable CUDA device: {error}"
    if count == 0:
        return "no CUDA device was found"
    return None


def _original_error(message: str) -> str:
    """Return the cause in CuPy's import failure message (a page of advice around one line)."""
    lines = [line.strip() for line in message.splitlines()]
    if "Original error:" in lines:
        return lines[lines.index("Original error:") + 1]
    return " ".join(line for line in lines if line)


def cupy_module() -> Any:
    """Return the CuPy module, or BackendUnavailableError saying why the GPU cannot be used."""
    reason = gpu_unavailable_reason()
    if reason is not None:
        raise BackendUnavailableError(f"the GPU backend is unavailable: {reason}")
    import cupy

    return cupy


def resolve_backend(backend: str = "auto") -> str:
    """Return the concrete backend, "cpu" or "gpu", for a requested one.

    "auto" defers to the NLMEANS_BACKEND environment variable, then picks the GPU when CuPy
    imports and a CUDA device is present, else the CPU.

    Parameters
    ----------
    backend : {"auto", "cpu", "gpu"}
        The backend asked for.

    Returns
    -------
    {"cpu", "gpu"}

    Raises
    ------
    ValueError
        An unknown backend name, in ``backend`` or in NLMEANS_BACKEND.
    BackendUnavailableError
        "gpu" asked for explicitly where it cannot run.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be 'auto', 'cpu' or 'gpu', got {backend!r}")
    if backend == "auto":
        backend = os.environ.get(ENVIRONMENT_VARIABLE, "auto").strip().lower() or "auto"
        if backend not in BACKENDS:
            raise ValueError(f"{ENVIRONMENT_VARIABLE} must be 'auto', 'cpu' or 'gpu', got {backend!r}")
    if backend == "auto":
        return "gpu" if gpu_unavailable_reason() is None else "cpu"
    if backend == "gpu":
        cupy_module()
    return backend


def check_devices(devices: object) -> list[int] | str | None:
    """``devices`` as given, validated without touching a GPU: None, "all" or distinct ids.

    Raises
    ------
    ValueError
        Not one of those.
    """
    if devices is None or devices == "all":
        return devices
    if isinstance(devices, (str, bytes)) or not isinstance(devices, Sequence) or len(devices) == 0:
        raise ValueError(f"devices must be None, 'all' or a non-empty list of GPU ids, got {devices!r}")
    ids = [check_int("devices[i]", d, 1023) for d in devices]
    if len(set(ids)) != len(ids):
        raise ValueError(f"devices must not repeat a GPU, got {devices!r}")
    return ids


def resolve_devices(devices: object) -> list[int] | None:
    """Return the GPU ids asked for (``check_devices``), "all" expanded, each one this machine has.

    Raises
    ------
    ValueError
        Malformed, or an id this machine has no GPU for.
    BackendUnavailableError
        There is no usable GPU.
    """
    devices = check_devices(devices)
    if devices is None:
        return None
    count = cupy_module().cuda.runtime.getDeviceCount()
    if devices == "all":
        return list(range(count))
    missing = [device for device in devices if device >= count]
    if missing:
        raise ValueError(f"no GPU {missing[0]}: this machine has {count} (ids 0..{count - 1})")
    return devices


@functools.cache
def cpu_name() -> str:
    """Return the processor's model name and core count, for readouts."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model} ({os.cpu_count()} cores)"


def gpu_name() -> str:
    """Return the current CUDA device's name."""
    cupy = cupy_module()
    device = cupy.cuda.Device()
    name = cupy.cuda.runtime.getDeviceProperties(device.id)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


class GpuOutOfMemoryError(MemoryError):
    """The GPU has too little free memory for these frames; the CPU backend can take over.

    Parameters
    ----------
    message : str
        The frames' shape, CuPy's error, and what to do (close other GPU programs, a smaller
        window or smaller frames, or the CPU backend).
    """
