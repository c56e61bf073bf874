"""NLMeans Studio's engine: Non-Local Means video denoising on the CPU (NumPy, numba) or GPU (CuPy).

The engine never imports Qt. CuPy and PyAV are imported lazily, so this package imports and
runs with NumPy and numba alone. The public API is listed here; every other name is private.
"""

from importlib.metadata import PackageNotFoundError, version

from .backend import BackendUnavailableError, GpuOutOfMemoryError, gpu_unavailable_reason, resolve_backend
from .denoiser import Denoiser
from .metrics import psnr
from .noise import (
    NoiseEstimate,
    add_noise,
    add_realistic_noise,
    apply_estimate,
    decorrelation_decision,
    estimate_noise,
    suggest_h,
)
from .params import NLMParams
from .volume import denoise_volume, denoise_volume_slice
from .volume_noise import VolumeNoiseEstimate, estimate_volume_noise, suggest_volume_h

try:
    __version__ = version("nlmeans-studio")
except PackageNotFoundError:  # run from a source tree that was not installed
    __version__ = "0+unknown"

__all__ = [
    "BackendUnavailableError",
    "Denoiser",
    "GpuOutOfMemoryError",
    "NLMParams",
    "NoiseEstimate",
    "VolumeNoiseEstimate",
    "__version__",
    "add_noise",
    "add_realistic_noise",
    "apply_estimate",
    "decorrelation_decision",
    "denoise_volume",
    "denoise_volume_slice",
    "estimate_noise",
    "estimate_volume_noise",
    "gpu_unavailable_reason",
    "psnr",
    "resolve_backend",
    "suggest_h",
    "suggest_volume_h",
]
