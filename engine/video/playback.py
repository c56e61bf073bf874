"""Render-ahead playback: a clip's denoised frames rendered in order into a bounded buffer.

A viewer's play must show every denoised frame, at the clip's rate where the engine keeps up
and honestly slower where it does not. ``RenderAhead`` renders frames ``start``, ``start + 1``,
... with ``Previewer.play`` (decoded once, in order, each frame uploaded once, as export runs)
into a buffer that runs at most ``ahead`` frames past the frame last taken. A worker thread
calls ``render_next`` while it returns True; the thread that shows frames calls ``take(i)`` when
its clock says frame i is due, and waits (showing ``progress``) when it is not rendered yet.
Both are thread-safe; nothing here knows Qt.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from .params import NLMParams
from .preview import LumaChroma, Preview, Previewer, SyntheticNoise

DEFAULT_AHEAD = 32  # frames rendered past the one shown (720p: about 180 MB of before and after)


class RenderAhead:
    """Frames ``start`` to ``stop - 1`` of ``previewer``'s clip, denoised with ``params``.

    Parameters
    ----------
    previewer : Previewer
        The clip and its Denoiser (the preview's own: no second one is built).
    params : NLMParams
        The filter, fixed for this run: new parameters make a new RenderAhead.
    noise : SyntheticNoise, optional
        Noise added to the clip first, as in the preview.
    start, stop : int
        The frames played, ``start`` included, ``stop`` excluded.
    ahead : int
        At most this many frames are held rendered and not yet taken.
    luma_chroma : (h_luma, h_chroma, matrix), optional
        Filter in Y'CbCr (``Previewer.filter_for``).

    Raises
    ------
    ValueError
        An empty or out-of-clip range, or ``ahead`` < 1.
    """

    def __init__(
        self,
        previewer: Previewer,
        params: NLMParams,
        noise: SyntheticNoise | None,
        start: int,
        stop: int,
        *,
        ahead: int = DEFAULT_AHEAD,
        luma_chroma: LumaChroma | None = None,
    ) -> None:
        length = len(previewer.source)
        if not 0 <= start < stop <= length:
            raise ValueError(f"the frames played must satisfy 0 <= start < stop <= {length}, got {start}, {stop}")
        if ahead < 1:
            raise ValueError(f"ahead must be at least 1 frame, got {ahead}")
        self.previewer, self.params, self.noise = previewer, params, noise
        self.start, self.stop, self.ahead = start, stop, ahead
        self.luma_chroma = luma_chroma
        self._frames: Iterator[Preview] | None = None
        self._buffer: dict[int, Preview] = {}
        self._lock = threading.Lock()
        self._next = start  # the next frame to render
        self._taken = start - 1  # the last frame taken
        self._cancelled = threading.Event()
        self._seconds = 0.0  # spent rendering

    @property
    def total(self) -> int:
        """Frames in the range."""
        return self.stop - self.start

    @property
    def rendered(self) -> int:
        """Frames rendered so far (taken or not)."""
        return self._next - self.start

    @property
    def done(self) -> bool:
        """Every frame is rendered, or the run was cancelled."""
        return self._next >= self.stop or self._cancelled.is_set()

    @property
    def frames_per_second(self) -> float | None:
        """Frames rendered per second of rendering (waits for room not counted); None before the first."""
        return self.rendered / self._seconds if self.rendered and self._seconds > 0 else None

    def has_room(self) -> bool:
        """Whether ``render_next`` would render a frame now."""
        with self._lock:
            return not self.done and self._next - self._taken <= self.ahead

    def render_next(self) -> bool:
        """Render the next frame into the buffer if there is room; returns whether it did.

        Call from one thread only (the generator it drives is not thread-safe).
        """
        if not self.has_room():
            return False
        if self._frames is None:
            self._frames = self.previewer.play(self.start, self.stop, self.params, self.noise, self.luma_chroma)
        started = time.perf_counter()
        preview = next(self._frames)
        self._seconds += time.perf_counter() - started
        with self._lock:
            self._buffer[preview.index] = preview
            self._next = preview.index + 1
        return True

    def take(self, index: int) -> Preview | None:
        """Frame ``index`` if it is rendered (it and the frames before it leave the buffer), else None."""
        with self._lock:
            for older in [i for i in self._buffer if i < index]:
                del self._buffer[older]
            preview = self._buffer.pop(index, None)
            if preview is not None:
                self._taken = index
            return preview

    def cancel(self) -> None:
        """Stop rendering and drop the frames not taken (from any thread); ``close`` then releases the stream."""
        self._cancelled.set()
        with self._lock:
            self._buffer.clear()

    def close(self) -> None:
        """Release the stream (frames rendered stay to be taken).

        Call from the thread that calls ``render_next``, once ``done``.
        """
        if self._frames is not None:
            self._frames.close()
