"""A timeline of whole ``denoise_volume`` calls on the GPU: where each host thread spends them.

Wraps the slab pipeline's steps (engine/volume/filter_gpu.py): each slab's upload (``_upload``:
host copies into pinned staging, queued DMA), its queueing (``_filter``) and its delivery
(``_deliver``: waits for the GPU, host copies out), and every ``copy_planes`` call, recording
the thread, the step and its start and end (ms from the call's start). Prints, per call, the
timeline of each thread, and a summary: the time each kind of step took summed per thread, and
the call's length.

    python scripts/notebooks/trace_volume_call.py --size 512 --devices 0 1 --calls 3 [--into-out] [--copy-threads 16]

The feeder threads of all devices share one name (nlmeans-slab-feed_0): their line sums them.
"""

from __future__ import annotations

import argparse
import collections
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from nlmeans_studio.engine import denoise_volume
from nlmeans_studio.engine.volume import filter_gpu as volume_gpu

Event = tuple[str, str, float, float]  # thread, step, start, end (s, perf_counter)


def traced(events: list[Event], step: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` recording each call as ``step`` on its thread."""

    def wrapper(*arguments: object, **options: object) -> Any:
        start = time.perf_counter()
        try:
            return function(*arguments, **options)
        finally:
            events.append((threading.current_thread().name, step, start, time.perf_counter()))

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--devices", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--into-out", action="store_true", help="write into an array written before (out=)")
    parser.add_argument("--copy-threads", type=int, default=None, help="host copy threads (default: the engine's)")
    arguments = parser.parse_args()
    if arguments.copy_threads:  # before the pool is made, at the first call
        volume_gpu.COPY_THREADS = arguments.copy_threads
    volume = np.random.default_rng(0).random((arguments.size,) * 3, dtype=np.float32)
    options = dict(h=0.3, patch_radius=1, search_radius=5, backend="gpu", devices=arguments.devices)
    denoise_volume(volume[:32], **options)  # compile on each device
    events: list[Event] = []
    pipeline = volume_gpu.SlabPipeline
    for name, step in (("_upload", "upload"), ("_filter", "queue"), ("_deliver", "deliver")):
        setattr(pipeline, name, traced(events, step, getattr(pipeline, name)))
    volume_gpu.copy_planes = traced(events, "copy", volume_gpu.copy_planes)
    out = np.zeros_like(volume) if arguments.into_out else None
    for call in range(arguments.calls):
        events.clear()
        start = time.perf_counter()
        denoise_volume(volume, out=out, **options)
        length = time.perf_counter() - start
        print(f"call {call + 1}: {length * 1e3:.1f} ms on GPUs {arguments.devices}")
        by_thread = collections.defaultdict(list)
        for thread, step, begin, end in sorted(events, key=lambda event: event[2]):
            by_thread[thread].append((step, (begin - start) * 1e3, (end - start) * 1e3))
        for thread, steps in sorted(by_thread.items()):
            totals = collections.Counter()
            for step, begin, end in steps:
                totals[step] += end - begin
            summary = ", ".join(f"{step} {total:.1f} ms" for step, total in sorted(totals.items()))
            print(f"  {thread}: {summary}")
            line = " ".join(f"{step[0]}{begin:.1f}-{end:.1f}" for step, begin, end in steps if step != "copy")
            print(f"    {line}")


if __name__ == "__main__":
    main()
