r"""The cluster engine: a black box's host blocks as Dask tasks on any cluster.

:class:`ClusterEngine` is the host engine (:mod:`mcdp.engines.host`) with other
workers: each task draws ``per_task`` consecutive host blocks of one input
(:func:`mcdp.engines.host._task`) on a worker of a Dask ``distributed`` cluster and
sends the outputs back; the counting stays where it is, in this process (the
attack's jitted ``guess`` on this process's device). A task's generators depend on
the run's key and the block's index only, so a run on 1, 2 or N workers, or without
Dask, gives the same counts for a reproducible callable; a task whose worker dies
is run again elsewhere by the scheduler and gives the same outputs.

The cluster is any ``distributed`` scheduler: a ``Client`` you made, the address of
a scheduler (``tcp://host:8786``: ``dask-jobqueue`` on SLURM or PBS, Kubernetes, a
cloud cluster), or ``local:N`` for a ``LocalCluster`` of N worker processes with one
thread each on this machine. It needs the extra ``mcdp[cluster]``.

**Task size.** A task draws about :data:`TASK_SCALARS` input scalars (``2^20``:
64 host blocks of 16,384 draws at d = 1), so a callable that costs a microsecond a
value (a library's one-value-per-call release) takes about a second a task, against
a few milliseconds of scheduling and an 8 MB result; at most :data:`MAX_IN_FLIGHT`
tasks, two per worker thread, are under way at once, which bounds the memory of
the results waiting here and the scheduler's queue, however large the cluster.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import logging
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from mcdp.core.mechanism import Mechanism
from mcdp.engines.base import CountJob, EngineLost
from mcdp.engines.host import HostEngine, Workers, _black_box

TASK_SCALARS = 1 << 20  # input scalars per task
MAX_IN_FLIGHT = 256  # tasks under way at once, at most
POLL_SECONDS = 0.5  # how often a wait for a task looks at the client's state
LOST_SECONDS = 5.0  # cut from its scheduler this long, the cluster is lost
LOCAL = "local:"  # the scheduler "local:N": a LocalCluster of N processes


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ValueError(
            "the cluster engine needs Dask's distributed scheduler: install the "
            "extra mcdp[cluster] (pip install 'mcdp[cluster]')."
        ) from None
    return distributed


def _local_workers(scheduler: str) -> int:
    count = scheduler[len(LOCAL) :]
    if not count.isdigit() or not 1 <= int(count) <= 1024:
        raise ValueError(
            f"Expected scheduler local:N with N worker processes in [1, 1024], got "
            f"{scheduler!r}."
        )
    return int(count)


class ClusterEngine(HostEngine):
    """Runs a black box's tasks on a Dask cluster (:class:`~mcdp.engines.base.Engine`).

    Args:
      scheduler: a ``distributed.Client``, a scheduler's address (``tcp://...``), or
        ``local:N`` (a ``LocalCluster`` of N worker processes, one thread each,
        made here and closed with the engine).
      task_scalars: input scalars per task (:data:`TASK_SCALARS`); the counts do
        not depend on it.

    Raises:
      ValueError: ``distributed`` is not installed, or the scheduler is not one of
        the above; the message says which.
    """

    def __init__(self, scheduler: Any, *, task_scalars: int = TASK_SCALARS):
        distributed = _distributed()
        check_scheduler(scheduler)
        self.task_scalars = task_scalars
        self._own: list[Any] = []  # what this engine made, closed by close()
        if isinstance(scheduler, distributed.Client):
            self.client = scheduler
        elif scheduler.startswith(LOCAL):
            cluster = distributed.LocalCluster(
                n_workers=_local_workers(scheduler),
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                silence_logs=logging.ERROR,  # its workers' notes of cancelled tasks
            )
            self.client = distributed.Client(cluster)
            self._own = [self.client, cluster]
        else:
            self.client = distributed.Client(scheduler)
            self._own = [self.client]
        atexit.register(self.close)

    @property
    def dashboard(self) -> str | None:
        """The address of the cluster's dashboard, where it has one."""
        return getattr(self.client, "dashboard_link", None)

    def count(
        self, job: CountJob, first_block: int
    ) -> Iterator[tuple[int, np.ndarray]]:
        """The host engine's count on the cluster; a lost scheduler ends it with
        :class:`~mcdp.engines.base.EngineLost` (an error of ``fn`` is raised as
        it is)."""
        try:
            yield from super().count(job, first_block)
        except EngineLost:
            raise
        except Exception as err:
            if self._lost(err):
                raise EngineLost(
                    f"the cluster's scheduler was lost ({type(err).__name__})"
                ) from err
            raise

    def _lost(self, err: Exception) -> bool:
        distributed = _distributed()
        gone = (
            concurrent.futures.CancelledError,
            distributed.comm.CommClosedError,
            distributed.client.FutureCancelledError,
        )
        return isinstance(err, gone) or self.client.status != "running"

    def workers(self, mechanism: Mechanism) -> Workers:
        """Two tasks per worker thread of the cluster under way (at most
        :data:`MAX_IN_FLIGHT`), on an executor of the client."""
        _black_box(mechanism)
        threads = sum(self.client.nthreads().values()) or 1
        executor = _Watched(self.client.get_executor(pure=False), self.client)
        ahead = max(1, min(MAX_IN_FLIGHT, 2 * threads) // 2)  # chunks: two inputs
        return Workers(executor, False, ahead, lambda early: None)

    def close(self) -> None:
        """Closes the client and the local cluster that this engine made. Their
        loggers are quiet meanwhile: closing with tasks still under way (after
        Ctrl-C) makes Dask and Tornado log the cancelled tasks' tracebacks, which
        say nothing the interrupt's own line does not."""
        loggers = [logging.getLogger(n) for n in ("distributed", "tornado", "asyncio")]
        levels = [logger.level for logger in loggers]
        try:
            for logger in loggers:
                logger.setLevel(logging.CRITICAL)
            for thing in self._own:
                thing.close()
        finally:
            for logger, level in zip(loggers, levels, strict=True):
                logger.setLevel(level)
        self._own = []

    def __enter__(self) -> ClusterEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Watched:
    """An executor of the client whose tasks' ``result()`` gives up, with
    :class:`~mcdp.engines.base.EngineLost`, once the client has been cut from its
    scheduler for :data:`LOST_SECONDS` (a task's future may otherwise wait for a
    scheduler that is gone)."""

    def __init__(self, executor: Any, client: Any):
        self.executor, self.client = executor, client

    def submit(self, fn, *args: Any) -> _WatchedTask:
        return _WatchedTask(self.executor.submit(fn, *args), self.client)


class _WatchedTask:
    def __init__(self, future: concurrent.futures.Future, client: Any):
        self.future, self.client = future, client

    def result(self) -> Any:
        cut_since = None
        while True:
            try:
                return self.future.result(timeout=POLL_SECONDS)
            except TimeoutError:
                if self.client.status == "running":
                    cut_since = None
                    continue
                cut_since = cut_since or time.monotonic()
                if time.monotonic() - cut_since > LOST_SECONDS:
                    raise EngineLost(
                        f"the cluster's scheduler was lost (the client is "
                        f"{self.client.status} for {LOST_SECONDS:g} s)"
                    ) from None

    def cancel(self) -> bool:
        return self.future.cancel()


_ENGINES: dict[Any, ClusterEngine] = {}


def check_scheduler(scheduler: Any) -> Any:
    """``scheduler`` if it can name a cluster (a ``distributed.Client``, an
    address, ``local:N``), without connecting; a one-line error otherwise."""
    if isinstance(scheduler, str) and scheduler.startswith(LOCAL):
        _local_workers(scheduler)
    elif not (
        (isinstance(scheduler, str) and scheduler.strip())
        or type(scheduler).__name__ == "Client"
    ):
        raise ValueError(
            "Expected scheduler to be a distributed.Client, a scheduler address "
            f"such as tcp://host:8786, or local:N, got {scheduler!r}."
        )
    return scheduler


def cluster_engine(scheduler: Any) -> ClusterEngine:
    """The engine of ``scheduler``, made once per process and kept (its
    connection, or its local cluster, serves every run that names it)."""
    key = scheduler if isinstance(scheduler, str) else id(scheduler)
    engine = _ENGINES.get(key)
    if engine is None or engine.client.status in ("closed", "closing"):
        engine = _ENGINES[key] = ClusterEngine(scheduler)
    return engine
