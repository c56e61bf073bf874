"""Luma/chroma processing: one strength for Y, another for Cb and Cr (issue 19).

Restorers treat chroma noise apart from luma noise (Neat Video; KNLMeansCL's ``channels="Y"``
and ``channels="UV"``, each with its own h). Here RGB frames are converted to Y'CbCr with the
source's matrix (BT.601 or BT.709, full range), and:

- Y is filtered with the patch distance taken on the Y plane alone, strength ``h_luma``;
- Cb and Cr are filtered together, the distance the mean over the two planes, ``h_chroma``;
- the window (B, A, Dp, Df, weighting, centre weight) is the same for both; the result goes
  back to RGB with the same matrix.

Each pass is the exact filter of DESIGN.md §1 on a plane group, so every backend computes it
exactly: Y as a one-channel clip, Cb and Cr as the three-channel clip (Cb, Cr, 0), whose mean
over three channels is 2/3 of the mean over the two planes, so that pass runs at
h_chroma * sqrt(2/3). That is the filter with G = diag(sqrt(3), 0, 0) (Y) and
G = diag(0, sqrt(3/2), sqrt(3/2)) (Cb, Cr) on the Y'CbCr frames, without a singular G.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..backend import cupy_module
from ..frames import (
    at_bit_depth,
    check_bit_depth,
    checked_frame,
    integer_scale,
    output_dtype,
    to_float32,
)
from ..gpu.yuv import YuvOnDevice
from ..media.yuv import CHROMA_CENTRE, HD_LINES, YuvFrame, YuvLayout, planes_to_ycbcr, ycbcr_to_planes
from .choose_h import suggest_h
from .denoiser import Denoiser
from .noise import estimate_noise
from .noise_estimate import NoiseEstimate
from .params import H_MIN, NLMParams

MATRICES = {"bt601": (0.299, 0.114), "bt709": (0.2126, 0.0722), "bt2020": (0.2627, 0.0593)}  # (Kr, Kb)
CHROMA_OFFSET = np.float32(CHROMA_CENTRE)  # Cb and Cr are centred on it while filtered


def yuv_matrix(matrix: str) -> np.ndarray:
    """Return the 3 x 3 RGB -> Y'CbCr matrix (full range, Cb and Cr in [-0.5, 0.5]) of ``matrix``.

    Raises
    ------
    ValueError
        ``matrix`` is not "bt601", "bt709" or "bt2020".
    """
    if matrix not in MATRICES:
        raise ValueError(f"matrix must be 'bt601', 'bt709' or 'bt2020', got {matrix!r}")
    kr, kb = MATRICES[matrix]
    kg = 1 - kr - kb
    return np.array(
        [
            [kr, kg, kb],
            [-kr / (2 * (1 - kb)), -kg / (2 * (1 - kb)), 0.5],
            [0.5, -kg / (2 * (1 - kr)), -kb / (2 * (1 - kr))],
        ]
    )


def _clip_float(clip: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
    return np.stack([to_float32(checked_frame(frame)) for frame in clip])


@dataclasses.dataclass(frozen=True)
class LumaChromaEstimate:
    """The noise of a clip in Y'CbCr: ``luma`` on Y (one channel), ``chroma`` on Cb and Cr."""

    luma: NoiseEstimate
    chroma: NoiseEstimate

    @property
    def sigma_luma(self) -> float:
        """The luma's average sigma."""
        return self.luma.average_sigma

    @property
    def sigma_chroma(self) -> float:
        """The chroma's average sigma."""
        return self.chroma.average_sigma


def estimate_luma_chroma_noise(
    frames: np.ndarray, matrix: str = "bt709", roi: tuple[int, int, int, int] | None = None
) -> LumaChromaEstimate:
    """``estimate_noise`` on the Y'CbCr frames, split into Y and the (Cb, Cr) pair."""
    yuv = _clip_float(frames if np.asarray(frames).ndim == 4 else [frames]) @ yuv_matrix(matrix).T.astype(np.float32)
    yuv[..., 1:] += CHROMA_OFFSET
    estimate = estimate_noise(yuv, roi=roi)
    luma = dataclasses.replace(estimate, covariance=estimate.covariance[:1, :1])
    chroma = dataclasses.replace(estimate, covariance=estimate.covariance[1:, 1:])
    return LumaChromaEstimate(luma, chroma)


def split_estimate(estimate: NoiseEstimate, matrix: str = "bt709") -> LumaChromaEstimate:
    """Return an RGB clip's noise estimate seen in Y'CbCr, split into Y and (Cb, Cr).

    The covariance is M C M^T with M ``matrix``'s RGB -> Y'CbCr matrix (full range). For a
    window that has an estimate (or synthetic noise) already: nothing is measured again.

    Parameters
    ----------
    estimate : NoiseEstimate
        The noise of the RGB clip (3 x 3 covariance, full scale squared).
    matrix : {"bt709", "bt601", "bt2020"}
        The source's Y'CbCr matrix (``matrix_for``).

    Returns
    -------
    LumaChromaEstimate
        ``luma`` (1 x 1 covariance) and ``chroma`` (2 x 2), each otherwise a copy of ``estimate``.

    Raises
    ------
    ValueError
        ``matrix`` is not "bt601", "bt709" or "bt2020", or the covariance is not 3 x 3.
    """
    transform = yuv_matrix(matrix)
    covariance = transform @ np.asarray(estimate.covariance, dtype=np.float64) @ transform.T
    # Noise the channels share all of (film grain, a gray clip stored as RGB) leaves Cb and Cr a
    # variance of 0 that rounding can make negative: the nearest covariance, negative parts removed.
    values, vectors = np.linalg.eigh(covariance)
    covariance = (vectors * np.clip(values, 0, None)) @ vectors.T
    luma = dataclasses.replace(estimate, covariance=covariance[:1, :1])
    chroma = dataclasses.replace(estimate, covariance=covariance[1:, 1:])
    return LumaChromaEstimate(luma, chroma)


def parse_luma_chroma(text: str) -> str | tuple[float, float] | None:
    """Return a luma/chroma mode as written by a person (CLI, presets).

    Parameters
    ----------
    text : str
        "off", "auto", or "H_Y,H_UV": two strengths in 8-bit levels in (0, 10000].

    Returns
    -------
    None, "auto" or (float, float)
        None for "off", "auto" as it is, or (h_luma, h_chroma) in 8-bit levels.

    Raises
    ------
    ValueError
        Anything else; the message shows the text and the forms expected.
    """
    if text in ("off", "auto"):
        return None if text == "off" else text
    try:
        h_luma, h_chroma = (float(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"expected off, auto or H_Y,H_UV (two strengths in levels), got {text!r}") from None
    if not (0 < h_luma <= 1e4 and 0 < h_chroma <= 1e4):
        raise ValueError(f"luma/chroma strengths must be in (0, 10000] levels, got {text!r}")
    return h_luma, h_chroma


def suggest_luma_chroma_h(estimate: LumaChromaEstimate, params: NLMParams) -> tuple[float, float]:
    """(h_luma, h_chroma) from ``suggest_h`` for each plane group's noise, in 8-bit levels.

    Parameters
    ----------
    estimate : LumaChromaEstimate
        The noise on Y and on (Cb, Cr) (``split_estimate``).
    params : NLMParams
        The window, weighting and centre weight; ``h`` and ``color_transform`` are ignored.

    Returns
    -------
    (float, float)
        h_luma and h_chroma in 8-bit levels, as ``LumaChromaDenoiser`` takes them.
    """
    window = dataclasses.replace(params, color_transform=None)
    return suggest_h(estimate.luma, window), suggest_h(estimate.chroma, window)


class LumaChromaDenoiser:
    """The filter in Y'CbCr with a strength for Y and one for Cb and Cr (module docstring).

    Parameters
    ----------
    params : NLMParams
        The window, weighting and centre weight; ``h`` and ``color_transform`` are not used.
    h_luma, h_chroma : float
        Strengths in 8-bit levels for Y and for Cb/Cr (0.001 to 10000).
    matrix : {"bt709", "bt601", "bt2020"}
        The source's Y'CbCr matrix (``matrix_for`` reads it from ``VideoInfo.color``).
    backend : {"auto", "cpu", "gpu"}
        As ``Denoiser`` takes it; both passes run on it.
    bit_depth : int, optional
        Bits per sample of uint16 frames, as ``Denoiser`` takes it.
    method : {"fused", "cascade"}, optional
        As ``Denoiser`` takes it, for both passes.

    Attributes
    ----------
    backend : str
        The resolved backend, "cpu" or "gpu".
    device_name : str
        The processor or GPU the frames are filtered on, for readouts.
    luma, chroma : Denoiser
        The Y pass and the (Cb, Cr) pass (the latter at h_chroma * sqrt(2/3), module docstring).

    Raises
    ------
    ValueError
        An unknown matrix or backend, or ``h_luma`` out of 0.001..10000.
    BackendUnavailableError
        backend="gpu" where it cannot run.
    """

    def __init__(
        self,
        params: NLMParams,
        h_luma: float,
        h_chroma: float,
        matrix: str = "bt709",
        backend: str = "auto",
        *,
        bit_depth: int | None = None,
        method: str | None = None,
    ) -> None:
        check_bit_depth(bit_depth)
        self.bit_depth = bit_depth
        self.matrix = yuv_matrix(matrix).astype(np.float32)
        self.inverse = np.linalg.inv(yuv_matrix(matrix)).astype(np.float32)
        window = dataclasses.replace(params, color_transform=None)
        self.luma = Denoiser(dataclasses.replace(window, h=h_luma), backend, method=method)
        self.chroma = Denoiser(
            dataclasses.replace(window, h=max(h_chroma * math.sqrt(2 / 3), H_MIN)), backend, method=method
        )

    def denoise_frame(self, clip: np.ndarray | Sequence[np.ndarray], index: int) -> np.ndarray:
        """Frame ``index`` of the RGB ``clip``, denoised; float32 (H, W, 3)."""
        luma = self.luma.denoise_frame(_Planes(clip, self, 0), index)
        chroma = self.chroma.denoise_frame(_Planes(clip, self, 1), index)
        return self._rgb(luma, chroma, np, self.inverse)

    @property
    def backend(self) -> str:
        """The backend the filters run on, "cpu" or "gpu"."""
        return self.luma.backend

    @property
    def device_name(self) -> str:
        """The device's name, for readouts."""
        return self.luma.device_name

    def export_stream(self, frames: Iterable[np.ndarray], dtype: Any = np.uint8) -> Iterator[np.ndarray]:
        """Denoise a whole clip in order, as ``Denoiser.export_stream`` does; (H, W, 3) of ``dtype``.

        Each frame crosses the bus once each way in its own dtype: the conversions to Y'CbCr and
        back, and to ``dtype``, are made where the filter runs.
        """
        dtype = output_dtype(dtype)
        xp = self._array_module()
        matrix = xp.asarray(self.matrix)
        for result in self._rgb_stream((self._planes(frame, xp, matrix) for frame in frames), xp):
            if dtype != np.float32:
                full_scale = np.iinfo(dtype).max  # as from_float32 rounds
                result = xp.clip(xp.rint(result * full_scale), 0, full_scale).astype(dtype)
            host = result if xp is np else xp.asnumpy(result)
            yield host if dtype == np.float32 else at_bit_depth(host, self.bit_depth)

    @property
    def converts_yuv(self) -> bool:
        """Whether ``export_yuv`` runs: on either backend, the Y'CbCr planes being what this mode filters."""
        return True

    def export_yuv(self, frames: Iterable[YuvFrame], dtype: Any, layout: YuvLayout) -> Iterator[YuvFrame]:
        """Denoise Y'CbCr frames into Y'CbCr frames of ``layout``, in order, with no RGB between.

        Each frame's own Y' and chroma (``media.yuv.planes_to_ycbcr``: its matrix and range) are
        filtered and written back: super-whites, sub-blacks and colours out of RGB's gamut are kept,
        where RGB frames clip them. Converted where the filter runs (on the GPU the planes cross the
        bus and the CPU converts nothing). ``dtype`` is not used (``Denoiser.export_yuv``'s RGB).

        Raises
        ------
        ValueError
            A frame of another matrix than ``layout``'s (its Y'CbCr is not the output's).
        """
        xp = self._array_module()
        if xp is np:
            split = planes_to_ycbcr

            def join(luma: Any, chroma: Any) -> list[np.ndarray]:
                return ycbcr_to_planes(luma, chroma, layout)
        else:
            on_device = YuvOnDevice(xp)

            def split(planes: list[np.ndarray], given: YuvLayout) -> tuple[Any, Any]:
                return on_device.to_ycbcr(planes, given.chroma_shift, given.coefficients())

            def join(luma: Any, chroma: Any) -> list[np.ndarray]:
                luma, chroma = xp.ascontiguousarray(luma), xp.ascontiguousarray(chroma)
                coefficients = layout.coefficients()
                return on_device.ycbcr_planes(luma, chroma, layout.chroma_shift, coefficients, layout.sample_dtype)

        def planes(frame: YuvFrame) -> tuple[Any, Any]:
            if frame.layout.weights != layout.weights:
                raise ValueError(f"Y'CbCr frames of matrix {frame.layout.weights} cannot go into {layout.weights}'s")
            return split(frame.planes, frame.layout)

        for luma, chroma in self._filtered(planes(frame) for frame in frames):
            yield YuvFrame(join(luma, chroma), layout)

    def stream_on_device(self, frames: Iterable[Any]) -> Iterator[Any]:
        """Denoise (H, W, 3) float32 RGB frames in [0, 1] that are where the filter runs, in order.

        CuPy arrays on the GPU, NumPy arrays on the CPU; the outputs stay there, (H, W, 3) float32,
        as ``Denoiser.stream_on_device`` gives them: no trip over the bus.
        """
        xp = self._array_module()
        matrix = xp.asarray(self.matrix)
        return self._rgb_stream((self._split(frame, xp, matrix) for frame in frames), xp)

    def _array_module(self) -> Any:
        """NumPy, or CuPy where the filters run on the GPU."""
        return cupy_module() if self.backend == "gpu" else np

    def _rgb_stream(self, planes: Iterable[tuple[Any, Any]], xp: Any) -> Iterator[Any]:
        """Yield each frame's (Y, (Cb, Cr, 0)) ``planes`` through both passes, back in RGB: float32 (H, W, 3)."""
        inverse = xp.asarray(self.inverse)
        for luma, chroma in self._filtered(planes):
            yield self._rgb(luma, chroma, xp, inverse)

    def _filtered(self, planes: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
        """Yield each frame's (Y (H, W, 1), (Cb, Cr, 0) (H, W, 3)) ``planes`` through both passes, as they came."""
        luma_in, chroma_in = itertools.tee(planes)
        lumas = self.luma.stream_on_device(luma for luma, _ in luma_in)
        chromas = self.chroma.stream_on_device(chroma for _, chroma in chroma_in)
        for luma, chroma in zip(lumas, chromas, strict=True):
            yield luma.reshape(*luma.shape[:2], 1), chroma

    def _planes(self, frame: np.ndarray, xp: Any = np, matrix: Any = None) -> tuple[Any, Any]:
        """Y (H, W, 1) and (Cb, Cr, 0) (H, W, 3) float32 of an RGB frame, made with array module ``xp``.

        The frame is moved there in its own dtype.
        """
        frame = checked_frame(frame, self.bit_depth)
        if frame.ndim != 3 or frame.shape[2] != 3:
            raise ValueError(
                f"the luma/chroma mode needs RGB frames (H, W, 3), got {frame.shape}: a gray clip has no chroma"
            )
        rgb = xp.asarray(frame)
        if frame.dtype != np.float32:
            rgb = rgb.astype(xp.float32) * xp.float32(integer_scale(frame.dtype))
        return self._split(rgb, xp, self.matrix if matrix is None else matrix)

    @staticmethod
    def _split(rgb: Any, xp: Any, matrix: Any) -> tuple[Any, Any]:
        """Y (H, W, 1) and (Cb, Cr, 0) (H, W, 3) of a float32 RGB frame in [0, 1], by ``matrix`` (RGB -> Y'CbCr)."""
        yuv = rgb @ matrix.T
        chroma = xp.zeros_like(yuv)
        chroma[..., :2] = yuv[..., 1:] + CHROMA_OFFSET
        return xp.ascontiguousarray(yuv[..., :1]), chroma

    @staticmethod
    def _rgb(luma: Any, chroma: Any, xp: Any, inverse: Any) -> Any:
        planes = xp.concatenate([luma.reshape(*luma.shape[:2], 1), chroma[..., :2] - CHROMA_OFFSET], axis=-1)
        return (planes @ inverse.T).astype(xp.float32)


class _Planes(Sequence):
    """One plane group of a clip's frames, converted when a frame is asked for.

    The filter reads only its window's frames, not the whole clip (a preview of a long video).
    """

    def __init__(self, clip: np.ndarray | Sequence[np.ndarray], denoiser: LumaChromaDenoiser, group: int) -> None:
        self._clip, self._denoiser, self._group = clip, denoiser, group

    def __len__(self) -> int:
        return len(self._clip)

    def __getitem__(self, index: int) -> np.ndarray:  # type: ignore[override]
        return self._denoiser._planes(self._clip[index])[self._group]


def matrix_for(colorspace: int, height: int) -> str:
    """Return the Y'CbCr matrix of a source, from its colorspace code or else its size.

    Parameters
    ----------
    colorspace : int
        FFmpeg's colorspace code (``VideoInfo.color["colorspace"]``): 1 is BT.709, 5 and 6
        BT.601, 9 and 10 BT.2020 (a phone's HLG, an HDR10 master); any other (2, unspecified)
        leaves it to the size.
    height : int
        The frame height in pixels: BT.709 from HD_LINES (720) up, BT.601 below, as players
        guess, and as the video reader converts untagged sources.

    Returns
    -------
    {"bt709", "bt601", "bt2020"}
    """
    if colorspace == 1:
        return "bt709"
    if colorspace in (5, 6):
        return "bt601"
    if colorspace in (9, 10):
        return "bt2020"
    return "bt709" if height >= HD_LINES else "bt601"
