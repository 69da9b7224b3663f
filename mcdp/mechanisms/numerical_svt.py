r"""Numerical Sparse Vector: the Sparse Vector Technique that releases numbers.

Wang, Ding, Wang, Kifer and Zhang, *Proving Differential Privacy with Shadow
Execution*, PLDI 2019, as DP-Sniper runs it (Bichsel et al., S&P 2021,
``NumericalSVT`` of ``dpsniper/mechanisms/sparse_vector_technique.py``, with
c = 2 and T = 1). The input is a vector of :math:`d` query answers of sensitivity
1 in every entry. One threshold noise :math:`\rho_1 \sim \mathrm{Lap}(3/\varepsilon)`
is drawn; query :math:`i` draws :math:`\rho_{2,i} \sim \mathrm{Lap}(6c/\varepsilon)`
and :math:`\rho_{3,i} \sim \mathrm{Lap}(3c/\varepsilon)`, and

* if :math:`x_i + \rho_{2,i} \ge T + \rho_1`, it outputs the fresh noisy answer
  :math:`x_i + \rho_{3,i}`;
* otherwise it outputs :data:`BELOW` (0.0);
* after :math:`c` answers above the threshold, the remaining queries output
  :data:`ABORTED` (-1000.0, DP-Sniper's code).

Outputs have the input's shape, ``(n, d)``. It is :math:`\varepsilon`-DP (a third
of the budget each for the threshold, the comparisons and the released answers).

The exact loss (:func:`numerical_svt_exact_epsilon`): given :math:`\rho_1` the
queries are independent, so the pattern of the output (above / below / aborted
per query) has the probability of Sparse Vector's Alg. 1 with these scales
(:func:`mcdp.mechanisms._svt_exact.single_threshold_log_probs`, quadrature over
:math:`\rho_1`), and the released answers are independent of the pattern: the
density of an output is the pattern's probability times
:math:`\prod_{p} f_{\rho_3}(v_p - x_p)` over the answers above. The log ratio of
each Laplace factor ranges over :math:`\pm |x_p - x'_p|/b_3` (reached when
:math:`v_p` lies beyond both inputs), so the loss is the largest of
:math:`\ln P[\text{pattern} \mid x] - \ln P[\text{pattern} \mid x'] \pm \sum_p
|x_p - x'_p| / b_3` over the patterns. At ε = 0.1, d = 10: 0.0588 on
``all-above-all-below`` (:math:`2^{10}` vs :math:`1^{10}`, DP-Sniper's pair), 0.0805
on ``half-half``, the worst of StatDP's patterns. The same log ratio of each
output is :func:`numerical_svt_privacy_loss` (in JAX, for the likelihood-ratio
attack).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from mcdp import _validate
from mcdp._types import Array, PRNGKey
from mcdp.core.domains import QUERY_ANSWERS
from mcdp.core.mechanism import Mechanism, NoiseApart
from mcdp.mechanisms import _svt_density, _svt_exact
from mcdp.mechanisms._base import standard_laplace
from mcdp.mechanisms._numerics import epsilon_of, loss_range

BELOW, ABORTED = 0.0, -1000.0
CUTOFF, THRESHOLD = 2, 1.0  # DP-Sniper's c and T


class NumericalSvtParams(NamedTuple):
    threshold_scale: Array | float  # rho_1 ~ Lap(3 / eps)
    query_scale: Array | float  # rho_2 ~ Lap(6 c / eps), per query
    answer_scale: Array | float  # rho_3 ~ Lap(3 c / eps), per released answer
    threshold: Array | float  # T
    cutoff: Array | int  # c: answers above the threshold before the abort


def numerical_svt_params(
    epsilon: float, cutoff: int = CUTOFF, threshold: float = THRESHOLD
) -> NumericalSvtParams:
    r"""Wang et al.'s scales at :math:`\varepsilon` with cutoff c and threshold T:
    :math:`3/\varepsilon`, :math:`6c/\varepsilon`, :math:`3c/\varepsilon`."""
    epsilon = _validate.positive("epsilon", epsilon)
    c = _validate.integer("cutoff", cutoff, low=1)
    return NumericalSvtParams(
        3 / epsilon, 6 * c / epsilon, 3 * c / epsilon, threshold, c
    )


def numerical_svt_sample(key: PRNGKey, x: Array, params: NumericalSvtParams) -> Array:
    r"""One output per row: :math:`x_i + \rho_{3,i}` for an answer above the noisy
    threshold, :data:`BELOW` for one below, :data:`ABORTED` after c answers above.

    True loss at ε = 0.1, d = 10 (c = 2, T = 1): 0.0588 on
    ``all-above-all-below``; at most 0.0805 on StatDP's patterns (``half-half``).
    """
    return _outputs(x, _noise(key, x, params), params)


def _noise(key: PRNGKey, x: Array, params: NumericalSvtParams) -> Array:
    """The standard Laplace draws of rho_1, the rho_2 and the rho_3: one call of the
    generator."""
    del params
    n, d = x.shape
    return standard_laplace(key, (n, 1 + 2 * d), x.dtype)


def _outputs(x: Array, noise: Array, params: NumericalSvtParams) -> Array:
    d = x.shape[1]
    dtype = x.dtype
    rho1 = jnp.asarray(params.threshold_scale, dtype) * noise[:, :1]
    rho2 = jnp.asarray(params.query_scale, dtype) * noise[:, 1 : 1 + d]
    rho3 = jnp.asarray(params.answer_scale, dtype) * noise[:, 1 + d :]
    above = x + rho2 >= jnp.asarray(params.threshold, dtype) + rho1
    hits = jnp.cumsum(above.astype(jnp.int32), axis=-1) - above.astype(jnp.int32)
    answered = hits < jnp.asarray(params.cutoff, jnp.int32)
    values = jnp.where(above, x + rho3, jnp.asarray(BELOW, dtype))
    return jnp.where(answered, values, jnp.asarray(ABORTED, dtype))


# the sampler in two parts (Mechanism.noise_apart); the scales go with the outputs,
# which are computed as in the sampler whole. A cheap guess of 4e6 draws per input
# counted in 1.99 s so on a CPU, against 10.7 s drawn in one program.
NUMERICAL_SVT_APART = NoiseApart(_noise, _outputs)


def pattern_log_probs(x: np.ndarray, params: NumericalSvtParams):
    """``(rows, log_probs)``: every pattern (1 above, 0 below, -1 aborted per
    query; :func:`mcdp.mechanisms._svt_exact.outputs`) and its log probability
    under the input ``x``; ``None`` past the enumeration's limit."""
    x = np.asarray(x, dtype=np.float64)
    rows = _svt_exact.outputs(x.size, int(params.cutoff))
    if rows is None:
        return None
    return rows, _svt_exact.single_threshold_log_probs(x, rows, params)


def numerical_svt_exact_epsilon(params: NumericalSvtParams, tx: np.ndarray):
    """The exact loss on the pair ``tx`` (the module's docstring); ``None`` past
    the enumeration's limit of outputs."""
    tx = np.asarray(tx, dtype=np.float64)
    first, second = pattern_log_probs(tx[0], params), pattern_log_probs(tx[1], params)
    if first is None or second is None:
        return None
    rows, log_p = first
    log_q = second[1]
    spread = np.abs(tx[0] - tx[1]) / float(params.answer_scale)
    answers = (rows == 1).astype(float) @ spread  # the answers' largest log ratio
    hi = loss_range(log_p + answers, log_q)[1]
    lo = loss_range(log_p - answers, log_q)[0]
    return epsilon_of(lo, hi)


def numerical_svt_privacy_loss(y: Array, tx: Array, tx_prime: Array, params):
    r""":math:`\ln p(y \mid x) - \ln p(y \mid x')` of outputs ``y``, shape ``(n,
    d)``: the pattern's log ratio (:func:`mcdp.mechanisms._svt_density.
    pattern_log_probs`) plus the released answers' Laplace log ratios. Up to
    :data:`~mcdp.mechanisms._svt_density.TABLE_QUERIES` queries, each output's
    pattern terms are read from those of every pattern
    (:func:`~mcdp.mechanisms._svt_density.tabled_pattern_log_probs`)."""
    dtype = y.dtype
    below = y == BELOW
    aborted = y == ABORTED
    above = ~below & ~aborted
    quad = _svt_density.Quadrature(tx, tx_prime, params, dtype)
    answers = _svt_density.laplace_answers_log_ratio(
        y, above, jnp.asarray(tx, dtype), jnp.asarray(tx_prime, dtype),
        jnp.asarray(params.answer_scale, dtype),
    )  # fmt: skip
    first, second = (
        _svt_density.tabled_pattern_log_probs(above, below, aborted, v, quad)
        for v in (tx, tx_prime)
    )
    return answers + first - second


NUMERICAL_SVT = Mechanism(
    name="numerical-svt",
    sample=numerical_svt_sample,
    claim="epsilon-DP",
    calibrate=lambda epsilon, delta, dim, clip: numerical_svt_params(epsilon),
    privacy_loss=numerical_svt_privacy_loss,
    exact_epsilon=numerical_svt_exact_epsilon,
    domain=QUERY_ANSWERS,
    pathwise=False,  # the comparisons give the outputs a discrete part
    # by block, as when each output was integrated (1.5x faster then); with the
    # patterns tabled both forms counted 1e7 draws per input in 4.4-4.8 s
    loss_by_block=True,
    noise_apart=NUMERICAL_SVT_APART,
    # its cutoff counts each output's answers above along its queries: counted
    # 1.06-1.13x as fast one block after another on a CPU, for every guess measured
    # (float-support, learned, learned-bits; benchmarks/bench_guess.py)
    draws_by_block=True,
)
