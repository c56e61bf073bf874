"""The volume window, driven as a person would: keys on the plane slider and the axis, typed
settings, File > Export; the shown planes and the written file checked against the engine."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QMimeData, QPointF, QRectF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QFileDialog, QLabel, QMenu, QMessageBox, QProgressDialog, QPushButton
from window_driver import answer_when_asked, drag, frame_point, type_into

from nlmeans_studio.engine import (
    COMPILING,
    WEIGHTINGS,
    denoise_volume,
    denoise_volume_slice,
    estimate_volume_noise,
    psnr,
    read_volume,
    suggest_volume_h,
    write_volume,
)
from nlmeans_studio.engine.volume.io import VolumeFile
from nlmeans_studio.gui import volume_worker as volume_worker_module
from nlmeans_studio.gui.volume_window import PREVIEW_DELAY_MS, VolumeWindow, display_plane

pytest.importorskip("nibabel", reason="NIfTI volumes are read with nibabel")

SETTINGS = {"patch_radius": 1, "search_radius": 1, "weighting": "exponential", "center_weight": "one"}


@pytest.fixture
def volume_path(tmp_path):
    """A 20 x 18 x 16 int16 NIfTI volume: a bright cube in noise (as a scanner writes it)."""
    rng = np.random.default_rng(3)
    clean = np.zeros((20, 18, 16), np.float32)
    clean[5:15, 4:14, 3:13] = 400
    noisy = np.rint(clean + rng.normal(0, 30, clean.shape) + 100).astype(np.int16)
    path = tmp_path / "scan.nii.gz"
    write_volume(path, noisy.astype(np.float32), VolumeFile(noisy, format="nifti"))
    return path


@pytest.fixture
def volume_window(qtbot, volume_path):
    window = VolumeWindow(volume_path, backend="cpu")
    qtbot.addWidget(window)
    window.patch.setValue(SETTINGS["patch_radius"])
    window.search.setValue(SETTINGS["search_radius"])
    window.view.set_mode("after")  # the view shows the denoised plane whole
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    yield window
    window.close()
    assert window.worker_thread.thread.isFinished()  # joined on close: no "Destroyed while thread is still running"


def _wait_for_preview(qtbot, window, expected: np.ndarray | None = None) -> None:
    """Until the latest preview is shown (and equals ``expected``, when given)."""

    def shown() -> bool:
        if not window.status.text().startswith("Preview of this plane"):
            return False
        return expected is None or np.array_equal(window.view.shown_image(), expected)

    qtbot.waitUntil(shown, timeout=60_000)


def _expected_after(window, axis: int, index: int) -> np.ndarray:
    volume = read_volume(window.path).data.astype(np.float32)
    denoised = denoise_volume(volume, h=window.h.value(), backend="cpu", **SETTINGS)
    return display_plane(window.layouts[axis].of(denoised, index), window.low, window.high)


def test_walking_the_planes_shows_each_preview(qtbot, volume_window) -> None:
    window = volume_window
    _wait_for_preview(qtbot, window)
    assert window.plane_index == (0, 10) and window.slider.hasFocus()  # the keys walk the planes at once
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_Right)
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_Right)
    assert window.plane_index == (0, 12) and window.plane_label.text() == "z 13 / 20"
    _wait_for_preview(qtbot, window, _expected_after(window, 0, 12))
    # The axis switched from the keyboard: the middle plane along x, sagittal (the file is RAS).
    window.axis.setFocus()
    qtbot.keyClick(window.axis, Qt.Key.Key_Down)
    qtbot.keyClick(window.axis, Qt.Key.Key_Down)
    assert window.plane_index == (2, 8)
    expected = _expected_after(window, 2, 8)
    assert expected.shape == (20, 18)
    _wait_for_preview(qtbot, window, expected)
    # Right and Page Down on the axis box walk the planes (a first-time user's Right did nothing).
    qtbot.keyClick(window.axis, Qt.Key.Key_Right)
    assert window.plane_index == (2, 9) and window.plane_label.text() == "x 10 / 16"
    qtbot.keyClick(window.axis, Qt.Key.Key_PageDown)  # a page (10 planes) back, to the first
    assert window.plane_index == (2, 0) and window.axis.currentText() == "x (sagittal)"


def test_a_preview_still_running_when_the_plane_changes_is_never_shown_beside_the_new_plane(
    qtbot, volume_window, monkeypatch
) -> None:
    """The preview of the plane shown before came back after a key had moved to the next plane,
    and showed beside it until the next plane's own preview came."""
    window = volume_window
    _wait_for_preview(qtbot, window)
    release, slice_of = threading.Event(), volume_worker_module.denoise_volume_slice
    monkeypatch.setattr(
        volume_worker_module, "denoise_volume_slice", lambda *a, **k: release.wait(30) and slice_of(*a, **k)
    )
    shown: list[tuple[int, np.ndarray]] = []
    set_images = window.view.set_images
    monkeypatch.setattr(
        window.view, "set_images", lambda b, a: shown.append((window.slider.value(), a)) or set_images(b, a)
    )
    window.h.setValue(window.h.value() * 2)  # a preview of plane 10 is asked for, and held
    qtbot.waitUntil(lambda: window.status.text().startswith("Filtering"), timeout=5_000)
    qtbot.wait(PREVIEW_DELAY_MS + 200)
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_Right)
    release.set()
    _wait_for_preview(qtbot, window, _expected_after(window, 0, 11))
    stale = _expected_after(window, 0, 10)
    assert not [index for index, after in shown if index == 11 and np.array_equal(after, stale)]


def test_the_view_modes_are_the_main_windows_keys_and_menu(qtbot, volume_window) -> None:
    """V, B and D switch the picture as in the main window (the volume window had no view modes:
    no side by side, no difference); digits typed in h stay digits, not the 1:1 key."""
    window = volume_window
    _wait_for_preview(qtbot, window)
    window.view_actions.set_mode("split")
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_D)
    assert window.view.mode == "difference" and window.view_actions.modes["difference"].isChecked()
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_V)  # difference off, then split / side by side
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_V)
    assert window.view.mode == "side" and window.view.after_view.isVisible()
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_B)
    assert window.view.mode == "before"
    menu = next(m for m in window.menuBar().findChildren(QMenu) if m.title() == "&View")
    next(a for a in menu.actions() if a.text() == "After").trigger()
    assert window.view.mode == "after"
    type_into(qtbot, window.h, "111")
    assert window.h.value() == 111 and window.view.mode == "after"


def test_radii_too_large_for_the_volume_are_said_for_its_own_axes(qtbot, volume_window) -> None:
    """A search radius the volume is too small for: the message names the short axis of the file
    as it is (it spoke of a fourth axis of 1 and of time series), and the picture is no longer
    the last preview that worked."""
    window = volume_window
    _wait_for_preview(qtbot, window)
    type_into(qtbot, window.search.spins[2], "16")  # needs 18 voxels; the volume is 20 x 18 x 16
    qtbot.waitUntil(lambda: window.status.text().startswith("Cannot preview"), timeout=30_000)
    said = window.status.text()
    assert "volume of shape (20, 18, 16) is smaller than the filter's window" in said
    assert said.endswith("lower the radii along x (radii per axis are z, y, x)") and "channels" not in said
    assert np.array_equal(window.view.shown_image(), window.view._before)  # the plane itself, unfiltered


def test_a_typed_strength_re_renders(qtbot, volume_window) -> None:
    window = volume_window
    _wait_for_preview(qtbot, window)
    before = window.view.shown_image().copy()
    type_into(qtbot, window.h, "200")
    assert window.h.value() == 200
    expected = _expected_after(window, 0, 10)
    assert not np.array_equal(expected, before)
    _wait_for_preview(qtbot, window, expected)


def _export_with_ctrl_e(qtbot, window, target, monkeypatch) -> None:
    """Export to ``target`` with Ctrl+E, the save dialog answered, and wait for the export's end.

    A refusal or a failure is said in a message box: its text fails the test at once. (A full run
    once waited 300 s for an "Exported" that a preview's status had already replaced.)
    """
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(target), ""))
    said: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: said.append(f"{title}: {text}"))
    qtbot.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert said or not window.export_action.isEnabled(), "Ctrl+E started no export"
    qtbot.waitUntil(window.export_action.isEnabled, timeout=120_000)  # a first compile, if the cache is cold
    assert not said and window.statusBar().currentMessage() == f"Exported {target}", said


def test_export_writes_the_whole_volume_in_the_input_format(qtbot, volume_window, tmp_path, monkeypatch) -> None:
    window = volume_window
    target = tmp_path / "out.nii.gz"
    _export_with_ctrl_e(qtbot, window, target, monkeypatch)
    written = read_volume(target)
    source = read_volume(window.path)
    assert written.data.dtype == np.int16 and written.data.shape == source.data.shape
    np.testing.assert_allclose(written.affine, source.affine)
    # At the suggested h, as denoise-volume without --h (a microscopist's differed in 75 voxels by 1:
    # the window filtered with h rounded to its box's digits)
    expected = denoise_volume(source.data.astype(np.float32), h=None, backend="cpu", **SETTINGS)
    np.testing.assert_array_equal(written.data, np.rint(expected).astype(np.int16))
    assert window.export_action.isEnabled()
    # A preview after the export left "Exported" in sight (the preview's line once took its place).
    type_into(qtbot, window.h, "150")
    _wait_for_preview(qtbot, window, _expected_after(window, *window.plane_index))  # h 150's plane
    assert window.statusBar().currentMessage() == f"Exported {target}"


def test_an_unwritable_target_is_said_in_a_dialog(qtbot, volume_window, tmp_path, monkeypatch) -> None:
    window = volume_window
    target = tmp_path / "no such folder" / "out.nii.gz"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(target), ""))
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: shown.append(text))
    window.export_action.trigger()
    # Said at once, before the volume is filtered (an MRI user waited for the whole volume, then
    # read an error naming a hidden temporary file).
    assert shown and "was not written" in shown[0] and "Traceback" not in shown[0] and not target.exists()
    assert f"the folder {target.parent} does not exist" in shown[0] and ".part" not in shown[0]
    assert window.export_action.isEnabled()
    # A folder that exists but takes no file (sysfs, even for root): refused at once too.
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: ("/sys/out.nii.gz", ""))
    window.export_action.trigger()
    assert len(shown) == 2 and "the folder /sys is not writable (Permission denied)" in shown[1]
    assert window.export_action.isEnabled()


def _drop(window, path) -> None:
    """A file dropped on the window, as a file manager drops it."""
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(path))])
    point = QPointF(window.rect().center())
    for event_type in (QEvent.Type.DragEnter, QEvent.Type.Drop):
        event_class = QDragEnterEvent if event_type == QEvent.Type.DragEnter else QDropEvent
        event = event_class(point.toPoint() if event_class is QDragEnterEvent else point,
                            Qt.DropAction.CopyAction, data, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)  # fmt: skip
        QApplication.sendEvent(window, event)


def test_the_main_window_opens_volumes_from_the_menu_and_by_drop(qtbot, window, volume_path, monkeypatch) -> None:
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, **kwargs: (str(volume_path), ""))
    qtbot.keyClick(window, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: len(window.findChildren(VolumeWindow)) == 1)
    opened = window.findChildren(VolumeWindow)[0]
    assert opened.isVisible() and opened.path == volume_path and opened.backend == "cpu"
    _wait_for_preview(qtbot, opened)
    asked_in = []  # File > Open from the volume window starts in the volume's folder (it was home)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda _, __, folder, *a: asked_in.append(folder) or ("", ""))
    qtbot.keyClick(opened, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    assert asked_in == [str(volume_path.parent)]
    _drop(window, volume_path)
    qtbot.waitUntil(lambda: len(window.findChildren(VolumeWindow)) == 2)
    for volume in window.findChildren(VolumeWindow):
        _wait_for_preview(qtbot, volume)
        volume.close()
    qtbot.waitUntil(lambda: not window.findChildren(VolumeWindow))  # closed windows are deleted


def test_a_volume_that_cannot_be_read_is_said_in_the_banner(qtbot, window, tmp_path) -> None:
    broken = tmp_path / "broken.nii.gz"
    broken.write_bytes(b"not a NIfTI file")
    window.open_file(broken)
    assert window.banner.isVisibleTo(window)
    assert "broken.nii.gz: not a NIfTI volume that can be read" in window.banner.text()
    assert not window.findChildren(VolumeWindow)
    # A FreeSurfer .mgz is neither: the banner says what the window opens (it spoke of videos only).
    (tmp_path / "brain.mgz").write_bytes(b"\x00\x00\x00\x01" + bytes(300))
    window.open_file(tmp_path / "brain.mgz")
    qtbot.waitUntil(lambda: "brain.mgz" in window.banner.text(), timeout=30_000)
    assert "The window opens videos FFmpeg reads and volumes (.nii, .nii.gz, .tif, .tiff, .npy)." in (
        window.banner.text()
    )


def test_an_npz_archive_named_npy_is_said_in_the_banner(qtbot, window, tmp_path, monkeypatch) -> None:
    """The window aborted (SIGABRT) on an AttributeError from an .npz named .npy."""
    np.savez(tmp_path / "scan", volume=np.zeros((8, 8, 8), np.float32))
    (tmp_path / "scan.npz").rename(tmp_path / "scan.npy")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, **kwargs: (str(tmp_path / "scan.npy"), ""))
    qtbot.keyClick(window, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    assert "scan.npy: a NumPy .npz archive (several arrays, zipped), named .npy" in window.banner.text()
    assert not window.findChildren(VolumeWindow)


def test_a_tiff_of_one_image_opens_as_a_picture(qtbot, window, tmp_path, monkeypatch) -> None:
    """It was refused as "one 2D image, not a volume", pointing to a command: the window had no way to open it."""
    tifffile = pytest.importorskip("tifffile")
    tifffile.imwrite(tmp_path / "photo.tif", np.random.default_rng(4).integers(0, 255, (48, 64, 3), dtype=np.uint8))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, **kwargs: (str(tmp_path / "photo.tif"), ""))
    qtbot.keyClick(window, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.path == tmp_path / "photo.tif" and window.preview is not None, timeout=60_000)
    assert not window.findChildren(VolumeWindow) and not window.banner.isVisibleTo(window)


def test_a_session_started_on_a_volume_has_its_window_only_until_a_clip_is_opened(
    qtbot, tmp_path, volume_path, clip, monkeypatch
) -> None:
    # An MRI user's `nlmeans-studio gui scan.nii.gz` showed an empty "no frame yet" video window
    # beside the volume's. The app opens its file as gui.app.run does: without showing the window.
    from PySide6.QtCore import QSettings

    from nlmeans_studio.gui.window import MainWindow

    window = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.parameters.set_backend("cpu")
    window.open_file(volume_path)
    qtbot.waitUntil(lambda: len(window.findChildren(VolumeWindow)) == 1)
    volume = window.findChildren(VolumeWindow)[0]
    assert volume.isVisible() and not window.isVisible()
    # File > Open in the volume's window (Ctrl+O) opens a clip in the main window, which shows.
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, **kwargs: (str(clip[0]), ""))
    volume.activateWindow()
    qtbot.waitUntil(volume.isActiveWindow)
    qtbot.keyClick(volume, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(window.isVisible)
    qtbot.waitUntil(lambda: window.path == clip[0], timeout=60_000)
    volume.close()
    window.close()


def test_a_volume_that_cannot_be_opened_at_start_shows_the_main_window_and_why(qtbot, tmp_path) -> None:
    from PySide6.QtCore import QSettings

    from nlmeans_studio.gui.window import MainWindow

    window = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    broken = tmp_path / "broken.nii.gz"
    broken.write_bytes(b"not a NIfTI file")
    window.open_file(broken)
    assert window.isVisible() and window.banner.isVisible()
    assert "broken.nii.gz: not a NIfTI volume that can be read" in window.banner.text()
    window.close()


def test_radii_per_axis_are_typed_as_on_the_command_line(qtbot, volume_window) -> None:
    """A first-time user typed "1,5,5" in the search radius and got 15 (a 31^3 window). A comma
    goes on to the next axis's box, showing the three boxes: "1,2,3" is z 1, y 2, x 3; unticking
    "Radii per axis" from the keyboard gives one radius again."""
    window = volume_window
    _wait_for_preview(qtbot, window)
    assert not window.search.spins[0].isVisible() and not window.per_axis.isChecked()
    qtbot.mouseClick(window.search.spins[2].lineEdit(), Qt.MouseButton.LeftButton)
    window.search.spins[2].lineEdit().selectAll()
    for key in "1,2,3":  # typed where the focus is, as a person types
        qtbot.keyClick(QApplication.focusWidget(), key)
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return)
    assert window.per_axis.isChecked() and window.search.spins[0].isVisible() and window.patch.spins[0].isVisible()
    assert window.search.value() == (1, 2, 3) and window.patch.value() == 1
    volume = read_volume(window.path).data.astype(np.float32)
    plane = denoise_volume_slice(volume, 10, h=window.h.value(), patch_radius=1, search_radius=(1, 2, 3), backend="cpu")
    _wait_for_preview(qtbot, window, display_plane(window.layouts[0].shown(plane), window.low, window.high))
    window.per_axis.setFocus()
    qtbot.keyClick(window.per_axis, Qt.Key.Key_Space)
    assert not window.search.spins[0].isVisible() and window.search.value() == 3


def test_h_follows_the_weighting_until_the_user_sets_it(qtbot, volume_window) -> None:
    """h follows its suggestion for the weighting and the patch radius (a patch of one voxel
    wants about twice the h: a first-time user's h at patch radius 0 hardly filtered) until the
    user types one."""
    window = volume_window
    estimate = window.estimate
    assert window.h.value() == pytest.approx(suggest_volume_h(estimate, "exponential"), rel=1e-3)
    window.weighting.setFocus()
    qtbot.keyClick(window.weighting, Qt.Key.Key_Up if WEIGHTINGS[0] == "bisquare" else Qt.Key.Key_Down)
    assert window.weighting.currentText() == "bisquare"
    assert window.h.value() == pytest.approx(suggest_volume_h(estimate, "bisquare"), rel=1e-3)
    assert f"h {window.h.value():g} suggested for these settings" in window.noise.text()
    type_into(qtbot, window.patch.spins[2], "0")
    zero = suggest_volume_h(estimate, "bisquare", patch_radius=0)
    assert window.h.value() == pytest.approx(zero, rel=1e-3) and zero > 1.6 * suggest_volume_h(estimate, "bisquare")
    type_into(qtbot, window.h, str(round(zero * 10)))  # far above the noise: said to blur
    assert "times that: every voxel of the search window weighs alike, a blur." in window.noise.text()
    type_into(qtbot, window.h, str(round(zero / 10, 3)))
    assert "times below that: the filter will hardly change the volume." in window.noise.text()
    type_into(qtbot, window.h, "0")  # refused: the box showed 0.00 and the noise line divided by it
    assert window.h.value() > 0 and window.settings()["h"] == window.h.value()
    type_into(qtbot, window.h, "77")  # the user's own h stays whatever the settings
    window.weighting.setFocus()
    qtbot.keyClick(window.weighting, Qt.Key.Key_Down if WEIGHTINGS[0] == "bisquare" else Qt.Key.Key_Up)
    type_into(qtbot, window.patch.spins[2], "2")
    assert window.weighting.currentText() == "exponential" and window.h.value() == 77


def test_ctrl_e_exports_from_a_spin_box_and_the_keys_stay_with_the_planes(
    qtbot, volume_window, tmp_path, monkeypatch
) -> None:
    window = volume_window
    asked = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: asked.append(1) or ("", ""))
    qtbot.mouseClick(window.h.lineEdit(), Qt.MouseButton.LeftButton)
    window.h.lineEdit().selectAll()
    qtbot.keyClicks(window.h.lineEdit(), "30")  # typed, not yet confirmed
    qtbot.keyClick(window.h.lineEdit(), Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    assert asked == [1]  # the export asked where to write, as from the menu
    qtbot.keyClick(window.h.lineEdit(), Qt.Key.Key_Return)
    qtbot.waitUntil(window.slider.hasFocus)  # Return ends the edit: the keys walk the planes again
    start = window.slider.value()
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_Right)
    assert window.slider.value() == start + 1
    qtbot.mouseClick(window.h.lineEdit(), Qt.MouseButton.LeftButton)  # into a box again, then the picture
    qtbot.mouseClick(window.view.viewport(), Qt.MouseButton.LeftButton)
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_Right)
    assert window.slider.hasFocus() and window.slider.value() == start + 2


def test_planes_show_anisotropic_voxels_in_their_proportions(qtbot, tmp_path) -> None:
    """Voxels of 0.5 x 1 x 2.5 (x, y, z, as a NIfTI's zooms) show 0.5 wide and 1 high in a z plane
    and 0.5 wide and 2.5 high in a y plane, chosen from the keyboard (were square pixels)."""
    import nibabel

    voxels = np.random.default_rng(8).normal(100, 10, (16, 12, 10)).astype(np.float32)  # (x, y, z)
    nibabel.save(nibabel.Nifti1Image(voxels, np.diag([0.5, 1.0, 2.5, 1.0])), tmp_path / "aniso.nii.gz")
    window = VolumeWindow(tmp_path / "aniso.nii.gz", backend="cpu")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)

    def shown_proportion() -> float:
        rows, columns = window.view.shown_image().shape[:2]
        rect = window.view.main_view.mapViewToScene(QRectF(0, 0, columns, rows)).boundingRect()
        return rect.width() / rect.height()

    qtbot.waitUntil(lambda: window.view.shown_image() is not None)
    assert shown_proportion() == pytest.approx(16 * 0.5 / (12 * 1.0), rel=0.02)  # z plane: 16 x 12 voxels
    window.axis.setFocus()
    qtbot.keyClick(window.axis, Qt.Key.Key_Down)
    assert window.plane_index[0] == 1
    qtbot.waitUntil(lambda: window.view.shown_image().shape[:2] == (10, 16))
    assert shown_proportion() == pytest.approx(16 * 0.5 / (10 * 2.5), rel=0.02)  # y plane: 16 x 10 voxels
    window.close()


def test_a_hyperstacks_channels_are_shown_one_at_a_time_and_filtered_each_with_its_h(
    qtbot, tmp_path, monkeypatch
) -> None:
    """A first-time user's two-channel hyperstack showed channel 1 only, and the filter summed the
    channels. The channel box (from the keyboard) shows each at its own levels, the channels are
    filtered separately by default, the h box holds the shown channel's h (its own noise's
    suggestion until typed), and the export filters each channel with its own; "together" shares
    one h from the whole volume's noise."""
    tifffile = pytest.importorskip("tifffile")
    rng = np.random.default_rng(21)
    z, y, x = np.mgrid[:12, :24, :26]
    spheres = np.where((z - 6) ** 2 + (y - 12) ** 2 + (x - 13) ** 2 < 25, 3000.0, 500.0)
    stack = np.stack([800 + rng.normal(0, 40, spheres.shape), spheres + rng.normal(0, 80, spheres.shape)], axis=1)
    stack = np.rint(stack).astype(np.uint16)  # Z, C, Y, X
    tifffile.imwrite(tmp_path / "cells.tif", stack, imagej=True, metadata={"axes": "ZCYX"})
    volume = stack.transpose(0, 2, 3, 1).astype(np.float32)
    window = VolumeWindow(tmp_path / "cells.tif", backend="cpu")
    qtbot.addWidget(window)
    window.patch.setValue(1)
    window.search.setValue(1)
    window.view.set_mode("after")
    window.show()
    qtbot.waitExposed(window)
    assert window.channel_mode.currentText() == "separately"
    assert [window.channel.itemText(k) for k in range(window.channel.count())] == ["channel 1", "channel 2"]
    sigmas = [estimate_volume_noise(volume[..., c]).sigma[0] for c in range(2)]
    own = [suggest_volume_h(estimate_volume_noise(volume[..., c])) for c in range(2)]
    assert window.h.value() == pytest.approx(own[0], rel=1e-3)
    assert window.noise.text().startswith(f"Channel 1: noise sigma {sigmas[0]:.3g} (the volume's units)")

    def expected(channel: int, h: float, **options) -> np.ndarray:
        plane = denoise_volume_slice(
            volume[..., channel] if options.get("channels") != "together" else volume,
            6,
            h=h,
            patch_radius=1,
            search_radius=1,
            backend="cpu",
            **options,
        )
        plane = plane[..., channel] if plane.ndim == 3 else plane
        return display_plane(window.layouts[0].shown(plane), *window.levels[channel])

    _wait_for_preview(qtbot, window, expected(0, window.h.value()))
    window.channel.setFocus()
    qtbot.keyClick(window.channel, Qt.Key.Key_Down)
    assert window.channel.currentText() == "channel 2" and window.h.value() == pytest.approx(own[1], rel=1e-3)
    assert window.noise.text().startswith(f"Channel 2: noise sigma {sigmas[1]:.3g} (the volume's units)")
    type_into(qtbot, window.h, "150")
    _wait_for_preview(qtbot, window, expected(1, 150.0))
    window.channel.setFocus()
    qtbot.keyClick(window.channel, Qt.Key.Key_Up)  # channel 1 kept its own h
    assert window.h.value() == pytest.approx(own[0], rel=1e-3)
    target = tmp_path / "out.tif"
    _export_with_ctrl_e(qtbot, window, target, monkeypatch)
    strengths = [own[0], 150.0]  # channel 1 at its suggestion, unrounded, as denoise-volume takes it
    filtered = denoise_volume(
        volume, h=strengths, patch_radius=1, search_radius=1, channels="separately", backend="cpu", channel_axis=3
    )
    np.testing.assert_array_equal(read_volume(target).data, np.clip(np.rint(filtered), 0, 65535).astype(np.uint16))
    window.channel_mode.setFocus()
    qtbot.keyClick(window.channel_mode, Qt.Key.Key_Up)  # together: one h, the whole volume's noise
    assert window.channel_mode.currentText() == "together"
    assert window.h.value() == pytest.approx(suggest_volume_h(window.estimate), rel=1e-3)
    _wait_for_preview(qtbot, window, expected(0, window.h.value(), channels="together"))
    window.close()


# Voxel axes of NIfTI files as scanners and tools write them: (i, j, k) towards these directions.
ORIENTATIONS = ("RAS", "LPS", "LAS", "PIR", "ASL")


def _world_direction(code: str) -> np.ndarray:
    """The unit vector of a direction in NIfTI's RAS+ world."""
    axis, sign = {"R": (0, 1), "L": (0, -1), "A": (1, 1), "P": (1, -1), "S": (2, 1), "I": (2, -1)}[code]
    return np.eye(3)[axis] * sign


def _white_corners(shown: np.ndarray) -> list[tuple[int, int]]:
    """The corners of a shown plane that are white (the marker: the rest is dark noise)."""
    rows, columns = shown.shape[0] - 1, shown.shape[1] - 1
    return [(r, c) for r in (0, rows) for c in (0, columns) if shown[r, c] == 255]


@pytest.mark.parametrize("orientation", ORIENTATIONS)
def test_nifti_planes_are_drawn_as_radiologists_read_them(qtbot, tmp_path, orientation) -> None:
    """Each plane of a NIfTI shows superior (else anterior) up, the patient's right on the left and
    the face on the left, whatever order the file keeps its voxels in (it drew the array's order:
    the MNI152 template's axial planes came upside down). A marker in the corner voxel that is most
    superior, anterior and right is drawn in the top-left corner of the axial, coronal and
    sagittal planes through it, chosen with the axis box from the keyboard."""
    import nibabel

    shape = (10, 11, 13)  # (i, j, k) as the file stores them
    affine = np.eye(4)
    affine[:3, :3] = np.stack([_world_direction(code) for code in orientation], axis=1)
    # The corner voxel: the far end of every (i, j, k) axis that points to S, A or R.
    corner = tuple(size - 1 if code in "SAR" else 0 for size, code in zip(shape, orientation, strict=True))
    voxels = np.random.default_rng(4).normal(100, 5, shape).astype(np.float32)
    voxels[tuple(slice(max(0, k - 2), k + 3) for k in corner)] = 1000  # 3^3 voxels: white on the screen
    nibabel.save(nibabel.Nifti1Image(voxels, affine), tmp_path / f"{orientation}.nii.gz")
    window = VolumeWindow(tmp_path / f"{orientation}.nii.gz", backend="cpu")
    qtbot.addWidget(window)
    window.view.set_mode("before")
    window.show()
    qtbot.waitExposed(window)
    names = [window.axis.itemText(k) for k in range(3)]
    planes = {"S": "axial", "I": "axial", "A": "coronal", "P": "coronal", "R": "sagittal", "L": "sagittal"}
    # The window's (z, y, x) are the file's (k, j, i).
    assert names == [f"{axis} ({planes[code]})" for axis, code in zip("zyx", orientation[::-1], strict=True)]
    described = {
        "axial": "anterior up, the patient's right on the left",
        "coronal": "superior up, the patient's right on the left",
        "sagittal": "superior up, anterior on the left",
    }
    window.axis.setFocus()
    for axis in range(3):
        if axis:
            qtbot.keyClick(window.axis, Qt.Key.Key_Down)
        window.slider.setValue(corner[::-1][axis])
        assert window.plane_index == (axis, corner[::-1][axis])
        assert _white_corners(window.view.shown_image()) == [(0, 0)], names[axis]
        assert window.plane_label.toolTip() == described[names[axis].split("(")[1][:-1]]
    window.close()


def test_planes_of_files_without_anatomy_are_drawn_as_stored(qtbot, tmp_path) -> None:
    """A TIFF stack or .npy says nothing of the body: a z plane is drawn as an image (row 0 at the
    top), planes along y and x with z growing upwards, and no directions are claimed."""
    volume = np.random.default_rng(5).normal(100, 5, (10, 11, 12)).astype(np.float32)
    volume[:3, :3, :3] = 1000  # the first voxels: top-left of z plane 0, bottom-left of y and x plane 0
    np.save(tmp_path / "stack.npy", volume)
    window = VolumeWindow(tmp_path / "stack.npy", backend="cpu")
    qtbot.addWidget(window)
    window.view.set_mode("before")
    window.show()
    qtbot.waitExposed(window)
    assert [window.axis.itemText(k) for k in range(3)] == ["z", "y", "x"]
    window.axis.setFocus()
    for axis, corner in ((0, (0, 0)), (1, (9, 0)), (2, (9, 0))):
        if axis:
            qtbot.keyClick(window.axis, Qt.Key.Key_Down)
        window.slider.setValue(0)
        assert window.plane_index == (axis, 0)
        assert _white_corners(window.view.shown_image()) == [corner]
        assert window.plane_label.toolTip() == ""
    window.close()


def test_closing_during_an_export_asks_and_keeps_it_or_stops_it(qtbot, volume_path, tmp_path, monkeypatch) -> None:
    """Closing the window while its export ran dropped the export without a word (found by a
    first-time user): the window now asks, keeps it by default, and stops it only if told."""
    resume, denoise = threading.Event(), volume_worker_module.denoise_volume

    def held(*arguments, **options):  # an export waits for the question's answer (or 2 s), then runs
        resume.wait(2)
        return denoise(*arguments, **options)

    monkeypatch.setattr(volume_worker_module, "denoise_volume", held)
    targets = iter([tmp_path / "kept.nii.gz", tmp_path / "stopped.nii.gz"])
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(next(targets)), ""))
    window = VolumeWindow(volume_path, backend="cpu")
    qtbot.addWidget(window)
    window.search.setValue(1)
    window.show()
    qtbot.waitExposed(window)
    window.export_action.trigger()
    asked = answer_when_asked(qtbot, "Keep the window open")
    window.close()  # the window manager's close button
    assert asked == ["1 export is not finished. Closing the window stops it; it writes no file."]
    assert window.isVisible()
    resume.set()
    qtbot.waitUntil(lambda: (tmp_path / "kept.nii.gz").exists() and window.export_action.isEnabled(), timeout=60_000)

    resume.clear()
    window.export_action.trigger()
    asked = answer_when_asked(qtbot, "Stop and close")
    window.close()  # stops the export, which runs on (in 2 s) and ends at its first progress
    assert asked and not window.isVisible() and window.worker_thread.thread.isFinished()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".nii.gz")) == ["kept.nii.gz", "scan.nii.gz"]


def test_a_preview_that_waits_for_the_compile_says_so(qtbot, volume_window, monkeypatch) -> None:
    # The status said 'Filtering the slab around this plane...' for the minute of numba's compile.
    _wait_for_preview(qtbot, volume_window)
    monkeypatch.setattr(volume_worker_module, "filter_compiles", lambda backend, volume: True)  # a cold cache
    said = []
    status = volume_window.status
    monkeypatch.setattr(status, "setText", lambda text: said.append(text) or QLabel.setText(status, text))
    volume_window.request_preview()  # as a change of h or a plane asks
    _wait_for_preview(qtbot, volume_window)
    assert COMPILING in said


def _held_slices(monkeypatch) -> tuple[threading.Event, list[tuple[int, threading.Thread]]]:
    """The engine's slice filter held until the returned event is set; the list gathers the plane
    each call was asked for and the thread it ran on."""
    release, asked, slice_of = threading.Event(), [], volume_worker_module.denoise_volume_slice

    def held(volume, index, **options):
        asked.append((index, threading.current_thread()))
        release.wait(30)
        return slice_of(volume, index, **options)

    monkeypatch.setattr(volume_worker_module, "denoise_volume_slice", held)
    return release, asked


def test_planes_walked_quickly_show_only_the_last_ones_preview(qtbot, volume_window, monkeypatch) -> None:
    """Right pressed four times while the first plane's preview still runs: the planes asked for
    in between wait in the worker, each replaced by the next, and are never filtered; the running
    one's answer is dropped on arrival; only the last plane's preview shows. The window answers
    the keys all along: the engine runs off the GUI thread."""
    window = volume_window
    _wait_for_preview(qtbot, window)
    release, asked = _held_slices(monkeypatch)
    shown = []
    set_images = window.view.set_images
    monkeypatch.setattr(window.view, "set_images", lambda b, a: shown.append(a) or set_images(b, a))
    qtbot.keyClick(window.focusWidget(), Qt.Key.Key_Right)
    qtbot.waitUntil(lambda: bool(asked), timeout=5_000)  # plane 11's preview runs, held
    for _ in range(3):
        qtbot.keyClick(window.focusWidget(), Qt.Key.Key_Right)
        qtbot.wait(PREVIEW_DELAY_MS + 100)  # past the delay: each plane's preview is asked for
    assert window.plane_index == (0, 14) and window.status.text().startswith("Filtering")
    release.set()
    _wait_for_preview(qtbot, window, _expected_after(window, 0, 14))
    assert [index for index, _ in asked] == [11, 14]
    assert all(thread is not threading.main_thread() for _, thread in asked)
    filtered = [_expected_after(window, 0, index) for index in (11, 12, 13)]
    assert not [after for after in shown for stale in filtered if np.array_equal(after, stale)]


def test_file_close_while_a_preview_runs_stops_the_worker_cleanly(qtbot, volume_path, monkeypatch) -> None:
    """File > Close while the engine filters a plane: the window waits for that call to end, joins
    its worker's thread (no "QThread: Destroyed while thread is still running") and shows nothing
    of the answer that comes after; no thread of the window is left."""
    window = VolumeWindow(volume_path, backend="cpu")
    qtbot.addWidget(window)
    window.search.setValue(1)
    window.show()
    qtbot.waitExposed(window)
    _wait_for_preview(qtbot, window)
    release, asked = _held_slices(monkeypatch)
    type_into(qtbot, window.h, "200")  # a preview of the plane with another h, held in the engine
    qtbot.waitUntil(lambda: bool(asked), timeout=5_000)
    threading.Timer(0.3, release.set).start()  # the engine's call ends while the window closes
    menu = next(m for m in window.menuBar().findChildren(QMenu) if m.title() == "&File")
    next(a for a in menu.actions() if a.text() == "&Close").trigger()
    assert not window.isVisible() and window.worker_thread.thread.isFinished()
    qtbot.wait(100)  # the held preview's answer, queued to the window, is dropped
    assert window.status.text().startswith("Filtering") and len(asked) == 1


def test_cancel_in_the_export_progress_stops_it_and_writes_nothing(qtbot, volume_window, tmp_path, monkeypatch) -> None:
    """Cancel in the progress dialog while the worker filters the volume: the export stops at its
    next slab, nothing is written, and Export is offered again."""
    window = volume_window
    resume, denoise = threading.Event(), volume_worker_module.denoise_volume

    def held(*arguments, **options):  # the export waits until Cancel was clicked
        resume.wait(30)
        return denoise(*arguments, **options)

    monkeypatch.setattr(volume_worker_module, "denoise_volume", held)
    target = tmp_path / "out.nii.gz"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(target), ""))
    window.export_action.trigger()
    assert not window.export_action.isEnabled()
    dialog = next(d for d in window.findChildren(QProgressDialog) if d.isVisible())
    cancel = next(b for b in dialog.findChildren(QPushButton) if b.text() == "Cancel")
    qtbot.mouseClick(cancel, Qt.MouseButton.LeftButton)
    resume.set()
    message = "Export cancelled: nothing was written."
    qtbot.waitUntil(lambda: window.statusBar().currentMessage() == message, timeout=60_000)
    assert window.export_action.isEnabled() and not target.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no partial file


def test_h_puts_the_keys_in_the_strength_box(qtbot, volume_window) -> None:
    """The volume window's H did nothing; as in the main window it now takes a typed h."""
    window = volume_window
    _wait_for_preview(qtbot, window)
    qtbot.keyClick(window.slider, Qt.Key.Key_H)
    assert window.focusWidget() is window.h
    qtbot.keyClicks(window.h.lineEdit(), "150")
    qtbot.keyClick(window.h.lineEdit(), Qt.Key.Key_Return)
    assert window.h.value() == 150
    _wait_for_preview(qtbot, window, _expected_after(window, 0, 10))


def test_a_region_drawn_on_a_plane_sets_h_from_the_noise_there(qtbot, tmp_path) -> None:
    """The left half of the volume has noise of sigma 4, the right half 40: the automatic estimate
    reads the flattest blocks (the quiet half); a region drawn on the right half reads its noise, and
    h follows it."""
    rng = np.random.default_rng(8)
    volume = np.full((12, 40, 48), 500, np.float32)
    volume[:, :, :24] += rng.normal(0, 4, (12, 40, 24))
    volume[:, :, 24:] += rng.normal(0, 40, (12, 40, 24))
    np.save(tmp_path / "halves.npy", volume)
    window = VolumeWindow(tmp_path / "halves.npy", backend="cpu")
    qtbot.addWidget(window)
    window.view.set_mode("before")
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    before = window.h.value()
    qtbot.keyClick(window.slider, Qt.Key.Key_N)  # Filter > Draw a noise region
    drag(window, frame_point(window, 27.2, 5.2), frame_point(window, 44.8, 30.8))
    x, y, width, height = window.view.roi_box()
    assert x >= 26 and x + width <= 46 and width >= 10 and height >= 20
    index = window.slider.value()
    region = ((index - 2, index + 3), (y, y + height), (x, x + width))  # a z plane of an .npy: drawn as stored
    estimate = estimate_volume_noise(volume, region=region)
    assert 36 < estimate.sigma[0] < 44
    settings = {"weighting": "exponential", "center_weight": "one", "patch_radius": window.patch.value()}
    assert window.h.value() == pytest.approx(float(f"{suggest_volume_h(estimate, **settings):.4g}"))
    assert window.h.value() > 5 * before
    assert f"in your region (z {index - 1}-{index + 3}, y {y + 1}-{y + height}, x {x + 1}-{x + width})" in (
        window.noise.text()
    )
    window.close()


def test_a_dim_channels_psnr_is_in_its_own_range(qtbot, tmp_path, monkeypatch) -> None:
    """A microscopist's dim channel (10..190 beside nuclei up to 2600) read 53.6 -> 61.1 dB: the
    brightest channel's range; in its own it is 31 -> 38 dB."""
    tifffile = pytest.importorskip("tifffile")
    rng = np.random.default_rng(4)
    z, y, x = np.mgrid[:12, :24, :26]
    bright = np.where((z - 6) ** 2 + (y - 12) ** 2 + (x - 13) ** 2 < 25, 2600.0, 100.0)
    dim = np.where(np.abs(y - 12) < 3, 190.0, 10.0) + 0 * z
    clean = np.stack([bright, dim], axis=1)  # Z, C, Y, X
    noisy = np.rint(clean + rng.normal(0, 8, clean.shape)).clip(0).astype(np.uint16)
    tifffile.imwrite(tmp_path / "cells.tif", noisy, imagej=True, metadata={"axes": "ZCYX"})
    tifffile.imwrite(tmp_path / "clean.tif", clean.astype(np.uint16), imagej=True, metadata={"axes": "ZCYX"})
    window = VolumeWindow(tmp_path / "cells.tif", backend="cpu")
    qtbot.addWidget(window)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, **kwargs: (str(tmp_path / "clean.tif"), ""))
    window.reference_action.trigger()
    window.channel.setFocus()
    qtbot.keyClick(window.channel, Qt.Key.Key_Down)
    assert window.channel.currentText() == "channel 2"
    qtbot.waitUntil(lambda: "PSNR against the reference" in window.status.text(), timeout=60_000)
    axis, index = window.plane_index
    layout = window.layouts[axis]
    clean_plane = layout.shown(clean.transpose(0, 2, 3, 1)[index, :, :, 1])
    noisy_plane = layout.shown(noisy.transpose(0, 2, 3, 1)[index, :, :, 1])
    assert f"PSNR against the reference: {psnr(clean_plane, noisy_plane, 180):.2f} dB noisy" in window.status.text()
    window.close()


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_a_region_drawn_on_a_plane_holds_the_voxels_drawn_over(qtbot, volume_path, axis) -> None:
    """NIfTI planes are drawn turned and mirrored (radiological): the region is the voxels under the box."""
    window = VolumeWindow(volume_path, backend="cpu")
    qtbot.addWidget(window)
    layout, index = window.layouts[axis], 7
    numbered = np.arange(np.prod(window.data.shape[:3])).reshape(window.data.shape[:3])
    shown = layout.of(numbered, index)
    box = (2, 3, 5, 4)  # x, y, width, height on the drawn plane
    region = layout.region(box, index, numbered.shape, depth=0)
    under = numbered[tuple(slice(start, stop) for start, stop in region)]
    assert sorted(under.ravel()) == sorted(shown[3:7, 2:7].ravel())
    window.close()


def test_a_reference_volume_gives_each_preview_its_psnr(qtbot, volume_window, tmp_path, monkeypatch) -> None:
    window = volume_window
    clean = np.zeros((20, 18, 16), np.float32)
    clean[5:15, 4:14, 3:13] = 400
    clean += 100
    np.save(tmp_path / "clean.npy", clean)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, **kwargs: (str(tmp_path / "clean.npy"), ""))
    window.reference_action.trigger()
    qtbot.waitUntil(lambda: "PSNR against the reference" in window.status.text(), timeout=60_000)
    noisy = window.data[10, :, :, 0]
    denoised = denoise_volume(window.data[..., 0], h=window.h.value(), backend="cpu", **SETTINGS)[10]
    layout = window.layouts[0]
    clean_plane, noisy_plane, denoised_plane = (layout.shown(plane) for plane in (clean[10], noisy, denoised))
    expected = (
        f"PSNR against the reference: {psnr(clean_plane, noisy_plane, 400):.2f} dB noisy, "
        f"{psnr(clean_plane, denoised_plane, 400):.2f} dB denoised."
    )
    assert window.status.text().endswith(expected)
    # Another volume's shape is refused with its reason; the reference already open stays.
    np.save(tmp_path / "other.npy", clean[:, :, :15])
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, **kwargs: (str(tmp_path / "other.npy"), ""))
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: shown.append(text))
    window.reference_action.trigger()
    assert shown == [
        "other.npy is 20 x 18 x 15 voxels (z, y, x), this volume 20 x 18 x 16 voxels (z, y, x): the reference "
        "must be the same volume without its noise."
    ]
    assert window.reference is not None and window.reference.shape == window.data.shape
