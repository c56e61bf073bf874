"""What the window keeps between sessions in QSettings: the filter's parameters as JSON, and each
clip's own settings (parameters, synthetic noise, strength, luma/chroma mode, marks)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QSettings

from nlmeans_studio.engine import NLMParams, parse_luma_chroma


def _fields(params: NLMParams) -> dict:
    """``params`` without the color transform, which belongs to a clip's noise estimate."""
    fields = dataclasses.asdict(params)
    fields.pop("color_transform")
    return fields


def params_to_json(params: NLMParams) -> str:
    """``params`` as JSON, without the color transform (it belongs to a clip's noise estimate)."""
    return json.dumps(_fields(params))


def params_from_json(text: str) -> NLMParams:
    """The parameters ``params_to_json`` wrote; ValueError or TypeError if they are not valid."""
    return NLMParams(**json.loads(text))


@dataclass(frozen=True)
class ClipSettings:
    """A clip as it was left: ``noise`` is the synthetic noise's controls (``NoisePanel.settings``),
    ``strength`` h's multiple of the h suggested for the noise, ``luma_chroma`` the mode as presets
    write it (off, auto or H_Y,H_UV), the marks frame indices or None."""

    params: NLMParams
    noise: dict
    strength: float = 1.0
    luma_chroma: str = "auto"
    mark_in: int | None = None
    mark_out: int | None = None


def _clip_key(path: Path) -> str:
    return "clips/" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()


def save_clip_settings(settings: QSettings, path: Path, clip: ClipSettings) -> None:
    """Keep ``clip`` for the clip at ``path`` (wherever it is opened from: the key is its resolved path)."""
    saved = {
        "params": _fields(clip.params),
        "noise": clip.noise,
        "strength": clip.strength,
        "luma_chroma": clip.luma_chroma,
        "in": clip.mark_in,
        "out": clip.mark_out,
    }
    settings.setValue(_clip_key(path), json.dumps(saved))


def load_clip_settings(settings: QSettings, path: Path) -> ClipSettings | None:
    """The settings kept for the clip at ``path``; None if it has none. ValueError if they are
    not valid (written by another version, or edited)."""
    saved = settings.value(_clip_key(path))
    if saved is None:
        return None
    try:
        fields = json.loads(saved)
        luma_chroma = fields.get("luma_chroma", "off")
        parse_luma_chroma(luma_chroma)  # refused here rather than when it is shown
        return ClipSettings(
            NLMParams(**fields["params"]),
            fields.get("noise", {}),
            float(fields.get("strength", 1.0)),
            luma_chroma,
            fields.get("in"),
            fields.get("out"),
        )
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise ValueError(f"the clip's saved settings are not valid: {error}") from None
