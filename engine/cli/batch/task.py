"""One file of a batch on a Dask worker: denoised whole, or where it is long, cut into a plan of segments.

By the functions behind ``denoise`` and ``denoise-volume``, in the worker's process; its messages
go to the file's log.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from ...video.export import ExportSummary, frame_range, sound_lead
from ...volume import cli as volume_cli
from ..arguments import build_parser
from ..denoise import Stop, chosen_filter, export_denoised, open_source
from ..errors import FAILURES, error_message
from .jobs import Job
from .manifest import DONE, FAILED, JobResult
from .plan import SegmentPlan, segment_frames

# The options of denoise that denoise-volume has too; a volume takes its own defaults for the others.
VOLUME_OPTIONS = ("h", "patch_radius", "search_radius", "weighting", "center_weight", "backend", "quiet", "debug")

# A worker of several threads still denoises one file at a time: the filter uses every core (or
# the GPU) it is given, and a file's log is the process's stderr while it runs.
_ONE_AT_A_TIME = threading.Lock()
STDERR = 2  # the file descriptor
WARNING = "warning: "  # how the command line begins a warning line (each counted in a file's result)

CANCEL_POLL_SECONDS = 0.5  # how often a running file asks whether its batch was cancelled


def run_job(job: Job, options: dict[str, Any], *, cancel: str | None = None) -> JobResult | SegmentPlan:
    """Denoise ``job``'s file with ``options`` (``denoise``'s, by their argparse names), or plan its segments.

    A video (not an image sequence) longer than two segments of ``options["segment_seconds"]`` is not denoised here: its
    filter is chosen (the noise estimated once) and its cuts found, for a task a segment
    (``segments``). An output an earlier, unfinished run left is replaced.

    Parameters
    ----------
    job : Job
        The file, its output and its log.
    options : dict
        ``denoise``'s options as the batch's command line parsed them.
    cancel : str, optional
        The name of the batch's Dask ``Event``: once set, a video's export stops at its next frame
        and removes what it wrote (``cancellable``); a volume, a single call, runs to its end.

    Returns
    -------
    JobResult or SegmentPlan
        DONE with the frames written (a volume's slices), or FAILED with the one-line reason
        ``denoise`` would have printed (a corrupt or unsupported file, a value it refuses); or
        the plan of a long file.

    Raises
    ------
    Exception
        Anything else (a bug): its traceback is written to the log first, and Dask reports it.
    """
    Path(job.output).parent.mkdir(parents=True, exist_ok=True)
    stop = cancellable(cancel)
    work = (lambda: _denoise_volume(job, options)) if job.volume else (lambda: _denoise_video(job, options, stop))
    return run_logged(job.log, f"{job.input} -> {job.output}", options, work)


def cancellable(cancel: str | None) -> Stop:
    """Return the ``Stop`` an export runs under, set also once the Dask ``Event`` named ``cancel`` is.

    A batch cancelled on the machine that runs it sets that event: the workers of a cluster the
    user started (``--scheduler``) are not its to kill, and Dask lets a running task go on; the
    export stops at its next frame instead, removing what it wrote, and publishes nothing.
    """
    stop = Stop()  # off the main thread: no signal handler
    if cancel is not None:
        stop.cancel = _BatchCancel(cancel)
    return stop


class _BatchCancel(threading.Event):
    """Set here, or by the batch's Dask ``Event``: asked at ``is_set`` at most every CANCEL_POLL_SECONDS.

    From the task's own thread, which the worker's client serves (a thread of our own could not
    reach it).
    """

    def __init__(self, name: str) -> None:
        from distributed import Event

        super().__init__()
        self._batch = Event(name)
        self._next = 0.0

    def is_set(self) -> bool:
        """Whether the export is to stop: set here, or by the batch (asked again after CANCEL_POLL_SECONDS)."""
        if not super().is_set() and time.monotonic() >= self._next:
            self._next = time.monotonic() + CANCEL_POLL_SECONDS
            if self._batch.is_set():
                self.set()
        return super().is_set()


def run_logged(
    log: str,
    heading: str,
    options: dict[str, Any],
    work: Callable[[], int | ExportSummary | SegmentPlan],
    *,
    append: bool = False,
) -> JobResult | SegmentPlan:
    """Run ``work`` (which returns the frames it wrote, its export's summary, or a plan) with stderr going to ``log``.

    Returns the plan with its seconds, or DONE with the frames (the damaged ones among them, and
    the warnings ``log`` holds);
    FAILED with the one-line reason where ``work`` raised one of the command line's FAILURES.
    ``append``: after what is in ``log``.
    """
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    with _ONE_AT_A_TIME, open(log, "a" if append else "w") as file, _stderr_to(file):
        print(f"{heading} on {socket.gethostname()}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            outcome = work()
        except FAILURES as error:
            if options["debug"]:
                traceback.print_exc()
            reason = error_message(error)
            print(f"nlmeans-studio: error: {reason}", file=sys.stderr)
            return JobResult(FAILED, reason=reason, seconds=time.perf_counter() - start)
        except Exception:
            traceback.print_exc()
            raise
        seconds = time.perf_counter() - start
        if isinstance(outcome, SegmentPlan):
            return dataclasses.replace(outcome, seconds=seconds)
        file.flush()
        warnings = sum(line.startswith(WARNING) for line in Path(log).read_text(errors="replace").splitlines())
        if isinstance(outcome, ExportSummary):
            damaged = len(outcome.damaged_frames)
            return JobResult(DONE, frames=outcome.frames, seconds=seconds, damaged=damaged, warnings=warnings)
        return JobResult(DONE, frames=outcome, seconds=seconds, warnings=warnings)


@contextlib.contextmanager
def _stderr_to(file: TextIO) -> Iterator[None]:
    """Send this process's standard error to ``file``: Python's, and FFmpeg's own lines.

    FFmpeg prints on the file descriptor itself ("[mpeg2video @ ..] ac-tex damaged"), which
    ``contextlib.redirect_stderr`` leaves alone: they came out among the batch's progress, with no
    word of which file they were about. The worker runs one task at a time (``_ONE_AT_A_TIME``).
    """
    sys.stderr.flush()
    saved = os.dup(STDERR)
    os.dup2(file.fileno(), STDERR)
    try:
        with contextlib.redirect_stderr(file):
            yield
    finally:
        file.flush()
        os.dup2(saved, STDERR)
        os.close(saved)


def denoise_args(job: Job, options: dict[str, Any], output: str | None = None) -> argparse.Namespace:
    """Return ``denoise``'s arguments for ``job`` (to ``output``, by default the job's), replacing what is there.

    ``--frame-rate`` goes to image sequences only: a video keeps its own rate.
    """
    arguments = {**options, "frame_rate": options["frame_rate"] if job.sequence else None}
    return argparse.Namespace(
        **arguments, command="denoise", input=job.input, output=output or job.output, overwrite=True
    )


def _denoise_video(job: Job, options: dict[str, Any], stop: Stop) -> ExportSummary | SegmentPlan:
    args = denoise_args(job, options)
    try:
        open_source(args)
        choice = chosen_filter(args)
        reader = args.source
        first, last = frame_range(reader, args.start, args.duration)
        whole = range(first, last)
        frames = segment_frames(reader, whole, 0.0 if job.sequence else options["segment_seconds"] or 0.0)
        if len(frames) > 1:  # the picture as late after the sound as a single denoise puts it (sound_lead)
            lead = sound_lead(reader, first)
            origin = reader.timestamp(first) - round(lead / reader.info.time_base)
            starts = tuple(reader.timestamp(start) - origin for start, _ in frames)
            span = (reader.start_time(first) - lead, reader.start_time(last) if last < len(reader) else math.inf)
            if not args.quiet:
                print(f"cut into {len(frames)} segments at keyframes, each a task", file=sys.stderr)
            return SegmentPlan(tuple(frames), starts, span, choice)
        return export_denoised(args, choice, stop)
    finally:
        if hasattr(args, "source"):
            args.source.close()


def _denoise_volume(job: Job, options: dict[str, Any]) -> int:
    args = build_parser().parse_args(["denoise-volume", job.input, job.output, "--overwrite"])
    for name in VOLUME_OPTIONS:
        if options[name] is not None:
            setattr(args, name, options[name])
    return volume_cli.run(args)[0]
