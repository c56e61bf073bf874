"""The background worker: a QObject in its own QThread that drives the engine for a window.

This is the one thread model of every window. ``Worker`` holds it: the GUI thread only calls
``submit``, which records the request and returns at once; the worker's thread takes the latest
request of each kind (older ones are dropped unseen) and answers with past-tense signals carrying
the request's number, so that the window can drop stale answers too. The GUI thread waits on
the engine only when its window closes (``WorkerThread.stop`` asks the running request to stop,
then joins the thread), and the worker never touches a widget. ``cancel`` asks a long request
(an export) to stop at its next progress. ``PreviewWorker`` (below) is the main window's; the volume window's
is ``volume_worker.VolumeWorker``, the export queue's ``export.ExportWorker``.

The main window's requests each name the clip they are asked of (the number of the request that
opened it): one asked of a clip since replaced is dropped unseen too, never run on the next clip.

Playback: a ``PlayRequest`` makes an ``engine.video.playback.RenderAhead``, handed to the window by
``playback_started``; between requests the worker renders its next frame, one frame per turn
of its event loop so that new requests come first. The window takes frames from it and calls
``wake`` when that made room.
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from nlmeans_studio.engine import (
    BackendUnavailableError,
    FilterChoice,
    LumaChroma,
    NLMParams,
    NoiseEstimate,
    Previewer,
    RenderAhead,
    SyntheticNoise,
    VideoError,
    VideoInfo,
    VideoReader,
    choose_filter,
    compile_cpu_filter,
    decoded_run,
    estimate_noise_over,
    filter_compiles,
    quick_preview,
    render_passes,
    resolve_backend,
    sure_sample_length,
    unfiltered_preview,
)


@dataclass(frozen=True)
class OpenRequest:
    path: Path
    reference: Path | None = None


@dataclass(frozen=True)
class PreviewRequest:
    index: int
    params: NLMParams
    noise: SyntheticNoise | None
    backend: str
    luma_chroma: LumaChroma | None = None  # (h_luma, h_chroma, matrix): filter in Y'CbCr
    shown: tuple[int, int, int, int] | None = None  # (x, y, width, height) on screen, filtered first; None: all


@dataclass(frozen=True)
class PlayRequest:
    """Play frames ``start`` to ``stop - 1``; replaces the playback running, if any."""

    start: int
    stop: int
    params: NLMParams
    noise: SyntheticNoise | None
    backend: str
    luma_chroma: LumaChroma | None = None


@dataclass(frozen=True)
class EstimateRequest:
    """Measure the noise (in ``roi`` on frame ``index``, else over the clip) and choose the filter
    for it as ``denoise`` does (``choose_filter``): the factors on the suggested strengths of the
    filter ``window``, in Y'CbCr of ``matrix`` if ``luma_chroma`` (or in RGB where SURE finds that
    better on an RGB source), else in RGB."""

    index: int
    roi: tuple[int, int, int, int] | None
    noise: SyntheticNoise | None
    window: NLMParams
    luma_chroma: bool
    matrix: str
    backend: str
    center_weight: str = "auto"  # choose_filter's: "auto", or a preset's pinned one


class Worker(QObject):
    """Runs requests on the thread it was moved to, the latest of each kind, in ``ORDER``.

    Subclasses name their request types' kinds in ``KINDS`` (type: kind), the order in which
    waiting kinds run in ``ORDER``, and answer each request in ``_handle(number, request)`` with
    their own signals; ``_idle`` runs once no request waits.
    """

    KINDS: ClassVar[dict[type, str]] = {}
    ORDER: ClassVar[tuple[str, ...]] = ()
    _wake = Signal()

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[int, object]] = {}  # kind: (number, request)
        self._cancels: dict[int, threading.Event] = {}  # number: set to stop that request, waiting or running
        # Queued even from the worker's own thread: one turn of its event loop at a time.
        self._wake.connect(self._process, Qt.ConnectionType.QueuedConnection)

    def submit(self, number: int, request: object) -> None:
        """Queue ``request`` as number ``number``, replacing any waiting one of its kind; returns at once."""
        self._queue(self.KINDS[type(request)], number, request)

    def _queue(self, kind: str, number: int, request: object) -> None:
        with self._lock:
            if kind in self._pending:  # replaced unseen: its number will never run
                self._cancels.pop(self._pending[kind][0], None)
            self._pending[kind] = (number, request)
            self._cancels[number] = threading.Event()
        self._wake.emit()

    def wake(self) -> None:
        """Look for work again; from any thread."""
        self._wake.emit()

    def cancel(self, number: int) -> None:
        """Ask request ``number`` to stop at its next progress (it still answers, saying so); from any thread."""
        with self._lock:
            if number in self._cancels:
                self._cancels[number].set()

    def cancel_event(self, number: int) -> threading.Event:
        """The event ``cancel`` sets for request ``number``, for the engine to watch (from the worker's thread)."""
        with self._lock:
            return self._cancels.get(number) or threading.Event()

    def drop_pending(self, kind: str | None = None) -> None:
        """Forget the requests not started yet (of ``kind``, or all); from any thread."""
        with self._lock:
            for waiting in [k for k in self._pending if kind in (None, k)]:
                number, _ = self._pending.pop(waiting)
                self._cancels.pop(number, None)

    def cancel_all(self) -> None:
        """Forget the waiting requests and ask the running one to stop (the window is closing)."""
        with self._lock:
            self._pending.clear()
            for event in self._cancels.values():
                event.set()

    @Slot()
    def _process(self) -> None:
        while True:
            with self._lock:
                kind = next((k for k in self.ORDER if k in self._pending), None)
                if kind is None:
                    break
                number, request = self._pending.pop(kind)
            try:
                self._handle(number, request)
            finally:
                with self._lock:
                    self._cancels.pop(number, None)
        self._idle()

    def _handle(self, number: int, request: object) -> None:
        raise NotImplementedError

    def _idle(self) -> None:
        """No request waits: whatever the worker does between requests."""

    def shutdown(self) -> None:
        """Release what the worker holds; called once its thread has stopped."""


class PreviewWorker(Worker):
    """Opens clips, renders previews and estimates noise, on the thread it was moved to."""

    KINDS: ClassVar[dict[type, str]] = {
        OpenRequest: "open",
        EstimateRequest: "estimate",
        PreviewRequest: "preview",
        PlayRequest: "play",
    }
    ORDER = ("open", "estimate", "preview", "play")  # a new clip first; an estimate before a preview

    opened = Signal(int, object, object)  # request number, VideoInfo, each frame's time in seconds
    rendered = Signal(int, object)  # request number, engine.video.preview.Preview: several a request, each better
    estimated = Signal(int, int, object, object)  # request number, first frame measured, NoiseEstimate,
    # and the FilterChoice choose_filter made for it (its mode, factors and centre weight)
    playback_started = Signal(int, object)  # request number, engine.video.playback.RenderAhead
    failed = Signal(int, str, str)  # request number, kind ("open", "preview", "estimate", "backend"), message
    busy_changed = Signal(bool)  # the engine started or stopped working
    compiling = Signal()  # the next frame waits for the CPU filter to compile (once per machine)

    def __init__(self) -> None:
        super().__init__()
        self._compiled: bool | None = None  # whether the CPU filter is compiled; None: not asked yet
        self._compiler: threading.Thread | None = None  # the thread compiling it, once started
        self._parked: dict[str, tuple[int, tuple[int, object]]] = {}  # kind: the request waiting for the compile
        self._last_still: tuple[int, object] | None = None  # (frame, noise) of the last still asked for
        self._clip = 0  # the number of the open request whose clip is open
        self._readers: list[VideoReader] = []
        self._previewer: Previewer | None = None
        self._playback: tuple[int, RenderAhead] | None = None  # request number, the run
        self._busy = False

    def submit(  # the clip asked of comes with each request
        self, number: int, request: OpenRequest | PreviewRequest | EstimateRequest | PlayRequest, clip: int
    ) -> None:
        """Queue ``request``, asked of the clip that request ``clip`` opened (replacing any waiting
        one of its kind); returns at once."""
        self._queue(self.KINDS[type(request)], number, (clip, request))

    def _handle(self, number: int, asked: tuple[int, object]) -> None:
        clip, request = asked
        if isinstance(request, OpenRequest) or clip == self._clip:  # else asked of a clip since replaced
            self._set_busy(True)
            self._answer(number, request)

    def _idle(self) -> None:
        if self._compiled is False and self._compiler is None:  # once the waiting requests showed their frames
            self._compiler = threading.Thread(target=self._compile, name="nlmeans-compile", daemon=True)
            self._compiler.start()  # a daemon: a window closed mid-compile exits at once
        if self._playback is not None and self._render_ahead():
            self._wake.emit()  # the next frame after any new request
        else:
            self._set_busy(False)

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busy_changed.emit(busy)

    def _render_ahead(self) -> bool:
        """Render the playback's next frame if it has room; whether there may be more to do."""
        number, playback = self._playback
        if playback.done:
            playback.close()  # its last frames stay for the window to take
            self._playback = None
            return False
        try:
            return playback.render_next()
        except Exception as error:  # the same failures as a preview's, reported the same way
            self._stop_playback()
            self._report(number, "preview", error)
            return False

    def _stop_playback(self) -> None:
        if self._playback is not None:
            self._playback[1].cancel()
            self._playback[1].close()
            self._playback = None

    def _answer(self, number: int, request: object) -> None:
        try:
            if isinstance(request, OpenRequest):
                self._stop_playback()
                opened = self._open(request)
                self._clip, self._last_still = number, None
                self.opened.emit(number, *opened)
            elif isinstance(request, EstimateRequest):
                self._show_frame_first(number, request)
                if self._compiled_or_parked("estimate", number, request):  # SURE runs the filter
                    self.estimated.emit(number, *self._estimate(request))
            elif isinstance(request, PreviewRequest):
                self._preview(number, request)
            elif isinstance(request, PlayRequest):
                self._stop_playback()
                self._say_if_compiling(request.backend)
                self._playback = (number, self._play(request))
                self.playback_started.emit(number, self._playback[1])
        except Exception as error:
            kind = {OpenRequest: "open", EstimateRequest: "estimate"}.get(type(request), "preview")
            self._report(number, kind, error)

    def _show_frame_first(self, number: int, request: EstimateRequest) -> None:
        """A clip's first estimate comes before its first still and takes seconds (SURE runs the
        filter tens of times on its sample): the frame is shown meanwhile, unfiltered, as a still
        shows it first."""
        if self._last_still is None:
            self._last_still = (request.index, request.noise)
            self.rendered.emit(number, unfiltered_preview(self._require_clip(), request.index, request.noise))

    def _say_if_compiling(self, backend: str) -> None:
        """Emit ``compiling`` where the next frame on ``backend`` waits for a compile."""
        if filter_compiles(backend):
            self.compiling.emit()

    def _report(self, number: int, kind: str, error: Exception) -> None:
        """Emit ``failed`` for ``error``, met on request ``number`` of ``kind``."""
        if isinstance(error, (VideoError, OSError, ValueError, IndexError)):  # each says what and where
            self.failed.emit(number, kind, str(error))
        elif isinstance(error, (MemoryError, BackendUnavailableError)):  # GpuOutOfMemoryError too; each says why
            self.failed.emit(number, "backend", str(error))
        else:  # a kernel failure or a driver error must not end the worker
            traceback.print_exception(error)
            self.failed.emit(number, "backend", f"{type(error).__name__}: {error}")

    def _open(self, request: OpenRequest) -> tuple[VideoInfo, np.ndarray]:
        readers = [VideoReader(request.path)]
        try:
            if request.reference is not None:
                readers.append(VideoReader(request.reference))
            if len(readers[0]) == 0:
                raise VideoError(f"{request.path}: the video has no frames")
            backend = self._previewer.denoiser.backend if self._previewer is not None else "auto"
            previewer = Previewer(readers[0], backend, readers[1] if len(readers) > 1 else None)
        except Exception:
            for reader in readers:
                reader.close()
            raise
        self._close_readers()
        self._readers, self._previewer = readers, previewer
        return readers[0].info, readers[0].frame_times

    def _preview(self, number: int, request: PreviewRequest) -> None:
        """Answer a still: the input at once (unless the frame and its noise are those of the last
        still, shown filtered already), then the passes (``render_passes``) until a newer request
        supersedes it; while the CPU filter compiles on a thread of its own, a quick pass
        (``quick_preview``) and the request parked."""
        still = (request.index, request.noise)
        if still != self._last_still:
            self._last_still = still
            self.rendered.emit(number, unfiltered_preview(self._require_clip(), request.index, request.noise))
        if not self._compiled_or_parked("preview", number, request):
            # Meanwhile a quick pass on the cascade, which needs no compile: a first launch shows the
            # strength's effect in seconds, not after the compile.
            quick = quick_preview(
                self._require_clip(), request.index, request.params, request.noise, request.luma_chroma,
                shown=request.shown,
            )  # fmt: skip
            if quick is not None:
                self.rendered.emit(number, quick)
            return
        previewer = self._on_backend(request.backend)
        passes = render_passes(
            previewer,
            request.index,
            request.params,
            request.noise,
            request.luma_chroma,
            shown=request.shown,
            abandoned=lambda: self._superseded(number),
        )
        for preview in passes:
            self.rendered.emit(number, preview)

    def _compiled_or_parked(self, kind: str, number: int, request: PreviewRequest | EstimateRequest) -> bool:
        """Whether ``request`` may run its filter now: on the GPU, or with the CPU filter compiled. If
        not, it waits (the latest of its ``kind``) while the filter compiles on a thread of its own,
        started once no request waits (``_idle``: the stills' frames are shown first, not slowed by
        the compile), so that the worker keeps showing frames meanwhile."""
        if resolve_backend(request.backend) != "cpu":
            return True
        with self._lock:
            if self._compiled is None:
                self._compiled = not filter_compiles("cpu")
                if not self._compiled:
                    self.compiling.emit()
            if not self._compiled:
                self._parked[kind] = (number, (self._clip, request))
            return self._compiled

    def _compile(self) -> None:
        """The compile thread: compile, then queue each waiting request unless a newer one of its kind waits."""
        try:
            compile_cpu_filter()
        finally:
            with self._lock:
                self._compiled = True
                for kind, (number, asked) in self._parked.items():
                    if kind not in self._pending:
                        self._pending[kind] = (number, asked)
                        self._cancels[number] = threading.Event()
                self._parked = {}
            self._wake.emit()

    def _superseded(self, number: int) -> bool:
        """Whether still ``number`` should stop: a newer still, a clip or playback waits, or it was cancelled."""
        with self._lock:
            cancelled = number in self._cancels and self._cancels[number].is_set()
            return cancelled or any(kind in self._pending for kind in ("open", "preview", "play"))

    def _play(self, request: PlayRequest) -> RenderAhead:
        previewer = self._on_backend(request.backend)
        return RenderAhead(
            previewer, request.params, request.noise, request.start, request.stop, luma_chroma=request.luma_chroma
        )

    def _on_backend(self, backend: str) -> Previewer:
        """The clip's Previewer, on ``backend`` (made anew when the backend changed)."""
        previewer = self._require_clip()
        if previewer.denoiser.backend != backend:
            previewer = Previewer(previewer.source, backend, previewer.reference)
            self._previewer = previewer
            previewer.denoiser  # noqa: B018 (creates the backend now, so that its errors surface here)
        return previewer

    def _estimate(self, request: EstimateRequest) -> tuple[int, NoiseEstimate, FilterChoice]:
        """The noise, the first frame of the pair it was measured on, and the filter ``choose_filter``
        chose for it (the mode, the factors on the strengths it suggests and the centre weight).

        In the region, on the current frame and the next (the one before, on the last frame: a
        region's estimate reads the change between two); without one, as ``denoise --noise auto``
        measures it (pairs spread over the clip, the median). SURE scores the clip's middle
        frames, as ``denoise`` does: the window's strengths and centre weight are the command
        line's.
        """
        previewer = self._require_clip()
        count = len(previewer.source)
        first, last = 0, count
        if request.roi is not None:
            first = max(0, min(request.index, count - 2))
            last = min(first + 2, count)

        def frame(index: int) -> np.ndarray:
            return previewer.noisy_frame(index, request.noise)

        unclipped = previewer.unclipped_frames(request.noise)
        first, estimate = estimate_noise_over(
            frame, first, last, request.roi, bit_depth=previewer.bit_depth, unclipped=unclipped
        )
        length = sure_sample_length(request.window)
        middle = max(0, (count - length) // 2)
        sample = decoded_run(frame, middle, min(middle + length, count))  # a file cut short: those before the cut
        choice = choose_filter(
            estimate,
            request.window,
            matrix=request.matrix,
            luma_chroma="auto" if request.luma_chroma else None,
            sample=sample,
            backend=request.backend,
            center_weight=request.center_weight,
            rgb_allowed=self._readers[0].yuv_layout is None,  # a Y'CbCr source stays in Y'CbCr, as denoise keeps it
        )
        return first, estimate, choice

    def _require_clip(self) -> Previewer:
        if self._previewer is None:
            raise ValueError("no clip is open")
        return self._previewer

    def _close_readers(self) -> None:
        for reader in self._readers:
            reader.close()
        self._readers = []

    def shutdown(self) -> None:
        """End playback and close the clips; call once the worker's thread has stopped."""
        self.drop_pending()
        self._stop_playback()
        self._close_readers()
        self._previewer = None


class WorkerThread:
    """``worker`` on a QThread named ``name``, started at once and stopped by ``stop``."""

    def __init__(self, worker: Worker, name: str) -> None:
        self.thread = QThread()
        self.thread.setObjectName(name)
        self.worker = worker
        self.worker.moveToThread(self.thread)
        self.thread.start()

    def stop(self) -> None:
        """Drop waiting requests, ask the running one to stop, let it end, and join the thread."""
        self.worker.cancel_all()
        self.thread.quit()
        self.thread.wait()
        self.worker.shutdown()
