"""The cluster engine: a black box's tasks on a Dask LocalCluster give the counts
of a run without Dask, on any number of workers, and after a worker is killed."""

import json
import os
import signal
import sys
import time

import pytest

import mcdp
from mcdp.engines import cluster as cluster_module
from mcdp.engines.base import EngineLost
from mcdp.engines.cluster import ClusterEngine

distributed = pytest.importorskip("distributed")

DRAWS = 5 * 65_536 + 1234  # several tasks, a ragged end


def laplace(rng, x, n):
    return x + rng.laplace(size=(n, len(x)))


def slow_laplace(rng, x, n):
    time.sleep(0.05)  # long enough that a task is under way when a worker dies
    return x + rng.laplace(size=(n, len(x)))


BOX = mcdp.Mechanism.from_callable("box", laplace)
SLOW = mcdp.Mechanism.from_callable("slow-box", slow_laplace)


def _spec(mech, **fields):
    return mcdp.AuditSpec(mech, 1.0, delta=0.0, dim=2, attack="majority", **fields)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_counts_do_not_depend_on_the_cluster(client):
    local = mcdp.run(_spec(BOX), mcdp.Draws(DRAWS))
    # small tasks: several per worker, finished in any order
    with ClusterEngine(client, task_scalars=1 << 15) as engine:
        two = mcdp.run(_spec(BOX, engine=engine), mcdp.Draws(DRAWS))
    assert two.counts == local.counts
    assert sum(sum(row) for row in two.counts) == 2 * DRAWS


def test_one_worker_gives_the_same_counts():
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as one,
        distributed.Client(one) as c,
    ):
        result = mcdp.run(_spec(BOX, scheduler=c), mcdp.Draws(DRAWS))
    assert result.counts == mcdp.run(_spec(BOX), mcdp.Draws(DRAWS)).counts


def test_a_killed_worker_loses_nothing(client):
    undisturbed = mcdp.run(_spec(SLOW), mcdp.Draws(DRAWS))
    pids = client.run(os.getpid)
    with ClusterEngine(client, task_scalars=1 << 14) as engine:
        runs = mcdp.run_iter(_spec(SLOW, engine=engine), mcdp.Draws(DRAWS))
        first = next(runs)
        assert first.draws < DRAWS
        os.kill(next(iter(pids.values())), signal.SIGKILL)  # its nanny starts another
        *_, last = runs
    assert last.counts == undisturbed.counts


def test_the_spec_takes_a_scheduler_and_checks_it(client):
    spec = _spec(BOX, scheduler=client)
    assert isinstance(cluster_module.cluster_engine(client), ClusterEngine)
    assert mcdp.run(spec, mcdp.Draws(4096)).draws == 4096
    for bad in ("local:0", "local:x", "", 3):
        with pytest.raises(ValueError, match="scheduler"):
            _spec(BOX, scheduler=bad)
    with pytest.raises(ValueError, match="engine or scheduler"):
        _spec(BOX, scheduler=client, engine=mcdp.engines.host.HostEngine())


def test_a_jax_mechanism_is_refused_with_a_reason(client):
    spec = mcdp.AuditSpec(
        "laplace", 1.0, delta=0.0, dim=2, scheduler=client, attack="lr"
    )
    with pytest.raises(ValueError, match="JAX mechanism"):
        mcdp.run(spec, mcdp.Draws(4096))


def test_without_distributed_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ValueError, match=r"mcdp\[cluster\]"):
        ClusterEngine("local:1")


def test_the_cli_runs_on_a_local_cluster(tmp_path, capsys, monkeypatch):
    (tmp_path / "clibox.py").write_text(
        "def fn(rng, x, n):\n    return x + rng.laplace(size=(n, len(x)))\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    from mcdp.cli import main

    args = ["audit", "--callable", "clibox:fn", "--epsilon", "1", "--dim", "1"]
    args += ["--attack", "majority", "--draws", "70000", "--json"]
    assert main(args) == 0
    plain = capsys.readouterr().out
    assert main(args + ["--scheduler", "local:2"]) == 0
    out, err = capsys.readouterr()
    assert "dashboard" in err
    assert json.loads(out)["counts"] == json.loads(plain)["counts"]


def test_a_lost_scheduler_stops_the_run_and_the_file_resumes_it(tmp_path):
    path = tmp_path / "run.json"
    undisturbed = mcdp.run(_spec(SLOW), mcdp.Draws(DRAWS))
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    with ClusterEngine(client, task_scalars=1 << 14) as engine:
        runs = mcdp.run_iter(_spec(SLOW, engine=engine), mcdp.Draws(DRAWS), resume=path)
        first = next(runs)
        cluster.close()  # the scheduler and its workers are gone
        with pytest.raises(EngineLost, match="scheduler was lost"):
            list(runs)
    client.close()
    kept = json.loads(path.read_text())["draws"]
    assert first.draws <= kept < DRAWS
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as again,
        distributed.Client(again) as c,
    ):
        done = mcdp.run(_spec(SLOW, scheduler=c), mcdp.Draws(DRAWS), resume=path)
    assert done.counts == undisturbed.counts


def test_the_search_runs_its_audits_on_the_cluster(client):
    boxed = mcdp.Mechanism.from_callable(
        "boxed", laplace, domain=mcdp.InputDomain("every-entry", 1.0)
    )
    options = dict(
        budget=3, confirm=1, attack="majority", draws=20_000, screen_draws=20_000
    )
    here = mcdp.search(boxed, 1.0, 0.0, 2, **options)
    there = mcdp.search(boxed, 1.0, 0.0, 2, scheduler=client, **options)
    assert there.witness == here.witness
    assert there.witness_audit["counts"] == here.witness_audit["counts"]
