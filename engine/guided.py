"""The two-pass guide (KNLMeansCL's rclip, issue 19): a first pass of the filter makes the guide
clip, the second pass takes its patch distances from it and averages the source.

At high noise the weights of one pass follow the noise in the patches; the first pass's output
is a cleaner picture to compare patches on (docs/design-luma-chroma.md, "Reference-guided
filtering"). Both passes use the same window; the first pass's h is ``prefilter_h`` when given,
else the second's. Both backends: on the GPU the first pass's frames come back to the host and
go up again as the second's guide (the two passes are two ``Denoiser``s).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from nlmeans_studio.engine.denoiser import Denoiser
from nlmeans_studio.engine.frames import checked_frame, from_float32, window_indices
from nlmeans_studio.engine.params import NLMParams


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

    def __init__(self, params: NLMParams, backend: str = "auto", prefilter_h: float | None = None) -> None:
        first = params if prefilter_h is None else dataclasses.replace(params, h=prefilter_h)
        self.prefilter = Denoiser(first, backend)
        self.filter = Denoiser(params, backend)

    @property
    def backend(self) -> str:
        return self.filter.backend

    @property
    def device_name(self) -> str:
        return self.filter.device_name

    def denoise_frame(self, clip: np.ndarray | Sequence[np.ndarray], index: int) -> np.ndarray:
        """Frame ``index`` of ``clip``, denoised by the second pass; float32 (H, W, C)."""
        window = window_indices(index, len(clip), self.filter.params)
        frames = [clip[i] for i in window]
        guide = [self.prefilter.denoise_frame(clip, i) for i in window]
        return self.filter.denoise_frame(frames, index - window.start, guide=guide)

    def export_stream(self, frames: Iterable[np.ndarray], dtype: Any = np.uint8) -> Iterator[np.ndarray]:
        """Denoise a whole clip in order, as ``Denoiser.export_stream`` does; frames equal
        ``denoise_frame``'s. Frame t comes once the guide's frame t + Df is made (source frame
        t + 2 Df read); only the frames the two windows need are held."""
        dtype = np.dtype(dtype)
        past, future = self.filter.params.frames_past, self.filter.params.frames_future
        sources, to_prefilter = itertools.tee(checked_frame(frame) for frame in frames)
        held: dict[int, np.ndarray] = {}
        guides: dict[int, np.ndarray] = {}
        read = 0

        def output(index: int, length: int) -> np.ndarray:
            window = range(max(0, index - past), min(length, index + future + 1))
            result = self.filter.denoise_frame(
                [held[i] for i in window], index - window.start, guide=[guides[i] for i in window]
            )
            for old in [i for i in held if i < index + 1 - past]:
                del held[old], guides[old]
            return result if dtype == np.float32 else from_float32(result, dtype)

        for made, guide in enumerate(self.prefilter.stream(to_prefilter)):
            guides[made] = guide
            while read <= made:  # the source frames the guide has made so far
                held[read] = next(sources)
                read += 1
            if made - future >= 0:
                yield output(made - future, made + future + 1)
        length = read
        for index in range(max(0, length - future), length):
            yield output(index, length)
