"""``mcdp grid``: the acl2022 grid writes, resumes and extends its file and refuses
a foreign one; the trlaplace grid writes and resumes."""

import json

import pytest

from mcdp.cli import main
from mcdp.sampling import PRNG_IMPL

from conftest import AUDIT_FIELDS, assert_one_line_error

META = {
    "experiment": "acl2022",
    "draws": 3000,
    "seed": 0,
    "confidence": 0.95,
    "dtype": "float64",
    "prng_impl": PRNG_IMPL,
}


GRID = [
    "grid",
    "acl2022",
    "--draws",
    "3000",
    "--mechanisms",
    "laplace,none",
    "--epsilons",
    "1,2",
    "--dims",
    "1,8",
]


def test_grid_writes_resumes_and_extends(tmp_path, capsys):
    out = tmp_path / "sub" / "acl.json"
    assert main(GRID + ["--out", str(out)]) == 0
    first = json.loads(out.read_text())
    assert first["_meta"]["experiment"] == "acl2022"
    assert set(first) == {"_meta", "laplace", "none"}
    assert set(first["laplace"]) == {"1.0", "2.0"} and set(first["laplace"]["1.0"]) == {
        "1",
        "8",
    }
    assert AUDIT_FIELDS <= first["laplace"]["2.0"]["8"].keys()
    capsys.readouterr()
    # rerun: every cell is skipped and the file is unchanged
    assert main(GRID + ["--out", str(out)]) == 0
    assert json.loads(out.read_text()) == first
    assert capsys.readouterr().err.count("resumed") == 8
    # a wider grid keeps the finished cells and adds the new ones
    assert (
        main(
            GRID[:5]
            + ["laplace,adept", "--epsilons", "1", "--dims", "1", "--out", str(out)]
        )
        == 0
    )
    wider = json.loads(out.read_text())
    assert wider["laplace"]["1.0"]["1"] == first["laplace"]["1.0"]["1"]
    assert "adept" in wider


def test_grid_resumes_after_an_interrupted_run(tmp_path, monkeypatch):
    """A run stopped after its first cell keeps that cell; the rerun completes it."""
    import mcdp.experiments.acl2022 as experiments

    out = tmp_path / "acl.json"
    real = experiments.audit_iter
    calls = []

    def flaky(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        yield from real(*args, **kwargs)

    monkeypatch.setattr(experiments, "audit_iter", flaky)
    assert main(GRID + ["--out", str(out)]) == 130
    saved = json.loads(out.read_text())
    assert list(saved["laplace"]["1.0"]) == ["1"]
    monkeypatch.setattr(experiments, "audit_iter", real)
    assert main(GRID + ["--out", str(out)]) == 0
    done = json.loads(out.read_text())
    assert done["laplace"]["1.0"]["1"] == saved["laplace"]["1.0"]["1"]
    assert len(done["none"]["2.0"]) == 2


@pytest.mark.parametrize(
    "content,match",
    [
        ("not json", "not a JSON grid file"),
        ('{"laplace": {}}', "not an acl2022 grid file"),
        ('{"_meta": {"experiment": "trlaplace"}}', "not an acl2022 grid file"),
        (json.dumps({"_meta": META | {"draws": 5}}), "draws=5"),
        # a grid drawn from another stream is not continued with this one
        (json.dumps({"_meta": META | {"prng_impl": "rbg"}}), "prng_impl='rbg'"),
        (
            json.dumps({"_meta": META, "laplace": {"1.0": {"1": {"loss": 1}}}}),
            "not a grid of audit records",
        ),
    ],
)
def test_grid_refuses_a_foreign_file(tmp_path, capsys, content, match):
    out = tmp_path / "other.json"
    out.write_text(content)
    assert_one_line_error(capsys, GRID + ["--out", str(out)], "--out", match)
    assert out.read_text() == content  # untouched


@pytest.mark.parametrize(
    "change,name",
    [
        (["--draws", "0"], "--draws"),
        (["--mechanisms", "laplace,nope"], "--mechanisms"),
        (["--epsilons", "1,-2"], "--epsilons"),
        (["--dims", "0"], "--dims"),
    ],
)
def test_grid_errors_write_nothing(tmp_path, capsys, change, name):
    out = tmp_path / "g.json"
    args = GRID + ["--out", str(out)]
    args[args.index(change[0]) + 1] = change[1]
    assert_one_line_error(capsys, args, name)
    assert not out.exists()


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
