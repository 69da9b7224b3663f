r"""The Sparse Vector variants of Lyu, Su and Li, and two of them side by side.

Lyu, Su and Li, *Understanding the Sparse Vector Technique for Differential
Privacy*, VLDB 2017, Alg. 1–6, with the parameters of DP-Sniper's evaluation
(Bichsel et al., S&P 2021, ``dpsniper/mechanisms/sparse_vector_technique.py`` and
``dpsniper/experiments/exp_default.py``); StatDP (Ding et al., CCS 2018) tests the
same family. The input is a vector of :math:`d` query answers of sensitivity 1 in
every entry; a noisy threshold :math:`T + \rho` is compared with each noisy answer
:math:`x_i + \nu_i`, and after the ``cutoff``-th answer above it (:math:`c`) the
remaining queries are not answered. With :math:`\varepsilon_1` the threshold's
share and :math:`\varepsilon_2 = \varepsilon - \varepsilon_1`:

========== ================================ ======================== ===== =========
name       threshold noise :math:`\rho`      query noise :math:`\nu_i` c, T  stated
========== ================================ ======================== ===== =========
``svt1``   Lap(1/ε₁), ε₁ = ε/2               Lap(2c/ε₂)               1, ½  ε
``svt2``   Lap(c/ε₁), fresh after each ⊤     Lap(2c/ε₂)               1, 1  ε
``svt3``   Lap(1/ε₁)                         Lap(c/ε₂), outputs value 1, 1  ∞
``svt4``   Lap(1/ε₁), ε₁ = ε/4               Lap(1/ε₂)                1, 1  (1+6c)ε/4
``svt5``   Lap(1/ε₁)                         none, no cutoff          –, 1  ∞
``svt6``   Lap(1/ε₁)                         Lap(1/ε₂), no cutoff     –, 1  ∞
========== ================================ ======================== ===== =========

"Stated" is Lyu et al.'s privacy of each algorithm that claims ε (Table 1; ∞: no
finite ε for every number of queries; on a fixed pair of length 10 the loss is
finite unless the supports differ). Outputs, one float per query, shape
``(n, d)``: :data:`TRUE` (1.0), :data:`FALSE` (0.0) or :data:`ABORTED` (-1.0);
``svt3`` outputs the noisy answer :math:`x_i + \nu_i` for ⊤ and DP-Sniper's codes
:data:`SVT3_FALSE` (-1000.0) and :data:`SVT3_ABORTED` (-2000.0) otherwise (values
that a noisy answer takes with probability 0). ``svt34-parallel`` runs ``svt3``
and ``svt4`` on independent noise (DP-Sniper's ``SVT34Parallel``: c = 2, T = 1,
both at the full ε) and concatenates their outputs, shape ``(n, 2d)``.

The exact losses (:mod:`mcdp.mechanisms._svt_exact`) enumerate the outputs and
integrate over the threshold noise. ``svt1``, ``svt3``, ``svt4``, ``svt6`` and
``svt34-parallel`` also have the exact privacy loss of each output (``privacy_loss``;
the same integrals in JAX, :mod:`mcdp.mechanisms._svt_density`), which the
likelihood-ratio attack scores. ``svt2`` has none: its threshold is drawn afresh
after each answer above, so a pattern's law is a product over the runs between
them, one integral each. Nor has ``svt5``: without query noise, each factor of the
integrand is a step.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mcdp import _validate
from mcdp._types import Array, PRNGKey
from mcdp.core.domains import QUERY_ANSWERS
from mcdp.core.mechanism import Mechanism, NoiseApart
from mcdp.mechanisms import _svt_density, _svt_exact
from mcdp.mechanisms._base import (
    centred_uniform,
    laplace_of_centred,
    standard_laplace,
)

TRUE, FALSE, ABORTED = 1.0, 0.0, -1.0
# Subkeys by purpose come from fold_in: in JAX 0.10.2, jax.random.split of a
# threefry4x32 key (mcdp's default stream) does not finish under vmap, as in the
# engine, while fold_in does.
THRESHOLD_KEY, QUERY_KEY = 0, 1  # fold_in tags of svt_noise's two draws
SVT3_KEY, SVT4_KEY = 0, 1  # fold_in tags of svt34-parallel's two runs
SVT3_FALSE, SVT3_ABORTED = -1000.0, -2000.0


class SvtParams(NamedTuple):
    threshold_scale: Array | float  # the scale of rho
    query_scale: Array | float  # the scale of every nu_i (0: no query noise)
    threshold: Array | float  # T
    cutoff: Array | int  # c: answers above the threshold before the abort


class NoCutoffSvtParams(NamedTuple):
    """``svt5`` and ``svt6`` answer every query: no cutoff."""

    threshold_scale: Array | float
    query_scale: Array | float
    threshold: Array | float


class Svt34Params(NamedTuple):
    svt3: SvtParams
    svt4: SvtParams


# DP-Sniper's (c, T) per variant (exp_default.py); svt5, svt6 have no cutoff
DEFAULTS = {
    "svt1": (1, 0.5),
    "svt2": (1, 1.0),
    "svt3": (1, 1.0),
    "svt4": (1, 1.0),
    "svt5": (None, 1.0),
    "svt6": (None, 1.0),
    "svt34-parallel": (2, 1.0),
}


def svt_params(
    variant: str, epsilon: float, cutoff: int | None = 1, threshold: float = 1.0
) -> SvtParams | NoCutoffSvtParams:
    r"""The noise scales of Alg. ``variant`` (``"svt1"`` ... ``"svt6"``) at
    :math:`\varepsilon`, as Lyu et al. (and DP-Sniper) calibrate them, with the
    cutoff c (ignored by ``svt5`` and ``svt6``) and the threshold T."""
    _validate.one_of("variant", variant, [f"svt{i}" for i in range(1, 7)])
    epsilon = _validate.positive("epsilon", epsilon)
    half = epsilon / 2
    if variant in ("svt5", "svt6"):
        query = 0.0 if variant == "svt5" else 1 / half
        return NoCutoffSvtParams(1 / half, query, threshold)
    c = _validate.integer("cutoff", cutoff, low=1)
    scales = {
        "svt1": (1 / half, 2 * c / half),
        "svt2": (c / half, 2 * c / half),
        "svt3": (1 / half, c / half),
        "svt4": (4 / epsilon, 1 / (epsilon - epsilon / 4)),
    }[variant]
    return SvtParams(*scales, threshold, c)


def _calibration(variant: str):
    cutoff, threshold = DEFAULTS[variant]

    def calibrate(epsilon, delta, dim, clip):
        del delta, dim, clip
        if variant == "svt34-parallel":
            return Svt34Params(
                svt_params("svt3", epsilon, cutoff, threshold),
                svt_params("svt4", epsilon, cutoff, threshold),
            )
        return svt_params(variant, epsilon, cutoff, threshold)

    return calibrate


def svt_noise(
    key: PRNGKey, x: Array, params, *, fresh: bool = False, query_noise: bool = True
) -> tuple[Array, Array]:
    r"""``(rho, nu)`` from one key, with a subkey per purpose: the threshold
    noise, shape ``(n, 1)``, or ``(n, d)`` where it is drawn afresh after each
    answer above (``fresh``; column 0 is the first draw, column i + 1 the one that
    replaces it after an answer above at query i), and the query noise, shape
    ``(n, d)`` (zeros without ``query_noise``). The noise of every variant's
    sampler; ``svt2``'s draws the same threshold draws as uniforms and makes only
    those it reads noise (:func:`svt2_noise`), the same numbers."""
    standard = svt_standard_noise(key, x, fresh=fresh, query_noise=query_noise)
    return _scaled(x, standard, params)


def svt_standard_noise(
    key: PRNGKey, x: Array, *, fresh: bool = False, query_noise: bool = True
) -> tuple[Array, Array | None]:
    """The standard Laplace draws that :func:`svt_noise` scales (``None`` for the
    queries' without ``query_noise``)."""
    key_rho = jax.random.fold_in(key, THRESHOLD_KEY)
    key_nu = jax.random.fold_in(key, QUERY_KEY)
    n, d = x.shape
    rho = standard_laplace(key_rho, (n, d if fresh else 1), x.dtype)
    if not query_noise:
        return rho, None
    return rho, standard_laplace(key_nu, x.shape, x.dtype)


def _scaled(x: Array, standard: tuple[Array, Array | None], params):
    dtype = x.dtype
    rho = jnp.asarray(params.threshold_scale, dtype) * standard[0]
    if standard[1] is None:
        return rho, jnp.zeros_like(x)
    return rho, jnp.asarray(params.query_scale, dtype) * standard[1]


def _cut(above: Array, cutoff: Array) -> Array:
    """Whether each query is answered: fewer than ``cutoff`` answers above before."""
    hits = jnp.cumsum(above.astype(jnp.int32), axis=-1)
    before = hits - above.astype(jnp.int32)
    return before < jnp.asarray(cutoff, jnp.int32)


def _above(x: Array, rho: Array, nu: Array, params) -> Array:
    threshold = jnp.asarray(params.threshold, x.dtype)
    return x + nu >= threshold + rho[:, :1]


def svt_from_noise(x: Array, rho: Array, nu: Array, params: SvtParams) -> Array:
    """Alg. 1 and 4 (one threshold draw, cutoff): TRUE / FALSE / ABORTED."""
    above = _above(x, rho, nu, params)
    flags = above.astype(x.dtype)
    return jnp.where(_cut(above, params.cutoff), flags, jnp.asarray(ABORTED, x.dtype))


def svt2_from_noise(x: Array, centred: Array, nu: Array, params: SvtParams) -> Array:
    r"""Alg. 2: the threshold noise is drawn afresh after each answer above (after
    one at query i, DP-Sniper's draw for query i: column i + 1 of the threshold
    draws). ``centred``: those draws' uniforms, ``(n, d)``, before the Laplace
    inverse CDF (:func:`svt2_noise`); ``nu``: the query noise, scaled.

    Computed run by run: each pass of a loop compares the queries from the current
    run's start with the current threshold at once, finds the run's first answer
    above, writes the run's outputs up to it and takes the next threshold draw;
    after c passes (the cutoff) the queries left stay :data:`ABORTED`. The
    comparisons are those of Lyu et al.'s query-by-query loop, and so are the
    outputs, bit for bit (``tests/test_mechanisms_suite.py``).

    A threshold draw becomes Laplace noise (its ``log``, then its scale) only where
    a pass reads it: the first before the loop, the next one per row in each pass,
    where all d of them were made noise before (at the suite's c = 1, one of the d
    is read). The same numbers: each is the same function of its uniform, and its
    product with the scale reaches the comparison rounded, from the loop's state,
    as it did from the noise drawn whole. The loop alone reads the query noise and
    the threshold draws after the first. A scan over the queries, or a first pass
    outside the loop, counted at twice the time in the engine on a CPU; their
    programs read the noise in more fusions, each of which recomputed its Threefry
    bits (``benchmarks/RESULTS.md``, "Sparse Vector's Alg. 2 run by run").
    """
    d = x.shape[1]
    threshold = jnp.asarray(params.threshold, x.dtype)
    scale = jnp.asarray(params.threshold_scale, x.dtype)
    query = jnp.arange(d, dtype=jnp.int32)[None, :]

    def run(_, state):
        out, start, current = state
        above = x + nu >= threshold + current[:, None]
        live = query >= start[:, None]
        first = jnp.min(jnp.where(above & live, query, d), axis=1)  # d: none
        out = jnp.where(live & (query <= first[:, None]), above.astype(x.dtype), out)
        # the draw after an answer at `first`; none is read after the last query
        after = jnp.minimum(first + 1, d - 1)[:, None]
        drawn = jnp.take_along_axis(centred, after, axis=1)[:, 0]
        return out, first + 1, scale * laplace_of_centred(drawn)

    # a carry from the noise's shape (full_like, zeros_like) varies across devices
    # as the noise does inside the engine's shard_map, without reading it
    first_run = (
        jnp.full_like(nu, ABORTED),
        jnp.zeros_like(centred[:, 0], dtype=jnp.int32),
        scale * laplace_of_centred(centred[:, 0]),
    )
    runs = jnp.minimum(jnp.asarray(params.cutoff, jnp.int32), d)
    return jax.lax.fori_loop(0, runs, run, first_run)[0]


def svt2_noise(key: PRNGKey, x: Array) -> tuple[Array, Array]:
    """``svt2``'s draws: the threshold draws' centred uniforms, ``(n, d)``
    (:func:`~mcdp.mechanisms._base.laplace_of_centred` of them is
    :func:`svt_standard_noise`'s ``rho`` with ``fresh``, to the bit), and the
    standard query noise."""
    key_rho = jax.random.fold_in(key, THRESHOLD_KEY)
    key_nu = jax.random.fold_in(key, QUERY_KEY)
    return (
        centred_uniform(key_rho, x.shape, x.dtype),
        standard_laplace(key_nu, x.shape, x.dtype),
    )


def _svt2_noise_apart(key: PRNGKey, x: Array, params: SvtParams):
    """:func:`svt2_noise`, the noise of ``svt2``'s sampler in two parts."""
    del params
    return svt2_noise(key, x)


def _svt2_outputs(x: Array, noise: tuple[Array, Array], params: SvtParams) -> Array:
    """``svt2``'s outputs of :func:`svt2_noise`'s draws; the query noise's scale
    goes with them, as in :func:`_apart`."""
    centred, nu = noise
    return svt2_from_noise(
        x, centred, jnp.asarray(params.query_scale, x.dtype) * nu, params
    )


def svt3_from_noise(x: Array, rho: Array, nu: Array, params: SvtParams) -> Array:
    """Alg. 3: the noisy answer for TRUE, SVT3_FALSE / SVT3_ABORTED otherwise."""
    above = _above(x, rho, nu, params)
    values = jnp.where(above, x + nu, jnp.asarray(SVT3_FALSE, x.dtype))
    return jnp.where(
        _cut(above, params.cutoff), values, jnp.asarray(SVT3_ABORTED, x.dtype)
    )


def no_cutoff_from_noise(x, rho, nu, params: NoCutoffSvtParams) -> Array:
    """Alg. 5 and 6: every query answered TRUE or FALSE."""
    return _above(x, rho, nu, params).astype(x.dtype)


def _sampler(from_noise, note: str, **noise_options):
    def sample(key: PRNGKey, x: Array, params) -> Array:
        return from_noise(x, *svt_noise(key, x, params, **noise_options), params)

    sample.__doc__ = f"One draw per row of ``x``: {from_noise.__doc__}\n\n    {note}"
    return sample


def _apart(from_noise) -> NoiseApart:
    """The sampler of :func:`_sampler` in two parts: the standard Laplace draws
    (:func:`svt_standard_noise`), and ``from_noise`` on them scaled. The scaling
    goes with the outputs, so that they are computed as in the sampler whole, to
    the bit (on a CPU, XLA fuses a product into the sum that reads it)."""

    def noise(key: PRNGKey, x: Array, params) -> tuple[Array, Array]:
        del params
        return svt_standard_noise(key, x)

    def outputs(x: Array, noise: tuple[Array, Array], params) -> Array:
        return from_noise(x, *_scaled(x, noise, params), params)

    return NoiseApart(noise, outputs)


svt1_sample = _sampler(
    svt_from_noise,
    "True loss on the patterns at ε = 0.1, d = 10: at most 0.0885 (``half-half``).",
)


def svt2_sample(key: PRNGKey, x: Array, params: SvtParams) -> Array:
    """One draw per row of ``x``: Alg. 2 (:func:`svt2_from_noise`) on
    :func:`svt2_noise`.

    True loss on the patterns at ε = 0.1, d = 10: at most 0.0882 (``half-half``).
    """
    return _svt2_outputs(x, svt2_noise(key, x), params)


svt3_sample = _sampler(
    svt3_from_noise,
    "True loss on the patterns at ε = 0.1, d = 10: up to 0.5 "
    "(``all-above-all-below``, ``all-below``).",
)
svt4_sample = _sampler(
    svt_from_noise,
    "True loss on the patterns at ε = 0.1, d = 10: up to 0.1725 (``half-half``), "
    "below Lyu et al.'s bound 0.175.",
)
svt5_sample = _sampler(
    no_cutoff_from_noise,
    "True loss on the patterns at ε = 0.1, d = 10: infinite, except 0.05 on the "
    "constant ones (``all-above-all-below``, ``all-below``).",
    query_noise=False,
)
svt6_sample = _sampler(
    no_cutoff_from_noise,
    "True loss on the patterns at ε = 0.1, d = 10: up to 0.4200 (``half-half``).",
)


def svt34_sample(key: PRNGKey, x: Array, params: Svt34Params) -> Array:
    """``svt3`` and ``svt4`` on independent keys, outputs side by side ``(n, 2d)``.

    True loss on the patterns at ε = 0.1, d = 10 (c = 2): up to 0.4874
    (``half-half``).
    """
    return SVT34_APART(key, x, params)


class Svt3Tables(NamedTuple):
    """``svt3``'s params with the tables of whole pieces of the pair's two inputs
    (:func:`mcdp.mechanisms._svt_density.whole_pieces`), made by
    :func:`svt3_loss_tables`."""

    params: SvtParams
    pieces: tuple[Array, Array]


@functools.partial(jax.jit, static_argnames="d")
def _svt3_pieces(tx, tx_prime, params, *, d):
    quad = _svt_density.Quadrature(tx, tx_prime, params, tx.dtype)
    return tuple(_svt_density.whole_pieces(v, quad, d) for v in (tx, tx_prime))


def svt3_loss_tables(tx: Array, tx_prime: Array, params: SvtParams):
    """``params`` with the pair's tables of whole pieces, in the pair's dtype
    (:class:`Svt3Tables`), where ``svt3``'s loss reads such tables (up to
    ``TABLE_QUERIES`` queries), else ``params``."""
    d = np.shape(tx)[-1]
    if d > _svt_density.TABLE_QUERIES:
        return params
    return Svt3Tables(params, _svt3_pieces(tx, tx_prime, params, d=d))


def svt34_loss_tables(tx: Array, tx_prime: Array, params: Svt34Params):
    """``params`` with its ``svt3`` half's tables (:func:`svt3_loss_tables`)."""
    return params._replace(svt3=svt3_loss_tables(tx, tx_prime, params.svt3))


def svt3_privacy_loss(
    y: Array, tx: Array, tx_prime: Array, params: SvtParams | Svt3Tables
):
    r""":math:`\ln p(y \mid x) - \ln p(y \mid x')` of ``svt3`` outputs ``y``, shape
    ``(n, d)``: the released answers' Laplace densities and :math:`G_F` at the least
    of them (:mod:`mcdp.mechanisms._svt_density`), its tables of whole pieces read
    from ``params`` where they are there (:class:`Svt3Tables`)."""
    pieces = (None, None)
    if isinstance(params, Svt3Tables):
        params, pieces = params
    dtype = y.dtype
    below = y == SVT3_FALSE
    above = ~below & (y != SVT3_ABORTED)
    quad = _svt_density.Quadrature(tx, tx_prime, params, dtype)
    cap = jnp.min(jnp.where(above, y, jnp.inf), axis=-1) - quad.threshold
    answers = _svt_density.laplace_answers_log_ratio(
        y, above, jnp.asarray(tx, dtype), jnp.asarray(tx_prime, dtype),
        quad.query_scale,
    )  # fmt: skip
    return (
        answers
        + _svt_density.capped_log_probs(below, cap, tx, quad, pieces[0])
        - _svt_density.capped_log_probs(below, cap, tx_prime, quad, pieces[1])
    )


def svt_pattern_privacy_loss(
    y: Array, tx: Array, tx_prime: Array, params: SvtParams | NoCutoffSvtParams
):
    r""":math:`\ln P[y \mid x] - \ln P[y \mid x']` of Alg. 1, 4 or 6 outputs ``y``
    (:data:`TRUE` / :data:`FALSE` / :data:`ABORTED`), shape ``(n, d)``: one
    threshold draw, whatever the cutoff (an aborted query adds no factor): each
    output's read from those of every pattern
    (:func:`~mcdp.mechanisms._svt_density.tabled_pattern_log_probs`)."""
    quad = _svt_density.Quadrature(tx, tx_prime, params, y.dtype)
    above, below, aborted = y == TRUE, y == FALSE, y == ABORTED
    first, second = (
        _svt_density.tabled_pattern_log_probs(above, below, aborted, v, quad)
        for v in (tx, tx_prime)
    )
    return first - second


def svt34_privacy_loss(y: Array, tx: Array, tx_prime: Array, params: Svt34Params):
    """The log ratio of ``svt34-parallel`` outputs, shape ``(n, 2d)``: independent
    halves, so the ``svt3`` and ``svt4`` log ratios add."""
    d = y.shape[-1] // 2
    return svt3_privacy_loss(
        y[:, :d], tx, tx_prime, params.svt3
    ) + svt_pattern_privacy_loss(y[:, d:], tx, tx_prime, params.svt4)


# The samplers in two parts (Mechanism.noise_apart). Drawn in one program on a CPU,
# the Threefry rounds of the query noise ran again in each fusion that read its sign
# (svt1's outputs of 2^20 draws: 0.27 s, against 0.16 s with the noise apart and
# flat); svt5 draws no query noise, and counted slower so (0.19 s against 0.15 s, a
# cheap guess of 4e6 draws per input)
SVT1_APART = _apart(svt_from_noise)
SVT2_APART = NoiseApart(_svt2_noise_apart, _svt2_outputs)
SVT3_APART = _apart(svt3_from_noise)
SVT6_APART = _apart(no_cutoff_from_noise)


def _svt34_noise(key: PRNGKey, x: Array, params: Svt34Params):
    key3, key4 = jax.random.fold_in(key, SVT3_KEY), jax.random.fold_in(key, SVT4_KEY)
    return (
        SVT3_APART.noise(key3, x, params.svt3),
        SVT1_APART.noise(key4, x, params.svt4),
    )


def _svt34_outputs(x: Array, noise, params: Svt34Params) -> Array:
    return jnp.concatenate(
        [
            SVT3_APART.from_noise(x, noise[0], params.svt3),
            SVT1_APART.from_noise(x, noise[1], params.svt4),
        ],
        axis=-1,
    )


SVT34_APART = NoiseApart(_svt34_noise, _svt34_outputs)


def _mechanism(
    name, sample, exact, flaw=None, loss=None, apart=None, cutoff=True, tables=None
) -> Mechanism:
    return Mechanism(
        name=name,
        sample=sample,
        claim="epsilon-DP",
        flaw=flaw,
        calibrate=_calibration(name),
        privacy_loss=loss,
        exact_epsilon=exact,
        domain=QUERY_ANSWERS,
        pathwise=False,  # the comparisons give the outputs a discrete part
        # a quadrature per output: faster by block on a CPU (1.4x svt3, 1.9x the
        # patterns of svt1 and svt6)
        loss_by_block=loss is not None,
        noise_apart=apart,
        # the variants with a cutoff count each output's answers above along its
        # queries (a running sum; Alg. 2's loop): on a CPU they counted 1.06-1.6x as
        # fast one block after another, whatever the guess, where svt5 counted
        # 0.93x and svt6 1.03-1.16x (benchmarks/bench_guess.py)
        draws_by_block=cutoff,
        loss_tables=tables,
    )


SVT1 = _mechanism(
    "svt1", svt1_sample, _svt_exact.exact_epsilon_discrete,
    loss=svt_pattern_privacy_loss, apart=SVT1_APART,
)  # fmt: skip
SVT2 = _mechanism("svt2", svt2_sample, _svt_exact.exact_epsilon_svt2, apart=SVT2_APART)
SVT3 = _mechanism(
    "svt3",
    svt3_sample,
    _svt_exact.exact_epsilon_svt3,
    flaw="outputs the noisy answers above the threshold (Lyu et al.: infinite eps)",
    loss=svt3_privacy_loss,
    apart=SVT3_APART,
    tables=svt3_loss_tables,
)
SVT4 = _mechanism(
    "svt4",
    svt4_sample,
    _svt_exact.exact_epsilon_discrete,
    flaw="query noise Lap(1/eps2) ignores the cutoff c: (1 + 6c) eps / 4 (Lyu et al.)",
    loss=svt_pattern_privacy_loss,
    apart=SVT1_APART,
)
SVT5 = _mechanism(
    "svt5",
    svt5_sample,
    _svt_exact.exact_epsilon_discrete,
    flaw="no noise on the queries and no cutoff: infinite loss",
    cutoff=False,
)
SVT6 = _mechanism(
    "svt6",
    svt6_sample,
    _svt_exact.exact_epsilon_discrete,
    flaw="no cutoff: the loss grows with the number of queries (Lyu et al.: inf)",
    loss=svt_pattern_privacy_loss,
    apart=SVT6_APART,
    cutoff=False,
)
SVT34 = _mechanism(
    "svt34-parallel",
    svt34_sample,
    _svt_exact.exact_epsilon_svt34,
    flaw="runs the broken svt3 and svt4, each at the full eps, on the same input",
    loss=svt34_privacy_loss,
    apart=SVT34_APART,
    tables=svt34_loss_tables,
)
