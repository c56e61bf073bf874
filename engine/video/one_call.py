"""``denoise``: an image or a clip in an array, denoised in one call with the filter ``denoise`` chooses.

For people who already hold their pictures in arrays (NumPy, CuPy, anything with the array or
CUDA array interface): the same shape, dtype and range come back. The strengths come from the
noise as the command line chooses them (``choose_filter``), or from a sigma or an h given.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any

import numpy as np

from ..backend import cupy_module, resolve_backend
from ..cpu.compiled import announce_compile
from ..frames import (
    CHANNEL_COUNTS,
    FULL_SCALE_BITS,
    at_bit_depth,
    at_full_scale,
    check_bit_depth,
    from_float32,
    native_order,
)
from .choose_h import apply_estimate
from .default_filter import (
    AUTO,
    GIVEN,
    FilterChoice,
    choose_filter,
    given_strength_center,
    noise_line,
    sure_sample_length,
)
from .filters import cpu_filter_compiles
from .luma_chroma import matrix_for
from .noise import estimate_noise
from .noise_estimate import BLOCK, samples_depth
from .params import NLMParams
from .preview import SyntheticNoise

_DEFAULTS = NLMParams()  # the signature's defaults are the filter's own
# Says, at INFO, the noise measured and the filter chosen for it (``noise_line``), and what a person
# should know of the estimate: ``denoise photo.png`` prints them, as ``denoise`` does for a clip.
CHOICE_LOGGER = logging.getLogger(__name__)
_DTYPES = (np.uint8, np.uint16, np.float32, np.float64)
_CUDA_DLPACK_DEVICES = (2, 3, 13)  # DLPack's kDLCUDA, kDLCUDAHost, kDLCUDAManaged
_UNTAGGED = 2  # FFmpeg's "unspecified" colorspace: ``matrix_for`` then goes by the height, as for a file


def denoise(
    data: Any,
    *,
    h: float | None = None,
    sigma: float | None = None,
    roi: tuple[int, int, int, int] | None = None,
    patch_radius: int = _DEFAULTS.patch_radius,
    search_radius: int = _DEFAULTS.search_radius,
    frames_past: int = _DEFAULTS.frames_past,
    frames_future: int = _DEFAULTS.frames_future,
    channel_axis: int | None = -1,
    time_axis: int | None = None,
    weighting: str = _DEFAULTS.weighting,
    center_weight: str = AUTO,
    backend: str = "auto",
    bit_depth: int | None = None,
) -> Any:
    """Denoise an image or a clip with Non-Local Means; the same shape, dtype and range come back.

    Parameters
    ----------
    data : array_like or CuPy array
        An image (H, W) or (H, W, C), or a clip (T, H, W) or (T, H, W, C), C = 1 or 3 (gray or
        RGB); ``time_axis`` and ``channel_axis`` say where those axes are. uint8 (0..255), uint16
        (``bit_depth`` bits) or float32 / float64 with 0..1 as full scale. A CuPy array, or any
        object with ``__cuda_array_interface__`` or a CUDA DLPack capsule, is filtered on its GPU.
    h : float, optional
        Strength in 8-bit levels (1/255 of full scale, whatever the dtype), 0.001 to 10000: the
        filter at this h in ``data``'s own channels, as ``denoise --h`` runs it (Notes). None:
        chosen from ``sigma``, else from the noise measured on ``data``.
    sigma : float, optional
        The noise's standard deviation in 8-bit levels, 0 to 255, white and the same in every
        channel: the filter ``choose_filter`` chooses for it, without measuring. Not with ``h``.
        0: no noise, ``data`` comes back unchanged (a copy).
    roi : (x, y, width, height), optional
        Where the noise is measured, in pixels of a frame (``estimate_noise``'s ``roi``): a flat
        region, for a picture whose texture, found everywhere, would be read as noise. None: the
        flattest blocks. Not with ``sigma``.
    patch_radius : int
        B in pixels, 0..8: patches are (2B+1) x (2B+1).
    search_radius : int
        A in pixels, 0..16: the search window is (2A+1) x (2A+1).
    frames_past, frames_future : int
        Dp and Df, 0..8: frames searched before and after each frame of a clip (an image has none).
    channel_axis : int or None
        The colour axis where ``data`` has one (an image of 3 dimensions, a clip of 4), negative
        from the end; ignored for a gray image (H, W) or clip (T, H, W). None: ``data`` is gray.
    time_axis : int or None
        The time axis of a clip; None: ``data`` of 2 or 3 dimensions is one image, and of 4 a clip
        whose first axis other than ``channel_axis`` is time. A gray clip (T, H, W) needs it.
    weighting : {"exponential", "bisquare"}
        The weight of a patch distance, as ``NLMParams`` takes it.
    center_weight : {"auto", "max", "one"}
        The weight of the pixel itself, as ``NLMParams`` takes it; "auto": chosen with the
        strength (Notes), "max" where ``h`` is given.
    backend : {"auto", "cpu", "gpu"}
        Where the filter runs; "auto": NLMEANS_BACKEND, else the GPU where CuPy finds one.
    bit_depth : int, optional
        Bits per sample of uint16 ``data``, 9..16: 10 or 12 for such samples held in uint16
        (0..1023, 0..4095), which come back at that depth. None: 16, refused where every value
        fits in 12 bits (the depth is then ambiguous, and decides what h means). Refused for
        other dtypes.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The denoised ``data``: its shape, dtype and axes; integers rounded. A CuPy array on
        ``data``'s device where ``data`` was on a GPU, else a NumPy array.

    Raises
    ------
    ValueError
        ``data`` of another dtype or number of dimensions, a colour axis of other than 1 or 3
        entries, a time or colour axis outside ``data`` or the same axis for both, frames smaller
        than ``search_radius + patch_radius + 1``, float values not on the 0..1 scale, uint16
        values beyond ``bit_depth`` or all within 12 bits without it, ``bit_depth`` for data of
        another dtype; a masked array with masked values; both ``h`` and ``sigma``, or
        either or a parameter out of its range; frames too small to measure the noise on (16 x 16
        pixels) without ``h`` or ``sigma``.
        The message names the value and the fix.
    BackendUnavailableError
        backend="gpu" where CuPy or a CUDA device is missing.

    Notes
    -----
    Without ``h`` or ``sigma`` the filter is the one ``nlmeans-studio denoise`` chooses for a file
    (``choose_filter``): the noise measured on ``data`` (``estimate_noise``); a colour image or
    clip filtered in Y'CbCr (BT.709 from 720 lines up, BT.601 below, as an untagged file is read)
    with one strength for luma and one for chroma; unless it is an encoder's noise, their factor
    and the centre weight ("max" or "one") chosen by Stein's unbiased risk estimate on the middle
    frames' centre (40 filter runs of 192 x 192 pixels a frame, a second or two on the CPU); for
    an encoder's noise or noise under a level, the centre weight "one" (light noise: "max"
    averages each pixel with its best match, the frame's own detail). With ``sigma`` the same,
    for white noise of that sigma. With ``h`` the image is filtered in its own channels at that
    strength, decorrelated where its measured noise lies off the gray axis
    (``decorrelation_decision``), as ``denoise --h`` does; frames under 16 x 16 pixels, too small
    to measure, are filtered in their channels as they are. For white noise of sigma levels, h of
    about 0.55 to 0.85 sigma suits the default exponential weights, 1.5 to 2 sigma the bisquare.

    The cost grows with the window: (2A+1)^2 (Dp + Df + 1) offsets a pixel. The first call on the
    CPU in a process where numba's cache holds no build of the filter compiles it (up to a
    minute, once a machine); it is announced by a warning of the ``nlmeans_studio.engine`` loggers.
    The noise is measured on a host copy of a GPU array; the filtering stays on the GPU. Calls from
    several threads at once give what serial calls give.

    Examples
    --------
    >>> import numpy as np
    >>> from nlmeans_studio import denoise
    >>> rows, columns = np.mgrid[0:48, 0:64]
    >>> clean = np.stack([100 + rows, 100 + columns, 150 + 0 * rows], axis=-1)  # a smooth RGB ramp
    >>> noise = np.random.default_rng(0).normal(0, 10, clean.shape)  # sigma 10 levels
    >>> noisy = np.clip(clean + noise, 0, 255).astype(np.uint8)
    >>> denoised = denoise(noisy, patch_radius=1, search_radius=2)
    >>> denoised.shape, denoised.dtype
    ((48, 64, 3), dtype('uint8'))
    >>> bool(np.abs(denoised - clean).mean() < np.abs(noisy - clean).mean() / 2)
    True

    A gray clip needs its time axis; a float one comes back float:

    >>> clip = np.random.default_rng(1).uniform(0.4, 0.6, (3, 48, 64)).astype(np.float32)
    >>> denoise(clip, time_axis=0, sigma=10, patch_radius=1, search_radius=1).dtype
    dtype('float32')
    """
    if isinstance(data, np.ma.MaskedArray) and np.ma.getmaskarray(data).any():
        raise ValueError(
            f"data is a masked array with {int(np.ma.count_masked(data))} masked values, and the filter would "
            "average them in and drop the mask: fill them (data.filled(value)) and mask the result again"
        )
    on_gpu = _on_gpu(data)
    array = _device_array(data) if on_gpu else _host_array(data)
    frames_axes = _frames_axes(array.shape, channel_axis, time_axis)
    if array.dtype not in _DTYPES:
        raise ValueError(
            f"data must be uint8, uint16, float32 or float64 (floats with 0..1 as full scale), got {array.dtype}"
        )
    _check_samples(array, finite=not on_gpu)  # a GPU array's check would cross the bus
    check_bit_depth(bit_depth)
    if bit_depth is not None and array.dtype != np.uint16:
        raise ValueError(
            f"bit_depth is for uint16 data holding {bit_depth}-bit samples, got {array.dtype} data: leave bit_depth "
            "out, or pass the samples as uint16"
        )
    if array.dtype == np.uint16 and bit_depth is None:
        at_full_scale(array, None)  # refuses values that all fit in 12 bits: their depth decides h's meaning
    depth = (bit_depth or FULL_SCALE_BITS) if array.dtype == np.uint16 else None
    if h is not None and sigma is not None:
        raise ValueError(f"give h or sigma, not both: got h={h!r} and sigma={sigma!r}")
    if roi is not None and sigma is not None:
        raise ValueError(f"give roi (where the noise is measured) or sigma, not both: got roi={roi!r}")
    if sigma is not None and not _is_sigma(sigma):
        raise ValueError(f"sigma must be a number of 8-bit levels in 0..255, got {sigma!r}")
    window = NLMParams(
        patch_radius=patch_radius,
        search_radius=search_radius,
        frames_past=frames_past,
        frames_future=frames_future,
        weighting=weighting,
        center_weight=_DEFAULTS.center_weight if center_weight == AUTO else center_weight,
    )
    frames = _as_frames(array, frames_axes)  # (T, H, W, C), a view
    chosen = resolve_backend(backend)
    if sigma == 0:  # no noise: any filter would only move pixels towards their best match
        return array.copy()
    if chosen == "cpu":  # before SURE, whose filter runs are the first
        announce_compile(cpu_filter_compiles)
    choice = _chosen_filter(frames, window, h, sigma, roi, depth, chosen, center_weight)
    filtered = (
        _filtered_on_its_gpu(choice, frames, depth, chosen) if on_gpu else _exported(choice, frames, depth, chosen)
    )
    if array.dtype.kind == "f":  # luma/chroma's way back to RGB can leave the gamut: not past [0, 1] nor the input
        low, high = array.min(), array.max()  # on a GPU they stay there: no wait for the host
        filtered = filtered.clip(low.clip(max=0.0), high.clip(min=1.0))
    return _as_given(filtered.astype(array.dtype, copy=False), array.shape, frames_axes)


def _is_sigma(sigma: object) -> bool:
    """Whether ``sigma`` is a real number of 8-bit levels in 0..255."""
    number = not isinstance(sigma, bool) and isinstance(sigma, (int, float, np.integer, np.floating))
    return number and math.isfinite(sigma) and 0 <= sigma <= 255


def _host_array(data: Any) -> np.ndarray:
    """Return ``data`` as a NumPy array in this machine's byte order, or ValueError where it holds no numbers."""
    array = np.asarray(data)
    if array.dtype.kind in "OUSV":  # None, a path, text, ragged lists
        shown = repr(data)[:40] if array.ndim == 0 else f"an array of {array.dtype} of shape {array.shape}"
        raise ValueError(
            f"data must be an array of numbers (NumPy, CuPy or anything array-like), got {shown}; "
            "to denoise a file, read it first or run nlmeans-studio denoise"
        )
    return native_order(array)


def _check_samples(array: Any, *, finite: bool) -> None:
    """ValueError where ``array`` holds no samples, or (``finite``) NaN or infinite ones: their count, the way out."""
    if array.size == 0:
        raise ValueError(
            f"data of shape {array.shape} holds no samples: give an image (H, W[, C]) or a clip (T, H, W[, C]) "
            "of at least one pixel"
        )
    if finite and array.dtype.kind == "f" and not np.isfinite(array.min() + array.max()):  # NaN or inf reaches one
        count = int(np.count_nonzero(~np.isfinite(array)))
        raise ValueError(
            f"data must be finite, got {count} NaN or infinite values: replace them first (np.nan_to_num(data), "
            "or the neighbours' mean)"
        )


def _on_gpu(data: Any) -> bool:
    """Whether ``data`` is an array in a GPU's memory (CUDA array interface, or a CUDA DLPack device)."""
    if hasattr(data, "__cuda_array_interface__"):
        return True
    dlpack_device = getattr(data, "__dlpack_device__", None)
    return dlpack_device is not None and dlpack_device()[0] in _CUDA_DLPACK_DEVICES


def _device_array(data: Any) -> Any:
    """Return a GPU array as a CuPy array on its device, sharing its memory."""
    cupy = cupy_module()
    return cupy.asarray(data) if hasattr(data, "__cuda_array_interface__") else cupy.from_dlpack(data)


@dataclasses.dataclass(frozen=True)
class _FramesAxes:
    """Where a given array keeps time and colour: axes of it, or None where it has none."""

    time: int | None
    channel: int | None


def _frames_axes(shape: tuple[int, ...], channel_axis: int | None, time_axis: int | None) -> _FramesAxes:
    """Return the time and colour axes of an array of ``shape``, or ValueError naming the axis and the fix."""
    dimensions = len(shape)
    if dimensions not in (2, 3, 4):
        raise ValueError(
            f"data must be an image (H, W) or (H, W, C), or a clip (T, H, W) or (T, H, W, C), got {dimensions} "
            f"dimensions of shape {shape}"
        )
    time = None if time_axis is None else _axis("time_axis", time_axis, shape)
    if dimensions == 2 and time is not None:
        raise ValueError(f"time_axis={time_axis} names an axis of a 2D array {shape}, which is one gray image (H, W)")
    spatial = dimensions - (time is not None or dimensions == 4)
    if spatial == 2:  # gray: (H, W) or (T, H, W)
        return _FramesAxes(time, None)
    if channel_axis is None:
        raise ValueError(
            f"channel_axis=None says data of shape {shape} is gray, but then it has an axis too many: give the "
            "colour axis as channel_axis, or time_axis for a gray clip (T, H, W)"
        )
    channel = _axis("channel_axis", channel_axis, shape)
    if channel == time:
        raise ValueError(f"time_axis and channel_axis name the same axis ({channel}) of data of shape {shape}")
    if shape[channel] not in CHANNEL_COUNTS:
        raise ValueError(
            f"channel_axis={channel_axis} of data of shape {shape} has {shape[channel]} entries, but colour is 1 "
            f"(gray) or 3 (RGB) channels: {_channels_way_out(shape[channel], dimensions == 3 and time is None)}"
        )
    if time is None and dimensions == 4:
        time = next(axis for axis in range(dimensions) if axis != channel)
    return _FramesAxes(time, channel)


def _channels_way_out(count: int, gray_clip: bool) -> str:
    """Return what to do with an image of ``count`` channels, neither gray nor RGB (the end of its refusal)."""
    ways = {
        4: "RGBA? denoise the colour (data[..., :3]) and keep the alpha as it is",
        2: "gray and alpha? denoise the gray channel (data[..., 0]) and keep the alpha as it is",
    }.get(count, "give the colour axis as channel_axis, or denoise each channel as a gray image (H, W)")
    volume = "a 3D volume (MRI, a microscope's stack) goes to nlmeans_studio.engine.denoise_volume"
    return f"{ways}; a gray clip (T, H, W) needs time_axis=0; {volume}" if gray_clip else ways


def _axis(name: str, axis: object, shape: tuple[int, ...]) -> int:
    """``axis`` of an array of ``shape`` as a non-negative index, or ValueError."""
    dimensions = len(shape)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -dimensions <= axis < dimensions:
        raise ValueError(
            f"{name} must be an integer in {-dimensions}..{dimensions - 1} for data of shape {shape}, got {axis!r}"
        )
    return int(axis) % dimensions


def _as_frames(array: Any, axes: _FramesAxes) -> Any:
    """``array`` as (T, H, W, C) frames: time first, colour last, a view of it."""
    if axes.channel is None:
        array = array[..., None]
        channel = array.ndim - 1
    else:
        channel = axes.channel
    if axes.time is None:
        return array.transpose([*(a for a in range(array.ndim) if a != channel), channel])[None]
    return array.transpose([axes.time, *(a for a in range(array.ndim) if a not in (axes.time, channel)), channel])


def _as_given(frames: Any, shape: tuple[int, ...], axes: _FramesAxes) -> Any:
    """(T, H, W, C) ``frames`` back in the layout of the array of ``shape`` (the inverse of ``_as_frames``)."""
    if axes.time is None:
        frames = frames[0]
    if axes.channel is None:
        frames = frames[..., 0]
    rest = [axis for axis in range(len(shape)) if axis not in (axes.time, axes.channel)]
    order = [axis for axis in (axes.time, *rest, axes.channel) if axis is not None]  # the given axes, as held
    return frames.transpose(np.argsort(order).tolist())


def _chosen_filter(
    frames: Any,
    window: NLMParams,
    h: float | None,
    sigma: float | None,
    roi: tuple[int, int, int, int] | None,
    depth: int | None,
    backend: str,
    center_weight: str,
) -> FilterChoice:
    """Return the filter for (T, H, W, C) ``frames``: at ``h``, for ``sigma``, or for their noise measured (in ``roi``).

    ``center_weight``: "auto" or pinned, as ``choose_filter`` takes it.
    """
    channels = frames.shape[-1]
    matrix = matrix_for(_UNTAGGED, frames.shape[1])
    if h is not None:
        params = dataclasses.replace(window, h=h)  # validates h before the noise is measured
        if channels == 1 or min(frames.shape[1:3]) < BLOCK:  # nothing to decorrelate, or too small to measure
            return FilterChoice(params, None, how=GIVEN)
    host = frames if isinstance(frames, np.ndarray) else cupy_module().asnumpy(frames)  # the estimate's, on the CPU
    if sigma is not None:
        estimate = SyntheticNoise(float(sigma)).estimate(channels)
        estimate = dataclasses.replace(estimate, bit_depth=samples_depth(host.dtype, depth))
    else:
        estimate = estimate_noise(host, roi, bit_depth=depth)
    if h is not None:
        given = dataclasses.replace(window, center_weight=given_strength_center(estimate, center_weight))
        return FilterChoice(apply_estimate(given, estimate, h=h), None, how=GIVEN)
    count = sure_sample_length(window)
    middle = max(0, (len(host) - count) // 2)  # the middle frames, as ``denoise`` samples a file
    sample = np.stack([at_full_scale(frame, depth) if depth else frame for frame in host[middle : middle + count]])
    choice = choose_filter(estimate, window, matrix=matrix, sample=sample, backend=backend, center_weight=center_weight)
    if sigma is None:
        CHOICE_LOGGER.info(noise_line(estimate, choice))
        if estimate.warning:
            CHOICE_LOGGER.info(f"warning: {estimate.warning}")
    return choice


def _exported(choice: FilterChoice, frames: np.ndarray, depth: int | None, backend: str) -> np.ndarray:
    """Return (T, H, W, C) ``frames`` through the filter on ``backend``, as an export gives them.

    Of their dtype, rounded where it is an integer (uint16 at ``depth`` bits); float32 for floats.
    """
    dtype = np.dtype(np.float32) if frames.dtype.kind == "f" else frames.dtype
    return np.stack(list(choice.denoiser(backend, bit_depth=depth).export_stream(frames, dtype)))


def _filtered_on_its_gpu(choice: FilterChoice, frames: Any, depth: int | None, backend: str) -> Any:
    """Return (T, H, W, C) CuPy ``frames`` filtered on ``backend``, as a CuPy array on their GPU.

    On the GPU they are converted there to float32 and back: no trip over the bus.
    """
    cupy = cupy_module()
    with cupy.cuda.Device(frames.device.id):
        if backend == "cpu":
            return cupy.asarray(_exported(choice, cupy.asnumpy(frames), depth, backend))
        scaled = frames if depth is None else at_full_scale(frames, depth)
        floats = cupy.ascontiguousarray(scaled, dtype=cupy.float32)
        if scaled.dtype.kind != "f":
            floats *= cupy.float32(1 / np.iinfo(scaled.dtype).max)
        filtered = cupy.stack(list(choice.denoiser("gpu").stream_on_device(iter(floats))))
        if frames.dtype.kind == "f":
            return filtered
        return at_bit_depth(from_float32(filtered, frames.dtype), depth)
