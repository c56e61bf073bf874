"""The ``nlmeans-studio`` command: the window by default, the engine's commands otherwise,
and a plain message where the window cannot open."""

import os
import subprocess
import sys

import numpy as np
import pytest

from nlmeans_studio.engine import denoise_volume
from nlmeans_studio.gui.launcher import QT_X11_LIBRARIES, display_problem, main


def test_commands_go_to_the_engine_and_a_missing_file_is_said(capsys, monkeypatch) -> None:
    assert main(["estimate-noise", "missing.mp4"]) == 1
    assert "nlmeans-studio: error: " in capsys.readouterr().err
    # The window opens on a missing file and says so in its banner (from a desktop menu nothing
    # showed but a line on stderr): the launcher says it on stderr too and goes on to the window.
    opened = []
    monkeypatch.setattr("nlmeans_studio.gui.launcher.display_problem", lambda: None)
    monkeypatch.setattr("nlmeans_studio.gui.app.run", lambda path: opened.append(path) or 0)
    assert main(["gui", "missing.mp4"]) == 0 and opened == ["missing.mp4"]
    assert "missing.mp4: no such file" in capsys.readouterr().err


def test_a_file_alone_opens_the_window_on_it(capsys, monkeypatch, tmp_path) -> None:
    """An archivist's ``nlmeans-studio clip.mkv`` was refused ("invalid choice"), as a player would open it."""
    clip = tmp_path / "clip.mkv"
    clip.write_bytes(b"a clip")
    opened = []
    monkeypatch.setattr("nlmeans_studio.gui.launcher.display_problem", lambda: None)
    monkeypatch.setattr("nlmeans_studio.gui.app.run", lambda path: opened.append(path) or 0)
    assert main([str(clip)]) == 0 and opened == [str(clip)]
    assert main(["missing.mkv"]) == 0 and opened[-1] == "missing.mkv"  # as gui missing.mkv: said, not refused
    assert "missing.mkv: no such file" in capsys.readouterr().err
    assert main(["estimate-noise", str(clip)]) == 1 and len(opened) == 2  # a command stays one


def test_an_image_sequence_to_open_is_not_said_missing(capsys, monkeypatch, tmp_path) -> None:
    """A restorer's scans/%06d.dpx opened and played, but the launcher said "no such file" of it."""
    for number in range(3):
        (tmp_path / f"{number:06d}.dpx").write_bytes(b"a scan")
    monkeypatch.setattr("nlmeans_studio.gui.launcher.display_problem", lambda: None)
    monkeypatch.setattr("nlmeans_studio.gui.app.run", lambda path: 0)
    assert main(["gui", str(tmp_path / "%06d.dpx")]) == 0
    assert "no such file" not in capsys.readouterr().err
    assert main(["gui", str(tmp_path / "x%04d.dpx")]) == 0  # no images of this pattern
    assert "x%04d.dpx: no such file" in capsys.readouterr().err


def test_help_lists_the_window_commands(capsys) -> None:
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    assert "denoise" in text and "gui [FILE]" in text and "self-test" in text
    for command in (["gui", "--help"], ["self-test", "--help"]):
        with pytest.raises(SystemExit) as stop:
            main(command)
        assert stop.value.code == 0 and f"usage: nlmeans-studio {command[0]}" in capsys.readouterr().out


def test_a_missing_qt_library_is_named_with_its_package() -> None:
    desktop = {"DISPLAY": ":0"}
    assert display_problem(desktop, "linux", loadable=lambda name: True) is None
    problem = display_problem(desktop, "linux", loadable=lambda name: name != "libxcb-cursor.so.0")
    assert "libxcb-cursor.so.0" in problem and "sudo apt-get install libxcb-cursor0" in problem
    problem = display_problem(desktop, "linux", loadable=lambda name: False)
    assert "apt-get install " + " ".join(dict.fromkeys(QT_X11_LIBRARIES.values())) in problem


def test_no_display_is_said_plainly_and_other_platforms_are_left_to_qt() -> None:
    assert "no display" in display_problem({}, "linux", loadable=lambda name: True)
    assert "xvfb-run" in display_problem({}, "linux", loadable=lambda name: True)
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux", loadable=lambda name: False) is None
    wayland = {"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland"}
    assert display_problem(wayland, "linux", loadable=lambda name: False) is None
    assert display_problem({}, "win32", loadable=lambda name: False) is None


def test_the_window_started_on_a_missing_file_says_so_in_its_banner(qtbot, tmp_path) -> None:
    from PySide6.QtCore import QSettings

    from nlmeans_studio.gui.window import MainWindow

    window = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.open_file(tmp_path / "missing.mp4")  # what `nlmeans-studio gui missing.mp4` does
    qtbot.waitUntil(lambda: window.banner.isVisible())
    assert window.isVisible() and window.banner.text().endswith("missing.mp4: no such file")
    window.close()


WITHOUT_QT = (
    "import sys\n"
    "sys.modules.update(PySide6=None, pyqtgraph=None)  # import PySide6 raises ImportError, as where not installed\n"
    "from nlmeans_studio.gui.launcher import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _without_qt(*arguments: str, cwd) -> subprocess.CompletedProcess:
    environment = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_QT, *arguments], capture_output=True, text=True, cwd=cwd, env=environment
    )


def test_a_library_install_without_qt_runs_the_command_line_and_names_the_windows_extra(tmp_path) -> None:
    """Qt and pyqtgraph are the ``gui`` extra: without them the command line works, the window and
    the self-test say what to install."""
    volume = np.random.default_rng(0).normal(120, 10, (8, 12, 10)).astype(np.float32)
    np.save(tmp_path / "scan.npy", volume)
    command = ["denoise-volume", "scan.npy", "out.npy", "--search-radius", "1", "--backend", "cpu"]
    denoised = _without_qt(*command, cwd=tmp_path)
    assert denoised.returncode == 0, denoised.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), denoise_volume(volume, search_radius=1, backend="cpu"))
    window = _without_qt(cwd=tmp_path)
    assert window.returncode == 1 and "Traceback" not in window.stderr
    assert "pip install 'nlmeans-studio[gui]'" in window.stderr.splitlines()[-1]
