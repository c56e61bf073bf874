"""A source's SMPTE timecode, and the timecode of a later frame, so that an output keeps its place.

An editor conforms a master by its timecode (01:00:00:00 at the first frame); an export from
frame N of it starts N frames later. NTSC rates (30000/1001, 60000/1001) count in drop-frame
timecode where the source does (HH:MM:SS;FF): frame numbers 0 and 1 (0 to 3 at 59.94) are
skipped each minute but every tenth, so that the count keeps to the clock.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

TIMECODE = re.compile(r"(\d{1,2}):(\d{2}):(\d{2})([:;.,])(\d{2,3})")  # FFmpeg's: ';' or '.' before FF is drop-frame
DROP_SEPARATORS = ";.,"
DAY_HOURS = 24


def source_timecode(container: Any) -> str | None:
    """Return the timecode an opened source starts at, as FFmpeg reads it, or None.

    Parameters
    ----------
    container : av.container.InputContainer
        The source: its own tag (MXF, Matroska), its video stream's (MOV's tmcd track, as FFmpeg's
        demuxer puts it there) or a data stream's.

    Returns
    -------
    str or None
        "HH:MM:SS:FF", or "HH:MM:SS;FF" in drop-frame; None where the source has none we can read.
    """
    holders = [container, *container.streams.video, *container.streams.data]
    for holder in holders:
        for name, value in holder.metadata.items():  # Matroska's tag is TIMECODE
            if name.lower() == "timecode" and TIMECODE.fullmatch(value.strip()):
                return value.strip()
    return None


def tag_timecode(container: Any, stream: Any, timecode: str) -> None:
    """Give an output ``timecode`` as its first frame's.

    As the container's tag (MXF's, Matroska's) and its video stream's (MOV's and MP4's tmcd track).
    """
    container.metadata["timecode"] = stream.metadata["timecode"] = timecode


def timecode_after(timecode: str, rate: Fraction, frames: int) -> str:
    """Return the timecode ``frames`` frames after ``timecode`` at ``rate``, in the same counting.

    Parameters
    ----------
    timecode : str
        "HH:MM:SS:FF" (or drop-frame "HH:MM:SS;FF"), as ``source_timecode`` returns it.
    rate : Fraction
        The source's frames a second: its timecode counts round(rate) frames a second.
    frames : int
        Frames from the timecode's frame, 0 or more.

    Returns
    -------
    str
        The later frame's timecode, wrapped at 24 hours.

    Raises
    ------
    ValueError
        ``timecode`` not in that form.

    Notes
    -----
    Drop-frame is counted at 29.97 and 59.94 only; a drop-frame mark at another rate (a muxer's
    slip) counts every frame number, keeping the mark.
    """
    match = TIMECODE.fullmatch(timecode)
    if match is None:
        raise ValueError(f"{timecode!r} is not a timecode HH:MM:SS:FF")
    hours, minutes, seconds, separator, count = match.groups()
    base = round(rate)
    drop = _dropped_a_minute(rate) if separator in DROP_SEPARATORS else 0
    total_minutes = 60 * int(hours) + int(minutes)
    number = (total_minutes * 60 + int(seconds)) * base + int(count)
    number -= drop * (total_minutes - total_minutes // 10)
    return _timecode_of(number + frames, base, drop, separator)


def _dropped_a_minute(rate: Fraction) -> int:
    """Frame numbers drop-frame timecode skips each minute at ``rate``: 2 at 29.97, 4 at 59.94, else 0."""
    return {Fraction(30000, 1001): 2, Fraction(60000, 1001): 4}.get(Fraction(rate), 0)


def _timecode_of(number: int, base: int, drop: int, separator: str) -> str:
    """Return frame ``number``'s timecode (0: 00:00:00:00), ``base`` frames a second, ``drop`` skipped a minute."""
    if drop:
        ten_minutes = base * 600 - drop * 9
        minute = base * 60 - drop
        tens, rest = divmod(number, ten_minutes)
        number += drop * 9 * tens + (drop * ((rest - drop) // minute) if rest > drop else 0)
    number %= DAY_HOURS * 3600 * base
    seconds, count = divmod(number, base)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{separator}{count:02d}"
