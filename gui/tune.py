"""Filter > Tune for N fps: the engine's ``tune_for_fps`` on a worker of its own, with a progress dialog.

The window asks for the rate (the clip's by default) and what must reach it (the export, or playback:
decoded and filtered, nothing encoded) and hands the clip and its filter's patch radius,
weighting and centre weight to ``FpsTuner.start``; the tune times and scores windows off the GUI thread
(``worker.Worker``'s thread model), shows its progress in a dialog whose Cancel stops it, and ``tuned``
carries the result for the window to apply to its sliders.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QProgressDialog,
    QWidget,
)

from nlmeans_studio.engine import (
    BackendUnavailableError,
    ExportCancelledError,
    NLMParams,
    TuneResult,
    VideoError,
    tune_for_fps,
)

from .worker import Worker, WorkerThread

FPS_RANGE = (0.1, 10000.0)  # frames a second the dialog takes
# What must reach the rate, as the dialog names it: an export (its encoder included) or playback
# (decoded and filtered, as the window plays the clip and a live feed is shown; on a GPU at 1080p
# the encoder held every window's export at 26-38 fps, 2026-11-27).
TIMINGS = {"The export (decoded, filtered, encoded)": False, "Playback (decoded and filtered)": True}


@dataclass(frozen=True)
class TuneRequest:
    """Tune ``path`` for ``fps`` on ``backend``, keeping ``window``'s patch radius, weighting and centre weight."""

    path: Path
    fps: float
    window: NLMParams
    backend: str
    playback: bool = False  # timed as playback (nothing encoded), else as the export


class TuneWorker(Worker):
    """Runs one tune at a time on the thread it was moved to; ``cancel(number)`` stops it."""

    KINDS: ClassVar[dict[type, str]] = {TuneRequest: "tune"}
    ORDER: ClassVar[tuple[str, ...]] = ("tune",)

    progressed = Signal(int, int, int)  # request number, windows tried, windows in all
    tuned = Signal(int, object)  # request number, TuneResult
    failed = Signal(int, str)  # request number, what went wrong in plain words ("cancelled" included)

    def _handle(self, number: int, request: TuneRequest) -> None:
        try:
            result = tune_for_fps(
                request.path,
                request.fps,
                backend=request.backend,
                window=request.window,
                codec=None if request.playback else "h264",
                progress=lambda done, total: self.progressed.emit(number, done, total),
                cancel=self.cancel_event(number),
            )
        except ExportCancelledError:
            self.failed.emit(number, "Tuning cancelled; the filter is as it was.")
        except (VideoError, OSError, ValueError, MemoryError, BackendUnavailableError) as error:
            self.failed.emit(number, f"Tuning failed: {error}")  # TargetNotReachedError too: it names the way out
        except Exception as error:  # a bug must still end the tune, or the dialog would wait forever
            traceback.print_exc()
            self.failed.emit(number, f"Tuning failed: {type(error).__name__}: {error}")
        else:
            self.tuned.emit(number, result)


class RateDialog(QDialog):
    """The rate to tune for, in frames a second, and what must reach it (``TIMINGS``)."""

    def __init__(self, parent: QWidget, clip_rate: float) -> None:
        super().__init__(parent)
        self.setWindowTitle("Tune for a frame rate")
        self.rate = QDoubleSpinBox(self)
        self.rate.setRange(*FPS_RANGE)
        self.rate.setDecimals(3)
        self.rate.setValue(clip_rate)
        self.rate.setSuffix(" fps")
        self.rate.setToolTip("Frames a second on this machine; the clip's own rate plays in real time")
        self.timing = QComboBox(self)
        self.timing.addItems(list(TIMINGS))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("Rate:", self.rate)
        form.addRow("Must reach it:", self.timing)
        form.addRow(buttons)


class FpsTuner(QObject):
    """Asks for a rate, runs the tune in the background with a progress dialog, and emits its result.

    ``tuned`` carries the TuneResult, ``failed`` why there is none (cancelling included).
    ``stop`` ends the worker (the window is closing).
    """

    tuned = Signal(object)
    failed = Signal(str)

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._parent = parent
        self._number = 0
        self.progress: QProgressDialog | None = None  # shown while a tune runs
        self.worker_thread = WorkerThread(TuneWorker(), "nlmeans-tune")
        worker = self.worker_thread.worker
        worker.progressed.connect(self._progressed)
        worker.tuned.connect(self._tuned)
        worker.failed.connect(self._failed)

    @property
    def running(self) -> bool:
        """Whether a tune runs."""
        return self.progress is not None

    def ask_fps(self, clip_rate: float) -> tuple[float, bool] | None:
        """The rate a person asks for (the clip's by default) and whether playback must reach it; None: cancelled."""
        dialog = RateDialog(self._parent, clip_rate)
        return (dialog.rate.value(), TIMINGS[dialog.timing.currentText()]) if dialog.exec() else None

    def start(self, request: TuneRequest) -> None:
        """Run ``request`` in the background, its progress in a dialog whose Cancel stops it."""
        self._number += 1
        number = self._number
        self.progress = QProgressDialog(
            f"Timing and scoring windows for {request.fps:g} fps on this machine…", "Cancel", 0, 0, self._parent
        )
        self.progress.setWindowTitle("Tune for a frame rate")
        self.progress.setWindowModality(Qt.WindowModality.NonModal)
        self.progress.setMinimumDuration(0)
        self.progress.canceled.connect(lambda: self.worker_thread.worker.cancel(number))
        self.progress.show()
        self.worker_thread.worker.submit(number, request)

    def stop(self) -> None:
        """Stop a running tune and join the worker's thread (the window is closing)."""
        self.worker_thread.stop()
        self._close_progress()

    def _progressed(self, number: int, done: int, total: int) -> None:
        if number == self._number and self.progress is not None:
            self.progress.setRange(0, total)
            self.progress.setValue(done)

    def _tuned(self, number: int, result: TuneResult) -> None:
        if number == self._number:
            self._close_progress()
            self.tuned.emit(result)

    def _failed(self, number: int, message: str) -> None:
        if number == self._number:
            self._close_progress()
            self.failed.emit(message)

    def _close_progress(self) -> None:
        if self.progress is not None:
            self.progress.canceled.disconnect()
            self.progress.close()
            self.progress.deleteLater()
            self.progress = None
