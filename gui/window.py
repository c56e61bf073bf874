"""The main window: views, controls, readouts, playback, marks, noise, exports, presets, settings."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
from PySide6.QtCore import QEvent, QObject, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QActionGroup, QDragEnterEvent, QDropEvent, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStyle,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from nlmeans_studio import engine
from nlmeans_studio.engine import (
    SAMPLE_CLIP,
    LumaChroma,
    NLMParams,
    NoiseEstimate,
    Preview,
    RenderAhead,
    VideoInfo,
    apply_estimate,
    matrix_for,
    parse_luma_chroma,
    split_estimate,
    suggest_luma_chroma_h,
)

from .controls import ParameterPanel, Timeline
from .export import ExportDialog, ExportQueue, ExportRequest
from .panels import NoisePanel, Readouts, wrapping_label
from .presets import Preset, PresetError, load_preset, save_preset, shipped_presets
from .views import ComparisonView
from .worker import EstimateRequest, OpenRequest, PlayRequest, PreviewRequest, WorkerThread

DEBOUNCE_MS = 40  # a slider's movements within this time make one request
RECENT_FILES = 8
DEFAULT_PARAMS = NLMParams(h=20)
VIDEO_FILTER = (
    "Videos (*.mp4 *.m4v *.mov *.mkv *.webm *.avi *.mxf *.mts *.m2ts *.ts *.mpg *.mpeg *.vob *.wmv *.flv *.dv "
    "*.y4m *.nut *.ogv *.3gp);;All files (*)"
)
# Keys a focused spin box keeps although the window has single-key shortcuts on some of them:
# the ones that type or edit a number. Every other single-key shortcut (Space, V, Left...) works
# while a spin box has focus.
SPIN_BOX_KEYS = {
    *(getattr(Qt.Key, f"Key_{digit}") for digit in range(10)),
    Qt.Key.Key_Period,
    Qt.Key.Key_Comma,
    Qt.Key.Key_Minus,
    Qt.Key.Key_Plus,
    Qt.Key.Key_Backspace,
    Qt.Key.Key_Delete,
    Qt.Key.Key_Home,
    Qt.Key.Key_End,
    Qt.Key.Key_Up,
    Qt.Key.Key_Down,
    Qt.Key.Key_PageUp,
    Qt.Key.Key_PageDown,
}


def timecode(index: int, frame_rate: Fraction) -> str:
    """Frame ``index`` as HH:MM:SS:FF at ``frame_rate`` (frames counted from 0, non-drop)."""
    per_second = max(1, round(frame_rate))
    seconds, frames = divmod(index, per_second)
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}:{frames:02d}"


class SpinBoxKeys(QObject):
    """Lets the window's single-key shortcuts through a focused spin box (except the keys that
    edit a number), and gives the focus back to the picture when Return ends an edit."""

    def __init__(self, picture: QWidget) -> None:
        super().__init__(picture)
        self._picture = picture

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's naming)
        if not isinstance(event, QKeyEvent) or event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier:
            return False
        if event.type() == QEvent.Type.ShortcutOverride and event.key() not in SPIN_BOX_KEYS:
            event.ignore()
            return True  # the spin box never claims the key: the shortcut runs
        if event.type() == QEvent.Type.KeyPress and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            QTimer.singleShot(0, self._picture.setFocus)
        return False


class MainWindow(QMainWindow):
    """NLMeans Studio's window. ``settings`` defaults to the user's QSettings."""

    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or QSettings()
        self.setWindowTitle("NLMeans Studio")
        self.setAcceptDrops(True)
        self.path: Path | None = None
        self._opening: Path | None = None
        self._banner_callback: Callable[[], None] | None = None
        self.info: VideoInfo | None = None
        self.frame_times = np.zeros(0)  # seconds from frame 0 of each frame of the clip
        self.estimate: NoiseEstimate | None = None
        self.noise_in_use: NoiseEstimate | None = None  # what h follows: the synthetic noise or an estimate
        self.transform: np.ndarray | None = None
        self.preview: Preview | None = None
        self.strength = 1.0  # h as a multiple of the h suggested for the noise (presets set it)
        self._keep_h = False  # the clip's saved h stands when its noise estimate arrives
        self.mark_in: int | None = None
        self.mark_out: int | None = None
        self.playback: RenderAhead | None = None
        self.playing = False
        self._play_number = 0
        self._play_index = 0
        self._shown_times: list[float] = []
        self._busy_since: float | None = None
        self._requests = 0
        self._shown = 0
        self._pending_preview = 0
        self.worker_thread = WorkerThread()
        worker = self.worker_thread.worker
        worker.opened.connect(self._opened)
        worker.rendered.connect(self._rendered)
        worker.estimated.connect(self._estimated)
        worker.playback_started.connect(self._playback_started)
        worker.failed.connect(self._failed)
        worker.busy_changed.connect(self._busy_changed)

        self.view = ComparisonView()
        self.view.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.parameters = ParameterPanel()
        self.noise = NoisePanel()
        self.readouts = Readouts()
        self.frame_slider = Timeline()
        self.frame_slider.setEnabled(False)
        self.frame_label = QLabel("no clip")
        self.banner = wrapping_label()
        self.banner.setStyleSheet("background: #5a1d1d; color: white; padding: 6px")
        self.banner_action = QPushButton()
        self.banner_close = QPushButton("Dismiss")
        self.exports = ExportQueue()
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)  # an indicator that moves while the engine works
        self.busy.setMaximumWidth(120)
        self.busy.setToolTip("The engine is working")
        self.busy.hide()
        self._build_layout()
        self._build_actions()
        keys = SpinBoxKeys(self.view)
        for spin_box in self.findChildren(QAbstractSpinBox):
            spin_box.installEventFilter(keys)

        self.debounce = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self.debounce.timeout.connect(self._parameters_settled)
        self.play_timer = QTimer(self)
        self.play_timer.timeout.connect(self._next_frame)
        self.speed_timer = QTimer(self, interval=1000)
        self.speed_timer.timeout.connect(self._show_speed)
        self.speed_timer.start()
        self.parameters.changed.connect(self.debounce.start)
        self.parameters.reset.clicked.connect(self.reset_to_suggested)
        self.parameters.luma_chroma.currentIndexChanged.connect(self._follow_noise_in_luma_chroma)
        self.noise.synthetic_changed.connect(self._synthetic_changed)
        self.noise.estimate_requested.connect(lambda: self.request_estimate(None))
        self.noise.draw_region_requested.connect(self._draw_region)
        self.noise.region_requested.connect(lambda: self.request_estimate(self.view.roi_box()))
        self.noise.reference_requested.connect(self._choose_reference)
        self.view.region_drawn.connect(self._region_drawn)
        self.frame_slider.valueChanged.connect(self._frame_changed)
        self.exports.finished.connect(lambda summary: self.statusBar().showMessage(summary, 15000))
        self.exports.failed.connect(self.show_error)
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
        self.side_scroll = QScrollArea()
        self.side_scroll.setWidget(side)
        self.side_scroll.setWidgetResizable(True)
        self.side_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.side_scroll.setMinimumWidth(440)
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
        centre_layout.addWidget(self.exports)
        self.splitter = QSplitter()
        self.splitter.addWidget(centre)
        self.splitter.addWidget(self.side_scroll)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setSizes([1000, 440])
        self.setCentralWidget(self.splitter)
        self.statusBar().addPermanentWidget(self.busy)
        self.resize(1400, 820)

    def _action(
        self, text: str, shortcut: str | None, slot: Callable[[], object], icon: QStyle.StandardPixmap | None = None
    ) -> QAction:
        """An action of the window; ``slot`` is called without arguments (not with ``checked``)."""
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
            action.setToolTip(f"{text.rstrip('…')} ({shortcut})")
        if icon is not None:
            action.setIcon(self.style().standardIcon(icon))
        action.triggered.connect(lambda: slot())
        self.addAction(action)
        return action

    def _build_actions(self) -> None:
        pixmap = QStyle.StandardPixmap
        self.open_action = self._action("Open…", "Ctrl+O", self._choose_file, pixmap.SP_DialogOpenButton)
        self.export_action = self._action("Export…", "Ctrl+E", self.export_dialog, pixmap.SP_DialogSaveButton)
        self.play_action = self._action("Play", "Space", self.toggle_play, pixmap.SP_MediaPlay)
        self.back_action = self._action("Previous frame", "Left", lambda: self.step(-1), pixmap.SP_MediaSeekBackward)
        self.forward_action = self._action("Next frame", "Right", lambda: self.step(1), pixmap.SP_MediaSeekForward)
        self.first_action = self._action("First frame", "Home", lambda: self.go_to(0), pixmap.SP_MediaSkipBackward)
        self.last_action = self._action("Last frame", "End", lambda: self.go_to(None), pixmap.SP_MediaSkipForward)
        self.in_action = self._action("Mark in", "I", lambda: self.set_mark("in"))
        self.out_action = self._action("Mark out", "O", lambda: self.set_mark("out"))
        self.clear_marks_action = self._action("Clear marks", "Alt+X", self.clear_marks)
        self.mode_actions: dict[str, QAction] = {}
        modes = QActionGroup(self)
        for mode, text in (
            ("split", "Split"),
            ("side", "Side by side"),
            ("before", "Before"),
            ("after", "After"),
            ("difference", "Difference"),
        ):
            action = self._action(text, None, lambda m=mode: self.set_view_mode(m))
            action.setCheckable(True)
            modes.addAction(action)
            self.mode_actions[mode] = action
        self.split_action = self._action("Split / side by side", "V", self.toggle_view)
        self.flip_action = self._action("Flip before / after", "B", self.flip)
        self.difference_action = self._action("Difference on / off", "D", self.toggle_difference)
        self.regions_action = self._action("Show noise regions", "R", self._show_regions_changed)
        self.regions_action.setCheckable(True)
        self.regions_action.setChecked(True)
        self.fit_action = self._action("Fit", "F", self.view.fit)
        self.actual_action = self._action("1:1", "1", self.view.actual_pixels)
        about = self._action("About NLMeans Studio", None, self.show_about)
        toolbar = QToolBar("Main")
        toolbar.setObjectName("main-toolbar")
        for action in (
            self.open_action,
            self.export_action,
            None,
            self.first_action,
            self.back_action,
            self.play_action,
            self.forward_action,
            self.last_action,
            None,
            self.in_action,
            self.out_action,
            None,
            self.split_action,
            self.flip_action,
            self.difference_action,
            self.fit_action,
            self.actual_action,
        ):
            toolbar.addAction(action) if action else toolbar.addSeparator()
        self.addToolBar(toolbar)
        self.toolbar = toolbar
        menus = self.menuBar()
        file_menu = menus.addMenu("&File")
        file_menu.addAction(self.open_action)
        self.recent_menu = file_menu.addMenu("Open recent")
        file_menu.addAction(self.export_action)
        file_menu.addSeparator()
        file_menu.addAction(self._action("Quit", "Ctrl+Q", self.close))
        self.file_menu = file_menu
        view_menu = menus.addMenu("&View")
        for action in self.mode_actions.values():
            view_menu.addAction(action)
        view_menu.addSeparator()
        for action in (self.split_action, self.flip_action, self.difference_action, self.regions_action):
            view_menu.addAction(action)
        view_menu.addSeparator()
        for action in (self.fit_action, self.actual_action):
            view_menu.addAction(action)
        play_menu = menus.addMenu("P&layback")
        for action in (self.play_action, self.back_action, self.forward_action, self.first_action, self.last_action):
            play_menu.addAction(action)
        play_menu.addSeparator()
        for action in (self.in_action, self.out_action, self.clear_marks_action):
            play_menu.addAction(action)
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
        self.stop_playback()
        self._submit(OpenRequest(Path(path), Path(reference) if reference else None))
        self._opening = Path(path)

    def _choose_file(self) -> None:
        folder = str(self.path.parent if self.path else Path.home())
        path, _ = QFileDialog.getOpenFileName(self, "Open a video", folder, VIDEO_FILTER)
        if path:
            self.open_clip(path)

    def _choose_reference(self) -> None:
        if self.path is None:
            return self.show_error("Open a clip first.")
        folder = str(self.path.parent)
        path, _ = QFileDialog.getOpenFileName(self, "Open the clean reference clip", folder, VIDEO_FILTER)
        if path:
            self.open_clip(self.path, path)

    def _opened(self, number: int, info: VideoInfo, frame_times: np.ndarray) -> None:
        if self.path is not None and self.path != self._opening:
            self._save_clip_settings()
        self.path, self.info, self.frame_times = self._opening, info, frame_times
        self.estimate, self.noise_in_use, self.transform = None, None, None
        self.parameters.decorrelate.setChecked(False)
        self.parameters.set_decorrelation_available(False)
        self.view.show_regions([])
        self.noise.result.setText("No estimate yet.")
        self.setWindowTitle(f"NLMeans Studio — {self.path.name}")
        self.frame_slider.blockSignals(True)
        self.frame_slider.setRange(0, info.frame_count - 1)
        self.frame_slider.setValue(min(self.frame_slider.value(), info.frame_count - 1))
        self.frame_slider.blockSignals(False)
        self.frame_slider.setEnabled(True)
        self.play_timer.setInterval(max(1, round(1000 / float(info.frame_rate))))
        self._remember_recent(self.path)
        self._hide_banner()
        self._restore_clip_settings()
        self._show_position()
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

    # Settings per clip

    def _clip_key(self) -> str:
        return "clips/" + hashlib.sha1(str(self.path.resolve()).encode()).hexdigest()

    def _save_clip_settings(self) -> None:
        if self.path is None:
            return
        params = dataclasses.asdict(self.parameters.params())
        params.pop("color_transform")
        clip = {
            "params": params,
            "noise": self.noise.settings(),
            "strength": self.strength,
            "luma_chroma": self.parameters.luma_chroma_text(),
            "in": self.mark_in,
            "out": self.mark_out,
        }
        self.settings.setValue(self._clip_key(), json.dumps(clip))

    def _restore_clip_settings(self) -> None:
        """The clip's own parameters, noise and marks as it was left. A clip opened for the first
        time gets its noise estimated (h follows it); the bundled sample, which is clean, gets
        synthetic noise instead, so that the filter has work to do."""
        saved = self.settings.value(self._clip_key())
        self.mark_in = self.mark_out = None
        self._keep_h = False
        clip = None
        if saved is not None:
            try:
                clip = json.loads(saved)
                params = NLMParams(**clip["params"])
                luma_chroma = parse_luma_chroma(clip.get("luma_chroma", "off"))
            except (ValueError, TypeError, KeyError, AttributeError):
                clip = None
                self.show_error("This clip's saved settings were not valid; the current ones are used.")
        if clip is None:  # synthetic_changed follows: h from the synthetic noise, or an estimate
            self.noise.restore({**self.noise.settings(), "on": self.path.resolve() == SAMPLE_CLIP.resolve()})
            return
        self.strength = float(clip.get("strength", 1.0))
        self.mark_in, self.mark_out = clip.get("in"), clip.get("out")
        self.parameters.set_params(params)
        self.parameters.set_luma_chroma_mode(luma_chroma)
        self._keep_h = True  # the h saved with the clip stands, whatever its noise
        self.noise.restore(clip.get("noise", {}))
        self._keep_h = self.noise.noise() is None  # and when the estimate on its way arrives

    # Requests to the worker and their answers

    def _submit(self, request: object) -> int:
        self._requests += 1
        self.worker_thread.worker.submit(self._requests, request)
        return self._requests

    def current_params(self) -> NLMParams:
        return self.parameters.params(self.transform)

    def current_luma_chroma(self) -> LumaChroma | None:
        """(h_luma, h_chroma, matrix) when the luma/chroma mode is on, in the clip's Y'CbCr matrix."""
        if self.parameters.luma_chroma_mode() is None or self.info is None:
            return None
        matrix = matrix_for(self.info.color.get("colorspace", 2), self.info.height)
        return self.parameters.h_luma.value(), self.parameters.h_chroma.value(), matrix

    def _follow_noise_in_luma_chroma(self) -> None:
        """Unless given, the two strengths are the suggested ones for the noise in use, times
        ``strength`` (as h is): the RGB estimate seen in the clip's Y'CbCr. Off, they show what
        auto would use, and where typing them starts from."""
        estimate, mode = self.noise_in_use, self.parameters.luma_chroma_mode()
        if isinstance(mode, tuple) or estimate is None or self.info is None:
            return
        if len(estimate.covariance) != 3:
            if mode == "auto":
                self.show_error("Luma/chroma needs a color clip; this one has no chroma.")
            return
        matrix = matrix_for(self.info.color.get("colorspace", 2), self.info.height)
        h_luma, h_chroma = suggest_luma_chroma_h(split_estimate(estimate, matrix), self.parameters.params())
        self.parameters.set_luma_chroma_h(self.strength * h_luma, self.strength * h_chroma)

    def _parameters_settled(self) -> None:
        """The controls stopped moving: a new preview, or playback again from here with them."""
        if self.playing:
            self._start_playback(self._play_index)
        else:
            self.request_preview()

    def request_preview(self) -> None:
        """Ask for the current frame with the current parameters (the latest request wins)."""
        self.debounce.stop()
        if self.info is None:
            return
        try:
            params, noise = self.current_params(), self.noise.noise()
        except ValueError as error:
            return self.show_error(str(error))
        request = PreviewRequest(
            self.frame_slider.value(), params, noise, self.parameters.backend_name(), self.current_luma_chroma()
        )
        self._pending_preview = self._submit(request)

    def request_estimate(self, roi: tuple[int, int, int, int] | None) -> None:
        """Estimate the noise of the current frame (and the next): automatically, or in ``roi``."""
        if self.info is None:
            return self.show_error("Open a clip first.")
        self._submit(EstimateRequest(self.frame_slider.value(), roi, self.noise.noise()))

    def _rendered(self, number: int, preview: Preview) -> None:
        if number <= self._shown:
            return  # older than what is on screen
        self._shown = number
        if not self.playing:
            self._show(preview)

    def _show(self, preview: Preview) -> None:
        self.preview = preview
        self.view.set_images(preview.before, preview.after)
        self.readouts.show_psnr(preview)

    def _estimated(self, number: int, estimate: NoiseEstimate) -> None:
        self.estimate = estimate
        if estimate.method != "region":
            self.view.show_regions(estimate.regions)
        self.readouts.show_sigma(estimate)
        self.apply_noise(estimate)
        self._keep_h = False
        self.noise.show_estimate(estimate, self.current_params().color_transform, self.parameters.h.value())

    def apply_noise(self, estimate: NoiseEstimate | None = None) -> None:
        """h (``strength`` times the suggested h) and color decorrelation from ``estimate``, which
        becomes ``noise_in_use`` (by default the noise in use already, if any)."""
        estimate = estimate or self.noise_in_use
        if estimate is None:
            return
        self.noise_in_use = estimate
        suggested = apply_estimate(self.parameters.params(), estimate)
        try:
            self.transform = estimate.color_transform() if len(estimate.covariance) > 1 else None
        except ValueError:
            self.transform = None
        self.parameters.set_decorrelation_available(self.transform is not None)
        self.parameters.decorrelate.blockSignals(True)
        self.parameters.decorrelate.setChecked(suggested.color_transform is not None)
        self.parameters.decorrelate.blockSignals(False)
        if not self._keep_h:
            self.parameters.h.setValue(self.strength * suggested.h)
        self._follow_noise_in_luma_chroma()
        self.debounce.start()

    def _synthetic_changed(self) -> None:
        """h follows the synthetic noise while it is on, the clip's estimated noise otherwise."""
        synthetic = self.noise.noise()
        if synthetic is not None:
            self.apply_noise(synthetic.estimate())
            self.readouts.show_sigma(synthetic.estimate())
        elif self.estimate is not None:
            self.apply_noise(self.estimate)
        elif self.info is not None:
            self.noise_in_use = None
            self.request_estimate(None)
        self.debounce.start()

    def _failed(self, number: int, kind: str, message: str) -> None:
        if number == self._play_number and self.playing:
            self.stop_playback()
        if kind == "backend" and self.parameters.backend_name() == "gpu":
            self.show_error(f"The GPU could not denoise this frame: {message}", "Use the CPU", self.use_cpu)
        elif kind == "open":
            self.show_error(f"Could not open the video: {message}")
        else:
            self.show_error(message)

    def _busy_changed(self, busy: bool) -> None:
        self._busy_since = time.perf_counter() if busy else None
        self.busy.setVisible(busy)
        self._show_speed()

    def use_cpu(self) -> None:
        self.parameters.backend.setCurrentIndex(self.parameters.backend.findData("cpu"))
        self._hide_banner()

    def show_error(self, message: str, action_text: str | None = None, action: Callable[[], None] | None = None):
        """A message above the views (never a dialog that blocks), with an optional action button."""
        self.banner.setText(message)
        self.banner.setToolTip(message)
        self.banner.show()
        self.banner_close.show()
        self._banner_callback = action
        self.banner_action.setVisible(action is not None)
        if action is not None:
            self.banner_action.setText(action_text)

    def _hide_banner(self) -> None:
        for widget in (self.banner, self.banner_action, self.banner_close):
            widget.hide()

    # Frames, marks and playback

    def _frame_changed(self) -> None:
        self.stop_playback()
        self._show_position()
        self.request_preview()

    def _show_position(self) -> None:
        if self.info is None:
            return
        index, rate = self.frame_slider.value(), self.info.frame_rate
        parts = [timecode(index, rate), f"frame {index + 1} / {self.info.frame_count}"]
        marked = None
        if self.mark_in is not None or self.mark_out is not None:
            first, stop = self.play_range()
            marked = (first, stop - 1)
            parts.append(f"in {timecode(first, rate)} out {timecode(stop - 1, rate)}")
        self.frame_label.setText(" · ".join(parts))
        self.frame_slider.set_marked(marked)

    def step(self, frames: int) -> None:
        self.frame_slider.setValue(self.frame_slider.value() + frames)

    def go_to(self, index: int | None) -> None:
        """Show frame ``index`` (None: the last)."""
        self.frame_slider.setValue(self.frame_slider.maximum() if index is None else index)

    def set_mark(self, which: str) -> None:
        """Mark the current frame as the first ("in") or last ("out") of the range played and exported."""
        if self.info is None:
            return
        index = self.frame_slider.value()
        if which == "in":
            self.mark_in = index
            if self.mark_out is not None and self.mark_out < index:
                self.mark_out = None
        else:
            self.mark_out = index
            if self.mark_in is not None and self.mark_in > index:
                self.mark_in = None
        self._show_position()

    def clear_marks(self) -> None:
        self.mark_in = self.mark_out = None
        self._show_position()

    def play_range(self) -> tuple[int, int]:
        """The frames between the marks: (first, last + 1); the whole clip without marks."""
        count = self.info.frame_count if self.info is not None else 0
        first = self.mark_in or 0
        stop = count if self.mark_out is None else self.mark_out + 1
        return first, stop

    def toggle_play(self) -> None:
        """Play every denoised frame from the next one to the out mark (from the in mark when at
        the end), at the clip's rate where the engine keeps up; pause."""
        if self.playing or self.info is None:
            return self.stop_playback()
        first, stop = self.play_range()
        current = self.frame_slider.value()
        self._start_playback(current + 1 if first <= current < stop - 1 else first)

    def _start_playback(self, start: int) -> None:
        stop = self.play_range()[1]
        try:
            params, noise = self.current_params(), self.noise.noise()
        except ValueError as error:
            return self.show_error(str(error))
        if self.playback is not None:
            self.playback.cancel()
        self.playback = None
        self.playing = True
        self._play_index = start
        self._shown_times = []
        request = PlayRequest(start, stop, params, noise, self.parameters.backend_name(), self.current_luma_chroma())
        self._play_number = self._submit(request)
        self.play_timer.start()
        self._show_play_state()

    def _playback_started(self, number: int, playback: RenderAhead) -> None:
        if number == self._play_number and self.playing:
            self.playback = playback
        else:
            playback.cancel()

    def stop_playback(self) -> None:
        """Pause; the frame shown is rendered again as a still (with its PSNR)."""
        if not self.playing:
            return
        self.playing = False
        self.play_timer.stop()
        if self.playback is not None:
            self.playback.cancel()
            self.worker_thread.worker.wake()
        self.playback = None
        self._show_play_state()
        self.request_preview()

    def _show_play_state(self) -> None:
        self.play_action.setText("Pause" if self.playing else "Play")
        pixmap = QStyle.StandardPixmap.SP_MediaPause if self.playing else QStyle.StandardPixmap.SP_MediaPlay
        self.play_action.setIcon(self.style().standardIcon(pixmap))

    def _next_frame(self) -> None:
        """The play clock: show the next frame if it is rendered, else wait for it (never skip)."""
        preview = self.playback.take(self._play_index) if self.playback is not None else None
        if preview is None:
            return
        self.worker_thread.worker.wake()  # a frame left the buffer: room to render ahead
        self._show(preview)
        self._shown_times.append(time.perf_counter())
        self.frame_slider.blockSignals(True)
        self.frame_slider.setValue(preview.index)
        self.frame_slider.blockSignals(False)
        self._show_position()
        self._play_index = preview.index + 1
        if self._play_index >= self.playback.stop:
            self.stop_playback()

    def _show_speed(self) -> None:
        now = time.perf_counter()
        if self.playing:
            self._shown_times = [t for t in self._shown_times if now - t <= 1.0]
            playback = self.playback
            rendered = (playback.rendered, playback.total) if playback is not None else (0, 0)
            fps = playback.frames_per_second if playback is not None else None
            return self.readouts.show_playback(len(self._shown_times), fps, *rendered)
        engine_ms = self.preview.engine_ms if self.preview is not None else None
        device = f"{self.preview.backend.upper()}: {self.preview.device_name}" if self.preview else ""
        rendering = None if self._busy_since is None else now - self._busy_since
        self.readouts.show_still(engine_ms, device, rendering)

    # Views

    def set_view_mode(self, mode: str) -> None:
        self.view.set_mode(mode)
        self.mode_actions[mode].setChecked(True)

    def toggle_view(self) -> None:
        self.set_view_mode("side" if self.view.mode == "split" else "split")

    def flip(self) -> None:
        """Before and after in turn, the whole frame, in the same place."""
        self.set_view_mode("after" if self.view.mode == "before" else "before")

    def toggle_difference(self) -> None:
        self.set_view_mode("split" if self.view.mode == "difference" else "difference")

    def _show_regions_changed(self) -> None:
        self.view.set_regions_visible(self.regions_action.isChecked())

    # Noise and parameters

    def _draw_region(self) -> None:
        if self.info is None:
            return self.show_error("Open a clip first.")
        self.regions_action.setChecked(True)
        self._show_regions_changed()
        self.view.start_drawing_region()
        self.statusBar().showMessage("Drag a rectangle over a flat area of the picture.", 10000)

    def _region_drawn(self, box: tuple[int, int, int, int]) -> None:
        self.noise.use_region.setEnabled(True)
        self.statusBar().showMessage(f"Region {box[2]} x {box[3]} at ({box[0]}, {box[1]}): Use this region.", 10000)

    def reset_to_suggested(self) -> None:
        """Default radii and frames; h and decorrelation from the noise when it is known."""
        self.strength = 1.0
        self.parameters.set_params(DEFAULT_PARAMS)
        self.apply_noise()

    def load_preset(self, path: str | Path) -> None:
        """Take a preset's parameters; its strength sets h from the noise (measured first if unknown)."""
        try:
            preset: Preset = load_preset(Path(path))
        except PresetError as error:
            return self.show_error(str(error))
        self.parameters.set_params(preset.params)
        self.parameters.set_luma_chroma_mode(preset.luma_chroma)
        if preset.strength is not None:
            self.strength = preset.strength
            if self.noise_in_use is None and self.info is not None:
                self.request_estimate(None)
            self.apply_noise()

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
        estimate, params = self.noise_in_use, self.current_params()
        strength = None if estimate is None else params.h / apply_estimate(params, estimate).h
        try:
            save_preset(Path(path), params, strength, self.parameters.luma_chroma_text())
        except OSError as error:
            self.show_error(f"Could not save the preset: {error}")

    # Export

    def export_dialog(self) -> None:
        """Ask for an export's settings (the range from the marks); Export adds it to the queue."""
        if self.path is None or self.info is None:
            return self.show_error("Open a clip first.")
        first, stop = self.play_range()  # as the frames' own times: exact on variable frame rates too
        start = float(self.frame_times[first])
        end = float(self.frame_times[stop]) if stop < len(self.frame_times) else None
        dialog = ExportDialog(self, self.path, self.info, start, None if end is None else end - start)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        source, params, backend = self.path, self.current_params(), self.parameters.backend_name()
        luma_chroma = self.current_luma_chroma()
        dialog.accepted.connect(
            lambda: self.exports.add(
                ExportRequest(source, dialog.settings(), params, backend, luma_chroma), dialog.describe()
            )
        )
        dialog.open()

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
        mode = self.settings.value("view-mode", "split")
        self.set_view_mode(mode if mode in self.mode_actions else "split")
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
        self.settings.setValue("view-mode", self.view.mode)
        params = dataclasses.asdict(self.parameters.params())
        params.pop("color_transform")
        self.settings.setValue("params", json.dumps(params))
        self._save_clip_settings()
        self.settings.sync()

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt's naming)
        self._save_settings()
        self.stop_playback()
        self.play_timer.stop()
        self.speed_timer.stop()
        self.debounce.stop()
        self.exports.stop()
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
