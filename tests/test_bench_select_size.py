"""``benchmarks/bench_select_size.py`` runs the default audit with each selection
sample it is given, and sets each bound beside the case's ceiling."""

import pytest

from mcdp.attacks import learned_sizes
from mcdp.ceiling import ceiling

from conftest import load_benchmark

bench_select_size = load_benchmark("bench_select_size")


def test_each_selection_size_is_the_audits_own(monkeypatch):
    """The row of the default's own selection size is the default audit's, to the
    last bit; a row per size and seed, each beside the ceiling at its draws."""
    monkeypatch.setattr(bench_select_size, "WARMUP_DRAWS", 1_000)
    draws, case = 20_000, "truncated-geometric"
    default = learned_sizes(draws)[1]
    rows = list(bench_select_size.rows([case], [default, 20_000], [0, 1], draws))
    assert [(r["select_draws"], r["seed"]) for r in rows] == [
        (default, 0), (default, 1), (20_000, 0), (20_000, 1),
    ]  # fmt: skip
    for seed in (0, 1):
        record, _ = bench_select_size._run(case, "auto", draws, seed)
        assert rows[seed]["bound"] == record.epsilon_lower
        assert rows[seed]["attack"] == record.attack
    top = ceiling(case, draws=draws).value
    for r in rows:
        assert r["ceiling"] == top and r["draws"] == draws
        assert r["audit_seconds"] >= r["prep_seconds"] > 0
        if top:
            assert r["bound_over_ceiling"] == pytest.approx(r["bound"] / top)


def test_a_case_without_a_ceiling_has_none(monkeypatch):
    """Where the ceiling is not computed (``laplace-float``, whose best event is
    its float support), the row says so, blank in the table, rather than stopping
    the run."""
    with pytest.raises(ValueError, match="computed output probabilities"):
        ceiling("laplace-float", draws=2_000)
    monkeypatch.setattr(bench_select_size, "WARMUP_DRAWS", 1_000)
    (row,) = bench_select_size.rows(["laplace-float"], [20_000], [0], 2_000)
    assert row["ceiling"] is None and row["bound_over_ceiling"] is None
    assert bench_select_size._line(row).startswith("| `laplace-float` | 2e+04 | 0 |")
