"""Which of a source's tags an output keeps: the file's (title, comment, artist, date...) and each track's name.

FFmpeg's own command copies them all. An output keeps what describes the recording, not what
described the old file: its encoder, MP4's brands, a track's old duration or handler (the
muxer writes its own), and the timecode (``media.timecode`` moves it to the output's first
frame).
"""

from __future__ import annotations

from typing import Any

TRACK_TAGS = ("language", "title")  # what names a track; not its old DURATION or encoder
NOT_KEPT = frozenset(  # in lower case: Matroska's tags are upper case ("COMMENT")
    [
        *("encoder", "major_brand", "minor_version", "compatible_brands"),
        *("timecode", "duration", "handler_name", "vendor_id"),
    ]
)


def file_tags(container: Any) -> dict[str, str]:
    """Return the tags of the file ``container`` (opened by PyAV) that an output keeps."""
    return {name: value for name, value in container.metadata.items() if name.lower() not in NOT_KEPT}


def track_tags(stream: Any) -> dict[str, str]:
    """Return the tags of the track ``stream`` that name it in an output: its language and title."""
    return {name: stream.metadata[name] for name in TRACK_TAGS if name in stream.metadata}


def keep_tags(container: Any, stream: Any, tags: dict[str, str], video_tags: dict[str, str]) -> None:
    """Write a source's ``tags`` (``file_tags``) into the output ``container``, ``video_tags`` into its ``stream``."""
    container.metadata.update(tags)
    stream.metadata.update(video_tags)
