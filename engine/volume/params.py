"""The volume filter's parameters (DESIGN.md §6): radii per axis, validated once."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..shared_params import (
    CENTER_WEIGHTS,
    PATCH_RADIUS_MAX,
    SEARCH_RADIUS_MAX,
    WEIGHTINGS,
    check_choice,
    check_int,
)

Radii = int | tuple[int, int, int]
# Channels filtered together (a 4D array's last axis). The GPU's volume_direct kernel holds
# (RUN + 2 Bz) C (2 By + 1)(2 Bx + 1) floats a thread: at the largest patch radius (8, RUN 1)
# 16 channels take 307 KiB, inside CUDA's 512 KiB of local memory a thread; 32 would not fit.
CHANNELS_MAX = 16
# How a volume's channels are filtered: together (the patch distance sums them, as a color
# video's, for channels of one structure such as RGB), or each on its own with its own h
# (fluorescence channels image different structures: filtered together, one channel's edges
# stop the other's flat parts from being averaged).
CHANNEL_MODES = ("together", "separately")


def channel_strengths(h: object, channels: int, mode: str) -> list[object]:
    """Each channel's h for ``mode``.

    One h for all, or (separately) one a channel; ValueError for a list of the wrong length or a
    list with channels filtered together.
    """
    check_choice("channels", mode, CHANNEL_MODES)
    if not isinstance(h, (list, tuple, np.ndarray)):
        return [h] * channels
    if mode != "separately":
        raise ValueError(f"h is one number where channels are filtered together, got {list(h)!r}")
    if len(h) != channels:
        raise ValueError(f"h must be one number or one a channel ({channels}), got {len(h)}: {list(h)!r}")
    return list(h)


def _check_radii(name: str, value: object, high: int) -> tuple[int, int, int]:
    if isinstance(value, (tuple, list)):
        if len(value) != 3:
            raise ValueError(f"{name} must be an integer or a (z, y, x) triple, got {value!r}")
        return tuple(check_int(f"{name}[{axis}]", v, high) for axis, v in zip("zyx", value, strict=True))
    radius = check_int(name, value, high)
    return (radius, radius, radius)


@dataclass(frozen=True)
class VolumeParams:
    """The volume filter's parameters (DESIGN.md §6), validated: see ``denoise_volume``."""

    h: float
    patch_radius: tuple[int, int, int]
    search_radius: tuple[int, int, int]
    weighting: str
    center_weight: str

    @classmethod
    def checked(
        cls, h: object, patch_radius: object, search_radius: object, weighting: object, center_weight: object
    ) -> VolumeParams:
        """Return the parameters, each checked, or ValueError naming the first that is wrong."""
        message = f"h must be a finite number > 0 in the volume's intensity units, got {h!r}"
        if isinstance(h, bool) or not isinstance(h, (int, float, np.integer, np.floating)):
            raise ValueError(message)
        if not (math.isfinite(h) and h > 0):
            raise ValueError(message)
        return cls(
            float(h),
            _check_radii("patch_radius", patch_radius, PATCH_RADIUS_MAX),
            _check_radii("search_radius", search_radius, SEARCH_RADIUS_MAX),
            check_choice("weighting", weighting, WEIGHTINGS),
            check_choice("center_weight", center_weight, CENTER_WEIGHTS),
        )

    @property
    def pad(self) -> tuple[int, int, int]:
        """A + B per axis: the mirrored border every output voxel's window reaches."""
        return tuple(a + b for a, b in zip(self.search_radius, self.patch_radius, strict=True))

    def patch_sum_scale(self, channels: int) -> float:
        """Return u per unit of a patch's summed squared difference: 1 / (C |patch| h^2)."""
        voxels = math.prod(2 * b + 1 for b in self.patch_radius)
        return 1.0 / (channels * voxels * self.h**2)

    @property
    def exponential(self) -> bool:
        """Whether the weighting is exponential."""
        return self.weighting == "exponential"

    @property
    def center_max(self) -> bool:
        """Whether the centre's weight is the largest weight ("max")."""
        return self.center_weight == "max"
