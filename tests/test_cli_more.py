"""The command line beyond the sanity check: (epsilon, delta) audits, the E1
violations, the sensitivity search, the TrLaplace grid and the figures."""

import json

import pytest

from mcdp.cli import main

from conftest import assert_one_line_error

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
    assert main(args + ["--draws", "2e3", "--delta", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "axis pair" in out and "likelihood" not in out and "lr attack" in out


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


def test_delta_options_need_delta(capsys):
    args = ["audit", "--mechanism", "laplace", "--epsilon", "1", "--dim", "2"]
    assert_one_line_error(capsys, args + ["--draws", "10", "--pair", "axis"], "--pair")


def test_support_attack_needs_bounded_noise(capsys):
    args = ["audit", "--mechanism", "gaussian", "--epsilon", "1", "--dim", "2"]
    args += ["--draws", "10", "--delta", "0.1", "--attack", "support"]
    assert_one_line_error(capsys, args, "support")


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


def test_trlaplace_grid_writes_and_resumes(tmp_path, capsys):
    out = tmp_path / "e4.json"
    args = ["grid", "trlaplace", "--draws", "2e3", "--mechanisms", "trlaplace"]
    args += ["--epsilons", "1", "--pairs", "axis", "--out", str(out)]
    assert main(args) == 0
    data = json.loads(out.read_text())
    assert data["_meta"]["experiment"] == "trlaplace"
    cells = data["trlaplace"]["1.0"]["axis"]
    assert set(cells) == {"lr", "support"}
    assert cells["support"]["violated"] and cells["support"]["dim"] == 300
    capsys.readouterr()
    assert main(args) == 0
    assert capsys.readouterr().err.count("resumed") == 2
    assert json.loads(out.read_text()) == data


def test_trlaplace_grid_refuses_dims(capsys, tmp_path):
    args = ["grid", "trlaplace", "--draws", "10", "--dims", "3"]
    assert_one_line_error(capsys, args + ["--out", str(tmp_path / "x.json")], "--dims")


@pytest.mark.slow
def test_figures_end_to_end_at_tiny_draws(tmp_path, capsys):
    out, cache = tmp_path / "figures", tmp_path / "results"
    args = ["figures", "--out", str(out), "--cache", str(cache)]
    args += ["--draws", "2e3", "--pairs", "200", "--e4-draws", "2e3"]
    assert main(args) == 0
    names = (
        "acl2022-fig1",
        "acl2022-fig2",
        "emnlp2021-fig1",
        "emnlp2021-fig1-extended",
        "trlaplace-audit",
    )
    for name in names:
        for ext in ("png", "pdf", "json"):
            path = out / f"{name}.{ext}"
            assert path.exists() and path.stat().st_size > 1000, path
    emnlp = json.loads((out / "emnlp2021-fig1.json").read_text())["records"]
    assert max(r["dim"] for r in emnlp) == 64
    control = [r for r in emnlp if r["clip"] == "l1"]
    assert control and all(r["violations"] == 0 for r in control)
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

    from mcdp import E4Spec, GridSpec, plotting, run_grid
    from mcdp.experiments.acl2022 import sampler_histograms
    from mcdp.figures import _save
    from mcdp.violations import count_violations

    grid = run_grid(
        GridSpec(draws=2000, mechanisms=("none", "laplace", "adept"), dims=(1, 8)),
        tmp_path / "acl.json",
    )
    records = [
        r.to_dict()
        for dist, clip in (("uniform", "l2"), ("normal", "l2"), ("uniform", "l1"))
        for r in count_violations(jax.random.key(0), dist, [1, 2, 3, 8], 500, clip=clip)
    ]
    e4 = run_grid(
        E4Spec(draws=2000, mechanisms=("trlaplace",), epsilons=(0.5, 1.0)),
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


def test_delta_audit_with_a_pair_from_a_npy_file(tmp_path, capsys):
    import numpy as np

    path = tmp_path / "pair.npy"
    np.save(path, np.stack([np.full(4, 0.5), np.full(4, -0.5)]))
    args = ["audit", "--mechanism", "gaussian", "--epsilon", "1", "--dim", "4"]
    args += ["--draws", "2e3", "--delta", "0.01", "--pair", str(path), "--json"]
    assert main(args) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["pair"] == "custom" and record["dim"] == 4
    np.save(path, np.zeros((3, 4)))
    assert_one_line_error(capsys, args[:-1], "--pair")


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
