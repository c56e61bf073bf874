"""Video from a live source: a network stream or a capture device, read as it arrives.

``LiveReader`` opens what FFmpeg opens by name (``udp://``, ``rtp://``, ``srt://``, ``rtmp://``, a
device such as ``/dev/video0`` with its format ``v4l2``) and reads it once, in order, as a pipe is
read (``PipeReader``: its first frames by number for the noise estimate, then every frame once).
A stream ends at its end, or where no data came for ``timeout`` seconds: UDP has no end of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from .ffmpeg import VideoError, ffmpeg_reason, pyav, said_in_our_words
from .pipe import PipeReader

END_TIMEOUT = 2.0  # seconds without data that end a live stream (UDP never says it ended)
OPEN_TIMEOUT = 30.0  # seconds a live source may take to send its first frames: start it after the listener
# FFmpeg reads 32 KiB to learn what a live source holds, not its default 5 MB: a UDP stream opened
# in 0.46 s instead of 1.2 s, and its first frames came at their pace instead of 19 in a burst.
OPEN_OPTIONS = {"probesize": "32768"}
# A UDP listener whose reader falls behind drops packets instead of failing ("Circular buffer
# overrun"); the frames the filter cannot take are dropped later anyway.
PROTOCOL_OPTIONS = {"udp": {"overrun_nonfatal": "1"}}


def live_protocol(source: str) -> str:
    """Return the protocol of a live source's name ("udp", "srt", ...), "" for a device or a file path."""
    return urlsplit(source).scheme if "://" in source else ""


class LiveReader(PipeReader):
    """Frames from a live source as FFmpeg receives them, read once in order (see ``PipeReader``).

    Parameters
    ----------
    source : str
        What FFmpeg opens: a stream's URL (``udp://127.0.0.1:5000``, ``srt://HOST:PORT``,
        ``rtmp://...``) or a capture device (``/dev/video0``).
    input_format : str, optional
        FFmpeg's demuxer or device, where the name does not say it (``v4l2``); None to let FFmpeg
        find it.
    timeout : float
        Seconds without data that end the stream (the run then finishes its file).
    open_timeout : float
        Seconds the source may take to open and send the frames that say what it holds.

    Raises
    ------
    VideoError
        The source cannot be opened within ``open_timeout`` (no sender, a wrong address or
        device), holds no video, or fails while read (the message names it and says what to check).
    """

    def __init__(
        self,
        source: str,
        *,
        input_format: str | None = None,
        timeout: float = END_TIMEOUT,
        open_timeout: float = OPEN_TIMEOUT,
    ) -> None:
        av = pyav()
        options = {**OPEN_OPTIONS, **PROTOCOL_OPTIONS.get(live_protocol(source), {})}
        try:
            with said_in_our_words():
                container = av.open(source, format=input_format, options=options, timeout=(open_timeout, timeout))
        except av.error.ExitError as error:
            raise VideoError(
                f"{source}: nothing came within {open_timeout:g} s; start the sender after this listener, and "
                "check the address and port"
            ) from error
        except (av.error.FFmpegError, ValueError) as error:  # PyAV says ValueError for an unknown format
            raise VideoError(
                f"{source}: cannot open the live source ({ffmpeg_reason(error)}); check the address, that the "
                "sender is running, and for a device its --format (v4l2)"
            ) from error
        if not container.streams.video:
            container.close()
            raise VideoError(f"{source}: the live source holds no video stream")
        self._begin(container, source, f"the stream ended before its first frame (no data for {timeout:g} s)")
        self.info = dataclasses.replace(self.info, other_formats=())  # its sound is not carried: no file to copy from

    def _decoded(self) -> Iterator[Any]:
        """Yield the stream's frames as FFmpeg decodes them, to its end or ``timeout`` seconds without data.

        A damaged packet is FFmpeg's to conceal (its errors are shown); a source that fails
        (a device unplugged) is a VideoError.
        """
        av = pyav()
        stream = self._container.streams.video[0]
        try:
            for packet in self._container.demux(stream):
                yield from packet.decode()
        except av.error.ExitError:  # no data for the timeout: the stream's end
            yield from stream.codec_context.decode(None)  # the frames the decoder still holds
        except av.error.FFmpegError as error:
            raise VideoError(f"{self.name}: reading the live source stopped: {ffmpeg_reason(error)}") from error
