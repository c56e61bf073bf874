"""Y'CbCr planes <-> RGB, computed in floating point from the standards' formulas (ITU-T H.273).

FFmpeg's swscale (as PyAV calls it) read 10- to 16-bit Y'CbCr into RGB about half an 8-bit level
dark, wrote it back with an opposite luma offset, and resampled 4:2:0 chroma with an up and a
down filter that are not each other's inverse: a clean 10-bit 4:2:0 source came back with chroma
off by tens of levels. This module does both ways exactly at any depth, and resamples chroma
with a matched pair of filters so that a frame read and written again comes back within rounding:

- up: linear interpolation at the chroma samples' sites (MPEG-2 / H.264 / HEVC "left" siting:
  on the even luma columns, halfway between luma rows for 4:2:0; DV's 4:1:1 on every fourth
  column);
- down: the filter that undoes it, (-1, 2, 6, 2, -1) / 8 on co-sited samples (LeGall 5/3's
  analysis low-pass; 9 taps of the same kind for 4:1:1) and (-1, 3, 3, -1) / 4 on samples
  halfway between, low-pass filters that take out what a half-resolution plane cannot hold.
  swscale's 4:1:1 came back with its chroma 10 to 13 dB off (DV read and written again).

Values out of RGB's range (saturated colors next to dark ones, after chroma interpolation) are
clipped by the caller's integer frames; in-range frames round-trip. The GPU's export converts with
kernels/yuv.cu (``gpu.yuv``), the same arithmetic, the same samples; frames go to it as their
planes (``YuvFrame``).
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cores import compiled_module
from ..frames import yuv_plane_shapes

# FFmpeg's color matrices (AVColorSpace) -> (Kr, Kb): BT.709, FCC, BT.601 (as BT.470BG and as
# SMPTE 170M), SMPTE 240M, BT.2020 (non-constant luminance, and constant, approximated by it).
BT709, BT601 = 1, 5
MATRIX_WEIGHTS = {BT709: (0.2126, 0.0722), 4: (0.30, 0.11), BT601: (0.299, 0.114), 6: (0.299, 0.114)}
MATRIX_WEIGHTS |= {7: (0.212, 0.087), 9: (0.2627, 0.0593), 10: (0.2627, 0.0593)}
HD_LINES = 720  # an untagged source this tall or taller is BT.709, shorter BT.601, as players take it
FULL_RANGE = 2  # AVCOL_RANGE_JPEG
CHROMA_CENTRE = 0.5  # Pb and Pr are centred on it in the luma/chroma filter's planes, inside [0, 1]


@dataclass(frozen=True)
class YuvLayout:
    """How a planar Y'CbCr pixel format stores a frame.

    Attributes
    ----------
    pixel_format : str
        FFmpeg's name ("yuv420p10le", ...).
    bits : int
        Bits per sample.
    chroma_shift : (int, int)
        log2 of the chroma subsampling across and down: (1, 1) for 4:2:0, (1, 0) 4:2:2, (0, 0) 4:4:4.
    weights : (float, float)
        The matrix's Kr and Kb.
    full_range : bool
        Samples span 0 .. 2^bits - 1 (JPEG); else luma 16..235 and chroma 16..240, times 2^(bits - 8).
    alpha : bool
        A fourth plane holds opacity (ProRes 4444, yuva formats): not read, written opaque.
    """

    pixel_format: str
    bits: int
    chroma_shift: tuple[int, int]
    weights: tuple[float, float]
    full_range: bool
    alpha: bool = False

    @property
    def sample_dtype(self) -> np.dtype:
        """The samples' dtype: uint8 for up to 8 bits, else uint16."""
        return np.dtype(np.uint8 if self.bits <= 8 else np.uint16)

    @property
    def stored_dtype(self) -> np.dtype:
        """The samples as the frame stores them: big-endian for the "be" formats (raw video)."""
        return self.sample_dtype.newbyteorder(">" if self.pixel_format.endswith("be") else "<")

    def coefficients(self) -> np.ndarray:
        """(luma offset, luma scale, chroma offset, chroma scale) in samples, then Kr, Kb and the largest sample.

        As float64 for the kernels.
        """
        top = 2.0**self.bits - 1
        if self.full_range:
            scales = (0.0, top, 2.0 ** (self.bits - 1), top)
        else:
            step = 2.0 ** (self.bits - 8)
            scales = (16 * step, 219 * step, 128 * step, 224 * step)
        return np.array([*scales, *self.weights, top])


def yuv_layout(pixel_format: str, color: dict[str, int], height: int) -> YuvLayout | None:
    """Return the layout of ``pixel_format`` with the matrix and range ``color`` tags (FFmpeg's codes).

    The matrix of an untagged source is guessed from its ``height`` in lines as players guess it
    (BT.709 from HD_LINES up, else BT.601); None where this module does not convert the format (RGB,
    gray, packed, 4:1:0: swscale does).
    """
    full = color.get("range") == FULL_RANGE or pixel_format.startswith("yuvj")
    return _layout(pixel_format, color.get("colorspace", 2), full, height >= HD_LINES)


@functools.lru_cache(maxsize=64)
def _layout(pixel_format: str, colorspace: int, full: bool, high_definition: bool) -> YuvLayout | None:
    """``yuv_layout``'s answer, worked out once per format and tags (the reader asks per frame)."""
    import av

    side = 16  # a size every subsampling divides, so that the planes' sizes give its factors
    form = av.VideoFormat(pixel_format, side, side)
    components = form.components
    planar = [component.plane for component in components] in ([0, 1, 2], [0, 1, 2, 3])
    if form.is_rgb or not planar or form.has_palette or form.is_bayer:
        return None
    bits = components[0].bits
    shift = ((side // components[1].width).bit_length() - 1, (side // components[1].height).bit_length() - 1)
    if shift[0] > 2 or shift[1] > 1 or bits > 16 or any(component.bits != bits for component in components):
        return None
    guessed = BT709 if high_definition else BT601
    weights = MATRIX_WEIGHTS.get(colorspace, MATRIX_WEIGHTS[guessed])
    return YuvLayout(pixel_format, bits, shift, weights, full, alpha=len(components) == 4)


def planes_to_rgb(planes: list[np.ndarray], layout: YuvLayout, dtype: np.dtype) -> np.ndarray:
    """Y, Cb, Cr sample planes -> (H, W, 3) RGB of ``dtype``.

    ``dtype``: uint8 or uint16 at its full scale, rounded and clipped; or float32 in 0..1, unclipped
    (colours past RGB's range, as a Y'CbCr source's noise takes them there, stay past it).
    """
    rgb = np.empty((*planes[0].shape, 3), dtype)
    rounded = rgb.dtype.kind == "u"
    full_scale = float(np.iinfo(dtype).max) if rounded else 1.0
    kernels = compiled_module(".yuv_kernels", __package__)
    kernels.to_rgb(*planes, *layout.chroma_shift, layout.coefficients(), full_scale, rounded, rgb)
    return rgb


def planes_to_ycbcr(planes: list[np.ndarray], layout: YuvLayout) -> tuple[np.ndarray, np.ndarray]:
    """Y, Cb, Cr sample planes -> Y' (H, W, 1) and (Pb + 0.5, Pr + 0.5, 0) (H, W, 3), float32, unclipped.

    Y' is 0..1 from black to white, Pb and Pr -0.5..0.5, chroma interpolated as ``planes_to_rgb``
    interpolates it; samples past the range (super-whites, sub-blacks) stay past it. The planes the
    luma/chroma filter takes (``LumaChromaDenoiser.export_yuv``), with no RGB between.
    """
    shape = planes[0].shape
    luma, chroma = np.empty((*shape, 1), np.float32), np.empty((*shape, 3), np.float32)
    kernels = compiled_module(".yuv_kernels", __package__)
    kernels.to_ycbcr(*planes, *layout.chroma_shift, layout.coefficients(), luma, chroma)
    return luma, chroma


def ycbcr_to_planes(luma: np.ndarray, chroma: np.ndarray, layout: YuvLayout) -> list[np.ndarray]:
    """``planes_to_ycbcr``'s inverse: Y' and chroma -> sample planes of the layout's dtype, rounded and clamped.

    Chroma decimated by the filters that undo its interpolation, so that planes converted both
    ways come back as they were, past the range included.
    """
    height, width = luma.shape[:2]
    planes = [np.empty(shape, layout.sample_dtype) for shape in yuv_plane_shapes(height, width, layout.chroma_shift)]
    differences = _scratch("differences", (2, height, width), np.dtype(np.float32))
    kernels = compiled_module(".yuv_kernels", __package__)
    kernels.from_ycbcr(luma, chroma, layout.coefficients(), *planes, differences, *layout.chroma_shift)
    return planes


def rgb_to_planes(rgb: np.ndarray, layout: YuvLayout) -> list[np.ndarray]:
    """(H, W, 3) uint8 / uint16 RGB at its full scale -> Y, Cb, Cr sample planes of the layout's dtype.

    Rounded and clamped to 0 .. 2^bits - 1.
    """
    planes = [np.empty(shape, layout.sample_dtype) for shape in yuv_plane_shapes(*rgb.shape[:2], layout.chroma_shift)]
    _convert_to_planes(rgb, layout, planes)
    return planes


def rgb_to_frame(rgb: np.ndarray, layout: YuvLayout) -> Any:
    """(H, W, 3) RGB as ``rgb_to_planes`` takes it -> a PyAV frame of the layout's pixel format.

    The planes are converted into arrays this thread keeps from frame to frame (the kernels always
    see contiguous planes, so that the conversion ``warm_up_writing`` compiled is the one every
    frame size uses), then copied into the frame (``planes_to_frame``).
    """
    shapes = yuv_plane_shapes(*rgb.shape[:2], layout.chroma_shift)
    planes = [_scratch(f"plane{index}", shape, layout.sample_dtype) for index, shape in enumerate(shapes)]
    _convert_to_planes(rgb, layout, planes)
    return planes_to_frame(planes, layout)


def planes_to_frame(planes: list[np.ndarray], layout: YuvLayout) -> Any:
    """Y, Cb, Cr sample planes of ``layout.sample_dtype`` -> a PyAV frame of the layout's pixel format.

    Copied into the frame's planes (their rows padded, in the format's byte order); alpha, where the
    format has it, opaque.
    """
    import av

    height, width = planes[0].shape
    frame = av.VideoFrame(width, height, layout.pixel_format)
    views = [_plane_samples(plane, layout) for plane in frame.planes]
    for view, samples in zip(views, planes, strict=False):
        view[...] = samples
    if layout.alpha:
        views[3][...] = 2**layout.bits - 1
    return frame


@dataclass(frozen=True)
class YuvFrame:
    """A frame as Y'CbCr sample planes, unconverted: what the GPU's export takes and gives.

    Attributes
    ----------
    planes : list of numpy.ndarray
        Y, Cb, Cr, each 2D of ``layout.sample_dtype``, in the shapes ``frames.yuv_plane_shapes`` gives.
    layout : YuvLayout
        How the samples code the pixels.
    """

    planes: list[np.ndarray]
    layout: YuvLayout

    @property
    def shape(self) -> tuple[int, int, int]:
        """(H, W, 3): the RGB frame's shape."""
        return (*self.planes[0].shape, 3)


def _convert_to_planes(rgb: np.ndarray, layout: YuvLayout, planes: list[np.ndarray]) -> None:
    across, down = layout.chroma_shift
    scale = 1.0 / np.iinfo(rgb.dtype).max
    differences = _scratch("differences", (2, *rgb.shape[:2]), np.dtype(np.float32))  # Cb, Cr before decimation
    kernels = compiled_module(".yuv_kernels", __package__)
    kernels.to_planes(rgb, scale, layout.coefficients(), *planes, differences, across, down)


_SCRATCH = threading.local()


def _scratch(name: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Return this thread's array ``name`` of ``shape`` and ``dtype``, made again only when they change.

    Kept from frame to frame: a new one each frame (the chroma scratch: 16 MB at 1080p, 66 MB at
    4K) is fresh pages the kernel must fault in and zero wherever the allocator returns large
    blocks to the system at once (above 32 MB always; below it too in a Dask worker, whose
    MALLOC_TRIM_THRESHOLD_ says so), which took as long as the conversion itself at 1080p.
    """
    kept = getattr(_SCRATCH, name, None)
    if kept is None or kept.shape != shape or kept.dtype != dtype:
        kept = np.empty(shape, dtype)
        setattr(_SCRATCH, name, kept)
    return kept


def _plane_samples(plane: Any, layout: YuvLayout) -> np.ndarray:
    """Return a PyAV frame plane's samples as an array of ``layout.stored_dtype``: a view, without the rows' padding."""
    row = plane.line_size // layout.sample_dtype.itemsize
    return np.frombuffer(plane, layout.stored_dtype).reshape(plane.height, row)[:, : plane.width]


def frame_planes(frame: Any, layout: YuvLayout) -> list[np.ndarray]:
    """Return a decoded PyAV frame's Y, Cb, Cr sample planes as arrays of ``layout.sample_dtype``.

    Views where the frame stores them in this machine's byte order.
    """
    return [_plane_samples(plane, layout).astype(layout.sample_dtype, copy=False) for plane in frame.planes[:3]]


def warm_up_writing(pixel_format: str = "yuv420p") -> None:
    """Load (on a first run, compile) the conversion of RGB to ``pixel_format`` now, on a tiny frame.

    A live run does so before its source sends: loading it takes a second or more on the first frame
    written, and frames that arrive meanwhile would be dropped. (The other way is loaded as the
    reader decodes its first frame: its planes' strides, part of what numba compiles for, are the
    decoder's.)
    """
    layout = yuv_layout(pixel_format, {}, 16)
    if layout is not None:
        rgb_to_planes(np.zeros((16, 16, 3), layout.sample_dtype), layout)
