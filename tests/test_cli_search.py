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


def test_search_a_callable_in_its_declared_domain(tmp_path, capsys, monkeypatch):
    """A NumPy function with half the noise its claim needs: the search, confined to
    the declared box by --domain, confirms a pair inside it and refutes the claim."""
    (tmp_path / "shipped.py").write_text(
        "def sample(rng, x, n):\n"
        "    return x[None, :] + rng.laplace(0.0, 0.5, size=(n, x.shape[0]))\n"
    )
    monkeypatch.chdir(tmp_path)
    args = [
        "search", "--callable", "shipped:sample", "--domain", "every-entry:1:0:2",
        "--dim", "2", "--epsilon", "1", "--budget", "3", "--confirm", "1",
        "--draws", "2e4", "--screen-draws", "5e3", "--attack", "majority",
        "--sources", "named,random", "--library", "numpy", "--json",
    ]  # fmt: skip
    assert main(args) == 0
    record = json.loads(capsys.readouterr().out)
    witness = record["witness_audit"]
    assert witness["callable"] == "shipped:sample"
    assert record["domain"] == {
        "relation": "every-entry", "size": 1.0, "low": 0.0, "high": 2.0,
        "integer": False, "window": [-1.0, 3.0],
    }  # fmt: skip
    for candidate in record["candidates"]:
        pair = candidate["pair"]
        assert all(0 <= v <= 2 for row in pair for v in row)
        assert all(abs(a - b) <= 1 for a, b in zip(*pair, strict=True))


def test_search_callable_errors(tmp_path, capsys, monkeypatch):
    (tmp_path / "shipped.py").write_text("def sample(rng, x, n):\n    return x\n")
    monkeypatch.chdir(tmp_path)
    base = ["search", "--epsilon", "1"]
    assert_one_line_error(
        capsys, base + ["--callable", "shipped:sample", "--dim", "2"], "--domain"
    )
    assert_one_line_error(
        capsys,
        base + ["--callable", "shipped:sample", "--dim", "2", "--domain", "box"],
        "--domain",
        "every-entry",
    )
    assert_one_line_error(
        capsys, base + ["--mechanism", "svt1", "--domain", "l2-ball"], "--domain"
    )
