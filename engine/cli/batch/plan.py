"""How a long file of a batch is cut into segments, each a task of its own.

Cuts fall on the source's keyframes (where its encoder put them: at its scene cuts too), the
first keyframe at least ``--segment-seconds`` after the cut before, while at least as long
remains after it: every segment lasts that long or more, and a file shorter than two segments
(or one with no keyframe to cut at) is denoised whole. A segment is decoded from the keyframe
it starts at, with the window's frames of context before it decoded from the one before.
"""

from __future__ import annotations

import hashlib
import math
import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ...media.reader import VideoReader
    from ...video.default_filter import FilterChoice

DEFAULT_SEGMENT_SECONDS = 60.0  # of source: long enough that a segment's context and start-up are noise


@dataclass(frozen=True)
class SegmentPlan:
    """A long file's segments, and the filter each of them runs.

    Attributes
    ----------
    frames : tuple of (int, int)
        Each segment's frame numbers, [first, stop), in order; together the file's range.
    starts : tuple of int
        When each segment's first frame is shown in the output, in the source's time-base units.
    span : (float, float)
        The part of the source the output is, in seconds from its frame 0: its sound is cut to it.
    choice : FilterChoice
        The filter chosen once for the whole file, from its noise.
    seconds : float
        Wall-clock seconds the plan took on its worker (the noise estimate, mostly).
    """

    frames: tuple[tuple[int, int], ...]
    starts: tuple[int, ...]
    span: tuple[float, float]
    choice: FilterChoice
    seconds: float = 0.0

    @property
    def whole(self) -> range:
        """The file's range of frames, all the segments together."""
        return range(self.frames[0][0], self.frames[-1][1])

    def recorded(self) -> dict[str, Any]:
        """Return the plan as the manifest keeps it: a rerun reuses segments of the same plan only.

        Its segments, the filter in words, and a digest of the segments and the filter's exact values.
        """
        exact = pickle.dumps((self.frames, self.choice.params, self.choice.luma_chroma), protocol=5)
        return {
            "frames": [list(segment) for segment in self.frames],
            "filter": self.choice.describe(),
            "digest": hashlib.sha256(exact).hexdigest(),
        }


def segment_frames(reader: VideoReader, whole: range, seconds: float) -> list[tuple[int, int]]:
    """Cut ``whole`` (frame numbers of ``reader``'s file) into segments of at least ``seconds``, at keyframes.

    Parameters
    ----------
    reader : VideoReader
        The source, open.
    whole : range
        The frames to denoise, ``range(first, stop)``.
    seconds : float
        The shortest segment, in seconds of source; 0: no cut.

    Returns
    -------
    list of (int, int)
        Each segment's [first, stop) frame numbers; one segment where the file is not cut.
    """
    times = reader.frame_times
    end = times[whole.stop - 1] + (times[1] - times[0] if len(times) > 1 else 0)  # the last frame's end, nearly
    cuts = [whole.start]
    if seconds > 0 and math.isfinite(seconds):
        for keyframe in np.asarray(reader.keyframes):
            at = times[keyframe]
            if whole.start < keyframe < whole.stop and at - times[cuts[-1]] >= seconds and end - at >= seconds:
                cuts.append(int(keyframe))
    return list(zip(cuts, [*cuts[1:], whole.stop], strict=True))
