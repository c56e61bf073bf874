"""Image sequences: numbered images named by a printf-style pattern (``scans/%06d.png``).

FFmpeg reads and writes them as one video. Which names are patterns, which images of one exist, and
the checks FFmpeg's image2 reader leaves out (a gap in the numbers, an empty image).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

from .ffmpeg import VideoError

# The frame number's place in an image sequence's name (%d, %06d), or "%%", FFmpeg's escaped "%"
SEQUENCE_NUMBER = re.compile(r"%(?:(%)|0?(\d*)d)")


def is_image_sequence(path: Path) -> bool:
    """Return whether ``path`` names numbered images, printf-style: ``scans/%06d.png``.

    Parameters
    ----------
    path : Path
        A file name or a pattern; "%%" is FFmpeg's escaped "%", no frame number's place.

    Returns
    -------
    bool
        True where the name holds a frame number's place (%d, %06d).
    """
    return any(place[1] is None for place in SEQUENCE_NUMBER.finditer(path.name))


def _numbered_name(name: str, number: Callable[[int], str]) -> str:
    """``name`` with each frame number's place as ``number(width)`` gives it, and each "%%" as "%".

    Width: the digits %06d asks for, 0 for %d.
    """
    return SEQUENCE_NUMBER.sub(lambda place: "%" if place[1] else number(int(place[2] or 0)), name)


def sequence_files(path: Path) -> list[Path]:
    """Return the files of an image sequence that exist, in frame number order.

    Parameters
    ----------
    path : Path
        The sequence's pattern (``scans/%06d.dpx``): %06d takes six digits or more, %d any.

    Returns
    -------
    list of Path
        The images of that name in its folder, by their numbers; empty where there are none.
    """
    return [file for _, file in numbered_images(path)]


def numbered_images(path: Path) -> list[tuple[int, Path]]:
    """(frame number, file) of the images of a sequence that exist, in number order."""
    # %06d: six digits or more; %d: any
    pattern = re.compile(_numbered_name(re.escape(path.name), lambda width: rf"(\d{{{max(width, 1)},}})"))
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        return []
    matches = [(pattern.fullmatch(file.name), file) for file in folder.iterdir()]
    return sorted((int(match[1]), file) for match, file in matches if match)


def first_image_number(path: Path) -> int:
    """Return the number of an image sequence's first image, the images from it on checked.

    All the images from it to the last are checked to be there and to hold data: FFmpeg's image2
    reader stops quietly at a gap or an empty image (a clip short of frames), and looks for the
    first only among the numbers 0 to 4.
    """
    images = numbered_images(path)
    if not images:
        raise VideoError(f"{path}: no images of this sequence exist")
    (first, _), (last, _) = images[0], images[-1]
    for (number, file), (following, following_file) in itertools.pairwise(images):
        if following == number:
            raise VideoError(f"{path}: {file.name} and {following_file.name} are both frame {number}; keep one")
        if following != number + 1:
            missing = _numbered_name(path.name, lambda width, number=number: str(number + 1).zfill(width))
            raise VideoError(
                f"{path}: {missing} is missing: the {len(images)} images are numbered {first} to {last} with a gap "
                f"after {file.name}; add the missing images, or number the images without gaps"
            )
    for number, file in images:
        if file.stat().st_size == 0:
            raise VideoError(
                f"{file}: is empty (0 bytes), frame {number - first + 1} of the {len(images)} images of {path.name}; "
                "replace it with the image it should hold"
            )
    return first


def check_sequence_rate(rate: float | Fraction) -> None:
    """Refuse a frame rate no image sequence can be read at.

    Parameters
    ----------
    rate : float or Fraction
        Frames a second.

    Raises
    ------
    ValueError
        ``rate`` is not a number of frames a second in 1..1000 (NaN and infinity included).
    """
    if isinstance(rate, bool) or not isinstance(rate, (int, float, Fraction)) or not 1 <= rate <= 1000:
        raise ValueError(f"an image sequence's frame rate must be a number of frames a second in 1..1000, got {rate!r}")


def sequence_rate(path: Path, rate: float | Fraction) -> Fraction:
    """Return the frames a second an image sequence is read at, exact.

    23.976 and 29.97 become NTSC's 24000/1001 and 30000/1001.

    Raises
    ------
    ValueError
        ``path`` is not an image sequence (a video has its own rate), or ``rate`` is not a number
        of frames a second in 1..1000.
    """
    if not is_image_sequence(path):
        raise ValueError(
            f"{path}: a frame rate is given to image sequences, whose images carry none; a video keeps its own"
        )
    check_sequence_rate(rate)
    ntsc = rate * 1.001
    if rate != round(rate) and math.isclose(ntsc, round(ntsc), abs_tol=0.005):
        return Fraction(round(ntsc) * 1000, 1001)
    return Fraction(rate).limit_denominator(1001)
