"""The two-pass guide (KNLMeansCL's rclip, issue 19).

A first pass of the filter makes the guide clip, the second pass takes its patch distances from it
and averages the source.

At high noise the weights of one pass follow the noise in the patches; the first pass's output
is a cleaner picture to compare patches on (docs/design-luma-chroma.md, "Reference-guided
filtering"). Both passes use the same window; the first pass's h is ``prefilter_h`` when given,
else the second's. Both backends; ``export_stream`` keeps the frames and the guide on the
filter's device (``denoise_frame`` composes the two ``Denoiser``s, through the host).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ..frames import at_bit_depth, check_same_shape, checked_frame, from_float32, output_dtype
from .denoiser import Denoiser
from .filters import METHODS, window_filter
from .params import NLMParams, check_frame_shape, window_indices


class GuidedDenoiser:
    """The filter with ``params``, its distances taken from a first pass of the same clip.

    Parameters
    ----------
    params : NLMParams
        The second pass (the result); the first pass has the same window.
    backend : {"auto", "cpu", "gpu"}
        As ``Denoiser`` takes it; both passes run on it (the fused method).
    prefilter_h : float, optional
        The first pass's h in 8-bit levels (default: ``params.h``).
    bit_depth : int, optional
        Bits per sample of uint16 frames, as ``Denoiser`` takes it.

    Attributes
    ----------
    backend : str
        The resolved backend, "cpu" or "gpu".
    device_name : str
        The processor the frames are filtered on, for readouts.
    prefilter, filter : Denoiser
        The first pass (the guide) and the second (the result).

    Raises
    ------
    ValueError
        An unknown backend, or ``prefilter_h`` out of 0.001..10000.
    BackendUnavailableError
        backend="gpu" where the GPU cannot run.
    """

    def __init__(
        self,
        params: NLMParams,
        backend: str = "auto",
        prefilter_h: float | None = None,
        *,
        bit_depth: int | None = None,
    ) -> None:
        first = params if prefilter_h is None else dataclasses.replace(params, h=prefilter_h)
        self.prefilter = Denoiser(first, backend, bit_depth=bit_depth)
        self.filter = Denoiser(params, backend, bit_depth=bit_depth)
        self._window_filter = window_filter(self.filter.backend, METHODS[0])  # export_stream's, for both passes

    @property
    def backend(self) -> str:
        """The backend the filter runs on, "cpu" or "gpu"."""
        return self.filter.backend

    @property
    def device_name(self) -> str:
        """The device's name, for readouts."""
        return self.filter.device_name

    def denoise_frame(self, clip: np.ndarray | Sequence[np.ndarray], index: int) -> np.ndarray:
        """Frame ``index`` of ``clip``, denoised by the second pass.

        float32 (H, W, C), or (H, W) where that frame was given as (H, W).
        """
        window = window_indices(index, len(clip), self.filter.params)
        frames = [clip[i] for i in window]
        guide = [self.prefilter.denoise_frame(clip, i) for i in window]
        return self.filter.denoise_frame(frames, index - window.start, guide=guide)

    def export_stream(self, frames: Iterable[np.ndarray], dtype: Any = np.uint8) -> Iterator[np.ndarray]:
        """Denoise a whole clip in order, as ``Denoiser.export_stream`` does; frames equal ``denoise_frame``'s.

        Frame t comes once the guide's frame t + Df is made (source frame t + 2 Df read). Only the
        frames the two windows need are held, on the filter's device: each source frame crosses to
        it once and the guide never leaves it. ``params`` are taken when the run starts.
        """
        dtype = output_dtype(dtype)
        first, second = self.prefilter.params, self.filter.params
        chosen = self._window_filter  # both passes' frames are its own
        held: dict[int, Any] = {}  # source frames, uploaded
        guides: dict[int, Any] = {}  # the first pass's outputs, as frames

        def guide(index: int, length: int) -> Any:
            window = window_indices(index, length, first)
            return chosen.as_frame(chosen([held[i] for i in window], index - window.start, first))

        def output(index: int, length: int) -> np.ndarray:
            window = window_indices(index, length, second)
            result = chosen.download(
                chosen([held[i] for i in window], index - window.start, second, [guides[i] for i in window])
            )
            for old in [i for i in held if i < index + 1 - second.frames_past]:
                del held[old], guides[old]
            return result if dtype == np.float32 else at_bit_depth(from_float32(result, dtype), self.filter.bit_depth)

        future = second.frames_future
        shape: tuple[int, ...] | None = None
        read = made = written = 0
        for frame in frames:
            host = checked_frame(frame, self.filter.bit_depth)
            shape = shape or host.shape
            check_same_shape(shape, host.shape)
            check_frame_shape(host.shape, second)
            held[read] = chosen.upload(host)
            read += 1
            if read > made + future:  # the guide's frame `made` has its whole window
                guides[made] = guide(made, read)
                made += 1
                if made > written + future:
                    yield output(written, made)
                    written += 1
        for index in range(made, read):
            guides[index] = guide(index, read)
        for index in range(written, read):
            yield output(index, read)
