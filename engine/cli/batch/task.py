"""One file of a batch, denoised on a Dask worker.

By the functions behind ``denoise`` and ``denoise-volume``, in the worker's process; its messages
go to the file's log.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from ...volume import cli as volume_cli
from ..arguments import build_parser
from ..denoise import Stop, run_denoise
from ..errors import FAILURES, error_message
from .jobs import Job
from .manifest import DONE, FAILED, JobResult

# The options of denoise that denoise-volume has too; a volume takes its own defaults for the others.
VOLUME_OPTIONS = ("h", "patch_radius", "search_radius", "weighting", "center_weight", "backend", "quiet", "debug")

# A worker of several threads still denoises one file at a time: the filter uses every core (or
# the GPU) it is given, and a file's log is the process's stderr while it runs.
_ONE_AT_A_TIME = threading.Lock()


def run_job(job: Job, options: dict[str, Any]) -> JobResult:
    """Denoise ``job``'s file with ``options`` (``denoise``'s, by their argparse names).

    An output an earlier, unfinished run left is replaced.

    Parameters
    ----------
    job : Job
        The file, its output and its log.
    options : dict
        ``denoise``'s options as the batch's command line parsed them.

    Returns
    -------
    JobResult
        DONE with the frames written (a volume's slices), or FAILED with the one-line reason
        ``denoise`` would have printed (a corrupt or unsupported file, a value it refuses).

    Raises
    ------
    Exception
        Anything else (a bug): its traceback is written to the log first, and Dask reports it.
    """
    Path(job.output).parent.mkdir(parents=True, exist_ok=True)
    Path(job.log).parent.mkdir(parents=True, exist_ok=True)
    with _ONE_AT_A_TIME, open(job.log, "w") as log, contextlib.redirect_stderr(log):
        print(f"{job.input} -> {job.output} on {socket.gethostname()}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            frames = _denoise_volume(job, options) if job.volume else _denoise_video(job, options)
        except FAILURES as error:
            if options["debug"]:
                traceback.print_exc()
            reason = error_message(error)
            print(f"nlmeans-studio: error: {reason}", file=sys.stderr)
            return JobResult(FAILED, reason=reason, seconds=time.perf_counter() - start)
        except Exception:
            traceback.print_exc()
            raise
        return JobResult(DONE, frames=frames, seconds=time.perf_counter() - start)


def _denoise_video(job: Job, options: dict[str, Any]) -> int:
    args = argparse.Namespace(**options, command="denoise", input=job.input, output=job.output, overwrite=True)
    return run_denoise(args, Stop()).frames  # off the main thread, Stop sets no signal handler


def _denoise_volume(job: Job, options: dict[str, Any]) -> int:
    args = build_parser().parse_args(["denoise-volume", job.input, job.output, "--overwrite"])
    for name in VOLUME_OPTIONS:
        if options[name] is not None:
            setattr(args, name, options[name])
    return volume_cli.run(args)[0]
