"""The volume window: a 3D volume (NIfTI, TIFF stack, .npy) denoised with the filter of DESIGN.md §6.

The before/after view shows one plane, its pixels as wide and high as the voxels (the file's
voxel size), a NIfTI's planes as radiologists read them with the body's directions at the edges
(``volume_planes``); a slider walks it along the chosen axis (z, y or x).
The volume filter's controls (h in the volume's units, patch and search radii, weighting,
centre weight) drive a preview that filters only the slab around the plane
(``denoise_volume_slice``: the same plane the whole volume's filter gives); File > Export
filters the whole volume and writes it in the input's format, type and grid.

Filter > Draw a noise region (N): h follows the noise of a flat box the user drags on the plane
(REGION_DEPTH planes deep); File > Open reference volume: each preview says its PSNR against the
clean volume; H puts the keys in the h box.

The engine runs on the window's worker (``volume_worker``), the main window's thread model; the
window never waits on it. Requests are numbered, and only the latest preview's answer is shown.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressDialog,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from nlmeans_studio.engine import (
    CENTER_WEIGHTS,
    CHANNEL_MODES,
    COMPILING,
    PATCH_RADIUS_MAX,
    SEARCH_RADIUS_MAX,
    VOLUME_SUFFIXES,
    WEIGHTINGS,
    check_volume_output,
    estimate_volume_noise,
    psnr,
    read_volume,
)

from .export import stop_exports_asked
from .radii_box import RadiiBox
from .spin_box_keys import SpinBoxKeys
from .view_actions import ViewActions
from .views import ComparisonView
from .volume_planes import ARRAY_AXES, plane_layout
from .volume_strengths import SIGNIFICANT, VolumeStrengths
from .volume_worker import PlanePreviewRequest, VolumeExportRequest, VolumeWorker
from .worker import WorkerThread

WINDOW_SIZE = (1100, 720)  # pixels, when it opens
H_DECIMALS_MAX = 10  # the h box's decimals, at most
SIDE_WIDTH = 380  # pixels: the controls' column, at most
PREVIEW_DELAY_MS = 250  # a control's changes settle this long before the preview runs
DISPLAY_PERCENTILES = (0.5, 99.5)  # of the input's intensities: black and white of the view
REGION_DEPTH = 2  # planes either side of the shown one that a drawn noise region spans


def display_plane(plane: np.ndarray, low: float, high: float) -> np.ndarray:
    """A plane (H, W[, C]) of intensities as uint8 for the view: ``low`` black, ``high`` white."""
    scale = 255.0 / max(high - low, 1e-12)
    return np.clip(np.rint((plane.astype(np.float32) - low) * scale), 0, 255).astype(np.uint8)


class _PlaneKeys(QObject):
    """Left / Right and Page Up / Down on the axis box walk the planes, as on the slider (Up and
    Down still choose the axis): a user who had just chosen an axis pressed Right, and nothing moved."""

    WALKING = (Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_PageUp, Qt.Key.Key_PageDown)

    def __init__(self, slider: QSlider) -> None:
        super().__init__(slider)
        self._slider = slider

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's naming)
        if event.type() == QEvent.Type.KeyPress and event.key() in self.WALKING:
            QApplication.sendEvent(self._slider, QKeyEvent(event.type(), event.key(), event.modifiers()))
            return True
        return False


class VolumeWindow(QMainWindow):
    """A volume file in the before/after view with the volume filter's controls; see the module.

    ``open_requested(folder)``: File > Open (Ctrl+O) was chosen here; the main window asks for
    the file, from this volume's folder.
    """

    open_requested = Signal(object)

    def __init__(self, path: str | Path, backend: str = "auto", parent: QWidget | None = None) -> None:
        # Read before the window exists: a file that cannot be read (ValueError, OSError) leaves none behind.
        file = read_volume(path)
        data = np.asarray(file.data, dtype=np.float32)
        data = data if data.ndim == 4 else data[..., np.newaxis]  # (Z, Y, X, C) throughout
        estimate = estimate_volume_noise(data)
        super().__init__(parent)
        self.path, self.backend, self.file, self.data, self.estimate = Path(path), backend, file, data, estimate
        self.low, self.high = (float(v) for v in np.percentile(self.data, DISPLAY_PERCENTILES))
        # Each channel's black and white on its own (channels of different ranges), all at once for RGB.
        self.levels = [
            tuple(float(v) for v in np.percentile(data[..., c], DISPLAY_PERCENTILES)) for c in range(data.shape[3])
        ]
        self.strengths = VolumeStrengths(data, estimate, file.channel_mode())
        self.setWindowTitle(f"NLMeans Studio — {self.path.name}")  # as the main window's
        self._requests = itertools.count(1)
        self._latest = 0  # the number of the latest preview asked for: older answers are dropped
        self._export_number = 0  # the number of the export running
        self._closed = False
        self.reference: np.ndarray | None = None  # the clean volume (Z, Y, X, C) previews are measured against
        self._progress: QProgressDialog | None = None
        self._delay = QTimer(self, singleShot=True, interval=PREVIEW_DELAY_MS)
        self._delay.timeout.connect(self.request_preview)
        self.worker_thread = WorkerThread(VolumeWorker(data), "nlmeans-volume")  # stopped by closeEvent
        self._build()
        worker = self.worker_thread.worker
        worker.rendered.connect(self._show_preview)
        worker.compiling.connect(self._preview_compiling)
        worker.preview_failed.connect(self._preview_failed)
        worker.export_progressed.connect(self._export_progress)
        worker.exported.connect(self._export_done)
        worker.export_failed.connect(self._export_failed)
        worker.export_cancelled.connect(self._export_cancelled)
        self.resize(*WINDOW_SIZE)
        self.slider.setFocus()  # the arrow keys and Page Up / Down walk the planes from the start
        self.request_preview()

    def _build(self) -> None:
        self.view = ComparisonView()
        self.axis = QComboBox()
        self.layouts = [plane_layout(axis, self.file.directions) for axis in range(3)]
        self.axis.addItems([layout.name for layout in self.layouts])
        self.axis.setToolTip("The axis the shown plane is normal to")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setToolTip("The plane along the axis (arrow keys, Page Up / Down)")
        self.slider.setPageStep(10)
        self.plane_label = QLabel()
        self.h = _double_spin(10.0**-H_DECIMALS_MAX, 1e9, self.strengths.h(0), "h, in the volume's intensity units")
        self.channel = QComboBox()  # the channel shown (and whose h the box sets, where filtered separately)
        self.channel.addItems(
            (["RGB"] if self.data.shape[3] == 3 else []) + [f"channel {c + 1}" for c in range(self.data.shape[3])]
        )
        self.channel.setToolTip("The channel shown, and whose h the box sets where channels are filtered separately")
        self.channel_mode = _combo(CHANNEL_MODES, self.strengths.mode)
        self.channel_mode.setToolTip(
            "Together: the patch distance sums the channels (one structure, as RGB); separately: each channel is "
            "filtered on its own with the h of its own noise (fluorescence channels)"
        )
        self.patch = RadiiBox(PATCH_RADIUS_MAX, 1, "patch radius B, voxels: patches are (2B+1)^3")
        self.search = RadiiBox(SEARCH_RADIUS_MAX, 5, "search radius A, voxels: the window is (2A+1)^3")
        self.per_axis = QCheckBox("Radii per axis (z, y, x)")
        self.per_axis.setToolTip("A radius for each axis, for anisotropic voxels (fewer planes along a coarse z)")
        self.weighting = _combo(WEIGHTINGS, "exponential")
        self.center = _combo(CENTER_WEIGHTS, "one")
        self.status = QLabel()
        self.status.setWordWrap(True)

        controls = QFormLayout()
        controls.addRow("Strength h", self.h)
        controls.addRow("Patch radius", self.patch)
        controls.addRow("Search radius", self.search)
        controls.addRow("", self.per_axis)
        controls.addRow("Weighting", self.weighting)
        controls.addRow("Centre weight", self.center)
        if self.data.shape[3] > 1:
            controls.addRow("Channels", self.channel_mode)
        self.noise = QLabel()
        self.noise.setWordWrap(True)
        self._describe_noise()
        self._show_h()
        side = QVBoxLayout()
        side.addLayout(controls)
        side.addWidget(self.noise)
        side.addWidget(self.status)
        side.addStretch(1)
        walk = QHBoxLayout()
        walk.addWidget(QLabel("Axis"))
        walk.addWidget(self.axis)
        walk.addWidget(self.slider, 1)
        walk.addWidget(self.plane_label)
        if self.data.shape[3] > 1:
            walk.addWidget(self.channel)
        left = QVBoxLayout()
        left.addWidget(self.view, 1)
        left.addLayout(walk)
        body = QHBoxLayout()
        body.addLayout(left, 1)
        panel = QWidget()  # at most SIDE_WIDTH: long messages wrap instead of narrowing the picture
        panel.setLayout(side)
        panel.setMaximumWidth(SIDE_WIDTH)
        body.addWidget(panel)
        central = QWidget()
        central.setLayout(body)
        self.setCentralWidget(central)

        self.export_action = QAction("&Export denoised volume...", self)
        self.export_action.setShortcut(QKeySequence("Ctrl+E"))
        self.export_action.triggered.connect(self.export)
        close = QAction("&Close", self)
        close.setShortcut(QKeySequence.StandardKey.Close)
        close.triggered.connect(self.close)
        open_file = QAction("&Open…", self)
        open_file.setShortcut(QKeySequence.StandardKey.Open)
        open_file.triggered.connect(lambda: self.open_requested.emit(self.path.parent))
        self.reference_action = QAction("Open &reference volume…", self)
        self.reference_action.setToolTip("The same volume without noise: each preview says its PSNR against it")
        self.reference_action.triggered.connect(self._choose_reference)
        menu = self.menuBar().addMenu("&File")
        menu.addAction(open_file)
        menu.addAction(self.reference_action)
        menu.addAction(self.export_action)
        menu.addAction(close)
        self.view_actions = ViewActions(self, self.view)  # V, B, D, F and 1, as in the main window
        self.view_actions.add_to(self.menuBar().addMenu("&View"))
        self.type_h_action = QAction("Type h (the strength)", self)
        self.type_h_action.setShortcut(QKeySequence("H"))
        self.type_h_action.triggered.connect(self._type_h)
        self.region_action = QAction("Draw a noise region", self)
        self.region_action.setShortcut(QKeySequence("N"))
        self.region_action.setToolTip("Drag a rectangle over a flat part of the plane: h follows the noise there")
        self.region_action.triggered.connect(self.view.start_drawing_region)
        self.view.region_drawn.connect(self._region_drawn)
        filter_menu = self.menuBar().addMenu("F&ilter")
        filter_menu.addAction(self.type_h_action)
        filter_menu.addAction(self.region_action)

        self.axis.currentIndexChanged.connect(self._axis_changed)
        self.slider.valueChanged.connect(self._plane_changed)
        self.h.valueChanged.connect(self._h_changed)
        for radii in (self.patch, self.search):
            radii.changed.connect(self._delay.start)
            radii.per_axis_wanted.connect(lambda: self.per_axis.setChecked(True))
        self.per_axis.toggled.connect(self._per_axis_toggled)
        for setting in (self.weighting.currentIndexChanged, self.center.currentIndexChanged, self.patch.changed):
            setting.connect(self._filter_changed)
        self.channel_mode.currentIndexChanged.connect(self._channels_changed)
        self.channel.currentIndexChanged.connect(self._channels_changed)
        for combo in (self.weighting, self.center):
            combo.currentIndexChanged.connect(self._delay.start)
        keys = SpinBoxKeys(self.slider)  # Ctrl+E from a spin box; Return gives the keys back to the planes
        for spin in (self.h, *self.patch.spins, *self.search.spins):
            spin.installEventFilter(keys)
        self.view.setFocusProxy(self.slider)  # a click on the picture gives the keys to the planes
        self.axis.installEventFilter(_PlaneKeys(self.slider))
        self._axis_changed(0)

    @property
    def shown_channels(self) -> list[int]:
        """The channels the view shows: all three as RGB, or one."""
        index = self.channel.currentIndex()
        if self.data.shape[3] == 3:
            return [0, 1, 2] if index == 0 else [index - 1]
        return [index]

    def _per_axis_toggled(self, per_axis: bool) -> None:
        for radii in (self.patch, self.search):
            radii.set_per_axis(per_axis)

    def _type_h(self) -> None:
        """The h box takes the keys, its value selected: type a number and Enter (as in the main window)."""
        self.h.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.h.selectAll()

    def _region_drawn(self, box: tuple[int, int, int, int]) -> None:
        """The noise of the drawn box, REGION_DEPTH planes either side, sets every h."""
        axis, index = self.plane_index
        region = self.layouts[axis].region(box, index, self.data.shape, REGION_DEPTH)
        try:
            estimate = estimate_volume_noise(self.data, region=region)
        except ValueError as error:
            self.status.setText(f"Cannot measure the noise there: {error}; draw a larger region.")
            return
        where = ", ".join(f"{name} {start + 1}-{stop}" for name, (start, stop) in zip(ARRAY_AXES, region, strict=True))
        self.strengths.use_region(estimate, where)
        self._show_h()
        self._describe_noise()
        self._delay.start()

    def _choose_reference(self) -> None:
        """Ask for the clean volume; previews then say their PSNR against it."""
        path, _ = QFileDialog.getOpenFileName(
            self, "Open the clean reference volume", str(self.path.parent), f"Volumes (*{' *'.join(VOLUME_SUFFIXES)})"
        )
        if not path:
            return
        try:
            reference = np.asarray(read_volume(path).data, dtype=np.float32)
        except (ValueError, OSError) as error:
            QMessageBox.warning(self, "Reference not opened", f"{Path(path).name} cannot be read: {error}")
            return
        reference = reference if reference.ndim == 4 else reference[..., np.newaxis]
        if reference.shape != self.data.shape:
            QMessageBox.warning(
                self,
                "Reference not opened",
                f"{Path(path).name} is {_voxels(reference.shape)}, this volume {_voxels(self.data.shape)}: the "
                "reference must be the same volume without its noise.",
            )
            return
        self.reference = reference
        self.request_preview()

    def _h_changed(self, value: float) -> None:
        self.strengths.set_h(self.shown_channels, value)
        self._describe_noise()  # says where h is far from the noise's
        self._delay.start()

    def _show_h(self) -> None:
        """The box shows the h of the shown channel (the shared one where filtered together), to
        SIGNIFICANT digits whatever the volume's units (h 0.0003 of a volume in 0..0.01 was 0.000)."""
        h = self.strengths.h(self.shown_channels[0])
        decimals = min(H_DECIMALS_MAX, max(1, SIGNIFICANT - 1 - math.floor(math.log10(h))))
        self.h.blockSignals(True)
        self.h.setDecimals(decimals)
        self.h.setMinimum(10.0**-decimals)  # the least h the box shows: a typed 0 is refused, not 0.00
        self.h.setValue(h)
        self.h.blockSignals(False)

    def _filter_changed(self, *_: object) -> None:
        """Each h takes its noise's suggestion for the new weighting, centre weight or patch
        radius, unless the user set their own."""
        self.strengths.set_settings(
            weighting=self.weighting.currentText(),
            center_weight=self.center.currentText(),
            patch_radius=self.patch.value(),
        )
        self._show_h()
        self._describe_noise()

    def _channels_changed(self, *_: object) -> None:
        """Another channel shown, or the channels filtered otherwise: its h, noise and planes."""
        self.strengths.mode = self.channel_mode.currentText()
        self._show_h()
        self._describe_noise()
        self._show_other_plane()

    def _describe_noise(self) -> None:
        self.noise.setText(self.strengths.describe(self.shown_channels))

    # The plane and its preview

    @property
    def plane_index(self) -> tuple[int, int]:
        """(axis, index) of the shown plane."""
        return self.axis.currentIndex(), self.slider.value()

    def _axis_changed(self, axis: int) -> None:
        size = self.data.shape[axis]
        layout = self.layouts[axis]
        self.view.set_pixel_aspect(layout.pixel_aspect(self.file.spacing))
        self.view.set_edge_letters(layout.edges)
        self.plane_label.setToolTip(layout.description)
        self.slider.blockSignals(True)
        self.slider.setRange(0, size - 1)
        self.slider.setValue(size // 2)
        self.slider.blockSignals(False)
        self._plane_changed()

    def _plane_changed(self, *_: object) -> None:
        axis, index = self.plane_index
        self.plane_label.setText(f"{ARRAY_AXES[axis]} {index + 1} / {self.data.shape[axis]}")
        self.view.clear_roi()  # a drawn region was on another plane (its noise still sets h)
        self._show_other_plane()

    def _show_other_plane(self) -> None:
        """Another plane or channel: shown at once, its preview to come; the preview of the one
        shown before, still running or queued, is dropped (it showed beside the new plane)."""
        self._latest = next(self._requests)
        self.worker_thread.worker.drop_pending("preview")  # not run: it would be dropped on arrival
        self._show_plane()
        self._delay.start()

    def _show_plane(self, after: np.ndarray | None = None) -> None:
        """The shown channels of the plane before filtering, and ``after`` (the same channels
        filtered) or the plane itself until its preview comes."""
        axis, index = self.plane_index
        channels = self.shown_channels
        low, high = (self.low, self.high) if len(channels) == 3 else self.levels[channels[0]]
        plane = self.layouts[axis].of(self.data, index)[..., channels]
        before = display_plane(plane[..., 0] if len(channels) == 1 else plane, low, high)
        shown = before if after is None else display_plane(after, low, high)
        self.view.set_images(before, shown)

    def settings(self) -> dict:
        """The filter's settings as ``denoise_volume`` takes them."""
        return {
            "h": self.strengths.strengths(),
            "patch_radius": self.patch.value(),
            "search_radius": self.search.value(),
            "weighting": self.weighting.currentText(),
            "center_weight": self.center.currentText(),
            "backend": self.backend,
            "channels": self.strengths.mode,
        }

    def request_preview(self) -> None:
        """Filter the slab around the shown plane in the background; the latest request wins."""
        self._delay.stop()
        if self._closed:
            return
        number = self._latest = next(self._requests)
        axis, index = self.plane_index
        request = PlanePreviewRequest(axis, index, tuple(self.shown_channels), self.settings(), self.layouts[axis])
        self.status.setText("Filtering the slab around this plane...")
        self.worker_thread.worker.submit(number, request)

    def _show_preview(self, number: int, plane: np.ndarray, seconds: float) -> None:
        if number != self._latest:
            return
        self._show_plane(plane)
        self.status.setText(
            f"Preview of this plane: {seconds:.2f} s (the slab around it, filtered in 3D).{self._psnr_text(plane)}"
        )

    def _psnr_text(self, after: np.ndarray) -> str:
        """The shown plane's PSNR against the reference's, before and after the filter ("" without one), in dB
        of the shown channels' range in the whole reference (a dim channel's own, not the brightest's)."""
        if self.reference is None:
            return ""
        axis, index = self.plane_index
        channels = self.shown_channels
        clean, before = (self.layouts[axis].of(volume, index)[..., channels] for volume in (self.reference, self.data))
        after = after.reshape(clean.shape)
        shown = self.reference[..., channels]
        peak = float(shown.max() - shown.min()) or 1.0
        return (
            f" PSNR against the reference: {psnr(clean, before, peak):.2f} dB noisy, "
            f"{psnr(clean, after, peak):.2f} dB denoised."
        )

    def _preview_compiling(self, number: int) -> None:
        if number == self._latest:
            self.status.setText(COMPILING)

    def _preview_failed(self, number: int, message: str) -> None:
        if number == self._latest:
            self.status.setText(f"Cannot preview: {message}")
            self._show_plane()  # not the last preview that worked, with other settings

    # Export

    def export(self) -> None:
        """Ask where, then filter the whole volume in the background and write it there."""
        suffix = next(s for s in sorted(VOLUME_SUFFIXES, key=len, reverse=True) if self.path.name.lower().endswith(s))
        proposed = self.path.with_name(self.path.name[: -len(suffix)] + "-denoised" + suffix)
        target, _ = QFileDialog.getSaveFileName(
            self, "Export the denoised volume", str(proposed), f"Volumes (*{' *'.join(VOLUME_SUFFIXES)})"
        )
        if not target:
            return
        try:  # before the whole volume is filtered, not after
            check_volume_output(target, self.path, overwrite=True)  # the dialog asked about replacing it
        except ValueError as error:
            QMessageBox.warning(self, "Export refused", f"The volume was not written: {error}")
            return
        self._progress = QProgressDialog("Denoising the volume...", "Cancel", 0, 100, self)
        self._progress.setWindowModality(Qt.WindowModality.WindowModal)
        self._progress.canceled.connect(self._cancel)
        self._progress.show()
        self.export_action.setEnabled(False)
        self._export_number = next(self._requests)
        request = VolumeExportRequest(Path(target), self.settings(), self.file)
        self.worker_thread.worker.submit(self._export_number, request)

    def _cancel(self) -> None:
        self.worker_thread.worker.cancel(self._export_number)

    def _export_progress(self, number: int, done: int, total: int) -> None:
        if number == self._export_number and self._progress is not None and total:
            self._progress.setValue(int(100 * done / total))

    def _export_finished(self) -> None:
        """The export ended (done, failed or cancelled): its progress closes and Export is offered again.

        Its outcome is said in the status bar (a failure in a message box), not in ``status``, the
        previews' line: a preview ending just after an export replaced "Exported ..." there.
        """
        if self._progress is not None:
            self._progress.reset()
            self._progress = None
        self.export_action.setEnabled(True)

    def _export_done(self, number: int, target: str) -> None:
        self._export_finished()
        self.statusBar().showMessage(f"Exported {target}")

    def _export_failed(self, number: int, message: str) -> None:
        self._export_finished()
        QMessageBox.warning(self, "Export failed", f"The volume was not written: {message}")

    def _export_cancelled(self, number: int) -> None:
        self._export_finished()
        self.statusBar().showMessage("Export cancelled: nothing was written.")

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt's name)
        if self._progress is not None and not stop_exports_asked(self, 1):
            event.ignore()  # the export runs on
            return
        self._closed = True  # a setting's change (an edit ended by the closing) starts no preview now
        self._delay.stop()
        self._latest = -1  # answers already on their way are dropped
        self.worker_thread.stop()  # the running export, if any, stops at its next slab; joined here
        super().closeEvent(event)


def _voxels(shape: tuple[int, ...]) -> str:
    """A (Z, Y, X, C) shape in words: "20 x 18 x 16 voxels (z, y, x), 2 channels"."""
    channels = f", {shape[3]} channels" if shape[3] > 1 else ""
    return f"{shape[0]} x {shape[1]} x {shape[2]} voxels (z, y, x){channels}"


def _double_spin(low: float, high: float, value: float, tip: str) -> QDoubleSpinBox:
    spin = QDoubleSpinBox()
    spin.setDecimals(3)
    spin.setRange(low, high)
    spin.setValue(value)
    spin.setToolTip(tip)
    return spin


def _combo(items: tuple[str, ...], value: str) -> QComboBox:
    combo = QComboBox()
    combo.addItems(list(items))
    combo.setCurrentText(value)
    return combo
