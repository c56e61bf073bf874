"""Playback: denoised frames shown at the clip's rate where the engine keeps up, never skipped.

The worker renders ahead (``engine.RenderAhead``) on its thread; the player's clock takes each
next frame from it when it is ready, and waits for it when it is not.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from fractions import Fraction

from PySide6.QtCore import QObject, QTimer, Signal

from nlmeans_studio.engine import RenderAhead

from .worker import PlayRequest, PreviewWorker


class Player(QObject):
    """Plays what a ``PlayRequest`` asks for: ``frame_due`` carries each frame to show, in order;
    ``started`` and ``stopped`` say when playing begins and ends (at the request's last frame or
    by ``stop``). ``submit`` sends a request to the worker and returns its number."""

    frame_due = Signal(object)  # engine.Preview
    started = Signal()
    stopped = Signal()

    def __init__(self, worker: PreviewWorker, submit: Callable[[PlayRequest], int], parent: QObject) -> None:
        super().__init__(parent)
        self._worker = worker
        self._submit = submit
        self.playing = False
        self.number = 0  # the request number of the playback asked for last
        self.next_index = 0  # the frame the clock shows next
        self._playback: RenderAhead | None = None
        self._shown_times: list[float] = []  # when each frame was shown, for the frames-per-second readout
        self.clock = QTimer(self)
        self.clock.timeout.connect(self._next_frame)
        worker.playback_started.connect(self._playback_started)

    def set_frame_rate(self, frame_rate: Fraction) -> None:
        """The clip's rate: the clock's tick."""
        self.clock.setInterval(max(1, round(1000 / float(frame_rate))))

    def play(self, request: PlayRequest) -> None:
        """Play ``request``'s frames, replacing the playback running if any."""
        if self._playback is not None:
            self._playback.cancel()
        self._playback = None
        self.playing = True
        self.next_index = request.start
        self._shown_times = []
        self.number = self._submit(request)
        self.clock.start()
        self.started.emit()

    def stop(self) -> None:
        """Pause (nothing happens when not playing)."""
        if not self.playing:
            return
        self.playing = False
        self.clock.stop()
        if self._playback is not None:
            self._playback.cancel()
            self._worker.wake()
        self._playback = None
        self.stopped.emit()

    def speed(self) -> tuple[int, float | None, int, int]:
        """Frames shown in the last second, the render-ahead's frames per second (None before its
        first), frames rendered and frames in all."""
        now = time.perf_counter()
        self._shown_times = [t for t in self._shown_times if now - t <= 1.0]
        playback = self._playback
        if playback is None:
            return len(self._shown_times), None, 0, 0
        return len(self._shown_times), playback.frames_per_second, playback.rendered, playback.total

    def _playback_started(self, number: int, playback: RenderAhead) -> None:
        if number == self.number and self.playing:
            self._playback = playback
        else:
            playback.cancel()

    def _next_frame(self) -> None:
        """The clock: show the next frame if it is rendered, else wait for it (never skip)."""
        preview = self._playback.take(self.next_index) if self._playback is not None else None
        if preview is None:
            return
        self._worker.wake()  # a frame left the buffer: room to render ahead
        self.frame_due.emit(preview)
        self._shown_times.append(time.perf_counter())
        self.next_index = preview.index + 1
        if self.next_index >= self._playback.stop:
            self.stop()
