"""The window, offscreen: controls, the worker, PSNR, noise, export, errors, threads."""

import threading
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("PySide6", reason="the window needs PySide6")
av = pytest.importorskip("av", reason="the window opens videos with PyAV")

from PySide6.QtCore import QSettings, QThread  # noqa: E402

from engine import NLMParams, psnr  # noqa: E402
from engine.frames import to_float32  # noqa: E402
from engine.preview import ArrayFrames, Previewer, SyntheticNoise  # noqa: E402
from engine.video import read_frames  # noqa: E402
from gui.export import ExportSettings  # noqa: E402
from gui.presets import PRESET_FOLDER, load_preset  # noqa: E402
from gui.window import MainWindow  # noqa: E402

pytestmark = [
    pytest.mark.qt_log_level_fail("WARNING"),
    pytest.mark.qt_log_ignore("This plugin does not support"),  # the offscreen platform's notice
]
WAIT_MS = 20000  # CPU previews of a tiny clip take milliseconds; first ones compile numba code


def write_clip(path, frames: np.ndarray) -> None:
    """A lossless FFV1 clip of uint8 RGB frames at 25 fps."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=25)
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = "bgr0"
        for index, frame in enumerate(frames):
            video_frame = av.VideoFrame.from_ndarray(frame, format="rgb24")
            video_frame.pts, video_frame.time_base = index, Fraction(1, 25)
            container.mux(stream.encode(video_frame))
        container.mux(stream.encode(None))


@pytest.fixture
def clip(tmp_path):
    """12 frames of 64 x 96: flat gray with a moving bright square (flat areas for the estimator)."""
    frames = np.full((12, 64, 96, 3), 110, np.uint8)
    for t in range(12):
        frames[t, 20:40, 10 + 3 * t : 30 + 3 * t] = (200, 180, 90)
    write_clip(tmp_path / "clip.mkv", frames)
    return tmp_path / "clip.mkv", frames


@pytest.fixture
def window(qtbot, tmp_path):
    window = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.parameters.backend.setCurrentIndex(window.parameters.backend.findData("cpu"))
    window.show()
    yield window
    window.close()
    # No leftover threads: the worker's and any export's are joined on close.
    assert not window.worker_thread.thread.isRunning() and window.export_job is None
    assert not [t for t in threading.enumerate() if t.name.startswith("nlmeans")]


# The tests wait on the window's state, not on the worker's signals: qtbot.waitSignal would run
# its callback on the worker's thread and stop its timer from there (a Qt warning).


def opened(qtbot, window, path) -> None:
    window.open_clip(path)
    qtbot.waitUntil(lambda: window.path == path and window.preview is not None, timeout=WAIT_MS)


def settle(qtbot, window) -> None:
    """Wait until the latest preview asked for is on screen."""
    qtbot.waitUntil(
        lambda: not window.debounce.isActive() and window._shown >= window._pending_preview > 0, timeout=WAIT_MS
    )


def test_speed_readout_says_idle_when_nothing_was_rendered(qtbot) -> None:
    from gui.panels import Readouts

    readouts = Readouts()
    qtbot.addWidget(readouts)
    readouts.show_speed(0, None, "")
    assert readouts.fps.text() == "idle · no frame yet"
    readouts.show_speed(0, 12.34, "GPU: H100")
    assert readouts.fps.text() == "idle · last frame 12.3 ms · GPU: H100"
    readouts.show_speed(27, 4.0, "CPU: Xeon")
    assert readouts.fps.text() == "27 frames/s · last frame 4.0 ms · CPU: Xeon"


def test_each_control_changes_the_parameters_the_worker_receives(qtbot, window, clip, monkeypatch) -> None:
    opened(qtbot, window, clip[0])
    received = []
    worker = window.worker_thread.worker
    monkeypatch.setattr(worker, "submit", lambda number, request: received.append(request))
    panel = window.parameters
    for control, value, field in [
        (panel.h, 37.5, "h"),
        (panel.patch_radius, 2, "patch_radius"),
        (panel.search_radius, 4, "search_radius"),
        (panel.frames_past, 2, "frames_past"),
        (panel.frames_future, 0, "frames_future"),
    ]:
        control.slider.setValue(round(value * (10 if field == "h" else 1)))  # as a user drags it
        qtbot.waitUntil(lambda f=field, v=value: bool(received) and getattr(received[-1].params, f) == v, timeout=2000)
    panel.weighting.setCurrentText("exponential")
    qtbot.waitUntil(lambda: received[-1].params.weighting == "exponential", timeout=2000)
    window.step(3)
    qtbot.waitUntil(lambda: received[-1].index == 3, timeout=2000)
    assert received[-1].backend == "cpu"


def test_a_parameter_change_updates_the_after_view_off_the_gui_thread(qtbot, window, clip, monkeypatch) -> None:
    threads = []
    render = Previewer.render
    monkeypatch.setattr(
        Previewer, "render", lambda self, *a: threads.append(QThread.currentThread()) or render(self, *a)
    )
    window.noise.synthetic.setChecked(True)
    opened(qtbot, window, clip[0])
    settle(qtbot, window)
    first = window.preview.after.copy()
    window.parameters.h.setValue(80)
    qtbot.waitUntil(lambda: not np.array_equal(window.preview.after, first), timeout=WAIT_MS)
    np.testing.assert_array_equal(window.view.after_image.image, window.preview.after)
    assert threads and all(thread is window.worker_thread.thread for thread in threads)
    assert QThread.currentThread() is not window.worker_thread.thread


def test_psnr_shown_equals_engine_psnr_in_synthetic_noise_mode(qtbot, window, clip) -> None:
    path, frames = clip
    window.noise.sigma.setValue(20)
    window.noise.seed.setValue(4)
    window.noise.synthetic.setChecked(True)
    window.parameters.h.setValue(45)
    opened(qtbot, window, path)
    window.step(5)
    settle(qtbot, window)
    preview = window.preview
    noise, params = SyntheticNoise(20, 0.0, 4), window.current_params()
    # The same frames through an independent Previewer on the same backend: equal to the last bit.
    reference = Previewer(ArrayFrames(frames), "cpu")
    noisy = np.stack([reference.noisy_frame(i, noise) for i in range(len(frames))])
    denoised = reference.denoiser
    denoised.params = params
    clean = to_float32(frames[5])
    expected_after = psnr(clean, denoised.denoise_frame(noisy, 5))
    assert preview.psnr_before == psnr(clean, noisy[5])
    assert preview.psnr_after == expected_after
    assert f"{expected_after:.2f} dB" in window.readouts.psnr.text() and expected_after > preview.psnr_before + 3
    window.noise.synthetic.setChecked(False)
    settle(qtbot, window)
    assert "no clean reference" in window.readouts.psnr.text()


def test_estimating_noise_in_a_region_sets_the_color_transform(qtbot, window, clip) -> None:
    window.noise.sigma.setValue(15)
    window.noise.correlation.setValue(-0.4)  # decorrelating helps here (NoiseEstimate.luminance_gain > 1)
    window.noise.synthetic.setChecked(True)
    opened(qtbot, window, clip[0])
    window.noise.draw_region.click()
    window.view.roi.setPos((50, 40))
    window.view.roi.setSize((40, 20))
    assert window.view.roi_box() == (50, 40, 40, 20)
    window.noise.use_region.click()
    qtbot.waitUntil(lambda: window.estimate is not None, timeout=WAIT_MS)
    assert window.estimate.method == "region" and window.estimate.regions == [(50, 40, 40, 20)]
    np.testing.assert_allclose(window.estimate.sigma, 15, rtol=0.15)  # 2 x 38 x 18 samples: about 6 % spread
    assert window.parameters.decorrelate.isChecked()
    np.testing.assert_array_equal(window.current_params().color_transform, window.estimate.color_transform())
    assert "Sigma per channel" in window.noise.result.text()
    window.parameters.decorrelate.setChecked(False)
    assert window.current_params().color_transform is None


def test_export_writes_a_playable_file_and_cancel_leaves_none(qtbot, window, clip, tmp_path) -> None:
    path, frames = clip
    opened(qtbot, window, path)
    target = tmp_path / "out.mkv"
    window.start_export(ExportSettings(target, "ffv1", 18, 0.0, None))
    qtbot.waitUntil(lambda: window.export_job is None, timeout=WAIT_MS)
    assert len(read_frames(target)) == len(frames) and "Exported 12 frames" in window.statusBar().currentMessage()

    cancelled = tmp_path / "cancelled.mkv"
    window.start_export(ExportSettings(cancelled, "ffv1", 18, 0.0, None))
    window.export_job.progressed.connect(lambda *_: window.cancel_export())
    qtbot.waitUntil(lambda: window.export_job is None, timeout=WAIT_MS)
    assert "cancelled" in window.banner.text() and not cancelled.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no partial file


def test_a_corrupt_file_shows_an_error_and_the_app_stays_usable(qtbot, window, clip, tmp_path) -> None:
    corrupt = tmp_path / "corrupt.mp4"
    corrupt.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 8)
    window.open_clip(corrupt)
    qtbot.waitUntil(lambda: "Could not open the video" in window.banner.text(), timeout=WAIT_MS)
    assert window.banner.isVisibleTo(window) and window.path is None
    opened(qtbot, window, clip[0])
    assert not window.banner.isVisibleTo(window) and window.info.frame_count == 12


def test_presets_load_and_a_bad_one_is_refused_with_a_message(qtbot, window, tmp_path) -> None:
    window.load_preset(PRESET_FOLDER / "strong.json")
    assert window.parameters.params() == load_preset(PRESET_FOLDER / "strong.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"h": 25, "search_radius": 99}')
    window.load_preset(bad)
    assert "search_radius must be an integer in 0..16, got 99" in window.banner.text()
    assert window.parameters.params() == load_preset(PRESET_FOLDER / "strong.json")  # unchanged


def test_parameters_persist_across_sessions(qtbot, tmp_path) -> None:
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    first = MainWindow(settings)
    qtbot.addWidget(first)
    first.parameters.set_params(NLMParams(h=33, search_radius=5, frames_past=2))
    first.close()
    second = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(second)
    assert second.parameters.params() == NLMParams(h=33, search_radius=5, frames_past=2)
    second.close()


def test_resizing_the_views_keeps_the_interpreter_alive(qtbot) -> None:
    """Qt's virtual methods overridden in Python must not lose references to True: PySide6
    6.12.0 lost 32 per resize of the views, and on Python 3.11 (where True is not immortal) the
    interpreter aborted once they ran out. On 3.12+ the count does not move at all."""
    import gc
    import sys

    from PySide6.QtCore import QCoreApplication

    from gui.views import ComparisonView

    view = ComparisonView()
    qtbot.addWidget(view)
    view.show()
    image = np.zeros((60, 80, 3), np.uint8)
    view.set_images(image, image)
    QCoreApplication.processEvents()
    gc.collect()
    before = sys.getrefcount(True)
    for step in range(50):
        view.resize(300 + step, 200)
        QCoreApplication.processEvents()
    gc.collect()
    assert before - sys.getrefcount(True) < 50  # objects holding True come and go: a few, not 1600
