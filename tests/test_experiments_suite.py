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
    assert ("noisy-hist2", "one-above", "learned") in paths
    narrowed = SuiteGrid(draws=10, mechanisms=("svt1",), pairs=("half-half",))
    assert [c.path for c in narrowed.validated().cells()] == [
        ("svt1", "half-half", "learned")
    ]
    with pytest.raises(ValueError, match="mechanisms"):
        SuiteGrid(draws=10, mechanisms=("laplace",)).validated()


def test_noisy_hist2_is_refuted_and_the_file_resumes(tmp_path):
    """Noisy histogram with its scale inverted: claims 0.1, loses 10 on one entry."""
    spec = SuiteGrid(
        draws=50_000,
        mechanisms=("noisy-hist1", "noisy-hist2"),
        pairs=("one-above",),
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
