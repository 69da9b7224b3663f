"""One audit spec: AuditSpec, Draws, TargetWidth, run and run_iter; the old entry
points are thin wrappers with the same counts; the spec is checked once."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import mcdp
from mcdp.attacks import auto_attack
from mcdp.cli import main
from mcdp.engines.device import DeviceEngine
from mcdp.engines.host import HostEngine
from mcdp.sampling import default_engine

# the README's and the counts of the sanity check: a contract
ADEPT_COUNTS = [[99415, 585], [1505, 98495]]


def test_a_spec_counts_what_the_old_entry_point_counts():
    spec = mcdp.AuditSpec(mechanism="adept", epsilon=1.0, dim=32, seed=0)
    result = mcdp.run(spec, mcdp.Draws(100_000))
    assert result.counts == ADEPT_COUNTS
    old = mcdp.audit("adept", epsilon=1.0, dim=32, draws=100_000, seed=0)
    assert old.counts == ADEPT_COUNTS and old.exact == result.exact


def test_run_iter_yields_partial_results_and_the_final_one_last():
    spec = mcdp.AuditSpec("laplace", 1.0, dim=4, seed=3)
    steps = list(mcdp.run_iter(spec, mcdp.Draws(300_000)))
    assert [s.interrupted for s in steps] == [True] * (len(steps) - 1) + [False]
    assert [s.draws for s in steps] == sorted({s.draws for s in steps})
    assert steps[-1].counts == mcdp.run(spec, mcdp.Draws(300_000)).counts


def test_the_delta_audit_and_the_width_run_are_the_wrappers_counts():
    spec = mcdp.AuditSpec(
        "gaussian", 1.0, delta=1e-5, dim=3, pair="diagonal", seed=2, attack="lr"
    )
    assert not spec.sanity_check
    new = mcdp.run(spec, mcdp.Draws(20_000))
    old = mcdp.audit_delta(
        "gaussian", 1.0, 1e-5, 3, 20_000, pair="diagonal", seed=2, attack="lr"
    )
    assert new.counts == old.counts and new.delta_lower == old.delta_lower
    width = mcdp.run(
        mcdp.AuditSpec("adept", 1.0, dim=2, seed=1),
        mcdp.TargetWidth(0.5, first_draws=4096),
    )
    assert width.audit.counts == mcdp.audit_to_width("adept", 1.0, 2, 0.5,
        first_draws=4096, seed=1).audit.counts  # fmt: skip


def test_a_pair_fixes_dim_and_makes_an_epsilon_delta_audit():
    pair = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    spec = mcdp.AuditSpec("laplace", 1.0, pair=pair)
    assert (
        spec.plan.dim == 3 and not spec.sanity_check and spec.plan.pair_name == "custom"
    )
    # the default attack is the portfolio: it names its winner and every score (here
    # on 5,000 training and selection draws rather than their floor of 1e5)
    assert spec.plan.attack.name == "auto"
    small = auto_attack(train_draws=5_000, select_draws=5_000)
    result = mcdp.run(
        mcdp.AuditSpec("laplace", 1.0, pair=pair, attack=small), mcdp.Draws(5_000)
    )
    assert result.dim == 3 and result.delta_claimed == 0.0
    assert result.selection is not None and result.attack in result.selection
    assert result.selection[result.attack] == max(result.selection.values())
    # a suite case knows its length
    assert mcdp.AuditSpec("svt1", 0.1, delta=0.0).plan.dim == 10


@pytest.mark.parametrize(
    "fields,match",
    [
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"dim": 0}, "dim"),
        ({"dim": None}, "dim"),
        ({"confidence": 1.0}, "confidence"),
        ({"dtype": "float16"}, "dtype"),
        ({"prng": "dice"}, "prng"),
        ({"seed": -1}, "seed"),
        ({"clip": 0.0}, "clip"),
        ({"mechanism": "oracle"}, "mechanism"),
        ({"attack": "oracle"}, "attack"),
        ({"pair": "square"}, "pair"),
        ({"pair": np.zeros((2, 5))}, r"shape \(2, 3\), got \(2, 5\)"),
        ({"nan_policy": "zero"}, "nan_policy"),
        ({"delta": 0.0, "nan_policy": "zero"}, "nan_policy"),
        ({"exact": 1}, "exact"),
        ({"delta": 0.0, "profile_epsilons": [1.0, -1.0]}, "profile_epsilons"),
        ({"delta": 0.0, "profile_epsilons": ["one"]}, "profile_epsilons"),
    ],
)
def test_a_bad_field_is_one_line_that_names_it(fields, match):
    args = {"mechanism": "laplace", "epsilon": 1.0, "dim": 3} | fields
    with pytest.raises(ValueError, match=match) as info:
        mcdp.AuditSpec(**args)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: mcdp.Draws(0), "draws"),
        (lambda: mcdp.Draws(2.5), "draws"),
        (lambda: mcdp.TargetWidth(0.0), "target_width"),
        (lambda: mcdp.TargetWidth(0.1, max_draws=10, first_draws=20), "first_draws"),
    ],
)
def test_bad_stopping_rules_name_the_field(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_a_target_width_is_for_the_sanity_check_only():
    spec = mcdp.AuditSpec("laplace", 1.0, delta=0.0, dim=2)
    with pytest.raises(ValueError, match="TargetWidth"):
        mcdp.run(spec, mcdp.TargetWidth(0.1))
    with pytest.raises(ValueError, match="stop"):
        mcdp.run(spec, 1000)


class _Recording:
    """An engine that hands every job to the device engine and notes it."""

    def __init__(self):
        self.jobs = []
        self.inner = DeviceEngine()

    def count(self, job, first_block):
        self.jobs.append(("count", job.num_draws, first_block))
        yield from self.inner.count(job, first_block)

    def draw(self, job, transform, first_draw=0, out=None):
        self.jobs.append(("draw", job.num_draws))
        return self.inner.draw(job, transform, first_draw, out)


def test_the_loop_counts_on_the_specs_engine():
    engine = _Recording()
    spec = mcdp.AuditSpec("adept", 1.0, dim=32, seed=0, engine=engine)
    assert mcdp.run(spec, mcdp.Draws(100_000)).counts == ADEPT_COUNTS
    assert engine.jobs == [("count", 100_000, 0)]
    laplace = mcdp.MECHANISMS["laplace"]
    assert isinstance(default_engine(laplace), DeviceEngine)
    box = mcdp.Mechanism.from_callable("box", lambda rng, x, n: rng.laplace(size=n))
    assert isinstance(default_engine(box), HostEngine)


def test_an_explicit_key_replaces_the_seeds():
    key = jax.random.key(11)
    a = mcdp.run(mcdp.AuditSpec("laplace", 1.0, dim=2, key=key), mcdp.Draws(4096))
    b = mcdp.run(
        mcdp.AuditSpec("laplace", 1.0, dim=2, key=key, seed=5), mcdp.Draws(4096)
    )
    c = mcdp.run(mcdp.AuditSpec("laplace", 1.0, dim=2), mcdp.Draws(4096))
    assert a.counts == b.counts != c.counts


def test_the_cli_takes_dim_from_the_pair_file(tmp_path, capsys):
    path = tmp_path / "pair.npy"
    np.save(path, np.array([[0.0, 0.0], [1.0, 0.0]]))
    args = ["audit", "--mechanism", "laplace", "--epsilon", "1", "--pair", str(path)]
    assert main(args + ["--draws", "2e3", "--attack", "lr", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["dim"] == 2
    with pytest.raises(SystemExit) as info:
        main(args + ["--draws", "2e3", "--dim", "3"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--dim = 2 (the width of --pair), got 3" in err and err.count("\n") == 1


CACHE = textwrap.dedent(
    """
    import json, sys
    import jax
    before = (jax.config.jax_compilation_cache_dir,
              jax.config.jax_persistent_cache_min_compile_time_secs)
    import mcdp
    after_import = (jax.config.jax_compilation_cache_dir,
                    jax.config.jax_persistent_cache_min_compile_time_secs)
    if len(sys.argv) > 1:
        jax.config.update("jax_compilation_cache_dir", sys.argv[1])
    mcdp.audit("laplace", 1.0, 1, 1000)
    after_run = jax.config.jax_compilation_cache_dir
    print(json.dumps([before, after_import, after_run]))
    """
)


def _cache_settings(tmp_path, env, *args):
    done = subprocess.run(
        [sys.executable, "-c", CACHE, *args], capture_output=True, text=True,
        env=os.environ | env, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def test_import_changes_no_jax_setting_and_a_run_switches_the_cache_on(tmp_path):
    folder = str(tmp_path / "cache")
    before, after_import, after_run = _cache_settings(
        tmp_path, {"MCDP_CACHE_DIR": folder, "MCDP_COMPILATION_CACHE": "1"}
    )
    assert after_import == before and after_run == folder
    assert any((tmp_path / "cache").iterdir())  # the engine's program is kept
    off = _cache_settings(
        tmp_path, {"MCDP_CACHE_DIR": folder, "MCDP_COMPILATION_CACHE": "0"}
    )
    assert off[2] == off[0][0]  # unset, as JAX's default
    mine = str(tmp_path / "mine")
    kept = _cache_settings(tmp_path, {"MCDP_CACHE_DIR": folder}, mine)
    assert kept[2] == mine  # the user's own setting wins


def test_a_resume_file_keeps_the_counts_of_a_stopped_run(tmp_path):
    path = tmp_path / "run.json"
    small = DeviceEngine(chunk_blocks=8)  # several steps; the same counts
    # the likelihood ratio: the resume file is what is tested, not the portfolio
    spec = mcdp.AuditSpec(
        "gaussian", 1.0, delta=1e-5, dim=2, seed=4, engine=small, attack="lr"
    )
    whole = mcdp.run(spec, mcdp.Draws(300_000))
    runs = mcdp.run_iter(spec, mcdp.Draws(300_000), resume=path)
    first = next(runs)
    runs.close()  # stopped after its first step: the file keeps that step
    assert first.draws < 300_000
    assert json.loads(path.read_text())["draws"] == first.draws
    resumed = mcdp.run(spec, mcdp.Draws(300_000), resume=path)
    assert resumed.counts == whole.counts and not resumed.interrupted
    again = mcdp.run(spec, mcdp.Draws(300_000), resume=path)  # finished: no draws
    assert again.counts == whole.counts
    default = mcdp.AuditSpec("gaussian", 1.0, delta=1e-5, dim=2, seed=4, attack="lr")
    assert whole.counts == mcdp.run(default, mcdp.Draws(300_000)).counts
    other = mcdp.AuditSpec("gaussian", 1.0, delta=1e-5, dim=2, seed=5, attack="lr")
    with pytest.raises(ValueError, match="another audit"):
        mcdp.run(other, mcdp.Draws(300_000), resume=path)
    with pytest.raises(ValueError, match="cannot go on"):
        mcdp.run(spec, mcdp.Draws(1024), resume=path)
