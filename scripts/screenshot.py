"""Screenshot the window on the sample clip: split view, synthetic noise, the noise estimate.

    xvfb-run -s "-screen 0 1600x1000x24" python scripts/screenshot.py resources/screenshot.png [--export]

With ``--export`` an export runs while the picture is taken (the progress bar shows).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

from engine import NLMParams
from engine.sample import SAMPLE_CLIP
from gui.export import ExportSettings
from gui.window import MainWindow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--export", action="store_true")
    args = parser.parse_args()
    app = QApplication([])
    folder = Path(tempfile.mkdtemp())
    window = MainWindow(QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat))
    window.parameters.backend.setCurrentIndex(window.parameters.backend.findData("cpu"))
    window.parameters.set_params(NLMParams(h=45))
    window.noise.sigma.setValue(20)
    window.noise.correlation.setValue(0.5)
    window.noise.synthetic.setChecked(True)
    window.resize(1560, 940)
    window.show()
    window.open_clip(SAMPLE_CLIP)
    window.frame_slider.setValue(60)
    QTimer.singleShot(3000, lambda: window.request_estimate(None))
    if args.export:
        QTimer.singleShot(6000, lambda: window.start_export(ExportSettings(folder / "out.mp4", "h264", 18, 0, None)))

    def shoot() -> None:
        window.grab().save(args.output)
        window.cancel_export()
        QTimer.singleShot(1500, lambda: (window.close(), app.quit()))

    QTimer.singleShot(9000, shoot)
    app.exec()


if __name__ == "__main__":
    main()
