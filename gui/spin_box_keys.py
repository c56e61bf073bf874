"""Window shortcuts (Space, V, Left, Ctrl+E...) that work while a spin box has the focus."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QWidget

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
# Ctrl chords a focused spin box keeps: select all, copy, cut, paste, undo, redo and the word
# moves. Others go to the window's shortcuts (a line edit would take Ctrl+E as End under X11).
SPIN_BOX_CTRL_KEYS = {
    *(getattr(Qt.Key, f"Key_{letter}") for letter in "ACXVZY"),
    Qt.Key.Key_Left,
    Qt.Key.Key_Right,
    Qt.Key.Key_Backspace,
    Qt.Key.Key_Delete,
}


class SpinBoxKeys(QObject):
    """Lets the window's shortcuts through a focused spin box (except the keys and Ctrl chords
    that edit a number), and gives the focus back to ``picture`` when Return ends an edit."""

    def __init__(self, picture: QWidget) -> None:
        super().__init__(picture)
        self._picture = picture

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's naming)
        if not isinstance(event, QKeyEvent):
            return False
        modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        kept = {Qt.KeyboardModifier.NoModifier: SPIN_BOX_KEYS, Qt.KeyboardModifier.ControlModifier: SPIN_BOX_CTRL_KEYS}
        if event.type() == QEvent.Type.ShortcutOverride and modifiers in kept and event.key() not in kept[modifiers]:
            event.ignore()
            return True  # the spin box never claims the key: the shortcut runs
        ends_edit = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if not modifiers and event.type() == QEvent.Type.KeyPress and ends_edit:
            QTimer.singleShot(0, self._picture.setFocus)
        return False
