"""``mcdp sensitivity``: the JSON contract of the sensitivity search, and one-line
errors."""

import json

from mcdp.cli import main

from conftest import assert_one_line_error


def test_sensitivity_json_contract(capsys):
    args = ["sensitivity", "--dims", "1,4", "--restarts", "8", "--json"]
    assert main(args) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    assert [r["dim"] for r in records] == [1, 4]
    for r in records:
        assert {"dim", "clip", "max_l1", "claimed", "theorem"} <= r.keys()
        assert r["max_l1"] >= 0.999 * r["theorem"]
    assert records[1]["max_l1"] > records[1]["claimed"]  # 2C*sqrt(4) = 4C > 2C


def test_sensitivity_errors(capsys):
    assert_one_line_error(capsys, ["sensitivity", "--restarts", "0"], "--restarts")
    assert_one_line_error(capsys, ["sensitivity", "--clip", "linf"], "--clip")
