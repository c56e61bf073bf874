"""Tuning for a frame rate: the window and h of best estimated quality that exports at a rate here.

The closing method of Goossens et al. (2010): fix the frame rate the user needs, then take the
search window and temporal frames that give the best quality at that rate. Each candidate window
(search radius A, past frames Dp, future frames Df) is timed for real, as ``denoise_file`` exports
the clip on this machine (decoding, the filter the default chooses for the clip's noise, encoding),
and scored without a clean reference: its strengths are chosen by Stein's unbiased risk estimate
on the clip's middle frames (``choose_filter``), and SURE's mean squared error at them is its
estimated PSNR.

The grid is searched coarse to fine, cheapest window first: a window at least as large as one
already too slow is not timed (it can only be slower); the search radii between the coarse ones
are tried next to the best window that reaches the rate.

For live video (``live``) the windows are the zero-delay ones (Df = 0), each fed the clip's frames
at the target rate into ``denoise_live`` as a live source's come: a window keeps up where its
latency's 95th percentile is at most LIVE_LATENCY_FRAMES frame times and it drops almost no frame.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..backend import gpu_unavailable_reason
from ..frames import to_float32
from ..media.probe import VideoInfo
from ..media.reader import TimedFrame, VideoReader
from ..media.yuv import YuvFrame, planes_to_rgb
from .default_filter import AUTO, SURE_CROP, SURE_FRAMES, FilterChoice, _centre, choose_filter, sure_applies
from .export import ExportCancelledError, Source, _opened, clip_sample, denoise_file, estimate_clip_noise
from .live import denoise_live
from .luma_chroma import matrix_for, yuv_matrix
from .noise_estimate import NoiseEstimate
from .noise_shape import WHITE, NoiseShape, noise_shape
from .params import NLMParams
from .sure import sure_mse

COARSE_SEARCH_RADII = (1, 3, 5, 8)  # A, pixels: the first pass; the radii between are tried near the best
TEMPORAL = ((0, 0), (1, 1), (2, 2))  # (Dp, Df): a spatial filter, then one and two frames each side
LIVE_TEMPORAL = ((0, 0), (1, 0), (2, 0))  # (Dp, Df) live: zero delay, as denoise --live filters
LIVE_SECONDS = 2.0  # seconds of frames each window is fed live, at the target rate (the clip's middle, looped)
# Seconds fed first, not timed: the live path's first frames load what it runs (the encoder, the conversion
# to the encoder's format), which is no part of the window's steady latency.
LIVE_WARM_UP_SECONDS = 0.5
LIVE_LATENCY_FRAMES = 2  # a live window keeps up where its latency's 95th percentile is at most this many frame times
LIVE_DROPPED_SHARE = 0.02  # ... and it drops at most this share of the frames fed
TIMED_FRAMES = 16  # frames each candidate exports, from the clip's middle; the first is not timed
# A window this many times slower than the target, or less, is timed again before it is taken as too slow:
# on 2 cores shared with other work one window's rate differed up to 1.5x from one tune to the next, and a
# window wrongly too slow prunes the larger ones (0.53 dB lost at 25 fps in the study's first run).
NEAR_MISS = 1.5
TIMED_RUNS, TIMED_SECONDS = 3, 1.0  # exports of a candidate: the fastest of 2, or of 3 where 2 took under 1 s
SURE_LEAST_SIGMA = 1.0  # 8-bit levels of noise under which a clip is taken as clean (as ``sure_applies``)
REALTIME = "realtime"  # the target that is the clip's own frame rate


@dataclass(frozen=True)
class TuneCandidate:
    """One window tried: its export rate, and its filter and estimated quality where it reached the target.

    Attributes
    ----------
    window : NLMParams
        The window (``search_radius``, ``frames_past``, ``frames_future``, ``patch_radius``) with the
        weighting and centre weight; its h is the one timed.
    fps : float
        Frames a second the export ran at, measured here (after its first frame).
    choice : FilterChoice or None
        The filter chosen for the window (its strengths by SURE unless an encoder's noise); None
        where the window is slower than the target (not scored).
    estimated_mse : float or None
        SURE's mean squared error of the filter (full scale squared); None where not scored. It
        reads 0 or less where SURE's noise model fails (compressed noise: the encoder smoothed
        some of it away); the windows are ranked by it all the same.
    latency_p95_ms : float or None
        Live (``tune_for_fps(live=True)``): the 95th percentile of the delay from a frame's
        arrival to its denoised frame encoded, in milliseconds; None otherwise.
    """

    window: NLMParams
    fps: float
    choice: FilterChoice | None = None
    estimated_mse: float | None = None
    latency_p95_ms: float | None = None

    @property
    def read_no_error(self) -> bool:
        """Whether the candidate was scored and SURE read 0 or less for it (its PSNR is then None)."""
        return self.estimated_mse is not None and self.estimated_mse <= 0

    @property
    def estimated_psnr(self) -> float | None:
        """PSNR in dB from ``estimated_mse``; None where not scored or SURE read no error (0 or less)."""
        if self.estimated_mse is None or self.estimated_mse <= 0:
            return None
        return -10 * math.log10(self.estimated_mse)

    def describe(self) -> str:
        """Return the window in the paper's symbols, e.g. "A 3, Dp 1, Df 1, B 4"."""
        w = self.window
        return f"A {w.search_radius}, Dp {w.frames_past}, Df {w.frames_future}, B {w.patch_radius}"


@dataclass(frozen=True)
class TuneResult:
    """What ``tune_for_fps`` tried and chose.

    Attributes
    ----------
    target_fps : float
        The rate asked for, in frames a second.
    candidates : list of TuneCandidate
        Every window timed, in the order tried.
    chosen : TuneCandidate or None
        The one of best estimated PSNR among those reaching the target; None where none does.
    pruned : int
        Windows not timed: at least as large as one already slower than the target.
    width, height : int
        The clip's frame size, in pixels.
    backend, device_name : str
        Where the exports ran.
    warning : str or None
        Why the estimates may rank the windows poorly (noise SURE does not model).
    played : bool
        The windows were timed as playback (``codec`` None), not as exports.
    live : bool
        The windows were timed live (``tune_for_fps(live=True)``).
    """

    target_fps: float
    candidates: list[TuneCandidate]
    chosen: TuneCandidate | None
    pruned: int
    width: int
    height: int
    backend: str
    device_name: str
    warning: str | None = None
    played: bool = False  # the windows timed as playback (decoded and filtered), not as exports
    live: bool = False

    @property
    def fastest(self) -> TuneCandidate:
        """The candidate that exported fastest."""
        return max(self.candidates, key=lambda candidate: candidate.fps)


class TargetNotReachedError(ValueError):
    """No window exports at the target rate here; ``result`` holds what was timed.

    Parameters
    ----------
    result : TuneResult
        The tune, its ``chosen`` None.
    """

    def __init__(self, result: TuneResult) -> None:
        fastest = result.fastest
        way_out = "a smaller frame size (scale the clip down first)"
        if result.backend == "cpu" and gpu_unavailable_reason() is None:
            way_out += ", or the GPU backend (--backend gpu)"
        size, target, where = f"{result.width}x{result.height}", f"{result.target_fps:g} fps", result.backend
        if result.live:
            quickest = min(result.candidates, key=lambda candidate: candidate.latency_p95_ms or math.inf)
            limit = LIVE_LATENCY_FRAMES * 1000 / result.target_fps
            message = (
                f"no zero-delay window keeps up with {size} at {target} live on the {where} here (its latency's "
                f"95th percentile under {limit:.0f} ms, {LIVE_LATENCY_FRAMES} frame times, and at most "
                f"{LIVE_DROPPED_SHARE:.0%} of the frames dropped): the quickest, {quickest.describe()}, had "
                f"{quickest.latency_p95_ms:.0f} ms; use {way_out}"
            )
        else:
            runs = "plays" if result.played else "exports"
            message = (
                f"no window {runs} {size} at {target} on the {where} here: the fastest, {fastest.describe()}, ran "
                f"at {fastest.fps:.1f} fps; ask for {math.floor(fastest.fps * 10) / 10:g} fps or less, or use {way_out}"
            )
        super().__init__(message)
        self.result = result


Progress = Callable[[int, int], None]  # windows tried, windows in all (a guess: pruning ends it early)


def tune_for_fps(
    source: Source,
    fps: float | str,
    *,
    backend: str = "auto",
    window: NLMParams | None = None,
    codec: str | None = "h264",
    live: bool = False,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> TuneResult:
    """Choose the window and strengths of best estimated quality among those that export at ``fps`` here.

    Parameters
    ----------
    source : str, Path or VideoReader
        The clip (a file or an image sequence's pattern), or an open reader of it (left open).
    fps : float or "realtime"
        The rate the export must reach, in frames a second; "realtime": the clip's own rate.
    backend : {"auto", "cpu", "gpu"}
        Where the filter runs, as ``denoise_file`` takes it.
    window : NLMParams, optional
        The patch radius, weighting and centre weight the windows keep (its radii and frames are
        tried, its h chosen); None: ``NLMParams()``'s.
    codec : str or None
        The codec the timed exports write (``CODECS``), at its default quality: the export's own,
        whose encoder shares the CPU with the filter (``"ffv1"`` costs least). None: the windows
        are timed as the window plays the clip (decoded and filtered, nothing encoded), the rate
        that counts for a preview or a live feed on screen; on a GPU the encoder, not the filter,
        bounds an export at 1080p (26-38 fps with FFV1 on 16 cores, every window alike).
    live : bool
        Tune for live video: the zero-delay windows (Df = 0), each fed the clip's frames at ``fps``
        into ``denoise_live`` for LIVE_SECONDS, its output encoded with ``codec``; a window reaches
        ``fps`` where its latency's 95th percentile is at most LIVE_LATENCY_FRAMES frame times and it
        drops at most LIVE_DROPPED_SHARE of the frames.
    progress : callable, optional
        Called with (windows tried, windows in all) after each window; the total is the grid's
        before pruning, so the tune may end before it.
    cancel : threading.Event, optional
        Set from another thread to stop; ``ExportCancelledError`` is raised.

    Returns
    -------
    TuneResult
        The windows timed and the one chosen.

    Raises
    ------
    TargetNotReachedError
        No window reaches ``fps`` (a ValueError; its message names the fastest and the ways out).
    ValueError
        ``fps`` not a positive number or "realtime"; a clip too short or too small for the grid, or
        one that looks clean (noise under 1 level: SURE has nothing to tell the windows apart by).
    VideoError
        The clip cannot be read.
    ExportCancelledError
        ``cancel`` was set.

    Notes
    -----
    The cost grows with the window: (2A+1)^2 (Dp + Df + 1) offsets per pixel, so a window at least
    as large as a slower one is never timed. Each window scored costs SURE's search of its
    strengths (about 20 filter runs of two frames' 192 x 192 centre) besides its timed export of
    ``TIMED_FRAMES`` frames. SURE assumes noise independent from pixel to pixel: for compressed,
    demosaiced or brightness-dependent noise the estimates are biased and ``warning`` says so.
    """
    window = NLMParams() if window is None else window
    cancel = cancel or threading.Event()
    if live and codec is None:
        raise ValueError("a live tune encodes each window's frames, as denoise --live does: give a codec")
    temporal = LIVE_TEMPORAL if live else TEMPORAL
    with _opened(source) as reader:
        if not isinstance(reader, VideoReader):
            raise ValueError("tuning times exports of a file: give a video file or an image sequence, not a pipe")
        info = reader.info
        target = _target_fps(fps, float(info.frame_rate))
        side = min(info.width, info.height)
        grid = [_window(window, a, past, future) for past, future in temporal for a in COARSE_SEARCH_RADII]
        grid = sorted((w for w in grid if w.min_frame_size <= side), key=_offsets)
        if not grid:
            raise ValueError(f"{info.path}: frames of {info.width}x{info.height} are too small to tune on")
        most_past = max(past for past, _ in temporal)
        span = SURE_FRAMES + most_past + max(future for _, future in temporal)
        if info.frame_count < max(span, 2):
            raise ValueError(f"{info.path}: {info.frame_count} frames; tuning scores {span} consecutive frames")
        estimate = estimate_clip_noise(reader)
        if estimate.average_sigma < SURE_LEAST_SIGMA:
            raise ValueError(
                f"{info.path}: its noise reads {estimate.average_sigma:.2f} levels, too little for SURE to tell the "
                "windows apart: the clip looks clean; denoise it with the defaults, or tune a noisier part"
            )
        whole = clip_sample(reader, span)  # the noise's shape is measured on its flat blocks, SURE on the centre
        sample = to_float32(_centre(whole, SURE_CROP))
        matrix = matrix_for(info.color.get("colorspace", 2), info.height)
        shape = noise_shape(whole, estimate, yuv_matrix(matrix)) if sure_applies(estimate) else None  # in Y'CbCr
        scored = _Sample(whole, sample, shape, most_past, reader.yuv_layout is None)
        middle = max(0, (info.frame_count - TIMED_FRAMES) // 2)
        timed = range(middle, min(middle + TIMED_FRAMES, info.frame_count))
        candidates: list[TuneCandidate] = []
        slow: list[NLMParams] = []
        total = len(grid) + 2
        pruned = 0
        backend_name = device_name = ""

        def tried(candidate_window: NLMParams) -> None:
            """Time ``candidate_window`` unless pruned, and score it where it reaches the target."""
            nonlocal pruned, backend_name, device_name
            if cancel.is_set():
                raise ExportCancelledError("tuning cancelled")
            if any(_at_least(candidate_window, smaller) for smaller in slow):
                pruned += 1
            else:
                choice = choose_filter(estimate, candidate_window, matrix=matrix, luma_chroma=AUTO)
                timing = _timing(reader, choice, timed, backend, codec, target if live else None, cancel)
                if not live and target / NEAR_MISS <= timing.fps < target:  # before it prunes larger windows
                    again = _timing(reader, choice, timed, backend, codec, None, cancel)
                    timing = max(timing, again, key=lambda run: run.fps)
                elif live and not timing.reaches(target):  # a live run's latency varies more: once more
                    again = _timing(reader, choice, timed, backend, codec, target, cancel)
                    timing = min(timing, again, key=lambda run: (not run.reaches(target), run.latency_p95_ms))
                backend_name, device_name = timing.backend, timing.device_name
                if not timing.reaches(target):
                    slow.append(candidate_window)
                    candidates.append(TuneCandidate(choice.params, timing.fps, latency_p95_ms=timing.latency_p95_ms))
                else:
                    candidates.append(_scored(candidate_window, timing, estimate, scored, matrix, backend))
            if progress is not None:
                progress(len(candidates) + pruned, max(total, len(candidates) + pruned))

        warm_up = choose_filter(estimate, grid[0], matrix=matrix, luma_chroma=AUTO)
        _timing(reader, warm_up, timed[:3], backend, codec, None, cancel)  # loads or compiles what the first needs
        for candidate_window in grid:
            tried(candidate_window)
        best = _best(candidates)
        if best is not None:  # the search radii next to the best's, between the coarse ones
            radius = best.window.search_radius
            for a in (radius - 1, radius + 1):
                refined = dataclasses.replace(best.window, search_radius=a)
                if a > 0 and a not in COARSE_SEARCH_RADII and refined.min_frame_size <= side:
                    tried(refined)
        result = TuneResult(
            target,
            candidates,
            _best(candidates),
            pruned,
            info.width,
            info.height,
            backend_name,
            device_name,
            None if shape is not None else _NOT_WHITE,
            played=codec is None,
            live=live,
        )
    if result.chosen is None:
        raise TargetNotReachedError(result)
    return result


_NOT_WHITE = (
    "the noise is an encoder's (or correlated between pixels with no flat area to measure that on): SURE's "
    "estimates are biased, and the ranking of the windows less sure"
)


def _target_fps(fps: float | str, clip_rate: float) -> float:
    """Return the rate asked for in frames a second: ``fps``, or the clip's for "realtime"."""
    if fps == REALTIME:
        return clip_rate
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps must be a number of frames a second > 0 or 'realtime', got {fps!r}")
    return float(fps)


def _window(window: NLMParams, search_radius: int, past: int, future: int) -> NLMParams:
    return dataclasses.replace(window, search_radius=search_radius, frames_past=past, frames_future=future)


def _offsets(window: NLMParams) -> int:
    """Offsets per pixel, (2A+1)^2 (Dp + Df + 1): what the filter's time grows with."""
    return (2 * window.search_radius + 1) ** 2 * (window.frames_past + window.frames_future + 1)


def _at_least(window: NLMParams, other: NLMParams) -> bool:
    """Whether ``window`` searches at least all ``other`` does (so it cannot be faster)."""
    return (
        window.search_radius >= other.search_radius
        and window.frames_past >= other.frames_past
        and window.frames_future >= other.frames_future
    )


@dataclass(frozen=True)
class _Timing:
    """How a window ran here: its rate, and live the latency's 95th percentile and the share it dropped."""

    fps: float
    backend: str
    device_name: str
    latency_p95_ms: float | None = None  # live only
    dropped_share: float = 0.0

    def reaches(self, target: float) -> bool:
        """Whether the window keeps up with ``target`` frames a second (live: in time, dropping almost none)."""
        if self.latency_p95_ms is None:
            return self.fps >= target
        in_time = self.latency_p95_ms <= LIVE_LATENCY_FRAMES * 1000 / target
        return in_time and self.dropped_share <= LIVE_DROPPED_SHARE


def _timing(
    reader: VideoReader,
    choice: FilterChoice,
    frames: range,
    backend: str,
    codec: str | None,
    live_rate: float | None,
    cancel: threading.Event,
) -> _Timing:
    """How ``choice`` runs ``frames``: exported with ``codec``, played (None), or live at ``live_rate``."""
    if live_rate is not None:
        return _live_timing(reader, choice, frames, backend, codec, live_rate, cancel)
    if codec is None:
        return _Timing(*_playback_rate(reader, choice, frames, backend, cancel))
    return _Timing(*_export_rate(reader, choice, frames, backend, codec, cancel))


def _playback_rate(
    reader: VideoReader, choice: FilterChoice, frames: range, backend: str, cancel: threading.Event
) -> tuple[float, str, str]:
    """Frames a second ``choice`` plays ``frames`` at (decoded and filtered), after the first; backend, device.

    The fastest of TIMED_RUNS runs (a run is short: no encoder).
    """
    denoiser = choice.denoiser(backend)
    rates: list[float] = []
    for _ in range(TIMED_RUNS):
        started, count = 0.0, 0
        played = denoiser.export_stream(itertools.islice(reader.frames(frames.start), len(frames)), reader.info.dtype)
        for count, _frame in enumerate(played, start=1):
            if cancel.is_set():
                raise ExportCancelledError("tuning cancelled")
            if count == 1:
                started = time.perf_counter()
        seconds = time.perf_counter() - started
        rates.append((count - 1) / seconds if count > 1 and seconds > 0 else math.inf)
    return max(rates), denoiser.backend, denoiser.device_name


def _export_rate(
    reader: VideoReader, choice: FilterChoice, frames: range, backend: str, codec: str, cancel: threading.Event
) -> tuple[float, str, str]:
    """Frames a second ``choice`` exports ``frames`` at, after the first; with the backend and device.

    The export's fixed start (opening the encoder, a first compile) is left out, its drain kept.
    Two exports, a third while their timed parts add up to under TIMED_SECONDS, and the fastest
    counts: on a shared machine another program's burst slowed a 0.1 s export of small
    frames up to 10 times.
    """
    rates: list[float] = []
    with tempfile.TemporaryDirectory(prefix="nlmeans-tune-") as folder:
        spent = 0.0
        while len(rates) < TIMED_RUNS and (len(rates) < 2 or spent < TIMED_SECONDS):
            handed: list[float] = []  # seconds at which each frame went to the encoder, this export's
            summary = denoise_file(
                reader,
                Path(folder) / "timed.mkv",
                choice.params,
                backend=backend,
                codec=codec,
                overwrite=True,
                frames=frames,
                luma_chroma=choice.luma_chroma,
                progress=lambda done, total, seconds, handed=handed: handed.append(seconds),
                cancel=cancel,
            )
            spent += summary.seconds - handed[0]
            rates.append((summary.frames - 1) / (summary.seconds - handed[0]) if summary.frames > 1 else summary.fps)
    return max(rates), summary.backend, summary.device_name


def _live_timing(
    reader: VideoReader,
    choice: FilterChoice,
    frames: range,
    backend: str,
    codec: str,
    rate: float,
    cancel: threading.Event,
) -> _Timing:
    """``choice`` run as ``denoise --live`` runs it: ``frames`` fed at ``rate`` frames a second for LIVE_SECONDS.

    Its output is encoded with ``codec`` into a scratch file, after LIVE_WARM_UP_SECONDS of the same
    that are not timed (loading or compiling what the path runs is not the window's latency).
    """
    planes = None  # the frames as a GPU's live run takes them, where it converts them itself
    if reader.yuv_layout is None:
        arrays = [array for _, array in zip(frames, reader.frames(frames.start), strict=False)]
    else:  # decoded once: the arrays are the planes converted, as the reader converts them
        planes = [timed.array for _, timed in zip(frames, reader.timed_frames(frames.start, yuv=True), strict=False)]
        arrays = [planes_to_rgb(frame.planes, frame.layout, reader.info.dtype) for frame in planes]
    frame_rate = Fraction(rate).limit_denominator(1001)
    stream = dataclasses.replace(  # no sound: the picture alone is timed
        reader.info, frame_rate=frame_rate, time_base=1 / frame_rate, other_formats=()
    )
    with tempfile.TemporaryDirectory(prefix="nlmeans-tune-") as folder:
        for seconds in (LIVE_WARM_UP_SECONDS, LIVE_SECONDS):
            fed = max(1, round(rate * seconds))
            status = denoise_live(
                _PacedFrames(stream, arrays, fed, planes),
                Path(folder) / "live.mkv",
                choice.params,
                backend=backend,
                codec=codec,
                overwrite=True,
                luma_chroma=choice.luma_chroma,
                cancel=cancel,
            )
    return _Timing(status.fps, status.backend, status.device_name, status.latency_p95_ms, status.dropped / fed)


class _PacedFrames:
    """A clip's frames handed out at the stream's frame rate, as a live source's come (``denoise_live`` reads it).

    ``count`` frames, ``arrays`` looped, frame n stamped n (the stream's time base is a frame); each
    waits for its time, counted from the first. ``planes``: the same frames as ``YuvFrame``s, given
    instead where ``timed_frames`` is asked for them (``yuv_layout``, as a reader has it).
    """

    def __init__(
        self, info: VideoInfo, arrays: Sequence[np.ndarray], count: int, planes: Sequence[YuvFrame] | None = None
    ) -> None:
        self.info, self._arrays, self._planes, self._count = info, arrays, planes, count
        self.yuv_layout = planes[0].layout if planes else None

    def timed_frames(self, *, yuv: bool = False) -> Iterator[TimedFrame]:
        """Yield the frames, each at its time; as planes with ``yuv`` where there are planes."""
        pictures = self._planes if yuv and self._planes else self._arrays
        started, step = time.perf_counter(), 1 / float(self.info.frame_rate)
        for number in range(self._count):
            time.sleep(max(0.0, started + number * step - time.perf_counter()))
            yield TimedFrame(number, number, pictures[number % len(pictures)])


@dataclass(frozen=True)
class _Sample:
    """The frames every window is scored on: whole, their centre in float32, the noise's shape."""

    whole: np.ndarray  # (T, H, W, C) as read: choose_filter's sample, cut to the same centre there
    centre: np.ndarray  # their SURE_CROP centre, float32: what SURE scores
    shape: NoiseShape | None  # the noise's (``noise_shape``), None where SURE's estimates are biased
    most_past: int  # frames before the first scored one: the most any window searches
    rgb_allowed: bool  # an RGB source's: scored in RGB where SURE finds it better, as denoise chooses


def _scored(
    window: NLMParams, timing: _Timing, estimate: NoiseEstimate, sample: _Sample, matrix: str, backend: str
) -> TuneCandidate:
    """``window``'s filter with its strengths chosen by SURE, and SURE's PSNR at them.

    The same SURE_FRAMES frames of ``sample`` are scored for every window, each with its own
    window's frames around it.
    """
    frames = slice(sample.most_past - window.frames_past, sample.most_past + SURE_FRAMES + window.frames_future)
    choice = choose_filter(  # with the noise's shape measured once, not again for every window
        estimate,
        window,
        matrix=matrix,
        luma_chroma=AUTO,
        sample=sample.whole[frames],
        backend=backend,
        shape=sample.shape,
        rgb_allowed=sample.rgb_allowed,
    )
    denoiser = choice.denoiser(backend)
    shape = WHITE if sample.shape is None else sample.shape
    risks = [
        sure_mse(denoiser, sample.centre[frames], window.frames_past + k, estimate.covariance, seed=k, shape=shape)
        for k in range(SURE_FRAMES)
    ]
    return TuneCandidate(choice.params, timing.fps, choice, float(np.mean(risks)), timing.latency_p95_ms)


def _best(candidates: list[TuneCandidate]) -> TuneCandidate | None:
    """Return the scored candidate of least SURE error, its sign kept (it reads 0 or less on compressed noise)."""
    scored = [candidate for candidate in candidates if candidate.estimated_mse is not None]
    return min(scored, key=lambda candidate: candidate.estimated_mse, default=None)
