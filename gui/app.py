"""Starting the application: ``nlmeans-studio`` and ``nlmeans-studio gui [FILE]``."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from nlmeans_studio.engine import ICON, SAMPLE_CLIP, __version__

from .window import MainWindow


def run(path: str | Path | None = None) -> int:
    """Open the window on ``path`` (the bundled sample clip by default; a volume opens in a volume
    window of its own); returns the exit status."""
    QCoreApplication.setOrganizationName("NLMeans Studio")
    QCoreApplication.setApplicationName("NLMeans Studio")
    QCoreApplication.setApplicationVersion(__version__)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setWindowIcon(QIcon(str(ICON)))
    window = MainWindow()
    window.open_file(path or SAMPLE_CLIP)  # a clip shows this window; a volume only its own
    return app.exec()
