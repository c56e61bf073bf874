"""What a batch says: its progress on stderr as files finish, and the table and warnings that end it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .jobs import Job
from .manifest import FAILED, JobResult
from .task import WARNING

MOST_WARNINGS_SAID = 20  # lines under the table; the rest are counted, and in the files' logs


class BatchProgress:
    """The batch's progress on stderr as each file finishes.

    Files finished of those to do, frames written, frames per second over the batch and an ETA: one
    line redrawn on a terminal, a line each in a log.

    The ETA is the wall-clock time a file has taken on average (the workers side by side) times the
    files left: the batch's total frames are not known before each file is opened.

    A long file cut into segments says so, and in a log each of its segments as it finishes.
    """

    def __init__(self, todo: int, *, quiet: bool) -> None:
        self.todo, self.quiet = todo, quiet
        self.finished = self.failed = self.frames = 0
        self._start = time.perf_counter()
        self._terminal = sys.stderr.isatty()

    def planned(self, job: Job, segments: int, done_before: int) -> None:
        """Say that ``job``'s file is cut into ``segments``, of which an earlier run did ``done_before``."""
        if not self.quiet:
            before = f", {done_before} done before" if done_before else ""
            print(f"{job.name}: {segments} segments{before}", file=sys.stderr, flush=True)

    def segment(self, job: Job, index: int, result: JobResult) -> None:
        """Say, in a log (not on a terminal, where the files' line is redrawn), that a segment finished."""
        if not self.quiet and not self._terminal:
            print(f"{job.name}: segment {index + 1} {result.state}", file=sys.stderr, flush=True)

    def add(self, job: Job, result: JobResult) -> None:
        """Count ``job``'s ``result`` and say where the batch is."""
        self.finished += 1
        self.failed += result.state == FAILED
        self.frames += result.frames or 0
        if self.quiet:
            return
        elapsed = time.perf_counter() - self._start
        failed = f" ({self.failed} failed)" if self.failed else ""
        eta = elapsed / self.finished * (self.todo - self.finished)
        line = (
            f"{self.finished}/{self.todo} files{failed}  {self.frames} frames  {self.frames / elapsed:.1f} fps  "
            f"ETA {eta:.0f} s"
        )
        if not self._terminal:
            print(f"{line}  ({job.name}: {result.state})", file=sys.stderr, flush=True)
            return
        print(f"\r{line}  ", end="\n" if self.finished == self.todo else "", file=sys.stderr, flush=True)


def summary_table(rows: list[tuple[Job, JobResult, bool]]) -> str:
    """Return the summary: one line a file, under a header.

    Its name, frames, seconds and state ("done", "done earlier" where a rerun skipped it, or
    "failed: " and the reason), the frames its source's decoder marked damaged, and the warnings
    in its log (an interlaced source written progressive), where any.

    Parameters
    ----------
    rows : list of (Job, JobResult, bool)
        Each file, how it ended, and whether an earlier run did it.
    """
    table = [("file", "frames", "seconds", "state")]
    for job, result, earlier in rows:
        state = f"{FAILED}: {result.reason}" if result.state == FAILED else f"{result.state}{' earlier' * earlier}"
        if result.damaged:
            state += f", {result.damaged} frame{'s' * (result.damaged > 1)} damaged in the source (its log names them)"
        if result.warnings and result.state != FAILED:
            state += f", {result.warnings} warning{'s' * (result.warnings > 1)} (its log says them)"
        frames = "" if result.frames is None else str(result.frames)
        seconds = "" if result.seconds is None else f"{result.seconds:.1f}"
        table.append((job.name, frames, seconds, state))
    widths = [max(len(row[column]) for row in table) for column in range(3)]
    return "\n".join(
        f"{name:<{widths[0]}}  {frames:>{widths[1]}}  {seconds:>{widths[2]}}  {state}"
        for name, frames, seconds, state in table
    )


def warnings_said(rows: list[tuple[Job, JobResult, bool]]) -> str:
    """Return the warnings of the files the table says had some, a line each from their logs; "" if none.

    A lost pixel aspect ratio or chroma halved is a result a person must know of, not only a
    count (an archivist's FFV1 .mkv of anamorphic DV played too narrow, the summary saying "1
    warning"). Each warning once a file, at most MOST_WARNINGS_SAID lines.

    Parameters
    ----------
    rows : list of (Job, JobResult, bool)
        As ``summary_table`` takes them.
    """
    lines = [
        f"{job.name}: {text}"
        for job, result, _ in rows
        if result.warnings and result.state != FAILED
        for text in _logged_warnings(job)
    ]
    if not lines:
        return ""
    said = ["warnings:", *(f"  {line}" for line in lines[:MOST_WARNINGS_SAID])]
    if len(lines) > MOST_WARNINGS_SAID:
        said.append(f"  and {len(lines) - MOST_WARNINGS_SAID} more, in the files' logs")
    return "\n".join(said)


def _logged_warnings(job: Job) -> list[str]:
    """Return the warnings in a file's log (a long file's: in its first segment's where its own has none), each once.

    Without the output's or input's path that begins most of them: the table names the file.
    """
    for log in (job.log, job.segment_log(0)):
        try:
            lines = Path(log).read_text(errors="replace").splitlines()
        except OSError:
            continue
        texts = [line.removeprefix(WARNING) for line in lines if line.startswith(WARNING)]
        if texts:
            return list(dict.fromkeys(_without_path(text, job) for text in texts))
    return []


def _without_path(text: str, job: Job) -> str:
    for path in (job.output, job.input):
        text = text.removeprefix(f"{path}: ")
    return text
