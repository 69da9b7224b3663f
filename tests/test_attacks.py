"""The attack registry, user attacks in both audits, and the built-in attacks by
hand: the majority vote's ties, the support test's guesses and probabilities, the
likelihood-ratio attack's thresholds and outcomes.

A user attack that reproduces a built-in one must give the built-in's counts for the
same seed (the draws depend on the audit, not on the attack); a user attack with its
own events is checked against the exact probabilities of those events.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcdp
from mcdp.attacks import (
    ATTACKS,
    LIKELIHOOD_RATIO,
    MAJORITY_VOTE,
    SUPPORT_TEST,
    Attack,
    AttackContext,
    get_attack,
    likelihood_ratio_attack,
    lr_thresholds,
    majority_vote_guess,
)
from mcdp.mechanisms import (
    GaussianParams,
    LaplaceParams,
    get_mechanism,
    trlaplace_params,
)
from mcdp.mechanisms.trlaplace import trlaplace_cdf
from mcdp.pairs import make_pair
from mcdp.running import ATTACK_KEY_TAG
from mcdp.sampling import cell_key, count_outcomes
from mcdp.statistics import loss_estimate

from conftest import FAIL_PROB, SEED, binomial_region, trlaplace_slab

GAUSSIAN = get_mechanism("gaussian")
TRLAPLACE = get_mechanism("trlaplace")
PAPER = (1.0, 1 / 1200, 300, 1.0)  # (epsilon, delta = 1/(4d), d, C)


def test_registry_is_closed_and_named():
    assert sorted(ATTACKS) == [
        "auto", "float-support", "learned", "lr", "majority", "structure", "support",
    ]  # fmt: skip
    assert ATTACKS["majority"] is MAJORITY_VOTE
    assert ATTACKS["support"] is SUPPORT_TEST
    assert ATTACKS["lr"] is LIKELIHOOD_RATIO
    for name, attack in ATTACKS.items():
        assert attack.name == name
        assert get_attack(name) is attack
    with pytest.raises(TypeError):
        ATTACKS["mine"] = MAJORITY_VOTE  # a read-only view


def test_get_attack_passes_an_attack_through_and_names_the_choices():
    mine = Attack("mine", 2, majority_vote_guess)
    assert get_attack(mine) is mine
    with pytest.raises(
        ValueError,
        match="auto, float-support, learned, lr, majority, structure, support",
    ):
        get_attack("minority")
    with pytest.raises(ValueError, match="Unknown attack"):
        get_attack(None)


def _first_coordinate(y, aux):
    """Guess 1 iff the first coordinate rounds to 1: the majority vote at d = 1."""
    del aux
    return (~(y[:, 0] < 0.5)).astype(jnp.int32)


FIRST = Attack("first-coordinate", 2, _first_coordinate)


def test_user_attack_that_is_the_majority_vote_at_d1_gives_its_counts():
    builtin = mcdp.audit("laplace", 1.0, 1, 30_000, seed=SEED)
    mine = mcdp.audit("laplace", 1.0, 1, 30_000, seed=SEED, attack=FIRST)
    assert mine.counts == builtin.counts
    assert mine.attack == "first-coordinate" and builtin.attack == "majority"
    assert mine.loss == builtin.loss
    assert mine.exact is None  # the exact loss is the majority vote's only
    assert builtin.exact is not None


def test_user_attack_in_the_sanity_check_brackets_its_exact_loss():
    """At d = 8 the first coordinate alone is Lap(b) noise, b = d/epsilon: guess 1
    has probability e^(-1/(2b))/2 under 0^d and 1 - e^(-1/(2b))/2 under 1^d."""
    epsilon, dim, draws = 1.0, 8, 200_000
    result = mcdp.audit("laplace", epsilon, dim, draws, seed=SEED, attack=FIRST)
    b = dim / epsilon
    p = 0.5 * math.exp(-0.5 / b)
    exact = max(abs(math.log(p / (1 - p))), abs(math.log((1 - p) / p)))
    wide = loss_estimate(result.counts, 1 - FAIL_PROB)
    assert wide.lower <= exact <= wide.upper
    assert result.claim == "epsilon-DP" and not result.violated


def test_sanity_check_refuses_an_attack_with_more_than_two_outcomes():
    three = Attack("three", 3, lambda y, aux: jnp.zeros(y.shape[0], jnp.int32))
    with pytest.raises(ValueError, match="two-outcome attack.*'three'.*audit_delta"):
        mcdp.audit("laplace", 1.0, 2, 1000, attack=three)
    with pytest.raises(ValueError, match="two-outcome attack.*'lr'"):
        mcdp.audit("laplace", 1.0, 2, 1000, attack="lr")


def _prepare_sign(context: AttackContext):
    """The half-space {y . (tx - tx') >= midpoint}: fixed from the context."""
    tx, tx_prime = context.transformed
    direction = tx - tx_prime
    midpoint = 0.5 * float(direction @ (tx + tx_prime))
    return Attack("sign", 2, _sign_guess), (direction, midpoint)


def _sign_guess(y, aux):
    direction, midpoint = aux
    return (y @ direction >= midpoint).astype(jnp.int32)


SIGN = Attack("sign", 2, _sign_guess, prepare=_prepare_sign)


def test_user_attack_with_a_prepare_step_in_the_delta_audit():
    """Laplace noise of scale b on the axis pair +-C e_1: the half-space event
    {y_1 >= 0} has probability q = 1 - e^(-C/b)/2 under x and 1 - q under x', so
    delta(epsilon) = max(0, q - e^epsilon (1 - q)) exactly; the simultaneous bounds
    at confidence 1 - FAIL_PROB bracket it at every epsilon of the profile."""
    dim, epsilon = 4, 1.0
    result = mcdp.audit_delta(
        "laplace",
        epsilon,
        0.0,
        dim,
        200_000,
        pair="axis",
        attack=SIGN,
        seed=SEED,
        confidence=1 - FAIL_PROB,
    )
    assert result.attack == "sign" and len(result.counts[0]) == 2
    scale = 2 * math.sqrt(dim) / epsilon  # laplace's calibration to 2 C sqrt(d)
    q = 1 - 0.5 * math.exp(-1.0 / scale)
    for point in result.profile:
        exact = max(0.0, q - math.exp(point.epsilon) * (1 - q))
        assert point.delta_lower <= exact + 1e-12, point
        assert exact <= point.delta_upper + 1e-12, point
    assert not result.violated


def test_prepare_sees_the_audit_and_a_key_of_its_own():
    seen = {}

    def prepare(context):
        seen["context"] = context
        return MAJORITY_VOTE, None

    spy = Attack("spy", 2, majority_vote_guess, prepare=prepare)
    result = mcdp.audit_delta(
        "trlaplace", 1.0, 1 / 1200, 300, 2048, pair="diagonal", attack=spy, seed=3
    )
    context = seen["context"]
    assert context.mechanism is mcdp.get_mechanism("trlaplace")
    assert context.pair.shape == context.transformed.shape == (2, 300)
    assert 1.0 in context.epsilons and context.dtype == "float64"
    # the counts are the majority vote's: the prepare step drew nothing that counts
    majority = mcdp.audit_delta(
        "trlaplace", 1.0, 1 / 1200, 300, 2048, pair="diagonal", attack="majority",
        seed=3,
    )  # fmt: skip
    assert result.counts == majority.counts
    # its key is fold_in(audit key, ATTACK_KEY_TAG), none of the inputs' keys
    audit_key = cell_key(3, f"delta/trlaplace/1.0/{1 / 1200!r}/300/diagonal")
    data = np.asarray(jax.random.key_data(context.key))
    expected = jax.random.fold_in(audit_key, ATTACK_KEY_TAG)
    assert np.array_equal(data, jax.random.key_data(expected))
    for row in range(2):  # the counted draws of input i use fold_in(audit key, i)
        used = jax.random.key_data(jax.random.fold_in(audit_key, row))
        assert not np.array_equal(data, used)


def test_builtin_attacks_as_objects_or_names_give_the_same_audit():
    by_name = mcdp.audit_delta("trlaplace", 1.0, 1 / 1200, 300, 2048, attack="support")
    by_object = mcdp.audit_delta(
        "trlaplace", 1.0, 1 / 1200, 300, 2048, attack=SUPPORT_TEST
    )
    assert by_name.counts == by_object.counts
    assert by_name.delta_lower == by_object.delta_lower


def test_attack_needs_what_it_reads_from_the_mechanism():
    with pytest.raises(ValueError, match="attack 'support' needs bounded noise"):
        mcdp.audit_delta("laplace", 1.0, 0.0, 2, 100, attack="support")
    unknown_density = mcdp.Mechanism(
        "no-density", mcdp.get_mechanism("laplace").sample, claim="epsilon-DP"
    )
    with pytest.raises(ValueError, match="attack 'lr' needs a mechanism with a known"):
        mcdp.audit_delta(
            unknown_density, 1.0, 0.0, 2, 100, attack="lr", params=LaplaceParams(1.0)
        )


# --- the built-in attacks by hand ------------------------------------------------


def test_majority_vote_ties_go_to_zero():
    y = np.array(
        [
            [0.0, 1.0],
            [0.7, 0.6],
            [0.2, 0.4],
            [np.nan, 0.0],
            [np.nan, np.nan],
            [0.5, 0.49],
        ]
    )
    assert majority_vote_guess(y).tolist() == [0, 1, 0, 0, 1, 0]
    assert majority_vote_guess(np.array([[0.5], [0.4999], [np.nan]])).tolist() == [
        1,
        0,
        1,
    ]


def test_lr_thresholds():
    eps = [0.0, 0.1, 1.0, 3.0]
    t = lr_thresholds(eps)
    assert np.all(np.diff(t) > 0)
    for e in eps:
        assert e in t and -e in t
    assert t[0] == -3.0 and t[-1] == 3.0
    assert np.all(np.isin(np.round(np.linspace(-3, 3, 49), 12), t))
    assert lr_thresholds([]).tolist() == np.round(np.linspace(-1, 1, 49), 12).tolist()


def test_lr_attack_counts_thresholds_reached():
    """The attack's outcome is the number of thresholds at or below the exact loss,
    here against a NumPy evaluation of the Gaussian loss."""
    rng = np.random.default_rng(SEED)
    thresholds = lr_thresholds([0.5, 1.0, 2.0])
    attack = likelihood_ratio_attack(GAUSSIAN, len(thresholds))
    assert attack.num_outcomes == len(thresholds) + 1
    assert likelihood_ratio_attack(GAUSSIAN, len(thresholds)) is attack  # cached
    x, x_prime = make_pair("diagonal", 5)
    sigma = 0.8
    y = rng.normal(size=(200, 5)) * 1.5
    loss = (np.sum((y - x_prime) ** 2, -1) - np.sum((y - x) ** 2, -1)) / (2 * sigma**2)
    with jax.enable_x64(True):
        aux = (jnp.asarray(x), jnp.asarray(x_prime), GaussianParams(1.0, sigma))
        got = attack.guess(jnp.asarray(y), (*aux, jnp.asarray(thresholds)))
        got = np.asarray(got)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.searchsorted(thresholds, loss, "right"))


def test_support_guess_by_hand():
    y = np.array(
        [[2.0, 0.0], [-2.0, 0.0], [0.0, 0.0], [0.0, 2.0], [2.6, 0.0], [2.5, 1.5]]
    )
    with jax.enable_x64(True):
        aux = (jnp.array([1.0, 0.0]), jnp.array([-1.0, 0.0]), jnp.asarray(1.5))
        got = np.asarray(SUPPORT_TEST.guess(jnp.asarray(y), aux))
    # only x, only x', both, neither, neither, only x (on the closed edge)
    np.testing.assert_array_equal(got, [2, 0, 1, 1, 1, 2])


@pytest.mark.parametrize(
    "case, pair",
    [
        (PAPER, "axis"),
        ((1.0, 0.01, 4, 0.5), "axis"),
        ((1.0, 0.01, 4, 0.5), "diagonal"),
        ((1.0, 1 / 200, 50, 1.0), "diagonal"),
    ],
)
def test_support_test_probabilities(key, case, pair):
    """Under x the output is never outside its own support; it leaves supp(x') iff
    some coordinate with shift s > 0 has eta_i > A - s, so P[outcome 2 | x] =
    1 - (1 - q)^m with q = P[eta > A - s] and m shifted coordinates (1 for axis,
    d for diagonal); symmetrically for outcome 0 under x'."""
    epsilon, delta, dim, clip = case
    params = trlaplace_params(*case)
    xs = make_pair(pair, dim, clip)
    shift, shifted = (2 * clip, 1) if pair == "axis" else (2 * clip / dim**0.5, dim)
    q = trlaplace_slab(params, shift)
    assert q == pytest.approx(1 - trlaplace_cdf(params.bound - shift, params), 1e-9)
    p = 1 - (1 - q) ** shifted
    draws = 20_000 if dim > 100 else 50_000
    aux = (xs[0], xs[1], float(params.bound) * (1 + 1e-12))
    counts = count_outcomes(
        key, TRLAPLACE, SUPPORT_TEST, xs, params, draws, dtype="float64", aux=aux
    )
    assert counts[0, 0] == 0 and counts[1, 2] == 0  # never outside its own support
    assert np.all(counts.sum(axis=1) == draws)
    # exact binomial tails: at d = 50, p = 0.998 leaves ~90 draws in the other cells
    low, high = binomial_region(draws, p)
    assert low <= counts[0, 2] <= high, (counts, p, low, high)
    assert low <= counts[1, 0] <= high, (counts, p, low, high)
