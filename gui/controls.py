"""The filter's controls: sliders and spin boxes kept in sync, with the engine's own help texts."""

from __future__ import annotations

import re

import numpy as np
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QPushButton,
    QSlider,
    QStyle,
    QStyleOptionSlider,
    QWidget,
)

from nlmeans_studio.engine import (
    CENTER_WEIGHTS,
    FRAMES_MAX,
    PATCH_RADIUS_MAX,
    SEARCH_RADIUS_MAX,
    WEIGHTINGS,
    NLMParams,
    gpu_unavailable_reason,
)

MARKED_COLOR = QColor(255, 170, 0, 150)
H_RANGE = (0.5, 150.0)  # 8-bit levels offered by the h slider
H_STEPS = 10  # slider positions per level
AUTO_TEXT = "Auto (from the noise)"  # the auto item's text, followed by the mode once chosen: ": Y'CbCr" or ": RGB"
YCBCR, RGB = "Y'CbCr", "RGB"  # where auto filters: the modes ``set_auto_mode`` takes
LUMA_CHROMA_MODES = (("Off", "off"), (AUTO_TEXT, "auto"), ("Strengths given", "given"))
LUMA_CHROMA_HELP = (
    "Filter a colour clip in Y'CbCr (the clip's matrix) with a strength for Y and one for Cb and Cr, as "
    "restorers treat chroma noise apart from luma noise. Auto (the default): both follow the noise, as h "
    "does, and h and the color decorrelation are then not used; where SURE finds on the clip that its own "
    'channels filter better, it reads "RGB" and h follows the noise instead (for RGB sources: a Y\'CbCr source '
    "stays in Y'CbCr, which keeps its super-whites). A gray clip is filtered as it is."
)


def parameter_help() -> dict[str, str]:
    """NLMParams' docstring, one sentence-level text per field, for the tooltips."""
    section = NLMParams.__doc__.split("Parameters\n    ----------\n")[1].split("\n\n    Raises")[0]
    entries = re.split(r"\n    (?=\w+ : )", "\n    " + section.strip())
    help_texts = {}
    for entry in filter(None, (e.strip() for e in entries)):
        name, _, body = entry.partition(" : ")
        description = body.split("\n", 1)[1] if "\n" in body else ""
        help_texts[name] = " ".join(description.split())
    return help_texts


class Timeline(QSlider):
    """The clip's frame slider and its in and out marks, the frames between them drawn along its groove.

    The marks are the range played and exported; ``marks_changed`` is emitted when they move.
    The slider is disabled until ``set_frame_count`` gives it a clip.
    """

    marks_changed = Signal()

    def __init__(self) -> None:
        super().__init__(Qt.Orientation.Horizontal)
        self.frame_count = 0
        self.mark_in: int | None = None
        self.mark_out: int | None = None
        self.setEnabled(False)

    def set_frame_count(self, count: int, index: int = 0) -> None:
        """A clip of ``count`` frames: the slider spans it, at frame ``index`` (or its last),
        without emitting ``valueChanged``."""
        self.frame_count = count
        self.blockSignals(True)
        self.setRange(0, count - 1)
        self.setValue(min(index, count - 1))
        self.blockSignals(False)
        self.setEnabled(True)

    def show_frame(self, index: int) -> None:
        """Move to ``index`` as playback shows it, without emitting ``valueChanged`` (a move by
        the user stops playback)."""
        self.blockSignals(True)
        self.setValue(index)
        self.blockSignals(False)

    def set_mark(self, which: str) -> None:
        """Mark the current frame as the first ("in") or last ("out") of the range; a mark on
        the wrong side of it is cleared."""
        index = self.value()
        if which == "in":
            self.mark_in = index
            if self.mark_out is not None and self.mark_out < index:
                self.mark_out = None
        else:
            self.mark_out = index
            if self.mark_in is not None and self.mark_in > index:
                self.mark_in = None
        self._marks_moved()

    def set_marks(self, mark_in: int | None, mark_out: int | None) -> None:
        """Both marks at once (None: not set), as a clip's saved settings have them; a mark past
        the clip's last frame is not set (the file was made shorter since)."""
        self.mark_in, self.mark_out = (
            None if mark is None or mark >= self.frame_count else mark for mark in (mark_in, mark_out)
        )
        self._marks_moved()

    def play_range(self) -> tuple[int, int]:
        """The frames between the marks: (first, last + 1); the whole clip without marks."""
        first = self.mark_in or 0
        stop = self.frame_count if self.mark_out is None else self.mark_out + 1
        return first, stop

    @property
    def marked(self) -> tuple[int, int] | None:
        """The marked frames (first, last), both included; None without marks."""
        if self.mark_in is None and self.mark_out is None:
            return None
        first, stop = self.play_range()
        return first, stop - 1

    def _marks_moved(self) -> None:
        self.update()
        self.marks_changed.emit()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt's naming)
        marked = self.marked
        if marked is not None and self.maximum() > self.minimum():
            option = QStyleOptionSlider()
            self.initStyleOption(option)
            style = self.style()
            groove = style.subControlRect(
                QStyle.ComplexControl.CC_Slider, option, QStyle.SubControl.SC_SliderGroove, self
            )
            handle = style.subControlRect(
                QStyle.ComplexControl.CC_Slider, option, QStyle.SubControl.SC_SliderHandle, self
            )
            span = groove.width() - handle.width()
            left, right = (
                groove.left()
                + handle.width() / 2
                + QStyle.sliderPositionFromValue(self.minimum(), self.maximum(), value, span)
                for value in marked
            )
            painter = QPainter(self)
            painter.fillRect(QRectF(left, groove.top() - 3, max(2.0, right - left), groove.height() + 6), MARKED_COLOR)
            painter.end()
        super().paintEvent(event)  # the handle over the marks


class LinkedSlider(QWidget):
    """A slider and a spin box showing one value; ``scale`` slider steps per unit.
    ``valueChanged`` on any change, ``edited`` when a person moved or typed it.

    ``value`` is the value set, not its rounding to the spin box's decimals: a strength the
    noise suggests filters the preview and the export as the command line filters it.
    """

    valueChanged = Signal(float)  # noqa: N815 (Qt's naming)
    edited = Signal()

    def __init__(self, low: float, high: float, *, scale: int = 1, decimals: int = 0) -> None:
        super().__init__()
        self._scale = scale
        self._value = low
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(round(low * scale), round(high * scale))
        self.spin = QDoubleSpinBox()
        self.spin.setRange(low, high)
        self.spin.setDecimals(decimals)
        self.spin.setSingleStep(1 / scale if decimals else 1)
        self.spin.setKeyboardTracking(False)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.spin)
        self.slider.valueChanged.connect(self._dragged)
        self.spin.valueChanged.connect(self._typed)

    def value(self) -> float:
        return self._value

    def setValue(self, value: float) -> None:  # noqa: N802 (Qt's naming)
        whole = self.spin.decimals() == 0
        value = min(max(float(round(value)) if whole else value, self.spin.minimum()), self.spin.maximum())
        changed = abs(value - self._value) > 1e-9
        self._value = value
        for widget, shown in ((self.spin, value), (self.slider, round(value * self._scale))):
            widget.blockSignals(True)
            widget.setValue(shown)
            widget.blockSignals(False)
        if changed:
            self.valueChanged.emit(value)

    def _dragged(self, position: int) -> None:
        """The slider moved (dragged, clicked, keys; ``setValue`` moves it with its signals off)."""
        self.setValue(position / self._scale)
        self.edited.emit()

    def _typed(self, value: float) -> None:
        """The spin box changed (typed, arrows, keys): it already shows ``value``; move the slider."""
        self._value = value
        self.slider.blockSignals(True)
        self.slider.setValue(round(value * self._scale))
        self.slider.blockSignals(False)
        self.valueChanged.emit(value)
        self.edited.emit()

    def setToolTip(self, text: str) -> None:  # noqa: N802 (Qt's naming)
        for widget in (self, self.slider, self.spin):
            QWidget.setToolTip(widget, text)


class ParameterPanel(QGroupBox):
    """h, radii, frames, weighting, luma/chroma, backend and color decorrelation.

    Emits ``changed`` on any edit, ``luma_chroma_mode_changed`` when the luma/chroma mode is
    another, and ``reset_requested`` for "Reset to suggested" (what is suggested depends on the
    noise, which the panel does not know). The color transform offered for decorrelation comes
    from the noise estimate (``offer_decorrelation``); ``params`` carries it while decorrelation
    is ticked.
    """

    changed = Signal()
    luma_chroma_mode_changed = Signal()
    reset_requested = Signal()

    def __init__(self) -> None:
        super().__init__("Filter")
        help_texts = parameter_help()
        self.h = LinkedSlider(*H_RANGE, scale=H_STEPS, decimals=1)
        self.patch_radius = LinkedSlider(0, PATCH_RADIUS_MAX)
        self.search_radius = LinkedSlider(0, SEARCH_RADIUS_MAX)
        self.frames_past = LinkedSlider(0, FRAMES_MAX)
        self.frames_future = LinkedSlider(0, FRAMES_MAX)
        self.weighting = QComboBox()
        self.weighting.addItems(WEIGHTINGS)
        self.center_weight = QComboBox()
        self.center_weight.addItems(CENTER_WEIGHTS)
        self.backend = QComboBox()
        self.luma_chroma = QComboBox()
        for text, mode in LUMA_CHROMA_MODES:
            self.luma_chroma.addItem(text, mode)
        self.luma_chroma.setToolTip(LUMA_CHROMA_HELP)
        self.h_luma = LinkedSlider(*H_RANGE, scale=H_STEPS, decimals=1)
        self.h_luma.setToolTip("Strength for Y (luma), in 8-bit levels")
        self.h_chroma = LinkedSlider(*H_RANGE, scale=H_STEPS, decimals=1)
        self.h_chroma.setToolTip("Strength for Cb and Cr (chroma), in 8-bit levels")
        self._strengths_found = False  # the two strengths came from a noise estimate, or a person gave them
        self._auto_mode: str | None = None  # where auto filters (YCBCR or RGB); None: not chosen yet (Y'CbCr)
        self.decorrelate = QCheckBox("Color decorrelation (G from the noise estimate)")
        self.decorrelate.setEnabled(False)
        self._color_transform: np.ndarray | None = None  # the noise estimate's G, if it has one
        self.decorrelate.setToolTip(
            "Measure patch distances on G Y, where the estimated noise is white. Needs a noise estimate."
        )
        self.reset = QPushButton("Reset to suggested")
        self.reset.setToolTip("h and color decorrelation from the noise estimate; radii and frames to the defaults")
        self.gpu_note = gpu_unavailable_reason()
        self.backend.addItem("GPU" if self.gpu_note is None else "GPU (unavailable)", "gpu")
        self.backend.addItem("CPU", "cpu")
        self.backend.setCurrentIndex(0 if self.gpu_note is None else 1)
        self.backend.model().item(0).setEnabled(self.gpu_note is None)
        self.backend.setToolTip(
            "Where the filter runs." + (f" The GPU is unavailable: {self.gpu_note}" if self.gpu_note else "")
        )
        form = QFormLayout(self)
        rows = [
            ("h (levels)", self.h, "h"),
            ("Patch radius B", self.patch_radius, "patch_radius"),
            ("Search radius A", self.search_radius, "search_radius"),
            ("Past frames", self.frames_past, "frames_past"),
            ("Future frames", self.frames_future, "frames_future"),
            ("Weighting", self.weighting, "weighting"),
            ("Centre weight", self.center_weight, "center_weight"),
        ]
        for label, widget, name in rows:
            widget.setToolTip(help_texts[name])
            form.addRow(label, widget)
        self._form = form  # its luma/chroma rows are shown only while that mode is on
        form.addRow("Luma/chroma", self.luma_chroma)
        form.addRow("h luma (levels)", self.h_luma)
        form.addRow("h chroma (levels)", self.h_chroma)
        form.addRow("Backend", self.backend)
        form.addRow(self.decorrelate)
        form.addRow(self.reset)
        sliders = (self.h, self.patch_radius, self.search_radius, self.frames_past, self.frames_future)
        for slider in (*sliders, self.h_luma, self.h_chroma):
            slider.valueChanged.connect(self.changed)
        for combo in (self.weighting, self.center_weight, self.backend, self.luma_chroma):
            combo.currentIndexChanged.connect(self.changed)
        self.luma_chroma.currentIndexChanged.connect(self._luma_chroma_mode_chosen)
        for strength in (self.h_luma, self.h_chroma):
            strength.edited.connect(self._luma_chroma_strength_typed)
        self.decorrelate.toggled.connect(self.changed)
        self.reset.clicked.connect(self.reset_requested)
        self.set_params(NLMParams())
        self.luma_chroma.setCurrentIndex(self.luma_chroma.findData("auto"))  # the default filter, for colour clips
        self._show_luma_chroma_mode()

    def set_params(self, params: NLMParams) -> None:
        """Show ``params`` (the color transform is the noise estimate's) and emit ``changed`` once."""
        self.blockSignals(True)
        self.h.setValue(min(max(params.h, H_RANGE[0]), H_RANGE[1]))
        self.patch_radius.setValue(params.patch_radius)
        self.search_radius.setValue(params.search_radius)
        self.frames_past.setValue(params.frames_past)
        self.frames_future.setValue(params.frames_future)
        self.weighting.setCurrentText(params.weighting)
        self.center_weight.setCurrentText(params.center_weight)
        self.blockSignals(False)
        self.changed.emit()

    def set_h(self, h: float) -> None:
        """Show strength ``h`` in levels (within the slider's range); ``changed`` if it moved."""
        self.h.setValue(min(max(h, H_RANGE[0]), H_RANGE[1]))

    def params(self) -> NLMParams:
        """The parameters shown, with the offered color transform when decorrelation is ticked."""
        return NLMParams(
            h=self.h.value(),
            patch_radius=int(self.patch_radius.value()),
            search_radius=int(self.search_radius.value()),
            frames_past=int(self.frames_past.value()),
            frames_future=int(self.frames_future.value()),
            weighting=self.weighting.currentText(),
            center_weight=self.center_weight.currentText(),
            color_transform=self._color_transform if self.decorrelate.isChecked() else None,
        )

    def luma_chroma_mode(self) -> str | tuple[float, float] | None:
        """None (off), "auto", or the strengths given (h_luma, h_chroma)."""
        mode = self.luma_chroma.currentData()
        if mode == "given":
            return self.h_luma.value(), self.h_chroma.value()
        return None if mode == "off" else mode

    def luma_chroma_text(self) -> str:
        """The mode as presets and the CLI write it: off, auto or H_Y,H_UV."""
        mode = self.luma_chroma_mode()
        return "off" if mode is None else mode if isinstance(mode, str) else f"{mode[0]:g},{mode[1]:g}"

    def set_luma_chroma_mode(self, mode: str | tuple[float, float] | None) -> None:
        """Show ``mode`` (as ``luma_chroma_mode`` returns it): ``luma_chroma_mode_changed`` if it
        is another, then ``changed`` once."""
        before = self.luma_chroma.currentIndex()
        self.blockSignals(True)
        if isinstance(mode, tuple):
            self.set_luma_chroma_h(*mode)
        self.luma_chroma.setCurrentIndex(
            self.luma_chroma.findData("off" if mode is None else mode if isinstance(mode, str) else "given")
        )
        self.blockSignals(False)
        if self.luma_chroma.currentIndex() != before:
            self.luma_chroma_mode_changed.emit()
        self.changed.emit()

    def filters_in_ycbcr(self) -> bool:
        """Whether the filter shown runs in Y'CbCr: the mode on with strengths given, or auto unless
        it chose RGB for the noise (``set_auto_mode``)."""
        mode = self.luma_chroma.currentData()
        return mode == "given" or (mode == "auto" and self._auto_mode != RGB)

    def set_auto_mode(self, mode: str | None) -> None:
        """Where the mode auto filters for the noise in use: YCBCR, or RGB with h; None while no
        noise is known. Its item reads "Auto (from the noise): RGB" and so on. Emits nothing: the
        caller previews once the noise is applied."""
        self._auto_mode = mode
        self.luma_chroma.setItemText(self.luma_chroma.findData("auto"), AUTO_TEXT + (f": {mode}" if mode else ""))
        self._show_luma_chroma_mode()

    def luma_chroma_h(self) -> tuple[float, float]:
        """The two strengths shown (h_luma, h_chroma) in levels: given, or those auto found."""
        return self.h_luma.value(), self.h_chroma.value()

    def set_luma_chroma_h(self, h_luma: float, h_chroma: float) -> None:
        """Show the two strengths (those auto found, or given), within the sliders' range."""
        self._strengths_found = True
        self._show_pending_strengths()
        for slider, value in ((self.h_luma, h_luma), (self.h_chroma, h_chroma)):
            slider.setValue(min(max(value, H_RANGE[0]), H_RANGE[1]))

    def offer_decorrelation(self, transform: np.ndarray | None, ticked: bool = False) -> None:
        """The noise estimate's color transform G (None: none to offer, decorrelation greyed out)
        and whether decorrelation is ticked, as the estimate suggests. Emits nothing: the caller
        asks for a new preview once the rest of the estimate is applied."""
        self._color_transform = transform
        self.decorrelate.blockSignals(True)
        self.decorrelate.setChecked(ticked and transform is not None)
        self.decorrelate.blockSignals(False)
        self._show_luma_chroma_mode()

    def _luma_chroma_mode_chosen(self) -> None:
        self._show_luma_chroma_mode()
        self.luma_chroma_mode_changed.emit()

    def _luma_chroma_strength_typed(self) -> None:
        """A person set a strength while auto chose them: from now on they are given."""
        self._strengths_found = True
        if self.luma_chroma.currentData() == "auto":
            self.luma_chroma.setCurrentIndex(self.luma_chroma.findData("given"))

    def _show_luma_chroma_mode(self) -> None:
        """The two strengths are shown while the filter runs in Y'CbCr, h while it runs in RGB (the
        noise panel's last lines fell below the window's fold, and a greyed h beside them read as a
        third strength); typing one while auto chose them makes them given. Decorrelation is
        unused in Y'CbCr."""
        ycbcr = self.filters_in_ycbcr()
        for strength in (self.h_luma, self.h_chroma):
            self._form.setRowVisible(strength, ycbcr)
            strength.setEnabled(ycbcr)
        self._form.setRowVisible(self.h, not ycbcr)
        self.h.setEnabled(not ycbcr)
        self.decorrelate.setEnabled(not ycbcr and self._color_transform is not None)
        self._show_pending_strengths()

    def _show_pending_strengths(self) -> None:
        """Auto's strengths read "auto" until a noise estimate finds them, not the sliders' least value."""
        pending = self.luma_chroma.currentData() == "auto" and not self._strengths_found
        for strength in (self.h_luma, self.h_chroma):
            strength.spin.setSpecialValueText("auto" if pending else "")

    def backend_name(self) -> str:
        """Where the filter runs: "gpu" or "cpu"."""
        return self.backend.currentData()

    def set_backend(self, name: str) -> None:
        """Run the filter on ``name`` ("gpu" or "cpu") from now on; ``changed`` if it is another."""
        self.backend.setCurrentIndex(self.backend.findData(name))
