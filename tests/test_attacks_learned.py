"""The learned attack: valid bounds over seeds, never above the exact loss, power on
broken mechanisms, and training and selection on keys the counted draws never use.
"""

import json

import jax
import numpy as np
import pytest
from scipy import stats

import mcdp
from mcdp import sampling
from mcdp.attacks import ATTACKS, learned_attack
from mcdp.mechanisms import LaplaceParams
from mcdp.running import ATTACK_KEY_TAG

from conftest import FAIL_PROB, SEED, assert_one_line_error

SMALL = learned_attack(train_draws=2000, select_draws=4000)


def test_learned_is_registered_and_checks_its_settings():
    assert ATTACKS["learned"].prepare is not None
    with pytest.raises(ValueError, match="model"):
        learned_attack(model="forest")
    with pytest.raises(ValueError, match="train_draws"):
        learned_attack(train_draws=1)
    with pytest.raises(ValueError, match="max_events"):
        learned_attack(max_events=0)


def test_learned_bound_is_valid_over_seeds():
    """Laplace on a pair at exactly its sensitivity: the true loss equals the
    claim, so every flag is a false alarm. Over R seeds the false alarms of a 95 %
    bound must stay inside the binomial acceptance region at FAIL_PROB."""
    runs, alpha = 100, 0.05
    flags = 0
    for seed in range(SEED, SEED + runs):
        result = mcdp.audit_delta(
            "laplace", 1.0, 0.0, 1, 4000, pair="diagonal", attack=SMALL, seed=seed
        )
        assert result.epsilon_exact == pytest.approx(1.0)
        flags += result.violated
    assert flags <= stats.binom.isf(FAIL_PROB, runs, alpha)


@pytest.mark.parametrize("name", ["laplace", "adept", "adept-true-sensitivity"])
def test_learned_bound_stays_below_the_exact_loss(name):
    result = mcdp.audit_delta(
        name,
        1.0,
        0.0,
        4,
        200_000,
        pair="diagonal",
        attack=SMALL,
        seed=SEED,
        confidence=1 - FAIL_PROB,
    )
    assert result.epsilon_exact is not None
    assert 0 < result.epsilon_lower <= result.epsilon_exact
    assert result.attack == "learned"
    assert 2 <= len(result.counts[0]) <= 4  # at most 3 thresholds carried
    assert len(result.events) == len(result.counts[0]) - 1


def test_learned_refutes_broken_mechanisms():
    """ADePT on the diagonal pair (true loss 2 against its claim of 1), and a user's
    Laplace mechanism with half the noise it needs, which has no density declared:
    only the learned attack applies to it."""
    adept = mcdp.audit_delta(
        "adept", 1.0, 0.0, 4, 200_000, pair="diagonal", attack=SMALL, seed=SEED
    )
    assert adept.violated and adept.epsilon_lower > 1.0
    laplace = mcdp.get_mechanism("laplace")
    half = mcdp.Mechanism("half-noise", laplace.sample, claim="epsilon-DP")
    result = mcdp.audit_delta(
        half,
        1.0,
        0.0,
        1,
        200_000,
        pair="diagonal",
        attack="learned",
        params=LaplaceParams(scale=1.0),  # needs 2 for 1-DP on +-1
        seed=SEED,
    )
    assert result.violated and result.epsilon_lower > 1.0
    assert result.epsilon_exact is None  # nothing declared, nothing invented


def test_training_and_selection_never_draw_the_counted_keys(monkeypatch):
    """Every key the attack draws from is derived from fold_in(audit key, tag);
    none is the audit key, whose fold_in(., input) are the counted draws' keys."""
    seen = []
    real_draw = sampling.draw

    def spy(key, *args, **kwargs):
        seen.append(np.asarray(jax.random.key_data(key)))
        return real_draw(key, *args, **kwargs)

    monkeypatch.setattr(mcdp.attacks, "draw", spy)  # the attacks' one way to draw
    mcdp.audit_delta("laplace", 1.0, 0.0, 2, 4096, pair="axis", attack=SMALL, seed=7)
    assert len(seen) == 2  # the training and the selection sample
    audit_key = sampling.cell_key(7, f"delta/laplace/1.0/{0.0!r}/2/axis")
    attack_key = jax.random.fold_in(audit_key, ATTACK_KEY_TAG)
    counted = {
        bytes(np.asarray(jax.random.key_data(jax.random.fold_in(audit_key, i))))
        for i in range(2)
    }
    expected = [
        np.asarray(jax.random.key_data(jax.random.fold_in(attack_key, stage)))
        for stage in (1, 2)
    ]
    for key, wanted in zip(seen, expected, strict=True):
        assert np.array_equal(key, wanted)
        assert not np.array_equal(key, jax.random.key_data(audit_key))
        for i in range(2):  # the inputs' keys of the sample drawn
            impl = jax.random.key_impl(audit_key)
            derived = jax.random.fold_in(jax.random.wrap_key_data(key, impl=impl), i)
            assert bytes(np.asarray(jax.random.key_data(derived))) not in counted


def test_learned_with_one_event_runs_in_the_sanity_check():
    one = learned_attack(train_draws=2000, select_draws=4000, max_events=1)
    result = mcdp.audit("adept", 1.0, 8, 50_000, attack=one, seed=SEED)
    assert result.attack == "learned" and result.exact is None
    assert result.violated  # ADePT at d = 8 loses about 2.6 against its 1


def test_learned_mlp_runs():
    mlp = learned_attack(train_draws=2000, select_draws=4000, model="mlp")
    result = mcdp.audit_delta(
        "laplace", 1.0, 0.0, 2, 20_000, pair="axis", attack=mlp, seed=SEED
    )
    assert all(event.startswith("mlp score >=") for event in result.events)


def test_cli_learned_pure_epsilon_audit(capsys):
    from mcdp.cli import main

    args = [
        "audit", "--mechanism", "adept", "--epsilon", "1", "--dim", "4",
        "--pair", "diagonal", "--attack", "learned", "--draws", "5e4",
        "--train-draws", "2e3", "--select-draws", "4e3", "--max-events", "2",
        "--json",
    ]  # fmt: skip
    assert main(args) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["delta_claimed"] == 0.0  # no --delta: a pure-epsilon audit
    assert record["attack"] == "learned" and len(record["events"]) <= 2
    assert record["epsilon_lower"] == record["loss_lower"]
    assert record["epsilon_exact"] == pytest.approx(2.0)
    assert record["tradeoff"]["gdp_mu_lower"] >= 0
    assert record["attack_seconds"] <= record["seconds"]


def test_cli_learned_options_need_the_learned_attack(capsys):
    base = ["audit", "--mechanism", "laplace", "--epsilon", "1", "--dim", "2"]
    assert_one_line_error(
        capsys, base + ["--draws", "1e3", "--model", "mlp"], "--model", "learned"
    )
    assert_one_line_error(
        capsys,
        base + ["--draws", "1e3", "--attack", "lr", "--train-draws", "10"],
        "--train-draws",
    )
