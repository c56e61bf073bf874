"""Filter > Tune for N fps: the rate asked for, the tune off the GUI thread with progress, its choice on the sliders."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QPushButton
from window_driver import clip_frames, opened, settle, write_clip

from nlmeans_studio.engine.video import tune
from nlmeans_studio.gui.tune import RateDialog

TUNE_MS = 120000  # a few windows timed and scored on 2 shared cores


@pytest.fixture
def noisy_clip(tmp_path):
    """The window tests' clip with white noise of sigma 12 levels: what the tune's SURE assumes."""
    clean = clip_frames().astype(np.float64)
    noisy = np.clip(np.rint(clean + np.random.default_rng(2).normal(0, 12, clean.shape)), 0, 255).astype(np.uint8)
    write_clip(tmp_path / "noisy.mkv", noisy)
    return tmp_path / "noisy.mkv"


@pytest.fixture(autouse=True)
def small_grid(monkeypatch):
    """Two spatial windows (and A 3 next to the better), each timed on 8 frames: the tune takes seconds."""
    monkeypatch.setattr(tune, "COARSE_SEARCH_RADII", (1, 2))
    monkeypatch.setattr(tune, "TEMPORAL", ((0, 0),))
    monkeypatch.setattr(tune, "TIMED_FRAMES", 8)


def answer_rate(qtbot, fps: float, playback: bool = False) -> list[float]:
    """Type ``fps`` into the rate dialog the action opens, choose what must reach it, and click OK; the
    list gets the rate it proposed."""
    proposed: list[float] = []

    def answer() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, RateDialog):
            QTimer.singleShot(20, answer)
            return
        proposed.append(dialog.rate.value())
        dialog.rate.lineEdit().selectAll()
        qtbot.keyClicks(dialog.rate, f"{fps:g}")
        if playback:  # the second choice, as a person picks it from the list with the keyboard
            qtbot.keyClick(dialog.timing, Qt.Key.Key_Down)
        ok = next(b for b in dialog.findChildren(QPushButton) if b.text().replace("&", "") == "OK")
        qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)

    QTimer.singleShot(0, answer)
    return proposed


def test_tuning_applies_the_chosen_window_to_the_sliders(qtbot, window, noisy_clip) -> None:
    opened(qtbot, window, noisy_clip)
    window.parameters.search_radius.setValue(7)
    window.parameters.frames_past.setValue(3)
    results = []
    window.tuner.tuned.connect(results.append)
    proposed = answer_rate(qtbot, 5)
    window.tune_action.trigger()
    assert proposed == [25.0]  # the clip's own rate
    assert window.tuner.progress is not None and window.tuner.progress.isVisible()  # the GUI thread is free meanwhile
    qtbot.waitUntil(lambda: not window.tuner.running, timeout=TUNE_MS)
    [result] = results
    chosen = result.chosen
    assert result.target_fps == 5 and chosen.fps >= 5
    shown = window.parameters
    assert (shown.search_radius.value(), shown.frames_past.value(), shown.frames_future.value()) == (
        chosen.window.search_radius,
        chosen.window.frames_past,
        chosen.window.frames_future,
    )
    assert shown.patch_radius.value() == 2  # the window's own patch radius was kept
    if chosen.choice.luma_chroma is None:  # RGB, where SURE found it better: luma/chroma off, its h
        assert shown.luma_chroma_mode() is None and shown.h.value() == pytest.approx(chosen.choice.params.h, abs=0.05)
    else:  # given, as the sliders show them
        assert shown.luma_chroma_mode() == pytest.approx(chosen.choice.luma_chroma[:2], abs=0.05)
    assert window.statusBar().currentMessage().startswith("Tuned for 5 fps: A ")
    settle(qtbot, window)  # the preview follows the new sliders


def test_playback_asked_for_times_the_windows_without_exporting(qtbot, window, noisy_clip, monkeypatch) -> None:
    def no_export(*args, **kwargs):
        raise AssertionError("playback timed an export")

    monkeypatch.setattr(tune, "denoise_file", no_export)
    opened(qtbot, window, noisy_clip)
    results = []
    window.tuner.tuned.connect(results.append)
    answer_rate(qtbot, 5, playback=True)
    window.tune_action.trigger()
    qtbot.waitUntil(lambda: not window.tuner.running, timeout=TUNE_MS)
    assert "Tuning failed" not in window.banner.text()
    [result] = results
    assert result.target_fps == 5 and result.chosen.fps >= 5
    assert window.statusBar().currentMessage().startswith("Tuned for 5 fps: A ")


def test_a_rate_no_window_reaches_and_cancelling_are_said_in_the_banner(qtbot, window, noisy_clip) -> None:
    opened(qtbot, window, noisy_clip)
    before = window.current_params()
    answer_rate(qtbot, 10000)
    window.tune_action.trigger()
    qtbot.waitUntil(lambda: not window.tuner.running, timeout=TUNE_MS)
    assert window.banner.text().startswith("Tuning failed: no window exports 96x64 at 10000 fps on the cpu here")
    assert "a smaller frame size" in window.banner.text()
    answer_rate(qtbot, 1)
    window.tune_action.trigger()
    cancel = next(b for b in window.tuner.progress.findChildren(QPushButton) if b.text() == "Cancel")
    qtbot.mouseClick(cancel, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.tuner.running, timeout=TUNE_MS)
    assert "Tuning cancelled" in window.banner.text()
    assert window.current_params() == before


def test_without_a_clip_the_action_says_to_open_one(qtbot, window) -> None:
    window.tune_action.trigger()
    assert window.banner.text() == "Open a clip first." and not window.tuner.running
