"""Input frames: the dtype policy and the shape checks every backend relies on.

Integer frames are scaled once, here, to float32 in [0, 1] (uint8 by 1/255, uint16 by
1/65535); floating frames are taken as they are, as float32, with 0..1 as full scale. Gray frames
(H, W) become (H, W, 1). uint16 frames of fewer bits per sample (VapourSynth hands 10-bit planes
as uint16 holding 0..1023) are declared with ``bit_depth`` and brought to 16-bit full scale
first; uint16 frames without a declared depth whose values all fit in AMBIGUOUS_BITS are refused.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

CHANNEL_COUNTS = (1, 3)
OUTPUT_DTYPES = (np.dtype(np.float32), np.dtype(np.uint8), np.dtype(np.uint16))  # the filter's outputs
FULL_SCALE_BITS = 16  # uint16 frames at 16-bit full scale, as the video readers give deep sources
BIT_DEPTHS = range(9, FULL_SCALE_BITS + 1)  # the depths uint16 frames may declare
# An undeclared uint16 frame whose values all fit in this many bits is 9- to 12-bit samples, or a
# 16-bit frame darker than 1/16 of full scale: the depth decides h's meaning, so it is asked for.
AMBIGUOUS_BITS = 12
FLOAT_LIMIT = 1e3  # float frames beyond +-1000 full scales are refused: their squared distances lose all precision
# A float frame whose mean lies outside these full scales is on another scale (0..255, most
# likely). The mean, not the extremes: unclipped noise and HDR highlights reach beyond [0, 1]
# in a few pixels, yet leave the mean inside.
FLOAT_MEAN_RANGE = (-1.0, 2.0)


def checked_frame(frame: np.ndarray, bit_depth: int | None = None) -> np.ndarray:
    """One frame as (H, W, C) uint8, uint16 (at 16-bit full scale) or float32, validated, not yet scaled.

    ``bit_depth`` declares the bits per sample of uint16 frames (9..16; ignored for uint8 and
    float frames): a 10-bit frame's 0..1023 become 0..65535 here.

    Raises
    ------
    ValueError
        Not numbers (None, text), no pixels, an unsupported dtype, wrong number of dimensions or
        channels, non-finite values, values
        beyond +-FLOAT_LIMIT (the message says where), or a float frame whose mean lies outside
        FLOAT_MEAN_RANGE (not on the 0..1 scale); a ``bit_depth`` outside 9..16, uint16 values
        beyond it, or uint16 values that all fit in AMBIGUOUS_BITS without a ``bit_depth``.
    """
    try:
        array = np.asarray(frame)
    except ValueError:  # rows of different lengths
        array = np.asarray(frame, dtype=object)
    if array.dtype.kind in "OUSV":  # None, text, nested lists of different lengths
        got = repr(array.item())[:40] if array.ndim == 0 else f"an array of {array.dtype} of shape {array.shape}"
        raise ValueError(f"a frame must be an array of numbers, got {got}")
    array = native_order(array)
    if array.ndim == 2:
        array = array[:, :, np.newaxis]
    if array.ndim != 3 or array.shape[2] not in CHANNEL_COUNTS:
        raise ValueError(f"a frame must be (H, W) gray or (H, W, C) with C = 1 or 3, got shape {np.shape(frame)}")
    if not array.size:
        raise ValueError(f"a frame must have at least 1x1 pixels, got shape {np.shape(frame)}")
    check_bit_depth(bit_depth)
    if array.dtype == np.uint16:
        return at_full_scale(np.ascontiguousarray(array), bit_depth)
    if array.dtype == np.uint8:
        return np.ascontiguousarray(array)
    if array.dtype.kind != "f":
        raise ValueError(f"frames must be uint8, uint16 or floating point, got dtype {array.dtype}")
    result = np.ascontiguousarray(array, dtype=np.float32)
    low, high = float(result.min()), float(result.max())
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError("frames must be finite, got NaN or infinity")
    if max(-low, high) > FLOAT_LIMIT:
        row, column, channel = np.unravel_index(int(np.argmax(np.abs(result))), result.shape)
        raise ValueError(
            f"float frames are taken in [0, 1]; got {result[row, column, channel]:g} at row {row}, column {column}, "
            f"channel {channel} (values beyond +-{FLOAT_LIMIT:g} are refused: scale the frames to [0, 1])"
        )
    mean = float(result.mean(dtype=np.float64))
    if not FLOAT_MEAN_RANGE[0] <= mean <= FLOAT_MEAN_RANGE[1]:
        raise ValueError(
            f"float frames are read with 0..1 as full scale, but this frame's values average {mean:.3g} "
            f"(from {low:.4g} to {high:.4g}): divide 8-bit values by 255 (16-bit values by 65535), or pass "
            "uint8 / uint16 frames"
        )
    return result


def check_bit_depth(bit_depth: int | None) -> None:
    """Refuse a ``bit_depth`` other than None or 9..16 (ValueError)."""
    if bit_depth is not None and (isinstance(bit_depth, bool) or bit_depth not in BIT_DEPTHS):
        raise ValueError(
            f"bit_depth must be an integer in 9..16 (the bits of uint16 frames' samples), got {bit_depth!r}"
        )


def output_dtype(dtype: Any) -> np.dtype:
    """Return ``dtype`` as the dtype of the filter's outputs, or ValueError unless float32, uint8 or uint16.

    The outputs' own: float32 in [0, 1], or integers at full scale; other types are the caller's
    conversion to make (NumPy's ``astype``).
    """
    try:
        chosen = np.dtype(dtype)
    except TypeError:
        chosen = None
    if chosen not in OUTPUT_DTYPES:
        shown = repr(dtype) if chosen is None else str(chosen)
        raise ValueError(
            f"the output dtype must be float32, uint8 or uint16, got {shown}: take float32 and convert it "
            "(for example .astype(np.float64))"
        )
    return chosen


def native_order(array: np.ndarray) -> np.ndarray:
    """Return ``array`` in this machine's byte order: a big-endian file's samples, swapped (a copy), or itself."""
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def at_full_scale(frame: Any, bit_depth: int | None) -> Any:
    """Return a uint16 frame of ``bit_depth`` bits per sample at 16-bit full scale (rounded).

    A NumPy or a CuPy array, scaled where it is. ValueError as ``checked_frame`` says.
    """
    if bit_depth == FULL_SCALE_BITS:
        return frame
    high = int(frame.max())
    if bit_depth is None:
        if 0 < high < 2**AMBIGUOUS_BITS:  # all black is black at any depth
            bits = max(high.bit_length(), 9)
            raise ValueError(
                f"uint16 frames are read at 16-bit full scale, but this frame's values all fit in {bits} bits "
                f"(the largest is {high}): pass bit_depth={bits} if they are {bits}-bit samples (as VapourSynth "
                "gives 10-bit planes), or bit_depth=16 if they are 16-bit values (a dark frame of a 16-bit camera)"
            )
        return frame
    top = 2**bit_depth - 1
    if high > top:
        raise ValueError(f"bit_depth={bit_depth} holds samples up to {top}, but this frame has {high}")
    return ((frame.astype(np.uint32) * 65535 + top // 2) // top).astype(np.uint16)


def at_bit_depth(frame: np.ndarray, bit_depth: int | None) -> np.ndarray:
    """Return a uint16 frame at 16-bit full scale as ``bit_depth``-bit samples (rounded).

    The inverse of ``checked_frame``'s scaling; other frames, and ``bit_depth`` None or 16, as they
    are.
    """
    if frame.dtype != np.uint16 or bit_depth in (None, FULL_SCALE_BITS):
        return frame
    top = 2**bit_depth - 1
    return ((frame.astype(np.uint32) * top + 65535 // 2) // 65535).astype(np.uint16)


def integer_scale(dtype: np.dtype) -> float:
    """Return the factor that maps a frame dtype to [0, 1]: 1/255, 1/65535, or 1 for floats."""
    return {np.dtype(np.uint8): 1 / 255, np.dtype(np.uint16): 1 / 65535}.get(np.dtype(dtype), 1.0)


def source_bit_depth(dtype: Any) -> int | None:
    """Return the ``bit_depth`` that a source's frames, read as float32, state to the noise estimate.

    FULL_SCALE_BITS where the source gives uint16 frames (a deep video, as the readers give it),
    None for uint8 and floats: the clean floor stays the samples' (``samples_depth``).
    """
    return FULL_SCALE_BITS if np.dtype(dtype) == np.uint16 else None


def to_float32(frame: np.ndarray) -> np.ndarray:
    """Return a checked frame as float32, integers scaled to [0, 1]; float32 frames as they are."""
    if frame.dtype == np.float32:
        return frame
    return frame.astype(np.float32) * np.float32(integer_scale(frame.dtype))


def from_float32(frame: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Return a float frame in [0, 1] as uint8 / uint16 (rounded, clamped): the inverse of to_float32."""
    full_scale = np.iinfo(dtype).max
    return np.clip(np.rint(frame * full_scale), 0, full_scale).astype(dtype)


def check_same_shape(first: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """Refuse a frame whose shape is not the clip's first frame's."""
    if shape != first:
        raise ValueError(f"all frames of a clip must have one shape, got {first} and then {shape}")


def yuv_plane_shapes(height: int, width: int, chroma_shift: tuple[int, int]) -> list[tuple[int, int]]:
    """Return the Y, Cb and Cr planes' (rows, columns) of a ``height`` x ``width`` frame.

    ``chroma_shift``: log2 of the chroma subsampling (across, down), (1, 1) for 4:2:0; a chroma
    plane covers an odd last column or row with a sample of its own.
    """
    across, down = chroma_shift
    chroma = (-(-height >> down), -(-width >> across))
    return [(height, width), chroma, chroma]


def yuv_planes_size(height: int, width: int, chroma_shift: tuple[int, int]) -> int:
    """Return the samples of a frame's three planes together (``yuv_plane_shapes``)."""
    return sum(rows * columns for rows, columns in yuv_plane_shapes(height, width, chroma_shift))


def split_yuv_planes(buffer: Any, height: int, width: int, chroma_shift: tuple[int, int]) -> list[Any]:
    """Return the Y, Cb, Cr planes held one after the other in a flat ``buffer`` (views; NumPy or CuPy)."""
    planes, start = [], 0
    for rows, columns in yuv_plane_shapes(height, width, chroma_shift):
        planes.append(buffer[start : start + rows * columns].reshape(rows, columns))
        start += rows * columns
    return planes
