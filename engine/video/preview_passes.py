"""The still preview in passes, the part on screen first: what the window shows while a person tunes.

A 720p frame takes about a second on a laptop's two cores, too long to follow a slider. So
the window first shows ``unfiltered_preview``, ``BEFORE``: the filter's input, before any filter
ran (or compiled), so the picture is there at once. Then ``render_passes`` gives, in order:

1. ``QUICK``: the shown region filtered at half size (2 x 2 means), with half the radii and h
   (the mean of four pixels has half the noise), on the centre frame alone: about a fortieth of
   the exact filter's work, for a first look at what the strength does;
2. ``SHOWN``: the shown region exact, where it is not the whole frame;
3. ``EXACT``: the whole frame exact, with PSNR, equal to ``Previewer.render``'s.

The exact passes filter bands of PIECE_ROWS rows, each cropped with a margin of A + B pixels
(the search and patch radii): every pixel a band's pixels read is inside the crop, so a band
equals the same rows of the whole frame's result (to float32 rounding, which the running sums
accumulate from another first row; within one 8-bit level). Between pieces, ``abandoned()`` is
asked: a newer request stops an older one there. The filter runs on ``preview_threads()``, the
free cores but one. On the GPU, where a frame takes milliseconds, the exact frame comes alone
(``Previewer.render``, from the frames kept on the device).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from ..frames import from_float32, to_float32
from .clip_denoiser import FrameDenoiser, LumaChroma
from .denoiser import Denoiser
from .filters import cpu_filter_compiles
from .luma_chroma import LumaChromaDenoiser
from .params import NLMParams, window_indices
from .preview import Preview, Previewer, SyntheticNoise

BEFORE, QUICK, SHOWN, EXACT = "not filtered yet", "quick", "exact in the shown region", "exact"
STAGES = (BEFORE, QUICK, SHOWN, EXACT)
PIECE_ROWS = 144  # an exact piece's rows: 0.1-0.3 s on one core at 720p, so a new request waits little
QUICK_NOTE = "quick pass: PSNR comes with the exact frame"

Box = tuple[int, int, int, int]  # (x, y, width, height) in frame pixels


def render_passes(
    previewer: Previewer,
    index: int,
    params: NLMParams,
    noise: SyntheticNoise | None = None,
    luma_chroma: LumaChroma | None = None,
    *,
    shown: Box | None = None,
    abandoned: Callable[[], bool] = lambda: False,
) -> Iterator[Preview]:
    """Yield frame ``index``'s previews, each better than the last, the region ``shown`` first.

    Parameters
    ----------
    previewer : Previewer
        The clip and its denoiser.
    index : int
        The frame.
    params, noise, luma_chroma
        As ``Previewer.render``.
    shown : tuple of int, optional
        (x, y, width, height) of the frame on screen, in pixels; None: the whole frame.
    abandoned : callable
        Asked between pieces of work; True stops the passes there (a newer request came).

    Yields
    ------
    Preview
        With ``stage`` one of ``STAGES`` after ``BEFORE``, in that order (``SHOWN`` only where
        ``shown`` is not the whole frame, ``QUICK`` only where the shown region is large enough
        to halve; on the GPU ``EXACT`` alone). Before ``EXACT``, the pixels not filtered yet show
        the input; PSNR comes with ``EXACT``.
    """
    clip = previewer.clip(noise)
    given = clip[index]  # decoded (or made noisy) once
    before, after, frame_box, shown = _still(given, shown)
    started = time.perf_counter()
    template = Preview(index, after, after, None, None, QUICK_NOTE, 0.0, "-", "-", stage=BEFORE)
    denoiser = previewer.filter_for(params, luma_chroma)
    if denoiser.backend != "cpu":  # milliseconds a frame, from the frames kept on the GPU: no passes
        yield previewer.render(index, params, noise, luma_chroma)
        return
    from ..cpu.threads import cpu_threads, preview_threads  # loads numba: the CPU's alone

    with cpu_threads(preview_threads()):
        quick = _quick(previewer, before, shown, params, luma_chroma)
        if quick is not None:
            after = after.copy()
            _put(after, shown, quick[0])
            yield _partial(template, after, QUICK, started, denoiser)
        window = window_indices(index, len(clip), params)
        frames = {position: given if position == index else clip[position] for position in window}
        denoiser = previewer.filter_for(params, luma_chroma)  # the preview's Denoiser again, with params
        if shown != frame_box:
            after = after.copy()
            for piece in _pieces(shown):
                if abandoned():
                    return
                _put(after, piece, _exact_piece(denoiser, frames, len(clip), index, piece, params))
            yield _partial(template, after, SHOWN, started, denoiser)
        exact = np.empty(before.shape, np.float32)
        for piece in _pieces(frame_box):
            if abandoned():
                return
            x, y, w, h = piece
            rows = exact[y : y + h, x : x + w]
            rows[...] = _exact_piece(denoiser, frames, len(clip), index, piece, params).reshape(rows.shape)
    engine_ms = (time.perf_counter() - started) * 1000
    result = from_float32(exact, np.dtype(np.uint8))
    yield previewer.measured(index, noise, given, result, exact, engine_ms, denoiser)


def quick_preview(
    previewer: Previewer,
    index: int,
    params: NLMParams,
    noise: SyntheticNoise | None = None,
    luma_chroma: LumaChroma | None = None,
    *,
    shown: Box | None = None,
) -> Preview | None:
    """Return ``render_passes``' ``QUICK`` pass alone, or None where it has none; on the CPU.

    For the window while the CPU filter compiles (numba, once per machine: 20-30 s on 2 cores):
    the quick pass then runs the cascade (plain NumPy, the same filter), which needs no compile.

    Parameters
    ----------
    previewer : Previewer
        The clip and its denoiser.
    index : int
        The frame.
    params, noise, luma_chroma
        As ``Previewer.render``.
    shown : tuple of int, optional
        (x, y, width, height) of the frame on screen, in pixels; None: the whole frame.

    Returns
    -------
    Preview or None
        Stage ``QUICK``, the shown region filtered at half size and the rest the input, no PSNR;
        None where the filter has no cheaper pass or the region is too small to halve.
    """
    before, unfiltered, _, shown = _still(previewer.clip(noise)[index], shown)
    started = time.perf_counter()
    quick = _quick(previewer, before, shown, params, luma_chroma)
    if quick is None:
        return None
    pixels, denoiser = quick
    after = unfiltered.copy()
    _put(after, shown, pixels)
    template = Preview(index, unfiltered, after, None, None, QUICK_NOTE, 0.0, "-", "-", stage=BEFORE)
    return _partial(template, after, QUICK, started, denoiser)


def _still(given: np.ndarray, shown: Box | None) -> tuple[np.ndarray, np.ndarray, Box, Box]:
    """Return a still's frame as float32 and as uint8, the whole frame's box, and ``shown`` cut to it."""
    before = to_float32(np.asarray(given))
    height, width = before.shape[:2]
    frame_box = (0, 0, width, height)
    unfiltered = np.asarray(given) if given.dtype == np.uint8 else from_float32(before, np.dtype(np.uint8))
    return before, unfiltered, frame_box, frame_box if shown is None else _inside(shown, width, height)


def _quick(
    previewer: Previewer, before: np.ndarray, shown: Box, params: NLMParams, luma_chroma: LumaChroma | None
) -> tuple[np.ndarray, FrameDenoiser] | None:
    """Return the quick pass of ``shown`` (uint8) and the filter that ran it, or None.

    None where the filter has no cheaper pass or the box is too small to halve.
    """
    quick = _quick_params(params, luma_chroma)
    if quick is None or not _halvable(shown, quick[0]):
        return None
    denoiser = _quick_filter(previewer, *quick)
    return _quick_pass(denoiser, before, shown), denoiser


def _inside(box: Box, width: int, height: int) -> Box:
    """``box`` cut to the frame, at least one pixel."""
    x, y, w, h = box
    left, top = min(max(0, x), width - 1), min(max(0, y), height - 1)
    right, bottom = max(left + 1, min(width, x + w)), max(top + 1, min(height, y + h))
    return left, top, right - left, bottom - top


def _pieces(box: Box) -> Iterator[Box]:
    """``box`` in bands of PIECE_ROWS rows, top to bottom."""
    x, y, w, h = box
    for top in range(y, y + h, PIECE_ROWS):
        yield x, top, w, min(PIECE_ROWS, y + h - top)


def _margin_box(box: Box, margin: int, width: int, height: int) -> Box:
    """``box`` grown by ``margin`` pixels on each side, cut to the frame."""
    x, y, w, h = box
    left, top = max(0, x - margin), max(0, y - margin)
    return left, top, min(width, x + w + margin) - left, min(height, y + h + margin) - top


def unfiltered_preview(previewer: Previewer, index: int, noise: SyntheticNoise | None = None) -> Preview:
    """Return frame ``index`` as the filter gets it, ``after`` the same, stage ``BEFORE``: no filter ran.

    For the window to show at once, while the filter runs or compiles (numba, once per machine).

    Parameters
    ----------
    previewer : Previewer
        The clip's previewer, whose frames it reads.
    index : int
        The frame, 0-based.
    noise : SyntheticNoise or None
        Noise added to the frame as the filter would get it (the window's synthetic noise).

    Returns
    -------
    Preview
        Its ``before`` and ``after`` both the frame in uint8.
    """
    before = from_float32(to_float32(np.asarray(previewer.filter_input(index, noise))), np.dtype(np.uint8))
    return Preview(index, before, before.copy(), None, None, BEFORE, 0.0, "-", "-", stage=BEFORE)


class _Cropped(Sequence):
    """The window's frames cut to a box; the clip's length, so the window is truncated as it is."""

    def __init__(self, frames: dict[int, np.ndarray], length: int, box: Box) -> None:
        self._frames, self._length, self._box = frames, length, box

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, position: int) -> np.ndarray:  # type: ignore[override]
        x, y, w, h = self._box
        return self._frames[position][y : y + h, x : x + w]


def _exact_piece(
    denoiser: FrameDenoiser, frames: dict[int, np.ndarray], length: int, index: int, piece: Box, params: NLMParams
) -> np.ndarray:
    """Filter the pixels of ``piece`` exactly: a crop with every pixel they read; float32 (h, w, C)."""
    any_frame = frames[index]
    height, width = any_frame.shape[:2]
    crop = _margin_box(piece, params.search_radius + params.patch_radius, width, height)
    result = denoiser.denoise_frame(_Cropped(frames, length, crop), index)
    x, y, w, h = piece
    left, top = x - crop[0], y - crop[1]
    return result.reshape(crop[3], crop[2], -1)[top : top + h, left : left + w]


def _quick_params(params: NLMParams, luma_chroma: LumaChroma | None) -> tuple[NLMParams, LumaChroma | None] | None:
    """Return the quick pass's filter: half the radii and h, the centre frame alone; None where that is the filter."""
    quick = dataclasses.replace(
        params,
        h=params.h / 2,
        patch_radius=max(1, params.patch_radius // 2),
        search_radius=max(1, params.search_radius // 2),
        frames_past=0,
        frames_future=0,
    )
    if quick.search_radius >= params.search_radius and params.frames_past + params.frames_future == 0:
        return None  # no cheaper than the exact pass
    halved = None if luma_chroma is None else (luma_chroma[0] / 2, luma_chroma[1] / 2, luma_chroma[2])
    return quick, halved


def _quick_filter(previewer: Previewer, params: NLMParams, luma_chroma: LumaChroma | None) -> FrameDenoiser:
    """Return the quick pass's filter: the preview's, or the cascade while the CPU filter compiles.

    The cascade is the same filter as plain NumPy (DESIGN.md §2): slower, but it needs no compile,
    so a first launch shows a denoised picture in seconds instead of after numba's 20-30 s compile
    (2 cores). The exact passes wait for the compile.
    """
    if not cpu_filter_compiles():
        return previewer.filter_for(params, luma_chroma)
    if luma_chroma is None:
        return Denoiser(params, "cpu", method="cascade")
    return LumaChromaDenoiser(params, *luma_chroma, backend="cpu", method="cascade")


def _halvable(box: Box, quick: NLMParams) -> bool:
    """Whether ``box`` at half size is large enough for the quick filter."""
    return min(box[2], box[3]) // 2 >= quick.min_frame_size


def _quick_pass(denoiser: FrameDenoiser, frame: np.ndarray, box: Box) -> np.ndarray:
    """``box`` of ``frame`` (float32) filtered at half size and brought back; uint8 (h, w, C)."""
    x, y, w, h = box
    region = frame[y : y + h - h % 2, x : x + w - w % 2]
    halved = (region[0::2, 0::2] + region[1::2, 0::2] + region[0::2, 1::2] + region[1::2, 1::2]) * np.float32(0.25)
    filtered = denoiser.denoise_frame(halved[np.newaxis], 0).reshape(halved.shape)
    small = from_float32(filtered, np.dtype(np.uint8))  # rounded at half size: a quarter of the work
    doubled = np.repeat(np.repeat(small, 2, axis=0), 2, axis=1)
    return np.pad(doubled, ((0, h % 2), (0, w % 2)) + ((0, 0),) * (doubled.ndim - 2), mode="edge")


def _put(after: np.ndarray, box: Box, pixels: np.ndarray) -> None:
    """Write ``pixels`` (float32 or uint8) into ``box`` of the uint8 frame ``after``."""
    x, y, w, h = box
    if pixels.dtype != np.uint8:
        pixels = from_float32(np.ascontiguousarray(pixels), np.dtype(np.uint8))
    after[y : y + h, x : x + w] = pixels.reshape(after[y : y + h, x : x + w].shape)


def _partial(template: Preview, after: np.ndarray, stage: str, started: float, denoiser: FrameDenoiser) -> Preview:
    """Return a pass before the exact one: ``after`` so far (not written to again), no PSNR."""
    return dataclasses.replace(
        template,
        after=after,
        stage=stage,
        engine_ms=(time.perf_counter() - started) * 1000,
        backend=denoiser.backend,
        device_name=denoiser.device_name,
    )
