"""Throughput of a black box on a Dask cluster (``mcdp.engines.cluster``) against the
single-process host engine, in one run.

The callable is a per-call Python black box, one ``rng.laplace()`` per value in a
Python loop (as a library that releases one value per call is): the case whose
1e8-1e9 draws outgrow one machine. Each round runs, in turn: the host engine with
one worker (the baseline: one thread of this process calls the function), and the
cluster engine on ``LocalCluster``s of 1, 2 and 4 worker processes (one thread
each), all started and warmed up (compilation, the workers' imports) before the
first round. Reported per variant: the fastest round's draws per second, the
speed-up over the baseline and its median over the rounds, and the efficiency
``speed-up / min(workers, cores)`` (linear = 1). The task overhead is ``cluster
with 1 worker / host engine - 1``: what scheduling, moving the outputs and the
worker's process cost at the default task size. Counts are checked equal.

Run: ``python benchmarks/bench_cluster.py [--draws 2097152] [--repeats 3]
[--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time

import numpy as np

import mcdp
from mcdp.engines.cluster import TASK_SCALARS, ClusterEngine
from mcdp.engines.host import HostEngine

WORKERS = (1, 2, 4)


def one_value_per_call(rng, x, n):
    """One ``rng.laplace()`` per value in a Python loop (GIL-bound)."""
    draw = rng.laplace
    return np.array([[v + draw() for v in x] for _ in range(n)])


def main() -> None:
    import distributed

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=1 << 21, help="per input")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    mech = mcdp.Mechanism.from_callable("one-value-per-call", one_value_per_call)
    spec = dict(delta=0.0, dim=1, attack="majority", seed=0)
    clusters = {
        w: distributed.LocalCluster(
            n_workers=w,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        )
        for w in WORKERS
    }
    engines = {"host": HostEngine()}
    engines |= {w: ClusterEngine(distributed.Client(c)) for w, c in clusters.items()}
    counts, times = {}, {label: [] for label in engines}

    def run(label):
        result = mcdp.run(
            mcdp.AuditSpec(mech, 1.0, engine=engines[label], **spec),
            mcdp.Draws(args.draws),
        )
        counts[label] = result.counts

    for label in engines:  # warm up: compile, import on the workers
        run(label)
    for _ in range(args.repeats):
        for label in engines:
            start = time.perf_counter()
            run(label)
            times[label].append(time.perf_counter() - start)
    assert all(c == counts["host"] for c in counts.values()), counts
    cores = os.cpu_count() or 1
    base = np.array(times["host"])
    rows = []
    for label in engines:
        t = np.array(times[label])
        workers = 1 if label == "host" else label
        speedup = base.min() / t.min()
        rows.append(
            {
                "engine": "host" if label == "host" else f"cluster {label} workers",
                "workers": workers,
                "seconds": t.tolist(),
                "draws_per_s": 2 * args.draws / t.min(),
                "speedup": speedup,
                "speedup_median_round": float(np.median(base / t)),
                "efficiency": speedup / min(workers, cores),
            }
        )
        print(
            f"{rows[-1]['engine']:>20}: {rows[-1]['draws_per_s']:>10,.0f} draws/s, "
            f"speed-up {speedup:.2f}x (median round "
            f"{rows[-1]['speedup_median_round']:.2f}x), efficiency "
            f"{rows[-1]['efficiency']:.2f}",
            flush=True,
        )
    overhead = np.array(times[1]) / base - 1
    print(
        f"task overhead (cluster 1 worker / host engine - 1): fastest "
        f"{min(times[1]) / base.min() - 1:+.1%}, median round "
        f"{np.median(overhead):+.1%}; {cores} cores, tasks of {TASK_SCALARS:,} "
        f"scalars, {args.draws:,} draws per input"
    )
    for engine in engines.values():
        if isinstance(engine, ClusterEngine):
            engine.client.close()
    for c in clusters.values():
        c.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "cpus": cores,
                    "draws_per_input": args.draws,
                    "task_scalars": TASK_SCALARS,
                    "overhead_fastest": min(times[1]) / base.min() - 1,
                    "overhead_median_round": float(np.median(overhead)),
                    "rows": rows,
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
