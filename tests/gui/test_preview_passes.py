"""The still preview in passes (issue 39): the input at once, a quick pass, the shown region exact, the
whole frame exact; a newer still supersedes an older one, and the first compile runs beside the window.

Driven through what a person touches (keys on the strength's box, the wheel on the picture); what the
window shows is recorded by wrapping its ``_show``, which draws every pass it takes.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from PySide6.QtCore import Qt
from window_driver import WAIT_MS, add_synthetic_noise, frame_point, opened, press, settle, wheel

import nlmeans_studio.engine.video.preview_passes as passes_module
import nlmeans_studio.gui.worker as worker_module
from nlmeans_studio.engine import COMPILING, STAGES
from nlmeans_studio.engine.video.preview import ArrayFrames, Previewer

UNFILTERED, QUICK, SHOWN, EXACT = STAGES


@pytest.fixture
def shown(window, monkeypatch):
    """Every preview the window draws, with the number of the still it answers and the titles then, in order."""
    drawn = []
    show = window._show
    monkeypatch.setattr(
        window, "_show", lambda preview: show(preview) or drawn.append((window._shown, preview, window.view.titles()))
    )
    return drawn


def strength_up(qtbot, window, presses: int = 1) -> None:
    """Up on the strength's box, as a person raises it (the luma strength: a colour clip's default)."""
    for _ in range(presses):
        qtbot.keyClick(window.parameters.h_luma.spin, Qt.Key.Key_Up)


def test_a_quick_pass_shows_first_and_the_exact_frame_replaces_it(qtbot, window, clip, shown) -> None:
    path, frames = clip
    opened(qtbot, window, path)
    add_synthetic_noise(qtbot, window)
    shown.clear()
    strength_up(qtbot, window)
    settle(qtbot, window)
    stages = [preview.stage for _, preview, _ in shown]
    assert stages == [QUICK, EXACT]  # the frame was on screen filtered: its input is not shown again
    (_, quick, quick_titles), (_, exact, exact_titles) = shown
    assert quick.psnr_after is None and exact.psnr_after is not None
    assert "after: quick pass" in quick_titles and "quick" not in exact_titles
    expected = Previewer(ArrayFrames(frames), "cpu").render(
        window.preview.index, window.current_params(), window.noise.noise(), window.current_luma_chroma()
    )
    np.testing.assert_array_equal(window.preview.after, expected.after)  # one band: the whole frame's result
    assert not np.array_equal(quick.after, exact.after)


def test_the_shown_region_is_filtered_first_and_equals_the_whole_frames_result(
    qtbot, window, clip, shown, monkeypatch
) -> None:
    monkeypatch.setattr(passes_module, "PIECE_ROWS", 16)  # several bands on the small clip, each cropped
    path, _ = clip
    opened(qtbot, window, path)
    add_synthetic_noise(qtbot, window)
    wheel(window, frame_point(window, 60, 40), 6)  # zoomed in on the square's right side
    qtbot.waitUntil(lambda: window.view.shown_box() is not None)
    box = window.view.shown_box()
    assert box[2] < 96 and box[3] < 64  # a part of the frame
    shown.clear()
    strength_up(qtbot, window)
    settle(qtbot, window)
    by_stage = {preview.stage: preview for _, preview, _ in shown}
    assert [preview.stage for _, preview, _ in shown] == [QUICK, SHOWN, EXACT]
    x, y, w, h = box
    region, whole = by_stage[SHOWN].after[y : y + h, x : x + w], by_stage[EXACT].after[y : y + h, x : x + w]
    # Bands cropped with an A + B margin read every pixel their pixels read: the same sums, only
    # rolled from another first row, so float32 rounding may differ; one 8-bit level at most.
    assert np.abs(region.astype(int) - whole.astype(int)).max() <= 1


def test_a_stale_pass_never_replaces_a_newer_stills(qtbot, window, clip, shown, monkeypatch) -> None:
    monkeypatch.setattr(passes_module, "PIECE_ROWS", 4)  # many pieces: a newer still arrives between two
    path, frames = clip
    opened(qtbot, window, path)
    add_synthetic_noise(qtbot, window)
    window.parameters.search_radius.setValue(6)  # a slower exact pass, for the keys to overtake
    settle(qtbot, window)
    shown.clear()
    for _ in range(4):
        strength_up(qtbot, window)
        qtbot.waitUntil(lambda: not window.debounce.isActive())  # each press its own still
    settle(qtbot, window)
    numbers = [number for number, _, _ in shown]
    assert numbers == sorted(numbers)  # never an older still's pass after a newer one's
    assert numbers[-1] == window._pending_preview and shown[-1][1].stage == EXACT
    expected = Previewer(ArrayFrames(frames), "cpu").render(
        window.preview.index, window.current_params(), window.noise.noise(), window.current_luma_chroma()
    )
    # The last strength's frame, in bands of 4 rows: within float32 rounding of the whole frame's.
    assert np.abs(window.preview.after.astype(int) - expected.after.astype(int)).max() <= 1


def test_the_input_then_a_quick_pass_show_before_the_filter_has_compiled(
    qtbot, window, clip, shown, monkeypatch
) -> None:
    # A first launch waited two minutes on an empty grey box while numba compiled, then 25 s for
    # a first denoised picture: the quick pass now runs the cascade (no compile) meanwhile.
    compiled = threading.Event()
    monkeypatch.setattr(worker_module, "filter_compiles", lambda backend: True)  # numba's cache cold
    monkeypatch.setattr(passes_module, "cpu_filter_compiles", lambda: True)
    monkeypatch.setattr(worker_module, "compile_cpu_filter", lambda: compiled.wait(WAIT_MS / 1000))
    path, frames = clip
    window.open_clip(path)
    qtbot.waitUntil(lambda: window.preview is not None and window.preview.stage == QUICK, timeout=WAIT_MS)
    assert window.statusBar().currentMessage() == COMPILING and not compiled.is_set()
    (_, first, first_titles), *_ = shown
    assert first.stage == UNFILTERED and "not filtered yet" in first_titles
    np.testing.assert_array_equal(first.before, frames[0])  # the input at once
    assert "after: quick pass" in window.view.titles()
    press(qtbot, window, Qt.Key.Key_Right)  # the window answers meanwhile: the next frame, input then quick
    qtbot.waitUntil(lambda: window.preview.index == 1 and window.preview.stage == QUICK, timeout=WAIT_MS)
    assert next(preview.stage for _, preview, _ in shown if preview.index == 1) == UNFILTERED
    assert not compiled.is_set()
    compiled.set()
    qtbot.waitUntil(lambda: window.preview.stage == EXACT, timeout=WAIT_MS)
    assert window.preview.index == 1 and window.statusBar().currentMessage() != COMPILING
    qtbot.waitUntil(lambda: "nlmeans-compile" not in [thread.name for thread in threading.enumerate()])


def test_a_clip_shows_its_frame_while_its_noise_is_estimated(qtbot, window, clip, shown, monkeypatch) -> None:
    """A clip's first still waits for its noise estimate and SURE (7 s for a small clip on this
    machine, the window blank until then): the frame is on screen meanwhile, unfiltered, once."""
    path, _ = clip
    resume, choose = threading.Event(), worker_module.choose_filter

    def held(*arguments, **options):  # SURE at work
        resume.wait(WAIT_MS / 1000)
        return choose(*arguments, **options)

    monkeypatch.setattr(worker_module, "choose_filter", held)
    window.open_clip(path)
    qtbot.waitUntil(lambda: window.preview is not None, timeout=WAIT_MS)
    assert window.preview.stage == UNFILTERED and window.estimate is None
    assert window.preview.index == window.frame_slider.value() == 0
    assert window.parameters.luma_chroma.currentText() == "Auto (from the noise)"  # its mode not chosen yet
    assert window.readouts.fps.text().endswith("no frame filtered yet")
    resume.set()
    qtbot.waitUntil(lambda: window.estimate is not None, timeout=WAIT_MS)
    settle(qtbot, window)
    chosen = window.parameters.luma_chroma.currentText()
    assert chosen in ("Auto (from the noise): Y'CbCr", "Auto (from the noise): RGB")
    stages = [preview.stage for _, preview, _ in shown]
    assert stages[0] == UNFILTERED and stages.count(UNFILTERED) == 1 and stages[-1] == EXACT
