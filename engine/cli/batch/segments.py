"""A long file of a batch on Dask workers: each segment a task, and the task that joins them.

A segment is denoised as ``denoise`` would denoise those frames of the whole file (read with the
window's context, by the filter chosen once for the file: ``SegmentPlan``) into a file of its
own in the output folder's segment folder; once all are done, they are joined by stream copy
into the output, with the source's audio and subtitles, and the segment folder is removed.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any, cast

from ...media.formats import default_codec
from ...media.join import join_segments
from ...media.probe import probe_video
from ...video.export import ExportSummary
from ..denoise import Stop, export_denoised, open_source
from .jobs import SEGMENT_FOLDER, Job
from .manifest import JobResult
from .plan import SegmentPlan
from .task import cancellable, denoise_args, run_logged


def run_segment(
    job: Job, options: dict[str, Any], plan: SegmentPlan, index: int, *, cancel: str | None = None
) -> JobResult:
    """Denoise segment ``index`` of ``plan`` into ``job.segment(index)``; its messages go to its own log.

    ``cancel``: the batch's Dask ``Event``, as ``run_job`` takes it.

    Returns
    -------
    JobResult
        DONE with its frames, or FAILED with the one-line reason (as ``run_job``).
    """
    first, stop = plan.frames[index]
    target = job.segment(index)
    target.parent.mkdir(parents=True, exist_ok=True)

    def work(stopped: Stop) -> ExportSummary:
        args = denoise_args(job, options, output=str(target))
        try:
            open_source(args)
            return export_denoised(args, plan.choice, stopped, frames=range(first, stop), segment_of=plan.whole)
        finally:
            if hasattr(args, "source"):
                args.source.close()

    heading = f"{job.input} frames {first}..{stop - 1} (segment {index + 1} of {len(plan.frames)}) -> {target}"
    stopped = cancellable(cancel)
    return cast(JobResult, run_logged(job.segment_log(index), heading, options, lambda: work(stopped)))


def join_job(job: Job, options: dict[str, Any], plan: SegmentPlan) -> JobResult:
    """Join ``job``'s segments into its output and remove them; the messages go after the plan's in its log.

    Returns
    -------
    JobResult
        DONE with the frames of the output, or FAILED with the reason (a segment missing or damaged).
    """

    def work() -> int:
        info, _ = probe_video(Path(job.input))
        segments = [job.segment(index) for index in range(len(plan.frames))]
        codec = options["codec"] or default_codec(Path(job.output), info, rgb=options["rgb"], preset=options["preset"])
        frames = len(plan.whole)
        join_segments(
            segments, plan.starts, job.output, info, codec=codec, span=plan.span, overwrite=True, frames=frames
        )
        _remove_segments(job)
        return frames

    heading = f"joining {len(plan.frames)} segments -> {job.output}"
    return cast(JobResult, run_logged(job.log, heading, options, work, append=True))


def _remove_segments(job: Job) -> None:
    """Remove ``job``'s segment folder, and the folders above it that it leaves empty, up to SEGMENT_FOLDER's."""
    shutil.rmtree(job.segments, ignore_errors=True)
    folder = Path(job.segments)
    while folder.name != SEGMENT_FOLDER and folder.parent != folder:
        folder = folder.parent
        with contextlib.suppress(OSError):  # not empty: another file's segments are there
            folder.rmdir()
