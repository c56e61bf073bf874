"""The window under test and its clip (helpers in window_driver.py); no test waits on an unanswered question."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("PySide6", reason="the window needs PySide6")
pytest.importorskip("av", reason="the window opens videos with PyAV")

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication, QProgressDialog
from window_driver import clip_frames, write_clip

from nlmeans_studio.engine.volume.filter_gpu import COPY_THREAD_NAME
from nlmeans_studio.gui.window import MainWindow

MODAL_PATIENCE_S = 60  # no test leaves a question open this long


@pytest.fixture(autouse=True)
def no_question_waits_forever(qapp):
    """Close a modal question nobody answers, and fail the test naming it.

    A question's exec() runs Qt's own event loop, where no Python signal handler ends the test: a
    window closed with an export still running asks whether to stop it, and unanswered it would
    hold its worker until pytest-timeout's thread method ended it, 300 s later, with no word of
    the question. A progress dialog is modal too, but goes on by itself.
    """
    open_since: dict[int, float] = {}  # the modal widget open now, by id, and since when
    left_open: list[str] = []

    def look() -> None:
        question = QApplication.activeModalWidget()
        if question is None or isinstance(question, QProgressDialog):
            open_since.clear()
            return
        since = open_since.setdefault(id(question), time.monotonic())
        if time.monotonic() - since > MODAL_PATIENCE_S:
            left_open.append(f"{question.windowTitle()}: {getattr(question, 'text', str)()}")
            question.reject()

    watch = QTimer()
    watch.timeout.connect(look)
    watch.start(1000)
    yield
    watch.stop()
    assert not left_open, f"a question waited {MODAL_PATIENCE_S} s for an answer and was closed: {left_open}"


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
    window.exports.stop()  # what "Stop and close" does: a test that failed mid-export leaves no question open
    window.close()
    # No leftover threads: the preview worker's and the export queue's are joined on close.
    assert window.worker_thread.thread.isFinished() and window.exports.worker_thread.thread.isFinished()
    assert window.exports.running is None
    leftover = [t for t in threading.enumerate() if t.name.startswith("nlmeans")]
    assert not [t for t in leftover if not t.name.startswith(COPY_THREAD_NAME)]  # the volume's stay, idle
