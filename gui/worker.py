"""The background worker: a QObject in its own QThread that drives the engine for the window.

The GUI thread only calls ``submit``, which records the request and returns at once; the
worker's thread takes the latest request of each kind (older ones are dropped unseen) and
answers with a signal carrying the request's number, so that the window can drop stale
answers too. The GUI thread never waits on the engine.
"""

from __future__ import annotations

import threading
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, QThread, Signal, Slot

from engine import BackendUnavailableError, GpuOutOfMemoryError, NLMParams, estimate_noise
from engine.preview import Previewer, SyntheticNoise
from engine.video import VideoError, VideoInfo, VideoReader

ORDER = ("open", "estimate", "preview")  # a new clip first; an estimate before a preview


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


@dataclass(frozen=True)
class EstimateRequest:
    index: int
    roi: tuple[int, int, int, int] | None
    noise: SyntheticNoise | None


class PreviewWorker(QObject):
    """Opens clips, renders previews and estimates noise, on the thread it was moved to."""

    opened = Signal(int, object)  # request number, VideoInfo
    rendered = Signal(int, object)  # request number, engine.preview.Preview
    estimated = Signal(int, object)  # request number, NoiseEstimate
    failed = Signal(int, str, str)  # request number, kind ("open", "preview", "estimate", "backend"), message
    _wake = Signal()

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[int, object]] = {}
        self._readers: list[VideoReader] = []
        self._previewer: Previewer | None = None
        self.busy = threading.Event()  # set while the engine works (tests and the FPS readout)
        self._wake.connect(self._process)

    def submit(self, number: int, request: OpenRequest | PreviewRequest | EstimateRequest) -> None:
        """Queue ``request`` (replacing any waiting one of its kind); returns at once."""
        kind = {OpenRequest: "open", PreviewRequest: "preview", EstimateRequest: "estimate"}[type(request)]
        with self._lock:
            self._pending[kind] = (number, request)
        self._wake.emit()

    @Slot()
    def _process(self) -> None:
        while True:
            with self._lock:
                kind = next((k for k in ORDER if k in self._pending), None)
                if kind is None:
                    return
                number, request = self._pending.pop(kind)
            self.busy.set()
            try:
                self._handle(number, request)
            finally:
                self.busy.clear()

    def _handle(self, number: int, request: object) -> None:
        try:
            if isinstance(request, OpenRequest):
                self.opened.emit(number, self._open(request))
            elif isinstance(request, EstimateRequest):
                self.estimated.emit(number, self._estimate(request))
            elif isinstance(request, PreviewRequest):
                self.rendered.emit(number, self._render(request))
        except (VideoError, OSError) as error:
            self.failed.emit(number, "open" if isinstance(request, OpenRequest) else "preview", str(error))
        except (ValueError, IndexError) as error:
            kind = "estimate" if isinstance(request, EstimateRequest) else "preview"
            self.failed.emit(number, kind, str(error))
        except (GpuOutOfMemoryError, BackendUnavailableError) as error:
            self.failed.emit(number, "backend", str(error))
        except Exception as error:  # a kernel failure or a driver error must not end the worker
            traceback.print_exc()
            self.failed.emit(number, "backend", f"{type(error).__name__}: {error}")

    def _open(self, request: OpenRequest) -> VideoInfo:
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
        return readers[0].info

    def _render(self, request: PreviewRequest):  # -> Preview
        previewer = self._require_clip()
        if previewer.denoiser.backend != request.backend:
            previewer = Previewer(previewer.source, request.backend, previewer.reference)
            self._previewer = previewer
            previewer.denoiser  # noqa: B018 (creates the backend now, so that its errors surface here)
        return previewer.render(request.index, request.params, request.noise)

    def _estimate(self, request: EstimateRequest):  # -> NoiseEstimate
        previewer = self._require_clip()
        last = len(previewer.source) - 1
        indices = [request.index, request.index + 1] if request.index < last else [request.index]
        frames = np.stack([previewer.noisy_frame(i, request.noise) for i in indices])
        return estimate_noise(frames, roi=request.roi)

    def _require_clip(self) -> Previewer:
        if self._previewer is None:
            raise ValueError("no clip is open")
        return self._previewer

    def _close_readers(self) -> None:
        for reader in self._readers:
            reader.close()
        self._readers = []

    def drop_pending(self) -> None:
        """Forget the requests not started yet."""
        with self._lock:
            self._pending.clear()

    def shutdown(self) -> None:
        """Close the clips; call once the worker's thread has stopped."""
        self.drop_pending()
        self._close_readers()
        self._previewer = None


class WorkerThread:
    """A PreviewWorker with its QThread, started at once and stopped by ``stop``."""

    def __init__(self) -> None:
        self.thread = QThread()
        self.thread.setObjectName("nlmeans-preview")
        self.worker = PreviewWorker()
        self.worker.moveToThread(self.thread)
        self.thread.start()

    def stop(self) -> None:
        """Drop waiting requests, let the current one finish, and join the thread."""
        self.worker.drop_pending()
        self.thread.quit()
        self.thread.wait()
        self.worker.shutdown()
