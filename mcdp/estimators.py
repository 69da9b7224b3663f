"""Attacks (distinguishers) that map a batch of outputs to outcome indices.

An :class:`Attack` turns mechanism outputs ``y`` of shape ``(n, d)`` into integers in
``[0, num_outcomes)``; the engine counts how often each outcome occurs, and
:mod:`mcdp.statistics` turns the counts into a privacy-loss estimate with bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax.numpy as jnp

from mcdp._types import Array


class Attack(NamedTuple):
    """A distinguisher.

    ``guess(y, aux)`` maps outputs of shape ``(n, d)`` to int32 outcomes of shape
    ``(n,)`` in ``[0, num_outcomes)``. ``aux`` is a pytree of arrays (inputs,
    parameters, thresholds) passed into the compiled loop as data, so new values do
    not re-trace. Outcomes are *ordered* by the evidence they carry for the first
    input over the second: the events used for (epsilon, delta) bounds are the
    upper sets ``{outcome >= k}`` and the lower sets ``{outcome < k}``.
    """

    name: str
    num_outcomes: int
    guess: Callable[[Array, Any], Array]


def majority_vote_guess(y: Array, aux: Any = None) -> Array:
    """The ACL 2022 reconstruction attack (SPEC E2).

    Each coordinate rounds to 0 below 0.5 and to 1 otherwise (NaN compares false, so
    it rounds to 1); the mean of the rounded coordinates, rounded half-to-even, is
    the guess. A tie at ``d/2`` rounds to 0, so the guess is 1 iff more than half of
    the coordinates round to 1.

    Returns:
      int32 array of shape ``(n,)``: 0 guesses ``D = 0^d``, 1 guesses ``D' = 1^d``.
    """
    del aux
    ones = jnp.sum(~(y < 0.5), axis=-1, dtype=jnp.int32)
    return (2 * ones > y.shape[-1]).astype(jnp.int32)


MAJORITY_VOTE = Attack(name="majority", num_outcomes=2, guess=majority_vote_guess)
