"""Which of a source's tags an output keeps: the file's (title, comment, artist, date...), each track's name and marks.

FFmpeg's own command copies them all. An output keeps what describes the recording, not what
described the old file: its encoder, MP4's brands, a track's old duration or handler (the
muxer writes its own), and the timecode (``media.timecode`` moves it to the output's first
frame). A track's marks (FFmpeg's disposition: default, forced...) are how a player picks it:
Matroska wrote every track not default where FFmpeg's command keeps the source's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .probe import VideoInfo

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


def keep_tags(container: Any, stream: Any, like: VideoInfo) -> None:
    """Write the file tags of the source ``like`` into the output ``container``, its picture track's into ``stream``."""
    container.metadata.update(like.tags)
    stream.metadata.update(like.video_tags)
    stream.disposition = like.video_disposition


def keep_track(output: Any, source: Any) -> None:
    """Give the output stream ``output`` the name and marks of the source's stream ``source``, copied into it."""
    output.metadata.update(track_tags(source))
    output.disposition = source.disposition
