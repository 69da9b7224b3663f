"""``benchmarks/bench_choice.py`` records the attack that an audit prepares, and
compares two such records choice by choice."""

import json

from conftest import load_benchmark

bench_auto = load_benchmark("bench_auto")
bench_choice = load_benchmark("bench_choice")


def test_the_choice_is_the_audits_own():
    """The row's candidate and events are those that the audit of the same case,
    draws and seed counts; an outcome attack has no thresholds, the exact loss one
    fewer than its outcomes."""
    draws = 20_000
    for case in ("truncated-geometric", "report-noisy-max2"):
        row = bench_choice.choice(case, draws, 0, ideal=False)
        record, _ = bench_auto._run(case, "auto", draws, 0)
        assert row["attack"] == record.attack
        assert row["events"] == record.events
        assert row["selection"] == record.selection
        if row["attack"] in bench_choice.OUTCOMES:
            assert row["thresholds"] is None
        else:
            assert len(row["thresholds"]) == len(row["events"])
        assert row["prep_seconds"] > 0 and "choice" in row["stages"]


def test_compare_tells_a_threshold_apart(tmp_path, capsys):
    """Two files with the same choice compare as the same; a threshold one bit
    apart, or another candidate, as different."""
    row = bench_choice.choice("truncated-geometric", 20_000, 0, ideal=False)
    assert row["thresholds"]
    moved = dict(row, thresholds=[*row["thresholds"][:-1], "0x1.0000000000001p+0"])
    other = dict(row, seed=1, attack="majority", thresholds=None)
    paths = []
    for name, rows in (("a", [row, dict(row, seed=1)]), ("b", [moved, other])):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps({"results": rows}))
    bench_choice.compare(f"{paths[0]},{paths[0]}")
    assert capsys.readouterr().out.endswith("2 of 2 the same\n")
    bench_choice.compare(f"{paths[0]},{paths[1]}")
    out = capsys.readouterr().out
    assert out.count("DIFFERENT") == 2 and out.endswith("0 of 2 the same\n")
