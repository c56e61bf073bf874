"""How long the window's CPU preview takes to answer a slider, in seconds: this checkout against another.

    QT_QPA_PLATFORM=offscreen python scripts/bench_cpu_preview.py [--base REV] [--moves 5] [--cold]

Opens the window as a first-time user gets it (fresh settings, the bundled 720p sample with its
synthetic noise, the default filter; the CPU where there is no GPU) at fit zoom and, once the
first preview has settled, presses Up on the strength's box ``--moves`` times, each after the
last preview settled. For each press: the time to the first denoised picture of the new strength
on screen (a quick pass, or the exact frame where there is none) and to the exact whole frame,
from the key press (the window's 40 ms debounce included). Medians printed, one line a checkout.

``--base REV`` measures that revision too, in the same run, first, from ``git archive`` in a
folder under the temporary directory kept between runs (imported ahead of the editable install;
the first run compiles its numba cache: run twice for a warm launch). ``--cold`` starts each checkout with an empty
numba cache (its own ``NUMBA_CACHE_DIR``): the first launch, compile included, and how late a
10 ms timer on the GUI thread fires meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 600
UNFILTERED = "not filtered yet"  # the stage of a preview that shows the input alone (no filter ran yet)


def measure(moves: int) -> dict[str, object]:
    """Drive the window in this process; the figures as a dict."""
    from PySide6.QtCore import QSettings, Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from nlmeans_studio.engine import SAMPLE_CLIP
    from nlmeans_studio.gui.window import MainWindow

    app = QApplication.instance() or QApplication([])
    folder = tempfile.mkdtemp()
    window = MainWindow(QSettings(str(Path(folder) / "settings.ini"), QSettings.Format.IniFormat))
    window.resize(1400, 900)
    window.show()
    late = [0.0]
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        late[0] = max(late[0], (now - last[0]) * 1000 - 10)
        last[0] = now

    timer = QTimer(interval=10)
    timer.timeout.connect(tick)
    timer.start()

    def wait(condition, limit: float = TIMEOUT_S) -> float:
        started = time.perf_counter()
        while not condition():
            app.processEvents()
            time.sleep(0.002)
            if time.perf_counter() - started > limit:
                raise TimeoutError("the window did not answer")
        return time.perf_counter()

    def stage() -> str:
        return getattr(window.preview, "stage", "exact")

    def settled() -> bool:
        return (
            not window.debounce.isActive()
            and window._shown >= window._pending_preview > 0
            and stage() == "exact"
            and not window.busy.isVisibleTo(window)
        )

    opened = time.perf_counter()
    window.open_clip(SAMPLE_CLIP)
    before_shown = wait(lambda: window.view.main_image.image is not None) - opened
    first_denoised = wait(lambda: window.preview is not None and stage() != UNFILTERED) - opened
    wait(settled)
    launch_lateness = late[0]
    first_answers, exact_answers, stages = [], [], []
    for _ in range(moves):
        strength = window.parameters.h_luma if window.current_luma_chroma() is not None else window.parameters.h
        shown = window.preview
        pressed = time.perf_counter()
        QTest.keyClick(strength.spin, Qt.Key.Key_Up)
        wait(lambda: not window.debounce.isActive())
        number = window._pending_preview
        first = wait(lambda n=number, s=shown: window._shown >= n and window.preview is not s and stage() != UNFILTERED)
        stages.append(stage())
        first_answers.append(first - pressed)
        exact_answers.append(wait(lambda n=number: window._shown >= n and stage() == "exact") - pressed)
        wait(settled)
    timer.stop()
    window.close()
    return {
        "before_shown_s": before_shown,
        "first_denoised_s": first_denoised,
        "launch_gui_lateness_ms": launch_lateness,
        "first_answer_s": statistics.median(first_answers),
        "exact_answer_s": statistics.median(exact_answers),
        "first_stages": sorted(set(stages)),
        "first_answers_s": [round(value, 3) for value in first_answers],
        "exact_answers_s": [round(value, 3) for value in exact_answers],
    }


def run_checkout(package: Path | None, moves: int, cold: bool) -> dict[str, object]:
    """Measure in a child process: this checkout (``package`` None) or the package folder given."""
    environment = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    with tempfile.TemporaryDirectory() as scratch:
        if package is not None:
            (Path(scratch) / "nlmeans_studio").symlink_to(package)
            environment["PYTHONPATH"] = scratch
        if cold:
            environment["NUMBA_CACHE_DIR"] = str(Path(scratch) / "numba-cache")
        command = [sys.executable, __file__, "--child", "--moves", str(moves)]
        result = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=TIMEOUT_S * 2)
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=None, help="a git revision to measure too, before this checkout")
    parser.add_argument("--moves", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="an empty numba cache: the first launch")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.moves)))
        return
    print(f"cores free to this process: {len(os.sched_getaffinity(0))}; {args.moves} moves; cold: {args.cold}")
    checkouts: list[tuple[str, Path | None]] = []
    if args.base:
        # A folder kept between runs: numba's cache is per file path, so a second run finds it warm.
        base = Path(tempfile.gettempdir()) / f"nlmeans-bench-{args.base}"
        if not base.exists():
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.base], capture_output=True, check=True)
            base.mkdir()
            (base / "base.tar").write_bytes(archive.stdout)
            with tarfile.open(base / "base.tar") as tar:
                tar.extractall(base, filter="fully_trusted")  # keeps package/'s links
        checkouts.append((f"base {args.base}", base / "package"))
    checkouts.append(("this checkout", None))
    for name, package in checkouts:
        figures = run_checkout(package, args.moves, args.cold)
        print(
            f"{name}: launch: before shown {figures['before_shown_s']:.2f} s, first denoised "
            f"{figures['first_denoised_s']:.2f} s, GUI timer late by up to "
            f"{figures['launch_gui_lateness_ms']:.0f} ms; "
            f"slider: first denoised {figures['first_answer_s']:.3f} s ({', '.join(figures['first_stages'])}), "
            f"exact whole frame {figures['exact_answer_s']:.3f} s (medians; each: {figures['first_answers_s']}, "
            f"{figures['exact_answers_s']})"
        )


if __name__ == "__main__":
    main()
