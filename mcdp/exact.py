r"""Exact references: the test oracles and the figures' baselines.

Each comes from a field of the :class:`~mcdp.core.mechanism.Mechanism`, never from its
name: a mechanism that declares ``log_round_one`` gets the exact loss of the
majority vote (:func:`exact_e2`), one that declares ``exact_delta`` its exact
privacy profile (:func:`exact_delta`); the closed forms that the built-in mechanisms
declare (:func:`gaussian_delta`, :func:`laplace_delta`) live here too.

**The majority vote** (ACL 2022; README, "The estimate"). With independent output
coordinates, the number ``K`` of coordinates that round to 1
is Poisson-binomial with success probabilities :math:`q_i`, and the attack guesses 1
iff :math:`K > d/2`. For iid noise this is :math:`P[\mathrm{Bin}(d, q) > d/2]`.
Everything is computed in log space (a dynamic programme over coordinates with
``logaddexp``), so the result stays exact where the probabilities underflow double
precision, and the exact loss stays finite where it is finite.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import numpy as np
from scipy import stats

from mcdp.core.mechanism import Mechanism
from mcdp.statistics import loss_from_log_probabilities


class ExactE2(NamedTuple):
    """Exact probabilities of the guesses (in log space) and the exact loss."""

    log_p1: float  # log P[guess 1 | D]
    log_p0: float  # log P[guess 0 | D]
    log_q1: float  # log P[guess 1 | D']
    log_q0: float  # log P[guess 0 | D']
    loss: float

    @property
    def p1(self) -> float:
        return math.exp(self.log_p1)

    @property
    def q1(self) -> float:
        return math.exp(self.log_q1)


def log_majority(log_q: np.ndarray, log_1mq: np.ndarray) -> tuple[float, float]:
    """``(log P[K > d/2], log P[K <= d/2])`` for ``K`` = the number of successes of
    independent Bernoulli(:math:`q_i`) trials given in log space."""
    log_q = np.asarray(log_q, dtype=np.float64).ravel()
    log_1mq = np.asarray(log_1mq, dtype=np.float64).ravel()
    d = log_q.size
    log_pmf = np.full(d + 1, -np.inf)
    log_pmf[0] = 0.0
    for i in range(d):
        shifted = np.concatenate(([-np.inf], log_pmf[:-1] + log_q[i]))
        log_pmf = np.logaddexp(log_pmf + log_1mq[i], shifted)
    above = np.arange(d + 1) * 2 > d
    # rounding can push a log-probability of (almost) 1 a few ulps above 0
    return min(_logsumexp(log_pmf[above]), 0.0), min(_logsumexp(log_pmf[~above]), 0.0)


def _logsumexp(values: np.ndarray) -> float:
    top = np.max(values) if values.size else -np.inf
    if not np.isfinite(top):
        return float(top)
    return float(top + np.log(np.sum(np.exp(values - top))))


def exact_e2(mechanism: Mechanism, params: Any, dim: int) -> ExactE2 | None:
    """Exact guess probabilities and loss of the majority vote on ``0^d`` vs ``1^d``, or
    ``None`` if the mechanism has no closed form."""
    if mechanism.log_round_one is None:
        return None
    host_params = jax.tree.map(np.asarray, params)
    log_p1, log_p0 = log_majority(
        *mechanism.log_round_one(np.zeros((1, dim)), host_params)
    )
    log_q1, log_q0 = log_majority(
        *mechanism.log_round_one(np.ones((1, dim)), host_params)
    )
    loss = loss_from_log_probabilities((log_p1, log_p0), (log_q1, log_q0))
    return ExactE2(log_p1, log_p0, log_q1, log_q0, loss)


def gaussian_delta(epsilon: float, sigma: float, distance: float) -> float:
    r"""Exact privacy profile of the Gaussian mechanism (Balle & Wang 2018, Thm 8):
    :math:`\Phi(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta})
    - e^\varepsilon \Phi(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta})`,
    with :math:`\Delta = \lVert x - x'\rVert_2`; in log space for large epsilon."""
    if distance == 0:
        return 0.0
    a = distance / (2 * sigma)
    b = epsilon * sigma / distance
    first = stats.norm.cdf(a - b)
    second = math.exp(epsilon + stats.norm.logcdf(-a - b))
    return max(0.0, float(first - second))


def laplace_delta(epsilon: float, scale: float, distance: float) -> float:
    r"""Exact privacy profile of one-dimensional Laplace noise of scale :math:`b` for a
    shift :math:`\Delta`: :math:`\max(0, 1 - e^{(\varepsilon - \Delta/b)/2})`. It is
    the profile of a pair that differs in one coordinate."""
    return max(0.0, 1 - math.exp((epsilon - distance / scale) / 2))


def exact_delta(
    mechanism: Mechanism, params: Any, pair: np.ndarray, epsilon: float
) -> float | None:
    r"""The mechanism's exact :math:`\delta(\varepsilon)` on ``pair`` (shape ``(2,
    d)``, before the mechanism's ``transform``), from its ``exact_delta`` field;
    ``None`` where it declares none for this pair."""
    if mechanism.exact_delta is None:
        return None
    tx = mechanism.transformed(pair, params)
    return mechanism.exact_delta(jax.tree.map(np.asarray, params), tx, epsilon)


def exact_epsilon(mechanism: Mechanism, params: Any, pair: np.ndarray) -> float | None:
    """The mechanism's exact pure-epsilon loss on ``pair`` (shape ``(2, d)``, before
    its ``transform``), from its ``exact_epsilon`` field; ``None`` where it declares
    none for this pair."""
    if mechanism.exact_epsilon is None:
        return None
    tx = mechanism.transformed(pair, params)
    return mechanism.exact_epsilon(jax.tree.map(np.asarray, params), tx)
