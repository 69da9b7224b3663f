"""Audits to a target width: the draws the target needs before the run, the rounds
against one-shot audits, the budget's verdict, the argument checks. The predictor
itself (``draws_for_width``, ``draws_needed``) is tested in ``test_statistics.py``, the
command line in ``test_cli_audit_width.py``."""

import math

import pytest

from mcdp import (
    Mechanism,
    audit,
    audit_to_width,
    audit_to_width_iter,
    draws_for_target,
    exact_e2,
    get_mechanism,
)
from mcdp.sampling import BLOCK_DRAWS
from mcdp.statistics import draws_for_width

from conftest import SEED


def _exact(name, epsilon, dim):
    m = get_mechanism(name)
    return exact_e2(m, m.calibrate_sanity_check(epsilon, dim), dim)


# --- the draws before the run ----------------------------------------------------


def test_draws_for_target_uses_the_exact_probabilities():
    exact = _exact("adept", 1.0, 2)
    assert draws_for_target("adept", 1.0, 2, 0.1) == draws_for_width(
        exact.p1, exact.q1, 0.1, step=BLOCK_DRAWS
    )
    assert draws_for_target("none", 1.0, 2, 0.1) == math.inf
    laplace = get_mechanism("laplace")
    unknown = Mechanism(
        "no-closed-form",
        laplace.sample,
        calibrate_sanity_check=laplace.calibrate_sanity_check,
        log_round_one=None,
        claim="epsilon-DP",
    )
    assert draws_for_target(unknown, 1.0, 2, 0.1) is None
    with pytest.raises(ValueError, match="target_width > 0"):
        draws_for_target("adept", 1.0, 2, -1.0)


# --- the rounds ---------------------------------------------------------------------


def test_rounds_reproduce_audit_counts_and_stop_at_the_target():
    width = 0.1
    exact_needed = draws_for_target("laplace", 1.0, 8, width)
    steps = list(
        audit_to_width_iter("laplace", 1.0, 8, width, first_draws=1000, seed=SEED)
    )
    ends = [s for s in steps if s.audit.draws == s.round_draws]
    final = steps[-1]
    assert [s.audit.interrupted for s in steps] == [True] * (len(steps) - 1) + [False]
    assert final.rounds == [s.audit.draws for s in ends]
    assert final.rounds[0] == BLOCK_DRAWS  # 1000 rounded up to a whole block
    for before, after in zip(final.rounds, final.rounds[1:], strict=False):
        assert after % BLOCK_DRAWS == 0 and after >= 2 * before
    # the counts of every round are those of one audit of that many draws
    for s in ends:
        assert (
            s.audit.counts == audit("laplace", 1.0, 8, s.audit.draws, seed=SEED).counts
        )
    assert final.target_met and final.width <= width
    assert all(s.width > width and not s.target_met for s in ends[:-1])
    assert final.draws_needed_exact == exact_needed
    assert final.audit.draws <= 4 * exact_needed
    assert final.outcome.startswith("target met")


def test_tiny_budget_reports_the_draws_the_target_needs():
    """ADePT, epsilon 5, d 8, P[guess 1 | D] = 5.9e-6: a width of 0.5 needs ~1.4e7
    draws per dataset; a budget of 2e5 cannot reach it and says so."""
    budget = 200_000
    result = audit_to_width("adept", 5.0, 8, 0.5, max_draws=budget, seed=SEED)
    assert not result.target_met and result.width > 0.5
    assert result.audit.draws == budget and not result.audit.interrupted
    assert result.rounds[-1] == budget  # the last round is cut at the budget
    assert result.audit.counts == audit("adept", 5.0, 8, budget, seed=SEED).counts
    assert result.draws_needed > budget
    assert result.draws_needed_exact > 50 * budget
    assert result.outcome.startswith("target not met")
    assert f"{result.draws_needed:,} draws per dataset would be needed" in (
        result.outcome
    )
    if result.draws_needed_is_lower_bound:
        assert "never seen: guess 1 under D" in result.outcome
        assert result.draws_needed < result.draws_needed_exact


def test_infinite_loss_never_meets_the_target_and_says_why():
    result = audit_to_width("none", 1.0, 2, 1.0, max_draws=8192, first_draws=1024)
    assert result.rounds[0] == 1024 and result.rounds[-1] == 8192
    assert not result.target_met and result.width == math.inf
    assert result.draws_needed_is_lower_bound and result.draws_needed > 8192
    assert result.draws_needed_exact == math.inf
    assert "guess 1 under D" in result.outcome and "guess 0 under D'" in result.outcome


def test_first_round_may_be_the_whole_budget():
    result = audit_to_width("adept", 1.0, 2, 1e-3, max_draws=1000, first_draws=1000)
    assert result.rounds == [1000] and result.audit.draws == 1000
    assert result.draws_needed > 1000 and not result.target_met


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"target_width": 0.0}, "target_width > 0"),
        ({"target_width": math.inf}, "target_width > 0"),
        ({"max_draws": 0}, "max_draws"),
        ({"max_draws": 1 << 41}, "max_draws"),
        ({"first_draws": 2000, "max_draws": 1000}, "first_draws"),
        ({"epsilon": -1.0}, "epsilon > 0"),
        ({"mechanism": "nope"}, "adept, adept-l1"),
    ],
)
def test_api_errors_name_the_argument(kwargs, match):
    args = {"mechanism": "laplace", "epsilon": 1.0, "dim": 2, "target_width": 0.5}
    with pytest.raises(ValueError, match=match):
        audit_to_width(**(args | kwargs))
