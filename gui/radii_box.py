"""A radius for the volume filter: one for every axis, or one per axis (z, y, x) for anisotropic
voxels, as ``denoise_volume`` takes it.

A first-time user typed "1,5,5" (the command line's z,y,x) into the window's search radius and
got 15, a 31^3 window. A comma typed in a radius box now goes on to the next axis's box, showing
the three boxes first: "1,5,5" is z 1, y 5, x 5, as on the command line.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSpinBox, QWidget

AXES = "zyx"


def radius_spin(high: int, value: int, tip: str) -> QSpinBox:
    """A spin box of 0..``high`` voxels."""
    spin = QSpinBox()
    spin.setRange(0, high)
    spin.setValue(value)
    spin.setToolTip(tip)
    return spin


class RadiiBox(QWidget):
    """One spin box (every axis) or three (z, y, x), per ``set_per_axis``; ``changed`` on any edit,
    ``per_axis_wanted`` when a comma is typed in the one box."""

    changed = Signal()
    per_axis_wanted = Signal()

    def __init__(self, high: int, value: int, tip: str) -> None:
        super().__init__()
        self.spins = [radius_spin(high, value, f"{tip}, along {axis}") for axis in AXES]
        self.labels = [QLabel(axis) for axis in AXES]
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        for label, spin in zip(self.labels, self.spins, strict=True):
            row.addWidget(label)
            row.addWidget(spin, 1)
            spin.valueChanged.connect(self._edited)
            spin.installEventFilter(self)
            spin.lineEdit().installEventFilter(self)
        self.spins[2].setToolTip(tip)
        self.per_axis = True  # built with three boxes shown: one from the start
        self.set_per_axis(False)

    def set_per_axis(self, per_axis: bool) -> None:
        """Three boxes, from the one radius; or one, the in-plane (x) radius for every axis."""
        if per_axis == self.per_axis:
            return
        self.per_axis = per_axis
        for widget in (*self.labels, *self.spins[:2]):
            widget.setVisible(per_axis)
        if not per_axis:
            self.setValue(self.spins[2].value())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's naming)
        """A comma goes on to the next axis's box, its number selected to be typed over; in the
        one box it first asks for the three (their values all the number typed so far, z's)."""
        if event.type() != QEvent.Type.KeyPress or event.key() != Qt.Key.Key_Comma:
            return False
        spin = next(s for s in self.spins if watched in (s, s.lineEdit()))
        if not self.per_axis:
            self.per_axis_wanted.emit()
            following = self.spins[1]  # the number typed is z's: y comes next
        elif spin is not self.spins[2]:
            following = self.spins[self.spins.index(spin) + 1]
        else:
            return True  # past x: nothing more to type
        following.setFocus()
        following.selectAll()
        return True

    def _edited(self, value: int) -> None:
        if not self.per_axis:  # the one box shown sets every axis
            self.setValue(value)
        else:
            self.changed.emit()

    def value(self) -> int | tuple[int, int, int]:
        """The radius for ``denoise_volume``: one int, or (z, y, x) where the axes differ."""
        radii = tuple(spin.value() for spin in self.spins)
        return radii[0] if len(set(radii)) == 1 else radii

    def setValue(self, value: int) -> None:  # noqa: N802 (as QSpinBox's)
        """The same radius on every axis, ``changed`` once."""
        for spin in self.spins:
            spin.blockSignals(True)
            spin.setValue(value)
            spin.blockSignals(False)
        self.changed.emit()
