r"""Host-side statistics: Clopper–Pearson intervals and the privacy-loss estimate.

For the sanity check (SPEC E2) with ``N`` draws per dataset, the counts form the
frequency matrix ``F[true, guess]``. Writing :math:`p = P[g = 1 \mid D]` and
:math:`p' = P[g = 1 \mid D']`, the privacy loss of the attack is

.. math:: L(p, p') = \max\bigl(|\ln p - \ln p'|,\ |\ln(1 - p) - \ln(1 - p')|\bigr),

and the MLE plugs in :math:`\hat p = F[D, 1]/N`, :math:`\hat p' = F[D', 1]/N`. Each
proportion gets an exact Clopper–Pearson interval at confidence
:math:`1 - \alpha/2` (Bonferroni over the two rows), so the rectangle holds
:math:`(p, p')` with probability at least :math:`1 - \alpha`, and the loss interval
is the range of :math:`L` over that rectangle: the maximum sits at a corner; the
minimum is 0 if the intervals overlap and otherwise sits at the two nearest ends.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import stats

NUM_ROWS = 2  # Bonferroni factor: one interval per dataset


class Estimate(NamedTuple):
    value: float
    lower: float
    upper: float
    confidence: float
    num_samples: int


def clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """Exact two-sided interval for a binomial proportion; ``k == 0`` gives lower 0
    and ``k == n`` upper 1 (handled by scipy's ``binomtest``)."""
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"Expected 0 <= k <= n and n >= 1, got k={k}, n={n}.")
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence, method="exact")
    return float(ci.low), float(ci.high)


def _log_gap(a: float, b: float) -> float:
    """``|ln a - ln b|`` with ``ln 0 = -inf``; two impossible events give 0."""
    if a == b:
        return 0.0
    if a == 0 or b == 0:
        return math.inf
    return abs(math.log(a) - math.log(b))


def loss_from_probabilities(p: float, p_prime: float) -> float:
    """:math:`L(p, p')` over both guesses (see the module docstring)."""
    return max(_log_gap(p, p_prime), _log_gap(1 - p, 1 - p_prime))


def loss_from_log_probabilities(
    log_p: tuple[float, float], log_q: tuple[float, float]
) -> float:
    """:math:`L` from ``(log P[g=1], log P[g=0])`` of each dataset, so that it stays
    exact where probabilities underflow."""
    gaps = []
    for a, b in zip(log_p, log_q, strict=True):
        if a == b:
            gaps.append(0.0)
        else:
            gaps.append(abs(a - b))  # inf if exactly one is -inf
    return max(gaps)


def loss_estimate(counts, confidence: float = 0.95) -> Estimate:
    """MLE privacy loss and its interval from the 2×2 frequency matrix.

    Args:
      counts: ``[[F[D,0], F[D,1]], [F[D',0], F[D',1]]]``, non-negative integers.
      confidence: joint confidence of the interval, in (0, 1).

    Returns:
      An :class:`Estimate`; ``value`` is ``inf`` when a needed cell is zero, while
      ``lower`` stays finite.
    """
    (d0, d1), (e0, e1) = ((int(a), int(b)) for a, b in counts)
    n, n_prime = d0 + d1, e0 + e1
    row_conf = 1 - (1 - confidence) / NUM_ROWS
    p_lo, p_hi = clopper_pearson(d1, n, row_conf)
    q_lo, q_hi = clopper_pearson(e1, n_prime, row_conf)
    value = loss_from_probabilities(d1 / n, e1 / n_prime)
    lower, upper = loss_range((p_lo, p_hi), (q_lo, q_hi))
    return Estimate(value, lower, upper, confidence, min(n, n_prime))


def loss_range(p_box: tuple[float, float], q_box: tuple[float, float]):
    """``(min, max)`` of :math:`L(p, p')` over the rectangle ``p_box × q_box``: the
    maximum sits at a corner; the minimum is 0 if the intervals overlap and otherwise
    sits at their two nearest ends."""
    (p_lo, p_hi), (q_lo, q_hi) = p_box, q_box
    upper = max(loss_from_probabilities(p, q) for p in p_box for q in q_box)
    if p_hi < q_lo:
        lower = loss_from_probabilities(p_hi, q_lo)
    elif q_hi < p_lo:
        lower = loss_from_probabilities(p_lo, q_hi)
    else:
        lower = 0.0
    return lower, upper


def binomial_se(p: float, n: int) -> float:
    """Standard error of a proportion estimated from ``n`` draws."""
    return float(np.sqrt(p * (1 - p) / n))
