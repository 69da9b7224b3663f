"""The benchmark-suite grid: its cells, its file, and a flagged broken case."""

import json

import pytest

from mcdp.experiments import GRIDS, SuiteGrid, run_grid
from mcdp.mechanisms.suite import SUITE

from conftest import FAIL_PROB, assert_one_line_error


def test_the_suite_is_a_grid_of_every_case_and_its_pairs():
    assert GRIDS["benchmarks"] is SuiteGrid
    cells = SuiteGrid(draws=10).validated().cells()
    assert len(cells) == sum(len(case.pairs) for case in SUITE.values())
    paths = {cell.path for cell in cells}
    assert ("noisy-hist2", "one-above", "auto") in paths  # the default attack
    narrowed = SuiteGrid(
        draws=10, mechanisms=("svt1",), pairs=("half-half",), attacks=("learned", "lr")
    )
    assert [c.path for c in narrowed.validated().cells()] == [
        ("svt1", "half-half", "learned"),
        ("svt1", "half-half", "lr"),
    ]
    with pytest.raises(ValueError, match="mechanisms"):
        SuiteGrid(draws=10, mechanisms=("laplace",)).validated()
    with pytest.raises(ValueError, match="attacks"):
        SuiteGrid(draws=10, attacks=()).validated()
    with pytest.raises(ValueError, match="attacks"):
        SuiteGrid(draws=10, attacks=("sniper",)).validated()


def test_noisy_hist2_is_refuted_and_the_file_resumes(tmp_path):
    """Noisy histogram with its scale inverted: claims 0.1, loses 10 on one entry."""
    spec = SuiteGrid(
        draws=50_000,
        mechanisms=("noisy-hist1", "noisy-hist2"),
        pairs=("one-above",),
        attacks=("learned",),
        train_draws=5000,
        select_draws=20_000,
        confidence=1 - FAIL_PROB,  # so that "below the exact loss" holds at budget
    )
    out = tmp_path / "suite.json"
    data = run_grid(spec, out)
    broken = data["noisy-hist2"]["one-above"]["learned"]
    assert broken["violated"] and 5 < broken["epsilon_lower"] <= 10.0
    assert broken["epsilon_exact"] == pytest.approx(10.0)
    correct = data["noisy-hist1"]["one-above"]["learned"]
    assert correct["epsilon_lower"] <= correct["epsilon_exact"] == pytest.approx(0.1)
    seen = []
    run_grid(spec, out, on_cell=lambda r, resumed: seen.append(resumed))
    assert seen == [True, True]
    assert json.loads(out.read_text())["_meta"]["train_draws"] == 5000
    # the figures draw from the file as it is
    from mcdp import plotting

    table = plotting.suite_table(data)
    assert [t.get_text() for t in table.axes[0].get_yticklabels()] == [
        "noisy-hist1",
        "noisy-hist2",
    ]
    curves = plotting.tradeoff([broken, correct])
    assert len(curves.axes) == 2


def test_cli_grid_benchmarks_checks_its_options(capsys, tmp_path):
    out = str(tmp_path / "s.json")
    base = ["grid", "benchmarks", "--draws", "100", "--out", out]
    assert_one_line_error(capsys, base + ["--dims", "3"], "--dims", "acl2022")
    assert_one_line_error(capsys, base + ["--pairs", "nope"], "--pairs")
    assert_one_line_error(capsys, base + ["--attacks", "nope"], "--attacks", "auto")
    acl = ["grid", "acl2022", "--draws", "100", "--out", out]
    assert_one_line_error(capsys, acl + ["--attacks", "lr"], "--attacks", "benchmarks")


def test_cli_grid_benchmarks_runs_the_attacks_asked_for(capsys, tmp_path):
    from mcdp.cli import main

    out = tmp_path / "s.json"
    args = ["grid", "benchmarks", "--draws", "2000", "--out", str(out)]
    args += ["--mechanisms", "truncated-geometric", "--pairs", "scalar-0-1"]
    assert main(args + ["--attacks", "majority,lr"]) == 0
    cells = json.loads(out.read_text())["truncated-geometric"]["scalar-0-1"]
    assert sorted(cells) == ["lr", "majority"]
    assert {c["attack"] for c in cells.values()} == {"lr", "majority"}


def test_the_suite_figure_shows_the_cells_of_its_attack():
    """A file may hold the cells of several attacks (the learned attack's of earlier
    versions beside the default's): the figure shows those of its own, and names
    the attack that each case's bar counted."""
    from mcdp import plotting
    from mcdp.figures import SUITE_ATTACK

    def cell(lower, attack):
        return {"epsilon": 0.1, "epsilon_lower": lower, "epsilon_exact": 0.1,
                "pair": "one-above", "attack": attack}  # fmt: skip

    auto = cell(4.0, "float-support")
    grid = {
        "_meta": {"draws": 10},
        "noisy-hist1": {"one-above": {"learned": cell(0.05, "learned"), "auto": auto}},
        "svt1": {"one-above": {"learned": cell(0.02, "learned")}},
    }
    assert SUITE_ATTACK == "auto"
    only = plotting.attack_cells(grid, "auto")
    assert only["_meta"] == grid["_meta"]
    assert only["noisy-hist1"] == {"one-above": {"auto": auto}}
    assert only["svt1"] == {"one-above": {}}
    assert plotting.strongest_cell(only["svt1"]) is None
    figure = plotting.suite_table(only, "auto")
    table = figure.axes[0]
    assert [t.get_text() for t in table.get_yticklabels()] == ["noisy-hist1"]
    assert [t.get_text() for t in table.texts] == ["one-above, float-support"]
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert "float-support's: the float64 outputs" in legend
    # every cell: the strongest of either attack, and no hatch where none won
    both = plotting.suite_table(grid).axes[0]
    assert [t.get_text() for t in both.texts] == [
        "one-above, float-support",
        "one-above, learned",
    ]
    learned = plotting.suite_table(plotting.attack_cells(grid, "learned"), "learned")
    assert [t.get_text() for t in learned.axes[0].texts] == ["one-above, learned"] * 2
    legend = [t.get_text() for t in learned.legends[0].get_texts()]
    assert "float-support's: the float64 outputs" not in legend
