"""FFmpeg through PyAV, imported lazily (the engine runs without it).

``VideoError``, the one error the media modules raise, with one line a person can act on; FFmpeg's
own messages shown or held back; its reasons in words; and how many threads its codecs use.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from ..memory import PYAV_BYTES, ShortOfMemoryError, require_room

# Frame and slice threads in decoders and encoders. PyAV's default, slice threads only, leaves
# H.264 decoding on one core (x264 writes one slice per frame) and makes x264 encode with
# sliced threads, which scale worse than its frame threads.
CODEC_THREADS = "AUTO"


class VideoError(Exception):
    """A video could not be read or written; the message says which file and why.

    Parameters
    ----------
    message : str
        One line a person can act on, naming the file.
    """


def pyav() -> Any:
    """PyAV, imported on first use: the engine runs without it (VideoError where it is missing).

    Under an address-space limit too small for FFmpeg's libraries, ShortOfMemoryError: their
    mapping failed as if PyAV were missing ("failed to map segment from shared object").
    """
    if "av" not in sys.modules:
        require_room(PYAV_BYTES)
    try:
        import av
    except ImportError as error:
        if "failed to map segment" in str(error):
            raise ShortOfMemoryError(
                f"not enough memory for this run: FFmpeg's libraries could not be loaded ({error}); raise the "
                "limit (ulimit -v)"
            ) from error
        raise VideoError(f"reading and writing video needs PyAV (pip install av): {error}") from error
    return av


def show_ffmpeg_messages(*, verbose: bool) -> None:
    """Let FFmpeg print its messages on stderr.

    Errors only, or with ``verbose`` its warnings and notes too (damaged packets, guessed
    timestamps, a deprecated pixel format).

    FFmpeg's own printer, not PyAV's bridge to Python's logging: that bridge takes the GIL from
    the codecs' threads and can deadlock them (PyAV issues 751, 2276).
    """
    av = pyav()
    av.logging.restore_default_callback()
    _SHOWN_LEVEL[0] = av.logging.INFO if verbose else av.logging.ERROR
    av.logging.set_libav_level(_SHOWN_LEVEL[0])


_SHOWN_LEVEL: list[int | None] = [None]  # the level show_ffmpeg_messages set, if it was called


@contextlib.contextmanager
def said_in_our_words() -> Iterator[None]:
    """Hold back FFmpeg's error lines while opening a file or an encoder.

    The media modules word that failure themselves ("not a video file FFmpeg can read", "no NVIDIA
    video encoder"): the user sees one clear line, not FFmpeg's "[mov,mp4 @ 0x55b2..] moov atom not
    found" before it. ``--verbose`` keeps them.
    """
    av = pyav()
    if _SHOWN_LEVEL[0] != av.logging.ERROR:
        yield
        return
    av.logging.set_libav_level(av.logging.PANIC)
    try:
        yield
    finally:
        av.logging.set_libav_level(av.logging.ERROR)


def ffmpeg_reason(error: BaseException) -> str:
    """FFmpeg's reason for ``error`` in words, without PyAV's error number and file name.

    "Invalid data found when processing input", not "[Errno 1094995529] Invalid data ...: 'x.mp4'".
    """
    return getattr(error, "strerror", None) or str(error)
