"""``PlanarDenoiser``: a clip of planar frames (VapourSynth's layout) denoised by random access from many threads."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from ..backend import cupy_module, resolve_backend
from .denoiser import Denoiser
from .params import NLMParams

PLANE_COUNTS = (1, 2, 3)
FULL_SCALE_PEAKS = (255, 65535)  # integer samples that go as they are, uint8 and uint16


class PlanarDenoiser:
    """Frames of a clip held as planes, denoised one output at a time, from any number of threads.

    For a host that hands each frame's planes apart (VapourSynth): an output's window is named by
    keys, ``read`` gives a key's planes where they are needed, and the output is written into the
    planes given. On the GPU each key's frame crosses the bus once while it stays resident
    (``gpu.resident.ResidentFrames``): consecutive outputs share all but one frame of their
    windows, so a clip read in order sends each frame once; planes go up and come back as they
    lie, rounded to their dtype on the GPU. On the CPU the planes are stacked into frames for
    ``Denoiser.denoise_frame``.

    Parameters
    ----------
    params : NLMParams
        The filter.
    backend : {"auto", "cpu", "gpu"}
        As ``Denoiser`` takes it.
    planes : {1, 2, 3}
        The planes filtered together. Two (U, V) go in as (U, V, 0): the distance is the mean over
        three channels, 2/3 of the mean over U and V, so give h * sqrt(2/3) to weigh them as the
        mean over U and V would.
    peak : int, optional
        Integer samples' largest value, 255 to 65535: 8-bit and 16-bit samples go as they are
        (uint8, uint16 at full scale), 9 to 15-bit ones (held in uint16) as float32 divided by
        ``peak`` (KNLMeansCL's scale) and come back rounded to it. None: float samples, float16 or
        float32 in 0..1.
    spare : int
        On the GPU, frames kept there beyond those of the windows being filtered, least recently
        used given up first: for outputs asked for by T threads with a window of 2d + 1 frames,
        T + 2d keeps every frame until its last output is filtered.

    Raises
    ------
    ValueError
        ``planes`` not 1, 2 or 3; ``peak`` outside 255..65535.
    BackendUnavailableError
        backend="gpu" where CuPy or a CUDA device is missing.
    """

    def __init__(
        self, params: NLMParams, backend: str = "auto", *, planes: int, peak: int | None = None, spare: int = 0
    ) -> None:
        if planes not in PLANE_COUNTS:
            raise ValueError(f"planes must be 1, 2 or 3 (the planes filtered together), got {planes!r}")
        if peak is not None and (isinstance(peak, bool) or not isinstance(peak, int) or not 255 <= peak <= 65535):
            raise ValueError(
                f"peak must be an integer in 255..65535 (the samples' largest value) or None, got {peak!r}"
            )
        self.params, self.planes, self.peak = params, planes, peak
        self.backend = resolve_backend(backend)
        if self.backend == "cpu":
            # 16-bit samples are 16-bit whatever their values: a black frame's all fit in 9 bits,
            # which Denoiser refuses as ambiguous without bit_depth.
            self._denoiser = Denoiser(params, self.backend, bit_depth=16 if peak == 65535 else None)
        else:
            from ..gpu.planes import PlaneTransfers
            from ..gpu.resident import ResidentFrames
            from .filters.fused_gpu import FusedGpuFilter

            self._filter = FusedGpuFilter(cupy_module())
            self.transfers = PlaneTransfers(self._filter.frames)
            self.resident = ResidentFrames(self.transfers, spare=spare)

    @property
    def output_dtype(self) -> np.dtype:
        """What the filter writes: uint8 / uint16 for 8- and 16-bit samples (rounded where it runs), else float32."""
        return np.dtype({255: np.uint8, 65535: np.uint16}.get(self.peak, np.float32))

    def denoise_into(
        self,
        keys: Sequence[Hashable],
        center: int,
        read: Callable[[Hashable], Sequence[np.ndarray]],
        out: Sequence[np.ndarray],
        *,
        guide_keys: Sequence[Hashable] | None = None,
    ) -> None:
        """Denoise the frame of ``keys[center]``, searching the frames of ``keys``, into the planes ``out``.

        Parameters
        ----------
        keys : sequence of hashable
            The window's frames, in time order (a key may repeat: KNLMeansCL's clamped ends). A key
            names one frame for the clip's life: on the GPU it is read once while it stays there.
        center : int
            The output's place in ``keys``.
        read : callable
            ``read(key)`` -> the frame's filtered planes, (H, W) arrays of the samples' dtype.
        out : sequence of numpy.ndarray
            The output's planes, written in place: (H, W) of the samples' dtype.
        guide_keys : sequence of hashable, optional
            The same window of a guide clip (KNLMeansCL's rclip), whose patches give the distances;
            its keys must differ from the clip's.
        """
        if self.backend == "cpu":
            frames = [self._stacked(read(key)) for key in keys]
            guide = None if guide_keys is None else [self._stacked(read(key)) for key in guide_keys]
            result = self._denoiser.denoise_frame(frames, center, guide=guide, dtype=self.output_dtype)
            for index, plane in enumerate(out):
                values = result if result.ndim == 2 else result[:, :, index]
                rounded = self.peak is not None and self.output_dtype == np.float32
                plane[...] = np.clip(np.rint(values * self.peak), 0, self.peak) if rounded else values
            return
        from ..gpu.planes import HostPlanes

        def read_planes(key: Hashable) -> HostPlanes:
            scaled_by = None if self.peak in FULL_SCALE_PEAKS else self.peak
            return HostPlanes(read(key), 1 if self.planes == 1 else 3, scaled_by)

        count = len(keys)
        with self.resident.held([*keys, *(guide_keys or ())], read_planes) as frames:
            channels, height, width = frames[center].shape
            output = self.transfers.buffer("output", (height, width, channels), self.output_dtype)
            self._filter(frames[:count], center, self.params, frames[count:] or None, out=output)
            self.transfers.download_into(output, out, self.peak)

    def _stacked(self, planes: Sequence[np.ndarray]) -> np.ndarray:
        """Return a frame's planes as ``Denoiser`` takes them: (H, W) for one plane, else (H, W, 3).

        9 to 15-bit samples as float32 divided by their peak (the engine would round them to
        16-bit scale first, and put some outputs one sample off); (U, V) as (U, V, 0).
        """
        arrays = list(planes)
        if self.peak not in (None, *FULL_SCALE_PEAKS):
            arrays = [array.astype(np.float32) / np.float32(self.peak) for array in arrays]
        if len(arrays) == 1:
            return arrays[0]
        if len(arrays) == 2:
            arrays.append(np.zeros_like(arrays[0]))
        return np.stack(arrays, axis=-1)
