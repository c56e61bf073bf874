"""Image quality metrics."""

from __future__ import annotations

import math

import numpy as np


def psnr(reference: np.ndarray, estimate: np.ndarray, data_range: float = 1.0) -> float:
    """Peak signal-to-noise ratio of ``estimate`` against ``reference``, in dB.

    Parameters
    ----------
    reference, estimate : array_like
        Same shape; compared in float64 as given (scale integers yourself or set data_range).
    data_range : float
        The signal's full scale: 1.0 for frames in [0, 1], 255 for uint8 values.

    Returns
    -------
    float
        10 log10(data_range^2 / MSE); infinity for identical inputs.

    Raises
    ------
    ValueError
        Different shapes, empty inputs or a data_range that is not > 0.
    """
    reference = np.asarray(reference, dtype=np.float64)
    estimate = np.asarray(estimate, dtype=np.float64)
    if reference.shape != estimate.shape:
        raise ValueError(f"psnr needs arrays of one shape, got {reference.shape} and {estimate.shape}")
    if reference.size == 0:
        raise ValueError("psnr needs non-empty arrays")
    if not (math.isfinite(data_range) and data_range > 0):
        raise ValueError(f"data_range must be a finite number > 0, got {data_range!r}")
    mse = float(np.mean((reference - estimate) ** 2))
    if mse == 0:
        return math.inf
    return 10.0 * math.log10(data_range**2 / mse)
