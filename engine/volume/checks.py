"""The checks of a volume that the driver (``denoise``), its filters and the noise estimate share.

Finite voxels (and the error where they are not; those outside a mask read as 0), the channels
of a 4D array, and what a 4D array's fourth axis holds.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os

import numpy as np

from .params import CHANNELS_MAX

SPATIAL_ORDERS = ("zyx", "xyz")  # a volume's spatial axes: (z, y, x), or nibabel's (x, y, z)
PARALLEL_CHECK_BYTES = 32 << 20  # all_finite: at least this much a thread
FINITE_BLOCK_BYTES = 1 << 20  # all_finite: planes checked at once, in the cache


def all_finite(data: np.ndarray, parallel_bytes: int = PARALLEL_CHECK_BYTES) -> bool:
    """Whether no voxel is NaN or infinite.

    NaN makes the minimum NaN and an infinity is the minimum or the maximum, so two reductions
    decide it without np.isfinite's mask. They run over blocks of about a MiB of planes (the maximum
    reads the block the minimum left in the cache) and, past ``parallel_bytes``, over runs of planes
    on every core (NumPy's reductions release the GIL). Both measured faster than one pass over the
    whole volume (docs/bench/2026-11-26-figures-from-docstrings.md).
    """
    if data.dtype.kind != "f" or data.size == 0:
        return True
    parts = min(data.shape[0], 2 * (os.cpu_count() or 1), -(-data.nbytes // parallel_bytes))
    if parts > 1:
        with concurrent.futures.ThreadPoolExecutor(parts) as pool:
            return all(pool.map(all_finite, np.array_split(data, parts), itertools.repeat(data.nbytes)))
    step = max(1, FINITE_BLOCK_BYTES // max(1, data[0].nbytes))
    blocks = (data[start : start + step] for start in range(0, len(data), step))
    return all(np.isfinite(block.min()) and np.isfinite(block.max()) for block in blocks)


def require_finite(data: np.ndarray) -> None:
    """ValueError, with the count, where ``data`` holds NaN or infinite voxels."""
    if not all_finite(data):
        raise non_finite_error(data)


def non_finite_error(data: np.ndarray) -> ValueError:
    """Return the error for a volume holding NaN or infinite voxels, with their count."""
    count = int(np.count_nonzero(~np.isfinite(data)))
    return ValueError(f"volume must be finite, got {count} NaN or infinite voxels (replace or mask them first)")


def filled_outside(data: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """Return ``data`` with its NaN and infinite voxels read as 0, or ValueError where any lies ``inside``.

    ``data``: (Z, Y, X), or 4D with channels or a series last; ``inside``: a bool (Z, Y, X) mask.
    ``data`` itself where every voxel is finite, else a copy: 0 is what the filter's patches near the
    mask's edge and the noise estimate read there; the voxels outside the mask are returned as they
    were, so no 0 reaches the output.
    """
    if all_finite(data):
        return data
    bad = ~np.isfinite(data)
    count = int(np.count_nonzero(bad[inside]))
    if count:
        raise ValueError(
            f"volume must be finite inside the mask, got {count} NaN or infinite voxels inside it (of "
            f"{int(np.count_nonzero(bad))} in all; those outside are kept as they are): replace them or leave "
            "them out of the mask"
        )
    return np.where(bad, 0, data)


def check_channels(shape: tuple[int, ...]) -> None:
    """Refuse a 4D volume with more than CHANNELS_MAX channels, saying that its last axis was read as channels.

    A time series given as (Z, Y, X, T) is the likely mistake.
    """
    if len(shape) == 4 and shape[3] > CHANNELS_MAX:
        raise ValueError(
            f"volume of shape {shape} has {shape[3]} channels (its last axis) and at most {CHANNELS_MAX} are "
            "filtered together: a time series is filtered one time point at a time with series_axis=3 "
            "(denoise-volume does so with a 4D NIfTI), and channels on another axis, as in (Z, C, Y, X), are named "
            "with channel_axis"
        )


def channels_note(shape: tuple[int, ...]) -> str:
    """For a message about a volume's size: which axes were measured, where the array is 4D."""
    if len(shape) != 4:
        return ""
    return (
        f" (the first three axes; the last, of {shape[3]}, is read as channels: a time series is filtered one "
        "time point at a time with series_axis)"
    )


def fourth_axis(shape: tuple[int, ...], *, channel_axis: object, series_axis: object) -> tuple[str, int] | None:
    """Return ("channels" or "series", the axis's index 0..3) for a 4D array, None for a 3D one without either.

    A 4D array's extra axis is channels (filtered together or separately, at most CHANNELS_MAX)
    or a series of volumes (time points, each filtered on its own): the array cannot tell, so
    the caller says which, never both; ValueError otherwise, naming the choices.
    """
    given = [(name, value) for name, value in (("channel_axis", channel_axis), ("series_axis", series_axis))]
    named = [(name, value) for name, value in given if value is not None]
    if len(shape) != 4:
        if named:
            raise ValueError(f"{named[0][0]} is for a 4D array, got a volume of shape {tuple(shape)}")
        return None
    if len(named) != 1:
        raise ValueError(
            f"volume of shape {tuple(shape)} is 4D: say what its extra axis holds, channel_axis=AXIS (channels, at "
            f"most {CHANNELS_MAX}, filtered as channels= says) or series_axis=AXIS (a time series: each (Z, Y, X) "
            "volume filtered on its own, with its own noise estimate), not both; AXIS is 3 for (z, y, x, t)"
        )
    name, value = named[0]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not -4 <= value <= 3:
        raise ValueError(f"{name} must be an axis of the 4D volume, -4..3, got {value!r}")
    return ("channels" if name == "channel_axis" else "series"), int(value) % 4


def x_and_z_swapped(dimensions: int, extra: int | None) -> list[int]:
    """Return the axes of a 3D or 4D array with its first and last spatial axes swapped (``extra``: not spatial)."""
    space = [axis for axis in range(dimensions) if axis != extra]
    swap = {space[0]: space[-1], space[-1]: space[0]}
    return [swap.get(axis, axis) for axis in range(dimensions)]
