"""``nlmeans-studio self-test``: a line per check, and a non-zero exit when one fails."""

import pytest

pytest.importorskip("PySide6", reason="the self-test opens the window")
pytest.importorskip("av", reason="the self-test reads the sample clip")

from nlmeans_studio.gui import selftest
from nlmeans_studio.gui.launcher import main

pytestmark = pytest.mark.qt_log_ignore("This plugin does not support")


def test_the_installation_passes(capsys, qapp) -> None:
    assert main(["self-test"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("nlmeans-studio ") and lines[-1] == "self-test passed"
    statuses = {line.split()[1]: line.split()[0] for line in lines[1:-1]}
    assert list(statuses) == ["sample", "cpu", "gpu", "export", "window"]
    assert all(status in ("ok", "skip") for status in statuses.values())
    assert statuses["cpu"] == statuses["export"] == statuses["window"] == "ok"


def test_a_failing_check_fails_the_run(capsys, monkeypatch) -> None:
    def broken() -> str:
        raise AssertionError("the compiled filter differs from the NumPy cascade by 3.1e-02")

    def absent() -> str:
        raise selftest.SkippedError("no CUDA device")

    monkeypatch.setattr(selftest, "CHECKS", [("cpu", broken), ("gpu", absent), ("sample", selftest.check_sample)])
    assert selftest.main() == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("FAIL cpu     AssertionError: the compiled filter differs")
    assert lines[2].startswith("skip gpu     no CUDA device") and lines[3].startswith("ok   sample")
    assert lines[-1] == "self-test FAILED: 1 check(s)"
