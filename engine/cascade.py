"""The paper's accelerated pass cascade (DESIGN.md §2), as plain array code.

Readable first: this module is the executable explanation of the method and the CPU's cascade.
It takes its array module (NumPy or CuPy) from the frames it is given; on the GPU the cascade
runs as one CUDA kernel per pass (``kernels/cascade.cu``, ``gpu.GpuCascade``), these same steps.

Frames here are planar float32 arrays (C, H, W). For each search offset q the cascade runs

1. the squared color difference ``||Z(p) - Z(p+q)||^2``, one value per pixel,
2. a horizontal box sum over [-B, B],
3. a vertical box sum over [-B, B], then the weight g(D),
4. the accumulation of ``w Y(p+q)`` into the numerator and ``w`` into the denominator,

and finally divides. Within the centre frame the distance of offset q at pixel p is also the
distance of offset -q at pixel p+q, so each weight serves both (symmetric accumulation) and
only half of the spatial offsets are visited. Spatial coordinates outside the frame are
mirrored (``reflect``); distances are computed on ``Z = G Y``, the average uses ``Y``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .params import NLMParams

Array = Any  # numpy.ndarray or cupy.ndarray


def array_module(array: Array) -> Any:
    """NumPy or CuPy, whichever owns ``array``."""
    if type(array).__module__.startswith("cupy"):
        import cupy

        return cupy
    import numpy

    return numpy


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


def weight(distance: Array, params: NLMParams) -> Array:
    """g(D) of DESIGN.md §1, with u = D / (h/255)^2."""
    xp = array_module(distance)
    u = distance * xp.float32((255.0 / params.h) ** 2)
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


def denoise_window(frames: Sequence[Array], center: int, params: NLMParams) -> Array:
    """Denoise ``frames[center]`` searching all of ``frames`` (planar (C, H, W) float32).

    ``frames`` are the frames of the temporal window, already truncated at the clip's ends.
    """
    xp = array_module(frames[center])
    channels, height, width = frames[center].shape
    search = params.search_radius
    z_pad = search + params.patch_radius
    padded_z = [
        xp.pad(color_transformed(f, params), ((0, 0), (z_pad, z_pad), (z_pad, z_pad)), mode="reflect") for f in frames
    ]
    padded_y = [xp.pad(f, ((0, 0), (search, search), (search, search)), mode="reflect") for f in frames]

    numerator = xp.zeros((channels, height, width), dtype=xp.float32)
    denominator = xp.zeros((height, width), dtype=xp.float32)
    largest = xp.zeros((height, width), dtype=xp.float32)

    def candidate(index: int, qy: int, qx: int) -> Array:
        return padded_y[index][:, search + qy : search + qy + height, search + qx : search + qx + width]

    def accumulate(w: Array, pixels: Array) -> None:  # pass 4
        nonlocal numerator, denominator, largest
        numerator = numerator + w * pixels
        denominator = denominator + w
        largest = xp.maximum(largest, w)

    for index in range(len(frames)):
        same_frame = index == center
        for qy, qx in spatial_offsets(search, same_frame=same_frame):
            if not same_frame:
                distance = patch_distance(padded_z[center], padded_z[index], (qy, qx), (0, height), (0, width), params)
                accumulate(weight(distance, params), candidate(index, qy, qx))
                continue
            # The distance over the frame and the frame shifted by -q serves +q and -q.
            top, left = min(0, -qy), min(0, -qx)
            rows, cols = (top, max(height, height - qy)), (left, max(width, width - qx))
            w = weight(patch_distance(padded_z[center], padded_z[center], (qy, qx), rows, cols, params), params)
            accumulate(w[-top : height - top, -left : width - left], candidate(center, qy, qx))
            accumulate(w[-qy - top : height - qy - top, -qx - left : width - qx - left], candidate(center, -qy, -qx))

    center_weight = xp.float32(1)
    if params.center_weight == "max":  # the largest other weight, or 1 where all weigh 0
        center_weight = xp.where(largest > 0, largest, center_weight)
    return (numerator + center_weight * frames[center]) / (denominator + center_weight)
