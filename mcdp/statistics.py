r"""Host-side statistics: Clopper–Pearson intervals (one implementation), the
privacy-loss estimate, the (epsilon, delta) bounds of an attack's events, and the
draws a target width needs.

**The sanity check** (ACL 2022; README, "The estimate"). With ``N`` draws per
dataset, the counts form the frequency matrix ``F[true, guess]``. Writing
:math:`p = P[g = 1 \mid D]` and :math:`p' = P[g = 1 \mid D']`, the privacy loss of the
attack is

.. math:: L(p, p') = \max\bigl(|\ln p - \ln p'|,\ |\ln(1 - p) - \ln(1 - p')|\bigr),

and the MLE plugs in :math:`\hat p = F[D, 1]/N`, :math:`\hat p' = F[D', 1]/N`. Each
proportion gets an exact Clopper–Pearson interval at confidence
:math:`1 - \alpha/2` (Bonferroni over the two rows), so the rectangle holds
:math:`(p, p')` with probability at least :math:`1 - \alpha`, and the loss interval
is the range of :math:`L` over that rectangle: the maximum sits at a corner; the
minimum is 0 if the intervals overlap and otherwise sits at the two nearest ends.

The same machinery predicts, before or during a run, how many draws give an interval
of a wanted width: :func:`expected_width` is the width that ``n`` draws would give if
the counts came out at their expectations ``n p`` and ``n p'`` (the Clopper–Pearson
ends are beta quantiles, defined for real counts too), and :func:`draws_for_width`
searches the smallest such ``n``.

**(epsilon, delta) bounds** (:func:`delta_bounds`). For neighbouring inputs
:math:`x, x'` and any event :math:`S`, (epsilon, delta)-DP requires
:math:`P[M(x) \in S] - e^\varepsilon P[M(x') \in S] \le \delta`, in both orders.
An attack's outcomes are ordered; its events are the upper sets :math:`\{o \ge k\}`
and the lower sets :math:`\{o < k\}`, :math:`k = 1, \dots, K`. Each
:math:`P_a[o \ge k]` (for :math:`a = x, x'`) gets a two-sided Clopper–Pearson
interval at confidence :math:`1 - \alpha/(2K)`; all :math:`2K` intervals hold at once
with probability :math:`\ge 1 - \alpha` (Bonferroni), so

.. math:: \delta_{\mathrm{lower}}(\varepsilon) = \max\Bigl(0, \max_{S, \text{order}}
   P_{\mathrm{lo}}[M(x) \in S] - e^\varepsilon P_{\mathrm{hi}}[M(x') \in S]\Bigr)

is a lower confidence bound on the smallest delta consistent with (epsilon,
delta)-DP, simultaneously for every epsilon (the privacy profile). The events must
be fixed before the counted draws; then no correction beyond Bonferroni is needed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import special, stats

NUM_ROWS = 2  # Bonferroni factor: one interval per dataset
# The largest number of draws per dataset that the predictors consider: 1024 times
# the engine's limit, and below 1/eps of float64, where 1 - p loses all precision.
SEARCH_LIMIT = 1 << 50


class Estimate(NamedTuple):
    value: float
    lower: float
    upper: float
    confidence: float
    num_samples: int


def clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    r"""Exact two-sided interval for a binomial proportion.

    The ends are the beta quantiles :math:`B^{-1}(\alpha/2;\ k,\ n - k + 1)` and
    :math:`B^{-1}(1 - \alpha/2;\ k + 1,\ n - k)`, with ``k == 0`` giving lower 0 and
    ``k == n`` upper 1. They are computed directly (scipy's ``betaincinv``), which
    keeps their relative precision for proportions far below 1e-9, where a root
    search with an absolute tolerance (scipy's ``binomtest``) does not.

    Args:
      k: successes, ``0 <= k <= n``.
      n: trials, ``n >= 1``.
      confidence: the interval's confidence, in (0, 1).

    Returns:
      ``(lower, upper)``.
    """
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"Expected 0 <= k <= n and n >= 1, got k={k}, n={n}.")
    return _beta_interval(float(k), float(n), confidence)


def _beta_interval(k: float, n: float, confidence: float) -> tuple[float, float]:
    """The Clopper–Pearson ends for a real count ``0 <= k <= n`` (an expected count
    ``n p`` in the predictors)."""
    lower, upper = clopper_pearson_arrays(k, n, confidence)
    return float(lower), float(upper)


def clopper_pearson_arrays(k, n, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`clopper_pearson` elementwise over arrays of counts ``k`` and trials
    ``n`` (broadcast against each other; real counts allowed), unchecked."""
    return _clopper_pearson_ends(k, n, 1 - confidence)


def _clopper_pearson_ends(k, n, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The one implementation of the interval's ends, at error ``alpha`` (split
    evenly between the two sides)."""
    k, n = np.broadcast_arrays(np.asarray(k, np.float64), np.asarray(n, np.float64))
    low_k = np.where(k <= 0, 1.0, k)  # stand-ins where the end is fixed, no warnings
    high_k = np.where(k >= n, n - 1.0, k)
    lower = np.where(k <= 0, 0.0, special.betaincinv(low_k, n - low_k + 1, alpha / 2))
    upper = np.where(
        k >= n, 1.0, special.betaincinv(high_k + 1, n - high_k, 1 - alpha / 2)
    )
    return lower, upper


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


# --- how many draws a target width needs --------------------------------------


def expected_width(p: float, p_prime: float, n: int, confidence: float = 0.95) -> float:
    r"""Width of the loss interval that ``n`` draws per dataset give when the counts of
    guess 1 are their expectations ``n p`` and ``n p'``.

    For integer ``n p`` and ``n p'`` this is exactly ``upper - lower`` of
    :func:`loss_estimate` on those counts.

    Args:
      p: :math:`P[g = 1 \mid D]`, in [0, 1].
      p_prime: :math:`P[g = 1 \mid D']`, in [0, 1].
      n: draws per dataset, ``n >= 1``.
      confidence: joint confidence of the interval.

    Returns:
      ``upper - lower``; ``inf`` where the upper end is infinite (a probability of
      exactly 0 or 1 in a row whose other row differs).
    """
    row_conf = 1 - (1 - confidence) / NUM_ROWS
    lower, upper = loss_range(
        _beta_interval(n * p, n, row_conf), _beta_interval(n * p_prime, n, row_conf)
    )
    return math.inf if math.isinf(upper) else upper - lower


def draws_for_width(
    p: float,
    p_prime: float,
    target_width: float,
    confidence: float = 0.95,
    *,
    step: int = 1,
    limit: int = SEARCH_LIMIT,
) -> int | float:
    r"""The fewest draws per dataset, a multiple of ``step``, whose
    :func:`expected_width` is at most ``target_width``.

    The search doubles ``n`` until the width is small enough, then bisects; the
    width shrinks as ``n`` grows, so the answer is the smallest such multiple of
    ``step`` up to the search's rounding of the width.

    Args:
      p: :math:`P[g = 1 \mid D]`, in [0, 1] (exact, or estimated from counts).
      p_prime: :math:`P[g = 1 \mid D']`, in [0, 1].
      target_width: the wanted width of the loss interval, > 0.
      confidence: joint confidence of the interval.
      step: ``n`` is a multiple of ``step`` (mcdp's runs use whole blocks of
        :data:`mcdp.sampling.BLOCK_DRAWS`).
      limit: the largest ``n`` considered.

    Returns:
      The number of draws per dataset, or ``inf`` if no ``n <= limit`` reaches the
      target (always the case where the loss is infinite: its upper end stays
      infinite for every ``n``).
    """
    for name, value in (("p", p), ("p_prime", p_prime)):
        if not 0 <= value <= 1:
            raise ValueError(f"Expected {name} in [0, 1], got {value!r}.")
    if not target_width > 0:
        raise ValueError(f"Expected target_width > 0, got {target_width!r}.")
    top = limit // step  # the largest multiple considered

    def reaches(m: int) -> bool:
        return expected_width(p, p_prime, m * step, confidence) <= target_width

    low, high = 0, 1  # reaches(low) is false (or low == 0), reaches(high) is tested
    while not reaches(high):
        if high >= top:
            return math.inf
        low, high = high, min(2 * high, top)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if reaches(mid) else (mid, high)
    return high * step


class DrawsNeeded(NamedTuple):
    """What :func:`draws_needed` predicts from counts."""

    draws: int | float  # draws per dataset for the target width; inf if none found
    p: float  # the P[g = 1 | D] used
    p_prime: float  # the P[g = 1 | D'] used
    lower_bound: bool  # a zero cell was replaced by its bound: draws is a lower bound


def draws_needed(
    counts,
    target_width: float,
    confidence: float = 0.95,
    *,
    step: int = 1,
    limit: int = SEARCH_LIMIT,
) -> DrawsNeeded:
    r"""Predicts the draws per dataset that give a loss interval at most
    ``target_width`` wide, from the counts so far.

    Each row's proportion of guess 1 stands for its probability. Where a row has a
    zero cell (never guess 1, or never guess 0), its proportion 0 or 1 would make the
    width infinite for every ``n``; it is replaced by the nearer end of the row's
    Clopper–Pearson interval (at :math:`1 - \alpha/2`, as in :func:`loss_estimate`).
    The true probability of the empty cell is below that end at that confidence, and
    rarer cells need more draws, so the prediction is then a lower bound.

    Args:
      counts: ``[[F[D,0], F[D,1]], [F[D',0], F[D',1]]]``, each row with at least one
        draw.
      target_width: the wanted width of the loss interval, > 0.
      confidence: joint confidence of the interval.
      step: the prediction is a multiple of ``step``.
      limit: the largest number of draws considered.

    Returns:
      A :class:`DrawsNeeded`; ``draws`` counts from the start (not on top of the
      draws already done).
    """
    row_conf = 1 - (1 - confidence) / NUM_ROWS
    probabilities = []
    lower_bound = False
    for zeros, ones in ((int(a), int(b)) for a, b in counts):
        n = zeros + ones
        p_lo, p_hi = clopper_pearson(ones, n, row_conf)
        if ones == 0:
            probabilities.append(p_hi)
        elif zeros == 0:
            probabilities.append(p_lo)
        else:
            probabilities.append(ones / n)
        lower_bound |= ones == 0 or zeros == 0
    p, p_prime = probabilities
    draws = draws_for_width(
        p, p_prime, target_width, confidence, step=step, limit=limit
    )
    return DrawsNeeded(draws, p, p_prime, lower_bound)


# --- (epsilon, delta) bounds of an attack's events ----------------------------------


@dataclasses.dataclass(frozen=True)
class DeltaBounds:
    r"""Simultaneous intervals for :math:`P_a[o \ge k]` and the delta they imply."""

    counts: np.ndarray  # (2, num_outcomes)
    lower: np.ndarray  # (2, K) CP lower bounds of P[o >= k], k = 1..K
    upper: np.ndarray  # (2, K)
    rate: np.ndarray  # (2, K) point estimates
    confidence: float

    def delta(self, epsilon: float) -> tuple[float, float, float]:
        r"""``(estimate, lower, upper)`` of the attack's delta at ``epsilon``: the
        largest :math:`P[M(x) \in S] - e^\varepsilon P[M(x') \in S]` over its events
        and both orders. ``lower`` and ``upper`` hold together with the stated
        confidence; the lower bound is the verdict. The estimate plugs in the
        observed rates; where :math:`e^\varepsilon` is large against the number of
        draws, unobserved events make it biased upward."""
        return (
            _delta(self.rate, self.rate, epsilon),
            _delta(self.lower, self.upper, epsilon),
            _delta(self.upper, self.lower, epsilon),
        )

    def loss(self) -> tuple[float, float, float]:
        r"""``(estimate, lower, upper)`` of the attack's privacy loss: the log ratio
        of an event's probabilities under the two inputs, maximised over the events
        (for a two-outcome attack, the loss of the sanity check), on the same
        simultaneous intervals."""
        value, lower, upper = 0.0, 0.0, 0.0
        for k in range(self.rate.shape[1]):
            box_x = (self.lower[0, k], self.upper[0, k])
            box_x_prime = (self.lower[1, k], self.upper[1, k])
            low, high = loss_range(box_x, box_x_prime)
            rate = loss_from_probabilities(self.rate[0, k], self.rate[1, k])
            value, lower, upper = max(value, rate), max(lower, low), max(upper, high)
        return value, lower, upper

    def tradeoff(self) -> list[tuple[float, float]]:
        r"""Simultaneous upper confidence points :math:`(\alpha^+, \beta^+)` of the
        tests that the events define.

        An event :math:`S` read as "reject :math:`x'`" has false-positive rate
        :math:`\alpha = P[M(x') \in S]` and false-negative rate
        :math:`\beta = 1 - P[M(x) \in S]`; every upper set, lower set and order of
        the pair gives one test. The mechanism's trade-off curve :math:`T` is
        decreasing and :math:`T(\alpha) \le \beta`, so
        :math:`T(\alpha^+) \le \beta^+` for every point at once, at the stated
        confidence: a claimed curve :math:`f` with :math:`f(\alpha^+) > \beta^+`
        at any point is refuted.
        """
        points = []
        for k in range(self.rate.shape[1]):
            upper_set = (self.lower[:, k], self.upper[:, k])  # P[o >= k] per input
            lower_set = (1 - self.upper[:, k], 1 - self.lower[:, k])  # P[o < k]
            for low, high in (upper_set, lower_set):
                for first, second in ((0, 1), (1, 0)):  # S speaks for `first`
                    alpha = float(min(1.0, high[second]))
                    beta = float(min(1.0, max(0.0, 1 - low[first])))
                    points.append((alpha, beta))
        return sorted(set(points))


def gaussian_dp_mu_lower(points) -> float:
    r"""The largest Gaussian-DP :math:`\mu` that trade-off points refute: a claim of
    :math:`\mu`-GDP, :math:`f(\alpha) = \Phi(\Phi^{-1}(1 - \alpha) - \mu)`, fails
    where :math:`f(\alpha^+) > \beta^+`, i.e. for every :math:`\mu <
    \Phi^{-1}(1 - \alpha^+) - \Phi^{-1}(\beta^+)`; 0 where no point refutes any."""
    best = 0.0
    for alpha, beta in points:
        if alpha < 1 and beta < 1:  # a trivial test refutes nothing
            best = max(best, float(stats.norm.isf(alpha) - stats.norm.ppf(beta)))
    return best


def _delta(low: np.ndarray, high: np.ndarray, epsilon: float) -> float:
    factor = math.exp(epsilon)
    (lx, lxp), (hx, hxp) = low, high
    candidates = [
        lx - factor * hxp,  # S = {o >= k}, order (x, x')
        lxp - factor * hx,  # S = {o >= k}, order (x', x)
        (1 - hx) - factor * (1 - lxp),  # S = {o < k}, order (x, x')
        (1 - hxp) - factor * (1 - lx),  # S = {o < k}, order (x', x)
    ]
    return float(max(0.0, max(np.max(c) for c in candidates)))


def delta_bounds(
    counts, confidence: float = 0.95, *, impossible: Sequence[tuple[int, int]] = ()
) -> DeltaBounds:
    """Clopper–Pearson intervals for every upper set of both inputs' outcome counts,
    Bonferroni-corrected over the ``2K`` intervals.

    ``impossible`` lists ``(input, outcome)`` cells that the mechanism's declared
    support makes impossible (the support test: an output outside ``x' + [-A, A]^d``
    cannot come from ``x'``). Where such a cell was indeed never observed, its
    probability is 0 exactly rather than bounded by Clopper–Pearson; a nonzero count
    there (an implementation outside its declared support) keeps the empirical bound.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 2 or counts.shape[0] != 2 or counts.shape[1] < 2:
        raise ValueError(
            f"Expected counts of shape (2, K + 1) with K >= 1, got {counts.shape}."
        )
    n = counts.sum(axis=1)
    k_max = counts.shape[1] - 1
    alpha = (1 - confidence) / (2 * k_max)  # per two-sided interval: Bonferroni
    tail = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1][:, 1:]  # P[o >= k] counts
    lower, upper = _clopper_pearson_ends(tail, n[:, None], alpha)
    for row, outcome in impossible:
        if counts[row, outcome] != 0:
            continue
        if outcome == k_max:  # the top outcome: P[o >= K] = 0
            upper[row, k_max - 1] = 0.0
        elif outcome == 0:  # the bottom outcome: P[o >= 1] = 1
            lower[row, 0] = 1.0
    return DeltaBounds(counts, lower, upper, tail / n[:, None], confidence)
