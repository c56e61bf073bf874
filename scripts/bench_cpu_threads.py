"""Times ``denoise_volume`` (``--video``: a video frame) on the CPU, idle and beside a process spinning on one core.

Each setting runs in a process of its own (the OpenMP wait policy is read when numba's pool
starts), pinned to ``--cpus`` with the spinner on the first of them: all the CPUs' threads or
one, and OMP_WAIT_POLICY passive (the engine's default, engine/cpu/threads.py) or active
(spinning); numba's threading layers (``--layers omp,tbb``) and parallel chunk sizes
(``--chunks``). Prints each setting's best idle and busy time (of ``--repeats``), their ratio,
and the busy time over the fastest idle time of all settings (a setting slow when idle does not
look good for slowing little).

    python scripts/bench_cpu_threads.py --size 64 --search 3 --cpus 0,1
    python scripts/bench_cpu_threads.py --video 1280x720 --search 3 --cpus 0,1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def _volume_call(size: int, search: int, threads: int | None):
    """Return a call that filters a size^3 volume, after a small call that loads the filter and starts the pool."""
    from nlmeans_studio.engine import denoise_volume

    volume = np.random.default_rng(0).random((size, size, size), dtype=np.float32)
    settings = {"h": 0.3, "search_radius": search, "backend": "cpu", "threads": threads}
    denoise_volume(volume[:16, :16, :16], **settings)
    return lambda: denoise_volume(volume, **settings)


def _video_call(size: str, search: int, threads: int | None):
    """Return a call that filters the middle of three RGB frames of ``size`` (WIDTHxHEIGHT), Dp = Df = 1."""
    import numba

    from nlmeans_studio.engine import Denoiser, NLMParams

    width, height = map(int, size.split("x"))
    frames = np.random.default_rng(0).integers(0, 256, (3, height, width, 3), dtype=np.uint8)
    denoiser = Denoiser(NLMParams(h=10, search_radius=search, frames_past=1, frames_future=1), backend="cpu")
    numba.set_num_threads(threads or numba.config.NUMBA_NUM_THREADS)
    denoiser.denoise_frame(frames[:, :32, :32], 1)
    return lambda: denoiser.denoise_frame(frames, 1)


def measure(size: int, video: str | None, search: int, repeats: int, threads: int | None, chunk: int) -> dict:
    """Best idle and busy seconds of one setting, in this process (pinned by the caller).

    ``chunk``: numba's parallel chunk size, planes (0: numba's default, one equal run a thread).
    """
    import numba

    numba.set_parallel_chunksize(chunk)
    call = _volume_call(size, search, threads) if video is None else _video_call(video, search, threads)

    def best() -> float:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return min(times)

    idle = best()
    first = sorted(os.sched_getaffinity(0))[0]
    spinner = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{first}}})\nwhile True: pass"]
    )
    try:
        time.sleep(0.2)
        busy = best()
    finally:
        spinner.kill()
        spinner.wait()
    return {"layer": numba.threading_layer(), "threads": numba.config.NUMBA_NUM_THREADS, "idle": idle, "busy": busy}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=64, help="the volume's side, voxels")
    parser.add_argument("--video", help="time a video frame of this size (WIDTHxHEIGHT) instead of a volume")
    parser.add_argument("--search", type=int, default=3, help="search radius, voxels or pixels")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cpus", default="0,1", help="CPUs to pin to, the spinner on the first")
    parser.add_argument("--layers", default="omp", help="numba threading layers to try, comma-separated (omp, tbb)")
    parser.add_argument("--chunks", default="0", help="numba parallel chunk sizes to try, planes (0: numba's default)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: its thread count, 0 for all
    parser.add_argument("--chunk", type=int, default=0, help=argparse.SUPPRESS)  # a child's chunk size
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.size, args.video, args.search, args.repeats, args.one or None, args.chunk)))
        return
    cpus = {int(cpu) for cpu in args.cpus.split(",")}
    what = f"{args.size}^3 float32" if args.video is None else f"video {args.video} RGB, Dp = Df = 1"
    print(f"{what}, search radius {args.search}, patch radius 1, CPUs {sorted(cpus)}")
    rows = []
    settings = [(0, "active", layer, 0) for layer in args.layers.split(",")]
    settings += [
        (0, "passive", layer, int(chunk)) for layer in args.layers.split(",") for chunk in args.chunks.split(",")
    ]
    settings += [(1, "passive", "omp", 0)]
    for threads, wait, layer, chunk in settings:
        environment = dict(
            os.environ, NUMBA_NUM_THREADS=str(len(cpus)), OMP_WAIT_POLICY=wait, NUMBA_THREADING_LAYER=layer
        )
        command = [sys.executable, __file__, "--size", str(args.size), "--search", str(args.search)]
        command += [] if args.video is None else ["--video", args.video]
        command += ["--repeats", str(args.repeats), "--one", str(threads), "--chunk", str(chunk)]
        child = subprocess.run(
            command,
            env=environment,
            capture_output=True,
            text=True,
            check=True,
            preexec_fn=lambda: os.sched_setaffinity(0, cpus),
        )
        result = json.loads(child.stdout.splitlines()[-1])
        rows.append((threads or result["threads"], wait, chunk, result))
    fastest = min(result["idle"] for *_, result in rows)  # the idle machine's time, whatever the setting
    print(
        f"{'threads':>8}{'wait policy':>13}{'chunk':>7}{'idle s':>9}{'busy s':>9}{'busy/idle':>11}"
        f"{'busy/fastest idle':>19}"
    )
    for count, wait, chunk, result in rows:
        print(
            f"{count:>8}{wait:>13}{chunk:>7}{result['idle']:>9.3f}{result['busy']:>9.3f}"
            f"{result['busy'] / result['idle']:>11.2f}{result['busy'] / fastest:>19.2f}   ({result['layer']})"
        )


if __name__ == "__main__":
    main()
