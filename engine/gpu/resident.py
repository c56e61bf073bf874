"""Frames kept on the GPU by key, each uploaded once, for random access from one thread or many.

The bookkeeping is plain Python: what uploads a frame and makes its slots is handed in (a
``DeviceFrames``, or for planar frames a ``planes.PlaneTransfers``), so that the tests run it on
NumPy.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, Protocol

SPARE_FRAMES = 2  # frames ResidentFrames keeps beyond a window: a step to the next frame and back re-uploads none


class Uploads(Protocol):
    """What ResidentFrames uploads with: ``DeviceFrames`` or ``planes.PlaneTransfers``."""

    def empty(self, shape: tuple[int, int, int], dtype: Any) -> Any:
        """Return an empty slot (a DeviceFrame) for (H, W, C) host frames of ``dtype``."""

    def upload_into(self, frame: Any, out: Any) -> None:
        """Upload a host frame into ``out``, a slot of ``empty(frame.shape, frame.dtype)``.

        On return the frame is usable from any stream of the device (one thread's calls may
        rely on their stream's order instead, where only that thread reads the frames).
        """


class _Entry:
    """A key's slot, the windows holding it, and whether its upload has finished or failed."""

    def __init__(self) -> None:
        self.frame: Any = None
        self.holders = 0
        self.error: BaseException | None = None


class ResidentFrames:
    """Host frames kept on the GPU as DeviceFrames, by key.

    For random access that keeps coming back to the same frames: the preview while a slider moves
    on one frame, or a VapourSynth filter whose consecutive outputs share all but one frame of
    their windows, asked for from many threads at once.

    A frame is uploaded the first time its key is asked for (``upload_into``: in its own dtype,
    converted and, for 8-bit frames, packed on the GPU) into a slot of a ring of DeviceFrames that
    are made once per frame shape and reused. The frames of the windows in use (``held``) are
    kept; of the others, ``spare`` at most, the least recently used given up first, its slot
    taken by the next frame uploaded. ``uploads`` counts the frames that crossed the bus, so that
    a caller or a test can tell whether a frame was sent again.

    Thread-safe: a key asked for by several threads at once is uploaded by the first, and the
    others wait for it; a slot is reused only once no window holds it (so, on the GPU, once the
    holders' work that read it has finished: ``held``'s callers leave it after synchronising).

    Parameters
    ----------
    frames : Uploads
        Allocates the slots and uploads into them (``empty`` and ``upload_into``).
    spare : int
        Frames kept beyond those of the windows held, least recently used given up first.
    """

    def __init__(self, frames: Uploads, spare: int = SPARE_FRAMES) -> None:
        self.frames, self.spare = frames, spare
        self.uploads = 0
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()  # least recently used first
        self._free: list[Any] = []  # slots whose frames were given up
        self._changed = threading.Condition()  # guards all of the above; notified when an upload ends

    def __len__(self) -> int:
        """Frames resident now (those being uploaded included)."""
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def window(self, keys: Sequence[Hashable], read: Callable[[Hashable], Any]) -> list[Any]:
        """Return the DeviceFrames of ``keys``, in their order, uploading those not resident.

        ``held`` for one thread that uses the frames before its next call (the preview).
        """
        with self.held(keys, read) as frames:
            return frames

    @contextlib.contextmanager
    def held(self, keys: Sequence[Hashable], read: Callable[[Hashable], Any]) -> Iterator[list[Any]]:
        """Hold the DeviceFrames of ``keys``, in their order, uploading those not resident.

        ``read(key)`` gives a key's host frame (a checked (H, W, C) array, or ``planes.HostPlanes``);
        it is called only for the keys this call uploads. The frames stay resident until the block
        ends: leave it only once the GPU's work on them has finished.

        Raises
        ------
        Exception
            What ``read`` or the upload raised, here or in the thread that was uploading a key.
        """
        wanted = list(dict.fromkeys(keys))
        with self._changed:
            claimed: dict[Hashable, _Entry] = {}
            for key in wanted:
                entry = self._entries.get(key)
                if entry is None:
                    entry = self._entries[key] = claimed[key] = _Entry()
                entry.holders += 1
                self._entries.move_to_end(key)
            entries = [self._entries[key] for key in wanted]
            self._give_up_spares()
        try:
            self._upload(claimed, read)
            with self._changed:
                self._changed.wait_for(lambda: all(e.frame is not None or e.error is not None for e in entries))
            for entry in entries:
                if entry.error is not None:
                    raise entry.error
            frames = dict(zip(wanted, (entry.frame for entry in entries), strict=True))
            yield [frames[key] for key in keys]
        finally:
            with self._changed:
                for entry in entries:
                    entry.holders -= 1

    def _upload(self, claimed: dict[Hashable, _Entry], read: Callable[[Hashable], Any]) -> None:
        """Upload the frames of the keys this thread claimed into slots, outside the lock.

        Where one fails, it and those after it are given up with its error, which their waiters raise too.
        """
        for key, entry in claimed.items():
            try:
                host = read(key)
                with self._changed:
                    slot = self._free_slot_for(host)
                if slot is None:
                    slot = self.frames.empty(host.shape, host.dtype)
                self.frames.upload_into(host, slot)
            except BaseException as error:
                with self._changed:
                    for failed_key, failed in claimed.items():
                        if failed.frame is None:
                            failed.error = error
                            if self._entries.get(failed_key) is failed:
                                del self._entries[failed_key]  # asked for again, it is uploaded again
                    self._changed.notify_all()
                raise
            with self._changed:
                entry.frame = slot
                self.uploads += 1
                self._changed.notify_all()

    def _give_up_spares(self) -> None:
        """Give up the least recently used frames no window holds while more than ``spare`` are resident."""
        idle = [key for key, entry in self._entries.items() if entry.holders == 0]  # uploaded: held while uploading
        for key in idle[: max(0, len(idle) - self.spare)]:
            self._free.append(self._entries.pop(key).frame)

    def _free_slot_for(self, host: Any) -> Any:
        """Return a free slot that fits ``host`` (its shape, and packed words for 8-bit frames), else None."""
        height, width, channels = host.shape
        packed = host.dtype == "uint8"
        for position, slot in enumerate(self._free):
            if slot.shape == (channels, height, width) and (slot.packed is not None) == packed:
                return self._free.pop(position)
        if self._free:
            self._free.pop(0)  # a slot of another shape: let it go rather than hold both
        return None
