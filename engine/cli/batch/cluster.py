"""The Dask cluster a batch runs on.

The scheduler ``--scheduler`` names, or one on this machine with a worker process a GPU (pinned
with CUDA_VISIBLE_DEVICES) or, without GPUs, a worker a core; the cores are shared out among the
workers for numba's threads.

Each worker has one thread: a file is one task, and the filter spreads over the cores (or the
GPU) itself. Dask imports here, when a batch runs: the other commands do not pay for it.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ...backend import gpu_unavailable_reason, resolve_devices
from ...cores import free_cores

if TYPE_CHECKING:
    from distributed import Client, SpecCluster

# A task whose worker dies is run again on another; one that took three workers down with it (a
# file whose decoding crashes, or one too big for the memory) fails rather than taking the rest.
ALLOWED_FAILURES = 2
CONNECT_SECONDS = 5  # waiting for --scheduler to answer
DASHBOARD = "127.0.0.1:8787"  # Dask's usual port; another where it is taken


@contextlib.contextmanager
def batch_client(scheduler: str | None, *, jobs: int | None, backend: str) -> Iterator[Client]:
    """Yield a client of the cluster the batch runs on, closed (with a local cluster) on leaving.

    Parameters
    ----------
    scheduler : str or None
        The address of a running scheduler (``tcp://host:8786``); None: a cluster on this machine.
    jobs : int or None
        Workers of the local cluster: default one a GPU where CuPy sees GPUs and ``backend`` is not
        "cpu", else one a core.
    backend : {"auto", "cpu", "gpu"}
        The backend the files are denoised on.

    Raises
    ------
    ConnectionError
        ``scheduler`` does not answer.
    """
    from distributed import Client

    if scheduler is None:
        with warnings.catch_warnings():  # Dask's own when 8787 is taken: the dashboard's address is said after
            warnings.filterwarnings("ignore", message="Port .* is already in use", category=UserWarning)
            # and the socket its first try at 8787 left open (distributed's node.py retries on another port)
            warnings.filterwarnings("ignore", message="unclosed <socket", category=ResourceWarning)
            cluster = _local_cluster(jobs, backend)
        with cluster, Client(cluster) as client:
            yield client
        return
    try:
        client = Client(scheduler, timeout=CONNECT_SECONDS)
    except (OSError, ValueError, TypeError) as error:  # no answer (TimeoutError is an OSError), or no address
        raise ConnectionError(
            f"cannot reach the Dask scheduler at {scheduler} ({error}): start one there ('dask scheduler', then "
            "'dask worker ADDRESS' on each machine), or leave --scheduler out to run on this machine"
        ) from None
    with client:
        if not client.scheduler_info()["workers"]:
            print(f"waiting for a worker to join {scheduler} ('dask worker {scheduler}')", file=sys.stderr)
            client.wait_for_workers(1)
        yield client


def stop_local_workers() -> None:
    """Kill the local cluster's worker processes (this process's children) at once.

    On a cancel: Dask's own close lets a worker's running file go on for seconds, and a file
    published after the batch said it stopped is one its record calls not done.
    """
    import multiprocessing

    for child in multiprocessing.active_children():
        child.kill()


def _local_cluster(jobs: int | None, backend: str) -> SpecCluster:
    """Start worker processes on this machine, each with the environment it needs.

    Their scheduler listens on this machine alone. Without the MALLOC_TRIM_THRESHOLD_ Dask's
    workers are started with by default (``spawned_environment``).
    """
    import dask
    from distributed import Nanny, Scheduler, SpecCluster

    environments = worker_environments(_gpu_ids(backend), jobs, free_cores())
    workers = {
        index: {"cls": Nanny, "options": {"nthreads": 1, "env": environment, "silence_logs": logging.WARNING}}
        for index, environment in enumerate(environments)
    }
    scheduler = {
        "cls": Scheduler,
        "options": {"host": "127.0.0.1", "dashboard_address": DASHBOARD, "allowed_failures": ALLOWED_FAILURES},
    }
    with dask.config.set({"distributed.nanny.pre-spawn-environ": spawned_environment()}):  # read as Nannies start
        return SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.WARNING)


def spawned_environment() -> dict[str, object]:
    """Return the variables Dask sets before it starts a worker process, less MALLOC_TRIM_THRESHOLD_.

    Dask sets it (65536) so that workers give memory back to the system; set at all, it also
    stops glibc from raising its threshold for mmap, so that every frame-sized array (a decoded
    frame, an output's planes, the encoder's frame) is fresh pages the process must fault in and
    zero, and gives back when freed: milliseconds a frame, four workers at once.
    """
    import dask

    environment = dask.config.get("distributed.nanny.pre-spawn-environ", default={})
    return {name: value for name, value in environment.items() if name != "MALLOC_TRIM_THRESHOLD_"}


def worker_environments(gpus: list[int], jobs: int | None, cores: int) -> list[dict[str, str]]:
    """Return each local worker's environment: one a GPU of ``gpus`` (the first ``jobs``), else ``jobs`` or one a core.

    The ``cores`` are shared out among them for numba's threads: the CPU filter's, and on a GPU
    worker the frames' conversions to and from Y'CbCr (four GPU workers each with every core's
    worth of threads exported 50-60 frames/s each on a 64-core host, 72-91 with a quarter each).
    """
    gpus = gpus[:jobs]
    count = len(gpus) or jobs or cores
    threads = {"NUMBA_NUM_THREADS": str(max(1, cores // count))}
    return [threads | {"CUDA_VISIBLE_DEVICES": str(gpu)} for gpu in gpus] or [threads] * count


def _gpu_ids(backend: str) -> list[int]:
    """Return the GPUs the local cluster puts a worker on: none on the CPU backend or without CuPy's."""
    if backend == "cpu" or gpu_unavailable_reason() is not None:
        return []
    return resolve_devices("all") or []
