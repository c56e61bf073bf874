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
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from nlmeans_studio.engine import NoiseEstimate, Preview, SyntheticNoise, decorrelation_decision


def _matrix_text(matrix: np.ndarray, digits: int = 2) -> str:
    return "\n".join("  ".join(f"{value:+.{digits}f}" for value in row) for row in matrix)


def wrapping_label(text: str = "") -> QLabel:
    """A label that wraps to the panel's width and never widens it: a word longer than the width
    (a path, an error) is cut at the edge; the whole text is in the tooltip."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    label.setMinimumWidth(1)
    return label


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
        self.draw_region.setToolTip("Then drag a rectangle over a flat area of the picture with the mouse")
        self.use_region = QPushButton("Use this region")
        self.use_region.setEnabled(False)
        self.reference = QPushButton("Reference clip…")
        self.reference.setToolTip("A clean version of the clip (same frames), for PSNR on real footage")
        buttons = QHBoxLayout()
        for button in (self.estimate, self.draw_region, self.use_region):
            buttons.addWidget(button)
        self.result = wrapping_label("No estimate yet.")
        self.matrices = QGridLayout()
        self.correlation_text, self.transform_text = wrapping_label(), wrapping_label()
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

    def settings(self) -> dict:
        """The synthetic noise's controls, for the clip's saved settings."""
        return {
            "on": self.synthetic.isChecked(),
            "sigma": self.sigma.value(),
            "correlation": self.correlation.value(),
            "seed": self.seed.value(),
        }

    def restore(self, settings: dict) -> None:
        """Show saved ``settings`` and emit ``synthetic_changed`` once."""
        self.blockSignals(True)
        for widget, key in ((self.sigma, "sigma"), (self.correlation, "correlation"), (self.seed, "seed")):
            widget.setValue(settings.get(key, widget.value()))
        self.synthetic.setChecked(bool(settings.get("on", False)))
        self.blockSignals(False)
        self.synthetic_changed.emit()

    def allow_region(self, drawn: bool) -> None:
        """Whether a region is drawn on the picture, for "Use this region" to measure."""
        self.use_region.setEnabled(drawn)

    def clear_estimate(self) -> None:
        """Another clip: its noise is not estimated yet."""
        self.result.setText("No estimate yet.")

    def show_failure(self, message: str) -> None:
        """The estimate failed: why, in place of its result."""
        self.result.setText(f"Not estimated: {message}")

    def show_estimate(self, estimate: NoiseEstimate, transform: np.ndarray | None, h: float, variant: str) -> None:
        """The estimate's sigma, source, confidence and the h it suggests for ``variant`` (the
        weighting and centre weight set, "exponential/one": h depends on them); whether color
        decorrelation is on (``transform`` not None) and why; its correlation and G matrices."""
        sigma = ", ".join(f"{s:.2f}" for s in estimate.sigma)
        count = len(estimate.regions)
        source = {
            "spatial": f"{count} flat blocks",
            "temporal": f"{count} still flat blocks",
            "motion": f"{count} motion-compensated blocks",
            "region": "your region",
        }[estimate.method]
        lines = [
            f"Sigma per channel: {sigma} levels",
            f"from {source} ({estimate.samples} samples).",
            f"Confidence: {estimate.confidence:.0%}",
            f"Suggested h: {h:.1f} (one strength, {variant}: luma/chroma off; from the noise's table, before "
            "SURE's factor on the clip)",
        ]
        if estimate.bands:
            bands = ", ".join(f"{low * 255:.0f}-{high * 255:.0f}: {s:.1f}" for low, high, s, _ in estimate.bands)
            lines.append(f"Sigma per brightness band: {bands}")
        if estimate.spatially_correlated:
            lines.append(
                f"Spatially correlated noise ({estimate.spatial_correlation:.0%} below the high-pass band): "
                "the suggested h allows for it."
            )
        channels = len(estimate.covariance)
        if transform is None and estimate.shared_by_channels:
            lines.append(
                f"Noise shared by the channels ({estimate.effective_channels:.1f} effective of {channels}, as "
                "compressed footage has it): the suggested h allows for it."
            )
        if len(estimate.covariance) > 1:
            helps, reason = decorrelation_decision(estimate)
            verdict = "helps here: on" if transform is not None else "would not help here: off"
            if (transform is not None) != helps:
                verdict = "on (your choice)" if transform is not None else "off (your choice)"
            lines.append(f"Color decorrelation {verdict}: {reason}.")
        if estimate.warning:
            lines.append(f"Warning: {estimate.warning}")
        self.result.setText("\n".join(lines))
        self.result.setToolTip("\n".join(lines))
        self.correlation_text.setText(_matrix_text(estimate.correlation))
        try:
            self.transform_text.setText(_matrix_text(estimate.color_transform()))
        except ValueError as error:
            self.transform_text.setText(str(error))


class Readouts(QWidget):
    """Speed (refreshed once a second by the window), the device, PSNR, estimated sigma: short
    lines, one row each, so that none wraps at the side panel's width."""

    def __init__(self) -> None:
        super().__init__()
        self.fps, self.device = wrapping_label("-"), wrapping_label("-")
        self.psnr, self.sigma = wrapping_label("-"), wrapping_label("not estimated")
        form = QFormLayout(self)
        form.addRow("Speed", self.fps)
        form.addRow("Device", self.device)
        form.addRow("PSNR", self.psnr)
        form.addRow("Noise sigma", self.sigma)

    def show_still(self, engine_ms: float | None, device: str, rendering_seconds: float | None) -> None:
        """A still frame: ``rendering_seconds`` since the engine started on the next one (None when
        it is idle), the engine's time for the last one, in ms and frames per second, and its device."""
        parts = [] if rendering_seconds is None else [f"rendering… {rendering_seconds:.0f} s"]
        if engine_ms is None:
            parts.append("no frame filtered yet")  # the frame may show, unfiltered, meanwhile
        else:
            parts.append(f"last frame {engine_ms:.1f} ms ({1000 / max(engine_ms, 1e-3):.2f} frames/s)")
        self.fps.setText(" · ".join(parts))
        self.device.setText(device or "-")

    def show_playback(self, shown_per_second: float, render_fps: float | None, rendered: int, total: int) -> None:
        """Playing: frames shown in the last second, the render-ahead's rate, frames rendered of all."""
        rate = "starting" if render_fps is None else f"ahead {render_fps:.1f}/s"
        self.fps.setText(f"playing {shown_per_second:.1f}/s · {rate} · {rendered}/{total} rendered")

    def new_clip(self) -> None:
        """Another clip: its PSNR and noise are not known yet."""
        self.psnr.setText("-")
        self.sigma.setText("not estimated")

    def show_psnr(self, preview: Preview) -> None:
        if preview.psnr_after is None:  # the note's first words, one line at the panel's width; all of it on hover
            self.psnr.setText(f"- ({(preview.psnr_note or '').split(':')[0]})")
            self.psnr.setToolTip(preview.psnr_note or "")
        else:
            self.psnr.setToolTip("")
            gain = preview.psnr_after - preview.psnr_before
            self.psnr.setText(
                f"noisy {preview.psnr_before:.2f} dB → denoised {preview.psnr_after:.2f} dB ({gain:+.2f})"
            )

    def show_sigma(self, estimate: NoiseEstimate) -> None:
        source = " (synthetic)" if estimate.method == "synthetic" else ""
        self.sigma.setText(", ".join(f"{s:.2f}" for s in estimate.sigma) + " levels" + source)
