"""Preset files: the shipped ones load and follow the noise; bad ones are refused with the file and the reason."""

import pytest

pytest.importorskip("PySide6", reason="the presets module belongs to the window")

from nlmeans_studio.engine import DEFAULT_H, NLMParams
from nlmeans_studio.engine.video.presets import Preset, PresetError, load_preset, save_preset, shipped_presets
from nlmeans_studio.gui.controls import parameter_help


def test_shipped_presets_set_h_relative_to_the_noise() -> None:
    presets = {name: load_preset(path) for name, path in shipped_presets().items()}
    assert set(presets) == {"light", "medium", "strong", "vhs"}
    assert all(isinstance(preset.params, NLMParams) and preset.strength is not None for preset in presets.values())
    assert presets["light"].strength < presets["medium"].strength == 1 < presets["strong"].strength
    assert all(preset.center_weight == "auto" for preset in presets.values())  # chosen with the strengths


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not a readable preset"),
        ("[1, 2]", "a preset is a JSON object"),
        ('{"h": 20, "sharpness": 3}', "unknown field\\(s\\) sharpness"),
        ('{"h": -2}', "h must be a finite number > 0"),
        ('{"strength": 0}', "strength must be a number in 0.1..5.0, got 0"),
        ('{"strength": "strong"}', "strength must be a number"),
        ('{"strength": 1, "h": 20}', "either strength .* or h"),
        ('{"h": ' + "9" * 5000 + "}", "not a readable preset \\(Exceeds the limit"),  # Python's int digits limit
        ("[" * 10_000 + "]" * 10_000, "not a readable preset"),  # nested past Python's recursion limit
        ('{"h": [' + "1, " * 5000 + "1]}", r"h must be a number, got \[1, 1, 1, .{30,50}…$"),  # the start only
        ('{"patch_radius": true}', "patch_radius must be a whole number, got True"),
        ('{"weighting": 3}', "weighting must be text, got 3"),
        ('{"luma_chroma": [4, 9]}', r"luma_chroma must be text, got \[4, 9\]"),
        ('{"luma_chroma": "strong"}', "luma_chroma: expected off, auto or H_Y,H_UV .*got 'strong'"),
        ('{"luma_chroma": "4,0"}', r"luma_chroma: luma/chroma strengths must be in \(0, 10000\] levels"),
        ('{"luma_chroma": "' + "4," * 5000 + '"}', r"luma_chroma: expected off, .{100,130}…$"),  # the start only
    ],
)
def test_bad_presets_are_refused(tmp_path, text, message) -> None:
    path = tmp_path / "preset.json"
    path.write_text(text)
    with pytest.raises(PresetError, match=message):
        load_preset(path)


def test_a_huge_preset_is_refused_before_it_is_read(tmp_path) -> None:
    path = tmp_path / "huge.json"
    path.write_text('{"h": [' + "1, " * 25_000_000 + "1]}")  # 75 MB
    with pytest.raises(PresetError, match=r"huge.json: is 75000010 bytes; a preset is a small JSON file"):
        load_preset(path)


def test_a_saved_preset_loads_back(tmp_path) -> None:
    params = NLMParams(h=12.5, patch_radius=2, search_radius=7, frames_past=0, weighting="exponential")
    save_preset(tmp_path / "mine.json", params)
    assert load_preset(tmp_path / "mine.json") == Preset(params, center_weight="max")  # as saved: pinned
    save_preset(tmp_path / "relative.json", params, strength=1.25)
    relative = Preset(NLMParams(**{**vars(params), "h": DEFAULT_H}), 1.25, center_weight="max")
    assert load_preset(tmp_path / "relative.json") == relative
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.json", "relative.json"]


def test_the_luma_chroma_mode_is_saved_and_a_preset_without_it_is_off(tmp_path) -> None:
    params = NLMParams(h=12.5)
    for text, mode in (("auto", "auto"), ("4.5,9", (4.5, 9.0)), ("off", None)):
        save_preset(tmp_path / "mine.json", params, luma_chroma=text)
        assert load_preset(tmp_path / "mine.json") == Preset(params, None, mode, center_weight="max")
    assert '"luma_chroma": "off"' in (tmp_path / "mine.json").read_text()  # off is written: auto is the default
    # Saved before luma/chroma became the default, off was left out: such a preset stays off.
    (tmp_path / "old.json").write_text('{"h": 12.5}')
    assert load_preset(tmp_path / "old.json").luma_chroma is None
    with pytest.raises(ValueError, match="expected off, auto or H_Y,H_UV"):
        save_preset(tmp_path / "bad.json", params, luma_chroma="on")


def test_tooltips_come_from_the_engine_docstring() -> None:
    help_texts = parameter_help()
    assert set(help_texts) >= {"h", "patch_radius", "search_radius", "frames_past", "frames_future", "weighting"}
    assert help_texts["search_radius"].startswith("A, in pixels: the spatial search window is (2A+1) x (2A+1).")
