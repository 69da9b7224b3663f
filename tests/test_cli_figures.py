"""``mcdp figures``: every figure end to end (slow) and from small real results,
one figure through the command, and an unknown figure name."""

import json

import pytest

from mcdp.cli import main

from conftest import assert_one_line_error


@pytest.mark.slow
def test_figures_end_to_end_at_tiny_draws(tmp_path, capsys, monkeypatch):
    """Every figure at tiny draws. The learned attacks train and select on at
    least their floor of draws (``attacks.MIN_DRAWS``, 1e5 per input), which the
    suite's grid pays in each of its cells: lowered to the draws here, so that the
    test's time goes to the figures' code rather than to training."""
    from mcdp import attacks

    monkeypatch.setattr(attacks, "MIN_DRAWS", 2000)
    out, cache = tmp_path / "figures", tmp_path / "results"
    args = ["figures", "--out", str(out), "--cache", str(cache)]
    args += ["--draws", "2e3", "--pairs", "200", "--e4-draws", "2e3"]
    args += ["--suite-draws", "2e3"]
    assert main(args) == 0
    names = (
        "acl2022-fig1",
        "acl2022-fig2",
        "emnlp2021-fig1",
        "emnlp2021-fig1-extended",
        "trlaplace-audit",
        "benchmarks-suite",
        "benchmarks-tradeoff",
    )
    for name in names:
        for ext in ("png", "pdf", "json"):
            path = out / f"{name}.{ext}"
            assert path.exists() and path.stat().st_size > 1000, path
    emnlp = json.loads((out / "emnlp2021-fig1.json").read_text())["records"]
    assert max(r["dim"] for r in emnlp) == 64
    control = [r for r in emnlp if r["clip"] == "l1"]
    assert control and all(r["violations"] == 0 for r in control)
    suite = json.loads((out / "benchmarks-suite.json").read_text())
    cells = [c for n, p in suite.items() if n != "_meta" for c in p.values()]
    assert cells and all(list(c) == ["auto"] for c in cells)  # the default attack
    # a rerun recomputes nothing: the caches are complete
    before = {p.name: p.stat().st_mtime for p in cache.iterdir()}
    assert main(args + ["--only", "acl2022-fig1,emnlp2021-fig1"]) == 0
    assert {p.name: p.stat().st_mtime for p in cache.iterdir()} == before


def test_figures_unknown_name(capsys):
    assert_one_line_error(capsys, ["figures", "--only", "fig9"], "figure")


def test_every_figure_draws_from_small_real_results(tmp_path):
    """The default run's version of the end-to-end test: every plotting function on
    the output of small real runs, saved through the same path as mcdp figures."""
    import jax

    from mcdp import Acl2022Grid, TrLaplaceGrid, plotting, run_grid
    from mcdp.experiments.acl2022 import sampler_histograms
    from mcdp.figures import _save
    from mcdp.violations import count_violations

    grid = run_grid(
        Acl2022Grid(draws=2000, mechanisms=("none", "laplace", "adept"), dims=(1, 8)),
        tmp_path / "acl.json",
    )
    records = [
        r.to_dict()
        for dist, clip in (("uniform", "l2"), ("normal", "l2"), ("uniform", "l1"))
        for r in count_violations(jax.random.key(0), dist, [1, 2, 3, 8], 500, clip=clip)
    ]
    e4 = run_grid(
        TrLaplaceGrid(draws=2000, mechanisms=("trlaplace",), epsilons=(0.5, 1.0)),
        tmp_path / "e4.json",
    )
    figures = {
        "acl2022-fig1": (plotting.acl2022_fig1(grid), grid),
        "acl2022-fig2": (
            plotting.acl2022_fig2(h := sampler_histograms(jax.random.key(0), 5000)),
            h,
        ),
        "emnlp2021-fig1": (plotting.emnlp2021_fig1(records), {"records": records}),
        "trlaplace-audit": (plotting.trlaplace_audit(e4), e4),
    }
    for name, (fig, data) in figures.items():
        for path in _save(fig, tmp_path / "figures", name, data):
            assert path.stat().st_size > 1000, path


def test_figures_command_writes_files(tmp_path, capsys):
    out = tmp_path / "figures"
    args = ["figures", "--only", "acl2022-fig2", "--out", str(out)]
    assert main(args + ["--cache", str(tmp_path / "results")]) == 0
    printed = capsys.readouterr().out.split()
    assert sorted(printed) == sorted(
        str(out / f"acl2022-fig2.{ext}") for ext in ("json", "pdf", "png")
    )
    assert all(
        (out / f"acl2022-fig2.{e}").stat().st_size > 1000 for e in ("png", "pdf")
    )
