"""The filter's parameters (DESIGN.md §1), validated once at construction."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..shared_params import (
    CENTER_WEIGHTS,
    PATCH_RADIUS_MAX,
    SEARCH_RADIUS_MAX,
    WEIGHTINGS,
    CenterWeight,
    Weighting,
    check_choice,
    check_int,
)

FRAMES_MAX = 8
DEFAULT_H = 6.5  # 8-bit levels: the default filter's best for white noise of sigma 10 (no estimate to set h)
H_MIN, H_MAX = 1e-3, 1e4  # 8-bit levels: u = D / (h/255)^2 stays finite in float32 for frames in [0, 1]


def _check_color_transform(value: object) -> np.ndarray | None:
    if value is None:
        return None
    try:
        matrix = np.array(value, dtype=np.float64)
    except (ValueError, TypeError):  # rows of different lengths, text
        raise ValueError(
            f"color_transform must be None or a C x C matrix of numbers with C = 1 or 3, got {str(value)[:60]!r}"
        ) from None
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] not in (1, 3):
        raise ValueError(
            f"color_transform must be None or a C x C matrix with C = 1 or 3, got an array of shape {matrix.shape}"
        )
    if not np.all(np.isfinite(matrix)):
        raise ValueError("color_transform must be finite, got a matrix with NaN or infinity")
    if np.linalg.cond(matrix) > 1e6:
        raise ValueError(
            "color_transform must be invertible (condition number at most 1e6), "
            f"got a matrix with condition number {np.linalg.cond(matrix):.3g}"
        )
    matrix.setflags(write=False)
    return matrix


@dataclass(frozen=True)
class NLMParams:
    """Parameters of the Non-Local Means filter, exactly as DESIGN.md §1 defines them.

    Parameters
    ----------
    h : float
        Filter strength in 8-bit levels (1 level = 1/255 of full scale, whatever the bit
        depth), from 0.001 to 10000, default 6.5 (``DEFAULT_H``: the default weighting's best
        for white noise of sigma 10). Patches whose mean squared difference exceeds (h/255)^2
        get no weight with the bisquare weighting, weight exp(-1) with the exponential.
    patch_radius : int
        B, in pixels: patches are (2B+1) x (2B+1). 0..8, default 4.
    search_radius : int
        A, in pixels: the spatial search window is (2A+1) x (2A+1). 0..16, default 3.
    frames_past : int
        Dp, past frames searched. 0..8, default 1.
    frames_future : int
        Df, future frames searched; the stream's output is delayed by Df frames. 0..8, default 1.
    weighting : {"bisquare", "exponential"}
        Weight of a patch distance: exp(-u) (Buades; the default) or Tukey's bisquare (the
        paper's, which gives no weight past h and loses 3-6 dB where h is 20 % too low).
    color_transform : (C, C) array_like or None
        G, applied to the pixels for the patch distances only (the average uses the input).
        Finite and invertible; None means identity.
    center_weight : {"one", "max"}
        Weight of the pixel itself: the largest weight of the other offsets (Buades; KNLMeansCL's
        wref = 1; the default) or 1 (the paper).

    Attributes
    ----------
    h, patch_radius, search_radius, frames_past, frames_future, weighting, center_weight
        The parameters above, validated (``h`` as a float).
    color_transform : (C, C) ndarray or None
        G as read-only float64, or None.
    min_frame_size : int
        Smallest frame height and width the filter accepts: A + B + 1 pixels.

    Raises
    ------
    ValueError
        A field out of its range; the message names the field, the value and the range.

    Notes
    -----
    For white noise of standard deviation sigma (8-bit levels) and the default radii, the
    exponential weighting with centre "max" works best with h of about 0.55 to 0.85 sigma, the
    bisquare with h of about 1.5 to 2 sigma (``suggest_h`` reads it from the noise). The
    defaults were chosen on a held-out corpus (docs/bench/2026-11-26-defaults-study.md). The cost grows with the
    window: (2A+1)^2 (Dp + Df + 1) offsets per pixel; the patch radius costs almost nothing
    with running box sums.
    """

    h: float = DEFAULT_H
    patch_radius: int = 4
    search_radius: int = 3
    frames_past: int = 1
    frames_future: int = 1
    weighting: Weighting = "exponential"
    color_transform: np.ndarray | None = field(default=None, compare=False)
    center_weight: CenterWeight = "max"

    def __post_init__(self) -> None:
        h = self.h
        message = f"h must be a finite number > 0 (8-bit levels) in {H_MIN:g}..{H_MAX:g}, got {h!r}"
        if isinstance(h, bool) or not isinstance(h, (int, float, np.integer, np.floating)):
            raise ValueError(message)
        if not (math.isfinite(h) and H_MIN <= h <= H_MAX):
            raise ValueError(message)
        set_field = object.__setattr__
        set_field(self, "h", float(h))
        set_field(self, "patch_radius", check_int("patch_radius", self.patch_radius, PATCH_RADIUS_MAX))
        set_field(self, "search_radius", check_int("search_radius", self.search_radius, SEARCH_RADIUS_MAX))
        set_field(self, "frames_past", check_int("frames_past", self.frames_past, FRAMES_MAX))
        set_field(self, "frames_future", check_int("frames_future", self.frames_future, FRAMES_MAX))
        set_field(self, "weighting", check_choice("weighting", self.weighting, WEIGHTINGS))
        set_field(self, "center_weight", check_choice("center_weight", self.center_weight, CENTER_WEIGHTS))
        set_field(self, "color_transform", _check_color_transform(self.color_transform))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NLMParams):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        transform = None if self.color_transform is None else self.color_transform.tobytes()
        return (
            self.h,
            self.patch_radius,
            self.search_radius,
            self.frames_past,
            self.frames_future,
            self.weighting,
            transform,
            self.center_weight,
        )

    def patch_sum_scale(self, channels: int) -> float:
        """Return u per unit of a patch's summed squared difference: 1 / (C (2B+1)^2 (h/255)^2).

        The fused filters sum squared differences over the patch and scale once, rather than
        taking the mean D and dividing by (h/255)^2.
        """
        return (255.0 / self.h) ** 2 / (channels * (2 * self.patch_radius + 1) ** 2)

    @property
    def min_frame_size(self) -> int:
        """Smallest frame height and width the filter accepts: A + B + 1 pixels."""
        return self.search_radius + self.patch_radius + 1


def check_frame_shape(shape: tuple[int, ...], params: NLMParams) -> None:
    """Refuse frames the filter cannot process with ``params``, saying why.

    Raises
    ------
    ValueError
        A side shorter than A + B + 1, or a color transform of the wrong size.
    """
    height, width, channels = shape
    smallest = params.min_frame_size
    if height < smallest or width < smallest:
        raise ValueError(
            f"frames of {width}x{height} pixels are too small for search_radius "
            f"{params.search_radius} and patch_radius {params.patch_radius}: both sides must be "
            f"at least search_radius + patch_radius + 1 = {smallest} pixels"
        )
    transform = params.color_transform
    if transform is not None and transform.shape[0] != channels:
        raise ValueError(
            f"color_transform is {transform.shape[0]}x{transform.shape[0]} but the frames have {channels} channel(s)"
        )


def window_indices(index: int, length: int, params: NLMParams) -> range:
    """Frame indices searched for output ``index`` of a clip of ``length`` frames (truncated)."""
    return range(max(0, index - params.frames_past), min(length, index + params.frames_future + 1))
