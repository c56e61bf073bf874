"""Use the window as a person does, under a real X server, and screenshot every state.

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshot.py OUT_DIR [--clip FILE]
        [--backend cpu] [--readme resources/screenshot.png]

Needs Xvfb, openbox (started here when no window manager runs), xdotool and the Qt X11 libraries
(``sudo apt-get install xvfb openbox xdotool`` plus the README's list). The window runs in this
process so that the script knows where its buttons are; every key press, click and drag goes
through the X server with xdotool, as a person's would, with the moves in between that a hand
makes. The whole screen (dialogs and window decorations included) is saved as OUT_DIR/NN-name.png
after each step: open them and look. ``--readme`` also saves the window alone, at the export step, there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QPoint, QPointF, QSettings
from PySide6.QtWidgets import QApplication, QWidget

from nlmeans_studio.engine.video.sample import SAMPLE_CLIP
from nlmeans_studio.gui.export import ExportDialog
from nlmeans_studio.gui.window import MainWindow

SETTLE_SECONDS = 600.0  # the CPU renders a 720p frame in about 0.5 s; the first one compiles
DRAG_STEPS = 8


def xdotool(*arguments: str) -> None:
    subprocess.run(["xdotool", *arguments], check=True)


class Journey:
    """The window and the hands that drive it; every wait keeps Qt's event loop running."""

    def __init__(self, window: MainWindow, folder: Path) -> None:
        self.window, self.folder, self.shots = window, folder, 0

    def wait(self, seconds: float, until: Callable[[], bool] | None = None) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not (until and until()):
            QApplication.processEvents()
            time.sleep(0.02)

    def settle(self) -> None:
        """Until the latest preview is on screen and the engine is idle."""
        window = self.window
        self.wait(0.3)
        self.wait(
            SETTLE_SECONDS,
            lambda: (
                not window.debounce.isActive()
                and window._shown >= window._pending_preview > 0
                and not window.busy.isVisible()
            ),
        )

    def shot(self, name: str) -> Path:
        self.wait(0.5)
        self.shots += 1
        path = self.folder / f"{self.shots:02d}-{name}.png"
        QApplication.primaryScreen().grabWindow(0).save(str(path))
        print(f"screenshot: {path}")
        return path

    def key(self, *keys: str) -> None:
        for key in keys:
            xdotool("key", "--clearmodifiers", key)
            self.wait(0.15)

    def type(self, text: str) -> None:
        xdotool("type", "--delay", "20", text)
        self.wait(0.2)

    def click(self, widget: QWidget, at: QPoint | None = None) -> None:
        point = widget.mapToGlobal(at if at is not None else widget.rect().center())
        xdotool("mousemove", str(point.x()), str(point.y()), "click", "1")
        self.wait(0.3)

    def drag_on_picture(self, start: tuple[float, float], end: tuple[float, float]) -> None:
        """A left drag between two frame pixels of the left pane, in DRAG_STEPS moves."""
        view = self.window.view
        points = [
            view.viewport().mapToGlobal(view.mapFromScene(view.main_view.mapViewToScene(QPointF(x, y))))
            for x, y in (start, end)
        ]
        (x0, y0), (x1, y1) = ((p.x(), p.y()) for p in points)
        xdotool("mousemove", str(x0), str(y0), "mousedown", "1")
        for step in range(1, DRAG_STEPS + 1):
            self.wait(0.05)
            xdotool("mousemove", str(x0 + (x1 - x0) * step // DRAG_STEPS), str(y0 + (y1 - y0) * step // DRAG_STEPS))
        self.wait(0.05)
        xdotool("mouseup", "1")
        self.wait(0.3)


def run(journey: Journey, readme: Path | None) -> None:
    window = journey.window
    journey.settle()
    journey.shot("start")
    journey.click(window.noise.estimate)
    journey.wait(SETTLE_SECONDS, lambda: window.estimate is not None)
    journey.settle()
    journey.shot("estimate")
    journey.key("v")
    journey.shot("side-by-side")
    journey.key("1")
    journey.shot("side-by-side-1to1")
    journey.key("f", "d")
    journey.shot("difference")
    journey.key("b")
    journey.shot("flip-before")
    journey.key("b")
    journey.shot("flip-after")
    journey.key("v")
    journey.click(window.noise.draw_region)
    width, height = window.info.width, window.info.height
    journey.drag_on_picture((width * 0.55, height * 0.1), (width * 0.7, height * 0.25))
    journey.shot("region-drawn")
    journey.click(window.noise.use_region)
    journey.wait(SETTLE_SECONDS, lambda: window.estimate is not None and window.estimate.method == "region")
    journey.settle()
    journey.shot("region-estimated")
    journey.key("r")
    journey.shot("regions-hidden")
    journey.key("r")
    journey.click(window.parameters.search_radius.spin.lineEdit())
    journey.key("ctrl+a")
    journey.type("2")
    journey.key("Return")
    journey.settle()
    journey.shot("spin-box-typed")
    journey.key(*["Right"] * 3, "i", *["Right"] * 12, "o")
    journey.settle()
    journey.shot("marks")
    journey.key("alt+x", "Home", "space")
    journey.wait(4)
    journey.shot("playing")
    journey.key("space")
    journey.settle()
    journey.key("ctrl+e")
    journey.wait(10, lambda: window.findChild(ExportDialog) is not None)
    journey.shot("export-dialog")
    journey.key("ctrl+a")
    journey.type(str(Path(tempfile.mkdtemp()) / "exported.mp4"))
    journey.key("Return")
    journey.wait(60, lambda: window.exports.running is not None and "frames" in window.exports.running.status.text())
    journey.shot("export-running")
    if readme is not None:
        window.grab().save(str(readme))  # the window alone
    journey.click(window.exports.running.cancel)
    journey.wait(30, lambda: window.exports.running is None)
    journey.shot("export-cancelled")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--clip", type=Path, default=SAMPLE_CLIP)
    parser.add_argument("--backend", choices=("cpu", "gpu"), default=None)
    parser.add_argument("--readme", type=Path, default=None)
    args = parser.parse_args()
    if not os.environ.get("DISPLAY"):
        parser.error("no X display: run it under xvfb-run (see the top of this file)")
    args.folder.mkdir(parents=True, exist_ok=True)
    manager = subprocess.Popen(["openbox"]) if shutil.which("openbox") else None
    app = QApplication([])
    window = MainWindow(QSettings(str(Path(tempfile.mkdtemp()) / "settings.ini"), QSettings.Format.IniFormat))
    if args.backend is not None:
        window.parameters.backend.setCurrentIndex(window.parameters.backend.findData(args.backend))
    window.resize(1560, 940)
    window.show()
    window.open_clip(args.clip)
    journey = Journey(window, args.folder)
    journey.wait(5, window.isActiveWindow)
    try:
        run(journey, args.readme)
    finally:
        window.close()
        app.processEvents()
        if manager is not None:
            manager.terminate()


if __name__ == "__main__":
    main()
