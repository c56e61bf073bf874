"""The noise panel (synthetic noise, estimation, reference clip) and the readouts."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine import NoiseEstimate
from engine.preview import Preview, SyntheticNoise


def _matrix_text(matrix: np.ndarray, digits: int = 2) -> str:
    return "\n".join("  ".join(f"{value:+.{digits}f}" for value in row) for row in matrix)


class NoisePanel(QGroupBox):
    """Synthetic noise for PSNR, the noise estimate and its result, a clean reference clip."""

    synthetic_changed = Signal()
    estimate_requested = Signal()  # automatic mode
    draw_region_requested = Signal()
    region_requested = Signal()  # "Use this region"
    reference_requested = Signal()

    def __init__(self) -> None:
        super().__init__("Noise")
        self.synthetic = QCheckBox("Add synthetic noise (treat the clip as clean)")
        self.synthetic.setToolTip("Adds Gaussian noise of the sigma and correlation below, so PSNR can be measured")
        self.sigma = QDoubleSpinBox()
        self.sigma.setRange(0, 100)
        self.sigma.setValue(25)
        self.sigma.setSuffix(" levels")
        self.correlation = QDoubleSpinBox()
        self.correlation.setRange(-0.45, 0.95)
        self.correlation.setSingleStep(0.1)
        self.correlation.setToolTip(
            "Correlation of the noise between color channels (demosaiced camera noise: 0.5-0.8)"
        )
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        synthetic = QFormLayout()
        synthetic.addRow(self.synthetic)
        synthetic.addRow("Sigma", self.sigma)
        synthetic.addRow("Correlation", self.correlation)
        synthetic.addRow("Seed", self.seed)
        self.estimate = QPushButton("Estimate noise")
        self.estimate.setToolTip("Find flat regions by themselves and measure the noise there")
        self.draw_region = QPushButton("Draw region")
        self.draw_region.setToolTip("Show a rectangle on the before view; drag it onto a flat area")
        self.use_region = QPushButton("Use this region")
        self.use_region.setEnabled(False)
        self.reference = QPushButton("Reference clip…")
        self.reference.setToolTip("A clean version of the clip (same frames), for PSNR on real footage")
        buttons = QHBoxLayout()
        for button in (self.estimate, self.draw_region, self.use_region):
            buttons.addWidget(button)
        self.result = QLabel("No estimate yet.")
        self.result.setWordWrap(True)
        self.matrices = QGridLayout()
        self.correlation_text, self.transform_text = QLabel(), QLabel()
        for column, (title, label) in enumerate((("Correlation", self.correlation_text), ("G", self.transform_text))):
            label.setStyleSheet("font-family: monospace")
            self.matrices.addWidget(QLabel(title), 0, column)
            self.matrices.addWidget(label, 1, column)
        layout = QVBoxLayout(self)
        layout.addLayout(synthetic)
        layout.addLayout(buttons)
        layout.addWidget(self.result)
        layout.addLayout(self.matrices)
        layout.addWidget(self.reference)
        for widget in (self.sigma, self.correlation, self.seed):
            widget.valueChanged.connect(self.synthetic_changed)
        self.synthetic.toggled.connect(self.synthetic_changed)
        self.estimate.clicked.connect(self.estimate_requested)
        self.draw_region.clicked.connect(self.draw_region_requested)
        self.use_region.clicked.connect(self.region_requested)
        self.reference.clicked.connect(self.reference_requested)

    def noise(self) -> SyntheticNoise | None:
        """The synthetic noise asked for, or None."""
        if not self.synthetic.isChecked():
            return None
        return SyntheticNoise(self.sigma.value(), self.correlation.value(), self.seed.value())

    def show_estimate(self, estimate: NoiseEstimate, transform: np.ndarray | None, h: float) -> None:
        sigma = ", ".join(f"{s:.2f}" for s in estimate.sigma)
        source = {"spatial": "flat blocks", "temporal": "still flat blocks", "region": "your region"}[estimate.method]
        lines = [
            f"Sigma per channel: {sigma} levels",
            f"from {len(estimate.regions)} {source} ({estimate.samples} samples).",
            f"Suggested h: {h:.1f}",
        ]
        if len(estimate.covariance) > 1:
            verdict = "helps here: on." if transform is not None else "would not help here: off."
            lines.append(f"Color decorrelation {verdict}")
        if estimate.warning:
            lines.append(f"Warning: {estimate.warning}")
        self.result.setText("\n".join(lines))
        self.correlation_text.setText(_matrix_text(estimate.correlation))
        try:
            self.transform_text.setText(_matrix_text(estimate.color_transform()))
        except ValueError as error:
            self.transform_text.setText(str(error))


class Readouts(QWidget):
    """FPS and engine time (refreshed once a second by the window), PSNR, estimated sigma."""

    def __init__(self) -> None:
        super().__init__()
        self.fps, self.psnr, self.sigma = QLabel("-"), QLabel("-"), QLabel("not estimated")
        for label in (self.fps, self.psnr):
            label.setWordWrap(True)
        form = QFormLayout(self)
        form.addRow("Speed", self.fps)
        form.addRow("PSNR", self.psnr)
        form.addRow("Noise sigma", self.sigma)

    def show_speed(self, previews_per_second: int, engine_ms: float | None, device: str) -> None:
        """Previews shown in the last second ("idle" when none), the engine's time for the last
        one, in ms, and the device it ran on."""
        parts = [f"{previews_per_second} frames/s" if previews_per_second else "idle"]
        parts.append(f"last frame {engine_ms:.1f} ms" if engine_ms is not None else "no frame yet")
        self.fps.setText(" · ".join(parts + ([device] if device else [])))

    def show_psnr(self, preview: Preview) -> None:
        if preview.psnr_after is None:
            self.psnr.setText(f"- ({preview.psnr_note})")
        else:
            gain = preview.psnr_after - preview.psnr_before
            self.psnr.setText(
                f"noisy {preview.psnr_before:.2f} dB → denoised {preview.psnr_after:.2f} dB ({gain:+.2f})"
            )

    def show_sigma(self, estimate: NoiseEstimate) -> None:
        self.sigma.setText(", ".join(f"{s:.2f}" for s in estimate.sigma) + " levels")
