"""What a person's hands do to the window under test: keys, clicks, typing and drags.

A module of its own rather than the conftest: every test folder's conftest.py is imported as
"conftest", so a test importing helpers from one may get the other.

Tests drive the window through what a person touches (actions, keys sent to the window, clicks
on buttons, mouse drags on the picture) and wait on what the window shows, never on the worker's
signals: qtbot.waitSignal would run its callback on the worker's thread.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PySide6", reason="the window needs PySide6")

av = pytest.importorskip("av", reason="the window opens videos with PyAV")

from clips import write_ffv1 as write_clip  # noqa: E402, F401 (re-exported: the window's tests write clips with it)
from PySide6.QtCore import QPoint, QPointF, Qt, QTimer  # noqa: E402
from PySide6.QtGui import QWheelEvent  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import (  # noqa: E402
    QAbstractSpinBox,
    QApplication,
    QMessageBox,
    QStyle,
    QStyleOptionSpinBox,
)

WAIT_MS = 20000  # CPU previews of a tiny clip take milliseconds; first ones compile numba code
# A clip's first filtered preview waits for its noise estimate and SURE's searches (its frame shows
# unfiltered meanwhile): 7-10 s alone for noise in a 4:2:2 clip's samples, over 20 under CI's load.
OPEN_WAIT_MS = 60000


def clip_frames(seed: int = 0) -> np.ndarray:
    """12 frames of 64 x 96: gray with a little texture and a moving bright square."""
    rng = np.random.default_rng(seed)
    frames = np.full((12, 64, 96, 3), 110, np.uint8) + rng.integers(0, 3, (1, 64, 96, 3), dtype=np.uint8)
    for t in range(12):
        frames[t, 20:40, 10 + 3 * t : 30 + 3 * t] = (200, 180, 90)
    return frames


def opened(qtbot, window, path) -> None:
    """Open ``path`` and wait for its first preview filtered, after its noise estimate."""
    window.open_clip(path)
    qtbot.waitUntil(lambda: window.path == path and window.preview is not None, timeout=OPEN_WAIT_MS)
    settle(qtbot, window, OPEN_WAIT_MS)


def add_synthetic_noise(qtbot, window, sigma: float = 25, correlation: float = 0.0, seed: int = 0) -> None:
    """Set the synthetic noise's controls and tick "Add synthetic noise", as a person does."""
    window.noise.sigma.setValue(sigma)
    window.noise.correlation.setValue(correlation)
    window.noise.seed.setValue(seed)
    if not window.noise.synthetic.isChecked():
        qtbot.mouseClick(window.noise.synthetic, Qt.MouseButton.LeftButton)
    settle(qtbot, window)


def settle(qtbot, window, timeout: int = WAIT_MS) -> None:
    """Wait until the latest preview asked for is on screen and the engine is idle (``timeout`` ms at most)."""
    qtbot.waitUntil(
        lambda: (
            not window.debounce.isActive()
            and window._shown >= window._pending_preview > 0
            and not window.busy.isVisibleTo(window)
        ),
        timeout=timeout,
    )


def press(qtbot, window, key: Qt.Key, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    """A key pressed with the focus where it is (shortcuts included), as a person presses it."""
    target = window.focusWidget() or window
    qtbot.keyClick(target, key, modifier)


def type_into(qtbot, spin_box: QAbstractSpinBox, text: str) -> None:
    """Click into a spin box, select its text, type ``text`` and press Return."""
    qtbot.mouseClick(spin_box.lineEdit(), Qt.MouseButton.LeftButton)
    spin_box.lineEdit().selectAll()
    qtbot.keyClicks(spin_box.lineEdit(), text)
    qtbot.keyClick(spin_box.lineEdit(), Qt.Key.Key_Return)


def click_arrow(qtbot, spin_box: QAbstractSpinBox, up: bool = True) -> None:
    """A click on a spin box's up (or down) arrow."""
    option = QStyleOptionSpinBox()
    spin_box.initStyleOption(option)
    control = QStyle.SubControl.SC_SpinBoxUp if up else QStyle.SubControl.SC_SpinBoxDown
    rect = spin_box.style().subControlRect(QStyle.ComplexControl.CC_SpinBox, option, control, spin_box)
    qtbot.mouseClick(spin_box, Qt.MouseButton.LeftButton, pos=rect.center())


def frame_point(window, x: float, y: float, pane=None) -> QPoint:
    """Where frame pixel (x, y) is on the view's viewport, in the left pane (or ``pane``)."""
    pane = pane or window.view.main_view
    return window.view.mapFromScene(pane.mapViewToScene(QPointF(x, y)))


def drag(window, start: QPoint, end: QPoint, steps: int = 5) -> None:
    """A left-button drag on the picture, with the moves in between that a hand makes."""
    viewport = window.view.viewport()
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for step in range(1, steps + 1):
        point = start + (end - start) * step / steps
        QTest.mouseMove(viewport, point)
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, end)


def wheel(window, at: QPoint, steps: int) -> None:
    """Mouse-wheel steps (zoom in) with the pointer at ``at`` on the picture."""
    viewport = window.view.viewport()
    for _ in range(steps):
        event = QWheelEvent(
            QPointF(at),
            QPointF(viewport.mapToGlobal(at)),
            QPoint(0, 0),
            QPoint(0, 120),
            Qt.MouseButton.NoButton,
            Qt.KeyboardModifier.NoModifier,
            Qt.ScrollPhase.NoScrollPhase,
            False,
        )
        QApplication.sendEvent(viewport, event)


def answer_when_asked(qtbot, button: str) -> list[str]:
    """Click ``button`` of the next message box the window opens (a modal question, whose exec()
    runs its own event loop); the list gets the box's text once answered."""
    asked: list[str] = []

    def click() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, click)
            return
        asked.append(f"{box.text()} {box.informativeText()}")
        qtbot.mouseClick(next(b for b in box.buttons() if b.text() == button), Qt.MouseButton.LeftButton)

    QTimer.singleShot(0, click)
    return asked
