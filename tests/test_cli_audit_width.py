"""Audits to a target width: the predictor against exact widths, the rounds against
one-shot audits, the budget's verdict, and the command line."""

import json
import math

import pytest

import mcdp.auditing as auditing
from mcdp import (
    Mechanism,
    audit,
    audit_to_width,
    audit_to_width_iter,
    draws_for_target,
    exact_e2,
    get_mechanism,
)
from mcdp.cli import main
from mcdp.sampling import BLOCK_DRAWS
from mcdp.statistics import (
    SEARCH_LIMIT,
    draws_for_width,
    draws_needed,
    expected_width,
    loss_estimate,
)

from conftest import SEED, assert_one_line_error


def _exact(name, epsilon, dim):
    m = get_mechanism(name)
    return exact_e2(m, m.e2_params(epsilon, dim), dim)


# --- the predictor ------------------------------------------------------------------


@pytest.mark.parametrize(
    "counts",
    [[[700, 300], [560, 440]], [[99415, 585], [1505, 98495]], [[9, 1], [2, 8]]],
)
def test_expected_width_at_integer_counts_is_the_estimate_width(counts):
    n = sum(counts[0])
    est = loss_estimate(counts, 0.9)
    width = expected_width(counts[0][1] / n, counts[1][1] / n, n, 0.9)
    assert width == pytest.approx(est.upper - est.lower, rel=1e-12)


@pytest.mark.parametrize(
    "name,epsilon,dim,width",
    [
        ("adept", 5.0, 8, 0.5),  # P[guess 1 | D] = 5.9e-6
        ("adept", 1.0, 2, 0.1),
        ("laplace", 1.0, 8, 0.1),
        ("random", 1.0, 8, 0.05),  # exact loss 0: the lower end stays at 0
    ],
)
def test_draws_for_width_is_the_smallest_multiple_that_reaches_the_width(
    name, epsilon, dim, width
):
    exact = _exact(name, epsilon, dim)
    p, q = exact.p1, exact.q1
    n = draws_for_width(p, q, width, 0.95, step=BLOCK_DRAWS)
    assert n % BLOCK_DRAWS == 0 and n > BLOCK_DRAWS
    assert expected_width(p, q, n, 0.95) <= width
    assert expected_width(p, q, n - BLOCK_DRAWS, 0.95) > width
    assert expected_width(p, q, n // 2, 0.95) > width
    # a tighter confidence or a narrower target needs more draws
    assert draws_for_width(p, q, width, 0.99, step=BLOCK_DRAWS) > n
    assert draws_for_width(p, q, width / 2, 0.95, step=BLOCK_DRAWS) > 3 * n


def test_draws_for_width_of_an_infinite_loss_is_infinite():
    exact = _exact("none", 1.0, 8)
    assert exact.loss == math.inf
    assert draws_for_width(exact.p1, exact.q1, 10.0) == math.inf
    # a finite loss whose rare cell is out of reach of the search
    assert draws_for_width(1e-16, 0.5, 1.0) == math.inf
    assert SEARCH_LIMIT < draws_for_width(1e-16, 0.5, 1.0, limit=SEARCH_LIMIT << 10)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"p": -0.1}, "p in"),
        ({"p_prime": 1.5}, "p_prime in"),
        ({"target_width": 0.0}, "target_width > 0"),
        ({"target_width": math.nan}, "target_width > 0"),
    ],
)
def test_draws_for_width_rejects_bad_arguments(kwargs, match):
    args = {"p": 0.1, "p_prime": 0.5, "target_width": 0.1} | kwargs
    with pytest.raises(ValueError, match=match):
        draws_for_width(**args)


def test_draws_needed_replaces_a_zero_cell_by_its_bound():
    """ADePT, epsilon 5, d 8: 2e5 draws usually see no guess 1 under D (P = 5.9e-6).
    The prediction then uses the Clopper-Pearson upper end of that cell and is a
    lower bound on the exact prediction."""
    n = 200_000
    needed = draws_needed([[n, 0], [40, n - 40]], 0.5, 0.95, step=BLOCK_DRAWS)
    assert needed.lower_bound
    assert needed.p == pytest.approx(1 - 0.0125 ** (1 / n), rel=1e-9)
    assert needed.p_prime == (n - 40) / n
    exact = _exact("adept", 5.0, 8)
    exact_needed = draws_for_width(exact.p1, exact.q1, 0.5, step=BLOCK_DRAWS)
    assert n < needed.draws < exact_needed
    # a row that never guesses 0 takes the lower end of its proportion instead
    mirrored = draws_needed([[n - 40, 40], [0, n]], 0.5, 0.95, step=BLOCK_DRAWS)
    assert mirrored.lower_bound and mirrored.p_prime == 1 - needed.p
    # without zero cells the counts' proportions are used as they are
    plain = draws_needed([[700, 300], [560, 440]], 0.1)
    assert not plain.lower_bound and (plain.p, plain.p_prime) == (0.3, 0.44)
    assert plain.draws == draws_for_width(0.3, 0.44, 0.1)


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
        e2_params=laplace.e2_params,
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


# --- the command line ---------------------------------------------------------------

AUDIT = ["audit", "--mechanism", "adept", "--epsilon", "1", "--dim", "2"]
TARGET_FIELDS = {
    "target_width",
    "max_draws",
    "round_draws",
    "width",
    "target_met",
    "rounds",
    "draws_needed",
    "draws_needed_is_lower_bound",
    "draws_needed_exact",
    "outcome",
}


def test_cli_json_adds_the_target_fields(capsys):
    args = AUDIT + ["--target-width", "0.2", "--draws", "2048", "--json"]
    assert main(args + ["--seed", str(SEED)]) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)  # exactly one object on stdout
    assert TARGET_FIELDS | {"counts", "loss", "loss_lower", "loss_upper"} <= (
        record.keys()
    )
    assert record["target_met"] and record["width"] <= 0.2
    assert record["rounds"][0] == 2048 and record["rounds"][-1] == record["draws"]
    assert record["max_draws"] == 10**10
    assert record["draws_needed_exact"] == draws_for_target("adept", 1.0, 2, 0.2)
    # the plan and the rounds go to stderr, beside the progress bar
    assert "before the run" in captured.err and "round 1:" in captured.err


def test_cli_table_prints_plan_rounds_and_outcome(capsys):
    args = AUDIT + ["--target-width", "0.05", "--draws", "1e3", "--max-draws", "4e3"]
    assert main(args) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("target: a 95% loss interval at most 0.05 wide")
    assert "more than --max-draws allows" in lines[1]
    assert lines[2].startswith("round 1:") and "1,024 draws" in lines[2]
    assert lines[3].startswith("round 2:") and "4,000 draws" in lines[3]
    assert "privacy loss" in out
    assert lines[-1].startswith("target not met") and "would be needed" in lines[-1]


def test_cli_interrupt_prints_the_partial_result(capsys, monkeypatch):
    real = auditing.audit_to_width_iter

    def interrupted(*args, **kwargs):
        yield next(real(*args, **kwargs))
        raise KeyboardInterrupt

    monkeypatch.setattr(auditing, "audit_to_width_iter", interrupted)
    args = AUDIT + ["--target-width", "0.01", "--draws", "2048", "--json"]
    assert main(args) == 130
    record = json.loads(capsys.readouterr().out)
    assert record["interrupted"] and not record["target_met"]
    assert record["outcome"].startswith("interrupted in round 2")


@pytest.mark.parametrize(
    "extra,fragments",
    [
        (["--target-width", "0"], ["--target-width", "> 0"]),
        (["--target-width", "-1"], ["--target-width", "> 0"]),
        (["--target-width", "inf"], ["--target-width", "> 0"]),
        (["--target-width", "wide"], ["--target-width", "a number"]),
        (["--target-width", "1", "--max-draws", "0"], ["--max-draws", "[1, "]),
        (["--target-width", "1", "--max-draws", "1.5"], ["--max-draws", "integer"]),
        (["--target-width", "1", "--max-draws", "1e3", "--draws", "2e3"],
         ["--draws", "--max-draws"]),
        (["--max-draws", "1e3", "--draws", "10"], ["--max-draws", "--target-width"]),
        ([], ["--draws", "--target-width"]),
        (["--target-width", "1", "--delta", "0.1", "--draws", "10"],
         ["--target-width", "--delta"]),
    ],
)  # fmt: skip
def test_cli_errors(capsys, extra, fragments):
    assert_one_line_error(capsys, AUDIT + extra, *fragments)
