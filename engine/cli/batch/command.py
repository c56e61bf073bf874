"""``nlmeans-studio batch INPUT... --out DIR``: many files on a Dask cluster.

The files found, those done before skipped, the rest denoised one a task on a Dask cluster, each
recorded in DIR's manifest as it finishes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...backend import resolve_backend
from ...video.export import ExportCancelledError
from .cluster import ALLOWED_FAILURES, batch_client
from .jobs import Job, find_jobs
from .manifest import FAILED, PENDING, JobResult, Manifest
from .report import BatchProgress, summary_table
from .task import run_job

if TYPE_CHECKING:
    from distributed import Client

BATCH_ARGUMENTS = ("command", "inputs", "out", "jobs", "scheduler")  # the batch's own; the rest are denoise's


def run_batch(args: argparse.Namespace) -> int:
    """Run ``batch``; return 0 when every file is done, 1 when some failed.

    Each failed file is listed with its reason. Arguments it cannot run with raise ValueError or
    OSError, for the CLI's handler.
    """
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file: give a folder (it is made if missing)")
    if args.devices is not None:
        raise ValueError("--devices spreads one file over GPUs; a batch gives each GPU files of its own: leave it out")
    if args.scheduler is not None and args.jobs is not None:
        raise ValueError(
            "--jobs sizes the cluster on this machine: with --scheduler, the workers started there run the files"
        )
    options = {name: value for name, value in vars(args).items() if name not in BATCH_ARGUMENTS}
    jobs = find_jobs(args.inputs, out, codec=args.codec)
    if args.scheduler is None:
        resolve_backend(args.backend)  # a GPU asked for and missing: said once, not by every file
    manifest = Manifest(out)
    todo = [job for job in jobs if not manifest.is_done(job, options)]
    if not args.quiet:
        print(f"{len(jobs)} files: {len(jobs) - len(todo)} done before, {len(todo)} to denoise", file=sys.stderr)
    results = {}
    if todo:
        with batch_client(args.scheduler, jobs=args.jobs, backend=args.backend) as client:
            if not args.quiet:
                _say_where(client)
            out.mkdir(parents=True, exist_ok=True)  # once the cluster answers: a wrong address leaves nothing
            for job in todo:
                manifest.record(job, options, JobResult(PENDING))
            manifest.save()
            try:
                results = _run(client, todo, options, manifest, BatchProgress(len(todo), quiet=args.quiet))
            except KeyboardInterrupt:  # Ctrl-C, SIGTERM: what finished is recorded
                raise ExportCancelledError(
                    f"cancelled; the files done are recorded in {manifest.path}: the same command does the rest"
                ) from None
    rows = [(job, results.get(job.name) or _earlier(manifest, job), job.name not in results) for job in jobs]
    print(summary_table(rows))
    return 1 if any(result.state == FAILED for _, result, _ in rows) else 0


def _say_where(client: Client) -> None:
    """Say where the scheduler, its workers and the dashboard are, on stderr."""
    cluster = client.scheduler_info()
    dashboard = client.dashboard_link if "dashboard" in cluster["services"] else "none (pip install bokeh)"
    print(
        f"scheduler {client.scheduler.address} with {len(cluster['workers'])} worker(s); dashboard {dashboard}",
        file=sys.stderr,
        flush=True,
    )


def _run(
    client: Client, todo: list[Job], options: dict[str, Any], manifest: Manifest, progress: BatchProgress
) -> dict[str, JobResult]:
    """Each job a task; each result recorded (the manifest saved) as it comes, in any order."""
    from distributed import as_completed

    futures = {client.submit(run_job, job, options, pure=False): job for job in todo}
    results = {}
    for future in as_completed(futures):
        job = futures[future]
        results[job.name] = result = _result_of(future)
        manifest.record(job, options, result)
        manifest.save()
        progress.add(job, result)
    return results


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
    return JobResult(entry["state"], entry["reason"], entry["frames"], entry["seconds"])
