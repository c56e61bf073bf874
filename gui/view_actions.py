"""The picture's view modes as a window's actions, shared by the main window and the volume window:
split, side by side, before, after and difference (checkable, one at a time), the toggles V
(split / side by side), B (flip before / after) and D (difference on / off), Fit (F) and 1:1.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QMenu, QStyle, QWidget

from .views import ComparisonView

MODE_NAMES = {
    "split": "Split",
    "side": "Side by side",
    "before": "Before",
    "after": "After",
    "difference": "Difference",
}


def window_action(
    window: QWidget,
    text: str,
    shortcut: str | None,
    slot: Callable[[], object],
    icon: QStyle.StandardPixmap | None = None,
) -> QAction:
    """An action of ``window`` with its shortcut in the tooltip; ``slot`` is called without
    arguments (not with ``checked``)."""
    action = QAction(text, window)
    if shortcut:
        action.setShortcut(QKeySequence(shortcut))
        action.setToolTip(f"{text.rstrip('…')} ({shortcut})")
    if icon is not None:
        action.setIcon(window.style().standardIcon(icon))
    action.triggered.connect(lambda: slot())
    window.addAction(action)
    return action


class ViewActions:
    """``view``'s modes and toggles as actions of ``window``; ``modes`` by mode name."""

    def __init__(self, window: QWidget, view: ComparisonView) -> None:
        self.view = view
        self.modes: dict[str, QAction] = {}
        group = QActionGroup(window)
        for mode, text in MODE_NAMES.items():
            action = window_action(window, text, None, lambda m=mode: self.set_mode(m))
            action.setCheckable(True)
            group.addAction(action)
            self.modes[mode] = action
        self.modes[view.mode].setChecked(True)
        self.split = window_action(window, "Split / side by side", "V", self.toggle_view)
        self.flip = window_action(window, "Flip before / after", "B", self.flip_before_after)
        self.difference = window_action(window, "Difference on / off", "D", self.toggle_difference)
        self.fit = window_action(window, "Fit", "F", view.fit)
        self.actual = window_action(window, "1:1", "1", view.actual_pixels)

    def set_mode(self, mode: str) -> None:
        """Show the frames as ``mode`` (split, side, before, after, difference); its entry ticked."""
        self.view.set_mode(mode)
        self.modes[mode].setChecked(True)

    def toggle_view(self) -> None:
        """Split, or side by side."""
        self.set_mode("side" if self.view.mode == "split" else "split")

    def flip_before_after(self) -> None:
        """Before and after in turn, the whole frame, in the same place."""
        self.set_mode("after" if self.view.mode == "before" else "before")

    def toggle_difference(self) -> None:
        """What the filter removed, or the split view again."""
        self.set_mode("split" if self.view.mode == "difference" else "difference")

    def add_to(self, menu: QMenu, *toggles: QAction) -> None:
        """The modes, the toggles (and ``toggles`` after them), then Fit and 1:1."""
        for action in self.modes.values():
            menu.addAction(action)
        menu.addSeparator()
        for action in (self.split, self.flip, self.difference, *toggles):
            menu.addAction(action)
        menu.addSeparator()
        for action in (self.fit, self.actual):
            menu.addAction(action)
