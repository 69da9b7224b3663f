"""Input domains: what contains() accepts, that project() and random_pairs() never
leave the domain, and that every suite case's named pairs are neighbours under
the relation its mechanism declares (SPEC §7)."""

import math

import jax
import numpy as np
import pytest

from mcdp.core.domains import CLIPPED_EMBEDDINGS, InputDomain, check_relation
from mcdp.mechanisms import MECHANISMS, SUITE
from mcdp.pairs import make_pair

from conftest import SEED

DOMAINS = {
    "histograms": InputDomain("one-entry", 1.0, low=0.0),
    "queries": InputDomain("every-entry", 1.0),
    "counts": InputDomain("one-entry", 1.0, low=0.0, high=5.0, integer=True),
    "ball": InputDomain("l2-ball", 2.0),
}


def test_contains_accepts_and_rejects():
    hist, queries, counts, ball = DOMAINS.values()
    assert hist.contains([[1, 1, 1], [1, 2, 1]])
    assert not hist.contains([[1, 1, 1], [2, 2, 1]])  # two entries change
    assert not hist.contains([[1, 1, 1], [1, 2.5, 1]])  # by more than s
    assert not hist.contains([[-1, 1, 1], [-1, 1, 1]])  # below the box
    assert queries.contains([[1, 1, 1], [2, 0, 1.5]])
    assert not queries.contains([[1, 1, 1], [2, 0, 2.5]])
    assert counts.contains([[3.0], [4.0]])
    assert not counts.contains([[3.0], [3.5]])  # not an integer
    assert not counts.contains([[5.0], [6.0]])  # above the box
    assert ball.contains([[2.0, 0.0], [0.0, -2.0]])
    assert not ball.contains([[2.0, 0.1], [0.0, -2.0]])
    assert not ball.contains([[np.nan, 0.0], [0.0, 0.0]])


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_project_and_random_pairs_stay_inside(name):
    domain = DOMAINS[name]
    dim = 1 if domain.integer else 6
    key = jax.random.key(SEED)
    wild = 10 * np.asarray(jax.random.normal(key, (200, 2, dim)), dtype=np.float64)
    for pair in wild:
        projected = domain.project(pair)
        assert domain.contains(projected), (pair, projected)
        # a pair already inside comes back unchanged
        np.testing.assert_allclose(domain.project(projected), projected, atol=1e-12)
    pairs = domain.random_pairs(jax.random.fold_in(key, 1), 200, dim)
    assert pairs.shape == (200, 2, dim)
    assert all(domain.contains(p) for p in pairs)
    # the proposals are not degenerate: most pairs differ
    assert np.mean([np.any(p[0] != p[1]) for p in pairs]) > 0.5


def test_ball_radius_is_the_clip():
    with pytest.raises(ValueError, match="at\\(clip\\)"):
        CLIPPED_EMBEDDINGS.contains(np.zeros((2, 3)))
    ball = CLIPPED_EMBEDDINGS.at(3.0)
    assert ball.size == 3.0 and ball.contains(make_pair("axis", 4, clip=3.0))
    assert not ball.contains(make_pair("axis", 4, clip=3.5))


@pytest.mark.parametrize("name", sorted(SUITE))
def test_suite_pairs_are_neighbours_of_the_declared_relation(name):
    case = SUITE[name]
    domain = MECHANISMS[name].domain
    assert domain is not None
    for pair in case.pairs:
        assert domain.contains(make_pair(pair, case.dim)), pair


def test_relations_per_spec():
    assert MECHANISMS["noisy-hist1"].domain.relation == "one-entry"
    for name in ("report-noisy-max1", "svt1", "svt34-parallel", "prefix-sum"):
        assert MECHANISMS[name].domain.relation == "every-entry", name
    for name in ("adept", "laplace", "gaussian", "trlaplace", "adept-l1"):
        assert MECHANISMS[name].domain.relation == "l2-ball", name
        assert MECHANISMS[name].domain.size is None  # the audit's clip
    geometric = MECHANISMS["truncated-geometric"].domain
    assert geometric.integer and (geometric.low, geometric.high) == (0.0, 5.0)
    # a histogram pair that changes two entries is not a neighbour
    assert not MECHANISMS["noisy-hist1"].domain.contains(make_pair("x-shuffle", 5))
    assert math.isinf(MECHANISMS["svt1"].domain.high)


def test_check_relation():
    assert check_relation("l2-ball") == "l2-ball"
    with pytest.raises(ValueError, match="Unknown relation 'linf'; expected one of"):
        check_relation("linf")
