"""Video from a pipe.

y4m (yuv4mpegpipe) frames on standard input, so the tool sits in an FFmpeg pipeline (``ffmpeg -i
tape.vob -f yuv4mpegpipe - | nlmeans-studio denoise - out.mkv``).

A pipe is read once, in order, and its length is known only at its end: ``PipeReader`` gives
the first LOOKAHEAD frames by number (for the noise estimate, which looks at the start of the
stream) and then every frame in order, once. Writing y4m to standard output is ``VideoWriter``'s,
with ``-`` as its path.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .ffmpeg import VideoError, ffmpeg_reason, pyav
from .probe import INTERLACED, VideoInfo, stream_facts
from .reader import TimedFrame, decoded_array, source_yuv_layout
from .y4m import Y4M_HEADER_LIMIT, Y4M_MAGIC, check_y4m_header
from .yuv import YuvFrame, YuvLayout, frame_planes

PIPE = "-"
LOOKAHEAD = 8  # frames kept from the stream's start for random access
FEED = "ffmpeg -i INPUT -f yuv4mpegpipe - | nlmeans-studio denoise - OUTPUT"


class _Counted:
    """``stream`` as FFmpeg reads it through PyAV.

    ``header`` (read already) first, then the rest; ``count`` is the bytes it gave, so that a stream
    cut in a frame is found.
    """

    def __init__(self, stream: BinaryIO, header: bytes) -> None:
        self._stream, self._pending, self.count = stream, header, len(header)

    def read(self, size: int) -> bytes:
        if self._pending:
            chunk, self._pending = self._pending[:size], self._pending[size:]
            return chunk
        # read1 gives what has come, up to ``size``; read waits for ``size`` bytes, and FFmpeg asks for whole
        # buffers: a live sender's frames waited for the bytes of its next ones (small frames, for its end).
        data = self._stream.read1(size) if hasattr(self._stream, "read1") else self._stream.read(size)
        self.count += len(data)
        return data


def _header(stream: BinaryIO) -> bytes:
    """Return the stream's first line (up to Y4M_HEADER_LIMIT bytes), checked to be a y4m header that FFmpeg reads.

    A wrong one was said as "Device or resource busy" or "not a y4m stream".
    """
    line = b""
    while not line.endswith(b"\n") and len(line) < Y4M_HEADER_LIMIT:
        byte = stream.read(1)
        if not byte:
            break
        line += byte
    if not line:
        raise VideoError(f"standard input: nothing came, not even a y4m header; pipe a clip in: {FEED}")
    if not line.startswith(Y4M_MAGIC):
        raise VideoError(
            f"standard input: not a y4m (yuv4mpegpipe) stream: it starts with {line[:16]!r}, not YUV4MPEG2; "
            f"pipe a clip in: {FEED}"
        )
    check_y4m_header(line, "standard input")
    return line


def _declared_length(header: bytes) -> int | None:
    """Return the frame count a y4m header declares (vspipe's ``XLENGTH=N``), None where it declares none."""
    for token in header.split():
        if token.startswith(b"XLENGTH=") and token[8:].isdigit():
            return int(token[8:])
    return None


class PipeReader:
    """y4m frames from ``stream`` (standard input by default): the first LOOKAHEAD by number, then all in order once.

    ``info.frame_count`` is 0: a pipe's length is unknown until it ends. ``name`` is what messages
    call the stream ("standard input"; a live source's URL or device for ``LiveReader``).

    Raises
    ------
    VideoError
        The input is not a y4m stream FFmpeg reads (the message says what of its header), holds
        no frame, is damaged or cut in a frame (the message names the frame), ends before the
        frame count its header declares (vspipe's XLENGTH: the script failed), or is read twice.
    """

    _declared: int | None = None  # the frames the header declares (a live source's: none)
    lost = 0  # frames that never came (a live source counts the gaps in its timestamps; a pipe loses none)

    def __init__(self, stream: BinaryIO | None = None) -> None:
        av = pyav()
        stream = stream or sys.stdin.buffer
        header = _header(stream)
        shown = header.decode("ascii", "replace").strip()
        self._input, self._header_length = _Counted(stream, header), len(header)
        self._declared = _declared_length(header)
        try:
            container = av.open(self._input, format="yuv4mpegpipe")
        except av.error.FFmpegError as error:
            raise VideoError(
                f"standard input: FFmpeg cannot read the y4m stream {shown!r}: {ffmpeg_reason(error)}"
            ) from error
        self._begin(container, "standard input", f"the y4m stream holds no frame (its header {shown!r}, then its end)")

    def _begin(self, container: Any, name: str, empty: str) -> None:
        """Take ``container``'s first video stream: its facts, and its first frame decoded for ``info``.

        ``name`` is what messages call the stream; ``empty`` what they say of one without a frame.
        """
        self.path, self.name, self._container = Path(PIPE), name, container
        self._frames = self._decoded()
        first = next(self._frames, None)  # first: a live stream's headers may wait for its first keyframe
        if first is None:
            self.close()
            raise VideoError(f"{name}: {empty}")
        try:
            facts = stream_facts(name, self._container, first)
        except VideoError:
            self.close()
            raise
        width, height = facts.pop("size")
        warning = INTERLACED if first.interlaced_frame else ""  # the header's It or Ib, as a file's
        self.info = VideoInfo(
            path=self.path, width=width, height=height, frame_count=0, duration=0.0, warning=warning, **facts
        )
        self._lookahead = [first]  # decoded frames, converted when asked for
        self._consumed = False

    def _decoded(self) -> Iterator[Any]:
        """Yield the stream's frames as FFmpeg decodes them.

        A damaged frame, or a stream cut in one, is a VideoError naming it (FFmpeg's demuxer ends
        quietly at a cut).
        """
        av = pyav()
        stream = self._container.streams.video[0]
        count, end = 0, self._header_length  # frames read, and the byte after the last one
        try:
            for packet in self._container.demux(stream):
                if packet.size:
                    count, end = count + 1, packet.pos + packet.size
                yield from packet.decode()
        except av.error.FFmpegError as error:
            raise VideoError(
                f"standard input: frame {count + 1} (counting from 1) of the y4m stream cannot be read "
                f"({ffmpeg_reason(error)}): it does not start with FRAME where the header's size puts it; the stream "
                "is damaged or its header does not match its frames"
            ) from error
        if self._input.count > end:
            raise VideoError(
                f"standard input: the y4m stream ends in the middle of frame {count + 1} (counting from 1), "
                f"{self._input.count - end} bytes into it; the stream was cut"
            )
        if self._declared is not None and count < self._declared:
            raise VideoError(
                f"standard input: the y4m stream ended after {count} of the {self._declared} frames its header "
                f"declares (XLENGTH={self._declared}): its sender stopped early (a vspipe script that failed says "
                "why on its own standard error)"
            )

    def __enter__(self) -> PipeReader:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the stream's container."""
        self._container.close()

    @property
    def decoder(self) -> str:
        """Where frames are decoded: "CPU", always, for a pipe."""
        return "CPU"

    def start_time(self, index: int) -> float:
        """When frame ``index`` is shown, in seconds from frame 0, at the stream's frame rate."""
        return index / float(self.info.frame_rate)

    def frame_at(self, seconds: float) -> int:
        """Return the first frame shown at or after ``seconds`` from frame 0."""
        return math.ceil(seconds * float(self.info.frame_rate) - 1e-9)

    def frames_ahead(self, count: int) -> int:
        """How many of the stream's first ``count`` frames (at most LOOKAHEAD) it holds."""
        while len(self._lookahead) < min(count, LOOKAHEAD):
            if self._consumed:
                raise VideoError(f"{self.name}: the stream was already read")
            decoded = next(self._frames, None)
            if decoded is None:
                break
            self._lookahead.append(decoded)
        return min(count, len(self._lookahead))

    def frame(self, index: int) -> np.ndarray:
        """One of the stream's first LOOKAHEAD frames."""
        return decoded_array(self._ahead(index), self.info)

    def unclipped_frame(self, index: int) -> np.ndarray:
        """One of the stream's first LOOKAHEAD frames as float32 RGB in 0..1, nothing clipped (``decoded_array``)."""
        return decoded_array(self._ahead(index), self.info, unclipped=True)

    def _ahead(self, index: int) -> Any:
        """Return the decoded frame ``index`` of the lookahead."""
        if not 0 <= index < LOOKAHEAD:
            raise IndexError(f"a pipe gives frames 0..{LOOKAHEAD - 1} by number, got {index}")
        if self.frames_ahead(index + 1) <= index:
            raise IndexError(f"the stream holds {len(self._lookahead)} frames, got {index}")
        return self._lookahead[index]

    @property
    def yuv_layout(self) -> YuvLayout | None:
        """The Y'CbCr layout of the frames, in which ``timed_frames(yuv=True)`` gives them (``source_yuv_layout``)."""
        return source_yuv_layout(self.info)

    def _planes(self, decoded: Any, layout: YuvLayout) -> YuvFrame:
        """Return a decoded frame's planes, in ``info.pixel_format`` (a live source may change its own)."""
        if decoded.format.name != layout.pixel_format:
            decoded = decoded.reformat(format=layout.pixel_format)
        return YuvFrame(frame_planes(decoded, layout), layout)

    def timed_frames(self, start: int = 0, *, yuv: bool = False) -> Iterator[TimedFrame]:
        """Frames start, start + 1, ... to the stream's end, with their numbers and timestamps; once.

        The timestamps are at the stream's frame rate. ``yuv``: each frame's array is a
        ``YuvFrame``, its planes as decoded, where ``yuv_layout`` is not None.
        """
        if self._consumed:
            raise VideoError(f"{self.name}: the stream was already read")
        self._consumed = True
        layout = self.yuv_layout if yuv else None
        for index, decoded in enumerate(itertools.chain(self._lookahead, self._frames)):
            timestamp = self._timestamp(index, decoded)
            if index >= start:
                pixels = decoded_array(decoded, self.info) if layout is None else self._planes(decoded, layout)
                yield TimedFrame(index, timestamp, pixels)

    def _timestamp(self, index: int, decoded: Any) -> int:
        """Frame ``index``'s timestamp in ``info.time_base``: a pipe's frames at the stream's frame rate.

        Called for every frame, in order.
        """
        return round(Fraction(index) / self.info.frame_rate / self.info.time_base)
