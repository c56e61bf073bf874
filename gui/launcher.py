"""The ``nlmeans-studio`` command: the window without a command (or with ``gui [FILE]``),
``self-test`` to check an installation, the engine's command line otherwise. Qt is imported
only when the window opens, so the engine's commands work where PySide6 is missing, and the
engine never imports the GUI. Before Qt starts, the launcher checks that there is a display and
that the system libraries Qt's X11 plugin loads are installed, and names what is missing (Qt
itself would abort with a message that names neither)."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

WINDOW_COMMANDS = """
window commands:
  gui [FILE]   open the window on FILE (the default without a command; FILE defaults to the
               bundled sample clip; 'nlmeans-studio FILE' does the same); 'nlmeans-studio gui --help'
               for more
  self-test    check the installation, headless: one line per check
"""
# The libraries Qt's X11 platform plugin (libqxcb.so) loads that a minimal Debian or Ubuntu
# desktop may lack, with the package that has each. The README lists the same packages.
QT_X11_LIBRARIES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
}


def _loadable(name: str) -> bool:
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


def display_problem(
    environ: dict[str, str] | None = None, platform: str = sys.platform, loadable: Callable[[str], bool] = _loadable
) -> str | None:
    """Why the window cannot open here, with what to do, or None when it can (as far as can be
    told before Qt starts): Linux without a display, or without the libraries of Qt's X11 plugin."""
    environ = dict(os.environ) if environ is None else environ
    chosen = environ.get("QT_QPA_PLATFORM", "")
    if not platform.startswith("linux") or (chosen and not chosen.startswith("xcb")):
        return None
    wayland = environ.get("WAYLAND_DISPLAY") and environ.get("XDG_SESSION_TYPE") == "wayland"
    if not chosen and wayland:
        return None
    if not environ.get("DISPLAY") and not wayland:
        return (
            "there is no display to open the window on (DISPLAY is not set). On a headless machine, run it "
            "under a virtual X server: 'xvfb-run -a nlmeans-studio' (apt-get install xvfb), check the "
            "installation with 'nlmeans-studio self-test', or use the command line ('nlmeans-studio --help')."
        )
    missing = [name for name in QT_X11_LIBRARIES if not loadable(name)]
    if not missing:
        return None
    packages = " ".join(dict.fromkeys(QT_X11_LIBRARIES[name] for name in missing))
    return (
        f"Qt's X11 plugin needs system libraries that are missing here: {', '.join(missing)}. "
        f"On Debian or Ubuntu: sudo apt-get install {packages}"
    )


def _gui_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nlmeans-studio gui",
        description="Open NLMeans Studio's window: before and after views, the filter's controls, "
        "noise estimation, playback and exports.",
    )
    parser.add_argument("file", nargs="?", help="a video to open (default: the bundled sample clip)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``nlmeans-studio``; returns the exit status. Ctrl-C at any moment, while
    the engine is imported too, ends it with one line and status 130."""
    try:
        return _dispatch(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        print("nlmeans-studio: cancelled", file=sys.stderr)
        return 130


def engine_main(arguments: list[str]) -> int:
    """The engine's command line, imported only when it is asked for."""
    from nlmeans_studio.engine import command_line

    return command_line(arguments)


def _exists(path: Path) -> bool:
    """Whether ``path`` is a file, or an image sequence's pattern (``scans/%06d.dpx``) with images."""
    from nlmeans_studio.engine import is_image_sequence, sequence_files

    return path.is_file() or (is_image_sequence(path) and bool(sequence_files(path)))


def _names_a_file(argument: str) -> bool:
    """Whether a lone argument names a file to open: a command has neither a suffix nor a folder."""
    path = Path(argument)
    return not argument.startswith("-") and (bool(path.suffix) or len(path.parts) > 1)


def _dispatch(arguments: list[str]) -> int:
    if arguments[:1] in (["-h"], ["--help"]):
        with contextlib.suppress(SystemExit):  # argparse ends there after printing the engine's commands
            engine_main(["--help"])
        print(WINDOW_COMMANDS)
        return 0
    if arguments[:1] == ["self-test"]:
        argparse.ArgumentParser(
            prog="nlmeans-studio self-test",
            description="Check the installation, headless: the sample clip opens, every backend denoises "
            "it like the CPU, an export is written and read back, the window shows a denoised frame.",
        ).parse_args(arguments[1:])
        from nlmeans_studio.gui.selftest import main as self_test

        return self_test()
    if len(arguments) == 1 and _names_a_file(arguments[0]):
        arguments = ["gui", *arguments]  # nlmeans-studio clip.mp4: the window on it, as a player opens one
    if arguments and arguments[0] != "gui":
        return engine_main(arguments)
    path = _gui_parser().parse_args(arguments[1:]).file
    if path is not None and not _exists(Path(path)):  # said here too, and in the window's banner
        print(f"nlmeans-studio: {path}: no such file", file=sys.stderr)
    missing = [name for name in ("PySide6", "pyqtgraph") if importlib.util.find_spec(name) is None]
    if missing:
        print(
            f"nlmeans-studio: error: the window needs {' and '.join(missing)}: install the window's extra, "
            "pip install 'nlmeans-studio[gui]' (pip install -e '.[gui]' in a clone); the command line works without",
            file=sys.stderr,
        )
        return 1
    problem = display_problem()
    if problem is not None:
        print(f"nlmeans-studio: error: {problem}", file=sys.stderr)
        return 1
    try:
        from nlmeans_studio.gui.app import run
    except ImportError as error:
        print(f"nlmeans-studio: error: the window cannot load Qt: {error}", file=sys.stderr)
        return 1
    return run(path)
