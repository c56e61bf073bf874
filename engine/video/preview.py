"""The preview path: frame t of a clip with its neighbours, denoised, back as uint8 RGB.

This is what the GUI's worker runs for every slider change, and what ``bench --preview``
times without Qt. In synthetic-noise mode the clip is taken as clean and noise of a known
covariance is added (the same noise for a frame whichever frame it serves), so PSNR can be
shown; a separate clean reference clip gives PSNR for real footage.

On the GPU a still preview keeps its frames there (``gpu.resident.ResidentFrames``, by frame
and by the noise they carry): each crosses the bus once, in its own dtype, and a slider
moved on one frame sends none again. The result is made uint8 on the GPU, rounded as on the
host, and comes back as uint8, as in export (the float32 result too where PSNR is shown).
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..frames import FULL_SCALE_BITS, checked_frame, from_float32, source_bit_depth, to_float32
from ..metrics import psnr
from .clip_denoiser import FrameDenoiser, LumaChroma, denoiser_for
from .denoiser import Denoiser
from .noise_estimate import NoiseEstimate
from .params import NLMParams, check_frame_shape, window_indices
from .synthetic_noise import add_noise

NOISE_CACHE_FRAMES = 24  # noisy frames kept, so that a slider change does not redraw the noise
DIFFERENCE_GAIN = 4  # the difference view shows |before - after| times this, so that removed noise shows
PLAYING_NOTE = "playing: PSNR shows when paused"
# Synthetic noise for playback is drawn on this many threads, a few frames ahead (NumPy's
# generators release the GIL): one 720p frame takes 50-100 ms on one core, ten times the GPU's filter.
NOISE_THREADS = min(8, os.cpu_count() or 1)


class FrameSource(Protocol):
    """Random access to a clip's frames, as ``VideoReader`` gives it."""

    def __len__(self) -> int: ...

    def frame(self, index: int) -> np.ndarray:
        """Return frame ``index``."""
        ...

    def unclipped_frame(self, index: int) -> np.ndarray:
        """Return frame ``index`` as float32 in 0..1, nothing clipped (a Y'CbCr source's colours past RGB's)."""
        ...

    def frames(self, start: int = 0) -> Iterator[np.ndarray]:
        """Return an iterator over the frames from ``start`` on."""
        ...


class ArrayFrames:
    """A (T, H, W[, C]) array as a ``FrameSource``."""

    def __init__(self, frames: np.ndarray) -> None:
        self._frames = frames

    def __len__(self) -> int:
        return len(self._frames)

    def frame(self, index: int) -> np.ndarray:
        """Return frame ``index``."""
        return self._frames[index]

    def unclipped_frame(self, index: int) -> np.ndarray:
        """Return frame ``index`` as float32 in 0..1."""
        return to_float32(np.asarray(self._frames[index]))

    def frames(self, start: int = 0) -> Iterator[np.ndarray]:
        """Return an iterator over the frames from ``start`` on."""
        return iter(self._frames[start:])


@dataclass(frozen=True)
class SyntheticNoise:
    """Gaussian noise added to a clip taken as clean, to judge the filter against the clean frame.

    Parameters
    ----------
    sigma : float
        Standard deviation in 8-bit levels, the same for every channel, 0 to 255.
    correlation : float
        Correlation coefficient between the channels' noise, in (-0.5, 1).
    seed : int
        The random generator's seed: frame t's noise is the same whenever it is drawn.

    Raises
    ------
    ValueError
        ``sigma`` or ``correlation`` out of range.
    """

    sigma: float
    correlation: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.sigma <= 255:
            raise ValueError(f"the synthetic noise's sigma must be in 0..255 levels, got {self.sigma}")
        if not -0.5 < self.correlation < 1:
            raise ValueError(f"the synthetic noise's correlation must be in (-0.5, 1), got {self.correlation}")

    def covariance(self, channels: int) -> np.ndarray:
        """C x C covariance in full-scale units."""
        shape = np.full((channels, channels), self.correlation) + (1 - self.correlation) * np.eye(channels)
        return shape * (self.sigma / 255) ** 2

    def estimate(self, channels: int = 3) -> NoiseEstimate:
        """Return this noise as ``estimate_noise`` would report it, exactly.

        For ``suggest_h`` and ``apply_estimate``, so that h follows the synthetic sigma as it
        follows an estimate.
        """
        return NoiseEstimate(self.covariance(channels), regions=[], samples=0, method="synthetic")


@dataclass(frozen=True)
class Preview:
    """One previewed frame: what the filter saw, its result, and the readouts.

    Attributes
    ----------
    index : int
        The frame's number in the clip.
    before, after : numpy.ndarray
        (H, W, C) uint8: the filter's input (with synthetic noise, if any) and its output.
    psnr_before, psnr_after : float or None
        PSNR in dB of ``before`` and ``after`` against the clean frame (the clip itself in
        synthetic-noise mode, or the reference clip); None when there is no clean frame.
    psnr_note : str or None
        Why the PSNR is missing, for the readout; None when it is there.
    engine_ms : float
        Milliseconds the filter took for this frame.
    backend, device_name : str
        Where it ran: "cpu" or "gpu", and the processor's or GPU's name.
    stage : str
        Which of ``render_passes``' passes ``after`` is (``preview_passes.STAGES``): "exact" for the
        filter's result over the whole frame, as ``render`` gives it.
    """

    index: int
    before: np.ndarray
    after: np.ndarray
    psnr_before: float | None
    psnr_after: float | None
    psnr_note: str | None
    engine_ms: float
    backend: str
    device_name: str
    stage: str = "exact"


def _uint8(frame: np.ndarray) -> np.ndarray:
    return frame if frame.dtype == np.uint8 else from_float32(to_float32(frame), np.dtype(np.uint8))


def difference_image(before: np.ndarray, after: np.ndarray, gain: float = DIFFERENCE_GAIN) -> np.ndarray:
    """Return what the filter removed, for a difference view: |before - after| x ``gain``, uint8.

    Parameters
    ----------
    before, after : numpy.ndarray
        uint8 frames of one shape: the filter's input and output.
    gain : float
        How much the difference is amplified, so that removed noise shows.

    Returns
    -------
    numpy.ndarray
        uint8, the shape of ``before``, clamped at 255.

    Notes
    -----
    Noise shows as fine grain; edges or texture that show up here are detail the filter took away
    (lower h, or a smaller search window).
    """
    difference = np.abs(before.astype(np.int16) - after.astype(np.int16)) * gain
    return np.minimum(difference, 255).astype(np.uint8)


class _NoisyClip(Sequence):
    """The frames the filter sees, made on demand: the clip's own, or with synthetic noise."""

    def __init__(self, previewer: Previewer, noise: SyntheticNoise | None) -> None:
        self._previewer, self._noise = previewer, noise

    def __len__(self) -> int:
        return len(self._previewer.source)

    def __getitem__(self, index: int) -> np.ndarray:  # type: ignore[override]
        return self._previewer.filter_input(index, self._noise)


class Previewer:
    """Renders previews of ``source`` with one Denoiser, replacing its parameters per call.

    On the GPU (fused method) the frames a preview needs stay on the device, each uploaded once
    in its own dtype, and the result comes back as uint8 (``frames_uploaded`` counts uploads).

    Parameters
    ----------
    source : FrameSource
        The clip (a ``VideoReader`` or ``ArrayFrames``).
    backend : {"auto", "gpu", "cpu"}
        As ``Denoiser``; resolved when the first preview is rendered.
    reference : FrameSource, optional
        A clean version of ``source`` (same length and size), for PSNR on real footage.

    Raises
    ------
    ValueError
        A reference clip of another length.
    """

    def __init__(self, source: FrameSource, backend: str = "auto", reference: FrameSource | None = None) -> None:
        if reference is not None and len(reference) != len(source):
            raise ValueError(f"the reference clip has {len(reference)} frames, the clip {len(source)}")
        self.source = source
        self.reference = reference
        self._denoiser: Denoiser | None = None
        self._backend = backend
        self._noisy: OrderedDict[tuple[int, SyntheticNoise], np.ndarray] = OrderedDict()
        self._on_device: _DevicePreview | None = None

    @property
    def frames_uploaded(self) -> int:
        """Frames ``render`` has sent to the GPU so far.

        Each once while it stays resident, none when only the parameters change (0 on the CPU, which
        filters the host frames).
        """
        return 0 if self._on_device is None else self._on_device.resident.uploads

    @property
    def denoiser(self) -> Denoiser:
        """The denoiser the preview renders with, made at first use on the preview's backend."""
        if self._denoiser is None:
            self._denoiser = Denoiser(NLMParams(h=1), self._backend, bit_depth=FULL_SCALE_BITS)  # the readers'
        return self._denoiser

    @property
    def bit_depth(self) -> int | None:
        """The depth that the clip's frames, read as float32, state to the noise estimate (``source_bit_depth``)."""
        return source_bit_depth(np.asarray(self.source.frame(0)).dtype)

    def unclipped_frames(self, noise: SyntheticNoise | None) -> Callable[[int], np.ndarray] | None:
        """Return the clip's frames read unclipped, for the noise estimate (``estimate_noise_over``).

        None with synthetic noise, which ``noisy_frame`` adds to the frames as decoded.
        """
        return self.source.unclipped_frame if _no_noise(noise) else None

    def noisy_frame(self, index: int, noise: SyntheticNoise | None) -> np.ndarray:
        """Frame ``index`` as the filter sees it: float32 in [0, 1] plus the synthetic noise, if any."""
        frame = to_float32(np.asarray(self.source.frame(index)))
        if _no_noise(noise):
            return frame
        key = (index, noise)
        if key not in self._noisy:
            self._noisy[key] = _with_noise(frame, index, noise)
            if len(self._noisy) > NOISE_CACHE_FRAMES:
                self._noisy.popitem(last=False)
        return self._noisy[key]

    def filter_input(self, index: int, noise: SyntheticNoise | None) -> np.ndarray:
        """Return what the filter gets.

        The decoded frame as it is (integers cross to a GPU 4x smaller than float32 and are scaled
        there), or the float32 frame with the synthetic noise.
        """
        if _no_noise(noise):
            return np.asarray(self.source.frame(index))
        return self.noisy_frame(index, noise)

    def filter_for(self, params: NLMParams, luma_chroma: LumaChroma | None = None) -> FrameDenoiser:
        """Return the preview's Denoiser with ``params``, or with ``luma_chroma`` a LumaChromaDenoiser.

        The LumaChromaDenoiser (h_luma, h_chroma, matrix) has ``params``' window; both on the same
        backend (``denoiser_for``).
        """
        return denoiser_for(params, luma_chroma=luma_chroma, plain=self.denoiser)

    def play(
        self,
        start: int,
        stop: int,
        params: NLMParams,
        noise: SyntheticNoise | None = None,
        luma_chroma: LumaChroma | None = None,
    ) -> Iterator[Preview]:
        """Frames ``start`` to ``stop - 1`` denoised in order, for playback, the way export runs.

        The clip is decoded once, in order, each frame is uploaded once (``Denoiser.export_stream``)
        and, on the GPU, converted to uint8 there.

        ``after`` equals ``render``'s on the CPU, and is within one level of it on the GPU (float32
        rounding on a half step). PSNR is not computed (it would cost more than the filter on the
        GPU): ``psnr_note`` says so. ``luma_chroma`` as in ``filter_for``.
        """
        denoiser = self.filter_for(params, luma_chroma)
        first = max(0, start - params.frames_past)
        end = min(len(self.source), stop + params.frames_future)
        before: dict[int, np.ndarray] = {}

        def frames() -> Iterator[np.ndarray]:
            for index, (filtered, shown) in enumerate(self._frames_in_order(first, end, noise), start=first):
                before[index] = shown
                yield filtered

        inputs = frames()
        outputs = denoiser.export_stream(inputs, np.uint8)
        try:
            for index in range(first, stop):
                started = time.perf_counter()
                after = next(outputs)
                engine_ms = (time.perf_counter() - started) * 1000
                shown = before.pop(index)
                if index >= start:
                    yield Preview(
                        index,
                        shown,
                        after.reshape(shown.shape),
                        None,
                        None,
                        PLAYING_NOTE,
                        engine_ms,
                        denoiser.backend,
                        denoiser.device_name,
                    )
        finally:
            outputs.close()
            inputs.close()  # now, not when collected: it may hold the noise threads

    def _frames_in_order(
        self, first: int, end: int, noise: SyntheticNoise | None
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield (what the filter gets, ``before`` as uint8) for frames ``first`` to ``end - 1``, decoded in order.

        Synthetic noise is added on NOISE_THREADS threads, a few frames ahead.
        """
        decoded = zip(range(first, end), self.source.frames(first), strict=False)
        if _no_noise(noise):
            yield from ((frame, _uint8(frame)) for _, frame in decoded)
            return
        with ThreadPoolExecutor(NOISE_THREADS, thread_name_prefix="nlmeans-noise") as pool:
            pending: deque = deque()
            for index, frame in decoded:
                pending.append(pool.submit(_noisy_pair, frame, index, noise))
                if len(pending) > 2 * NOISE_THREADS:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    def render(
        self,
        index: int,
        params: NLMParams,
        noise: SyntheticNoise | None = None,
        luma_chroma: LumaChroma | None = None,
    ) -> Preview:
        """Denoise frame ``index`` with ``params`` (in Y'CbCr with ``luma_chroma``, as in ``filter_for``).

        PSNR against the clean frame where there is one.
        """
        denoiser = self.filter_for(params, luma_chroma)
        clip = _NoisyClip(self, noise)
        before = clip[index]
        has_noise = noise is not None and noise.sigma > 0
        started = time.perf_counter()
        if luma_chroma is None and denoiser.backend == "gpu" and denoiser.method == "fused":
            after, after_float = self._render_on_device(index, params, noise if has_noise else None), None
        else:
            after_float = denoiser.denoise_frame(clip, index).reshape(before.shape)
            after = from_float32(after_float, np.dtype(np.uint8))
        engine_ms = (time.perf_counter() - started) * 1000
        return self.measured(index, noise, before, after, after_float, engine_ms, denoiser)

    def measured(
        self,
        index: int,
        noise: SyntheticNoise | None,
        before: np.ndarray,
        after: np.ndarray,
        after_float: np.ndarray | None,
        engine_ms: float,
        denoiser: FrameDenoiser,
    ) -> Preview:
        """Return frame ``index``'s exact Preview, with PSNR against the clean frame where there is one.

        ``before`` is the filter's input, ``after`` its uint8 result and ``after_float`` the float32
        one (None: the GPU's kept output), ``engine_ms`` the filter's milliseconds.
        """
        has_noise = noise is not None and noise.sigma > 0
        clean, note = None, "no clean reference: add synthetic noise or load a reference clip"
        if has_noise:
            clean = to_float32(np.asarray(self.source.frame(index)))
        elif self.reference is not None:
            clean = to_float32(np.asarray(self.reference.frame(index)))
        if clean is not None and clean.shape != before.shape:
            clean, note = None, f"the reference's frames are {clean.shape}, the clip's {before.shape}"
        if clean is not None and after_float is None:
            after_float = self._on_device.float_output().reshape(before.shape)
        return Preview(
            index=index,
            before=_uint8(before),
            after=after.reshape(before.shape),
            psnr_before=None if clean is None else psnr(clean, to_float32(before)),
            psnr_after=None if clean is None else psnr(clean, after_float),
            psnr_note=None if clean is not None else note,
            engine_ms=engine_ms,
            backend=denoiser.backend,
            device_name=denoiser.device_name,
        )

    def clip(self, noise: SyntheticNoise | None) -> Sequence[np.ndarray]:
        """Return the clip as the filter sees it (``filter_input`` of each frame), made on demand."""
        return _NoisyClip(self, noise)

    def _render_on_device(self, index: int, params: NLMParams, noise: SyntheticNoise | None) -> np.ndarray:
        """Render with ``render``'s GPU filter.

        Frame ``index`` from the resident frames, uint8 on the host (the float32 output stays on the
        GPU for PSNR: ``_DevicePreview.float_output``).
        """
        length = len(self.source)
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < length:
            raise IndexError(f"index must be an integer in 0..{length - 1}, got {index!r}")
        if self._on_device is None:
            self._on_device = _DevicePreview()
        window = window_indices(int(index), length, params)
        frames = self._on_device.resident.window(
            [(position, noise) for position in window],
            lambda key: checked_frame(self.filter_input(*key), FULL_SCALE_BITS),
        )
        shapes = [(height, width, channels) for channels, height, width in (frame.shape for frame in frames)]
        for shape in shapes:
            if shape != shapes[0]:
                raise ValueError(f"all frames of a clip must have one shape, got {shapes[0]} and then {shape}")
        check_frame_shape(shapes[0], params)
        return self._on_device.denoise(frames, int(index) - window.start, params)


class _DevicePreview:
    """A still preview's GPU side: the resident frames, the fused filter and its kept outputs.

    The filter writes float32 (as ``Denoiser.denoise_frame``), which is rounded to uint8 on the
    GPU as ``frames.from_float32`` rounds on the host, so that the preview is the same to the
    level; only the uint8 frame comes back, and the float32 one when PSNR asks for it.
    """

    def __init__(self) -> None:
        from ..backend import cupy_module
        from ..gpu.resident import ResidentFrames
        from .filters.fused_gpu import FusedGpuFilter

        self.cupy = cupy_module()
        self.filter = FusedGpuFilter(self.cupy)
        self.resident = ResidentFrames(self.filter.frames)
        self._outputs: tuple[Any, Any, Any] | None = None  # float32 output, float32 scratch, uint8 output

    def denoise(self, frames: Sequence[Any], center: int, params: NLMParams) -> np.ndarray:
        """Denoise ``frames[center]`` (DeviceFrames) into the kept outputs; uint8 (H, W, C) on the host."""
        from ..gpu.device import round_to_integers

        channels, height, width = frames[center].shape
        shape = (height, width, channels)
        if self._outputs is None or self._outputs[0].shape != shape:
            with self.filter.frames.out_of_memory_as_error(shape):
                cupy = self.cupy
                self._outputs = (
                    cupy.empty(shape, cupy.float32),
                    cupy.empty(shape, cupy.float32),
                    cupy.empty(shape, cupy.uint8),
                )
        output, scratch, rounded = self._outputs
        self.filter(frames, center, params, out=output)
        round_to_integers(self.cupy, output, rounded, scratch)
        return rounded.get()

    def float_output(self) -> np.ndarray:
        """Return the last ``denoise``'s float32 output, on the host."""
        return self._outputs[0].get()


def _noisy_pair(frame: np.ndarray, index: int, noise: SyntheticNoise) -> tuple[np.ndarray, np.ndarray]:
    noisy = _with_noise(frame, index, noise)
    return noisy, _uint8(noisy)


def _no_noise(noise: SyntheticNoise | None) -> bool:
    """Whether the frames are the clip's own: no synthetic noise, or none of any strength."""
    return noise is None or noise.sigma == 0


def _with_noise(frame: np.ndarray, index: int, noise: SyntheticNoise) -> np.ndarray:
    """Frame ``index`` (any dtype) as float32 with ``noise`` added: the same noise for the same frame."""
    image = to_float32(np.asarray(frame))
    channels = image.shape[-1] if image.ndim == 3 else 1
    noisy = add_noise(
        image.reshape(*image.shape[:2], channels), noise.covariance(channels), seed=noise.seed * 1_000_003 + index
    )
    return noisy.reshape(image.shape)
