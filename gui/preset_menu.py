"""The Presets menu: the shipped presets, and presets loaded from or saved to a file the user picks."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QFileDialog, QMenu, QWidget

from nlmeans_studio.engine import shipped_presets


class PresetMenu(QMenu):
    """Emits ``load_requested`` with a preset's path (shipped or picked) and ``save_requested``
    with the path the user gave; the folder last used is remembered in ``settings``."""

    load_requested = Signal(object)  # Path
    save_requested = Signal(object)  # Path

    def __init__(self, settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__("&Presets", parent)
        self._settings = settings
        for name, path in shipped_presets().items():
            self.addAction(
                name.upper() if name == "vhs" else name.capitalize(), lambda p=path: self.load_requested.emit(p)
            )
        self.addSeparator()
        self.addAction("Load preset…", lambda: self._choose(save=False))
        self.addAction("Save preset…", lambda: self._choose(save=True))

    def _choose(self, save: bool) -> None:
        folder = str(Path(self._settings.value("preset-folder", str(Path.home()))))
        if save:
            path, _ = QFileDialog.getSaveFileName(self.parentWidget(), "Save preset", folder, "Presets (*.json)")
        else:
            path, _ = QFileDialog.getOpenFileName(self.parentWidget(), "Load preset", folder, "Presets (*.json)")
        if not path:
            return
        self._settings.setValue("preset-folder", str(Path(path).parent))
        (self.save_requested if save else self.load_requested).emit(Path(path))
