"""File > Open stream…: a live source shown denoised as it arrives, with its latency and dropped frames.

The engine's ``denoise_live`` runs on a worker (``worker.Worker``) and writes nothing: each denoised
frame comes to the window, which shows the latest; the readout (frames, dropped, latency) refreshes
about once a second. Closing the window stops the stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QLabel, QMainWindow, QVBoxLayout, QWidget

from nlmeans_studio.engine import BackendUnavailableError, LiveReader, LiveStatus, NLMParams, VideoError, denoise_live

from .worker import Worker, WorkerThread

ENGINE_ERRORS = (ValueError, OSError, MemoryError, VideoError, BackendUnavailableError)
READOUT_MS = 1000  # the readout's refresh, as the main window's frames-per-second one


@dataclass(frozen=True)
class StreamRequest:
    """Denoise the live source ``url`` (a stream's URL or a device) with ``params`` on ``backend``."""

    url: str
    params: NLMParams
    backend: str


class StreamWorker(Worker):
    """Runs a ``StreamRequest`` until its stream ends or it is cancelled, on the thread it was moved to."""

    KINDS: ClassVar[dict[type, str]] = {StreamRequest: "stream"}
    ORDER: ClassVar[tuple[str, ...]] = ("stream",)

    frame_ready = Signal(object)  # a denoised frame, (H, W, C) of the source's dtype
    progressed = Signal(object)  # engine.LiveStatus, after each frame
    finished = Signal(object)  # engine.LiveStatus of the whole run
    errored = Signal(str)  # why the stream could not be opened or read

    def _handle(self, number: int, request: object) -> None:
        assert isinstance(request, StreamRequest)
        try:
            with LiveReader(request.url) as reader:
                status = denoise_live(
                    reader,
                    None,
                    request.params,
                    backend=request.backend,
                    progress=self.progressed.emit,
                    shown=self.frame_ready.emit,
                    cancel=self.cancel_event(number),
                )
        except ENGINE_ERRORS as error:
            self.errored.emit(str(error))
            return
        self.finished.emit(status)


def _readout(status: LiveStatus, *, ended: bool) -> str:
    """The readout's words for ``status``: the recent latency while running, the run's at its end."""
    latency = "median" if ended else "now"
    state = "ended: " if ended else ""
    return (
        f"{state}{status.frames} frames, {status.dropped} dropped, {status.fps:.1f} fps; latency "
        f"{latency} {status.latency_ms:.0f} ms, p95 {status.latency_p95_ms:.0f} ms"
    )


class StreamWindow(QMainWindow):
    """A live source, denoised with ``params`` on ``backend``, as it arrives; closing it stops the stream."""

    def __init__(self, url: str, params: NLMParams, backend: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowFlag(Qt.WindowType.Window)
        self.setWindowTitle(f"{url} (live, denoised)")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        self.image = pg.ImageItem()
        view = pg.GraphicsLayoutWidget()
        view.addViewBox(lockAspect=True, invertY=True).addItem(self.image)
        self.readout = QLabel(f"waiting for {url}…")
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.addWidget(view, 1)
        layout.addWidget(self.readout)
        self.setCentralWidget(central)
        self.resize(720, 600)
        self.status: LiveStatus | None = None  # the latest progress
        self.ended = False
        self.clock = QTimer(self, interval=READOUT_MS)
        self.clock.timeout.connect(self._refresh)
        self.worker_thread = WorkerThread(StreamWorker(), "nlmeans-stream")
        worker = self.worker_thread.worker
        worker.frame_ready.connect(self._show)
        worker.progressed.connect(self._progressed)
        worker.finished.connect(self._finished)
        worker.errored.connect(self._errored)
        self.clock.start()
        worker.submit(1, StreamRequest(url, params, backend))

    def _show(self, frame: np.ndarray) -> None:
        self.image.setImage(frame, autoLevels=False, levels=(0, np.iinfo(frame.dtype).max))

    def _progressed(self, status: LiveStatus) -> None:
        self.status = status

    def _refresh(self) -> None:
        if self.status is not None and not self.ended:
            self.readout.setText(_readout(self.status, ended=False))

    def _finished(self, status: LiveStatus) -> None:
        self.status, self.ended = status, True
        self.clock.stop()
        self.readout.setText(_readout(status, ended=True))

    def _errored(self, message: str) -> None:
        self.ended = True
        self.clock.stop()
        self.readout.setText(message)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt's naming)
        """Stop the stream and join the worker's thread (the capture's within the source's timeout)."""
        self.clock.stop()
        self.worker_thread.stop()
        super().closeEvent(event)
