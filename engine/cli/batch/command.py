"""``nlmeans-studio batch INPUT... --out DIR``: many files on a Dask cluster.

The files found, those done before skipped, the rest denoised one a task on a Dask cluster, each
recorded in DIR's manifest as it finishes. A long file's task plans it instead (``plan``): then
each of its segments not done before is a task, and once all are done, the task that joins them.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...backend import resolve_backend
from ...media.formats import check_encoding, default_codec, encoder_preset
from ...media.image_sequence import check_sequence_rate
from ...media.staged_output import folder_problem, held_by_a_run, hidden_name, remove_left_behind
from ...video.export import ExportCancelledError
from ..denoise import window_params
from .cluster import ALLOWED_FAILURES, batch_client, stop_local_workers
from .jobs import BATCH_MANIFEST, Job, find_jobs
from .manifest import DONE, FAILED, PENDING, JobResult, Manifest
from .plan import SegmentPlan
from .report import BatchProgress, summary_table, warnings_said
from .segments import join_job, run_segment
from .task import run_job

if TYPE_CHECKING:
    from distributed import Client

BATCH_ARGUMENTS = ("command", "inputs", "out", "jobs", "scheduler", "overwrite")  # the batch's own; the rest denoise's
SKIPPED_NAMED = 5  # the skipped files named on the line that counts them


def run_batch(args: argparse.Namespace) -> int:
    """Run ``batch``; return 0 when every file is done, 1 when some failed.

    Each failed file is listed with its reason. Arguments it cannot run with raise ValueError or
    OSError, for the CLI's handler.
    """
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file: give a folder (it is made if missing)")
    problem = _out_problem(out)
    if problem is not None:
        raise ValueError(f"--out {out}: {problem}: give a folder that can be written (it is made if missing)")
    window_params(args, None)  # an option out of range, said once rather than by every file
    if args.frame_rate is not None:
        check_sequence_rate(args.frame_rate)
    # Where none is asked for, each file's own (``default_codec``): --rgb's and --preset's checked here
    codec = args.codec or default_codec(Path("any.mkv"), None, rgb=args.rgb, preset=args.preset)
    check_encoding(codec, args.crf, args.preset or encoder_preset(codec, live=False), rgb=args.rgb)
    if args.devices is not None:
        raise ValueError("--devices spreads one file over GPUs; a batch gives each GPU files of its own: leave it out")
    if args.scheduler is not None and args.jobs is not None:
        raise ValueError(
            "--jobs sizes the cluster on this machine: with --scheduler, the workers started there run the files"
        )
    options = {name: value for name, value in vars(args).items() if name not in BATCH_ARGUMENTS}
    left_out: list[Path] = []
    skipped: list[Path] = []
    jobs = find_jobs(args.inputs, out, codec=args.codec, left_out=left_out, skipped=skipped)
    if args.scheduler is None:
        resolve_backend(args.backend)  # a GPU asked for and missing: said once, not by every file
    manifest = Manifest(out)
    todo = [job for job in jobs if not manifest.is_done(job, options)]
    if not args.overwrite:
        _refuse_redoing(manifest, todo, options)
    for folder in left_out if not args.quiet else ():
        print(f"left out {folder}: another batch's outputs (its {BATCH_MANIFEST})", file=sys.stderr)
    if skipped and not args.quiet:
        names = ", ".join(map(str, skipped[:SKIPPED_NAMED])) + (", ..." if len(skipped) > SKIPPED_NAMED else "")
        print(
            f"skipped {len(skipped)} file{'s' * (len(skipped) > 1)} not named as videos or volumes: {names} (give a "
            "file by its own name to try it)",
            file=sys.stderr,
        )
    if not args.quiet:
        reels = sum(job.sequence for job in jobs)
        files = f"{len(jobs)} file{'s' * (len(jobs) != 1)}" + (
            f" ({reels} of them image sequence{'s' * (reels > 1)})" if reels else ""
        )
        print(f"{files}: {len(jobs) - len(todo)} done before, {len(todo)} to denoise", file=sys.stderr)
    results = {}
    if todo:
        cancelled = False
        with batch_client(args.scheduler, jobs=args.jobs, backend=args.backend) as client:
            if not args.quiet:
                _say_where(client)
            out.mkdir(parents=True, exist_ok=True)  # once the cluster answers: a wrong address leaves nothing
            for job in todo:
                manifest.record(job, options, JobResult(PENDING))
            manifest.save()
            try:
                results = _run(client, todo, options, manifest, BatchProgress(len(todo), quiet=args.quiet))
            except KeyboardInterrupt:  # Ctrl-C, SIGTERM: what finished is recorded, nothing more is written
                cancelled = True
                if args.scheduler is None:
                    stop_local_workers()
        if cancelled:
            unfinished = [job for job in todo if not manifest.is_done(job, options)]
            _wait_for_stopped_writers(unfinished)
            for hidden in _hidden_files(unfinished):
                remove_left_behind(hidden)
            raise ExportCancelledError(
                f"cancelled; the files done are recorded in {manifest.path}: the same command does the rest"
            )
    rows = [(job, results.get(job.name) or _earlier(manifest, job), job.name not in results) for job in jobs]
    print(summary_table(rows))
    if said := warnings_said(rows):
        print(said)
    return 1 if any(result.state == FAILED for _, result, _ in rows) else 0


def _out_problem(out: Path) -> str | None:
    """Why ``out`` cannot be made or written in, or None: asked of the nearest folder above it that exists."""
    existing = out
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    return folder_problem(existing / "probe")


def _say_where(client: Client) -> None:
    """Say where the scheduler, its workers and the dashboard are, on stderr."""
    cluster = client.scheduler_info()
    dashboard = client.dashboard_link if "dashboard" in cluster["services"] else "none (pip install bokeh)"
    print(
        f"scheduler {client.scheduler.address} with {len(cluster['workers'])} worker(s); dashboard {dashboard}",
        file=sys.stderr,
        flush=True,
    )


_JOIN = -1  # the step of a file's task that joins its segments; a segment's is its index, the file's own None
STOP_SECONDS = 15.0  # the longest a cancel waits for the files being written to stop (a frame, and the poll)


def _wait_for_stopped_writers(jobs: list[Job]) -> None:
    """Wait until no run holds a hidden file of ``jobs`` (their outputs' and segments'), at most STOP_SECONDS.

    A worker of a cluster the user started goes on with its file until the batch's cancel event
    reaches it (``task.cancellable``); it then removes its hidden file. Those still held after
    STOP_SECONDS are left to the run holding them.
    """
    deadline = time.monotonic() + STOP_SECONDS
    while time.monotonic() < deadline and any(held_by_a_run(hidden) for hidden in _hidden_files(jobs)):
        time.sleep(0.1)


def _hidden_files(jobs: list[Job]) -> list[Path]:
    """Return where runs of ``jobs`` write until complete: each output's hidden file, and its segments' ones."""
    outputs = [hidden_name(Path(job.output), sequence=job.sequence) for job in jobs]
    return outputs + [hidden for job in jobs for hidden in Path(job.segments).glob(".*")]


def _run(
    client: Client, todo: list[Job], options: dict[str, Any], manifest: Manifest, progress: BatchProgress
) -> dict[str, JobResult]:
    """Each job a task, or its plan's segments and their join; each result recorded (the manifest saved) as it comes.

    In any order. A segment that fails fails its file, once its other segments are finished.
    """
    from distributed import Event, as_completed

    steps: dict[Any, tuple[Job, int | None]] = {}
    completed = as_completed()
    cancel = Event(f"nlmeans-batch-cancel-{uuid.uuid4().hex}", client=client)  # set: the running files stop

    def submit(job: Job, step: int | None, *arguments: Any) -> None:
        if step == _JOIN:
            future = client.submit(join_job, job, options, *arguments, pure=False)
        else:
            task = run_job if step is None else run_segment
            future = client.submit(task, job, options, *arguments, cancel=cancel.name, pure=False)
        steps[future] = (job, step)
        completed.add(future)

    plans: dict[str, SegmentPlan] = {}
    left: dict[str, set[int]] = {}  # each planned file's segments not finished
    failed: dict[str, JobResult] = {}  # each planned file's first failed segment
    results = {}
    for job in todo:
        submit(job, None)
    try:
        for future in completed:
            job, step = steps.pop(future)
            outcome = _result_of(future)
            if isinstance(outcome, SegmentPlan):
                plans[job.name], left[job.name] = outcome, set(manifest.record_plan(job, outcome))
                manifest.save()  # before it is said: a batch killed on hearing it finds it recorded
                progress.planned(job, len(outcome.frames), len(outcome.frames) - len(left[job.name]))
                for index in sorted(left[job.name]):
                    submit(job, index, outcome, index)
            elif step is not None and step != _JOIN:
                manifest.record_segment(job, step, outcome)
                manifest.save()
                progress.segment(job, step, outcome)
                left[job.name].discard(step)
                if outcome.state == FAILED:
                    first, stop = plans[job.name].frames[step]
                    reason = f"segment {step + 1} (frames {first}..{stop - 1}): {outcome.reason}"
                    failed.setdefault(job.name, JobResult(FAILED, reason=reason))
            else:
                results[job.name] = _with_plan_seconds(outcome, manifest, job, plans.get(job.name))
            if job.name in left and not left[job.name]:  # every segment finished: joined, or the file failed
                del left[job.name]
                if job.name in failed:
                    results[job.name] = failed[job.name]
                else:
                    submit(job, _JOIN, plans[job.name])
            if job.name in results:
                manifest.record(job, options, results[job.name])
                manifest.save()
                progress.add(job, results[job.name])
    except KeyboardInterrupt:  # what has not run is not run anywhere, nor again where a worker goes
        cancel.set()
        client.cancel(list(steps), force=True)
        raise
    return results


def _refuse_redoing(manifest: Manifest, todo: list[Job], options: dict[str, Any]) -> None:
    """Refuse to replace outputs an earlier batch finished with other options, naming the options that changed."""
    changed = [(job, manifest.changed_options(job, options)) for job in todo]
    changed = [(job, names) for job, names in changed if names]
    if changed:
        job, names = changed[0]
        count = f"{len(changed)} file{'s were' if len(changed) > 1 else ' was'}"
        options_named = ", ".join(f"--{name.replace('_', '-')}" for name in names)
        raise ValueError(
            f"{count} denoised into {manifest.path.parent} with other options ({options_named}: {job.name}"
            f"{' first' * (len(changed) > 1)}): pass --overwrite to denoise again with these, or give another --out"
        )


def _with_plan_seconds(result: JobResult, manifest: Manifest, job: Job, plan: SegmentPlan | None) -> JobResult:
    """Return a joined file's result with its segments' damaged frames, and its tasks' seconds.

    All its tasks': its plan's, its segments' and the join's.
    """
    if plan is None or result.state != DONE:
        return result
    segments = manifest.entries[job.name]["segments"]
    seconds = plan.seconds + sum(segment["seconds"] or 0.0 for segment in segments) + (result.seconds or 0.0)
    damaged = sum(segment.get("damaged", 0) for segment in segments)  # a manifest of an older version has none
    warnings = max((segment.get("warnings", 0) for segment in segments), default=0)  # each says the source's
    return dataclasses.replace(result, seconds=seconds, damaged=damaged, warnings=warnings)


def _result_of(future: Any) -> JobResult:
    """Return a task's JobResult.

    A task that raised (a bug, whose traceback is in the file's log) or whose workers kept dying is
    a failed one.
    """
    from distributed import KilledWorker

    try:
        return future.result()
    except KilledWorker:
        return JobResult(
            FAILED, reason=f"the worker running it died {ALLOWED_FAILURES + 1} times (a crash decoding it, or memory?)"
        )
    except Exception as error:
        return JobResult(FAILED, reason=f"{type(error).__name__}: {error} (the traceback is in its log)")


def _earlier(manifest: Manifest, job: Job) -> JobResult:
    """Return the result an earlier run recorded for a job it did."""
    entry = manifest.entries[job.name]
    older = {"damaged": 0, "warnings": 0}  # what a manifest of an older version lacks
    return JobResult(**{name: entry.get(name, older.get(name)) for name in JobResult.__dataclass_fields__})
