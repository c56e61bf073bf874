"""Single-key shortcuts (Space, V, Left…) that work while a spin box has the focus."""

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
