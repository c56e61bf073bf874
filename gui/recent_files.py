"""File > Open recent: the clips and volumes opened last, newest first, kept in the user's settings."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QMenu, QWidget

RECENT_FILES = 8


class RecentFilesMenu(QMenu):
    """The last ``RECENT_FILES`` clips opened; choosing one emits ``chosen`` with its path."""

    chosen = Signal(str)

    def __init__(self, settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__("Open recent", parent)
        self._settings = settings
        self._show(self.entries())

    def entries(self) -> list[str]:
        """The paths remembered, newest first."""
        value = self._settings.value("recent", [])
        return [value] if isinstance(value, str) else list(value or [])

    def remember(self, path: Path) -> None:
        """``path`` was opened: it goes first (once) and the oldest beyond the limit drops off."""
        recent = ([str(path)] + [entry for entry in self.entries() if entry != str(path)])[:RECENT_FILES]
        self._settings.setValue("recent", recent)
        self._show(recent)

    def _show(self, recent: list[str]) -> None:
        self.clear()
        for entry in recent:
            self.addAction(entry, lambda p=entry: self.chosen.emit(p))
