"""Image quality metrics."""

from __future__ import annotations

import math

import numpy as np

FULL_SCALES = {np.dtype(np.uint8): 255.0, np.dtype(np.uint16): 65535.0}  # data_range by dtype, floats 1.0


def psnr(reference: np.ndarray, estimate: np.ndarray, data_range: float | None = None) -> float:
    """Peak signal-to-noise ratio of ``estimate`` against ``reference``, in dB.

    Parameters
    ----------
    reference, estimate : array_like
        Same shape; compared in float64.
    data_range : float, optional
        The signal's full scale. None (the default): from the arrays' dtype, which they must share
        (uint8 255, uint16 65535, floats 1.0 for frames in [0, 1]); give it for other scales (10-bit
        samples in uint16: 1023).

    Returns
    -------
    float
        10 log10(data_range^2 / MSE); infinity for identical inputs.

    Raises
    ------
    ValueError
        Different shapes, empty inputs, a data_range that is not > 0, or none given for arrays of
        two dtypes or of another integer type.
    """
    reference, estimate = np.asarray(reference), np.asarray(estimate)
    if data_range is None:
        data_range = _full_scale(reference.dtype, estimate.dtype)
    reference = reference.astype(np.float64)
    estimate = estimate.astype(np.float64)
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


def _full_scale(*dtypes: np.dtype) -> float:
    """Return the full scale of arrays of ``dtypes`` (``FULL_SCALES``, floats 1.0); ValueError where they differ."""
    scales = {FULL_SCALES.get(dtype, 1.0 if dtype.kind == "f" else None) for dtype in dtypes}
    if len(scales) > 1 or None in scales:
        raise ValueError(
            f"psnr compares {' and '.join(str(d) for d in dtypes)} arrays: give data_range, the full scale of "
            "both (or both as uint8, uint16, or floats in [0, 1])"
        )
    return scales.pop()
