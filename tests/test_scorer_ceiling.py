"""The exact evaluation of scorers (``benchmarks/scorer_ceiling.py``): its cells are
the mechanism's outputs with their exact probabilities, and the exact privacy loss
as a score gives back the ceiling. No randomness but one fixed-seed draw of the
mechanism, whose every output must be one of the cells."""

import math

import jax
import numpy as np
import pytest

from mcdp.ceiling import ceiling
from mcdp.mechanisms import MECHANISMS, SUITE
from mcdp.mechanisms.sparse_vector import SVT3_ABORTED, SVT3_FALSE
from mcdp.pairs import make_pair

from conftest import SEED, load_benchmark

scorer_ceiling = load_benchmark("scorer_ceiling")
N = 10**7


def _pattern(rows: np.ndarray, name: str) -> np.ndarray:
    """What a cell fixes of an output: everything, but the answer's value of svt3."""
    if name != "svt3":
        return rows
    return np.where(np.isin(rows, (SVT3_FALSE, SVT3_ABORTED)), rows, 0.0)


@pytest.mark.parametrize("name", ["svt1", "svt3", "svt6"])
def test_cells_are_the_outputs_with_their_probabilities(name):
    cells, p, q = scorer_ceiling.exact_cells(name)
    assert p.sum() == pytest.approx(1, abs=1e-9) and q.sum() == pytest.approx(
        1, abs=1e-9
    )
    case, mech = SUITE[name], MECHANISMS[name]
    params = mech.calibrate(case.epsilon, 0.0, case.dim, 1.0)
    pair = make_pair(scorer_ceiling.pair_of(name), case.dim)
    tx = mech.transformed(pair, params)
    known = {tuple(r) for r in _pattern(cells, name)}
    for i, row in enumerate(tx):
        key = jax.random.fold_in(jax.random.PRNGKey(SEED), i)
        with jax.enable_x64(True):  # the suite's audits run in float64
            x = jax.numpy.asarray(np.broadcast_to(row, (2000, row.size)), "float64")
            drawn = np.asarray(mech.sample(key, x, params), np.float64)
        assert {tuple(r) for r in _pattern(drawn, name)} <= known


@pytest.mark.parametrize("name", ["svt1", "svt3", "svt6"])
def test_the_exact_loss_as_a_score_gives_the_ceiling(name):
    _, p, q = scorer_ceiling.exact_cells(name)
    with np.errstate(divide="ignore"):
        loss = np.log(p) - np.log(q)
    got = scorer_ceiling.best_event(loss, p, q, N)
    top = ceiling(name, scorer_ceiling.pair_of(name), N, scorer_ceiling.CONFIDENCE)
    assert got == pytest.approx(top.value, rel=1e-3)


def test_a_score_that_separates_nothing_bounds_nothing():
    _, p, q = scorer_ceiling.exact_cells("svt1")
    assert scorer_ceiling.best_event(np.zeros_like(p), p, q, N) < 0
    # and a score in the wrong order still has the lower sets of the right one
    with np.errstate(divide="ignore"):
        loss = np.log(p) - np.log(q)
    flipped = scorer_ceiling.best_event(-loss, p, q, N)
    assert math.isclose(flipped, scorer_ceiling.best_event(loss, p, q, N), rel_tol=1e-9)
