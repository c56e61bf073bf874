"""Export: a dialog for the output's settings and a background job running ``denoise_file``."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QThread, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine import BackendUnavailableError, GpuOutOfMemoryError, NLMParams
from engine.export import ExportCancelledError, denoise_file
from engine.video import CODECS, VideoError, VideoInfo

SUFFIXES = {"h264": ".mp4", "h265": ".mp4", "ffv1": ".mkv", "prores": ".mov"}


@dataclass(frozen=True)
class ExportSettings:
    """What the export dialog asks for: seconds for the range, CRF for H.264 / H.265."""

    target: Path
    codec: str
    crf: int
    start: float
    duration: float | None


class ExportDialog(QDialog):
    """Output path, codec, quality and frame range; audio and subtitles are always copied."""

    def __init__(self, parent: QWidget | None, source: Path, info: VideoInfo) -> None:
        super().__init__(parent)
        self.setWindowTitle("Export denoised clip")
        self._info = info
        self.path = QLineEdit(str(source.with_name(f"{source.stem}-denoised.mp4")))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        self.codec = QComboBox()
        for name in CODECS:
            self.codec.addItem(name, name)
        self.codec.currentIndexChanged.connect(self._codec_changed)
        self.crf = QSpinBox()
        self.crf.setRange(0, 51)
        self.crf.setValue(18)
        self.crf.setToolTip("Constant rate factor: lower is better quality and a bigger file (H.264 / H.265)")
        seconds = info.duration or info.frame_count / float(info.frame_rate)
        self.start = QDoubleSpinBox()
        self.start.setRange(0, seconds)
        self.start.setSuffix(" s")
        self.duration = QDoubleSpinBox()
        self.duration.setRange(0, seconds)
        self.duration.setValue(seconds)
        self.duration.setSuffix(" s")
        path_row = QHBoxLayout()
        path_row.addWidget(self.path, 1)
        path_row.addWidget(browse)
        form = QFormLayout()
        form.addRow("Output", path_row)
        form.addRow("Codec", self.codec)
        form.addRow("Quality (CRF)", self.crf)
        form.addRow("Start", self.start)
        form.addRow("Duration", self.duration)
        streams = f"{info.other_streams} audio / subtitle stream(s) copied unchanged" if info.other_streams else ""
        form.addRow("", QLabel(streams or "no audio or subtitle streams to copy"))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Export")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)

    def _browse(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export to", self.path.text())
        if path:
            self.path.setText(path)

    def _codec_changed(self) -> None:
        codec = self.codec.currentData()
        self.crf.setEnabled(codec in ("h264", "h265"))
        current = Path(self.path.text())
        self.path.setText(str(current.with_suffix(SUFFIXES.get(codec, current.suffix))))

    def settings(self) -> ExportSettings:
        full = self.duration.maximum()
        duration = self.duration.value()
        return ExportSettings(
            target=Path(self.path.text()).expanduser(),
            codec=self.codec.currentData(),
            crf=self.crf.value(),
            start=self.start.value(),
            duration=None if self.start.value() + duration >= full else duration,
        )


class ExportJob(QObject):
    """Runs one export on its own QThread; ``cancel`` stops it, leaving no output."""

    progressed = Signal(int, int, float)  # frames done, frames in all, seconds elapsed
    finished = Signal(str)  # a summary line
    failed = Signal(str)  # what went wrong, in plain words ("cancelled" included)

    def __init__(self, source: Path, settings: ExportSettings, params: NLMParams, backend: str) -> None:
        super().__init__()
        self.source, self.settings, self.params, self.backend = source, settings, params, backend
        self._cancel = threading.Event()
        self.thread = QThread()
        self.thread.setObjectName("nlmeans-export")
        self.moveToThread(self.thread)
        self.thread.started.connect(self._run)

    def start(self) -> None:
        self.thread.start()

    def cancel(self) -> None:
        self._cancel.set()

    def wait(self) -> None:
        """Join the export's thread (after ``finished`` or ``failed``)."""
        self.thread.quit()
        self.thread.wait()

    @Slot()
    def _run(self) -> None:
        settings = self.settings
        try:
            summary = denoise_file(
                self.source,
                settings.target,
                self.params,
                backend=self.backend,
                codec=settings.codec,
                crf=settings.crf,
                overwrite=True,
                start=settings.start,
                duration=settings.duration,
                progress=lambda done, total, seconds: self.progressed.emit(done, total, seconds),
                cancel=self._cancel,
            )
        except ExportCancelledError:
            self.failed.emit("Export cancelled; no file was written.")
        except (VideoError, OSError, ValueError, MemoryError, GpuOutOfMemoryError, BackendUnavailableError) as error:
            self.failed.emit(f"Export failed: {error}")
        else:
            self.finished.emit(
                f"Exported {summary.frames} frames to {settings.target.name} in {summary.seconds:.1f} s "
                f"({summary.fps:.1f} fps, {summary.backend})"
            )
        finally:
            self.thread.quit()


class ExportProgress(QWidget):
    """The progress bar, fps, ETA and Cancel shown in the window while an export runs."""

    def __init__(self) -> None:
        super().__init__()
        self.bar = QProgressBar()
        self.label = QLabel()
        self.cancel = QPushButton("Cancel export")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Exporting"))
        layout.addWidget(self.bar, 1)
        layout.addWidget(self.label)
        layout.addWidget(self.cancel)

    def show_progress(self, done: int, total: int, seconds: float) -> None:
        self.bar.setRange(0, total)
        self.bar.setValue(done)
        fps = done / seconds if seconds > 0 else 0.0
        eta = f"{(total - done) / fps:.0f} s" if fps > 0 else "…"
        self.label.setText(f"{done}/{total} frames, {fps:.1f} fps, ETA {eta}")
