"""Segments of one output, encoded apart, joined into it by stream copy.

Each segment is a file of the output's own container holding video alone, its frames at their
times in the whole (``VideoWriter(origin=...)``) and starting with a keyframe; joined, their
packets follow one another unchanged but for their clock: each segment is moved to start where the
whole's timestamps say (an MP4 rounds a late start to its movie's milliseconds), and decoding
times a container does not store (Matroska's first ones) are filled in below the first it gives.
The source's audio and subtitles are copied once, over the whole span (``CopiedStreams``). The
output is written under a hidden name and renamed when complete, as ``VideoWriter`` writes.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from .copied_streams import CopiedStreams
from .ffmpeg import VideoError, ffmpeg_reason, pyav
from .formats import CUTS_PICTURE_TO_SOUND, check_frames_kept, output_format
from .probe import VideoInfo
from .staged_output import StagedOutput
from .tags import keep_tags
from .timecode import source_timecode, tag_timecode


def join_segments(
    segments: Sequence[str | Path],
    starts: Sequence[int],
    target: str | Path,
    like: VideoInfo,
    *,
    codec: str,
    span: tuple[float, float] = (0.0, math.inf),
    overwrite: bool = False,
    frames: int | None = None,
) -> int:
    """Join ``segments`` (in order) into ``target`` with ``like``'s audio and subtitles; return its packets of video.

    The output's timecode is the first segment's (that of its first frame).

    Parameters
    ----------
    segments : sequence of str or Path
        The encoded segments, each video alone, in the container ``target``'s name gives.
    starts : sequence of int
        When each segment's first frame is shown in the output, in ``like.time_base`` units.
    target : str or Path
        The output.
    like : VideoInfo
        The source, whose audio and subtitle streams are copied.
    codec : str
        The segments' codec (``VideoWriter``'s name), which ``target``'s container must hold.
    span : (float, float)
        The part of the source the segments are, in seconds from its frame 0: the sound is cut to it.
    overwrite : bool
        Replace an existing ``target``.
    frames : int, optional
        The frames the segments hold together: another count is an error, and nothing is written.

    Returns
    -------
    int
        Video packets written: the frames of the segments together.

    Raises
    ------
    VideoError
        A segment that cannot be read, segments that hold other than ``frames`` frames, or the
        output that cannot be written (the message says why).
    """
    av = pyav()
    target = Path(target)
    muxer = output_format(target, codec, like)
    try:
        output = StagedOutput(target, sequence=False, overwrite=overwrite)
    except OSError as error:
        raise VideoError(f"{target}: {error}") from error
    packets = 0
    try:
        with contextlib.ExitStack() as stack:
            container = stack.enter_context(av.open(str(output.staged), mode="w", format=muxer))
            with av.open(str(segments[0])) as first:  # the segments' stream, as each was encoded
                timecode = source_timecode(first)  # the first segment's: the output's first frame's
                rate = {} if timecode is None else {"rate": like.frame_rate}  # a timecode track counts at it
                video = container.add_stream_from_template(first.streams.video[0], **rate)
            keep_tags(container, video, like)
            if timecode is not None:
                tag_timecode(container, video, timecode)
            copied = CopiedStreams(like, container, span) if like.other_streams else None
            if copied is not None:
                stack.callback(copied.close)
            for segment, start in zip(segments, starts, strict=True):  # one open at a time, however many
                with av.open(str(segment)) as opened:
                    packets += _copy_video(opened, _rescaled(start, like.time_base, video.time_base), video, container)
            if frames is not None and packets != frames:  # before anything is published
                raise VideoError(f"{target}: its segments hold {packets} of its {frames} frames; denoise them again")
            if copied is not None:
                copied.copy(container.mux)
        if copied is not None and muxer in CUTS_PICTURE_TO_SOUND:
            check_frames_kept(output.staged, target, packets)
        output.publish()
    except (av.error.FFmpegError, OSError) as error:
        output.discard()
        raise VideoError(f"{target}: joining its segments failed: {ffmpeg_reason(error)}") from error
    except BaseException:
        output.discard()
        raise
    return packets


def _copy_video(segment: Any, start: int, video: Any, container: Any) -> int:
    """Mux every video packet of ``segment`` into ``video``, its first shown at ``start``; return how many.

    ``start`` in ``video``'s time base. A segment starts with a keyframe, shown first.
    """
    shift: int | None = None
    undated: list[Any] = []  # packets without a decoding time, until one with it comes
    count = 0
    for packet in segment.demux(segment.streams.video[0]):
        if packet.size == 0:  # the demuxer's flush packet
            continue
        shift = start - packet.pts if shift is None else shift
        packet.pts += shift
        if packet.dts is None:
            undated.append(packet)
            continue
        packet.dts += shift
        for before, waiting in enumerate(undated):  # one tick apart below it, each at or before its showing
            waiting.dts = min(waiting.pts, packet.dts - len(undated) + before)
        for ready in [*undated, packet]:
            ready.stream = video
            container.mux(ready)
        count += len(undated) + 1
        undated = []
    for waiting in undated:  # none dated: shown in decoding order (intra-only)
        waiting.dts, waiting.stream = waiting.pts, video
        container.mux(waiting)
    return count + len(undated)


def _rescaled(value: int, source: Fraction, target: Fraction) -> int:
    """``value`` ticks of ``source`` in ticks of ``target``, to the nearest, halves up: as FFmpeg rescales."""
    return math.floor(Fraction(value) * source / target + Fraction(1, 2))
