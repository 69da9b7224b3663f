"""``mcdp search``: the JSON contract of the input search, and one-line errors."""

import json

from mcdp.cli import main

from conftest import assert_one_line_error


def test_search_json_contract(capsys):
    args = [
        "search", "--mechanism", "noisy-hist2", "--epsilon", "0.1", "--budget", "3",
        "--confirm", "2", "--attack", "lr", "--draws", "1e4", "--screen-draws", "5e3",
        "--sources", "named,random", "--json",
    ]  # fmt: skip
    assert main(args) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["mechanism"] == "noisy-hist2" and record["budget"] == 3
    assert len(record["candidates"]) == 3
    assert sum(c["confirmed"] for c in record["candidates"]) == 2
    assert {c["source"] for c in record["candidates"]} <= {"named", "random"}
    assert record["witness_audit"]["confidence"] == 1 - 0.05 / 2
    assert record["domain"]["relation"] == "one-entry"


def test_search_errors(capsys):
    base = ["search", "--epsilon", "0.1"]
    assert_one_line_error(capsys, base + ["--mechanism", "dptext"], "--mechanism")
    assert_one_line_error(
        capsys,
        base + ["--mechanism", "svt1", "--budget", "0"],
        "--budget",
        "[1, 10000]",
    )
    assert_one_line_error(
        capsys, base + ["--mechanism", "svt1", "--delta", "1"], "--delta", "[0, 1)"
    )
    assert_one_line_error(
        capsys, base + ["--mechanism", "svt1", "--sources", "grid"], "--sources"
    )
    assert_one_line_error(
        capsys,
        base + ["--mechanism", "svt1", "--budget", "2", "--confirm", "3"],
        "confirm",
        "[1, 2]",
    )
    assert_one_line_error(capsys, base + ["--mechanism", "laplace"], "--dim")
