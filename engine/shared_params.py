"""What the video and the volume filter share.

The radii's limits, the weightings, the centre weights, and the checks that validate integers and
choices at the public boundary.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

Weighting = Literal["bisquare", "exponential"]
CenterWeight = Literal["one", "max"]

PATCH_RADIUS_MAX = 8
SEARCH_RADIUS_MAX = 16
WEIGHTINGS = ("bisquare", "exponential")
CENTER_WEIGHTS = ("one", "max")


def check_int(name: str, value: object, high: int) -> int:
    """Return ``value`` as an int, or ValueError unless it is an integer in 0..``high``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= high:
        raise ValueError(f"{name} must be an integer in 0..{high}, got {value!r}")
    return int(value)


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """Return ``value`` as a str, or ValueError unless it is one of ``choices``."""
    if value not in choices:
        allowed = " or ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return str(value)
