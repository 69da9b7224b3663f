"""``mcdp violations``: the JSON contract of the EMNLP 2021 violations, the L1
control, and one-line errors."""

import json

import pytest

from mcdp.cli import main

from conftest import assert_one_line_error


def test_violations_json_contract(capsys):
    args = ["violations", "--dist", "uniform,normal", "--dims", "1-3,16"]
    assert main(args + ["--pairs", "2e3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    records = out["records"]
    assert [(r["dist"], r["dim"]) for r in records] == [
        (d, n) for d in ("uniform", "normal") for n in (1, 2, 3, 16)
    ]
    fields = {"dist", "dim", "pairs", "violations", "fraction"}
    assert fields | {"fraction_lower", "fraction_upper"} <= records[0].keys()
    assert records[0]["violations"] == 0  # n = 1: L2 clipping is L1 clipping
    assert all(r["pairs"] == 2000 for r in records)


def test_violations_l1_control_is_zero(capsys):
    args = ["violations", "--dims", "2,8,64", "--pairs", "5e3", "--clip", "l1"]
    assert main(args + ["--json"]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    assert all(r["violations"] == 0 for r in records)


@pytest.mark.parametrize(
    "extra,name",
    [
        (["--dist", "cauchy"], "--dist"),
        (["--dims", "0"], "--dims"),
        (["--dims", "9-3"], "--dims"),
        (["--pairs", "0"], "--pairs"),
        (["--clip", "l3"], "--clip"),
        (["--C", "-1"], "--C"),
        (["--normal-reading", "sd"], "--normal-reading"),
    ],
)
def test_violations_errors(capsys, extra, name):
    assert_one_line_error(capsys, ["violations", "--dims", "2"] + extra, name)
