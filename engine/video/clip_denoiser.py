"""The clip denoisers' protocol (``ClipDenoiser``) and the one place that says which of them a run gets.

That place says which a run gets (``denoiser_for``) and which combinations exist (``refusal``).

The combinations: the plain filter (``Denoiser``); the plain filter in Y'CbCr with a luma and a
chroma strength (``LumaChromaDenoiser``); two passes, the first making the second's guide
(``GuidedDenoiser``); the plain filter over several GPUs (``DevicesDenoiser``). The luma/chroma
mode and the guide do not combine yet, and several GPUs run the plain filter only, on the GPU
backend. Export, the command line and the preview all ask here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from ..backend import gpu_unavailable_reason, resolve_backend
from ..frames import FULL_SCALE_BITS
from .denoiser import Denoiser
from .params import NLMParams

GUIDES = (None, "prefilter")  # the two-pass guide: none, or the filter's own first pass
LumaChroma = tuple[float, float, str]  # (h_luma, h_chroma, matrix): engine.video.luma_chroma's mode


class ClipDenoiser(Protocol):
    """What export and the preview need of a clip's denoiser.

    Of ``Denoiser``, ``LumaChromaDenoiser``, ``GuidedDenoiser``, ``DevicesDenoiser``.

    ``backend`` is the one it resolved ("cpu" or "gpu"), ``device_name`` the device's name as a
    run reports it; ``export_stream`` yields one output frame of ``dtype`` per input frame, in
    input order.
    """

    @property
    def backend(self) -> str:
        """The backend the denoiser runs on, "cpu" or "gpu"."""
        ...

    @property
    def device_name(self) -> str:
        """The device's name, for readouts."""
        ...

    def export_stream(self, frames: Iterable[np.ndarray], dtype: Any = np.uint8) -> Iterator[np.ndarray]:
        """Denoise ``frames`` in order; yield (H, W, C) outputs of ``dtype``."""
        ...


class FrameDenoiser(ClipDenoiser, Protocol):
    """A ``ClipDenoiser`` that also denoises one frame of a clip on request, as the preview asks.

    All but ``DevicesDenoiser``, which streams only.
    """

    def denoise_frame(self, clip: np.ndarray | Sequence[np.ndarray], index: int) -> np.ndarray:
        """Return frame ``index`` of ``clip``, denoised."""
        ...


def runs_plain(*, guide: str | None, devices: object | None) -> bool:
    """Whether the filter runs as the plain one whatever the clip's noise.

    With the guide or over several GPUs, which take no luma/chroma mode (so none is chosen for
    them).
    """
    return guide is not None or devices is not None


def context_frames(params: NLMParams, *, guide: str | None) -> tuple[int, int]:
    """Frames a part of a clip is read with before and after it, so that its outputs equal the whole clip's.

    The window's Dp and Df; twice them with the guide, whose first pass's outputs are the second
    pass's window. Context frames are read and filtered, not written.
    """
    passes = 1 if guide is None else 2
    return passes * params.frames_past, passes * params.frames_future


def refusal(
    *, luma_chroma: bool, guide: str | None, devices: bool, backend: str, command_line: bool = False
) -> str | None:
    """Why the filters asked for do not combine, or None where they do.

    Parameters
    ----------
    luma_chroma : bool
        The luma/chroma mode is asked for.
    guide : {None, "prefilter"}
        The two-pass guide.
    devices : bool
        Several GPUs are asked for.
    backend : {"auto", "cpu", "gpu"}
        The backend asked for.
    command_line : bool
        Say it in the command line's flags (``--devices``, ``--backend cpu``), where the command
        line checks before reading anything: several GPUs on the CPU backend, or with another
        mode; the rest it leaves to ``denoise_file``.

    Returns
    -------
    str or None
        The message of the ValueError to raise.
    """
    if command_line:
        if devices and backend == "cpu":
            return "--devices spreads the clip over GPUs: not with --backend cpu"
        if devices and (guide is not None or luma_chroma):
            return "--devices runs the plain filter only: not with --luma-chroma or --guide yet"
        return None
    if guide not in GUIDES:
        return f"guide must be 'prefilter' or None, got {guide!r}"
    if guide is not None and luma_chroma:
        return "the two-pass guide and the luma/chroma mode do not combine yet: choose one"
    if devices and (guide is not None or luma_chroma):
        return "several GPUs run the plain filter only: not with the luma/chroma mode or the guide yet"
    if devices and resolve_backend(backend) != "gpu":
        return f"several GPUs need the GPU backend: {gpu_unavailable_reason() or 'the CPU was asked for'}"
    return None


def denoiser_for(
    params: NLMParams,
    *,
    backend: str = "auto",
    luma_chroma: LumaChroma | None = None,
    guide: str | None = None,
    devices: Sequence[int] | str | None = None,
    plain: Denoiser | None = None,
) -> ClipDenoiser:
    """Return the clip denoiser for ``params`` and the mode asked for, taking the readers' frames.

    The readers' frames are uint16 at 16-bit full scale (``FULL_SCALE_BITS``).

    Parameters
    ----------
    params : NLMParams
    backend : {"auto", "cpu", "gpu"}
    luma_chroma : (h_luma, h_chroma, matrix), optional
        The luma/chroma mode (``LumaChromaDenoiser``) with ``params``' window.
    guide : {None, "prefilter"}
        Two passes (``GuidedDenoiser``).
    devices : "all" or sequence of int, optional
        Several GPUs (``DevicesDenoiser``), the plain filter only.
    plain : Denoiser, optional
        A plain filter to reuse (the preview's, warm): where the plain filter is asked for, it
        is returned with ``params`` set; the luma/chroma mode runs on its backend.

    Raises
    ------
    ValueError
        A combination that does not exist (``refusal``).
    BackendUnavailableError
        backend="gpu" (or ``devices``) where the GPU cannot run.
    """
    refused = refusal(luma_chroma=luma_chroma is not None, guide=guide, devices=devices is not None, backend=backend)
    if refused is not None:
        raise ValueError(refused)
    if devices is not None:
        from .several_gpus import DevicesDenoiser

        return DevicesDenoiser(params, devices)
    if guide is not None:
        from .guided import GuidedDenoiser

        return GuidedDenoiser(params, backend, bit_depth=FULL_SCALE_BITS)
    if luma_chroma is not None:
        from .luma_chroma import LumaChromaDenoiser

        backend = backend if plain is None else plain.backend
        return LumaChromaDenoiser(params, *luma_chroma, backend=backend, bit_depth=FULL_SCALE_BITS)
    if plain is not None:
        plain.params = params
        return plain
    return Denoiser(params, backend, bit_depth=FULL_SCALE_BITS)
