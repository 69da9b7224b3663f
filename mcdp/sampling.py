r"""The counting loop: every audit's draws are counted here, on an engine.

:func:`iter_counts` checks a run's arguments, picks up a resumed run's totals, hands
the draws to an engine (:mod:`mcdp.engines`: the device engine for a JAX mechanism,
the host engine for a Python black box, or one the caller passes) and adds up what
it counts, yielding a :class:`~mcdp.engines.base.Progress` after every engine step;
:func:`draw` returns raw outputs, for attacks that learn. Every audit, search
confirmation, grid cell and black-box run counts through :func:`iter_counts`.

Randomness is fixed per *block* of :data:`BLOCK_DRAWS` draws: the draws of input
``i`` in block ``b`` come from ``fold_in(fold_in(key, i), b)`` (the host engine
seeds a NumPy generator per 16 blocks from the same key), so the counts of a seed do
not depend on the engine's chunk or call sizes, on the devices or workers, or on
where a run was resumed.

:func:`key` and :func:`cell_key` turn seeds into keys.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import numpy as np

from mcdp import _compilation_cache, _validate
from mcdp import prng as prng_module
from mcdp._types import Array, PRNGKey
from mcdp.core.attack import Attack
from mcdp.core.datasets import Datasets
from mcdp.core.mechanism import Mechanism
from mcdp.engines.base import BLOCK_DRAWS, CountJob, Engine, Progress
from mcdp.engines.device import DeviceEngine
from mcdp.engines.host import HostEngine

PRNG_IMPL = prng_module.DEFAULT  # the stream of a seed; see :func:`key`
PRNG_IMPLS = prng_module.STREAMS  # the streams a seed can mean
DTYPES = _validate.DTYPES


def key(seed: int, prng: str = PRNG_IMPL) -> PRNGKey:
    """The root key of a seed: ``jax.random.key(seed, impl=...)`` of stream ``prng``.

    Every seed of mcdp means the ``threefry4x32`` stream by default, on every
    backend: the counter-based Threefry of JAX's default (``threefry2x32``) with four
    32-bit words per call, integer adds, rotations and xors only, so its bits do not
    depend on the backend, and it shards like the default. In the engine on a 2-core
    AVX-512 CPU it drew float32 Laplace noise 1.7-2.1x as fast as the default at
    d >= 8 (0.6x at d = 1), and float64 noise at 0.9-1.0x at d >= 8 (1.6x at d = 1;
    ``benchmarks/RESULTS.md``); philox was no faster, ``rbg`` was 5x slower in
    float32 and differs between backends. ``prng="splitmix64"`` is the faster,
    weaker stream of :mod:`mcdp.prng`. Any key may be passed to the engine; only the
    seeds that mcdp turns into keys are bound to these choices.
    """
    return prng_module.key(seed, prng)


def cell_key(seed: int, identity: str, prng: str = PRNG_IMPL) -> PRNGKey:
    """The key of one audit: ``fold_in(key(seed, prng), crc32(identity))``.

    ``identity`` names what is audited (experiment, mechanism, epsilon, d, ...), so
    an audit gives the same counts whether it runs alone or inside a grid, in any
    order. The callers' identity strings are part of their streams: fixed.
    """
    return jax.random.fold_in(key(seed, prng), zlib.crc32(identity.encode()))


def default_engine(mechanism: Mechanism, **device_options: Any) -> Engine:
    """The engine of ``mechanism``: the host engine for a black box
    (``host_sample``), else the device engine with ``device_options``
    (:class:`~mcdp.engines.device.DeviceEngine`: every device by default)."""
    if mechanism.host_sample is not None:
        return HostEngine()
    return DeviceEngine(**device_options)


def _job(key, mechanism, attack, xs, params, num_draws, dtype, aux) -> CountJob:
    """The checked arguments of a run."""
    num_draws = _validate.integer(
        "num_draws", num_draws, low=1, high=_validate.MAX_DRAWS
    )
    dtype = _validate.one_of("dtype", dtype, DTYPES)
    if isinstance(xs, Datasets):  # a black box's two datasets, as they are
        if mechanism.host_sample is None:
            raise ValueError(
                f"datasets are the inputs of black boxes (Mechanism.from_callable), "
                f"not of {mechanism.name!r}."
            )
        return CountJob(key, mechanism, attack, xs, params, aux, num_draws, dtype)
    xs_host = np.asarray(xs, dtype=np.float64)
    if xs_host.ndim != 2 or 0 in xs_host.shape:
        raise ValueError(f"Expected xs of shape (num_inputs, d), got {xs_host.shape}.")
    return CountJob(key, mechanism, attack, xs_host, params, aux, num_draws, dtype)


def iter_counts(
    key: PRNGKey,
    mechanism: Mechanism,
    attack: Attack,
    xs: Array | np.ndarray,
    params: Any,
    num_draws: int,
    *,
    dtype: str = "float64",
    chunk_blocks: int | None = None,
    call_chunks: int | None = None,
    aux: Any = None,
    resume: Progress | None = None,
    devices: Sequence[jax.Device] | None = None,
    engine: Engine | None = None,
) -> Iterator[Progress]:
    """Runs ``num_draws`` draws of ``mechanism`` on every row of ``xs``, streaming.

    Yields a :class:`Progress` after every engine step (a compiled call, or a chunk
    of a black box), so a caller can show progress or stop early and keep what is
    counted (both inputs always have the same number of draws). The last item holds
    the totals.

    Args:
      key: the run's key; input ``i`` uses ``fold_in(key, i)``.
      mechanism: what to sample.
      attack: what to count.
      xs: ``(num_inputs, d)`` inputs, e.g. ``[0^d, 1^d]``.
      params: the mechanism's parameters (a pytree of floats or arrays).
      num_draws: draws per input, ``1 <= num_draws <= 2**40``.
      dtype: ``"float64"`` (default; the Laplace tails reach ~36 b) or ``"float32"``.
      chunk_blocks, call_chunks, devices: the device engine's sizes and devices
        (:class:`~mcdp.engines.device.DeviceEngine`); any values give the same
        counts.
      aux: the attack's data (a pytree; floats become arrays of ``dtype``).
      resume: a :class:`Progress` of an earlier run with the same key, mechanism,
        attack, inputs, parameters and dtype whose ``draws`` is a multiple of
        :data:`BLOCK_DRAWS` (every item but the last of a run is): the run goes on
        from there to ``num_draws`` and yields totals, the same counts as one run of
        ``num_draws`` from the start.
      engine: where the draws happen (:mod:`mcdp.engines`); default:
        :func:`default_engine`, to which alone the device engine's options apply.
    """
    job = _job(key, mechanism, attack, xs, params, num_draws, dtype, aux)
    engine = engine or default_engine(
        mechanism, devices=devices, chunk_blocks=chunk_blocks, call_chunks=call_chunks
    )
    _compilation_cache.enable()
    totals = np.zeros((len(job.xs), attack.num_outcomes), dtype=np.int64)
    block = 0
    if resume is not None:
        block, totals = _resume(resume, job.num_draws, totals.shape)
    for done, added in engine.count(job, block):
        totals = totals + added  # a new array: what was yielded stays as it was
        yield Progress(done, totals)


def _resume(
    resume: Progress, num_draws: int, shape: tuple[int, int]
) -> tuple[int, np.ndarray]:
    """The first block and the totals of a run resumed from ``resume``."""
    done = _validate.integer("resume.draws", resume.draws, low=0, high=num_draws)
    if done % BLOCK_DRAWS:
        raise ValueError(
            f"Expected resume.draws to be a multiple of {BLOCK_DRAWS}, got {done}: "
            "only whole blocks can be resumed."
        )
    counts = np.asarray(resume.counts)
    if counts.shape != shape or counts.dtype.kind not in "iu" or (counts < 0).any():
        raise ValueError(
            f"Expected resume.counts of shape {shape} with non-negative integers, "
            f"got {counts.dtype} of shape {counts.shape}."
        )
    if (counts.sum(axis=1) != done).any():
        raise ValueError(
            f"Expected every row of resume.counts to sum to resume.draws = {done}, "
            f"got {counts.sum(axis=1).tolist()}."
        )
    return done // BLOCK_DRAWS, counts.astype(np.int64)


def count_outcomes(
    key: PRNGKey,
    mechanism: Mechanism,
    attack: Attack,
    xs: Array | np.ndarray,
    params: Any,
    num_draws: int,
    **kwargs,
) -> np.ndarray:
    """The final counts of :func:`iter_counts`: ``(num_inputs, num_outcomes)`` int64."""
    *_, last = iter_counts(key, mechanism, attack, xs, params, num_draws, **kwargs)
    return last.counts


# --- raw outputs, for attacks that learn ---------------------------------------


def draw(
    key: PRNGKey,
    mechanism: Mechanism,
    xs: Array | np.ndarray,
    params: Any,
    num_draws: int,
    *,
    dtype: str = "float64",
    transform: Callable[[Array, Any], Any] | None = None,
    aux: Any = None,
    engine: Engine | None = None,
    first_draw: int = 0,
    out: Any = None,
) -> Any:
    """``num_draws`` outputs of ``mechanism`` on every row of ``xs``, to the host:
    those from the ``first_draw``-th on of the draws that ``key`` gives each input
    (0: its first), so that draws made in parts are the draws made at once.

    The draws of input ``i`` come from the blocks of ``fold_in(key, i)``, as in
    :func:`iter_counts`: with the same key, they are the draws that the engine would
    count, so an attack that learns from them must use a key of its own (see
    :data:`mcdp.running.ATTACK_KEY_TAG`). ``transform(y, aux)`` maps each block of
    outputs on the device (a score, say), so only what it returns reaches the host;
    it must be a module-level function (it is a static argument). It may return a
    tuple (or another pytree) of arrays: each then reaches the host as an array of
    its own, contiguous, where one array with a last axis over them would leave
    each a strided column (the portfolio's candidates' values).

    Returns:
      An array of shape ``(num_inputs, num_draws, ...)``, or the tree of such
      arrays that ``transform`` returns: ``out``, filled, where it is given (that
      tree of host arrays, views of larger ones among them).
    """
    job = _job(key, mechanism, None, xs, params, num_draws, dtype, aux)
    first_draw = _validate.integer(
        "first_draw", first_draw, low=0, high=_validate.MAX_DRAWS - num_draws
    )
    engine = engine or default_engine(mechanism)
    _compilation_cache.enable()
    # only what is asked for: an engine written before draws in parts still draws
    parts = {} if first_draw == 0 else {"first_draw": first_draw}
    if out is not None:
        parts["out"] = out
    return engine.draw(job, transform, **parts)
