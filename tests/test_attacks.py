"""The attack registry, and user attacks in both audits.

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
    majority_vote_guess,
)
from mcdp.auditing import ATTACK_KEY_TAG
from mcdp.mechanisms import LaplaceParams
from mcdp.sampling import cell_key
from mcdp.statistics import loss_estimate

from conftest import FAIL_PROB, SEED


def test_registry_is_closed_and_named():
    assert sorted(ATTACKS) == ["learned", "lr", "majority", "support"]
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
    with pytest.raises(ValueError, match="learned, lr, majority, support"):
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
