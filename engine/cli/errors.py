"""The command line's errors in one line for a person.

Which exceptions a command ends on with status 1, and their messages with the option a parameter is
given by and no overlong words.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from ..backend import BackendUnavailableError, GpuOutOfMemoryError
from ..media.ffmpeg import VideoError
from ..memory import CPU_WAYS, ShortOfMemoryError, limited_flags, out_of_memory
from ..video.presets import FIELDS as PRESET_FIELDS

# What a command ends on with one line and status 1 (anything else is a bug: a traceback).
FAILURES = (ValueError, OSError, ImportError, BackendUnavailableError, VideoError, MemoryError)

# The engine words its errors by its parameters' Python names; each of these is an option
# (--patch-radius for patch_radius), which the command line's messages name instead.
OPTION_PARAMETERS = (*PRESET_FIELDS, "crf", "preset")

LONGEST_WORD = 120  # characters of a path or other word a message shows; longer ones lose their middle


def memory_error_within(error: BaseException) -> MemoryError | None:
    """Return the MemoryError behind ``error``, or None.

    Under ``ulimit -d`` C code that ran out of memory mid-call surfaced as a SystemError: "returned
    a result with an exception set" around the MemoryError, or, importing numba under 120 MB,
    "error return without exception set" with none. Where a memory limit is set, such a
    SystemError is taken as running out of memory.
    """
    seen = error
    while seen is not None and not isinstance(seen, MemoryError):
        seen = seen.__cause__ or seen.__context__
    if seen is None and isinstance(error, SystemError) and limited_flags():
        return MemoryError("C code failed without saying why: taken as short of memory under the limit")
    return seen


def error_message(error: BaseException, *, as_options: bool = True) -> str:
    """``error`` (one of FAILURES) in one line for a person.

    Parameters
    ----------
    error : BaseException
        What a command raised.
    as_options : bool
        Name the engine's parameters as the options that set them (``--search-radius must be
        ..``); False for ``bench``, whose options differ.

    Returns
    -------
    str
        The message, without the ``nlmeans-studio: error:`` prefix.
    """
    if isinstance(error, OSError) and error.errno == errno.ENOMEM:  # a file mapped or read under the limit
        error = MemoryError(f"{error.filename}: {error.strerror}" if error.filename else error.strerror)
    if isinstance(error, MemoryError) and not isinstance(error, (ShortOfMemoryError, GpuOutOfMemoryError)):
        error = out_of_memory(error, CPU_WAYS)  # one the engine did not word: NumPy's, or an import's
    message = _in_words(error)
    return _as_option(message) if as_options else message


def _in_words(error: BaseException) -> str:
    """``error``'s message for a person.

    The system's own errors ("[Errno 36] File name too long: '...'") as the file and the reason, and
    no word (a path) longer than LONGEST_WORD characters: a 5000-character name was echoed whole.
    """
    message = str(error)
    if isinstance(error, OSError) and error.errno and error.filename is not None:
        name, reason = os.fsdecode(error.filename), error.strerror
        if error.errno == errno.ENAMETOOLONG:
            longest = max(len(part.encode()) for part in Path(name).parts)
            reason = (
                f"the name is too long: {longest} bytes in one part and {len(name.encode())} in all, where file "
                "systems take at most 255 and 4096; choose a shorter name"
            )
        message = f"{name}: {reason}"
    half = LONGEST_WORD // 2
    return re.sub(rf"\S{{{LONGEST_WORD + 1},}}", lambda word: f"{word[0][:half]}…{word[0][-half:]}", message)


def _as_option(message: str) -> str:
    """Word an engine message for the command line.

    The engine names its parameters as Python does ("search_radius must be .."): on the command
    line, the option ("--search-radius must be ..").
    """
    name = re.match(r"(\w+) must ", message)
    if name is None or name.group(1) not in OPTION_PARAMETERS:
        return message
    return f"--{name.group(1).replace('_', '-')}{message[name.end(1) :]}"
