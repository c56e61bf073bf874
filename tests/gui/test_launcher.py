"""The ``nlmeans-studio`` command: the window by default, the engine's commands otherwise,
and a plain message where the window cannot open."""

import pytest

from nlmeans_studio.gui.launcher import QT_X11_LIBRARIES, display_problem, main


def test_commands_go_to_the_engine_and_a_missing_file_is_refused(capsys) -> None:
    assert main(["estimate-noise", "missing.mp4"]) == 1
    assert "nlmeans-studio: error: " in capsys.readouterr().err
    assert main(["gui", "missing.mp4"]) == 1
    assert "missing.mp4: no such file" in capsys.readouterr().err


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
