"""Which frames a video stream presents, and where decoding can start for each: the frame index.

Frame n is, by definition, the n-th frame FFmpeg's sequential decode of the stream presents, and
the frame count is how many it presents. The index predicts both from the packets alone (a
demux, no decoding), as FFMS2 and BestSource's fast paths do:

- every packet that is not flagged discard (an edit list's pre-roll) presents one frame at its
  presentation timestamp (pts), so the presented frames are the packets' timestamps, sorted;
- the decoder drops what it cannot decode at the stream's start (a transport stream cut in the
  middle of a GOP, the leading pictures of an open GOP): the one frame decoded up front, the
  first frame presented, says where presentation begins, and earlier timestamps are not frames;
- a keyframe at timestamp k is an entry point for every frame presented at or after k: the
  leading pictures of an open GOP come before k in presentation order, and they are reached
  from the previous entry point;
- a file cut short may end in a packet read only in part (flagged corrupt by its demuxer,
  reaching past the file's end, as raw DV's fixed-size frames do, or a transport stream's last
  video packet where the file ends inside one of the video's transport packets): its frame is
  left out. The
  decoder would present part of a picture, the rest concealed or stale (two decodes of it
  differ), or fail there and lose the frames it held back.

A stream whose packets lack timestamps (raw elementary streams) cannot be indexed so: its index
holds only the count, from one sequential decode, and frames are identified by their order.
Decoding verifies the prediction: a reader identifies each decoded frame by its timestamp here
and never guesses. Indexes of long files are kept in the user's cache, so a second open is instant.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

INDEX_VERSION = 5  # bump when the index's meaning changes: older cached indexes are then ignored
# A transport stream's packets: (bytes, where the sync byte is) for MPEG-TS, M2TS (a 4-byte time
# first) and DVB's 204 (16 bytes of error correction after)
TRANSPORT_PACKETS = ((188, 0), (192, 4), (204, 0))
TRANSPORT_SYNC = 0x47
CACHED_FROM_FRAMES = 2000  # indexes of streams with at least this many frames are kept on disk


@dataclass(frozen=True)
class FrameIndex:
    """The frames a stream presents, in order, and the entry points decoding can start at.

    ``timestamps[n]`` is frame n's pts in the stream's time base (increasing); ``entries`` the
    frame numbers of the keyframes, increasing, frame 0 always among them (the stream's start),
    and ``seek_timestamps`` the decoding timestamp (dts) of each: demuxers seek by it (a
    transport stream sought at a keyframe's pts lands on the next keyframe). Timestamps are
    empty for a stream without them, where only ``frame_count`` is known.
    """

    frame_count: int
    timestamps: np.ndarray  # int64, (frame_count,) or (0,)
    entries: np.ndarray  # int64 frame numbers
    seek_timestamps: np.ndarray  # int64, one per entry
    packets: int = 0  # the stream's packets, discarded ones too: what a container that declares a count holds
    left_out: int | None = None  # the pts of the last packet, read only in part, whose frame is left out

    @property
    def has_timestamps(self) -> bool:
        """Whether the index holds a timestamp for each of its frames (and has frames)."""
        return len(self.timestamps) == self.frame_count > 0

    def number_of(self, pts: int | None) -> int | None:
        """Return the frame presented at ``pts``, or None when no frame of the index is."""
        if pts is None or not self.has_timestamps:
            return None
        number = int(np.searchsorted(self.timestamps, pts))
        return number if number < self.frame_count and self.timestamps[number] == pts else None

    def entries_before(self, number: int) -> list[tuple[int, int]]:
        """(frame number, seek timestamp) of the entry points for frame ``number``, the latest first.

        The last is frame 0 (the stream's start).
        """
        usable = self.entries <= number
        return [
            (int(entry), int(seek))
            for entry, seek in zip(self.entries[usable][::-1], self.seek_timestamps[usable][::-1], strict=True)
        ]


def index_stream(path: Path, container: Any, open_container: Any) -> tuple[FrameIndex, Any]:
    """Return the index of ``path``'s first video stream, from the cache or built, and its first presented frame.

    The frame is decoded: its rotation and pixel format describe the stream.

    ``container`` is the file opened, its headers read and none of its packets: one demux of it
    decodes the first frame and, where the cache has no index, goes on to index every packet.
    ``open_container()`` opens the file afresh, for a stream whose timestamps do not identify
    its frames (counted by decoding it from the start).
    """
    packets = container.demux(container.streams.video[0])
    first, read = _first_frame(packets)
    cache_file = _cache_file(path)
    if cache_file is not None and cache_file.is_file():
        try:
            with np.load(cache_file) as stored:
                fields = {name: stored[name] for name in ("timestamps", "entries", "seek_timestamps")}
                left_out = int(stored["left_out"]) if "left_out" in stored.files else None
                count, packet_count = int(stored["frame_count"]), int(stored["packets"])
                return FrameIndex(count, **fields, packets=packet_count, left_out=left_out), first
        except (OSError, ValueError, KeyError):  # damaged or foreign: built again below
            pass
    size = _file_size(path)
    index = _build(itertools.chain(read, packets), first, open_container, size, _partial_from(path, size, container))
    if cache_file is not None and index.frame_count >= CACHED_FROM_FRAMES:
        _store(index, cache_file)
    return index, first


def _first_frame(packets: Iterator[Any]) -> tuple[Any, list[Any]]:
    """Return the first frame sequential decoding presents, and the packets read until it came out.

    The frame is None when it presents none. ``container.decode`` decodes each packet so, the flush
    packets at the end too.
    """
    read = []
    for packet in packets:
        read.append(packet)
        if frames := packet.decode():
            return frames[0], read
    return None, read


def _file_size(path: Path) -> int | None:
    """Return the bytes of the file at ``path``; None for what is no regular file (an image sequence's pattern)."""
    try:
        return path.stat().st_size if path.is_file() else None
    except OSError:
        return None


def _partial_from(path: Path, size: int | None, container: Any) -> int | None:
    """Where a transport stream's last video packet must start to hold part of a frame, in bytes; None: none can.

    A transport stream marks no packet's end, and its demuxer hands on what it has: where the file
    ends inside one of the video's transport packets, the last video packet is partial. If that
    transport packet starts a packet (its payload unit start), only a video packet starting there
    is: the one before ended whole. Told by the transport packet the file ends inside, where its
    header is whole, else the last whole one. ``size``: the file's bytes (None: no regular file).
    """
    if size is None or "mpegts" not in container.format.name:
        return None
    with path.open("rb") as file:
        head = file.read(4 * 204 + 4)
        for length, sync in TRANSPORT_PACKETS:
            if all(len(head) > k * length + sync and head[k * length + sync] == TRANSPORT_SYNC for k in range(4)):
                break
        else:
            return None
        whole, part = divmod(size, length)
        if part == 0 or whole == 0:
            return None
        for start in (whole * length, (whole - 1) * length):
            file.seek(start + sync)
            header = file.read(3)
            if len(header) == 3 and header[0] == TRANSPORT_SYNC:
                if ((header[1] & 0x1F) << 8 | header[2]) != container.streams.video[0].id:
                    return None
                return start if header[1] & 0x40 else 0  # a packet started there, or one before it runs on
    return None


def _build(
    packets: Iterable[Any], first: Any, open_container: Any, file_size: int | None, partial_from: int | None = None
) -> FrameIndex:
    """Index ``packets`` of a stream whose ``first`` frame is decoded.

    ``partial_from``: a last packet starting at or after this byte was read in part (``_partial_from``).
    """
    if first is None:
        return FrameIndex(0, *(np.zeros(0, np.int64),) * 3)
    timestamps, keyframes, keyframe_seeks, packet_count, left_out = [], [], [], 0, None
    for packet in packets:
        packet_count += packet.size > 0
        if packet.size == 0 or packet.is_discard:
            continue
        if packet.pts is None or first.pts is None:
            return _count_by_decoding(open_container)
        timestamps.append(packet.pts)
        past_end = None not in (file_size, packet.pos) and packet.pos + packet.size > file_size
        cut = partial_from is not None and (packet.pos or 0) >= partial_from
        left_out = packet.pts if packet.is_corrupt or past_end or cut else None  # the last packet's, if read in part
        if packet.is_keyframe:
            keyframes.append(packet.pts)
            keyframe_seeks.append(packet.pts if packet.dts is None else packet.dts)
    if left_out is not None and left_out <= first.pts:  # the first frame decoded whole (up front)
        left_out = None
    presented = np.sort(np.array(timestamps, np.int64))
    presented = presented[(presented >= first.pts) & (presented != left_out)]
    if len(presented) == 0 or presented[0] != first.pts or np.any(np.diff(presented) == 0):
        return _count_by_decoding(open_container)  # timestamps that do not identify frames
    keyframes, seeks = np.array(keyframes, np.int64), np.array(keyframe_seeks, np.int64)
    entries = np.searchsorted(presented, keyframes)
    inside = (entries < len(presented)) & (keyframes != left_out)
    entries, first_of_each = np.unique(np.concatenate([[0], entries[inside]]), return_index=True)
    seeks = np.concatenate([[first.pts], seeks[inside]])[first_of_each]
    return FrameIndex(len(presented), presented, entries.astype(np.int64), seeks, packet_count, left_out)


def _count_by_decoding(open_container: Any) -> FrameIndex:
    """Return the index of a stream without usable timestamps: only its frame count, by decoding it."""
    with open_container() as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        count = sum(1 for _ in container.decode(stream))
    return FrameIndex(count, np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64))


def cache_folder() -> Path:
    """Where indexes of long files are kept: $NLMEANS_CACHE_DIR, else the user's cache folder."""
    configured = os.environ.get("NLMEANS_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "nlmeans-studio" / "frame-index"


def _cache_file(path: Path) -> Path | None:
    """Return the cache file of ``path``'s index: named for its path, size and modification time."""
    try:
        status = path.stat()
    except OSError:
        return None
    key = f"{INDEX_VERSION}\0{path.resolve()}\0{status.st_size}\0{status.st_mtime_ns}"
    return cache_folder() / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.npz"


def _store(index: FrameIndex, cache_file: Path) -> None:
    """Write the index atomically; a cache that cannot be written only costs time later."""
    temporary = None
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cache_file.parent, suffix=".npz", delete=False) as handle:
            temporary = Path(handle.name)
            arrays = {
                "timestamps": index.timestamps,
                "entries": index.entries,
                "seek_timestamps": index.seek_timestamps,
            }
            if index.left_out is not None:
                arrays["left_out"] = np.int64(index.left_out)
            np.savez(handle, frame_count=index.frame_count, packets=index.packets, **arrays)
        os.replace(temporary, cache_file)
    except OSError:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
