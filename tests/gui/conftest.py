"""The window under test and its clip (helpers in window_driver.py)."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("PySide6", reason="the window needs PySide6")
pytest.importorskip("av", reason="the window opens videos with PyAV")

from PySide6.QtCore import QSettings
from window_driver import clip_frames, write_clip

from nlmeans_studio.engine.volume.filter_gpu import COPY_THREAD_NAME
from nlmeans_studio.gui.window import MainWindow


@pytest.fixture
def clip(tmp_path):
    frames = clip_frames()
    write_clip(tmp_path / "clip.mkv", frames)
    return tmp_path / "clip.mkv", frames


@pytest.fixture
def window(qtbot, tmp_path):
    window = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.parameters.set_backend("cpu")
    window.parameters.patch_radius.setValue(2)  # small radii keep the tests fast on 2 cores
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)  # shortcuts go to the active window
    yield window
    window.close()
    # No leftover threads: the preview worker's and the export queue's are joined on close.
    assert window.worker_thread.thread.isFinished() and window.exports.worker_thread.thread.isFinished()
    assert window.exports.running is None
    leftover = [t for t in threading.enumerate() if t.name.startswith("nlmeans")]
    assert not [t for t in leftover if not t.name.startswith(COPY_THREAD_NAME)]  # the volume's stay, idle
