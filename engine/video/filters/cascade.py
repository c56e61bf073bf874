"""The paper's accelerated pass cascade (DESIGN.md §2), as plain array code.

Readable first: this module is the executable explanation of the method and the CPU's cascade.
It takes its array module (NumPy or CuPy) from the frames it is given; on the GPU the cascade
runs as one CUDA kernel per pass (``kernels/cascade.cu``, ``cascade_gpu.CascadeGpuFilter``), these same steps.

Frames here are planar float32 arrays (C, H, W). For each search offset q the cascade runs

1. the squared color difference ``||Z(p) - Z(p+q)||^2``, one value per pixel,
2. a horizontal box sum over [-B, B],
3. a vertical box sum over [-B, B], then the weight g(D),
4. the accumulation of ``w Y(p+q)`` into the numerator and ``w`` into the denominator,

and finally divides. Within the centre frame the distance of offset q at pixel p is also the
distance of offset -q at pixel p+q, so each weight serves both (symmetric accumulation) and
only half of the spatial offsets are visited. Spatial coordinates outside the frame are
mirrored (``reflect``); distances are computed on ``Z = G Y`` (or on a guide clip's ``G X``),
the average uses ``Y``.

Exponential weights are relative (DESIGN.md §1): exp(-(u - u_min)), u_min the smallest u of
the pixel's window seen so far. With the centre weight 1 the centre's u = 0 is the smallest
from the start, so the weights are exp(-u) (those that underflow weigh under 1e-38 of the
centre). With the largest weight as the centre's, u_min is kept per pixel and the numerator
and denominator are rescaled when it falls, as online softmax does; the centre weight is then
exp(0) = 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...frames import to_float32
from ..params import NLMParams

Array = Any  # numpy.ndarray or cupy.ndarray


def array_module(array: Array) -> Any:
    """NumPy or CuPy, whichever owns ``array``."""
    if type(array).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def color_transformed(frame: Array, params: NLMParams) -> Array:
    """Z = G Y per pixel for a planar (C, H, W) frame; the frame itself when G is None."""
    if params.color_transform is None:
        return frame
    xp = array_module(frame)
    transform = xp.asarray(params.color_transform, dtype=xp.float32)
    return xp.tensordot(transform, frame, axes=1)


def spatial_offsets(search_radius: int, *, same_frame: bool) -> list[tuple[int, int]]:
    """Spatial offsets (qy, qx) visited for one frame pair.

    Against another frame: the whole (2A+1)^2 window. Within the centre frame: one of each pair
    {q, -q} (qy > 0, or qy == 0 and qx > 0), since symmetry serves the other, and never
    q = 0, whose weight is the centre weight.
    """
    span = range(-search_radius, search_radius + 1)
    offsets = [(qy, qx) for qy in span for qx in span]
    if same_frame:
        offsets = [(qy, qx) for qy, qx in offsets if qy > 0 or (qy == 0 and qx > 0)]
    return offsets


def box_sum(values: Array, radius: int, axis: int) -> Array:
    """Sum of 2 radius + 1 neighbours along ``axis``; the result is 2 radius shorter there."""
    length = values.shape[axis] - 2 * radius
    total = values.take(range(0, length), axis=axis)
    for shift in range(1, 2 * radius + 1):
        total = total + values.take(range(shift, shift + length), axis=axis)
    return total


def relative_weights(params: NLMParams) -> bool:
    """Whether exponential weights need a per-pixel shift.

    With the largest weight as the centre's, the window's smallest u is not known before the window
    is searched.
    """
    return params.weighting == "exponential" and params.center_weight == "max"


def exponent(distance: Array, params: NLMParams) -> Array:
    """Return u = D / (h/255)^2 of DESIGN.md §1."""
    return distance * array_module(distance).float32((255.0 / params.h) ** 2)


def weight(distance: Array, params: NLMParams) -> Array:
    """g(D) of DESIGN.md §1 (exponential: exp(-u), relative to u = 0)."""
    xp = array_module(distance)
    u = exponent(distance, params)
    if params.weighting == "exponential":
        return xp.exp(-u)
    return xp.maximum(1 - u, 0) ** 2


def patch_distance(
    z_reference: Array,
    z_candidate: Array,
    offset: tuple[int, int],
    rows: tuple[int, int],
    cols: tuple[int, int],
    params: NLMParams,
) -> Array:
    """D(p, q) for p in ``rows`` x ``cols`` (frame coordinates, may lie outside the frame).

    ``z_reference`` and ``z_candidate`` are padded by A + B on each side.
    """
    pad = params.search_radius + params.patch_radius
    radius = params.patch_radius
    qy, qx = offset
    top, bottom = pad + rows[0] - radius, pad + rows[1] + radius
    left, right = pad + cols[0] - radius, pad + cols[1] + radius
    reference = z_reference[:, top:bottom, left:right]
    candidate = z_candidate[:, top + qy : bottom + qy, left + qx : right + qx]
    squared_difference = ((reference - candidate) ** 2).sum(axis=0)  # pass 1
    horizontal = box_sum(squared_difference, radius, axis=1)  # pass 2
    patch_sum = box_sum(horizontal, radius, axis=0)  # pass 3
    channels = z_reference.shape[0]
    return patch_sum * (1.0 / (channels * (2 * radius + 1) ** 2))


def denoise_window(
    frames: Sequence[Array], center: int, params: NLMParams, guide: Sequence[Array] | None = None
) -> Array:
    """Denoise ``frames[center]`` searching all of ``frames`` (planar (C, H, W) float32).

    ``frames`` are the frames of the temporal window, already truncated at the clip's ends.
    ``guide`` (the same window of another clip, same shapes) gives the patch distances instead
    of ``frames``, which are averaged (KNLMeansCL's rclip): Z = G X with X the guide.
    """
    xp = array_module(frames[center])
    channels, height, width = frames[center].shape
    search = params.search_radius
    z_pad = search + params.patch_radius
    padded_z = [
        xp.pad(color_transformed(f, params), ((0, 0), (z_pad, z_pad), (z_pad, z_pad)), mode="reflect")
        for f in (frames if guide is None else guide)
    ]
    padded_y = [xp.pad(f, ((0, 0), (search, search), (search, search)), mode="reflect") for f in frames]

    numerator = xp.zeros((channels, height, width), dtype=xp.float32)
    denominator = xp.zeros((height, width), dtype=xp.float32)
    largest = xp.zeros((height, width), dtype=xp.float32)
    relative = relative_weights(params)
    shift = xp.full((height, width), xp.finfo(xp.float32).max, dtype=xp.float32)  # u_min: none seen yet

    def candidate(index: int, qy: int, qx: int) -> Array:
        return padded_y[index][:, search + qy : search + qy + height, search + qx : search + qx + width]

    def accumulate(values: Array, pixels: Array) -> None:  # pass 4: one offset's weights, or u where relative
        nonlocal numerator, denominator, largest, shift
        w = values
        if relative:  # weights relative to u_min; the sums rescaled (by < 1) where it falls
            low = xp.minimum(shift, values)
            rescale = xp.exp(low - shift)
            numerator, denominator, shift = numerator * rescale, denominator * rescale, low
            w = xp.exp(low - values)
        numerator = numerator + w * pixels
        denominator = denominator + w
        largest = xp.maximum(largest, w)

    def weigh(distance: Array) -> Array:  # pass 3's g(D), or u where weights are relative
        return exponent(distance, params) if relative else weight(distance, params)

    for index in range(len(frames)):
        same_frame = index == center
        for qy, qx in spatial_offsets(search, same_frame=same_frame):
            if not same_frame:
                distance = patch_distance(padded_z[center], padded_z[index], (qy, qx), (0, height), (0, width), params)
                accumulate(weigh(distance), candidate(index, qy, qx))
                continue
            # The distance over the frame and the frame shifted by -q serves +q and -q.
            top, left = min(0, -qy), min(0, -qx)
            rows, cols = (top, max(height, height - qy)), (left, max(width, width - qx))
            w = weigh(patch_distance(padded_z[center], padded_z[center], (qy, qx), rows, cols, params))
            accumulate(w[-top : height - top, -left : width - left], candidate(center, qy, qx))
            accumulate(w[-qy - top : height - qy - top, -qx - left : width - qx - left], candidate(center, -qy, -qx))

    center_weight = xp.float32(1)  # also the largest weight, exp(0), of relative weights
    if params.center_weight == "max" and not relative:  # the largest other weight, or 1 where all weigh 0
        center_weight = xp.where(largest > 0, largest, center_weight)
    return (numerator + center_weight * frames[center]) / (denominator + center_weight)


class CascadeCpuFilter:
    """The cascade on the host: frames planar (C, H, W) float32, outputs interleaved (H, W, C)."""

    backend, method = "cpu", "cascade"

    @staticmethod
    def upload(frame: np.ndarray) -> np.ndarray:
        """Return a host frame as planar (C, H, W) float32, integers scaled to [0, 1]."""
        return np.ascontiguousarray(to_float32(frame).transpose(2, 0, 1))

    @staticmethod
    def download(output: np.ndarray) -> np.ndarray:
        """Return a planar (C, H, W) output as (H, W, C)."""
        return np.ascontiguousarray(output.transpose(1, 2, 0))

    @staticmethod
    def as_frame(output: np.ndarray) -> np.ndarray:
        """Return the output as it is: planar (C, H, W) float32, as frames are."""
        return output  # planar (C, H, W) float32, as frames

    def __call__(
        self, window: Sequence[np.ndarray], center: int, params: NLMParams, guide: Sequence[np.ndarray] | None = None
    ) -> np.ndarray:
        """Denoise ``window[center]`` with ``params``, the distances from ``guide`` where given."""
        return denoise_window(window, center, params, guide)
