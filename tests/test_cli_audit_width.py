"""``mcdp audit --target-width``: the JSON fields, the printed plan, rounds and
outcome, an interrupted run, and the argument errors."""

import json

import pytest

import mcdp.cli.audit as cli_audit
from mcdp import draws_for_target
from mcdp.cli import main

from conftest import SEED, assert_one_line_error

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
    real = cli_audit.run_iter

    def interrupted(*args, **kwargs):
        yield next(real(*args, **kwargs))
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_audit, "run_iter", interrupted)
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
