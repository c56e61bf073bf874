"""The window as a person uses it: every action from its key, button or menu, mouse drags on
the picture, what the window then shows. Offscreen, on the CPU, on a 12-frame 96 x 64 clip."""

from __future__ import annotations

import dataclasses
import functools
import subprocess
import threading
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from clips import (
    CLI,
    DATA,
    FLAT_BOX,
    anamorphic_clip,
    chroma_subsampled_clips,
    clip_with_audio,
    cut_short_dv,
    damaged_dvd,
    ffmpeg_pattern,
    panning_texture,
    run_cli,
    write_ffv1,
)
from media_corpus import ClipSpec, plain_pyav_numbers
from media_corpus import write_clip as write_corpus_clip
from PySide6.QtCore import QPointF, QSettings, QStandardPaths, Qt, QThread
from PySide6.QtWidgets import QFileDialog, QLabel
from window_driver import (
    WAIT_MS,
    add_synthetic_noise,
    answer_when_asked,
    click_arrow,
    clip_frames,
    drag,
    frame_point,
    opened,
    press,
    settle,
    type_into,
    wheel,
    write_clip,
)

from nlmeans_studio.engine import (
    COMPILING,
    STAGES,
    NLMParams,
    NoiseEstimate,
    VideoError,
    apply_estimate,
    check_encoder,
    choose_filter,
    estimate_clip_noise,
    estimate_noise_over,
    psnr,
    sure_sample_length,
)
from nlmeans_studio.engine.frames import to_float32
from nlmeans_studio.engine.media.reader import read_frames
from nlmeans_studio.engine.video.luma_chroma import LumaChromaDenoiser, split_estimate, suggest_luma_chroma_h
from nlmeans_studio.engine.video.presets import PRESET_FOLDER, load_preset
from nlmeans_studio.engine.video.preview import ArrayFrames, Previewer, SyntheticNoise, difference_image
from nlmeans_studio.gui import export as export_module
from nlmeans_studio.gui import worker as worker_module
from nlmeans_studio.gui.export import ExportDialog
from nlmeans_studio.gui.window import MainWindow

pytestmark = [
    pytest.mark.qt_log_level_fail("WARNING"),
    pytest.mark.qt_log_ignore("This plugin does not support"),  # the offscreen platform's notice
]
KEY = Qt.Key


def assert_filters_as(window, choice) -> None:
    """The window filters as ``choice`` (``choose_filter``'s): in Y'CbCr at its two strengths, or in
    RGB at its h, exactly (the spin boxes show them to 0.1)."""
    if choice.luma_chroma is None:
        assert window.current_luma_chroma() is None
        assert window.current_params().h == choice.params.h
    else:
        assert window.current_luma_chroma() == choice.luma_chroma


def export_with_dialog(qtbot, window, target, open_dialog) -> ExportDialog:
    """Open the export dialog with ``open_dialog``, type the target, choose FFV1, click Export."""
    open_dialog()
    qtbot.waitUntil(lambda: window.findChild(ExportDialog) is not None and window.findChild(ExportDialog).isVisible())
    dialog = window.findChild(ExportDialog)
    dialog.codec.setCurrentIndex(dialog.codec.findData("ffv1"))
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(target))
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    window.activateWindow()  # a window manager gives the focus back; the offscreen platform does not
    qtbot.waitUntil(window.isActiveWindow)
    return dialog


def exports_done(qtbot, window) -> None:
    qtbot.waitUntil(lambda: window.exports.running is None and not window.exports.rows, timeout=WAIT_MS)


def menu_named(window, title: str):
    """The menu bar's menu whose title reads ``title`` (its & shortcut marker left out)."""
    return next(action.menu() for action in window.menuBar().actions() if action.text().replace("&", "") == title)


def menu_action(menu, text: str):
    return next(action for action in menu.actions() if action.text() == text)


# Export


@pytest.mark.parametrize("entry", ["ctrl+e", "toolbar", "file menu"])
def test_export_from_each_entry_point_writes_a_playable_file(qtbot, window, clip, tmp_path, entry) -> None:
    path, frames = clip
    opened(qtbot, window, path)
    open_dialog = {
        "ctrl+e": lambda: press(qtbot, window, KEY.Key_E, Qt.KeyboardModifier.ControlModifier),
        "toolbar": lambda: qtbot.mouseClick(
            window.toolbar.widgetForAction(window.export_action), Qt.MouseButton.LeftButton
        ),
        "file menu": lambda: menu_action(window.file_menu, "Export…").trigger(),
    }[entry]
    export_with_dialog(qtbot, window, tmp_path / "out.mkv", open_dialog)
    exports_done(qtbot, window)
    # In the status bar's permanent corner, which the toolbar's status tips never wipe.
    qtbot.waitUntil(lambda: "Exported 12 frames to out.mkv" in window.last_export.text(), timeout=WAIT_MS)
    assert window.last_export.isVisible()
    assert len(read_frames(tmp_path / "out.mkv")) == len(frames)


def test_an_export_of_a_truncated_file_names_its_damaged_frames(qtbot, window, tmp_path) -> None:
    """A truncated DVD rip's last frame, filled in by the decoder, is named when its export ends."""
    source, flagged = damaged_dvd(tmp_path, "truncated")
    opened(qtbot, window, source)
    export_with_dialog(qtbot, window, tmp_path / "out.mkv", lambda: window.export_action.trigger())
    exports_done(qtbot, window)
    count = len(flagged)
    note = f"; {count} frame{'s' * (count > 1)} damaged in the source"
    qtbot.waitUntil(lambda: note in window.last_export.text(), timeout=WAIT_MS)
    assert window.banner.isVisible()
    said = f"Exported: {count} frame{'s' * (count > 1)} of the source {'are' if count > 1 else 'is'} damaged (frame"
    assert window.banner.text().startswith(said)
    assert f" {flagged[0] + 1}" in window.banner.text()


def test_a_capture_cut_inside_a_frame_shows_its_whole_frames_and_says_the_cut_one_is_left_out(
    qtbot, window, tmp_path
) -> None:
    """A DV capture cut inside its sixth frame: a new user saw frame 1's picture under "frame 73 /
    73", then an error. The whole frames show, the last one at End, and the banner says why the
    cut one is not there; the noise is estimated."""
    source, _ = cut_short_dv(tmp_path)
    opened(qtbot, window, source)
    qtbot.waitUntil(lambda: window.estimate is not None, timeout=WAIT_MS)
    assert "Sigma per channel" in window.noise.result.text()
    assert "ends inside the frame at 0.167 s, which is left out" in window.banner.text()
    press(qtbot, window, KEY.Key_End)
    qtbot.waitUntil(lambda: "frame 5 / 5" in window.frame_label.text(), timeout=WAIT_MS)
    qtbot.wait(500)  # the frame read, and any error it met said
    assert window.view.shown_image() is not None
    assert "decoding stopped" not in window.banner.text()


def test_the_dialog_offers_the_last_exports_codec_and_greys_those_this_machine_cannot_encode(qtbot, window, clip):
    """A new user on a machine without a GPU was offered NVENC, and the dialog forgot the codec chosen."""
    opened(qtbot, window, clip[0])
    press(qtbot, window, KEY.Key_E, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.findChild(ExportDialog) is not None and window.findChild(ExportDialog).isVisible())
    dialog = window.findChild(ExportDialog)
    items = dialog.codec.model()
    for row in range(dialog.codec.count()):
        try:
            check_encoder(dialog.codec.itemData(row))
        except VideoError as error:
            assert not items.item(row).isEnabled() and items.item(row).toolTip() == str(error)
        else:
            assert items.item(row).isEnabled()
    assert items.item(dialog.codec.currentIndex()).isEnabled()
    dialog.codec.setCurrentIndex(dialog.codec.findData("ffv1"))
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    exports_done(qtbot, window)
    press(qtbot, window, KEY.Key_E, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: any(d.isVisible() for d in window.findChildren(ExportDialog)))
    dialog = next(d for d in window.findChildren(ExportDialog) if d.isVisible())
    assert dialog.codec.currentData() == "ffv1" and dialog.path.text().endswith("-denoised-2.mkv")
    dialog.reject()


def test_a_second_export_is_offered_a_name_that_does_not_replace_the_first(qtbot, window, clip) -> None:
    path, _ = clip
    opened(qtbot, window, path)
    for name in ("clip-denoised.mkv", "clip-denoised-2.mkv"):
        press(qtbot, window, KEY.Key_E, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: any(d.isVisible() for d in window.findChildren(ExportDialog)))
        dialog = next(d for d in window.findChildren(ExportDialog) if d.isVisible())
        assert dialog.path.text() == str(path.with_name(name)) and not dialog.replaces.isVisible()
        qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)  # the proposal as it is
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow)
        exports_done(qtbot, window)
        assert len(read_frames(path.with_name(name))) == 12


def held_exports(monkeypatch, seconds: float = WAIT_MS / 1000) -> threading.Event:
    """Exports that wait, before their first frame, until the returned event is set (or ``seconds``)."""
    resume, denoise_file = threading.Event(), export_module.denoise_file

    def held(*arguments, **options):
        resume.wait(seconds)
        return denoise_file(*arguments, **options)

    monkeypatch.setattr(export_module, "denoise_file", held)
    return resume


def export_dialog_opened(qtbot, window) -> ExportDialog:
    """Ctrl+E pressed in the window (made active first, as a click would): the dialog it opens."""
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    press(qtbot, window, KEY.Key_E, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: any(d.isVisible() for d in window.findChildren(ExportDialog)))
    return next(d for d in window.findChildren(ExportDialog) if d.isVisible())


def test_an_export_in_the_queue_is_never_written_over_by_the_next(qtbot, window, clip, monkeypatch) -> None:
    # A first-time user pressed Ctrl+E, Return twice: both dialogs proposed the same name while
    # the first export still ran, and the second replaced its file.
    path, _ = clip
    opened(qtbot, window, path)
    resume = held_exports(monkeypatch)  # the first export runs until the second dialog has been tried
    first = export_dialog_opened(qtbot, window)
    qtbot.mouseClick(first.export_button, Qt.MouseButton.LeftButton)
    second = export_dialog_opened(qtbot, window)
    assert second.path.text() == str(path.with_name("clip-denoised-2.mkv"))  # the first is not on disk yet
    second.path.clear()
    qtbot.keyClicks(second.path, str(path.with_name("clip-denoised.mkv")))
    assert "An export in the queue writes this file" in second.replaces.text()
    assert not second.export_button.isEnabled()
    second.reject()
    resume.set()
    exports_done(qtbot, window)
    assert len(read_frames(path.with_name("clip-denoised.mkv"))) == 12


def test_closing_during_an_export_asks_and_keeps_it_or_stops_it(qtbot, window, clip, monkeypatch) -> None:
    # A first-time user closed the window while an export ran: the export was dropped without a word.
    path, _ = clip
    opened(qtbot, window, path)
    resume = held_exports(monkeypatch, seconds=2)  # each export waits for the question's answer (or 2 s)

    def export() -> None:
        qtbot.mouseClick(export_dialog_opened(qtbot, window).export_button, Qt.MouseButton.LeftButton)
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow)

    export()
    asked = answer_when_asked(qtbot, "Keep the window open")
    press(qtbot, window, KEY.Key_Q, Qt.KeyboardModifier.ControlModifier)  # File > Quit
    assert asked == ["1 export is not finished. Closing the window stops it; it writes no file."]
    assert window.isVisible() and window.exports.rows  # kept, and running
    resume.set()
    exports_done(qtbot, window)
    assert len(read_frames(path.with_name("clip-denoised.mkv"))) == 12

    resume.clear()
    export()  # the second proposes clip-denoised-2.mkv
    asked = answer_when_asked(qtbot, "Stop and close")
    press(qtbot, window, KEY.Key_Q, Qt.KeyboardModifier.ControlModifier)  # stopped: it runs on in 2 s, cancelled
    assert asked and not window.isVisible()
    assert sorted(p.name for p in path.parent.iterdir() if "denoised" in p.name) == ["clip-denoised.mkv"]


def test_the_sample_is_exported_to_the_users_videos_not_the_applications_folder(qtbot, window, clip, monkeypatch):
    # A first-time user's export of the bundled sample was proposed inside the installed package.
    path, _ = clip
    monkeypatch.setattr(export_module, "SAMPLE_CLIP", path)  # this clip plays the bundled sample
    opened(qtbot, window, path)
    window.export_action.trigger()
    qtbot.waitUntil(lambda: any(d.isVisible() for d in window.findChildren(ExportDialog)))
    dialog = next(d for d in window.findChildren(ExportDialog) if d.isVisible())
    proposed = Path(dialog.path.text())
    videos = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.MoviesLocation))
    assert proposed.name == "clip-denoised.mkv" and proposed.parent in (videos, Path.home())
    dialog.reject()


def test_the_export_dialog_offers_a_master_its_own_kind(qtbot, window, tmp_path) -> None:
    """An editor's ProRes 4:2:2 10-bit master was offered H.264 4:2:0 in .mp4: its export, left as
    proposed, replaced a master with a delivery file. The dialog offers ProRes in .mov, and says nothing
    is lost; the codec follows the name's container (H.264 in .mp4) until one is chosen, and H.264,
    chosen, names what it halves."""
    master = tmp_path / "master.mov"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-t", "0.4",
         "-c:v", "prores_ks", "-pix_fmt", "yuv422p10le", str(master)],
        check=True, timeout=60,
    )  # fmt: skip
    opened(qtbot, window, master)
    window.export_action.trigger()
    qtbot.waitUntil(lambda: window.findChild(ExportDialog) is not None and window.findChild(ExportDialog).isVisible())
    dialog = window.findChild(ExportDialog)
    assert dialog.codec.currentData() == "prores"
    assert Path(dialog.path.text()).name == "master-denoised.mov" and not dialog.chroma.isVisible()
    for name, codec in (("out.mp4", "h264"), ("out.mkv", "prores"), ("out%06d.tif", "h264"), ("out.mov", "prores")):
        dialog.path.clear()
        qtbot.keyClicks(dialog.path, str(tmp_path / name))  # the codec follows the name's container (a delivery's .mp4)
        assert dialog.codec.currentData() == codec, name
    dialog.codec.setCurrentIndex(dialog.codec.findData("h264"))  # chosen: it stays
    assert Path(dialog.path.text()).name == "out.mov"  # .mov holds H.264 too: the name is kept
    assert "H.264 is written 4:2:0" in dialog.chroma.text() and dialog.chroma.isVisible()
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(tmp_path / "out.mkv"))
    assert dialog.codec.currentData() == "h264"
    dialog.reject()


def test_the_export_dialog_says_when_no_container_fits_the_name_and_waits(qtbot, window, clip, tmp_path) -> None:
    opened(qtbot, window, clip[0])
    window.export_action.trigger()
    qtbot.waitUntil(lambda: window.findChild(ExportDialog) is not None and window.findChild(ExportDialog).isVisible())
    dialog = window.findChild(ExportDialog)
    dialog.codec.setCurrentIndex(dialog.codec.findData("h264"))
    for name, message in [
        ("out.xyz", "'.xyz' is not a container this tool writes"),
        ("frame.png", "for an image sequence put the frame number's place in the name: frame%06d.png"),
        ("no such folder/out.mp4", f"the folder {tmp_path / 'no such folder'} does not exist"),
        (clip[0].name, "the output must not be the input"),
        ("out.avi", "a .avi file holds ffv1 here, not h264; choose .mkv, .mp4, .mov or .ts for h264, or another codec"),
    ]:
        dialog.path.clear()
        qtbot.keyClicks(dialog.path, str(tmp_path / name))
        assert message in dialog.replaces.text() and dialog.replaces.isVisible()
        assert "--" not in dialog.replaces.text()  # no command line's option: the window has its own words
        assert not dialog.export_button.isEnabled()
    dialog.codec.setCurrentIndex(dialog.codec.findData("ffv1"))  # an .avi file holds it: the name stays
    assert dialog.path.text().endswith("out.avi") and dialog.export_button.isEnabled()
    assert not dialog.replaces.isVisible()
    dialog.reject()


def test_choosing_a_codec_keeps_a_name_whose_container_holds_it(qtbot, window, clip, tmp_path) -> None:
    """A restorer typed clip-lossless.avi, then chose ffv1 (which .avi and .mxf hold): the name
    silently became clip-lossless.mkv. A name is changed only where its container cannot hold
    the codec, and the dialog says so."""
    opened(qtbot, window, clip[0])
    dialog = export_dialog_opened(qtbot, window)
    for name in ("clip-lossless.avi", "clip-lossless.mxf"):
        dialog.codec.setCurrentIndex(dialog.codec.findData("h264"))
        dialog.path.clear()
        qtbot.keyClicks(dialog.path, str(tmp_path / name))
        assert "not h264" in dialog.replaces.text()  # neither holds h264
        dialog.codec.setCurrentIndex(dialog.codec.findData("ffv1"))
        assert dialog.path.text() == str(tmp_path / name) and dialog.export_button.isEnabled()
        assert not dialog.renamed.isVisible()
    dialog.codec.setCurrentIndex(dialog.codec.findData("h265"))  # .mxf does not hold it
    assert dialog.path.text() == str(tmp_path / "clip-lossless.mp4") and dialog.export_button.isEnabled()
    assert dialog.renamed.isVisible() and "Renamed from clip-lossless.mxf" in dialog.renamed.text()
    qtbot.keyClicks(dialog.path, "x")  # the note is about the name the dialog gave, until the name is edited
    assert not dialog.renamed.isVisible()


def test_the_export_dialog_refuses_mxf_for_audio_mxf_cannot_hold(qtbot, window, tmp_path) -> None:
    """It said "1 audio / subtitle stream(s) copied unchanged" and the export failed at its end."""
    opened(qtbot, window, clip_with_audio(tmp_path / "aac.mkv", "aac", 48000))
    window.export_action.trigger()
    qtbot.waitUntil(lambda: window.findChild(ExportDialog) is not None and window.findChild(ExportDialog).isVisible())
    dialog = window.findChild(ExportDialog)
    dialog.codec.setCurrentIndex(dialog.codec.findData("ffv1"))
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(tmp_path / "out.mxf"))
    assert "a .mxf file holds 48 kHz PCM audio only" in dialog.replaces.text() and dialog.replaces.isVisible()
    assert not dialog.export_button.isEnabled()
    dialog.reject()


def test_the_export_dialog_keeps_24_bit_pcm_in_the_sources_mov_and_says_what_mp4_does(qtbot, window, tmp_path):
    """An archivist's ProRes .mov with 24-bit PCM: the dialog proposed .mp4 and said "copied
    unchanged"; MP4 keeps PCM as 'ipcm', which FFmpeg 5.1 read as 16-bit (full-scale noise)."""
    source = clip_with_audio(tmp_path / "a.mov", "pcm_s24le", 48000, "prores_ks", "yuv422p10le")
    opened(qtbot, window, source)
    dialog = export_dialog_opened(qtbot, window)
    assert dialog.path.text() == str(tmp_path / "a-denoised.mov")
    assert dialog.streams.text() == "1 audio / subtitle stream(s) copied unchanged"
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(tmp_path / "a-denoised.mp4"))
    assert "copied as they are, but a .mp4 file keeps PCM audio (pcm_s24le) as 'ipcm'" in dialog.streams.text()
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(tmp_path / "a-denoised.mov"))
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    window.activateWindow()
    exports_done(qtbot, window)
    with av.open(str(tmp_path / "a-denoised.mov")) as output:
        assert output.format.name.startswith("mov")
        assert [stream.codec_context.name for stream in output.streams.audio] == ["pcm_s24le"]


def test_the_export_dialog_says_when_h264_halves_a_422_masters_chroma(qtbot, window, tmp_path) -> None:
    source = clip_with_audio(tmp_path / "a.mov", "pcm_s24le", 48000, "prores_ks", "yuv422p10le")
    opened(qtbot, window, source)
    dialog = export_dialog_opened(qtbot, window)
    dialog.codec.setCurrentIndex(dialog.codec.findData("h264"))
    assert dialog.chroma.isVisible()
    assert dialog.chroma.text().startswith("H.264 is written 4:2:0, with half the source's chroma rows (4:2:2")
    dialog.codec.setCurrentIndex(dialog.codec.findData("prores"))
    assert not dialog.chroma.isVisible()
    dialog.reject()


def test_the_export_dialog_says_when_ffv1_would_write_anamorphic_pixels_square(qtbot, window, tmp_path) -> None:
    source = anamorphic_clip(tmp_path / "tape.mkv", seconds=0.2)
    opened(qtbot, window, source)
    dialog = export_dialog_opened(qtbot, window)
    dialog.codec.setCurrentIndex(dialog.codec.findData("ffv1"))
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(tmp_path / "tape-denoised.mkv"))
    assert dialog.chroma.isVisible()
    assert "FFV1 in .mkv does not carry the source's pixel aspect ratio (10:11, shown 40:33)" in dialog.chroma.text()
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(tmp_path / "tape-denoised.mxf"))
    assert not dialog.chroma.isVisible()
    dialog.reject()


def test_cancel_stops_the_export_and_removes_its_file_and_the_next_export_runs(qtbot, window, clip, tmp_path):
    opened(qtbot, window, clip[0])
    resume = threading.Event()
    export_with_dialog(qtbot, window, tmp_path / "cancelled.mkv", window.export_action.trigger)
    row = window.exports.running
    # The export's thread waits at its first frame until Cancel was clicked: the click always
    # lands while the export runs, however fast the machine.
    window.exports.worker_thread.worker.progressed.connect(
        lambda *_: resume.wait(WAIT_MS / 1000), Qt.ConnectionType.DirectConnection
    )
    qtbot.waitUntil(lambda: "frames" in row.status.text(), timeout=WAIT_MS)
    qtbot.mouseClick(row.cancel, Qt.MouseButton.LeftButton)
    resume.set()
    exports_done(qtbot, window)
    # Said in the status bar's corner, not in the red banner: the user's own doing, not an error.
    assert window.last_export.text() == "Export cancelled; no file was written." and not window.banner.isVisible()
    assert not (tmp_path / "cancelled.mkv").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no partial file
    export_with_dialog(qtbot, window, tmp_path / "after.mkv", window.export_action.trigger)
    exports_done(qtbot, window)
    assert len(read_frames(tmp_path / "after.mkv")) == 12


def test_a_failed_exports_message_goes_when_the_next_export_starts(qtbot, window, clip, tmp_path, monkeypatch):
    """A new user saw "Export failed: ... No space left on device" stay up over the next export, to a good disk."""
    opened(qtbot, window, clip[0])
    (tmp_path / "gone").mkdir()
    resume = held_exports(monkeypatch)
    export_with_dialog(qtbot, window, tmp_path / "gone" / "out.mkv", window.export_action.trigger)
    (tmp_path / "gone").rmdir()  # the folder is gone before the export writes (a drive unplugged)
    resume.set()
    exports_done(qtbot, window)
    qtbot.waitUntil(lambda: window.banner.isVisible(), timeout=WAIT_MS)
    assert window.banner.text().startswith("Export failed: ")
    export_with_dialog(qtbot, window, tmp_path / "after.mkv", window.export_action.trigger)
    assert not window.banner.isVisible()
    exports_done(qtbot, window)
    assert len(read_frames(tmp_path / "after.mkv")) == 12


def test_a_last_frame_before_the_first_is_refused_not_ignored(qtbot, window, clip) -> None:
    """First frame 10, last frame 5: the last field showed 5 while the range kept 10 to 12, and
    Export wrote those. The dialog says what is wrong and Export waits for a range."""
    opened(qtbot, window, clip[0])
    dialog = export_dialog_opened(qtbot, window)
    for box, text in ((dialog.first, "10"), (dialog.last, "5")):
        qtbot.mouseClick(box.lineEdit(), Qt.MouseButton.LeftButton)
        box.lineEdit().selectAll()
        qtbot.keyClicks(box.lineEdit(), text)
    assert dialog.span.text() == "The last frame must not be before the first."
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    qtbot.keyClick(dialog.last.lineEdit(), KEY.Key_Return)
    assert dialog.isVisible() and not dialog.export_button.isEnabled() and not window.exports.rows
    dialog.last.lineEdit().selectAll()
    qtbot.keyClicks(dialog.last.lineEdit(), "11")
    assert dialog.span.text().startswith("2 frames") and dialog.export_button.isEnabled()
    assert dialog.settings().frames == range(9, 11)
    dialog.last.lineEdit().selectAll()
    qtbot.keyClicks(dialog.last.lineEdit(), "10")
    assert dialog.span.text().startswith("1 frame,")  # one in and out mark: one frame, said so
    dialog.reject()


def test_an_image_sequence_is_said_to_carry_no_audio_and_no_codec(qtbot, window, tmp_path) -> None:
    """An export to f%06d.tif: the dialog said the clip's audio was copied and showed h264, and
    the images came out without either."""
    spec = ClipSpec("sound.mkv", "ffv1", pixel_format="bgr0", size=(48, 128), frames=12, audio=True)
    opened(qtbot, window, write_corpus_clip(tmp_path, spec))
    dialog = export_dialog_opened(qtbot, window)

    def said() -> str:
        return " | ".join(label.text() for label in dialog.findChildren(QLabel) if label.isVisible())

    assert "1 audio / subtitle stream(s) copied unchanged" in said()
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(tmp_path / "f%06d.tif"))
    assert "copied" not in said() and "an image sequence carries no audio or subtitles" in said()
    assert "Codec" in said() and "not used: an image sequence is written as its images' format" in said()
    assert not dialog.codec.isEnabled() and not dialog.crf.isEnabled() and dialog.export_button.isEnabled()
    assert dialog.describe().endswith(", images")  # the queue's row
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(tmp_path / "out.mp4"))
    assert "1 audio / subtitle stream(s) copied unchanged" in said() and "not used" not in said()
    assert dialog.codec.currentData() == "h264" and dialog.codec.isEnabled() and dialog.crf.isEnabled()  # .mp4's
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(tmp_path / "out.mkv"))
    assert dialog.codec.currentData() == "ffv1" and not dialog.crf.isEnabled()  # an FFV1 source's own kind
    dialog.reject()


def test_a_scanned_sequence_is_proposed_as_a_sequence_of_its_format(qtbot, window, tmp_path) -> None:
    """A restorer's DPX scans were proposed as %06d-denoised.mp4, which the dialog took and the
    export then refused; a pattern of another format is refused as it is typed."""
    import subprocess

    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "3",
         "-pix_fmt", "gbrp10le", "-start_number", "86400", str(tmp_path / "%06d.dpx")],
        check=True,
    )  # fmt: skip
    opened(qtbot, window, tmp_path / "%06d.dpx")
    dialog = export_dialog_opened(qtbot, window)
    assert dialog.path.text() == str(tmp_path / "%06d-denoised.dpx") and dialog.export_button.isEnabled()
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(tmp_path / "%06d.mp4"))
    said = " | ".join(label.text() for label in dialog.findChildren(QLabel) if label.isVisible())
    assert "image sequences are written as .png" in said and not dialog.export_button.isEnabled()
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(tmp_path / "%06d-denoised.dpx"))
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    exports_done(qtbot, window)
    assert sorted(path.name for path in tmp_path.glob("*-denoised.dpx")) == [
        f"{n:06d}-denoised.dpx" for n in range(86400, 86403)
    ]


def test_a_scanned_sequence_exports_at_the_frame_rate_chosen(qtbot, window, tmp_path) -> None:
    """A restorer's 24 fps scans became 25 fps video, FFmpeg's rate for images, which carry none."""
    import subprocess

    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "3",
         str(tmp_path / "%04d.png")],
        check=True,
    )  # fmt: skip
    opened(qtbot, window, tmp_path / "%04d.png")
    dialog = export_dialog_opened(qtbot, window)
    assert dialog.frame_rate.isVisible() and dialog.frame_rate.currentData() == 25.0
    dialog.frame_rate.setFocus()
    qtbot.keyClick(dialog.frame_rate, KEY.Key_Up)  # 25 -> 24
    assert dialog.frame_rate.currentData() == 24.0 and "0.000 s to 0.125 s" in dialog.span.text()
    dialog.path.clear()
    qtbot.keyClicks(dialog.path, str(tmp_path / "reel.mkv"))
    qtbot.mouseClick(dialog.export_button, Qt.MouseButton.LeftButton)
    exports_done(qtbot, window)
    with av.open(str(tmp_path / "reel.mkv")) as container:
        assert container.streams.video[0].average_rate == 24
    assert len(read_frames(tmp_path / "reel.mkv")) == 3
    dialog = export_dialog_opened(qtbot, window)  # the rate offered first next time
    assert dialog.frame_rate.currentData() == 24.0
    dialog.reject()


def test_exports_queue_and_run_one_after_another(qtbot, window, clip, tmp_path) -> None:
    opened(qtbot, window, clip[0])
    resume = threading.Event()
    export_with_dialog(qtbot, window, tmp_path / "first.mkv", window.export_action.trigger)
    window.exports.worker_thread.worker.progressed.connect(
        lambda *_: resume.wait(WAIT_MS / 1000), Qt.ConnectionType.DirectConnection
    )
    press(qtbot, window, KEY.Key_Right)
    press(qtbot, window, KEY.Key_I)
    export_with_dialog(qtbot, window, tmp_path / "second.mkv", window.export_action.trigger)
    assert len(window.exports.rows) == 2 and "2 in the queue" in window.exports.title.text()
    assert window.exports.rows[1].status.text() == "waiting"
    resume.set()
    exports_done(qtbot, window)
    assert len(read_frames(tmp_path / "first.mkv")) == 12 and len(read_frames(tmp_path / "second.mkv")) == 11


def mark_frames(qtbot, window, first: int, last: int) -> None:
    """From frame 0: Right to ``first``, I, Right to ``last``, O."""
    for _ in range(first):
        press(qtbot, window, KEY.Key_Right)
    press(qtbot, window, KEY.Key_I)
    for _ in range(last - first):
        press(qtbot, window, KEY.Key_Right)
    press(qtbot, window, KEY.Key_O)


def test_in_and_out_marks_show_as_timecode_and_set_the_export_range(qtbot, window, clip, tmp_path) -> None:
    path, frames = clip
    opened(qtbot, window, path)
    mark_frames(qtbot, window, 3, 7)
    assert "00:00:00:07" in window.frame_label.text() and "in 00:00:00:03 out 00:00:00:07" in window.frame_label.text()
    dialog = export_with_dialog(qtbot, window, tmp_path / "range.mkv", window.export_action.trigger)
    assert (dialog.first.value(), dialog.last.value()) == (
        4,
        8,
    ) and dialog.span.text() == "5 frames, 0.120 s to 0.320 s"
    exports_done(qtbot, window)
    np.testing.assert_array_equal(read_frames(tmp_path / "range.mkv")[:, :, :, 0] > 150, frames[3:8, :, :, 0] > 150)
    assert window.frame_slider.marked == (3, 7)  # drawn along the timeline
    press(qtbot, window, KEY.Key_X, Qt.KeyboardModifier.AltModifier)
    assert " in " not in window.frame_label.text() and window.frame_slider.marked is None


def test_a_masters_timecode_is_the_timelines_and_the_exports(qtbot, window, tmp_path) -> None:
    """A ProRes master at 01:00:00:00 read 00:00:00:00 on the timeline, and its export had no timecode:
    the readout counts from the master's own (drop-frame at 29.97), and a range exported from a
    mark in starts at the mark's timecode."""
    source = tmp_path / "master.mov"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30000/1001", "-t", "2.1",
         "-c:v", "prores_ks", "-timecode", "00:00:59;28", str(source)],
        check=True, timeout=60,
    )  # fmt: skip
    opened(qtbot, window, source)
    assert window.frame_label.text().startswith("00:00:59;28 · frame 1 /")
    mark_frames(qtbot, window, 2, 40)  # frame 2 is 00:01:00;02: ;00 and ;01 are skipped at the minute
    assert "in 00:01:00;02 out 00:01:01;10" in window.frame_label.text()
    export_with_dialog(qtbot, window, tmp_path / "range.mkv", window.export_action.trigger)
    exports_done(qtbot, window)
    with av.open(str(tmp_path / "range.mkv")) as written:  # Matroska's tag: TIMECODE
        assert {name.lower(): value for name, value in written.metadata.items()}["timecode"] == "00:01:00;02"


def test_marks_export_exactly_their_frames_on_a_variable_frame_rate(qtbot, window, tmp_path) -> None:
    """Frames shown at irregular times: the export range comes from the frames' own times, not
    from frame numbers over the nominal rate (which would cut a frame early or late)."""
    times = (0, 40, 100, 120, 200, 210, 290, 330, 400, 480, 500, 560)  # milliseconds
    spec = ClipSpec("vfr.mkv", "ffv1", pixel_format="bgr0", size=(48, 128), frames=len(times), times=times)
    path = write_corpus_clip(tmp_path, spec)
    opened(qtbot, window, path)
    mark_frames(qtbot, window, 3, 7)
    # The readout gives the frames' own times, not frames counted at the average rate (a phone's clip).
    assert "00:00:00.330 · frame 8 / 12 · in 00:00:00.120 out 00:00:00.330" in window.frame_label.text()
    dialog = export_with_dialog(qtbot, window, tmp_path / "range.mkv", window.export_action.trigger)
    assert dialog.span.text() == "5 frames, 0.120 s to 0.400 s"
    exports_done(qtbot, window)
    assert plain_pyav_numbers(tmp_path / "range.mkv") == [3, 4, 5, 6, 7]


def test_marks_export_exactly_their_frames_at_an_ntsc_rate(qtbot, window, tmp_path) -> None:
    """29.97 fps, with timestamps in 1/30000 s (issue 32): Home, Right x10, I (frame 11,
    00:00:00:10), Right x50, O, Ctrl+E exports frames 10 to 60, both marks included. The range
    went through the dialog as seconds rounded to milliseconds, which lost the in-frame and took
    the frame after the out-frame."""
    spec = ClipSpec("ntsc.mp4", "libx264", size=(32, 128), rate=Fraction(30000, 1001), frames=120, gop=30)
    path = write_corpus_clip(tmp_path, spec)
    opened(qtbot, window, path)
    press(qtbot, window, KEY.Key_Home)
    mark_frames(qtbot, window, 10, 60)
    assert (
        "frame 61 / 120" in window.frame_label.text() and "in 00:00:00:10 out 00:00:02:00" in window.frame_label.text()
    )
    ctrl_e = functools.partial(press, qtbot, window, KEY.Key_E, Qt.KeyboardModifier.ControlModifier)
    dialog = export_with_dialog(qtbot, window, tmp_path / "range.mkv", ctrl_e)
    assert (dialog.first.value(), dialog.last.value()) == (11, 61)  # as the window numbers frames
    assert dialog.span.text() == "51 frames, 0.334 s to 2.035 s"
    exports_done(qtbot, window)
    assert plain_pyav_numbers(tmp_path / "range.mkv") == list(range(10, 61))


def test_estimate_then_export(qtbot, window, clip, tmp_path) -> None:
    opened(qtbot, window, clip[0])
    qtbot.mouseClick(window.noise.estimate, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.estimate is not None and window.estimate.method != "region", timeout=WAIT_MS)
    assert "Sigma per channel" in window.noise.result.text()
    export_with_dialog(qtbot, window, tmp_path / "estimated.mkv", window.export_action.trigger)
    exports_done(qtbot, window)
    assert len(read_frames(tmp_path / "estimated.mkv")) == 12


def test_the_window_measures_the_noise_over_the_clip_as_the_command_line_does(qtbot, window, tmp_path) -> None:
    # The first two frames are far noisier than the rest (a user's phone clip read 10.7 levels
    # there, 7.7 over the clip): the window, on opening and on "Estimate noise", takes the
    # median of pairs spread over the clip, as denoise --noise auto does, and SURE's factor on
    # the clip's middle frames, so both choose the same strengths.
    rng = np.random.default_rng(3)
    sigmas = np.array([24, 24] + [6] * 10, dtype=float)[:, None, None, None]
    noisy = clip_frames() + sigmas * rng.standard_normal((12, 64, 96, 3))
    write_clip(tmp_path / "noisy.mkv", np.clip(np.rint(noisy), 0, 255).astype(np.uint8))
    expected = estimate_clip_noise(tmp_path / "noisy.mkv")
    assert expected.average_sigma < 9
    opened(qtbot, window, tmp_path / "noisy.mkv")
    qtbot.waitUntil(lambda: window.estimate is not None, timeout=WAIT_MS)
    assert window.estimate.average_sigma == pytest.approx(expected.average_sigma, rel=1e-6)
    params = window.current_params()
    middle = (12 - sure_sample_length(params)) // 2
    sample = read_frames(tmp_path / "noisy.mkv")[middle : middle + sure_sample_length(params)]
    choice = choose_filter(expected, params, matrix="bt601", sample=sample, backend="cpu")  # as denoise does
    assert choice.how == "SURE on the clip"
    assert_filters_as(window, choice)
    press(qtbot, window, KEY.Key_End)  # the last frame: the button measures the clip all the same
    window.noise.clear_estimate()
    qtbot.mouseClick(window.noise.estimate, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "Sigma per channel" in window.noise.result.text(), timeout=WAIT_MS)
    assert window.estimate.average_sigma == pytest.approx(expected.average_sigma, rel=1e-6)
    assert "the boxes are its flat blocks on frame" in window.statusBar().currentMessage()


def test_auto_filters_an_rgb_clip_in_rgb_where_sure_finds_it_better(qtbot, window, tmp_path) -> None:
    """Rocket's sky with white noise in an RGB file: auto reads "RGB" and shows one h, as denoise
    chooses; off and back, auto's mode returns. The same frames in a Y'CbCr file, opened next,
    stay in Y'CbCr. Each export equals denoise's file frame for frame (the window exported the
    strengths as its spin boxes round them: within 1 level)."""
    with np.load(DATA / "rocket_frames.npz") as archive:
        clean = archive["frames"]
    noisy = np.clip(np.rint(clean + np.random.default_rng(1).normal(0, 10, clean.shape)), 0, 255).astype(np.uint8)
    panel = window.parameters
    for pixel_format in ("bgr0", "yuv444p"):
        path = tmp_path / f"rocket-{pixel_format}.mkv"
        write_ffv1(path, noisy, pixel_format=pixel_format)
        opened(qtbot, window, path)
        qtbot.waitUntil(lambda: window.estimate is not None, timeout=WAIT_MS)
        settle(qtbot, window)
        rgb = pixel_format == "bgr0"
        sample = read_frames(path)  # three frames: all of them SURE's sample
        choice = choose_filter(
            estimate_clip_noise(path), window.current_params(), matrix="bt601", sample=sample, rgb_allowed=rgb
        )
        assert (choice.luma_chroma is None) == rgb  # as denoise chooses for this file
        assert_filters_as(window, choice)
        auto = "Auto (from the noise): RGB" if rgb else "Auto (from the noise): Y'CbCr"
        assert panel.luma_chroma.currentText() == auto
        assert panel.h.isVisibleTo(panel) == rgb and panel.h_luma.isVisibleTo(panel) != rgb
        expected = Previewer(ArrayFrames(sample), "cpu").render(
            window.frame_slider.value(), window.current_params(), None, window.current_luma_chroma()
        )
        np.testing.assert_array_equal(window.preview.after, expected.after)
        exported, denoised = tmp_path / f"window-{pixel_format}.mkv", tmp_path / f"cli-{pixel_format}.mkv"
        export_with_dialog(qtbot, window, exported, window.export_action.trigger)
        exports_done(qtbot, window)
        command = [*CLI, "denoise", str(path), str(denoised), "--codec", "ffv1", "--patch-radius", "2"]  # the fixture's
        run_cli(command, check=True, timeout=300)
        for ours, theirs in zip(read_frames(exported), read_frames(denoised), strict=True):
            np.testing.assert_array_equal(ours, theirs)
        if rgb:
            choose_luma_chroma(qtbot, window, "Off")
            assert window.current_luma_chroma() is None and panel.luma_chroma.currentText() == "Off"
            choose_luma_chroma(qtbot, window, auto)
            assert_filters_as(window, choice)


def test_a_preset_s_strengths_are_chosen_for_its_window_as_the_command_line_chooses_them(qtbot, window, tmp_path):
    """Presets > Light scaled SURE's factor for the default window (a new user's clip: 2.4/2.3 in the
    window, 2.7/2.5 from denoise --filter-preset light, 0.64 dB lower): SURE now chooses again for
    the preset's window, as the command line does; "Reset to suggested" chooses for the default one."""
    with np.load(DATA / "rocket_frames.npz") as archive:
        clean = archive["frames"]
    noisy = np.clip(np.rint(clean + np.random.default_rng(2).normal(0, 10, clean.shape)), 0, 255).astype(np.uint8)
    path = tmp_path / "rocket.mkv"
    write_ffv1(path, noisy)
    opened(qtbot, window, path)
    estimate, sample = estimate_clip_noise(path), read_frames(path)
    light = load_preset(PRESET_FOLDER / "light.json")
    follower = window.noise_follower
    menu_action(menu_named(window, "Presets"), "Light").trigger()
    qtbot.waitUntil(lambda: follower.choice.params.patch_radius == light.params.patch_radius, timeout=WAIT_MS)
    settle(qtbot, window)
    as_denoise = choose_filter(estimate, light.params, matrix="bt601", sample=sample, strength=light.strength)
    assert_filters_as(window, as_denoise)
    qtbot.mouseClick(window.parameters.reset, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: follower.choice.params.patch_radius == NLMParams().patch_radius, timeout=WAIT_MS)
    settle(qtbot, window)
    assert_filters_as(window, choose_filter(estimate, NLMParams(), matrix="bt601", sample=sample))


def test_a_preset_s_centre_weight_stays_whatever_the_noise(qtbot, window, tmp_path, monkeypatch) -> None:
    """A preset pinning the centre weight "one" on noise that chooses "max": the estimate's choice
    replaced it in the window, where denoise --filter-preset keeps it and chooses the strengths for it."""
    with np.load(DATA / "rocket_frames.npz") as archive:
        clean = archive["frames"]
    noisy = np.clip(np.rint(clean + np.random.default_rng(2).normal(0, 10, clean.shape)), 0, 255).astype(np.uint8)
    path, preset_path = tmp_path / "rocket.mkv", tmp_path / "one.json"
    write_ffv1(path, noisy)
    preset_path.write_text('{"strength": 1.0, "center_weight": "one", "luma_chroma": "auto"}')
    opened(qtbot, window, path)
    assert window.current_params().center_weight == "max"  # sigma 10: "max", as chosen for the noise
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a: (str(preset_path), ""))
    menu_action(menu_named(window, "Presets"), "Load preset…").trigger()
    qtbot.waitUntil(lambda: window.noise_follower.choice.params.center_weight == "one", timeout=WAIT_MS)
    settle(qtbot, window)
    assert window.parameters.center_weight.currentText() == "one"
    preset = load_preset(preset_path)
    as_denoise = choose_filter(
        estimate_clip_noise(path), preset.params, matrix="bt601", sample=read_frames(path), center_weight="one"
    )
    assert_filters_as(window, as_denoise)


@pytest.mark.parametrize("pixel_format", ["yuv420p", "yuv422p10le"])
def test_the_window_reads_noise_that_rgb_clips_as_the_command_line_does(qtbot, window, tmp_path, pixel_format) -> None:
    """ffmpeg's test pattern with noise in its Y'CbCr samples: RGB clips half the saturated bars'
    noise (read 6.2 levels of 10.4 as decoded, unsure); the window, as denoise, then reads the
    frames unclipped, and at the source's depth (a 10-bit clip's floor is 16 bits' there too)."""
    path = ffmpeg_pattern(
        tmp_path / "bars.mkv", "testsrc2=size=320x240:rate=25", "-t", "1", "-vf",
        f"format={pixel_format},noise=alls=12:allf=t", "-c:v", "ffv1",
    )  # fmt: skip
    expected = estimate_clip_noise(path)
    assert expected.average_sigma > 9 and expected.confidence >= 0.9
    opened(qtbot, window, path)
    qtbot.waitUntil(lambda: window.estimate is not None, timeout=WAIT_MS)
    np.testing.assert_allclose(window.estimate.sigma, expected.sigma, rtol=1e-6)
    assert window.estimate.bit_depth == expected.bit_depth == (16 if "10" in pixel_format else 8)
    params = window.current_params()
    frames, length = read_frames(path), sure_sample_length(params)
    sample = frames[(len(frames) - length) // 2 :][:length]  # the middle frames, as denoise reads them
    choice = choose_filter(expected, params, matrix="bt601", sample=sample, backend="cpu", rgb_allowed=False)
    assert choice.chroma_factor is not None  # noise of Y'CbCr samples: chroma's factor apart, the window's too
    assert window.current_luma_chroma() == pytest.approx((*choice.luma_chroma[:2], "bt601"), abs=0.05)


def test_the_centre_weight_follows_the_noise_as_denoise_chooses_it(qtbot, window, tmp_path) -> None:
    """Light noise over fine texture: the estimate sets the centre weight "one", as the command line
    chooses it ("max" there blurred the picture below the noisy frames); it stays the user's to change."""
    _, noisy = panning_texture(2.0)
    write_ffv1(tmp_path / "texture.mkv", noisy)
    opened(qtbot, window, tmp_path / "texture.mkv")
    qtbot.waitUntil(lambda: window.estimate is not None, timeout=WAIT_MS)
    params = window.current_params()
    expected = choose_filter(window.estimate, params, matrix="bt601", sample=noisy, backend="cpu")
    assert expected.params.center_weight == "one" == params.center_weight
    assert window.parameters.center_weight.currentText() == "one"
    window.parameters.center_weight.setCurrentText("max")
    assert window.current_params().center_weight == "max"


# Controls


def test_every_spin_box_and_slider_re_renders(qtbot, window, clip) -> None:
    path, frames = clip
    opened(qtbot, window, path)
    add_synthetic_noise(qtbot, window)
    choose_luma_chroma(qtbot, window, "Off")  # h is the strength of the filter in RGB
    panel = window.parameters
    for control, typed, field in [
        (panel.h, "37.5", "h"),
        (panel.patch_radius, "1", "patch_radius"),
        (panel.search_radius, "2", "search_radius"),
        (panel.frames_past, "0", "frames_past"),
        (panel.frames_future, "2", "frames_future"),
    ]:
        for change in ("typed", "arrow", "slider"):
            shown = window._shown
            if change == "typed":
                type_into(qtbot, control.spin, typed)
            elif change == "arrow":
                click_arrow(qtbot, control.spin, up=field != "frames_future")
            else:
                control.slider.setFocus()
                qtbot.keyClick(control.slider, KEY.Key_Left if field == "frames_past" else KEY.Key_Right)
            qtbot.waitUntil(lambda s=shown: window._shown > s, timeout=WAIT_MS)
            settle(qtbot, window)
            assert (
                getattr(window.current_params(), field)
                == control.value()
                == control.slider.value() / (10 if field == "h" else 1)
            )
    for spin_box, typed in ((window.noise.sigma, "18"), (window.noise.correlation, "0.3"), (window.noise.seed, "5")):
        shown = window._shown
        type_into(qtbot, spin_box, typed)
        qtbot.waitUntil(lambda s=shown: window._shown > s, timeout=WAIT_MS)
        settle(qtbot, window)
    # What is on screen is the engine's render of these settings, and its PSNR the one shown.
    noise, params = SyntheticNoise(18, 0.3, 5), window.current_params()
    expected = Previewer(ArrayFrames(frames), "cpu").render(window.frame_slider.value(), params, noise)
    np.testing.assert_array_equal(window.preview.after, expected.after)
    assert f"{expected.psnr_after:.2f} dB" in window.readouts.psnr.text()


def test_single_key_shortcuts_work_while_a_spin_box_has_focus(qtbot, window, clip) -> None:
    opened(qtbot, window, clip[0])
    window.parameters.search_radius.spin.setFocus()
    press(qtbot, window, KEY.Key_V)
    assert window.view.mode == "side"
    press(qtbot, window, KEY.Key_Right)
    assert window.frame_slider.value() == 1
    press(qtbot, window, KEY.Key_End)  # editing keys and digits still go to the spin box
    press(qtbot, window, KEY.Key_Backspace)
    press(qtbot, window, KEY.Key_2)
    assert window.parameters.search_radius.spin.lineEdit().text() == "2"
    press(qtbot, window, KEY.Key_Space)
    assert window.playing
    press(qtbot, window, KEY.Key_Space)
    assert not window.playing


def test_h_is_typed_after_its_key(qtbot, window, clip) -> None:
    # A first-time user found h three Tabs away, the first two without a visible focus.
    opened(qtbot, window, clip[0])
    panel = window.parameters
    for strength, mode in ((panel.h_luma, "Strengths given"), (panel.h, "Off")):
        # A colour clip starts in luma/chroma (auto): H takes to the luma strength, and a typed
        # strength is given from then on; with luma/chroma off, to h.
        if mode == "Off":
            choose_luma_chroma(qtbot, window, "Off")
        shown = window._shown
        press(qtbot, window, KEY.Key_H)
        assert strength.spin.hasFocus()
        for key in (KEY.Key_1, KEY.Key_2, KEY.Key_Period, KEY.Key_5, KEY.Key_Return):
            press(qtbot, window, key)
        assert strength.value() == 12.5 and panel.luma_chroma.currentText() == mode
        qtbot.waitUntil(lambda s=shown: window._shown > s, timeout=WAIT_MS)  # and the picture re-renders


def test_scrub_to_the_last_frame(qtbot, window, clip) -> None:
    path, frames = clip
    opened(qtbot, window, path)
    press(qtbot, window, KEY.Key_End)
    settle(qtbot, window)
    assert window.preview.index == 11 and "frame 12 / 12" in window.frame_label.text()
    press(qtbot, window, KEY.Key_Right)  # past the end: stays
    window.frame_slider.setFocus()
    qtbot.keyClick(window.frame_slider, KEY.Key_Home)  # the slider's own key
    settle(qtbot, window)
    assert window.preview.index == 0
    qtbot.keyClick(window.frame_slider, KEY.Key_End)
    settle(qtbot, window)
    np.testing.assert_array_equal(window.preview.before, frames[11])


def test_a_parameter_change_renders_off_the_gui_thread(qtbot, window, clip, monkeypatch) -> None:
    threads = []
    render_passes = worker_module.render_passes
    monkeypatch.setattr(
        worker_module,
        "render_passes",
        lambda *a, **k: threads.append(QThread.currentThread()) or render_passes(*a, **k),
    )
    opened(qtbot, window, clip[0])
    add_synthetic_noise(qtbot, window)
    first = window.preview.after.copy()
    type_into(qtbot, window.parameters.h_luma.spin, "80")  # a colour clip's default: luma/chroma
    qtbot.waitUntil(lambda: not np.array_equal(window.preview.after, first), timeout=WAIT_MS)
    assert threads and all(thread is window.worker_thread.thread for thread in threads)


def test_the_side_panel_never_widens_past_the_window(qtbot, window, clip) -> None:
    opened(qtbot, window, clip[0])
    long_word = "/media/archive/" + "very-long-folder-name-" * 12 + "bikes.mp4"
    window.noise.result.setText("Warning: " + "the region is textured; " * 20 + long_word)
    window.show_error("Could not open the video: " + long_word)
    window.resize(900, 600)
    qtbot.waitUntil(lambda: window.width() <= 900)
    scroll = window.side_scroll
    assert scroll.widget().width() <= scroll.viewport().width()
    use_region = window.noise.use_region
    right_edge = use_region.mapTo(scroll.viewport(), use_region.rect().topRight()).x()
    assert 0 < right_edge <= scroll.viewport().width()


# Noise and h


def test_bisquare_weights_with_h_under_the_noise_say_why_nothing_changes(qtbot, window, clip) -> None:
    """Bisquare weights with h under 1.4 sigma weigh nearly no other patch: a first-time user saw
    the picture unchanged and no reason; the status bar says it, and no more once h is raised."""
    path, _ = clip
    opened(qtbot, window, path)
    add_synthetic_noise(qtbot, window, sigma=20)
    choose_luma_chroma(qtbot, window, "Off")
    box = window.parameters.weighting
    box.setFocus()
    while box.currentText() != "bisquare":
        qtbot.keyClick(box, KEY.Key_Up if box.findText("bisquare") < box.currentIndex() else KEY.Key_Down)
    type_into(qtbot, window.parameters.h.spin, "20")
    settle(qtbot, window)
    said = window.statusBar().currentMessage()
    assert said.startswith(
        "Bisquare weights with h 20.0 under 28.3 (1.4 x the noise): nearly every other patch weighs 0"
    )
    type_into(qtbot, window.parameters.h.spin, "45")
    settle(qtbot, window)
    assert window.statusBar().currentMessage() == ""


def choose_luma_chroma(qtbot, window, text: str) -> None:
    """Pick ``text`` in the luma/chroma box with the arrow keys, as a person does from the keyboard."""
    box = window.parameters.luma_chroma
    box.setFocus()
    while box.currentText() != text:
        shown = window._shown
        qtbot.keyClick(box, KEY.Key_Down if box.findText(text) > box.currentIndex() else KEY.Key_Up)
        qtbot.waitUntil(lambda s=shown: window._shown > s, timeout=WAIT_MS)  # each choice re-renders
        settle(qtbot, window)


def test_auto_strengths_read_auto_until_an_estimate_finds_them(qtbot, window, clip) -> None:
    """Before any noise estimate the two strengths showed 0.5, the sliders' least value, as if chosen."""
    panel = window.parameters
    strengths = (panel.h_luma, panel.h_chroma)
    assert [strength.spin.text() for strength in strengths] == ["auto", "auto"]
    opened(qtbot, window, clip[0])  # the clip's noise is estimated as it opens
    add_synthetic_noise(qtbot, window, sigma=20)  # a known noise: the strengths follow it
    assert [strength.spin.text() for strength in strengths] == [f"{value:.1f}" for value in panel.luma_chroma_h()]
    assert min(panel.luma_chroma_h()) > 1


def test_luma_chroma_mode_previews_exports_and_is_kept_by_clip_and_preset(
    qtbot, window, clip, tmp_path, monkeypatch
) -> None:
    path, frames = clip
    opened(qtbot, window, path)
    add_synthetic_noise(qtbot, window, sigma=20)
    index, panel = window.frame_slider.value(), window.parameters
    assert panel.luma_chroma.currentText() == "Auto (from the noise): Y'CbCr"  # a colour clip's default
    choose_luma_chroma(qtbot, window, "Off")
    assert not panel.h_luma.isEnabled() and panel.h.isEnabled()
    assert not panel.h_luma.isVisible() and not panel.h_chroma.isVisible()  # off: their rows hidden
    noise, params, plain = SyntheticNoise(20), window.current_params(), window.preview.after
    # Auto: both strengths follow the noise (the clip is 96 x 64 of unspecified matrix: BT.601).
    choose_luma_chroma(qtbot, window, "Auto (from the noise): Y'CbCr")
    suggested = suggest_luma_chroma_h(split_estimate(noise.estimate(), "bt601"), params)
    assert (panel.h_luma.value(), panel.h_chroma.value()) == pytest.approx(suggested, abs=0.05)
    assert not panel.h.isEnabled() and panel.h_luma.isEnabled() and not panel.decorrelate.isEnabled()
    assert panel.h_luma.isVisible() and panel.h_chroma.isVisible()
    expected = Previewer(ArrayFrames(frames), "cpu").render(index, params, noise, window.current_luma_chroma())
    np.testing.assert_array_equal(window.preview.after, expected.after)
    assert not np.array_equal(window.preview.after, plain)
    # Strengths given, typed; the export is the engine's luma/chroma filter of the clip.
    choose_luma_chroma(qtbot, window, "Strengths given")
    for spin, typed in ((panel.h_luma.spin, "12"), (panel.h_chroma.spin, "40")):
        shown = window._shown
        type_into(qtbot, spin, typed)
        qtbot.waitUntil(lambda s=shown: window._shown > s, timeout=WAIT_MS)
        settle(qtbot, window)
    assert window.current_luma_chroma() == (12.0, 40.0, "bt601")
    expected = Previewer(ArrayFrames(frames), "cpu").render(index, params, noise, (12.0, 40.0, "bt601"))
    np.testing.assert_array_equal(window.preview.after, expected.after)
    export_with_dialog(qtbot, window, tmp_path / "lc.mkv", window.export_action.trigger)
    exports_done(qtbot, window)
    engine_frames = LumaChromaDenoiser(params, 12.0, 40.0, "bt601", "cpu").export_stream(iter(frames))
    for written, reference in zip(read_frames(tmp_path / "lc.mkv"), engine_frames, strict=True):
        np.testing.assert_array_equal(written, reference)
    # Saved as a preset (Save preset…), and with the clip's own settings.
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a: (str(tmp_path / "lc.json"), ""))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a: (str(tmp_path / "lc.json"), ""))
    presets = menu_named(window, "Presets")
    menu_action(presets, "Save preset…").trigger()
    assert load_preset(tmp_path / "lc.json").luma_chroma == (12.0, 40.0)
    choose_luma_chroma(qtbot, window, "Off")
    assert window.current_luma_chroma() is None
    menu_action(presets, "Load preset…").trigger()
    settle(qtbot, window)
    assert window.current_luma_chroma() == (12.0, 40.0, "bt601")
    other = tmp_path / "other.mkv"
    write_clip(other, clip_frames(seed=1))
    opened(qtbot, window, other)
    choose_luma_chroma(qtbot, window, "Off")
    opened(qtbot, window, path)
    assert panel.luma_chroma.currentText() == "Strengths given"
    assert window.current_luma_chroma() == (12.0, 40.0, "bt601")


def test_synthetic_noise_and_presets_set_h_from_sigma(qtbot, window, clip) -> None:
    opened(qtbot, window, clip[0])
    window.noise.sigma.setValue(25)
    qtbot.mouseClick(window.noise.synthetic, Qt.MouseButton.LeftButton)
    settle(qtbot, window)
    noise = SyntheticNoise(25).estimate()
    assert window.parameters.h.value() == pytest.approx(apply_estimate(window.current_params(), noise).h, abs=0.05)
    assert window.preview.psnr_after > window.preview.psnr_before + 1
    menu_action(menu_named(window, "Presets"), "Light").trigger()
    settle(qtbot, window)
    light = load_preset(PRESET_FOLDER / "light.json")
    expected = light.strength * apply_estimate(light.params, noise).h
    assert window.parameters.h.value() == pytest.approx(expected, abs=0.05)
    assert window.preview.psnr_after > window.preview.psnr_before + 0.5


def test_reset_to_suggested_restores_the_default_window_and_h_from_the_noise(qtbot, window, clip) -> None:
    opened(qtbot, window, clip[0])
    add_synthetic_noise(qtbot, window, sigma=20)
    type_into(qtbot, window.parameters.search_radius.spin, "6")
    type_into(qtbot, window.parameters.h.spin, "70")
    settle(qtbot, window)
    shown = window._shown
    qtbot.mouseClick(window.parameters.reset, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window._shown > shown, timeout=WAIT_MS)
    settle(qtbot, window)
    params, defaults = window.current_params(), NLMParams()
    assert (params.patch_radius, params.search_radius) == (defaults.patch_radius, defaults.search_radius)
    assert params.h == pytest.approx(apply_estimate(defaults, SyntheticNoise(20).estimate()).h, abs=0.05)


def test_a_preset_that_turns_auto_luma_chroma_on_sets_both_strengths_for_its_window(
    qtbot, window, clip, tmp_path, monkeypatch
) -> None:
    """The strengths follow the preset's window (patch radius 4 here, 2 before it), not the old one."""
    opened(qtbot, window, clip[0])
    add_synthetic_noise(qtbot, window, sigma=20)
    preset = tmp_path / "auto.json"
    preset.write_text('{"h": 15, "patch_radius": 4, "luma_chroma": "auto"}')
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a: (str(preset), ""))
    menu_action(menu_named(window, "Presets"), "Load preset…").trigger()
    settle(qtbot, window)
    panel, params = window.parameters, window.current_params()
    suggested = suggest_luma_chroma_h(split_estimate(SyntheticNoise(20).estimate(), "bt601"), params)
    before = suggest_luma_chroma_h(split_estimate(SyntheticNoise(20).estimate(), "bt601"), NLMParams(patch_radius=2))
    assert suggested != pytest.approx(before, abs=0.05)  # the test tells the two windows apart
    assert panel.luma_chroma.currentText() == "Auto (from the noise): Y'CbCr" and params.h == 15
    assert (panel.h_luma.value(), panel.h_chroma.value()) == pytest.approx(suggested, abs=0.05)


def test_first_opening_of_the_sample_adds_noise_and_shows_a_gain(qtbot, window, tmp_path, monkeypatch) -> None:
    sample = tmp_path / "sample.mkv"
    write_clip(sample, clip_frames())
    monkeypatch.setattr("nlmeans_studio.gui.window.SAMPLE_CLIP", sample)
    opened(qtbot, window, sample)
    assert window.noise.synthetic.isChecked() and window.preview.psnr_after > window.preview.psnr_before + 1


def test_a_clip_keeps_its_own_settings(qtbot, window, clip, tmp_path) -> None:
    other = tmp_path / "other.mkv"
    write_clip(other, clip_frames(seed=1))
    opened(qtbot, window, clip[0])
    type_into(qtbot, window.parameters.search_radius.spin, "4")
    window.parameters.h.setValue(33)
    press(qtbot, window, KEY.Key_Right)
    press(qtbot, window, KEY.Key_I)
    opened(qtbot, window, other)
    assert window.frame_slider.mark_in is None
    opened(qtbot, window, clip[0])
    qtbot.waitUntil(lambda: window.estimate is not None, timeout=WAIT_MS)
    assert (
        window.parameters.h.value() == 33
        and window.current_params().search_radius == 4
        and window.frame_slider.mark_in == 1
    )


def test_a_reopened_clip_shows_the_h_its_noise_suggests_beside_the_h_typed(qtbot, window, clip, tmp_path) -> None:
    """h 30 typed, the clip reopened: its h stands, and the noise panel said "Suggested h: 30.0"
    (the h in use), also after a preset, while "Reset to suggested" gave the estimate's h."""
    other = tmp_path / "other.mkv"
    write_clip(other, clip_frames(seed=1))
    opened(qtbot, window, clip[0])
    qtbot.waitUntil(lambda: window.estimate is not None, timeout=WAIT_MS)
    qtbot.mouseClick(window.noise.draw_region, Qt.MouseButton.LeftButton)
    drag(window, frame_point(window, 50.2, 40.2), frame_point(window, 89.8, 59.8))
    qtbot.mouseClick(window.noise.use_region, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.estimate.method == "region", timeout=WAIT_MS)
    choose_luma_chroma(qtbot, window, "Off")  # one h
    press(qtbot, window, KEY.Key_H)
    for key in (KEY.Key_3, KEY.Key_0, KEY.Key_Return):
        press(qtbot, window, key)
    opened(qtbot, window, other)
    opened(qtbot, window, clip[0])
    qtbot.waitUntil(lambda: window.estimate is not None, timeout=WAIT_MS)
    suggested = apply_estimate(window.current_params(), window.estimate).h
    assert window.parameters.h.value() == 30 and round(suggested, 1) != 30
    shown = window.current_params()
    variant = f"{shown.weighting}/{shown.center_weight}"  # the variant it is for (the CLI says its own)
    expected = f"Suggested h: {suggested:.1f} (one strength, {variant}: luma/chroma off; from the noise's table, before"
    assert expected in window.noise.result.text()
    menu_action(menu_named(window, "Presets"), "VHS").trigger()  # h follows the noise: 1.2 x its suggestion
    vhs_suggested = apply_estimate(window.current_params(), window.estimate).h
    assert window.parameters.h.value() == pytest.approx(1.2 * vhs_suggested, abs=0.05)
    assert f"Suggested h: {vhs_suggested:.1f}" in window.noise.result.text()
    qtbot.mouseClick(window.parameters.reset, Qt.MouseButton.LeftButton)  # the default window, h as suggested
    reset_suggested = apply_estimate(window.current_params(), window.estimate).h
    assert window.parameters.h.value() == pytest.approx(reset_suggested, abs=0.05)
    assert f"Suggested h: {reset_suggested:.1f}" in window.noise.result.text()


def test_a_new_clip_starts_afresh(qtbot, window, clip, tmp_path) -> None:
    """A second clip (issue 32): its first frame, no marks, no drawn rectangle, and the parameters
    a clip opened for the first time starts from; the first clip's position, past frames and
    rectangle (off the smaller frame, and still offered to "Use this region") carried over."""
    other = tmp_path / "other.mkv"
    write_clip(other, clip_frames(seed=1)[:5, :32, :48])
    opened(qtbot, window, clip[0])
    fresh = dataclasses.replace(window.current_params(), color_transform=None)
    press(qtbot, window, KEY.Key_End)
    press(qtbot, window, KEY.Key_O)
    type_into(qtbot, window.parameters.frames_past.spin, "3")
    qtbot.mouseClick(window.noise.draw_region, Qt.MouseButton.LeftButton)
    drag(window, frame_point(window, 50.2, 40.2), frame_point(window, 89.8, 59.8))
    assert window.view.roi_box() == (50, 40, 40, 20) and window.current_params().frames_past == 3
    opened(qtbot, window, other)
    assert window.frame_slider.value() == 0 and window.preview.index == 0 and "frame 1 / 5" in window.frame_label.text()
    assert window.frame_slider.marked is None
    assert window.view.roi_box() is None and not window.noise.use_region.isEnabled()
    assert dataclasses.replace(window.current_params(), h=fresh.h, color_transform=None) == fresh
    opened(qtbot, window, clip[0])  # and the first clip comes back as it was left, but for its position
    assert window.current_params().frames_past == 3 and window.frame_slider.marked == (0, 11)


def test_a_new_clip_shows_no_noise_of_the_clip_before(qtbot, window, clip, tmp_path, monkeypatch) -> None:
    """While a new clip's noise is measured (seconds on a long clip), the readout said the sigma
    of the clip before."""
    other = tmp_path / "other.mkv"
    write_clip(other, clip_frames(seed=1))
    opened(qtbot, window, clip[0])
    qtbot.waitUntil(lambda: "levels" in window.readouts.sigma.text(), timeout=WAIT_MS)
    resume, estimate = threading.Event(), worker_module.estimate_noise_over
    monkeypatch.setattr(
        worker_module, "estimate_noise_over", lambda *a, **k: resume.wait(WAIT_MS / 1000) and estimate(*a, **k)
    )
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *_: (str(other), ""))
    press(qtbot, window, KEY.Key_O, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.path == other, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.preview.stage == STAGES[0], timeout=WAIT_MS)  # the new clip's, unfiltered
    # its frame, shown unfiltered meanwhile: no PSNR yet, and none of the clip before
    assert window.readouts.sigma.text() == "not estimated" and window.readouts.psnr.text() == "- (not filtered yet)"
    resume.set()
    qtbot.waitUntil(lambda: "levels" in window.readouts.sigma.text(), timeout=WAIT_MS)


@pytest.mark.parametrize(("name", "pixel_format"), [("%06d.tif", "rgb48le"), ("%04d.exr", "gbrpf32le")])
def test_scanned_sequences_open_as_clips_and_preview(qtbot, window, tmp_path, monkeypatch, name, pixel_format) -> None:
    """A restorer's scans/%06d.tif went to the volume window, which found no such file; an EXR
    sequence's frames are float now (highlights above 1.0 kept), and preview as the others."""
    import subprocess

    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "4",
         "-pix_fmt", pixel_format, str(tmp_path / name)],
        check=True,
    )  # fmt: skip
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *_: (str(tmp_path / name), ""))
    press(qtbot, window, KEY.Key_O, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.path == tmp_path / name and window.preview is not None, timeout=WAIT_MS)
    assert window.info.frame_count == 4 and not window.banner.isVisible()
    before = window.view.main_image.image
    assert before is not None and before.dtype == np.uint8 and before.max() > 100  # drawn, not black


def test_what_was_asked_of_a_clip_is_not_done_to_the_next(qtbot, window, clip, tmp_path, monkeypatch) -> None:
    """End pressed while a 5-frame clip opens after a 12-frame one: frame 11 was rendered of the
    new clip, whose banner said 'frame index must be in 0..4, got 11'."""
    path, _ = clip
    other = tmp_path / "other.mkv"
    write_clip(other, clip_frames(seed=1)[:5])
    opened(qtbot, window, path)
    resume, previewer = threading.Event(), worker_module.Previewer

    def held(*arguments, **options):  # the new clip takes a while to open (a long file is indexed)
        resume.wait(WAIT_MS / 1000)
        return previewer(*arguments, **options)

    monkeypatch.setattr(worker_module, "Previewer", held)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *_: (str(other), ""))
    press(qtbot, window, KEY.Key_O, Qt.KeyboardModifier.ControlModifier)
    press(qtbot, window, KEY.Key_End)
    resume.set()
    qtbot.waitUntil(lambda: window.path == other, timeout=WAIT_MS)
    settle(qtbot, window)
    assert window.frame_slider.value() == 0 and not window.banner.isVisible()


def test_choosing_a_reference_keeps_the_clip_as_it_was(qtbot, window, clip, tmp_path, monkeypatch) -> None:
    """ "Reference clip…" opens the clip again beside its clean version: its frame, marks,
    parameters and noise estimate stay (the marks were lost: the clip's settings were read back
    unsaved; a restorer's estimate went to "No estimate yet" and was measured again, 20 s)."""
    path, frames = clip
    write_clip(tmp_path / "clean.mkv", frames)
    opened(qtbot, window, path)
    qtbot.waitUntil(lambda: window.estimate is not None, timeout=WAIT_MS)
    estimate, result = window.estimate, window.noise.result.text()
    type_into(qtbot, window.parameters.frames_past.spin, "3")
    mark_frames(qtbot, window, 2, 6)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *_: (str(tmp_path / "clean.mkv"), ""))
    qtbot.mouseClick(window.noise.reference, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.preview is not None and window.preview.psnr_after is not None, timeout=WAIT_MS)
    assert window.frame_slider.value() == 6 and window.frame_slider.marked == (2, 6)
    assert window.current_params().frames_past == 3
    settle(qtbot, window)
    assert window.estimate is estimate and window.noise.result.text() == result


def test_marks_kept_for_a_clip_since_made_shorter_are_cleared_and_said(qtbot, window, clip, tmp_path) -> None:
    """A clip re-rendered shorter under the same name: the marks kept for it lay past its end,
    and Play said 'the frames played must satisfy 0 <= start < stop <= 4, got 5, 12'."""
    path, frames = clip
    other = tmp_path / "other.mkv"
    write_clip(other, clip_frames(seed=1))
    opened(qtbot, window, path)
    mark_frames(qtbot, window, 5, 11)
    opened(qtbot, window, other)
    write_clip(path, frames[:4])
    messages: list[str] = []  # the noise estimate's own message may follow it by the time of the check
    window.statusBar().messageChanged.connect(messages.append)
    opened(qtbot, window, path)
    assert window.frame_slider.marked is None and " in " not in window.frame_label.text()
    assert any(m.startswith("Marks kept for this clip past its last frame are cleared") for m in messages)
    press(qtbot, window, KEY.Key_Space)
    qtbot.waitUntil(lambda: not window.playing and window.frame_slider.value() == 3, timeout=WAIT_MS)
    assert not window.banner.isVisible()


def test_estimating_noise_in_a_region_drawn_with_the_mouse(qtbot, window, clip) -> None:
    opened(qtbot, window, clip[0])
    add_synthetic_noise(qtbot, window, 15, -0.4)  # decorrelating helps here (NoiseEstimate.luminance_gain > 1)
    qtbot.mouseClick(window.noise.draw_region, Qt.MouseButton.LeftButton)
    drag(window, frame_point(window, 50.2, 40.2), frame_point(window, 89.8, 59.8))
    assert window.view.roi_box() == (50, 40, 40, 20) and window.noise.use_region.isEnabled()
    qtbot.mouseClick(window.noise.use_region, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.estimate is not None and window.estimate.method == "region", timeout=WAIT_MS)
    assert window.estimate.regions == [(50, 40, 40, 20)] and "from your region" in window.noise.result.text()
    np.testing.assert_allclose(window.estimate.sigma, 15, rtol=0.15)  # 2 x 38 x 18 samples: about 6 % spread
    assert window.parameters.decorrelate.isChecked()
    np.testing.assert_array_equal(window.current_params().color_transform, window.estimate.color_transform())


def test_a_region_drawn_on_a_chroma_subsampled_file_reads_all_its_noise(qtbot, window, tmp_path) -> None:
    """Issue 32: on a file another tool wrote (4:2:0), "Use this region" read the noise 40 % low,
    correlated 0.75, and warned that it was too high; each sigma now within 10 % of the noise the
    decoded frames carry there, the correlations within 0.1, no warning."""
    path, covariance = chroma_subsampled_clips(tmp_path)
    opened(qtbot, window, path)
    x, y, width, height = FLAT_BOX
    qtbot.mouseClick(window.noise.draw_region, Qt.MouseButton.LeftButton)
    drag(window, frame_point(window, x + 0.2, y + 0.2), frame_point(window, x + width - 0.2, y + height - 0.2))
    assert window.view.roi_box() == FLAT_BOX
    qtbot.mouseClick(window.noise.use_region, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.estimate is not None and window.estimate.method == "region", timeout=WAIT_MS)
    truth = NoiseEstimate(covariance, [], 0)
    np.testing.assert_allclose(window.estimate.sigma, truth.sigma, rtol=0.10)
    np.testing.assert_allclose(window.estimate.correlation, truth.correlation, atol=0.1)
    assert "too high" not in window.noise.result.text() and window.estimate.warning is None
    # The command line's --noise X,Y,W,H measures the same pair of this two-frame clip alike.
    np.testing.assert_array_equal(window.estimate.covariance, estimate_clip_noise(path, roi=FLAT_BOX).covariance)


def test_a_region_drawn_on_the_last_frame_is_measured_with_the_frame_before(qtbot, window, tmp_path) -> None:
    """On the last frame there is no next one: the region was measured on that frame alone, whose
    high-pass residuals read a 4:2:0 file's noise 15 % low; it is now measured with the one before."""
    path, covariance = chroma_subsampled_clips(tmp_path)
    opened(qtbot, window, path)
    press(qtbot, window, KEY.Key_End)
    qtbot.waitUntil(lambda: window.frame_slider.value() == 1, timeout=WAIT_MS)
    settle(qtbot, window)
    x, y, width, height = FLAT_BOX
    qtbot.mouseClick(window.noise.draw_region, Qt.MouseButton.LeftButton)
    drag(window, frame_point(window, x + 0.2, y + 0.2), frame_point(window, x + width - 0.2, y + height - 0.2))
    qtbot.mouseClick(window.noise.use_region, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.estimate is not None and window.estimate.method == "region", timeout=WAIT_MS)
    np.testing.assert_allclose(window.estimate.sigma, NoiseEstimate(covariance, [], 0).sigma, rtol=0.10)


def test_a_region_stays_inside_the_frame_and_boxes_can_be_hidden(qtbot, window, clip) -> None:
    opened(qtbot, window, clip[0])
    qtbot.mouseClick(window.noise.draw_region, Qt.MouseButton.LeftButton)
    drag(window, frame_point(window, 70.4, 30.4), frame_point(window, 140, 90))  # past the frame's corner
    assert window.view.roi_box() == (70, 30, 26, 34)
    roi_centre = frame_point(window, 83, 47)
    drag(window, roi_centre, frame_point(window, 83 + 60, 47 + 60))  # the rectangle itself, off the frame
    x, y, w, h = window.view.roi_box()
    assert x + w <= 96 and y + h <= 64 and (w, h) == (26, 34)
    qtbot.mouseClick(window.noise.estimate, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(window.view.region_items), timeout=WAIT_MS)
    show_frame(qtbot, window, boxes_frame(clip[0]))
    press(qtbot, window, KEY.Key_R)
    assert not any(item.isVisible() for item in [*window.view.region_items, window.view.roi])
    press(qtbot, window, KEY.Key_R)
    assert all(item.isVisible() for item in [*window.view.region_items, window.view.roi])


def boxes_frame(path: Path) -> int:
    """The frame the clip's noise estimate finds its flat blocks on, as the window measures it."""
    frames = read_frames(path)
    return estimate_noise_over(lambda index: frames[index], 0, len(frames))[0]


def show_frame(qtbot, window, index: int) -> None:
    """Go to frame ``index`` with the arrow keys, and wait for its picture."""
    key = KEY.Key_Right if index > window.frame_slider.value() else KEY.Key_Left
    while window.frame_slider.value() != index:
        press(qtbot, window, key)
    settle(qtbot, window)
    assert window.preview.index == index


def test_the_estimates_boxes_show_over_the_frame_they_were_found_on_only(qtbot, window, clip) -> None:
    """The boxes stayed drawn over every frame shown, outlining nothing there (found by a first-time user)."""
    opened(qtbot, window, clip[0])
    found_on = boxes_frame(clip[0])
    assert 1 <= found_on < len(clip[1]) - 1  # frames on both sides to move to
    qtbot.mouseClick(window.noise.estimate, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(window.view.region_items), timeout=WAIT_MS)
    settle(qtbot, window)
    assert not any(item.isVisible() for item in window.view.region_items)  # frame 0
    assert f"flat blocks on frame {found_on + 1}" in window.statusBar().currentMessage()
    for index, drawn in ((found_on, True), (found_on + 1, False), (found_on, True), (found_on - 1, False)):
        show_frame(qtbot, window, index)
        assert all(item.isVisible() == drawn for item in window.view.region_items), index


def test_r_on_another_frame_than_the_boxes_says_which_frame_they_are_on(qtbot, window, clip) -> None:
    """An archivist opened a clip and pressed R on frame 1: no boxes, and no word of where they were."""
    opened(qtbot, window, clip[0])
    found_on = boxes_frame(clip[0])
    qtbot.waitUntil(lambda: bool(window.view.region_items), timeout=WAIT_MS)  # the estimate at open
    settle(qtbot, window)
    assert window.frame_slider.value() != found_on
    window.statusBar().clearMessage()  # the estimate's note is gone: its 10 s are over, or a tooltip wiped it
    press(qtbot, window, KEY.Key_R)
    press(qtbot, window, KEY.Key_R)
    assert window.regions_action.isChecked() and not any(item.isVisible() for item in window.view.region_items)
    assert f"frame {found_on + 1}" in window.statusBar().currentMessage()


# The picture


@pytest.mark.parametrize("zoom", ["fit", "1:1", "wheel", "pan"])
def test_side_by_side_shows_the_same_pixels_in_both_panes(qtbot, window, clip, zoom) -> None:
    opened(qtbot, window, clip[0])
    press(qtbot, window, KEY.Key_V)
    qtbot.waitUntil(lambda: window.view.after_view.scene() is not None and window.view.after_view.width() > 0)
    if zoom == "1:1":
        press(qtbot, window, KEY.Key_1)
    elif zoom == "wheel":
        wheel(window, frame_point(window, 30, 20), steps=3)
    elif zoom == "pan":
        press(qtbot, window, KEY.Key_1)
        drag(window, frame_point(window, 40, 30, window.view.after_view), frame_point(window, 20, 20))
    qtbot.wait(50)
    main, after = window.view.main_view, window.view.after_view
    assert main.size() == after.size()
    for x, y in ((0, 0), (48, 32), (95, 63)):  # the same frame pixel sits at the same place in each pane
        in_main = main.mapViewToScene(QPointF(x, y)) - main.sceneBoundingRect().topLeft()
        in_after = after.mapViewToScene(QPointF(x, y)) - after.sceneBoundingRect().topLeft()
        assert (in_main - in_after).manhattanLength() < 0.5


def test_the_split_view_fills_the_picture_area(qtbot, window, clip) -> None:
    opened(qtbot, window, clip[0])
    view = window.view
    assert view.mode == "split" and view.after_view.scene() is None
    assert view.main_view.width() > 0.95 * view.width()
    frame = view.main_view.mapViewToScene(view.main_view.frame_rect).boundingRect()  # fitted and centred
    pane = view.main_view.sceneBoundingRect()
    assert abs((frame.center() - pane.center()).x()) < 1 and abs((frame.center() - pane.center()).y()) < 1


def test_flip_and_difference_keys(qtbot, window, clip) -> None:
    opened(qtbot, window, clip[0])
    add_synthetic_noise(qtbot, window)
    preview = window.preview
    press(qtbot, window, KEY.Key_B)
    np.testing.assert_array_equal(window.view.shown_image(), preview.before)
    press(qtbot, window, KEY.Key_B)
    np.testing.assert_array_equal(window.view.shown_image(), preview.after)
    press(qtbot, window, KEY.Key_D)
    np.testing.assert_array_equal(window.view.shown_image(), difference_image(preview.before, preview.after))
    assert window.view_actions.modes["difference"].isChecked()
    press(qtbot, window, KEY.Key_D)
    assert window.view.mode == "split"


# Playback


def test_play_shows_every_frame_in_order_then_the_still_with_its_psnr(qtbot, window, clip, monkeypatch) -> None:
    path, frames = clip
    opened(qtbot, window, path)
    add_synthetic_noise(qtbot, window)
    press(qtbot, window, KEY.Key_Right)
    press(qtbot, window, KEY.Key_Right)
    settle(qtbot, window)
    shown = []
    set_images = window.view.set_images
    monkeypatch.setattr(
        window.view, "set_images", lambda b, a, note="": shown.append((window.preview, a)) or set_images(b, a, note)
    )
    press(qtbot, window, KEY.Key_Space)
    assert window.playing and window.play_action.text() == "Pause"
    qtbot.waitUntil(lambda: not window.playing, timeout=WAIT_MS)
    settle(qtbot, window)
    played = [preview for preview, _ in shown if preview.psnr_after is None and preview.stage == "exact"]
    assert [preview.index for preview in played] == list(range(3, 12))
    still = Previewer(ArrayFrames(frames), "cpu")
    for preview in played[::4]:
        expected = still.render(
            preview.index, window.current_params(), window.noise.noise(), window.current_luma_chroma()
        )
        np.testing.assert_array_equal(preview.after, expected.after)
    assert window.preview.index == 11 and window.preview.psnr_after is not None  # paused: the still
    assert "dB" in window.readouts.psnr.text()


def test_play_waits_for_frames_and_says_how_far_rendering_is(qtbot, window, clip, monkeypatch) -> None:
    opened(qtbot, window, clip[0])
    allowed = threading.Semaphore(0)
    play = Previewer.play

    def slow_play(self, *args):
        for preview in play(self, *args):
            allowed.acquire()  # one frame per release: the engine is "slower" than the clock
            yield preview

    monkeypatch.setattr(Previewer, "play", slow_play)
    press(qtbot, window, KEY.Key_Space)
    allowed.release()
    qtbot.waitUntil(lambda: window.frame_slider.value() == 1, timeout=WAIT_MS)
    qtbot.wait(200)  # five ticks of the play clock, and no frame to show: it waits
    assert window.frame_slider.value() == 1 and window.playing
    window._show_speed()
    assert "1/11 rendered" in window.readouts.fps.text()
    allowed.release()
    qtbot.waitUntil(lambda: window.frame_slider.value() == 2, timeout=WAIT_MS)
    press(qtbot, window, KEY.Key_Space)
    for _ in range(12):
        allowed.release()
    settle(qtbot, window)
    assert not window.playing and window.preview.index == 2


def test_a_change_while_playing_plays_on_with_it(qtbot, window, clip, monkeypatch) -> None:
    path, frames = clip
    opened(qtbot, window, path)
    add_synthetic_noise(qtbot, window)
    allowed = threading.Semaphore(0)
    play = Previewer.play

    def paced_play(self, *args):
        for preview in play(self, *args):
            allowed.acquire()
            yield preview

    monkeypatch.setattr(Previewer, "play", paced_play)
    shown = []
    set_images = window.view.set_images
    monkeypatch.setattr(
        window.view, "set_images", lambda b, a, note="": shown.append(window.preview) or set_images(b, a, note)
    )
    press(qtbot, window, KEY.Key_Space)
    allowed.release()
    qtbot.waitUntil(lambda: window.frame_slider.value() == 1, timeout=WAIT_MS)
    type_into(qtbot, window.parameters.h_luma.spin, "60")
    for _ in range(40):
        allowed.release()
    qtbot.waitUntil(lambda: not window.playing, timeout=WAIT_MS)
    settle(qtbot, window)
    played = [preview.index for preview in shown if preview.psnr_after is None and preview.stage == "exact"]
    assert played == list(range(1, 12))  # every frame, once, in order, across the change
    expected = Previewer(ArrayFrames(frames), "cpu").render(
        11, window.current_params(), window.noise.noise(), window.current_luma_chroma()
    )
    assert window.current_luma_chroma()[0] == 60
    last_played = next(preview for preview in shown if preview.index == 11 and preview.psnr_after is None)
    np.testing.assert_array_equal(last_played.after, expected.after)


def test_a_busy_indicator_shows_while_the_engine_works(qtbot, window, clip, monkeypatch) -> None:
    opened(qtbot, window, clip[0])
    release = threading.Event()
    render_passes = worker_module.render_passes
    monkeypatch.setattr(
        worker_module, "render_passes", lambda *a, **k: release.wait(WAIT_MS / 1000) and render_passes(*a, **k)
    )
    press(qtbot, window, KEY.Key_Right)
    qtbot.waitUntil(lambda: window.busy.isVisibleTo(window), timeout=WAIT_MS)
    window._show_speed()
    assert "rendering…" in window.readouts.fps.text()
    release.set()
    settle(qtbot, window)
    assert "frames/s" in window.readouts.fps.text()


# Files, errors, settings


def test_open_asks_for_video_files(qtbot, window, clip, monkeypatch) -> None:
    asked = []
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a: asked.append(a) or (str(clip[0]), ""))
    press(qtbot, window, KEY.Key_O, Qt.KeyboardModifier.ControlModifier)
    assert "*.mp4" in asked[0][3] and "*.mkv" in asked[0][3] and "*.mov" in asked[0][3]
    qtbot.waitUntil(lambda: window.path == clip[0], timeout=WAIT_MS)
    settle(qtbot, window)


def test_open_recent_lists_the_clips_newest_first_and_opens_one(qtbot, window, clip, tmp_path) -> None:
    other = tmp_path / "other.mkv"
    write_clip(other, clip_frames(seed=1))
    opened(qtbot, window, clip[0])
    opened(qtbot, window, other)
    recent = menu_action(window.file_menu, "Open recent").menu()
    assert [action.text() for action in recent.actions()] == [str(other), str(clip[0])]
    recent.actions()[1].trigger()
    qtbot.waitUntil(lambda: window.path == clip[0], timeout=WAIT_MS)
    settle(qtbot, window)
    assert [action.text() for action in recent.actions()] == [str(clip[0]), str(other)]


def test_opening_an_interlaced_clip_says_how_it_is_filtered(qtbot, window, tmp_path) -> None:
    spec = ClipSpec("tape.mkv", "mpeg2video", pixel_format="yuv420p", frames=6,
                    options={"flags": "+ilme+ildct", "top": "1"})  # fmt: skip
    opened(qtbot, window, write_corpus_clip(tmp_path, spec))
    assert window.banner.isVisibleTo(window)
    assert "tape.mkv: the video is interlaced: each frame's two fields are filtered as one" in window.banner.text()


def test_an_error_banner_offers_its_action_and_can_be_dismissed(qtbot, window) -> None:
    acted = []
    window.show_error("The GPU could not denoise this frame", "Use the CPU", lambda: acted.append(True))
    assert window.banner.isVisibleTo(window) and window.banner.action.text() == "Use the CPU"
    qtbot.mouseClick(window.banner.action, Qt.MouseButton.LeftButton)
    assert acted == [True]
    qtbot.mouseClick(window.banner.dismiss, Qt.MouseButton.LeftButton)
    assert not window.banner.isVisibleTo(window)
    window.show_error("Open a clip first.")
    assert window.banner.text() == "Open a clip first." and not window.banner.action.isVisibleTo(window)


def test_a_corrupt_file_shows_an_error_and_the_app_stays_usable(qtbot, window, clip, tmp_path) -> None:
    corrupt = tmp_path / "corrupt.mp4"
    corrupt.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 8)
    window.open_clip(corrupt)
    qtbot.waitUntil(lambda: "Could not open the video" in window.banner.text(), timeout=WAIT_MS)
    assert window.banner.isVisibleTo(window) and window.path is None
    opened(qtbot, window, clip[0])
    assert not window.banner.isVisibleTo(window) and window.info.frame_count == 12


def test_psnr_shown_equals_engine_psnr_in_synthetic_noise_mode(qtbot, window, clip) -> None:
    path, frames = clip
    opened(qtbot, window, path)
    add_synthetic_noise(qtbot, window, 20, seed=4)
    window.step(5)
    settle(qtbot, window)
    preview = window.preview
    noise, params = SyntheticNoise(20, 0.0, 4), window.current_params()
    reference = Previewer(ArrayFrames(frames), "cpu")
    noisy = np.stack([reference.noisy_frame(i, noise) for i in range(len(frames))])
    denoised = reference.filter_for(params, window.current_luma_chroma())  # luma/chroma: a colour clip's default
    clean = to_float32(frames[5])
    expected_after = psnr(clean, denoised.denoise_frame(noisy, 5))
    assert preview.psnr_before == psnr(clean, noisy[5]) and preview.psnr_after == expected_after
    assert f"{expected_after:.2f} dB" in window.readouts.psnr.text() and expected_after > preview.psnr_before + 3
    qtbot.mouseClick(window.noise.synthetic, Qt.MouseButton.LeftButton)
    settle(qtbot, window)
    assert "no clean reference" in window.readouts.psnr.text()


def test_a_bad_preset_is_refused_with_a_message(qtbot, window, tmp_path) -> None:
    window.load_preset(PRESET_FOLDER / "strong.json")
    strong = window.parameters.params()
    bad = tmp_path / "bad.json"
    bad.write_text('{"h": 25, "search_radius": 99}')
    window.load_preset(bad)
    assert "search_radius must be an integer in 0..16, got 99" in window.banner.text()
    assert window.parameters.params() == strong  # unchanged


def test_parameters_and_the_view_mode_persist_across_sessions(qtbot, tmp_path) -> None:
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    first = MainWindow(settings)
    qtbot.addWidget(first)
    first.parameters.set_params(NLMParams(h=33, search_radius=5, frames_past=2))
    first.view_actions.set_mode("difference")
    first.close()
    second = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(second)
    assert second.parameters.params() == NLMParams(h=33, search_radius=5, frames_past=2)
    assert second.view.mode == "difference"
    second.close()


def test_the_next_session_starts_from_the_parameters_before_any_clip(qtbot, clip, tmp_path) -> None:
    """The last clip's own parameters stay with it: the next session's new clips do not start from them."""
    first = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(first)
    first.parameters.set_backend("cpu")
    first.parameters.set_params(NLMParams(patch_radius=2, frames_past=2))
    opened(qtbot, first, clip[0])
    type_into(qtbot, first.parameters.frames_past.spin, "4")
    first.close()
    second = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(second)
    assert (second.parameters.params().patch_radius, second.parameters.params().frames_past) == (2, 2)
    second.close()


def test_speed_readouts() -> None:
    from nlmeans_studio.gui.panels import Readouts

    readouts = Readouts()
    readouts.show_still(None, "", None)
    assert readouts.fps.text() == "no frame filtered yet" and readouts.device.text() == "-"
    readouts.show_still(12000.0, "CPU: Xeon", 3.2)
    assert readouts.fps.text() == "rendering… 3 s · last frame 12000.0 ms (0.08 frames/s)"
    assert readouts.device.text() == "CPU: Xeon"
    readouts.show_playback(24.0, 61.5, 40, 132)
    assert readouts.fps.text() == "playing 24.0/s · ahead 61.5/s · 40/132 rendered"
    readouts.deleteLater()


def test_resizing_the_views_keeps_the_interpreter_alive(qtbot) -> None:
    """Qt's virtual methods overridden in Python must not lose references to True: PySide6
    6.12.0 lost 32 per resize of the views, and on Python 3.11 (where True is not immortal) the
    interpreter aborted once they ran out. On 3.12+ the count does not move at all."""
    import gc
    import sys

    from PySide6.QtCore import QCoreApplication

    from nlmeans_studio.gui.views import ComparisonView

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


def test_the_readouts_are_in_sight_at_any_window_height(qtbot, window, clip) -> None:
    # A first-time user found Speed, PSNR and sigma below the fold of the scrolling side panel.
    opened(qtbot, window, clip[0])
    window.resize(1200, 600)
    qtbot.waitUntil(lambda: window.height() <= 600)
    readouts = window.readouts
    assert readouts.isVisible() and not window.side_scroll.isAncestorOf(readouts)
    bottom = readouts.mapTo(window, readouts.rect().bottomLeft()).y()
    assert 0 < bottom <= window.height()
    for label in (readouts.fps, readouts.psnr, readouts.sigma):  # wrapped text is not cut
        assert label.height() >= label.heightForWidth(label.width())


def test_the_first_frame_says_when_it_waits_for_a_compile(qtbot, window, clip, monkeypatch) -> None:
    # The window said nothing while its first frame waited up to a minute for numba's compile.
    monkeypatch.setattr(worker_module, "filter_compiles", lambda backend: True)  # numba's cache cold
    messages = []
    window.statusBar().messageChanged.connect(messages.append)
    opened(qtbot, window, clip[0])
    qtbot.waitUntil(lambda: window.timed is not None, timeout=WAIT_MS)  # the filtered frame, after the compile
    assert [message for message in messages if message == COMPILING]
    assert window.statusBar().currentMessage() != COMPILING  # gone with the frame
    qtbot.waitUntil(lambda: "nlmeans-compile" not in [thread.name for thread in threading.enumerate()])


def test_memory_short_for_the_preview_is_said_without_a_traceback(qtbot, window, clip, monkeypatch, capfd) -> None:
    # The worker printed a traceback for it, as for a kernel failure; the message says it all.
    message = "not enough memory for this run: it needs about 476 MB of address space; raise the limit (ulimit -v)"

    def short(*arguments: object) -> None:
        raise MemoryError(message)

    monkeypatch.setattr(Previewer, "filter_for", short)
    window.open_clip(clip[0])
    qtbot.waitUntil(lambda: window.banner.isVisibleTo(window), timeout=WAIT_MS)
    assert message in window.banner.text()
    assert "Traceback" not in capfd.readouterr().err
