"""An independent float64 reference for the volume filter, written straight from DESIGN.md §6.

No running sums, no weight symmetry, no slabs: every offset q of the (2Az+1)(2Ay+1)(2Ax+1)
window other than 0 sums every voxel of its patch explicitly (a sliding-window view over the
mirrored volume), then the weights of §1 (relative exponential weights, as tests/reference.py).
"""

from __future__ import annotations

import itertools

import numpy as np


def _triple(value: int | tuple[int, int, int]) -> tuple[int, int, int]:
    return (value,) * 3 if isinstance(value, int) else tuple(value)


def reference_denoise_volume(
    volume: np.ndarray,
    *,
    h: float,
    patch_radius: int | tuple[int, int, int] = 1,
    search_radius: int | tuple[int, int, int] = 5,
    weighting: str = "exponential",
    center_weight: str = "one",
) -> np.ndarray:
    """The filtered volume, float64, (Z, Y, X) or (Z, Y, X, C) as given; h in the volume's units."""
    data = np.asarray(volume, dtype=np.float64)
    planar = data if data.ndim == 4 else data[..., np.newaxis]
    shape, channels = planar.shape[:3], planar.shape[3]
    patch, search = _triple(patch_radius), _triple(search_radius)
    pad = [a + b for a, b in zip(search, patch, strict=True)]
    padded = np.pad(planar, [(p, p) for p in pad] + [(0, 0)], mode="reflect")
    window = tuple(2 * b + 1 for b in patch)

    def region(offset: tuple[int, ...], extra: tuple[int, ...]) -> np.ndarray:
        """The padded volume's voxels p + offset for p within ``extra`` of the volume."""
        index = tuple(slice(p + o - e, p + o + n + e) for p, o, n, e in zip(pad, offset, shape, extra, strict=True))
        return padded[index]

    exponents, candidates = [], []
    for offset in itertools.product(*(range(-a, a + 1) for a in search)):
        if offset == (0, 0, 0):
            continue
        squared = ((region((0, 0, 0), patch) - region(offset, patch)) ** 2).sum(axis=-1)
        distance = np.lib.stride_tricks.sliding_window_view(squared, window).sum(axis=(-3, -2, -1))
        distance /= channels * np.prod(window)
        exponents.append(distance / h**2)
        candidates.append(region(offset, (0, 0, 0)))
    u = np.array(exponents).reshape(-1, *shape)
    if weighting == "exponential":
        least = u.min(axis=0) if center_weight == "max" and len(u) > 0 else 0.0
        w, center = np.exp(-(u - least)), np.ones(shape)
    else:
        w = np.where(u <= 1.0, (1.0 - u) ** 2, 0.0)
        largest = w.max(axis=0, initial=0.0)
        center = np.where(largest > 0, largest, 1.0) if center_weight == "max" else np.ones(shape)
    values = np.array(candidates).reshape(-1, *shape, channels)
    numerator = np.einsum("q...,q...c->...c", w, values) + center[..., None] * planar
    result = numerator / (w.sum(axis=0) + center)[..., None]
    return result if data.ndim == 4 else result[..., 0]
