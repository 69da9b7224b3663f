"""``mcdp audit``: the JSON contract, one-line errors with exit status 2 and no
partial output, and the (epsilon, delta) audits of ``--delta``."""

import functools
import json
import math

import pytest

from mcdp.cli import main

from conftest import AUDIT_FIELDS, assert_one_line_error

AUDIT = [
    "audit",
    "--mechanism",
    "adept",
    "--epsilon",
    "1",
    "--dim",
    "4",
    "--draws",
    "2e3",
]


def test_audit_json_contract(capsys):
    assert main(AUDIT + ["--json", "--seed", "7", "--confidence", "0.9"]) == 0
    out = capsys.readouterr().out
    record = json.loads(out)  # exactly one object
    assert AUDIT_FIELDS <= record.keys()
    assert (
        record["draws"] == 2000 and record["seed"] == 7 and record["confidence"] == 0.9
    )
    assert sum(record["counts"][0]) == sum(record["counts"][1]) == 2000
    assert record["loss_lower"] <= record["loss"] <= record["loss_upper"]


def test_audit_json_writes_infinity(capsys):
    main(
        [
            "audit",
            "--mechanism",
            "none",
            "--epsilon",
            "1",
            "--dim",
            "2",
            "--draws",
            "100",
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert '"loss": Infinity' in out and '"exact": Infinity' in out
    assert math.isinf(json.loads(out)["loss"])


def test_audit_table(capsys):
    assert main(AUDIT) == 0
    out = capsys.readouterr().out
    assert "privacy loss" in out and "exact" in out and "violated" in out


@pytest.mark.parametrize(
    "change,name",
    [
        (["--epsilon", "0"], "--epsilon"),
        (["--epsilon", "-1"], "--epsilon"),
        (["--epsilon", "nan"], "--epsilon"),
        (["--epsilon", "inf"], "--epsilon"),
        (["--epsilon", "abc"], "--epsilon"),
        (["--dim", "0"], "--dim"),
        (["--dim", "1.5"], "--dim"),
        (["--draws", "0"], "--draws"),
        (["--draws", "2.5"], "--draws"),
        (["--draws", "lots"], "--draws"),
        (["--confidence", "1"], "--confidence"),
        (["--confidence", "0"], "--confidence"),
        (["--mechanism", "gauss"], "--mechanism"),
        (["--nan-policy", "drop"], "--nan-policy"),
        (["--nan-policy", "zero"], "--nan-policy"),  # adept has no NaN policy
        (["--dtype", "float16"], "--dtype"),
    ],
)
def test_audit_errors(capsys, change, name):
    args = list(AUDIT)
    for flag, value in zip(change[::2], change[1::2], strict=True):
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    assert_one_line_error(capsys, args, name)


def test_unknown_mechanism_lists_the_known_ones(capsys):
    args = ["audit", "--mechanism", "x", "--epsilon", "1", "--dim", "1"]
    assert_one_line_error(capsys, args + ["--draws", "1"], "--mechanism", "adept")


DELTA = [
    "audit", "--mechanism", "trlaplace", "--epsilon", "1", "--dim", "300",
    "--draws", "2e3", "--delta", "0.000833",
]  # fmt: skip


DELTA_FIELDS = {"delta_claimed", "delta_lower", "delta_estimate", "attack", "pair"}


def test_delta_audit_json_contract(capsys):
    assert main(DELTA + ["--pair", "axis", "--attack", "support", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert DELTA_FIELDS | {"violated", "mechanism", "counts", "loss"} <= record.keys()
    assert record["pair"] == "axis" and record["attack"] == "support"
    assert record["delta_claimed"] == 0.000833
    # TrLaplace leaves a slab of mass ~0.96 that only +C e_1 can reach
    assert record["violated"] and record["delta_lower"] > 0.9


def test_delta_audit_defaults_and_table(capsys):
    args = ["audit", "--mechanism", "gaussian", "--epsilon", "1", "--dim", "8"]
    # the portfolio's own samples at 5e3 rather than their floor of 1e5: the
    # defaults under test are the attack, the pair and the table
    small = ["--train-draws", "5e3", "--select-draws", "5e3"]
    assert main(args + ["--draws", "2e3", "--delta", "0.01", *small]) == 0
    out = capsys.readouterr().out
    assert "axis pair" in out and "likelihood" not in out
    # the default attack is the portfolio: the text names its winner and scores
    assert "auto chose" in out and "promised on the selection draws: " in out


def test_the_selection_line_says_why_a_lower_promise_was_chosen():
    """The portfolio's line ranks the promises, best first, and says why the one
    counted is not the best where it is not (the choice margin)."""
    from types import SimpleNamespace

    from mcdp.cli._text import _selection_line

    selection = {"learned": 0.21, "learned-mlp": 0.24, "majority": -0.01}
    record = functools.partial(
        SimpleNamespace, selection=selection, screened=None, screen_steps=None
    )
    (kept,) = _selection_line(record(attack="learned"))
    assert kept.startswith(
        "auto chose learned; promised on the selection draws: "
        "learned-mlp 0.24, learned 0.21, majority -0.01 (learned is earlier"
    )
    (best,) = _selection_line(record(attack="learned-mlp"))
    assert best.endswith("majority -0.01")
    # the candidates left at the screening are named, with its size
    (screened,) = _selection_line(
        record(attack="learned-mlp", screened=["majority"], screen_draws=1_249_280)
    )
    assert screened.endswith(
        "majority -0.01; judged on the first 1,249,280 selection draws per dataset "
        "alone, and left there: majority"
    )
    # and where scorers were left, on how many training steps they were judged
    (piloted,) = _selection_line(
        record(
            attack="majority",
            screened=["learned"],
            screen_draws=1_048_576,
            screen_steps=100,
        )
    )
    assert piloted.endswith(
        "left there: learned (the scorers among them trained for it on 100 steps)"
    )
    # where the choice was made there, the rest of the selection draws not drawn
    (settled,) = _selection_line(
        record(
            attack="lr",
            selection={"lr": 0.3, "learned": 0.31},
            screened=["lr", "learned"],
            screen_draws=1_048_576,
            screen_steps=100,
        )
    )
    assert settled.endswith(
        "margin of the best promise's noise); chosen on the first 1,048,576 "
        "selection draws per dataset alone, the rest not drawn (the scorers among "
        "them trained for it on 100 steps)"
    )


@pytest.mark.parametrize(
    "extra,name",
    [
        (["--delta", "1"], "--delta"),
        (["--delta", "-0.1"], "--delta"),
        (["--pair", "ring"], "--pair"),
        (["--attack", "guess"], "--attack"),
        (["--clip", "0"], "--clip"),
    ],
)
def test_delta_audit_errors(capsys, extra, name):
    args = list(DELTA)
    if extra[0] == "--delta":
        args[args.index("--delta") + 1] = extra[1]
    else:
        args += extra
    assert_one_line_error(capsys, args, name)


def test_a_pair_without_delta_audits_pure_epsilon(capsys):
    args = ["audit", "--mechanism", "laplace", "--epsilon", "1", "--dim", "2"]
    extra = ["--draws", "1000", "--pair", "axis", "--attack", "lr", "--json"]
    assert main(args + extra) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["delta_claimed"] == 0.0 and record["attack"] == "lr"
    assert record["violated"] == (record["epsilon_lower"] > 1.0)


def test_support_attack_needs_bounded_noise(capsys):
    args = ["audit", "--mechanism", "gaussian", "--epsilon", "1", "--dim", "2"]
    args += ["--draws", "10", "--delta", "0.1", "--attack", "support"]
    assert_one_line_error(capsys, args, "support")


def test_delta_audit_with_a_pair_from_a_npy_file(tmp_path, capsys):
    import numpy as np

    path = tmp_path / "pair.npy"
    np.save(path, np.stack([np.full(4, 0.5), np.full(4, -0.5)]))
    args = ["audit", "--mechanism", "gaussian", "--epsilon", "1", "--dim", "4"]
    args += ["--draws", "2e3", "--delta", "0.01", "--pair", str(path), "--json"]
    assert main(args + ["--attack", "lr"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["pair"] == "custom" and record["dim"] == 4
    np.save(path, np.zeros((3, 4)))
    assert_one_line_error(capsys, args[:-1], "--pair")
