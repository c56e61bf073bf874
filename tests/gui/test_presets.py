"""Preset files: the shipped ones load; bad ones are refused with the file and the reason."""

import pytest

pytest.importorskip("PySide6", reason="the presets module belongs to the window")

from engine import NLMParams
from gui.controls import parameter_help
from gui.presets import PresetError, load_preset, save_preset, shipped_presets


def test_shipped_presets_are_valid() -> None:
    presets = shipped_presets()
    assert set(presets) == {"light", "medium", "strong", "vhs"}
    assert all(isinstance(load_preset(path), NLMParams) for path in presets.values())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not a readable preset"),
        ("[1, 2]", "a preset is a JSON object"),
        ('{"h": 20, "sharpness": 3}', "unknown field\\(s\\) sharpness"),
        ('{"h": -2}', "h must be a finite number > 0"),
    ],
)
def test_bad_presets_are_refused(tmp_path, text, message) -> None:
    path = tmp_path / "preset.json"
    path.write_text(text)
    with pytest.raises(PresetError, match=message):
        load_preset(path)


def test_a_saved_preset_loads_back(tmp_path) -> None:
    params = NLMParams(h=12.5, patch_radius=2, search_radius=7, frames_past=0, weighting="exponential")
    save_preset(tmp_path / "mine.json", params)
    assert load_preset(tmp_path / "mine.json") == params
    assert [p.name for p in tmp_path.iterdir()] == ["mine.json"]


def test_tooltips_come_from_the_engine_docstring() -> None:
    help_texts = parameter_help()
    assert set(help_texts) >= {"h", "patch_radius", "search_radius", "frames_past", "frames_future", "weighting"}
    assert help_texts["search_radius"].startswith("A, in pixels: the spatial search window is (2A+1) x (2A+1).")
