"""The ``nlmeans-studio`` command: the window by default, the engine's commands otherwise."""

from gui.launcher import main


def test_commands_go_to_the_engine_and_a_missing_file_is_refused(capsys) -> None:
    assert main(["estimate-noise", "missing.mp4"]) == 1
    assert "nlmeans-studio: error: " in capsys.readouterr().err
    assert main(["gui", "missing.mp4"]) == 1
    assert "missing.mp4: no such file" in capsys.readouterr().err
