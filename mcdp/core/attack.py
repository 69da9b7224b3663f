r"""The attack record: a distinguisher, and what its preparation may use.

An :class:`Attack` maps mechanism outputs ``y`` of shape ``(n, d)`` to integer
outcomes in ``[0, num_outcomes)``; the engines count how often each outcome occurs
under each input, and :mod:`mcdp.statistics` turns the counts into bounds. Outcomes
are *ordered*: the events of an audit are the upper sets :math:`\{o \ge k\}` and
the lower sets :math:`\{o < k\}`, taken in both orders of the pair, so which end
speaks for which input does not matter.

An attack that needs data of the audit declares ``prepare``: before any draw that
counts, the audit calls ``prepare(context)`` with an :class:`AttackContext` and runs
the attack it returns, with the ``aux`` it returns (a pytree of arrays passed into
the compiled loop as data). The attacks themselves are in :mod:`mcdp.attacks`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from mcdp._types import Array, PRNGKey
from mcdp.core.mechanism import Mechanism


class AttackContext(NamedTuple):
    """What an attack's ``prepare`` may use; everything is known before the draws.

    Attributes:
      mechanism: the audited mechanism.
      pair: the two inputs, shape ``(2, d)``, as given.
      transformed: the inputs after the mechanism's ``transform`` (clipping), host
        float64: what the noise is added to.
      params: the mechanism's parameters.
      epsilons: the epsilons where the audit reads its privacy profile.
      dtype: the run's dtype, ``"float64"`` or ``"float32"``.
      key: a key for the attack's own draws (training, selection), independent of
        the keys of the counted sample.
      epsilon, delta: the claim under audit.
      draws: the draws per input of the counted sample.
      confidence: the joint confidence of the audit's bounds.
      engine: where the audit's draws run (:mod:`mcdp.engines`; ``None``: the
        mechanism's default); an attack's own draws run there too.
    """

    mechanism: Mechanism
    pair: np.ndarray
    transformed: np.ndarray
    params: Any
    epsilons: tuple[float, ...]
    dtype: str
    key: PRNGKey
    epsilon: float = 1.0
    delta: float = 0.0
    draws: int = 0
    confidence: float = 0.95
    engine: Any = None


class Attack(NamedTuple):
    """A distinguisher.

    Attributes:
      name: its name in results (``attack`` field).
      num_outcomes: how many outcomes ``guess`` returns (for an attack with
        ``prepare``, that of the attack it prepares; 0 where only the context fixes
        it).
      guess: ``guess(y, aux)`` maps outputs of shape ``(n, d)`` to int32 outcomes of
        shape ``(n,)`` in ``[0, num_outcomes)``; pure JAX, not jitted. ``aux`` is a
        pytree of arrays passed into the compiled loop as data, so new values do
        not re-trace.
      prepare: ``prepare(context) -> (attack, aux)``, run on the host before the
        counted draws; ``None`` for an attack that needs nothing (its ``aux`` is
        ``None``).
      impossible: ``(input, outcome)`` cells that the mechanism's declarations make
        impossible (input 0 is the pair's first row); where such a cell is indeed
        never observed, its probability is taken as 0 exactly rather than bounded
        from the counts.
      events: what each event ``outcome >= k`` means, for the records (optional).
      selection: what a portfolio (``attack="auto"``) compared before it chose
        this attack: ``(candidate, score)`` pairs, the score being the lower bound
        that the candidate's events promised on the selection draws; empty for an
        attack that was named.
      preparation: where a portfolio's preparation spent its time, ``(stage,
        seconds)`` pairs in order (training draws, the scorers' training sample,
        each candidate, selection draws, the choice), for the records; empty for
        an attack that was named.
      by_block: whether, on a CPU, the counting loop should guess one block of
        draws after another rather than a chunk of blocks at once (a guess of
        large matrix products, such as the MLP's, runs several times faster so;
        a cheap one a little slower). The counts are the same either way.
      screened: the candidates of ``selection`` whose score is that of the
        portfolio's screening alone, on the first ``screen_draws`` selection draws
        per input (:data:`mcdp.attacks.SCREEN_FROM`); empty where every score is
        that of the whole selection sample.
      screen_steps: where a scorer of ``screened`` was trained for the
        screening alone, on fewer steps than the counted scorers
        (:data:`mcdp.attacks.SCREEN_STEPS`), those steps; 0 otherwise.
    """

    name: str
    num_outcomes: int
    guess: Callable[[Array, Any], Array]
    prepare: Callable[[AttackContext], tuple[Attack, Any]] | None = None
    impossible: tuple[tuple[int, int], ...] = ()
    events: tuple[str, ...] = ()
    selection: tuple[tuple[str, float], ...] = ()
    preparation: tuple[tuple[str, float], ...] = ()
    by_block: bool = False
    screened: tuple[str, ...] = ()
    screen_draws: int = 0
    screen_steps: int = 0

    def event_names(self) -> list[str]:
        """What each threshold ``outcome >= k``, k = 1 .. num_outcomes - 1, means
        (``events``, or ``"outcome >= k"`` where the attack does not say)."""
        if self.events:
            return list(self.events)
        return [f"outcome >= {k}" for k in range(1, self.num_outcomes)]


def bind(attack: Attack, context: AttackContext) -> tuple[Attack, Any]:
    """The attack to run on ``context`` and its ``aux``: ``attack.prepare(context)``,
    or ``(attack, None)`` for an attack that needs no preparation."""
    if attack.prepare is None:
        return attack, None
    return attack.prepare(context)
