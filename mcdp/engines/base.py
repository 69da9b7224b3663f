r"""What every engine shares: the block, the job, the interface, the counting kernel.

An *engine* is where draws happen: :class:`~mcdp.engines.device.DeviceEngine` runs a
JAX mechanism on the devices, :class:`~mcdp.engines.host.HostEngine` calls a Python
black box on the host. The counting loop (:func:`mcdp.sampling.iter_counts`) hands
an engine a :class:`CountJob` and the first block to draw, adds up what it yields and
keeps the totals; it does not know which engine runs.

Randomness is fixed per *block* of :data:`BLOCK_DRAWS` draws, so the counts of a key
do not depend on the engine's chunk or call sizes, on how many devices or workers
share the blocks, or on where a run was resumed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from mcdp._types import Array, PRNGKey
from mcdp.core.attack import Attack
from mcdp.core.mechanism import Mechanism

BLOCK_DRAWS = 1024  # draws per key; changing it changes every stream, so it is fixed


class EngineLost(RuntimeError):
    """The engine's workers are gone (a cluster's scheduler was lost): the run
    stops; what was counted before is kept by whoever keeps it (a resume file)."""


class Progress(NamedTuple):
    """What the loop has counted so far: yielded after every engine step."""

    draws: int  # draws done per input
    counts: np.ndarray  # (num_inputs, num_outcomes) int64 totals


class CountJob(NamedTuple):
    """What to count: ``num_draws`` draws of ``mechanism`` on every row of ``xs``
    (host float64, shape ``(num_inputs, d)``, or a black box's two datasets,
    :class:`mcdp.core.datasets.Datasets`), input ``i`` from ``fold_in(key, i)``,
    mapped to outcomes by ``attack.guess(y, aux)``; arguments already checked."""

    key: PRNGKey
    mechanism: Mechanism
    attack: Attack
    xs: Any
    params: Any
    aux: Any
    num_draws: int
    dtype: str


class Engine(Protocol):
    """Where the draws of a job happen."""

    def count(
        self, job: CountJob, first_block: int
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Counts the job's draws from block ``first_block`` on; yields ``(draws
        done per input, int64 counts added since the last item)`` after every step
        (the last item has ``draws == job.num_draws``)."""
        ...

    def draw(
        self,
        job: CountJob,
        transform: Callable[[Array, Any], Any] | None,
        first_draw: int = 0,
        out: Any = None,
    ) -> Any:
        """``job.num_draws`` outputs of every input from its ``first_draw``-th on
        (those that a draw from 0 would give there), mapped by
        ``transform(y, job.aux)`` where given (``job.attack`` is not used): shape
        ``(num_inputs, num_draws, ...)``; where ``transform`` returns a tuple (or
        another pytree) of arrays, the same tree of such arrays, each contiguous
        (the portfolio's candidates each have theirs). Where ``out`` is given
        (that tree of host arrays of those shapes, views among them), they are
        filled and returned."""
        ...


def device_tree(tree: Any, dtype: str) -> Any:
    """Floating leaves become JAX arrays of the run's dtype, integer leaves int32:
    one trace per dtype, whatever Python or NumPy types the caller used."""

    def leaf(v):
        kind = np.asarray(v).dtype.kind
        return jnp.asarray(v, dtype=jnp.int32 if kind in "biu" else dtype)

    return jax.tree.map(leaf, tree)


def outcome_counts(guess: Array, valid: Array, num_outcomes: int) -> Array:
    """How often each outcome in ``[0, num_outcomes)`` occurs among the ``valid``
    rows of ``guess``: int32 of shape ``(num_outcomes,)``. The one counting kernel of
    every engine."""
    if num_outcomes == 2:
        # one sum over the draws, not one per outcome: where the guess is
        # elementwise in the draws (d = 1), XLA fuses the sampler into every sum
        # that reads it, so two sums drew everything twice
        ones = jnp.sum(jnp.where(valid, guess, 0), dtype=jnp.int32)
        n = jnp.sum(valid, dtype=jnp.int32)
        return jnp.stack([n - ones, ones])
    outcomes = jnp.arange(num_outcomes, dtype=jnp.int32)
    hits = (guess[:, None] == outcomes[None, :]) & valid[:, None]
    return jnp.sum(hits, axis=0, dtype=jnp.int32)


def input_width(xs: Any) -> int:
    """The numbers of one input that a task's size is reckoned in: d for rows of
    ``xs``, the width of a record for datasets."""
    return int(xs[0].shape[-1]) if len(xs) else 1
