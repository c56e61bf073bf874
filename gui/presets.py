"""Parameter presets: JSON files of the filter's fields, validated on load."""

from __future__ import annotations

import json
import os
from pathlib import Path

from engine import NLMParams

PRESET_FOLDER = Path(__file__).resolve().parent.parent / "resources" / "presets"
FIELDS = ("h", "patch_radius", "search_radius", "frames_past", "frames_future", "weighting")


class PresetError(ValueError):
    """A preset file that cannot be used; the message names the file and the reason."""


def shipped_presets() -> dict[str, Path]:
    """The presets in resources/presets, by name (file stem)."""
    return {path.stem: path for path in sorted(PRESET_FOLDER.glob("*.json"))}


def load_preset(path: Path) -> NLMParams:
    """Read a preset; every field is optional, unknown fields and bad values are refused."""
    try:
        fields = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PresetError(f"{path}: not a readable preset ({error})") from None
    if not isinstance(fields, dict):
        raise PresetError(f'{path}: a preset is a JSON object of parameters, like {{"h": 25}}')
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise PresetError(f"{path}: unknown field(s) {', '.join(unknown)}; known: {', '.join(FIELDS)}")
    try:
        return NLMParams(**{"h": 20.0, **fields})
    except (TypeError, ValueError) as error:
        raise PresetError(f"{path}: {error}") from None


def save_preset(path: Path, params: NLMParams) -> None:
    """Write the parameters (not the color transform, which belongs to a clip's noise)."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.part")
    temporary.write_text(json.dumps({name: getattr(params, name) for name in FIELDS}, indent=1) + "\n")
    os.replace(temporary, path)
