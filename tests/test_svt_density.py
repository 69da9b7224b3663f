"""The Sparse Vector densities as JAX functions (``mcdp.mechanisms._svt_density``)
and the privacy losses built on them (``svt3``, ``svt34-parallel``, ``numerical-svt``,
and the patterns of ``svt1``, ``svt4`` and ``svt6``): against the host's float64
integrals, against SciPy's adaptive quadrature, against the exact losses, and by the
identity E_x[exp(-L)] = 1."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

import mcdp
from mcdp import attacks, searching
from mcdp.attacks import likelihood_ratio_attack
from mcdp.engines.base import device_tree
from mcdp.mechanisms import MECHANISMS, SUITE, numerical_svt
from mcdp.mechanisms import _svt_density as density
from mcdp.mechanisms import _svt_exact as svt_exact
from mcdp.mechanisms import sparse_vector as sv
from mcdp.pairs import make_pair

from conftest import SEED, Z

# 4 Gauss–Legendre nodes per piece: the module's stated accuracy
QUADRATURE_TOL = 1e-4
DENSITY_CASES = ("svt3", "svt34-parallel", "numerical-svt")
# the discrete Sparse Vector variants with one threshold draw: a pattern's law
PATTERN_CASES = ("svt1", "svt4", "svt6")


def _params(name):
    case = SUITE[name]
    return MECHANISMS[name].calibrate(case.epsilon, 0.0, case.dim, 1.0)


def _pairs(dim: int):
    """The peers' pair, one of StatDP's patterns and two random pairs of
    neighbours spread over several noise scales."""
    rng = np.random.default_rng(0)
    out = [make_pair("all-above-all-below", dim), make_pair("half-half", dim)]
    for _ in range(2):
        x = rng.normal(0.0, 40.0, dim)
        out.append(np.stack([x, x + rng.uniform(-1.0, 1.0, dim)]))
    return out


@pytest.mark.parametrize(
    "params",
    [
        numerical_svt.numerical_svt_params(0.1),
        sv.svt_params("svt4", 0.1, 2, 1.0),
        sv.svt_params("svt1", 0.5, 3, 0.5),
        sv.svt_params("svt6", 0.1),
    ],
    ids=["numerical-svt", "svt4", "svt1", "svt6"],
)
def test_pattern_log_probs_match_the_host_integrals(params):
    for tx in _pairs(10)[::2]:  # the peers' pair and a spread one
        rows = svt_exact.outputs(10, getattr(params, "cutoff", None))
        with jax.enable_x64(True):
            quad = density.Quadrature(tx[0], tx[1], params, jnp.float64)
            for x in tx:
                host = svt_exact.single_threshold_log_probs(x, rows, params)
                got = density.pattern_log_probs(
                    jnp.asarray(rows == 1), jnp.asarray(rows == 0), x, quad
                )
                np.testing.assert_allclose(
                    np.asarray(got), host, rtol=0, atol=QUADRATURE_TOL
                )


# F in the tests of G_F: the queries before the first above (svt3's cutoff 1), and
# two others (a larger cutoff)
BELOW_SETS = [np.arange(10) < first for first in (0, 1, 4, 9)] + [
    np.array([1, 0, 1, 1, 0, 0, 1, 0, 0, 1], bool),
    np.array([0, 1, 1, 1, 1, 1, 1, 1, 1, 1], bool),
]


@pytest.mark.parametrize("tabled", [True, False], ids=["tabled", "integrated"])
@pytest.mark.parametrize(
    "which", [0, pytest.param(2, marks=pytest.mark.slow)], ids=["peers", "spread"]
)
def test_capped_log_probs_match_the_host_cumulative_integral(
    monkeypatch, which, tabled
):
    """Both forms of :math:`G_F` (its pieces tabled for every F up to
    ``TABLE_QUERIES`` queries, else integrated per row) against the host's
    cumulative integral, at caps in the left tail, between the kinks and past
    them."""
    if not tabled:
        monkeypatch.setattr(density, "TABLE_QUERIES", 0)
    params = _params("svt3")
    threshold = float(params.threshold)
    caps = np.array([-400.0, -150.0, -30.0, -0.5, 0.0, 0.3, 3.7, 20.0, 80.0, np.inf])
    for tx in _pairs(10)[which : which + 1]:  # the peers' pair, or a spread one
        kinks = np.concatenate([[0.0], tx[0] - threshold, tx[1] - threshold])
        grid = np.unique(
            np.concatenate([
                np.arange(kinks.min() - 1, kinks.max() + 400, 0.1),
                kinks,
                kinks.max() + 400 * np.geomspace(1, 5, 50),
            ])
        )  # fmt: skip
        with jax.enable_x64(True):
            quad = density.Quadrature(tx[0], tx[1], params, jnp.float64)
            for x in tx:
                integrand = svt_exact._Integrand(x, grid, params)
                for below in BELOW_SETS:
                    g = svt_exact._CumulativeG(integrand, below)
                    # u -> -inf: the closed form's C e^{lambda u} / lambda
                    finite = caps[np.isfinite(caps) & (caps >= grid[0])]
                    host = [g.at(u) for u in finite] + [float(g.values[-1])]
                    rows = jnp.asarray(np.tile(below, (finite.size + 1, 1)))
                    caps_given = jnp.asarray(np.append(finite, np.inf))
                    got = density.capped_log_probs(rows, caps_given, x, quad)
                    # far in the left tail (log G ~ -28) the error grows with it
                    np.testing.assert_allclose(
                        np.asarray(got), host, rtol=1e-5, atol=QUADRATURE_TOL
                    )
                    if tabled:  # its table of whole pieces given: the same bits
                        pieces = density.whole_pieces(jnp.asarray(x), quad, 10)
                        given = density.capped_log_probs(
                            rows, caps_given, x, quad, pieces
                        )
                        np.testing.assert_array_equal(
                            np.asarray(given), np.asarray(got)
                        )


def _svt3_log_density(y: np.ndarray, x: np.ndarray, params) -> float:
    """SciPy's adaptive quadrature of one ``svt3`` output (cutoff 1): the answer
    above at query k and the queries before it below."""
    b_rho, b_nu = float(params.threshold_scale), float(params.query_scale)
    threshold = float(params.threshold)
    k = int(np.flatnonzero(y > sv.SVT3_FALSE)[0])
    v = float(y[k])

    def integrand(r):
        t = threshold + r - x[:k]
        below = np.where(t < 0, 0.5 * np.exp(t / b_nu), 1 - 0.5 * np.exp(-t / b_nu))
        return stats.laplace.pdf(r, scale=b_rho) * np.prod(below)

    kinks = sorted({0.0, *(x[:k] - threshold)})
    edges = [-60 * b_rho] + [e for e in kinks if e < v - threshold] + [v - threshold]
    total = sum(
        integrate.quad(integrand, a, b, epsabs=0, epsrel=1e-12, limit=200)[0]
        for a, b in zip(edges[:-1], edges[1:], strict=True)
    )
    return math.log(total) + stats.laplace.logpdf(v - x[k], scale=b_nu)


def test_svt3_loss_against_scipy_quadrature():
    params = _params("svt3")
    tx = make_pair("all-above-all-below", 10)
    outputs = []
    for k, v in [(0, -3.0), (0, 0.5), (2, 1.7), (5, 0.9), (5, 36.0), (9, -40.0)]:
        y = np.full(10, sv.SVT3_ABORTED)
        y[:k], y[k] = sv.SVT3_FALSE, v
        outputs.append(y)
    y = np.array(outputs)
    brute = [_svt3_log_density(r, tx[0], params) - _svt3_log_density(r, tx[1], params)
             for r in y]  # fmt: skip
    with jax.enable_x64(True):
        loss = MECHANISMS["svt3"].privacy_loss(jnp.asarray(y), tx[0], tx[1], params)
    np.testing.assert_allclose(np.asarray(loss), brute, rtol=0, atol=QUADRATURE_TOL)


def _check_loss(name: str, dtype: str, pair: str, tag: int, n: int = 1 << 15):
    r"""On ``n`` outputs drawn from x: :math:`|L| \le \varepsilon` (the exact loss,
    up to the quadrature's and the dtype's rounding), and :math:`E_x[e^{-L}] = 1`
    (the outputs of x and x' share their support) within ``Z`` of its standard
    errors (false alarm ``FAIL_PROB``)."""
    m, params = MECHANISMS[name], _params(name)
    rounding = QUADRATURE_TOL + (1e-5 if dtype == "float32" else 0.0)
    tx = make_pair(pair, SUITE[name].dim)
    exact = m.exact_epsilon(params, tx)

    def losses(key, x, a, b):
        return m.privacy_loss(m.sample(key, x, params), a, b, params)

    with jax.enable_x64(dtype == "float64"):
        x = jnp.broadcast_to(jnp.asarray(tx[0], dtype), (n, tx.shape[1]))
        key = jax.random.fold_in(jax.random.key(SEED), tag)
        a, b = (jnp.asarray(row, dtype) for row in tx)
        loss = np.asarray(jax.jit(losses)(key, x, a, b), dtype=np.float64)
    assert np.all(np.isfinite(loss))
    assert np.abs(loss).max() <= exact + rounding
    weights = np.exp(-loss)
    se = weights.std(ddof=1) / math.sqrt(n)
    assert abs(weights.mean() - 1) <= Z * se + rounding


@pytest.mark.parametrize("name", DENSITY_CASES + PATTERN_CASES)
def test_losses_stay_within_the_exact_loss_and_integrate_to_one(name):
    _check_loss(name, "float64", "all-above-all-below", 0)


@pytest.mark.slow
@pytest.mark.parametrize("name", DENSITY_CASES + PATTERN_CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("pair", ["all-above-all-below", "half-half", "all-below"])
def test_losses_stay_within_the_exact_loss_on_more_pairs(name, dtype, pair):
    _check_loss(name, dtype, pair, 1, n=1 << 17)


# the cases whose loss reads each output's pattern from the table of every pattern:
# params by cutoff, and the value of an aborted query
PATTERN_TABLE_CASES = {
    "numerical-svt": (
        lambda cutoff: numerical_svt.numerical_svt_params(0.1, cutoff),
        numerical_svt.ABORTED,
    ),
    "svt4": (lambda cutoff: sv.svt_params("svt4", 0.1, cutoff, 1.0), sv.ABORTED),
}


def _spied_patterns(monkeypatch) -> list:
    """The ``d`` of every call of :func:`density.patterns` from now on: a loss that
    reads a table calls it where it is traced."""
    calls, patterns = [], density.patterns

    def spy(d):
        calls.append(d)
        return patterns(d)

    monkeypatch.setattr(density, "patterns", spy)
    return calls


def _by_block(m, params):
    """The loss on all the rows at once, and on blocks of 1,024 rows as the engine
    scores the selection draws and counts it on a CPU."""

    def losses(y, a, b):
        blocks = y.reshape((-1, 1024) + y.shape[1:])
        by_block = jax.lax.map(
            lambda chunk: m.privacy_loss(chunk, a, b, params), blocks
        )
        return m.privacy_loss(y, a, b, params), by_block.reshape(-1)

    return losses


def _in_both_forms(monkeypatch, m, params, tx, dtype):
    """2^14 outputs of ``tx[0]``, the pair in ``dtype``, and the :func:`_by_block`
    losses read from the tables (checked to read them), then integrated per output
    (``TABLE_QUERIES`` 0)."""
    losses = _by_block(m, params)
    with jax.enable_x64(dtype == "float64"):
        x = jnp.broadcast_to(jnp.asarray(tx[0], dtype), (1 << 14, 10))
        y = m.sample(jax.random.key(SEED), x, params)
        a, b = (jnp.asarray(row, dtype) for row in tx)
        calls = _spied_patterns(monkeypatch)
        tabled = jax.jit(losses)(y, a, b)
        assert calls and set(calls) == {10}  # the tables, not the integrals
        monkeypatch.setattr(density, "TABLE_QUERIES", 0)
        # a function of its own, so that jit traces it again
        direct = jax.jit(lambda *args: losses(*args))(y, a, b)
        monkeypatch.undo()
    return y, a, b, tabled, direct


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(PATTERN_TABLE_CASES))
def test_pattern_losses_read_the_pattern_table_to_the_bit(monkeypatch, name, dtype):
    """Each output's pattern terms read from the table of every pattern are the
    ones integrated for that output, on every pattern that 2^14 outputs take
    (cutoff 2 and 4: aborted or not), for the peers' pair and a spread one: to the
    last bit on blocks of 1,024 rows, as the engine scores the selection draws and
    counts this loss on a CPU; within rounding on all the rows at once, where XLA
    integrates in other programs (the integrals' rounding varies with the rows'
    number, not the table's)."""
    m, (params_of, aborted_value) = MECHANISMS[name], PATTERN_TABLE_CASES[name]
    for cutoff, tx in [(2, make_pair("all-above-all-below", 10)), (4, _pairs(10)[2])]:
        params = params_of(cutoff)
        y, a, b, tabled, direct = _in_both_forms(monkeypatch, m, params, tx, dtype)
        aborted = np.any(np.asarray(y) == aborted_value, axis=1)
        assert 0 < aborted.sum() < aborted.size  # both kinds of pattern
        whole, by_block = (np.asarray(t, np.float64) for t in tabled)
        np.testing.assert_array_equal(by_block, np.asarray(direct[1], np.float64))
        # within 4 units in the last place of the largest pattern term
        with jax.enable_x64(dtype == "float64"):
            quad = density.Quadrature(tx[0], tx[1], params, jnp.dtype(dtype))
            rows = [jnp.asarray(r) for r in density.patterns(10)]
            terms = [density.pattern_log_probs(*rows, v, quad) for v in (a, b)]
        largest = max(float(np.abs(np.asarray(t)).max()) for t in terms)
        ulps = 4 * np.finfo(dtype).eps * largest
        np.testing.assert_allclose(whole, np.asarray(direct[0]), rtol=0, atol=ulps)


# G_F read from its tables against integrated per output: units in the last place of
# the largest ln G_F (the most measured: 9 in float64, 2 in float32)
CAPPED_ULPS = 32


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["svt3", "svt34-parallel"])
def test_svt3_losses_read_the_capped_tables_within_rounding(monkeypatch, name, dtype):
    r"""``svt3``'s loss with :math:`G_F` read from its tables (the whole pieces
    cumulated for every F, the cut piece's factors from the exponentials of its
    start) is the loss integrated per output, rearranged: on 2^14 outputs of the
    peers' pair and of a spread one, on the engine's blocks of 1,024 rows, the two
    are finite at the same outputs and within :data:`CAPPED_ULPS` units in the last
    place of the largest :math:`\ln G_F` of the outputs."""
    m, params = MECHANISMS[name], _params(name)
    svt3 = params.svt3 if name == "svt34-parallel" else params
    for tx in (make_pair("half-half", 10), _pairs(10)[2]):
        y, a, b, tabled, direct = _in_both_forms(monkeypatch, m, params, tx, dtype)
        tabled, direct = (np.asarray(t[1], np.float64) for t in (tabled, direct))
        with jax.enable_x64(dtype == "float64"):
            monkeypatch.setattr(density, "TABLE_QUERIES", 0)
            y3 = y[:, :10]
            below = y3 == sv.SVT3_FALSE
            above = ~below & (y3 != sv.SVT3_ABORTED)
            quad = density.Quadrature(a, b, svt3, jnp.dtype(dtype))
            cap = jnp.min(jnp.where(above, y3, jnp.inf), axis=-1) - quad.threshold
            terms = np.concatenate(
                [
                    np.asarray(density.capped_log_probs(below, cap, v, quad))
                    for v in (a, b)
                ]
            )
            monkeypatch.undo()
        finite = np.isfinite(direct)
        np.testing.assert_array_equal(np.isfinite(tabled), finite)
        largest = float(np.abs(terms[np.isfinite(terms)]).max())
        ulps = np.abs(tabled - direct)[finite].max() / (np.finfo(dtype).eps * largest)
        assert ulps <= CAPPED_ULPS


def test_pattern_table_keys_every_pattern():
    """The table's rows are the patterns of their keys: every output pattern of
    cutoff 1-3 on 6 queries (:func:`mcdp.mechanisms._svt_exact.outputs`) is the row
    that its key names."""
    above, below = density.patterns(6)
    for cutoff in (1, 2, 3):
        rows = svt_exact.outputs(6, cutoff)
        keys = np.asarray(density.pattern_keys(rows == 1, rows == -1))
        np.testing.assert_array_equal(above[keys], rows == 1)
        np.testing.assert_array_equal(below[keys], rows == 0)


def test_svt34_loss_adds_its_halves():
    params = _params("svt34-parallel")
    tx = make_pair("half-half", 10)
    key = jax.random.key(SEED)

    def parts(key, x, a, b):
        y = MECHANISMS["svt34-parallel"].sample(key, x, params)
        return (
            sv.svt34_privacy_loss(y, a, b, params),
            sv.svt3_privacy_loss(y[:, :10], a, b, params.svt3)
            + sv.svt_pattern_privacy_loss(y[:, 10:], a, b, params.svt4),
        )

    with jax.enable_x64(True):
        x = jnp.broadcast_to(jnp.asarray(tx[0]), (256, 10))
        whole, halves = jax.jit(parts)(key, x, jnp.asarray(tx[0]), jnp.asarray(tx[1]))
    np.testing.assert_allclose(np.asarray(whole), np.asarray(halves))
    # svt4's half takes a handful of patterns, each with its host log ratio
    rows = svt_exact.outputs(10, 2)
    host = svt_exact.single_threshold_log_probs(
        tx[0], rows, params.svt4
    ) - svt_exact.single_threshold_log_probs(tx[1], rows, params.svt4)
    flags = np.where(rows == 1, sv.TRUE, np.where(rows == 0, sv.FALSE, sv.ABORTED))
    with jax.enable_x64(True):
        got = sv.svt_pattern_privacy_loss(jnp.asarray(flags), tx[0], tx[1], params.svt4)
    np.testing.assert_allclose(np.asarray(got), host, rtol=0, atol=2 * QUADRATURE_TOL)


@pytest.mark.parametrize("name", DENSITY_CASES + PATTERN_CASES)
def test_search_does_not_differentiate_through_comparisons(name):
    """A density, but outputs with a discrete part: no gradient starts."""
    mech = MECHANISMS[name]
    assert mech.privacy_loss is not None and not mech.pathwise
    assert not searching._differentiable(mech, mech.domain)
    assert searching._differentiable(MECHANISMS["noisy-hist1"], mech.domain)


def test_explicit_lr_attack_runs_on_svt3():
    """``--attack lr`` now applies: a valid, positive bound below the true loss on
    the peers' pair at a small N (the exact loss's fixed grid of events)."""
    case = SUITE["svt3"]
    tx = make_pair("all-above-all-below", case.dim)
    spec = mcdp.AuditSpec(
        "svt3", case.epsilon, pair=tx, dim=case.dim, delta=0.0, confidence=0.9,
        seed=SEED, attack="lr",
    )  # fmt: skip
    record = mcdp.run(spec, mcdp.Draws(200_000))
    exact = MECHANISMS["svt3"].exact_epsilon(_params("svt3"), tx)
    assert 0 < record.epsilon_lower < exact


def test_quadrature_losses_count_by_block_on_a_cpu():
    """The counting loop scores these losses one block after another on a CPU (the
    counts are the same either way); a cheap loss stays batched."""
    for name in DENSITY_CASES + PATTERN_CASES:
        assert likelihood_ratio_attack(MECHANISMS[name], 3).by_block
    assert not likelihood_ratio_attack(MECHANISMS["noisy-hist1"], 3).by_block


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["svt3", "svt34-parallel"])
def test_svt3_losses_given_their_tables_are_the_same_to_the_bit(name, dtype):
    """The params with the pair's tables of whole pieces made before the draws
    (``Mechanism.loss_tables``, as the default attack's exact loss takes them)
    give the loss that makes the tables where it is traced, to the last bit, on
    2^14 outputs by the engine's blocks, the params passed as the engine passes
    them; past ``TABLE_QUERIES`` queries the params come back as they were."""
    m, params = MECHANISMS[name], _params(name)
    tx = make_pair("half-half", 10)
    given = attacks.loss_params(m, tx, params, dtype)
    inner = given.svt3 if name == "svt34-parallel" else given
    assert isinstance(inner, sv.Svt3Tables)

    @jax.jit
    def losses(y, a, b, p):
        blocks = y.reshape((-1, 1024) + y.shape[1:])
        return jax.lax.map(lambda c: m.privacy_loss(c, a, b, p), blocks).reshape(-1)

    with jax.enable_x64(dtype == "float64"):
        x = jnp.broadcast_to(jnp.asarray(tx[0], dtype), (1 << 14, 10))
        y = m.sample(jax.random.key(SEED), x, params)
        a, b = (jnp.asarray(row, dtype) for row in tx)
        plain = losses(y, a, b, device_tree(params, dtype))
        read = losses(y, a, b, device_tree(given, dtype))
        # tables moved by 1 move the loss: the loss reads the ones it is given
        moved = inner._replace(pieces=tuple(t + 1 for t in inner.pieces))
        if name == "svt34-parallel":
            moved = given._replace(svt3=moved)
        off = losses(y, a, b, device_tree(moved, dtype))
    np.testing.assert_array_equal(np.asarray(read), np.asarray(plain))
    assert not np.allclose(np.asarray(off), np.asarray(plain))
    wide = np.stack([np.zeros(13), np.ones(13)])
    svt3 = params.svt3 if name == "svt34-parallel" else params
    assert sv.svt3_loss_tables(wide[0], wide[1], svt3) is svt3
