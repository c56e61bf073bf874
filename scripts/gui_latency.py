"""How responsive the window stays while the CPU engine works: event-loop latency, in ms.

    QT_QPA_PLATFORM=offscreen python scripts/gui_latency.py [--seconds 8] [--screenshot FILE]

Opens the window on the sample clip with the CPU backend and a heavy window (A = 5,
Dp = Df = 2), plays it so the worker is always busy, and meanwhile measures how late a 10 ms
timer fires on the GUI thread. Prints the median, 99th percentile and worst lateness and the
share of the time the engine was busy. ``--screenshot`` saves the window at the end.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

from nlmeans_studio.engine import NLMParams
from nlmeans_studio.engine.video.sample import SAMPLE_CLIP
from nlmeans_studio.gui.window import MainWindow

TICK_MS = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--screenshot", default=None)
    args = parser.parse_args()
    app = QApplication([])
    settings = QSettings(tempfile.mktemp(suffix=".ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings)
    window.parameters.backend.setCurrentIndex(window.parameters.backend.findData("cpu"))
    window.parameters.set_params(NLMParams(h=30, search_radius=5, frames_past=2, frames_future=2))
    window.noise.synthetic.setChecked(True)
    window.show()
    window.open_clip(SAMPLE_CLIP)
    late, busy = [], []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        late.append(max(0.0, (now - last[0]) * 1000 - TICK_MS))
        busy.append(window.busy.isVisibleTo(window))  # the busy indicator: the engine works
        last[0] = now

    timer = QTimer(interval=TICK_MS)
    timer.timeout.connect(tick)

    def start() -> None:  # after the first preview
        window.toggle_play()
        last[0] = time.perf_counter()
        timer.start()

    QTimer.singleShot(2000, start)

    def finish() -> None:
        timer.stop()
        if args.screenshot:
            window.grab().save(args.screenshot)
        window.close()
        app.quit()

    QTimer.singleShot(round(2000 + args.seconds * 1000), finish)
    app.exec()
    late.sort()
    share = 100 * sum(busy) / len(busy)
    print(f"event-loop lateness over {len(late)} ticks of {TICK_MS} ms, engine busy {share:.0f} %")
    print(f"median {statistics.median(late):.1f} ms, p99 {late[int(0.99 * len(late))]:.1f} ms, worst {late[-1]:.1f} ms")


if __name__ == "__main__":
    main()
