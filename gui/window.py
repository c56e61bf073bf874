"""The main window: views, controls, readouts, playback, noise, export, presets, settings."""

from __future__ import annotations

import dataclasses
import json
import platform
import time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSlider,
    QSplitter,
    QStyle,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

import engine
from engine import NLMParams, NoiseEstimate, apply_estimate
from engine.preview import Preview
from engine.video import VideoInfo

from .controls import ParameterPanel
from .export import ExportDialog, ExportJob, ExportProgress, ExportSettings
from .panels import NoisePanel, Readouts
from .presets import PresetError, load_preset, save_preset, shipped_presets
from .views import ComparisonView
from .worker import EstimateRequest, OpenRequest, PreviewRequest, WorkerThread

DEBOUNCE_MS = 40  # a slider's movements within this time make one request
RECENT_FILES = 8
DEFAULT_PARAMS = NLMParams(h=20)
DEFAULT_ROI = 64  # pixels on a side of the rectangle "Draw region" shows


class MainWindow(QMainWindow):
    """NLMeans Studio's window. ``settings`` defaults to the user's QSettings."""

    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or QSettings()
        self.setWindowTitle("NLMeans Studio")
        self.setAcceptDrops(True)
        self.path: Path | None = None
        self._opening: Path | None = None
        self._banner_callback = None
        self.info: VideoInfo | None = None
        self.estimate: NoiseEstimate | None = None
        self.transform: np.ndarray | None = None
        self.preview: Preview | None = None
        self.export_job: ExportJob | None = None
        self._requests = 0
        self._shown = 0
        self._pending_preview = 0
        self._rendered_times: list[float] = []
        self.worker_thread = WorkerThread()
        worker = self.worker_thread.worker
        worker.opened.connect(self._opened)
        worker.rendered.connect(self._rendered)
        worker.estimated.connect(self._estimated)
        worker.failed.connect(self._failed)

        self.view = ComparisonView()
        self.parameters = ParameterPanel()
        self.noise = NoisePanel()
        self.readouts = Readouts()
        self.frame_slider = QSlider(Qt.Orientation.Horizontal)
        self.frame_slider.setEnabled(False)
        self.frame_label = QLabel("no clip")
        self.banner = QLabel()
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet("background: #5a1d1d; color: white; padding: 6px")
        self.banner_action = QPushButton()
        self.banner_close = QPushButton("Dismiss")
        self.export_progress = ExportProgress()
        self.export_progress.hide()
        self._build_layout()
        self._build_actions()

        self.debounce = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self.debounce.timeout.connect(self.request_preview)
        self.play_timer = QTimer(self)
        self.play_timer.timeout.connect(self._next_frame)
        self.speed_timer = QTimer(self, interval=1000)
        self.speed_timer.timeout.connect(self._show_speed)
        self.speed_timer.start()
        self.parameters.changed.connect(self.debounce.start)
        self.parameters.reset.clicked.connect(self.reset_to_suggested)
        self.noise.synthetic_changed.connect(self.debounce.start)
        self.noise.estimate_requested.connect(lambda: self.request_estimate(None))
        self.noise.draw_region_requested.connect(self._draw_region)
        self.noise.region_requested.connect(lambda: self.request_estimate(self.view.roi_box()))
        self.noise.reference_requested.connect(self._choose_reference)
        self.frame_slider.valueChanged.connect(self._frame_changed)
        self.banner_close.clicked.connect(self._hide_banner)
        self.banner_action.clicked.connect(lambda: self._banner_callback and self._banner_callback())
        self._hide_banner()
        self._restore_settings()

    # Layout and actions

    def _build_layout(self) -> None:
        side = QWidget()
        side_layout = QVBoxLayout(side)
        for widget in (self.parameters, self.noise, self.readouts):
            side_layout.addWidget(widget)
        side_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidget(side)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(440)
        banner_row = QHBoxLayout()
        banner_row.addWidget(self.banner, 1)
        banner_row.addWidget(self.banner_action)
        banner_row.addWidget(self.banner_close)
        frame_row = QHBoxLayout()
        frame_row.addWidget(self.frame_slider, 1)
        frame_row.addWidget(self.frame_label)
        centre = QWidget()
        centre_layout = QVBoxLayout(centre)
        centre_layout.addLayout(banner_row)
        centre_layout.addWidget(self.view, 1)
        centre_layout.addLayout(frame_row)
        centre_layout.addWidget(self.export_progress)
        self.splitter = QSplitter()
        self.splitter.addWidget(centre)
        self.splitter.addWidget(scroll)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setSizes([1000, 440])
        self.setCentralWidget(self.splitter)
        self.export_progress.cancel.clicked.connect(self.cancel_export)
        self.resize(1400, 820)

    def _action(self, text: str, shortcut: str | None, slot, icon: QStyle.StandardPixmap | None = None) -> QAction:
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        if icon is not None:
            action.setIcon(self.style().standardIcon(icon))
        action.triggered.connect(slot)
        self.addAction(action)
        return action

    def _build_actions(self) -> None:
        pixmap = QStyle.StandardPixmap
        self.open_action = self._action("Open…", "Ctrl+O", self._choose_file, pixmap.SP_DialogOpenButton)
        self.export_action = self._action("Export…", "Ctrl+E", self.start_export, pixmap.SP_DialogSaveButton)
        self.play_action = self._action("Play", "Space", self.toggle_play, pixmap.SP_MediaPlay)
        self.back_action = self._action("Previous frame", "Left", lambda: self.step(-1), pixmap.SP_MediaSeekBackward)
        self.forward_action = self._action("Next frame", "Right", lambda: self.step(1), pixmap.SP_MediaSeekForward)
        self.split_action = self._action("Split view", "V", self.toggle_view)
        self.split_action.setCheckable(True)
        self.split_action.setChecked(True)
        self.fit_action = self._action("Fit", "F", self.view.fit)
        self.actual_action = self._action("1:1", "1", self.view.actual_pixels)
        about = self._action("About NLMeans Studio", None, self.show_about)
        toolbar = QToolBar("Main")
        toolbar.setObjectName("main-toolbar")
        for action in (self.open_action, self.export_action, None, self.back_action, self.play_action):
            toolbar.addAction(action) if action else toolbar.addSeparator()
        for action in (self.forward_action, None, self.split_action, self.fit_action, self.actual_action):
            toolbar.addAction(action) if action else toolbar.addSeparator()
        self.addToolBar(toolbar)
        menus = self.menuBar()
        file_menu = menus.addMenu("&File")
        file_menu.addAction(self.open_action)
        self.recent_menu = file_menu.addMenu("Open recent")
        file_menu.addAction(self.export_action)
        file_menu.addSeparator()
        file_menu.addAction(self._action("Quit", "Ctrl+Q", self.close))
        view_menu = menus.addMenu("&View")
        for action in (self.split_action, self.fit_action, self.actual_action, self.play_action):
            view_menu.addAction(action)
        presets = menus.addMenu("&Presets")
        for name, path in shipped_presets().items():
            presets.addAction(name.upper() if name == "vhs" else name.capitalize(), lambda p=path: self.load_preset(p))
        presets.addSeparator()
        presets.addAction("Load preset…", lambda: self._choose_preset(save=False))
        presets.addAction("Save preset…", lambda: self._choose_preset(save=True))
        menus.addMenu("&Help").addAction(about)

    # Opening clips

    def open_clip(self, path: str | Path, reference: str | Path | None = None) -> None:
        """Open a video (the worker decodes it); errors show in the window."""
        self.play_timer.stop()
        self._submit(OpenRequest(Path(path), Path(reference) if reference else None))
        self._opening = Path(path)

    def _choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a video", str(self.path.parent if self.path else Path.home()))
        if path:
            self.open_clip(path)

    def _choose_reference(self) -> None:
        if self.path is None:
            return self.show_error("Open a clip first.")
        path, _ = QFileDialog.getOpenFileName(self, "Open the clean reference clip", str(self.path.parent))
        if path:
            self.open_clip(self.path, path)

    def _opened(self, number: int, info: VideoInfo) -> None:
        self.path, self.info = self._opening, info
        self.estimate, self.transform = None, None
        self.parameters.decorrelate.setChecked(False)
        self.parameters.decorrelate.setEnabled(False)
        self.view.show_regions([])
        self.setWindowTitle(f"NLMeans Studio — {self.path.name}")
        self.frame_slider.blockSignals(True)
        self.frame_slider.setRange(0, info.frame_count - 1)
        self.frame_slider.setValue(min(self.frame_slider.value(), info.frame_count - 1))
        self.frame_slider.blockSignals(False)
        self.frame_slider.setEnabled(True)
        self.play_timer.setInterval(max(1, round(1000 / float(info.frame_rate))))
        self._remember_recent(self.path)
        self._hide_banner()
        self._show_frame_label()
        self.request_preview()

    def _remember_recent(self, path: Path) -> None:
        recent = [str(path)] + [p for p in self.recent_files() if p != str(path)]
        self.settings.setValue("recent", recent[:RECENT_FILES])
        self.recent_menu.clear()
        for entry in recent[:RECENT_FILES]:
            self.recent_menu.addAction(entry, lambda p=entry: self.open_clip(p))

    def recent_files(self) -> list[str]:
        value = self.settings.value("recent", [])
        return [value] if isinstance(value, str) else list(value or [])

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 (Qt's naming)
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 (Qt's naming)
        urls = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if urls:
            self.open_clip(urls[0])

    # Requests to the worker and their answers

    def _submit(self, request: object) -> int:
        self._requests += 1
        self.worker_thread.worker.submit(self._requests, request)
        return self._requests

    def current_params(self) -> NLMParams:
        return self.parameters.params(self.transform)

    def request_preview(self) -> None:
        """Ask for the current frame with the current parameters (the latest request wins)."""
        self.debounce.stop()
        if self.info is None:
            return
        try:
            params, noise = self.current_params(), self.noise.noise()
        except ValueError as error:
            return self.show_error(str(error))
        request = PreviewRequest(self.frame_slider.value(), params, noise, self.parameters.backend_name())
        self._pending_preview = self._submit(request)

    def request_estimate(self, roi: tuple[int, int, int, int] | None) -> None:
        """Estimate the noise of the current frame (and the next): automatically, or in ``roi``."""
        if self.info is None:
            return self.show_error("Open a clip first.")
        self._submit(EstimateRequest(self.frame_slider.value(), roi, self.noise.noise()))

    def _rendered(self, number: int, preview: Preview) -> None:
        if number <= self._shown:
            return  # older than what is on screen
        self._shown, self.preview = number, preview
        self.view.set_images(preview.before, preview.after)
        self.readouts.show_psnr(preview)
        self._rendered_times.append(time.perf_counter())

    def _estimated(self, number: int, estimate: NoiseEstimate) -> None:
        self.estimate = estimate
        suggested = apply_estimate(self.current_params(), estimate)
        try:
            self.transform = estimate.color_transform() if len(estimate.covariance) > 1 else None
        except ValueError:
            self.transform = None
        self.parameters.decorrelate.setEnabled(self.transform is not None)
        self.parameters.decorrelate.blockSignals(True)
        self.parameters.decorrelate.setChecked(suggested.color_transform is not None)
        self.parameters.decorrelate.blockSignals(False)
        self.parameters.h.setValue(suggested.h)
        self.view.show_regions(estimate.regions if estimate.method != "region" else [])
        self.noise.show_estimate(estimate, suggested.color_transform, suggested.h)
        self.readouts.show_sigma(estimate)
        self.request_preview()

    def _failed(self, number: int, kind: str, message: str) -> None:
        if kind == "backend" and self.parameters.backend_name() == "gpu":
            self.show_error(f"The GPU could not denoise this frame: {message}", "Use the CPU", self.use_cpu)
        elif kind == "open":
            self.show_error(f"Could not open the video: {message}")
        else:
            self.show_error(message)

    def use_cpu(self) -> None:
        self.parameters.backend.setCurrentIndex(self.parameters.backend.findData("cpu"))
        self._hide_banner()

    def show_error(self, message: str, action_text: str | None = None, action=None) -> None:
        """A message above the views (never a dialog that blocks), with an optional action button."""
        self.banner.setText(message)
        self.banner.show()
        self.banner_close.show()
        self._banner_callback = action
        self.banner_action.setVisible(action is not None)
        if action is not None:
            self.banner_action.setText(action_text)

    def _hide_banner(self) -> None:
        for widget in (self.banner, self.banner_action, self.banner_close):
            widget.hide()

    # Frames and playback

    def _frame_changed(self) -> None:
        self._show_frame_label()
        self.request_preview()

    def _show_frame_label(self) -> None:
        if self.info is None:
            return
        index = self.frame_slider.value()
        seconds = index / float(self.info.frame_rate)
        self.frame_label.setText(f"frame {index + 1} / {self.info.frame_count} · {seconds:.2f} s")

    def step(self, frames: int) -> None:
        self.frame_slider.setValue(self.frame_slider.value() + frames)

    def toggle_play(self) -> None:
        if self.play_timer.isActive() or self.info is None:
            self.play_timer.stop()
        else:
            self.play_timer.start()
        playing = self.play_timer.isActive()
        self.play_action.setText("Pause" if playing else "Play")
        pixmap = QStyle.StandardPixmap.SP_MediaPause if playing else QStyle.StandardPixmap.SP_MediaPlay
        self.play_action.setIcon(self.style().standardIcon(pixmap))

    def _next_frame(self) -> None:
        if self.frame_slider.value() >= self.frame_slider.maximum():
            return self.toggle_play()
        self.step(1)

    def toggle_view(self) -> None:
        self.view.set_split(self.split_action.isChecked())

    def _show_speed(self) -> None:
        now = time.perf_counter()
        self._rendered_times = [t for t in self._rendered_times if now - t <= 1.0]
        engine_ms = self.preview.engine_ms if self.preview is not None else None
        device = f"{self.preview.backend.upper()}: {self.preview.device_name}" if self.preview else ""
        self.readouts.show_speed(len(self._rendered_times), engine_ms, device)

    # Noise and parameters

    def _draw_region(self) -> None:
        if self.info is None:
            return self.show_error("Open a clip first.")
        size = min(DEFAULT_ROI, self.info.width, self.info.height)
        self.view.show_roi(((self.info.width - size) // 2, (self.info.height - size) // 2, size, size))
        self.noise.use_region.setEnabled(True)

    def reset_to_suggested(self) -> None:
        """Default radii and frames; h and decorrelation from the noise estimate when there is one."""
        params = DEFAULT_PARAMS
        if self.estimate is not None:
            params = apply_estimate(params, self.estimate)
            self.parameters.decorrelate.setChecked(params.color_transform is not None)
        self.parameters.set_params(params)

    def load_preset(self, path: str | Path) -> None:
        try:
            params = load_preset(Path(path))
        except PresetError as error:
            return self.show_error(str(error))
        self.parameters.set_params(params)

    def _choose_preset(self, save: bool) -> None:
        folder = str(Path(self.settings.value("preset-folder", str(Path.home()))))
        if save:
            path, _ = QFileDialog.getSaveFileName(self, "Save preset", folder, "Presets (*.json)")
        else:
            path, _ = QFileDialog.getOpenFileName(self, "Load preset", folder, "Presets (*.json)")
        if not path:
            return
        self.settings.setValue("preset-folder", str(Path(path).parent))
        if not save:
            return self.load_preset(path)
        try:
            save_preset(Path(path), self.current_params())
        except OSError as error:
            self.show_error(f"Could not save the preset: {error}")

    # Export

    def start_export(self, settings: ExportSettings | None = None) -> None:
        """Ask for the export's settings (unless given) and run it in the background."""
        if self.path is None or self.info is None:
            return self.show_error("Open a clip first.")
        if self.export_job is not None:
            return self.show_error("An export is already running.")
        if settings is None:
            dialog = ExportDialog(self, self.path, self.info)
            if not dialog.exec():
                return
            settings = dialog.settings()
            if settings.target.exists() and not self.confirm_overwrite(settings.target):
                return
        job = ExportJob(self.path, settings, self.current_params(), self.parameters.backend_name())
        job.progressed.connect(self.export_progress.show_progress)
        job.finished.connect(self._export_done)
        job.failed.connect(self._export_failed)
        self.export_job = job
        self.export_progress.bar.setValue(0)
        self.export_progress.label.setText("starting…")
        self.export_progress.show()
        job.start()

    def confirm_overwrite(self, path: Path) -> bool:
        answer = QMessageBox.question(self, "Replace file?", f"{path} exists. Replace it?")
        return answer == QMessageBox.StandardButton.Yes

    def cancel_export(self) -> None:
        if self.export_job is not None:
            self.export_job.cancel()

    def _finish_export(self) -> None:
        if self.export_job is not None:
            self.export_job.wait()
            self.export_job = None
        self.export_progress.hide()

    def _export_done(self, summary: str) -> None:
        self._finish_export()
        self.statusBar().showMessage(summary, 15000)

    def _export_failed(self, message: str) -> None:
        self._finish_export()
        self.show_error(message)

    # About, settings, closing

    def show_about(self) -> None:
        QMessageBox.about(self, "About NLMeans Studio", about_text(self.preview))

    def _restore_settings(self) -> None:
        geometry = self.settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        splitter = self.settings.value("splitter")
        if splitter is not None:
            self.splitter.restoreState(splitter)
        split = self.settings.value("split-view", True)
        self.split_action.setChecked(split in (True, "true"))
        self.toggle_view()
        saved = self.settings.value("params")
        if saved:
            try:
                self.parameters.set_params(NLMParams(**json.loads(saved)))
            except (ValueError, TypeError):
                self.show_error("The saved parameters were not valid; the defaults are used.")
        for entry in self.recent_files()[::-1]:
            self._remember_recent(Path(entry))

    def _save_settings(self) -> None:
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("splitter", self.splitter.saveState())
        self.settings.setValue("split-view", self.split_action.isChecked())
        params = dataclasses.asdict(self.parameters.params())
        params.pop("color_transform")
        self.settings.setValue("params", json.dumps(params))
        self.settings.sync()

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt's naming)
        self._save_settings()
        self.play_timer.stop()
        self.speed_timer.stop()
        if self.export_job is not None:
            self.export_job.cancel()
            self._finish_export()
        self.worker_thread.stop()
        super().closeEvent(event)


def about_text(preview: Preview | None) -> str:
    """Versions of the app and its libraries, and the device the last preview ran on."""
    import pyqtgraph
    import PySide6

    lines = [
        f"<b>NLMeans Studio {engine.__version__}</b>",
        "Non-Local Means video denoising on an NVIDIA GPU or the CPU.",
        f"Python {platform.python_version()}, NumPy {np.__version__}, PySide6 {PySide6.__version__}, "
        f"pyqtgraph {pyqtgraph.__version__}",
    ]
    try:
        import av

        lines.append(f"PyAV {av.__version__} (FFmpeg {av.ffmpeg_version_info})")
    except ImportError:
        lines.append("PyAV is not installed: no video files")
    if preview is not None:
        lines.append(f"Denoising on the {preview.backend.upper()}: {preview.device_name}")
    reason = engine.gpu_unavailable_reason()
    if reason:
        lines.append(f"GPU unavailable: {reason}")
    lines.append("Sample clip: Big Buck Bunny, © Blender Foundation, CC-BY 3.0.")
    return "<br>".join(lines)
