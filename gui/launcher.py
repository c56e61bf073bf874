"""The ``nlmeans-studio`` command: the window without a command (or with ``gui [FILE]``),
``self-test`` to check an installation, the engine's command line otherwise. Qt is imported
only when the window opens, so the engine's commands work where PySide6 is missing, and the
engine never imports the GUI."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from engine.cli import main as engine_main


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nlmeans-studio``; returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments == ["self-test"]:
        from gui.selftest import main as self_test

        return self_test()
    if arguments and arguments[0] != "gui":
        return engine_main(arguments)
    path = arguments[1] if len(arguments) > 1 else None
    if path is not None and not Path(path).is_file():
        print(f"nlmeans-studio: error: {path}: no such file", file=sys.stderr)
        return 1
    try:
        from gui.app import run
    except ImportError as error:
        print(f"nlmeans-studio: error: the window needs PySide6 and pyqtgraph ({error})", file=sys.stderr)
        return 1
    return run(path)
