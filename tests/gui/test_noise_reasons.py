"""The noise panel shows the estimate's confidence, bands and the decorrelation's reason; the
centre weight is a control and a preset field (issue 19)."""

import numpy as np
import pytest

pytest.importorskip("PySide6", reason="the panels are Qt widgets")

from nlmeans_studio.engine import DEFAULT_H, NLMParams
from nlmeans_studio.engine.video.noise_estimate import NoiseEstimate
from nlmeans_studio.engine.video.presets import Preset, load_preset, save_preset
from nlmeans_studio.gui.controls import ParameterPanel
from nlmeans_studio.gui.panels import NoisePanel


def _estimate(sigmas: list[float], correlation: float) -> NoiseEstimate:
    scale = np.array(sigmas) / 255
    covariance = (np.full((3, 3), correlation) + (1 - correlation) * np.eye(3)) * np.outer(scale, scale)
    return NoiseEstimate(covariance, [(0, 0, 16, 16)], 768, None, "spatial", 0.42, ((0.0, 0.25, 5.0, 9),))


def test_the_panel_gives_the_confidence_and_the_reason(qtbot) -> None:
    panel = NoisePanel()
    qtbot.addWidget(panel)
    panel.show_estimate(_estimate([25, 25, 25], 0.8), None, 40.0, "exponential/max")
    text = panel.result.text()
    assert "Confidence: 42%" in text and "Sigma per brightness band: 0-64: 5.0" in text
    assert "would not help here: off: luminance gain 0.62 < 1: the noise lies along the gray axis" in text
    assert "Noise shared by the channels (1.3 effective of 3, as compressed footage has it)" in text
    helping = _estimate([8, 8, 30], 0.8)
    panel.show_estimate(helping, helping.color_transform(), 20.0, "exponential/max")
    assert "helps here: on: luminance gain 2.09 >= 1" in panel.result.text()
    assert "shared by the channels" not in panel.result.text()  # whitened: as independent as white noise
    panel.show_estimate(helping, None, 20.0, "exponential/max")
    assert "off (your choice)" in panel.result.text()


def test_centre_weight_is_a_control_and_a_preset_field(qtbot, tmp_path) -> None:
    controls = ParameterPanel()
    qtbot.addWidget(controls)
    params = NLMParams(h=12.0, weighting="exponential", center_weight="max")
    controls.set_params(params)
    assert controls.params() == params
    save_preset(tmp_path / "gentle.json", params, strength=0.8)
    saved = Preset(NLMParams(**{**vars(params), "h": DEFAULT_H}), 0.8, center_weight="max")
    assert load_preset(tmp_path / "gentle.json") == saved
