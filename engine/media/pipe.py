"""Video from a pipe: y4m (yuv4mpegpipe) frames on standard input, so the tool sits in an FFmpeg
pipeline (``ffmpeg -i tape.vob -f yuv4mpegpipe - | nlmeans-studio denoise - out.mkv``).

A pipe is read once, in order, and its length is known only at its end: ``PipeReader`` gives
the first LOOKAHEAD frames by number (for the noise estimate, which looks at the start of the
stream) and then every frame in order, once. Writing y4m to standard output is ``VideoWriter``'s,
with ``-`` as its path.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import numpy as np

from nlmeans_studio.engine.media.video import VideoError, VideoInfo, _av, _stream_facts, decoded_array

PIPE = "-"
LOOKAHEAD = 8  # frames kept from the stream's start for random access


class PipeReader:
    """y4m frames from standard input (or ``url``): the first LOOKAHEAD by number, then all in
    order once. ``info.frame_count`` is 0: a pipe's length is unknown until it ends.

    Raises
    ------
    VideoError
        The input is not a y4m stream, or is read twice.
    """

    def __init__(self, url: str = "pipe:0") -> None:
        av = _av()
        self.path = Path(PIPE)
        try:
            self._container = av.open(url, format="yuv4mpegpipe")
        except av.error.FFmpegError as error:
            raise VideoError(f"standard input: not a y4m (yuv4mpegpipe) stream: {error}") from error
        facts = _stream_facts(self.path, self._container)
        width, height = facts.pop("size")
        facts.pop("declared_frames")
        self.info = VideoInfo(path=self.path, width=width, height=height, frame_count=0, duration=0.0, **facts)
        self._frames = self._container.decode(self._container.streams.video[0])
        self._lookahead: list[np.ndarray] = []
        self._consumed = False

    def __enter__(self) -> PipeReader:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    def close(self) -> None:
        self._container.close()

    @property
    def decoder(self) -> str:
        return "CPU"

    def start_time(self, index: int) -> float:
        """When frame ``index`` is shown, in seconds from frame 0, at the stream's frame rate."""
        return index / float(self.info.frame_rate)

    def frame_at(self, seconds: float) -> int:
        """The first frame shown at or after ``seconds`` from frame 0."""
        return math.ceil(seconds * float(self.info.frame_rate) - 1e-9)

    def frame(self, index: int) -> np.ndarray:
        """One of the stream's first LOOKAHEAD frames."""
        if not 0 <= index < LOOKAHEAD:
            raise IndexError(f"a pipe gives frames 0..{LOOKAHEAD - 1} by number, got {index}")
        while len(self._lookahead) <= index:
            if self._consumed:
                raise VideoError("standard input: the stream was already read")
            decoded = next(self._frames, None)
            if decoded is None:
                raise IndexError(f"the stream holds {len(self._lookahead)} frames, got {index}")
            self._lookahead.append(decoded_array(decoded, self.info))
        return self._lookahead[index]

    def timed_frames(self, start: int = 0) -> Iterator[tuple[int, np.ndarray]]:
        """(timestamp at the stream's frame rate, frame) of frames start, start + 1, ... to the
        stream's end; once."""
        if self._consumed:
            raise VideoError("standard input: the stream was already read")
        self._consumed = True
        frames = itertools.chain(self._lookahead, (decoded_array(decoded, self.info) for decoded in self._frames))
        for index, frame in enumerate(frames):
            if index >= start:
                yield round(Fraction(index) / self.info.frame_rate / self.info.time_base), frame
