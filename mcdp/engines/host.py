r"""The host engine: black-box mechanisms, Python callables run on the host.

:meth:`mcdp.Mechanism.from_callable` wraps ``fn(rng, x, n)``, any Python code that
returns ``n`` outputs for one input row ``x`` (a library's mechanism, say). The
counting loop (:func:`mcdp.sampling.iter_counts`, :func:`mcdp.sampling.draw`) hands
such a mechanism to :class:`HostEngine`: it calls ``fn`` on the host, moves each
chunk of outputs to the device, applies the attack's jitted ``guess(y, aux)`` there
and keeps only the counts, as the device engine does (progress bars, interruption
and ``resume`` work alike).

Randomness is fixed per *host block* of :data:`HOST_BLOCK_DRAWS` draws (16 of the
engine's blocks): host block ``h`` of input ``i`` draws from its own
``numpy.random.Generator(PCG64(SeedSequence(entropy, spawn_key=(i, h))))``, where
``entropy`` is the run's JAX key as 32-bit words (``jax.random.key_data``), and
``fn`` is called once per host block with ``n = HOST_BLOCK_DRAWS``. So, for a
callable that draws only from the generator it is given, the counts of a seed do
not depend on the chunk size, the number of workers or where a run was resumed;
draws past the requested number are drawn and discarded, as the JAX engine masks
them. A key derived for another purpose (the learned attack's training sample)
gives other entropy, so those draws are disjoint from the counted ones.

One generator per engine block (1024 draws) cost about 15 us to derive on this
CPU, as much as 1024 Laplace draws of NumPy; 16 blocks share one to keep the
engine's overhead small, and :mod:`mcdp._seedseq` makes NumPy's generator in
half NumPy's time (``benchmarks/bench_callable.py``).

With one worker, ``fn`` is called in one thread of this process kept for the
purpose (never the main thread), a chunk ahead of the caller's thread, which makes
the generators and counts meanwhile; ``fn`` is never called from two threads at
once. Each chunk's outputs are copied into one array, aligned so that the CPU
backend takes it without another copy, and filled again once its counts are in.

Ctrl-C is the caller's: worker processes ignore SIGINT, and a run that stops early
(an interrupt, an error) cancels the chunks not yet started and shuts its worker
processes down once the ones under way are done, so none is left behind.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import multiprocessing
import os
import pickle
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator
from functools import lru_cache, partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mcdp._seedseq import Seeding
from mcdp.core.mechanism import HostSample, Mechanism
from mcdp.engines.base import (
    BLOCK_DRAWS,
    CountJob,
    device_tree,
    input_width,
    outcome_counts,
)

HOST_BLOCK_DRAWS = 16 * BLOCK_DRAWS  # draws per generator and per call of fn: fixed
TASK_SCALARS = 1 << 18  # input scalars per task (one input's share of a chunk)
ALIGN = 64  # bytes: the alignment at which the CPU backend aliases host arrays


# --- the host blocks -----------------------------------------------------------------


def entropy(key: jax.Array) -> tuple[int, ...]:
    """The words of a JAX key (any implementation) as Python ints: the entropy of
    every generator of a run."""
    return tuple(int(w) for w in np.asarray(jax.random.key_data(key)).ravel())


@lru_cache(maxsize=16)
def _seeding(words: tuple[int, ...]) -> Seeding:
    return Seeding(words)


def block_generator(words: tuple[int, ...], i: int, h: int) -> np.random.Generator:
    """The generator of host block ``h`` of input ``i``:
    ``Generator(PCG64(SeedSequence(words, spawn_key=(i, h))))``, made by
    :class:`mcdp._seedseq.Seeding` in half NumPy's time."""
    return _seeding(words).generator(i, h)


def _checked(out: Any, name: str, width: int | None) -> np.ndarray:
    """One call's outputs as an array of shape ``(HOST_BLOCK_DRAWS, width)``;
    ``width`` as the first call's where given."""
    n = HOST_BLOCK_DRAWS
    out = np.asarray(out)
    if out.ndim == 0 or out.shape[0] != n:
        raise ValueError(
            f"Expected fn of mechanism {name!r} to return an array with first "
            f"axis n = {n} (fn(rng, x, n)), got shape {out.shape}."
        )
    if out.dtype.kind not in "biuf":
        raise ValueError(
            f"Expected fn of mechanism {name!r} to return real numbers, got "
            f"dtype {out.dtype}."
        )
    out = out.reshape(n, -1)
    if width is not None and out.shape[1] != width:
        raise ValueError(
            f"Expected fn of mechanism {name!r} to return {width} values per "
            f"output every time, got {out.shape[1]}."
        )
    return out


class Spare:
    """Arrays of a run whose counts are in, ready to be filled again (``fn`` in
    threads): a fresh array a chunk costs page faults in the threads that call
    ``fn``, several per cent of a fast callable's time. Taken by those threads,
    given back by the one that counts (a deque: safe from several threads)."""

    def __init__(self, keep: int = 16):
        self.arrays: deque = deque(maxlen=keep)

    def take(self, shape: tuple[int, int], dtype: str) -> np.ndarray:
        try:
            array = self.arrays.pop()
        except IndexError:
            return _aligned(shape, dtype)
        if array.shape != shape or array.dtype != np.dtype(dtype):
            return _aligned(shape, dtype)  # a run's last, shorter chunk
        return array

    def give(self, arrays: list[np.ndarray]) -> None:
        self.arrays.extend(arrays)


def _fill(
    outputs: Iterator[Any], count: int, name: str, dtype: str, spare: Spare | None
) -> np.ndarray:
    """``count`` calls' outputs one after another in one aligned array of
    ``dtype`` and shape ``(count * HOST_BLOCK_DRAWS, width)`` (a spare one where
    there is one): each is copied in as soon as it comes, so that its memory is
    soon free for another call."""
    n = HOST_BLOCK_DRAWS
    result = None
    for k in range(count):
        out = _checked(next(outputs), name, None if result is None else result.shape[1])
        if result is None:
            shape = (count * n, out.shape[1])
            result = (
                _aligned(shape, dtype) if spare is None else spare.take(shape, dtype)
            )
        result[k * n : (k + 1) * n] = out
    return result


def _draw(
    fn: HostSample,
    name: str,
    generators: list[np.random.Generator],
    x: np.ndarray,
    dtype: str,
    spare: Spare | None = None,
) -> np.ndarray:
    """One call of ``fn`` per generator (host block), filled into one array
    (:func:`_fill`)."""
    n = HOST_BLOCK_DRAWS
    calls = (fn(rng, x.copy(), n) for rng in generators)
    return _fill(calls, len(generators), name, dtype, spare)


def _generators(
    words: tuple[int, ...], i: int, first: int, count: int
) -> list[np.random.Generator]:
    """The generators of host blocks ``first .. first + count - 1`` of input ``i``."""
    seeding = _seeding(words)
    return [seeding.generator(i, h) for h in range(first, first + count)]


def _task(
    fn: HostSample,
    name: str,
    words: tuple[int, ...],
    i: int,
    x: np.ndarray,
    first: int,
    count: int,
    dtype: str,
) -> np.ndarray:
    """Host blocks ``first .. first + count - 1`` of input ``i``: an array of shape
    ``(count * HOST_BLOCK_DRAWS, width)`` in ``dtype``. What a worker runs."""
    return _draw(fn, name, _generators(words, i, first, count), x, dtype)


def _aligned(shape: tuple[int, int], dtype: str) -> np.ndarray:
    """An empty array whose data start on a :data:`ALIGN`-byte boundary: the CPU
    backend then takes it without a copy (``jax.device_put`` aliases it)."""
    size = shape[0] * shape[1] * np.dtype(dtype).itemsize
    raw = np.empty(size + ALIGN, dtype=np.uint8)
    skip = -raw.ctypes.data % ALIGN
    return raw[skip : skip + size].view(dtype).reshape(shape)


_POOLS: dict[tuple[Any, int, bool], concurrent.futures.Executor] = {}


def _pool(mechanism: Mechanism) -> concurrent.futures.Executor | None:
    """``None`` for one worker (:func:`_caller`), else a pool kept for the rest of
    the process: threads where asked for or where ``fn`` cannot be pickled, else
    processes (started by spawning: JAX does not survive a fork)."""
    fn, workers, threads = mechanism.host_sample, mechanism.workers, mechanism.threads
    if workers == 1:
        return None
    pool = _POOLS.get((fn, workers, threads))
    if pool is None:
        if threads or not _picklable(fn):
            pool = concurrent.futures.ThreadPoolExecutor(
                workers, thread_name_prefix="mcdp-fn"
            )
        else:
            context = multiprocessing.get_context("spawn")
            pool = concurrent.futures.ProcessPoolExecutor(
                workers, mp_context=context, initializer=_ignore_interrupts
            )
        _POOLS[(fn, workers, threads)] = pool
    return pool


def _ignore_interrupts() -> None:
    """A worker process leaves Ctrl-C to the process that runs the audit, which
    stops the workers (:func:`_blocks`) and keeps what is counted."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_pool(mechanism: Mechanism) -> None:
    """Shuts the worker processes of ``mechanism`` down once the tasks under way
    are done (the rest are cancelled): after an interrupt, none is left behind."""
    key = (mechanism.host_sample, mechanism.workers, mechanism.threads)
    pool = _POOLS.pop(key, None)
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


def _picklable(fn: HostSample) -> bool:
    try:
        pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


@atexit.register
def _close_pools() -> None:
    for pool in _POOLS.values():
        pool.shutdown(wait=False, cancel_futures=True)
    _POOLS.clear()


_CALLER: dict[int, concurrent.futures.ThreadPoolExecutor] = {}  # by process id
_IN_CALLER = threading.local()


def _mark_caller() -> None:
    _IN_CALLER.active = True


def _new_caller() -> concurrent.futures.ThreadPoolExecutor:
    return concurrent.futures.ThreadPoolExecutor(
        1, thread_name_prefix="mcdp-fn", initializer=_mark_caller
    )


def _caller() -> tuple[concurrent.futures.ThreadPoolExecutor, bool]:
    """The thread that calls ``fn`` with one worker, and whether it is this run's
    own: one thread for the process (a forked child makes its own), whose memory
    stays warm from run to run (a thread made per run cost several per cent of a
    fast callable's time); a run started from inside ``fn`` gets one of its own,
    not to wait for itself."""
    if getattr(_IN_CALLER, "active", False):
        return _new_caller(), True
    pid = os.getpid()
    if pid not in _CALLER:
        _CALLER.clear()  # a parent's, whose thread is not in this process
        _CALLER[pid] = _new_caller()
    return _CALLER[pid], False


class Workers(NamedTuple):
    """Who calls ``fn`` for a run: an executor, whether it runs in this process
    (outputs then go into :class:`Spare` arrays), how many chunks may be under way
    ahead of the one counted, and what to do when the run ends (``stop(early)``)."""

    pool: concurrent.futures.Executor
    in_process: bool
    ahead: int
    stop: Callable[[bool], None]


def local_workers(mechanism: Mechanism) -> Workers:
    """The workers of this machine that ``mechanism`` asks for: with one worker,
    one thread of this process (:func:`_caller`); else the threads or processes of
    :func:`_pool`. Two chunks per worker are under way ahead of the one counted."""
    pool = _pool(mechanism)
    ahead = 2 * mechanism.workers
    if pool is None:
        caller, private = _caller()

        def stop_caller(early: bool) -> None:
            if private:  # a run started from inside fn: its own thread
                caller.shutdown(wait=False, cancel_futures=True)

        return Workers(caller, True, ahead, stop_caller)
    if isinstance(pool, concurrent.futures.ProcessPoolExecutor):

        def stop_processes(early: bool) -> None:
            if early:  # an interrupt or an error: no process left behind
                _stop_pool(mechanism)

        return Workers(pool, False, ahead, stop_processes)
    return Workers(pool, True, ahead, lambda early: None)


def _blocks(
    workers: Workers,
    mechanism: Mechanism,
    key: jax.Array,
    xs: np.ndarray,
    first: int,
    stop: int,
    per_task: int,
    dtype: str,
    spare: Spare | None = None,
) -> Iterator[tuple[int, int, list[np.ndarray]]]:
    """``(first host block, count, [outputs of each input])`` of consecutive chunks
    of ``per_task`` host blocks from ``first`` to ``stop``, one task per input and
    chunk, ``workers.ahead`` chunks under way ahead of the one yielded. Threads of
    this process fill arrays from ``spare`` while the caller's thread makes the
    generators and counts; other workers make their own generators
    (:func:`_task`)."""
    fn, words, name = mechanism.host_sample, entropy(key), mechanism.name
    pool = workers.pool
    starts = iter(range(first, stop, per_task))
    pending: deque = deque()

    def submit() -> bool:
        start = next(starts, None)
        if start is None:
            return False
        count = min(per_task, stop - start)
        if workers.in_process:
            futures = [
                pool.submit(
                    _draw,
                    fn,
                    name,
                    _generators(words, i, start, count),
                    xs[i],
                    dtype,
                    spare,
                )
                for i in range(len(xs))
            ]
        else:
            futures = [
                pool.submit(_task, fn, name, words, i, xs[i], start, count, dtype)
                for i in range(len(xs))
            ]
        pending.append((start, count, futures))
        return True

    try:
        while len(pending) < workers.ahead and submit():
            pass
        while pending:
            start, count, futures = pending.popleft()
            outputs = [f.result() for f in futures]
            submit()
            yield start, count, outputs
    finally:  # an error, an interrupt or a caller that stops early
        for _, _, futures in pending:
            for f in futures:
                f.cancel()
        workers.stop(bool(pending))


def _black_box(mechanism: Mechanism) -> Mechanism:
    """``mechanism``, if it is a black box: a JAX mechanism runs on devices."""
    if mechanism.host_sample is None:
        raise ValueError(
            f"the host and cluster engines run black boxes (Mechanism.from_callable);"
            f" {mechanism.name!r} is a JAX mechanism: the device engine runs it."
        )
    return mechanism


def _per_task(dim: int, first: int, stop: int, scalars: int) -> int:
    """Host blocks per task: about ``scalars`` input scalars, a power of two no
    larger than the run needs (few shapes, so few compiles)."""
    per_task = max(1, scalars // (HOST_BLOCK_DRAWS * dim))
    needed = max(1, stop - first)
    return min(per_task, 1 << (needed - 1).bit_length())


def _rows(out: np.ndarray, rows: int, width: int | None, name: str):
    """One input's outputs padded with zeros to ``rows`` (the last chunk of a run:
    one shape per run, so one compile); every chunk must have the first one's
    width."""
    width = out.shape[1] if width is None else width
    if out.shape[1] != width:
        raise ValueError(
            f"Expected fn of mechanism {name!r} to return {width} values per "
            f"output every time, got {out.shape[1]}."
        )
    if len(out) < rows:
        out = np.concatenate([out, np.zeros((rows - len(out), width), out.dtype)])
    return out, width


@partial(jax.jit, static_argnames=("guess", "num_outcomes"))
def _count_rows(y, low, high, aux, *, guess, num_outcomes):
    """Counts of each outcome of ``guess`` over the rows ``low <= r < high`` of one
    input's outputs ``y``: int32 of shape ``(num_outcomes,)``."""
    rows = jnp.arange(y.shape[0], dtype=jnp.int32)
    valid = (rows >= low) & (rows < high)
    return outcome_counts(guess(y, aux), valid, num_outcomes)


def _collect(counted: list[jax.Array]) -> np.ndarray:
    """The counts of one chunk, one row per input, as int64 on the host."""
    return np.stack([np.asarray(c, dtype=np.int64) for c in counted])


@partial(jax.jit, static_argnames=("transform",))
def _transform_rows(y, aux, *, transform):
    """``transform(y, aux)`` of one input's outputs."""
    return transform(y, aux)


class HostEngine:
    """Calls a black box's ``fn`` on the host (:class:`mcdp.engines.base.Engine`),
    in the workers that the mechanism asks for (``workers``, ``threads``).

    A subclass runs the tasks elsewhere by giving other :meth:`workers` (and a
    task size, ``task_scalars``): :class:`mcdp.engines.cluster.ClusterEngine`."""

    task_scalars = TASK_SCALARS  # input scalars per task

    def workers(self, mechanism: Mechanism) -> Workers:
        """Who calls ``fn`` (:func:`local_workers`)."""
        return local_workers(_black_box(mechanism))

    def count(
        self, job: CountJob, first_block: int
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Counts from engine block ``first_block`` on; an item after every chunk."""
        n = HOST_BLOCK_DRAWS
        mechanism, num_draws = job.mechanism, job.num_draws
        first_draw = first_block * BLOCK_DRAWS
        first, stop = first_draw // n, -(-num_draws // n)
        per_task = _per_task(input_width(job.xs), first, stop, self.task_scalars)
        workers = self.workers(mechanism)
        x64 = job.dtype == "float64"
        width = None
        with jax.enable_x64(x64):
            aux_d = device_tree(job.aux, job.dtype)
        # a chunk's counts are dispatched asynchronously and collected after the
        # next chunk's outputs are drawn, so the device counts while the host draws;
        # its item comes one chunk late (a caller that stops loses the chunk in
        # flight); once counted, its arrays are filled again
        pending, spare = None, Spare() if workers.in_process else None
        for start, count, outputs in _blocks(
            workers, mechanism, job.key, job.xs, first, stop, per_task, job.dtype,
            spare,
        ):  # fmt: skip
            offset = start * n
            low = np.int32(max(first_draw - offset, 0))  # NumPy: no dispatch
            high = np.int32(min(num_draws - offset, count * n))
            with jax.enable_x64(x64):
                counted = []  # one (num_outcomes,) array per input, on the device
                for out in outputs:
                    y, width = _rows(out, per_task * n, width, mechanism.name)
                    counted.append(
                        _count_rows(
                            y,  # aligned: the CPU backend takes it without a copy
                            low,
                            high,
                            aux_d,
                            guess=job.attack.guess,
                            num_outcomes=job.attack.num_outcomes,
                        )
                    )
            if pending is not None:
                added = _collect(pending[1])
                if spare is not None:  # counted: its arrays can be filled again
                    spare.give(pending[2])
                yield pending[0], added
            pending = (min(offset + count * n, num_draws), counted, outputs)
        if pending is not None:
            yield pending[0], _collect(pending[1])

    def draw(self, job: CountJob, transform, first_draw: int = 0, out=None) -> Any:
        """``job.num_draws`` outputs of every input from its ``first_draw``-th on,
        from the host blocks of ``job.key``, mapped by ``transform(y, job.aux)`` on
        the device where given (a pytree of arrays where it returns one), copied
        into ``out`` where given."""
        n = HOST_BLOCK_DRAWS
        mechanism = job.mechanism
        first, skip = divmod(first_draw, n)  # the first host block, cut by skip
        stop = -(-(first_draw + job.num_draws) // n)
        per_task = _per_task(input_width(job.xs), first, stop, self.task_scalars)
        parts: list[list[Any]] = [[] for _ in range(len(job.xs))]
        x64 = job.dtype == "float64"
        with jax.enable_x64(x64):
            aux_d = device_tree(job.aux, job.dtype)
        width = None
        blocks = _blocks(
            self.workers(mechanism), mechanism, job.key, job.xs, first, stop,
            per_task, job.dtype,
        )  # fmt: skip
        for _, count, outputs in blocks:
            for i, released in enumerate(outputs):
                y, width = _rows(released, per_task * n, width, mechanism.name)
                if transform is not None:  # padded to one shape: one compile
                    with jax.enable_x64(x64):
                        y = _transform_rows(y, aux_d, transform=transform)
                rows = count * n
                parts[i].append(jax.tree.map(lambda v, r=rows: np.asarray(v)[:r], y))
        per_input = [
            jax.tree.map(
                lambda *p: np.concatenate(p)[skip : skip + job.num_draws], *chunks
            )
            for chunks in parts
        ]
        whole = jax.tree.map(lambda *inputs: np.stack(inputs), *per_input)
        if out is None:
            return whole
        jax.tree.map(np.copyto, out, whole)
        return out
