"""The Denoiser: random access and streaming over the backends' window filters."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..backend import cpu_name, cupy_module, gpu_name, resolve_backend
from ..cpu.compiled import announce_compile
from ..frames import (
    FULL_SCALE_BITS,
    at_bit_depth,
    check_bit_depth,
    check_same_shape,
    checked_frame,
    from_float32,
    output_dtype,
)
from ..media.yuv import YuvFrame, YuvLayout
from .filters import METHODS, WindowFilter, cpu_filter_compiles, window_filter
from .params import NLMParams, check_frame_shape, window_indices

FLOAT32 = np.dtype(np.float32)

__all__ = ["METHODS", "Denoiser", "compile_cpu_filter"]


class Denoiser:
    """Non-Local Means on a clip, by random access or as a stream (DESIGN.md §1).

    One Denoiser may serve several threads at once (a pool filtering different frames): each
    thread's calls have their own scratch, and give the frames a serial run gives.

    Parameters
    ----------
    params : NLMParams
        The filter; may be replaced between frames (``denoiser.params = ...``).
    backend : {"auto", "cpu", "gpu"}
        "auto" takes NLMEANS_BACKEND if set, else the GPU when CuPy and a CUDA device are
        present, else the CPU.
    method : {"fused", "cascade"}, optional
        "fused" (the default: on the CPU numba fused per tile, on the GPU one CUDA kernel for
        the whole window) or "cascade" (the paper's pass cascade, the readable baseline: NumPy
        array code on the CPU, one CUDA kernel per pass and offset on the GPU).
    bit_depth : int, optional
        Bits per sample of the uint16 frames given, 9..16: 10 for 10-bit samples held in uint16
        (0..1023, as VapourSynth hands them), 16 for 16-bit full scale. None: uint16 frames
        are taken at 16-bit full scale, and refused where all their values fit in 12 bits (the
        depth cannot be told from them). uint8 and float frames do not need it.

    Attributes
    ----------
    params : NLMParams
        The filter, replaceable between frames.
    backend : str
        The resolved backend, "cpu" or "gpu".
    method : str
        The resolved method.
    device_name : str
        The processor or GPU the frames are filtered on, for readouts.

    Raises
    ------
    ValueError
        Unknown backend or method, or a ``bit_depth`` outside 9..16.
    TypeError
        ``params`` (here or when replaced) is not an ``NLMParams``.
    BackendUnavailableError
        backend="gpu" where CuPy is missing, no device exists or the driver is too old.
    MemoryError
        The CPU filter and its threads would not fit the process's address-space limit
        (``ulimit -v``); the message says how many threads would.
    """

    def __init__(
        self, params: NLMParams, backend: str = "auto", *, method: str | None = None, bit_depth: int | None = None
    ) -> None:
        self.params = params
        check_bit_depth(bit_depth)
        self.bit_depth = bit_depth
        resolved = resolve_backend(backend)
        if resolved == "cpu":  # a first frame waits for the compile: said once, before it
            announce_compile(cpu_filter_compiles)
        self._window_filter: WindowFilter = window_filter(resolved, method or METHODS[0])
        self.device_name = cpu_name() if resolved == "cpu" else gpu_name()

    @property
    def params(self) -> NLMParams:
        """The filter's parameters."""
        return self._params

    @params.setter
    def params(self, params: NLMParams) -> None:
        if not isinstance(params, NLMParams):
            raise TypeError(f"params must be an NLMParams, got {type(params).__name__}")
        self._params = params

    @property
    def backend(self) -> str:
        """The backend the filter runs on, "cpu" or "gpu"."""
        return self._window_filter.backend

    @property
    def method(self) -> str:
        """The window filter's method, one of METHODS."""
        return self._window_filter.method

    def warm_up(self, height: int, width: int, channels: int = 3) -> None:
        """Compile and allocate for frames of height x width now, so that the first real frame is fast.

        The first call on a backend compiles its kernels (seconds); a GUI calls this off its
        thread when a clip opens or a radius changes.
        """
        window = self.params.frames_past + self.params.frames_future + 1
        self.denoise_frame(np.zeros((window, height, width, channels), np.float32), self.params.frames_past)

    def denoise_frame(
        self,
        clip: np.ndarray | Sequence[np.ndarray],
        index: int,
        *,
        guide: np.ndarray | Sequence[np.ndarray] | None = None,
        dtype: Any = np.float32,
    ) -> np.ndarray:
        """Frame ``index`` of ``clip``, denoised with the frames around it.

        Parameters
        ----------
        clip : array (T, H, W, C) or (T, H, W), or a sequence of (H, W[, C]) frames
            uint8, uint16 (of ``bit_depth``; scaled to [0, 1]) or floating point with 0..1 as full
            scale (taken as is; h is in 1/255 of it).
        index : int
            0 <= index < T. The temporal window is truncated at the clip's ends.
        guide : like ``clip``, optional
            A clip of the same shape the patch distances are taken from while ``clip`` is
            averaged (KNLMeansCL's rclip): a pre-filtered pass of the same clip makes the
            weights robust at high noise. Every backend and method.
        dtype : {numpy.float32, numpy.uint8, numpy.uint16}
            The output's: float32 (0..1), or integers rounded and clamped to their full range
            (uint16 as ``bit_depth``-bit samples), as ``export_stream`` gives them. On the GPU the
            fused method rounds there and sends back a quarter or half of float32's bytes.

        Returns
        -------
        numpy.ndarray
            (H, W, C) of ``dtype`` on the host; (H, W) where frame ``index`` was given as (H, W).

        Raises
        ------
        IndexError
            index outside the clip.
        ValueError
            No clip (None, text) or one of no frame; frames of different shapes, too small for the
            radii, of an unsupported dtype, or float frames not on the 0..1 scale (values averaging
            outside -1..2: 0..255 values, say); uint16 frames beyond ``bit_depth``, or all within 12
            bits without one; a guide of another length or frame shape than the clip; an output
            ``dtype`` other than the three.
        """
        if clip is None or isinstance(clip, (str, bytes)) or not hasattr(clip, "__len__"):
            raise ValueError(f"clip must be an array of frames or a sequence of them, got {type(clip).__name__}")
        length = len(clip)
        if not length:
            raise ValueError("clip holds no frame; give at least one")
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < length:
            raise IndexError(f"index must be an integer in 0..{length - 1}, got {index!r}")
        window = window_indices(int(index), length, self.params)
        given = [clip[i] for i in window]
        dtype = output_dtype(dtype)
        center = int(index) - window.start
        frames = self._uploaded(given)
        guides = None
        if guide is not None:
            if len(guide) != length:
                raise ValueError(f"the guide must have the clip's {length} frames, got {len(guide)}")
            guides = self._uploaded([guide[i] for i in window])
            check_same_shape(frames[0].shape, guides[0].shape)
        return _shaped_as_given(self._filter(frames, center, guides, dtype), given[center])

    def stream(self, frames: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
        """Denoise frames as they arrive.

        Yields (H, W, C) float32 in order, (H, W) for a gray clip given as (H, W) frames.

        Frame t is yielded once frame t + Df has arrived (or the input has ended), and equals
        ``denoise_frame(clip, t)`` on the whole clip. Only the frames the window needs are held.
        """
        arriving = iter(frames)
        first = next(arriving, _NONE)
        if first is _NONE:  # no frame at all; a None among the frames is refused as one
            return
        for result in self._stream(itertools.chain([first], arriving)):
            yield _shaped_as_given(result, first)

    def stream_on_device(self, frames: Iterable[Any]) -> Iterator[Any]:
        """``stream`` of (H, W, C) float32 frames in [0, 1] that are where the filter runs.

        CuPy arrays on the GPU, NumPy arrays on the CPU; the outputs stay there, (H, W, C) float32.
        For frames made on the device (the luma/chroma mode's planes): no trip over the bus.
        """
        return self._stream(frames, on_device=self.backend == "gpu")

    def _stream(self, frames: Iterable[Any], on_device: bool = False) -> Iterator[Any]:
        """``stream``'s frames, each (H, W, C); ``on_device``: frames and outputs on the GPU."""
        held: dict[int, Any] = {}
        shape: tuple[int, ...] | None = None
        next_output = 0
        arrived = 0
        for frame in frames:
            given = frame if on_device else checked_frame(frame, self.bit_depth)
            shape = shape or given.shape
            check_same_shape(shape, given.shape)
            check_frame_shape(given.shape, self.params)
            held[arrived] = self._window_filter.upload(given)
            arrived += 1
            while next_output + self.params.frames_future < arrived:
                yield self._filter_held(held, next_output, arrived, on_device)
                next_output += 1
            for index in [i for i in held if i < next_output - self.params.frames_past]:
                del held[index]
        while next_output < arrived:
            yield self._filter_held(held, next_output, arrived, on_device)
            next_output += 1

    def export_stream(
        self, frames: Iterable[np.ndarray], dtype: Any = np.uint8, *, views: bool = False
    ) -> Iterator[np.ndarray]:
        """Denoise a whole clip at full speed; yields (H, W, C) frames of ``dtype`` in order.

        The same outputs as ``stream``, but (H, W, 1) for gray (rounded and clamped to
        ``dtype``'s full range when it is uint8 / uint16, uint16 as ``bit_depth``-bit samples;
        within one level where float32 rounding sits on a half step), for export: on the GPU
        (fused method) frames are read a few ahead of the filter, the copies overlap it
        (``GpuPipeline``) and the conversion to ``dtype`` happens on the device. ``params`` are
        taken when the run starts. ``views``: on the GPU, each frame is the pipeline's own pinned
        buffer, valid until the next frame is asked for (a host copy a frame less, for a consumer
        that copies or encodes each frame at once); elsewhere it changes nothing.
        """
        dtype = output_dtype(dtype)
        if self.backend == "gpu" and self.method == "fused":
            from .gpu_pipeline import GpuPipeline

            with contextlib.closing(GpuPipeline(cupy_module(), self.params, dtype)) as pipeline:
                for frame in pipeline.run((checked_frame(frame, self.bit_depth) for frame in frames), views=views):
                    yield at_bit_depth(frame, self.bit_depth)
            return
        for frame in self._stream(frames):
            yield frame if dtype == np.float32 else at_bit_depth(from_float32(frame, dtype), self.bit_depth)

    @property
    def converts_yuv(self) -> bool:
        """Whether ``export_yuv`` runs: on the GPU's fused method, frames at 16-bit full scale (or 8-bit)."""
        return self.backend == "gpu" and self.method == "fused" and self.bit_depth in (None, FULL_SCALE_BITS)

    def export_yuv(self, frames: Iterable[YuvFrame], dtype: Any, layout: YuvLayout) -> Iterator[YuvFrame]:
        """``export_stream`` for Y'CbCr frames, into Y'CbCr frames of ``layout``, converted on the GPU.

        Equal to converting each frame to RGB of its samples' dtype (``media.yuv``), ``export_stream``
        into ``dtype`` and converting each output to ``layout`` (``media.yuv``): what an export
        does on the CPU, with the planes, not RGB, crossing the bus (half the bytes at 4:2:0) and
        none of the CPU's time spent converting.

        Raises
        ------
        ValueError
            Where ``converts_yuv`` is False.
        """
        if not self.converts_yuv:
            raise ValueError("export_yuv runs on the GPU's fused method only (converts_yuv)")
        from .gpu_pipeline import GpuPipeline

        with contextlib.closing(GpuPipeline(cupy_module(), self.params, dtype)) as pipeline:
            yield from pipeline.run(frames, yuv=layout)

    def _filter_held(self, held: dict[int, Any], index: int, arrived: int, on_device: bool = False) -> Any:
        window = [i for i in window_indices(index, arrived, self.params) if i in held]
        if on_device:
            return self._window_filter([held[i] for i in window], window.index(index), self.params)
        return self._filter([held[i] for i in window], window.index(index))

    def _uploaded(self, frames: Sequence[np.ndarray]) -> list[Any]:
        hosts = [checked_frame(frame, self.bit_depth) for frame in frames]
        for host in hosts:
            check_same_shape(hosts[0].shape, host.shape)
        check_frame_shape(hosts[0].shape, self.params)
        return [self._window_filter.upload(host) for host in hosts]

    def _filter(
        self, frames: Sequence[Any], center: int, guides: Sequence[Any] | None = None, dtype: np.dtype = FLOAT32
    ) -> np.ndarray:
        """Filter the window into ``dtype``: on the GPU's fused method rounded there, elsewhere on the host."""
        chosen = self._window_filter
        if dtype == FLOAT32:
            return chosen.download(chosen(frames, center, self.params, guides))
        if self.backend == "gpu" and self.method == "fused":
            output = chosen.download(chosen(frames, center, self.params, guides, out_dtype=dtype))
        else:
            output = from_float32(chosen.download(chosen(frames, center, self.params, guides)), dtype)
        return at_bit_depth(output, self.bit_depth)


_NONE = object()


def compile_cpu_filter() -> None:
    """Compile the CPU filter now, on a small frame: once per machine, 1-2 minutes on 2 cores.

    Every radius, weighting and frame size then runs without compiling (they are run-time
    arguments). For a window, which runs this on a thread of its own and shows the input meanwhile.
    """
    Denoiser(NLMParams(h=10), "cpu").warm_up(16, 16)


def _shaped_as_given(result: np.ndarray, frame: np.ndarray) -> np.ndarray:
    """Return an (H, W, C) output in its input frame's shape: (H, W) for a gray frame given as (H, W)."""
    return result[:, :, 0] if np.ndim(frame) == 2 else result
