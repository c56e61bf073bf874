"""Independent float64 references, written straight from DESIGN.md §1.

Neither uses the cascade, running box sums or weight symmetry: ``reference_denoise`` sums
every patch pixel of every offset explicitly with NumPy (a sliding-window view over the padded
frames); ``scalar_denoise_pixel`` evaluates one output pixel with plain Python loops and an
explicit mirror function, to check the first.
"""

from __future__ import annotations

import math

import numpy as np

from nlmeans_studio.engine import NLMParams


def _weights(u: np.ndarray, params: NLMParams) -> tuple[np.ndarray, np.ndarray]:
    """The weights of the other offsets of a window (``u`` = D / (h/255)^2 along axis 0) and
    the centre weight, as DESIGN.md §1 defines them.

    Exponential weights are relative to the window's smallest u, exp(-(u - u_min)), so that
    none underflows (float64's exp(-u) does past u = 745, at h below about 1 on real frames):
    the centre's u is the least, 0 for the centre weight 1 and the smallest u of the other
    offsets for the largest weight, so the centre weight is exp(0) = 1 in both cases.
    """
    if params.weighting == "exponential":
        least = u.min(axis=0) if params.center_weight == "max" and len(u) > 0 else 0.0
        return np.exp(-(u - least)), np.ones(u.shape[1:])
    w = np.where(u <= 1.0, (1.0 - u) ** 2, 0.0)
    largest = w.max(axis=0, initial=0.0)
    center = np.where(largest > 0, largest, 1.0) if params.center_weight == "max" else np.ones(u.shape[1:])
    return w, center


def _transform(params: NLMParams, channels: int) -> np.ndarray:
    if params.color_transform is None:
        return np.eye(channels)
    return np.asarray(params.color_transform, dtype=np.float64)


def reference_denoise(clip: np.ndarray, index: int, params: NLMParams, guide: np.ndarray | None = None) -> np.ndarray:
    """Output frame ``index`` of ``clip`` (T, H, W, C) in [0, 1], float64 (H, W, C).

    With ``guide`` (the clip's shape), the patch distances come from Z = G guide while the
    average takes ``clip`` (KNLMeansCL's rclip); without it the guide is the clip.
    """
    clip = np.asarray(clip, dtype=np.float64)
    frames, height, width, channels = clip.shape
    search, radius = params.search_radius, params.patch_radius
    pad = search + radius
    z = (clip if guide is None else np.asarray(guide, dtype=np.float64)) @ _transform(params, channels).T
    z_padded = np.pad(z, ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="reflect")
    y_padded = np.pad(clip, ((0, 0), (search, search), (search, search), (0, 0)), mode="reflect")

    exponents, candidates = [], []  # u and Y(p + q) of each offset q other than 0
    for qt in range(-params.frames_past, params.frames_future + 1):
        other = index + qt
        if not 0 <= other < frames:
            continue
        for qy in range(-search, search + 1):
            for qx in range(-search, search + 1):
                if (qt, qy, qx) == (0, 0, 0):
                    continue
                # ||Z_t(s) - Z_other(s + q)||^2 for every s within B of the frame, then the
                # sum over each pixel's (2B+1) x (2B+1) patch of it.
                here = z_padded[index, search : search + height + 2 * radius, search : search + width + 2 * radius]
                there = z_padded[
                    other,
                    search + qy : search + qy + height + 2 * radius,
                    search + qx : search + qx + width + 2 * radius,
                ]
                squared = ((here - there) ** 2).sum(axis=-1)
                patches = np.lib.stride_tricks.sliding_window_view(squared, (2 * radius + 1, 2 * radius + 1))
                distance = patches.sum(axis=(-2, -1))
                distance /= channels * (2 * radius + 1) ** 2
                exponents.append(distance / (params.h / 255.0) ** 2)
                candidates.append(
                    y_padded[other, search + qy : search + qy + height, search + qx : search + qx + width]
                )
    w, center = _weights(np.array(exponents).reshape(-1, height, width), params)
    numerator = np.einsum("qhw,qhwc->hwc", w, np.array(candidates).reshape(-1, height, width, channels))
    return (numerator + center[..., None] * clip[index]) / (w.sum(axis=0) + center)[..., None]


def _mirror(coordinate: int, size: int) -> int:
    """Reflect without repeating the edge pixel: -1 -> 1, size -> size - 2."""
    if coordinate < 0:
        return -coordinate
    if coordinate >= size:
        return 2 * (size - 1) - coordinate
    return coordinate


def scalar_denoise_pixel(clip: np.ndarray, index: int, y: int, x: int, params: NLMParams) -> np.ndarray:
    """Output pixel (y, x) of frame ``index``, one offset and one patch pixel at a time."""
    clip = np.asarray(clip, dtype=np.float64)
    frames, height, width, channels = clip.shape
    transform = _transform(params, channels)
    search, radius = params.search_radius, params.patch_radius

    def z(t: int, row: int, col: int) -> np.ndarray:
        return transform @ clip[t, _mirror(row, height), _mirror(col, width)]

    exponents, values = [], []
    for other in range(index - params.frames_past, index + params.frames_future + 1):
        if not 0 <= other < frames:
            continue
        for qy in range(-search, search + 1):
            for qx in range(-search, search + 1):
                if (other, qy, qx) == (index, 0, 0):
                    continue
                total = 0.0
                for dy in range(-radius, radius + 1):
                    for dx in range(-radius, radius + 1):
                        difference = z(index, y + dy, x + dx) - z(other, y + qy + dy, x + qx + dx)
                        total += float(difference @ difference)
                distance = total / (channels * (2 * radius + 1) ** 2)
                exponents.append(distance / (params.h / 255.0) ** 2)
                values.append(clip[other, _mirror(y + qy, height), _mirror(x + qx, width)])
    if params.weighting == "exponential":  # relative to the window's smallest u (see _weights)
        shift = min(exponents, default=0.0) if params.center_weight == "max" else 0.0
        weights = [math.exp(-(u - shift)) for u in exponents]
        center = 1.0
    else:
        weights = [(1.0 - u) ** 2 if u <= 1.0 else 0.0 for u in exponents]
        others = max(weights, default=0.0)
        center = others if params.center_weight == "max" and others > 0 else 1.0
    numerator = center * clip[index, y, x] + sum(w * v for w, v in zip(weights, values, strict=True))
    return numerator / (center + sum(weights))
