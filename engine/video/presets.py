"""Parameter presets: JSON files of the filter's fields, validated on load.

The window's Presets menu and ``denoise --filter-preset`` read them.

A preset's strength is relative to the noise: ``"strength": 1.0`` is the h that ``suggest_h``
finds best for the clip's noise (estimated, or the synthetic noise) and the preset's window;
0.7 is lighter, 1.3 stronger. An absolute ``"h"`` in levels is taken as it is.
``"luma_chroma"`` is the luma/chroma mode as the CLI writes it: "auto" (both strengths from the
noise; what a colour clip gets by default), "off" or "H_Y,H_UV" in levels. A preset without it
is "off": presets saved before luma/chroma became the default left "off" out.
``"center_weight": "auto"`` (also where it is left out) leaves the centre weight to the noise, as
``choose_filter`` chooses it where the strengths follow the noise ("max" where h is given in
levels). Other fields left out take ``NLMParams``' defaults.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from ..resources import PRESET_FOLDER
from .default_filter import AUTO
from .luma_chroma import parse_luma_chroma
from .params import NLMParams

FIELDS = ("h", "patch_radius", "search_radius", "frames_past", "frames_future", "weighting", "center_weight")
STRENGTH_RANGE = (0.1, 5.0)  # multiples of the suggested h
MAX_PRESET_BYTES = 64 * 1024  # a preset is a few lines; a larger file is refused before it is read
NUMBER, INTEGER, TEXT = (int, float), (int,), (str,)
FIELD_TYPES = {"strength": NUMBER, "h": NUMBER, "patch_radius": INTEGER, "search_radius": INTEGER,
               "frames_past": INTEGER, "frames_future": INTEGER, "weighting": TEXT, "center_weight": TEXT,
               "luma_chroma": TEXT}  # fmt: skip


@dataclass(frozen=True)
class Preset:
    """A preset's parameters, and its ``strength`` (a multiple of the suggested h) if it has one.

    Then ``params.h`` is a placeholder until the noise is known.

    Attributes
    ----------
    params : NLMParams
        The filter's window and weighting; h in levels where the preset gives h.
    strength : float or None
        h as a multiple of the h the noise suggests (``suggest_h``), or None: ``params.h`` stands.
    luma_chroma : "auto", (h_luma, h_chroma) or None
        The luma/chroma mode (``parse_luma_chroma``'s); None is off.
    center_weight : {"auto", "max", "one"}
        "auto": chosen with the strengths (``choose_filter``), ``params`` holding the default
        until then; else the preset's, as ``params`` has it.
    """

    params: NLMParams
    strength: float | None = None
    luma_chroma: str | tuple[float, float] | None = None  # parse_luma_chroma's: None is off
    center_weight: str = AUTO


class PresetError(ValueError):
    """A preset file that cannot be used.

    Parameters
    ----------
    message : str
        Names the file and the reason.
    """


def shipped_presets() -> dict[str, Path]:
    """Return the presets shipped in resources/presets.

    Returns
    -------
    dict of str to Path
        Each preset's file by its name (the file's stem: light, medium, strong, vhs).
    """
    return {path.stem: path for path in sorted(PRESET_FOLDER.glob("*.json"))}


def find_preset(name: str) -> Path:
    """Return a shipped preset's file by its name, else ``name`` as a preset file's path.

    Parameters
    ----------
    name : str
        A shipped preset's name (light, medium, strong, vhs; any case) or a JSON file's path.

    Returns
    -------
    Path
        The preset's file.

    Raises
    ------
    PresetError
        Neither a shipped preset nor an existing file.
    """
    shipped = shipped_presets()
    if name.lower() in shipped:
        return shipped[name.lower()]
    if Path(name).is_file():
        return Path(name)
    raise PresetError(f"{name}: no such preset; the shipped ones are {', '.join(shipped)}, or give a .json file")


def load_preset(path: Path) -> Preset:
    """Read a preset; every field is optional, unknown fields and bad values are refused.

    The file is checked before anything is built from it: its size (MAX_PRESET_BYTES), that it
    is one JSON object, and each field's type; messages show at most the start of a bad value.

    Parameters
    ----------
    path : Path
        The preset's JSON file.

    Returns
    -------
    Preset
        Its parameters, strength and luma/chroma mode.

    Raises
    ------
    PresetError
        A file that cannot be read, is too large, is not one JSON object, or has an unknown
        field or a bad value.
    """
    try:
        size = Path(path).stat().st_size
        if size > MAX_PRESET_BYTES:
            raise PresetError(f"{path}: is {size} bytes; a preset is a small JSON file (at most {MAX_PRESET_BYTES})")
        fields = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:  # ValueError: a 5000-digit number too
        if isinstance(error, PresetError):
            raise
        raise PresetError(f"{path}: not a readable preset ({_shortened(str(error))})") from None
    if not isinstance(fields, dict):
        raise PresetError(f'{path}: a preset is a JSON object of parameters, like {{"h": 25}}')
    unknown = sorted(set(fields) - set(FIELD_TYPES))
    if unknown:
        names = _shortened(", ".join(unknown))
        raise PresetError(f"{path}: unknown field(s) {names}; known: {', '.join(FIELD_TYPES)}")
    for name, value in fields.items():
        if type(value) not in FIELD_TYPES[name]:  # type(): true and false are not numbers here
            kind = {NUMBER: "a number", INTEGER: "a whole number", TEXT: "text"}[FIELD_TYPES[name]]
            raise PresetError(f"{path}: {name} must be {kind}, got {_shortened(value)}")
    strength = fields.pop("strength", None)
    if fields.get("center_weight") == AUTO:
        del fields["center_weight"]
    try:
        luma_chroma = parse_luma_chroma(fields.pop("luma_chroma", "off"))
    except ValueError as error:
        raise PresetError(f"{path}: luma_chroma: {_shortened(str(error), 120)}") from None
    if strength is not None and "h" in fields:
        raise PresetError(f"{path}: give either strength (relative to the noise) or h (in levels), not both")
    low, high = STRENGTH_RANGE
    if strength is not None and not (isinstance(strength, (int, float)) and math.isfinite(strength)):
        raise PresetError(f"{path}: strength must be a number in {low}..{high}, got {strength!r}")
    if strength is not None and not low <= strength <= high:
        raise PresetError(f"{path}: strength must be a number in {low}..{high}, got {strength!r}")
    try:
        params = NLMParams(**fields)  # without h: the default strength, a placeholder where strength is given
        center = fields.get("center_weight", AUTO)
        return Preset(params, None if strength is None else float(strength), luma_chroma, center)
    except (TypeError, ValueError) as error:
        raise PresetError(f"{path}: {error}") from None


def _shortened(value: object, length: int = 60) -> str:
    """``value``'s text, cut to ``length`` characters: a message stays one readable line."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= length else text[: length - 1] + "…"


def save_preset(path: Path, params: NLMParams, strength: float | None = None, luma_chroma: str = "off") -> None:
    """Write the parameters as a preset, atomically (not the color transform, which belongs to a clip's noise).

    Parameters
    ----------
    path : Path
        The JSON file to write.
    params : NLMParams
        The filter's parameters.
    strength : float, optional
        Written instead of h when given, so that the preset follows the next clip's noise.
    luma_chroma : str
        The luma/chroma mode as the CLI writes it (off, auto or H_Y,H_UV).

    Raises
    ------
    ValueError
        A bad luma/chroma mode.
    OSError
        The file cannot be written.
    """
    path = Path(path)
    parse_luma_chroma(luma_chroma)  # a bad mode is refused here, not when the preset is next loaded
    fields: dict[str, object] = {name: getattr(params, name) for name in FIELDS}
    if strength is not None:
        del fields["h"]
        fields = {"strength": round(strength, 3), **fields}
    fields["luma_chroma"] = luma_chroma
    temporary = path.with_name(f".{path.name}.part")
    temporary.write_text(json.dumps(fields, indent=1) + "\n")
    os.replace(temporary, path)
