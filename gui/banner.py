"""The error banner above the picture: a message that never blocks, with an optional action button."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from .panels import wrapping_label


class ErrorBanner(QWidget):
    """Hidden until ``show_error``; Dismiss hides it again. The action's button runs the callback
    given with the message (e.g. "Use the CPU" after a GPU failure)."""

    def __init__(self) -> None:
        super().__init__()
        self.message = wrapping_label()
        self.message.setStyleSheet("background: #5a1d1d; color: white; padding: 6px")
        self.action = QPushButton()
        self.dismiss = QPushButton("Dismiss")
        self._callback: Callable[[], None] | None = None
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.message, 1)
        layout.addWidget(self.action)
        layout.addWidget(self.dismiss)
        self.dismiss.clicked.connect(self.hide)
        self.action.clicked.connect(lambda: self._callback and self._callback())
        self.hide()

    def show_error(
        self, message: str, action_text: str | None = None, action: Callable[[], None] | None = None
    ) -> None:
        """Show ``message``, and a button ``action_text`` that calls ``action`` when one is given."""
        self.message.setText(message)
        self.message.setToolTip(message)
        self._callback = action
        self.action.setVisible(action is not None)
        if action is not None:
            self.action.setText(action_text)
        self.show()

    def text(self) -> str:
        """The message shown (or last shown)."""
        return self.message.text()
