"""The record a batch keeps in its output folder.

Each file's input, output, options, state (done, failed with the reason, or pending), frames and
seconds; for a long file cut into segments (``plan``), the plan and each segment's state too.

It is rewritten whole after each file, under a temporary name renamed over the old one, so that a
batch killed at any moment leaves the last complete record. A rerun skips a file that is done
with the same options, from the same input (its size and modification time; a sequence's images'
count, total size and latest time), and whose output is still there (a sequence's every image);
it redoes the rest, and of a file cut into segments, only the segments not done
(where the plan is the same and their files still there).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .jobs import BATCH_MANIFEST, Job
from .plan import SegmentPlan

DONE, FAILED, PENDING = "done", "failed", "pending"
# Options that change what a run says, not what it writes: a rerun with or without them skips what is done.
MESSAGE_OPTIONS = ("quiet", "verbose", "debug")


@dataclass(frozen=True)
class JobResult:
    """How one file's run ended.

    ``state`` DONE or FAILED (with the one-line ``reason``), the frames written (a volume's: its
    slices), the wall-clock seconds on the worker, how many of the frames written the source's
    decoder marked damaged (``ExportSummary.damaged_frames``; its log names them), and how many
    warnings its log holds (an interlaced source written progressive, chroma halved).
    """

    state: str
    reason: str | None = None
    frames: int | None = None
    seconds: float | None = None
    damaged: int = 0
    warnings: int = 0


def recorded_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` as the manifest keeps and compares them: JSON values, without MESSAGE_OPTIONS."""
    kept = {name: value for name, value in options.items() if name not in MESSAGE_OPTIONS}
    return json.loads(json.dumps(kept, default=repr, sort_keys=True))


class Manifest:
    """The record of the batches written to ``folder``: one entry a job, by its output's name."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / BATCH_MANIFEST
        self.entries: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return
        try:
            self.entries = json.loads(self.path.read_text())["jobs"]
        except (ValueError, KeyError, TypeError) as error:  # not ours, or hand-edited: every file is redone
            print(f"warning: {self.path}: not a batch record ({error}); every file is denoised again", file=sys.stderr)

    def is_done(self, job: Job, options: dict[str, Any]) -> bool:
        """Tell whether an earlier run did ``job`` with ``options``, from its input as it is now.

        And its output is still there.
        """
        entry = self.entries.get(job.name)
        return (
            entry is not None
            and entry["state"] == DONE
            and entry["input"] == job.input
            and entry["options"] == recorded_options(options)
            and entry.get("source") == _stamp(job)
            and _output_there(job, entry)
        )

    def changed_options(self, job: Job, options: dict[str, Any]) -> list[str]:
        """Return the options an earlier run finished ``job`` with that differ from ``options``, its output still there.

        Empty where it was not finished, its output is gone, or it had the same options.
        """
        entry = self.entries.get(job.name)
        if entry is None or entry["state"] != DONE or not _output_there(job, entry):
            return []
        now, then = recorded_options(options), entry["options"]
        return sorted(name for name in now.keys() | then.keys() if now.get(name) != then.get(name))

    def record(self, job: Job, options: dict[str, Any], result: JobResult) -> None:
        """Set ``job``'s entry to ``result`` (not yet saved).

        Until the file is done, the segments an earlier run of it (same input and options) did are kept.
        """
        entry = {
            "input": job.input,
            "output": job.output,
            "log": job.log,
            "options": recorded_options(options),
            "source": _stamp(job),
            **asdict(result),
        }
        earlier = self.entries.get(job.name, {})
        same_run = all(earlier.get(name) == entry[name] for name in ("input", "options", "source"))
        if result.state != DONE and same_run and "plan" in earlier:
            entry["plan"], entry["segments"] = earlier["plan"], earlier["segments"]
        self.entries[job.name] = entry

    def record_plan(self, job: Job, plan: SegmentPlan) -> list[int]:
        """Set ``job``'s segments to ``plan``'s (not yet saved); return those to do.

        All of them, but those an earlier run of the same plan did whose files are still there.
        """
        entry = self.entries[job.name]
        recorded = plan.recorded()
        if entry.get("plan") != recorded:
            entry["plan"], entry["segments"] = recorded, [asdict(JobResult(PENDING)) for _ in plan.frames]
        segments = entry["segments"]
        return [
            index
            for index in range(len(segments))
            if segments[index]["state"] != DONE or not job.segment(index).exists()
        ]

    def record_segment(self, job: Job, index: int, result: JobResult) -> None:
        """Set segment ``index`` of ``job`` to ``result`` (not yet saved)."""
        self.entries[job.name]["segments"][index] = asdict(result)

    def save(self) -> None:
        """Write the record atomically: a temporary file beside it, flushed to disk, renamed over it."""
        staged = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        with open(staged, "w") as file:
            json.dump({"version": 1, "jobs": self.entries}, file, indent=1)
            file.flush()
            os.fsync(file.fileno())
        os.replace(staged, self.path)


def _stamp(job: Job) -> dict[str, int] | None:
    """Return an input's size and modification time: a file changed since it was done is done again.

    A sequence's: its images' count, total size and latest modification time (an image rescanned,
    added or removed).
    """
    try:
        statuses = [os.stat(file) for file in job.input_files()]
    except OSError:
        return None
    if not statuses:
        return None
    size, latest = sum(status.st_size for status in statuses), max(status.st_mtime_ns for status in statuses)
    stamp = {"size": size, "mtime_ns": latest}
    return {**stamp, "images": len(statuses)} if job.sequence else stamp


def _output_there(job: Job, entry: dict[str, Any]) -> bool:
    """Whether the output a finished run recorded is still there: the file, or each of the sequence's images."""
    written = job.output_files()
    return len(written) == entry["frames"] if job.sequence else bool(written)
