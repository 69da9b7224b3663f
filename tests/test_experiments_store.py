"""The resumable grid files and the one runner of every grid.

``tests/data/*_grid_57f0888.json`` were written by mcdp at commit 57f0888, before
the audits and experiments were reorganised: they must resume as they are, and a
cell recomputed now must reproduce the stored one (counts, bounds, exact values).
"""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from mcdp.experiments import GRIDS, Acl2022Grid, SuiteGrid, TrLaplaceGrid, run_grid

DATA = Path(__file__).parent / "data"
ACL_FILE = DATA / "acl2022_grid_57f0888.json"
E4_FILE = DATA / "trlaplace_grid_57f0888.json"
ACL_SPEC = Acl2022Grid(
    draws=3000, mechanisms=("laplace", "adept"), epsilons=(1.0, 2.0), dims=(1, 8)
)
E4_SPEC = TrLaplaceGrid(draws=2000, epsilons=(1.0,))
# timing, and the software and backend that ran it: the stored records were
# written by jax 0.10.2 on a CPU, and a GPU or a later jax recomputes the same cell
UNSTORED = {"seconds", "mcdp_version", "jax_version", "backend"}


def _differences(stored: dict, recomputed: dict) -> dict:
    """The fields of the old record, timing and provenance aside, that the
    recomputed one does not reproduce, with both values (a recomputed record may
    have fields added since): empty where every one is reproduced."""
    return {
        k: (v, recomputed.get(k, "missing"))
        for k, v in stored.items()
        if k not in UNSTORED and (k not in recomputed or recomputed[k] != v)
    }


def test_the_registry_names_every_grid():
    assert GRIDS == {
        "acl2022": Acl2022Grid,
        "trlaplace": TrLaplaceGrid,
        "benchmarks": SuiteGrid,
    }


@pytest.mark.parametrize(
    "spec,source,depth", [(ACL_SPEC, ACL_FILE, 3), (E4_SPEC, E4_FILE, 4)]
)
def test_a_file_written_before_resumes_without_recomputing(
    tmp_path, spec, source, depth
):
    out = tmp_path / "grid.json"
    shutil.copy(source, out)
    seen = []
    data = run_grid(spec, out, on_cell=lambda r, resumed: seen.append(resumed))
    assert seen and all(seen)  # every cell came from the file
    assert len(seen) == len(spec.cells())
    assert all(len(cell.path) == depth for cell in spec.cells())
    assert data == json.loads(source.read_text())
    assert json.loads(out.read_text()) == data  # and the file is untouched


def test_a_cell_recomputed_now_reproduces_the_stored_one(tmp_path):
    old = json.loads(ACL_FILE.read_text())
    partial = json.loads(ACL_FILE.read_text())
    del partial["adept"]["2.0"]
    out = tmp_path / "acl.json"
    out.write_text(json.dumps(partial))
    fresh = []
    data = run_grid(
        ACL_SPEC, out, on_cell=lambda r, resumed: fresh.append(r) if not resumed else 0
    )
    assert [(r.mechanism, r.epsilon, r.dim) for r in fresh] == [
        ("adept", 2.0, 1),
        ("adept", 2.0, 8),
    ]
    for d in ("1", "8"):
        assert _differences(old["adept"]["2.0"][d], data["adept"]["2.0"][d]) == {}
        assert data["adept"]["2.0"][d]["attack"] == "majority"


def test_a_trlaplace_cell_recomputed_now_reproduces_the_stored_one(tmp_path):
    old = json.loads(E4_FILE.read_text())
    partial = json.loads(E4_FILE.read_text())
    del partial["trlaplace"]
    out = tmp_path / "e4.json"
    out.write_text(json.dumps(partial))
    data = run_grid(E4_SPEC, out)
    for pair in ("axis", "diagonal"):
        for attack in ("lr", "support"):
            stored = old["trlaplace"]["1.0"][pair][attack]
            assert _differences(stored, data["trlaplace"]["1.0"][pair][attack]) == {}


def test_a_file_of_another_grid_or_settings_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not an acl2022 grid file"):
        run_grid(ACL_SPEC, E4_FILE)
    with pytest.raises(ValueError, match="draws=3000, not 4000"):
        run_grid(Acl2022Grid(draws=4000, mechanisms=("laplace",)), ACL_FILE)
    bad = json.loads(ACL_FILE.read_text())
    bad["laplace"]["1.0"]["1"] = {"counts": [[1, 2], [3, 4]]}
    out = tmp_path / "bad.json"
    out.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="'laplace' is not a grid of audit records"):
        run_grid(ACL_SPEC, out)


def test_an_interrupted_cell_is_kept_as_far_as_it_got_and_rerun(tmp_path, monkeypatch):
    """Ctrl-C inside a cell: the finished cells and the partial one are in the file,
    the partial one marked interrupted; the rerun recomputes only that one."""
    out = tmp_path / "acl.json"
    spec = Acl2022Grid(
        draws=5000, mechanisms=("laplace",), epsilons=(1.0,), dims=(1, 2)
    )
    real_cells = Acl2022Grid.cells

    def interrupted_in_the_second_cell(self):
        first, second = real_cells(self)

        def run():
            partial = next(second.run())
            yield dataclasses.replace(partial, draws=1024, interrupted=True)
            raise KeyboardInterrupt

        return [first, second._replace(run=run)]

    monkeypatch.setattr(Acl2022Grid, "cells", interrupted_in_the_second_cell)
    with pytest.raises(KeyboardInterrupt):
        run_grid(spec, out)
    saved = json.loads(out.read_text())
    assert saved["laplace"]["1.0"]["1"]["interrupted"] is False
    assert saved["laplace"]["1.0"]["2"]["interrupted"] is True
    assert saved["laplace"]["1.0"]["2"]["draws"] == 1024
    monkeypatch.setattr(Acl2022Grid, "cells", real_cells)
    seen = []
    data = run_grid(spec, out, on_cell=lambda r, resumed: seen.append(resumed))
    assert seen == [True, False]  # the first cell resumed, the second recomputed
    assert data["laplace"]["1.0"]["2"]["interrupted"] is False
    assert data["laplace"]["1.0"]["2"]["draws"] == 5000
