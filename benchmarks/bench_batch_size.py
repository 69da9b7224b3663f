"""A learned candidate alone on a wide release, at several training batch sizes.

A scorer's step costs in proportion to its batch's features. A release of many
coordinates has many of them (a histogram of 400 bins: 3,600 moments an output), so
its scorers train slowly on a CPU, whatever the sample's size. This measures what a
smaller batch would cost in bound and save in time. It sets ``learning.BATCH`` for
the run, so it changes the scorers: it is an experiment, not the default.

Each (seed, batch) is one fresh process: an audit of ``--mechanism`` with
``--dim`` coordinates (pair ``axis``, epsilon 0.1, delta 0) at ``--draws`` per
input, with ``auto_attack(candidates=(--label,))``. It prints one JSON line per run:
the bound, the audit's seconds and its preparation's.

    python benchmarks/bench_batch_size.py --batches 9320,65536 --seeds 0,1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_count, parse_ints, parse_seeds  # noqa: E402


def one_run(args: argparse.Namespace, batch: int, seed: int) -> dict:
    import mcdp
    from mcdp import learning, running
    from mcdp.attacks import auto_attack

    learning.BATCH = batch
    spec = mcdp.AuditSpec(
        args.mechanism, 0.1, delta=0.0, dim=args.dim, pair="axis", seed=seed,
        attack=auto_attack(candidates=(args.label,)),
    )  # fmt: skip
    start = time.perf_counter()
    result = running.run(spec, running.Draws(args.draws))
    return {
        "mechanism": args.mechanism, "dim": args.dim, "draws": args.draws,
        "label": args.label, "batch": batch, "seed": seed,
        "bound": result.epsilon_lower, "seconds": time.perf_counter() - start,
        "attack_seconds": result.attack_seconds,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mechanism", default="noisy-hist1")
    parser.add_argument("--dim", type=int, default=400)
    parser.add_argument("--draws", type=parse_count, default=10**6)
    parser.add_argument("--label", default="learned")
    parser.add_argument("--batches", type=parse_ints, default=[9320, 65536])
    parser.add_argument("--seeds", type=parse_seeds, default=[0, 1])
    parser.add_argument("--one", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:  # a child: one (batch, seed)
        print(json.dumps(one_run(args, *args.one)), flush=True)
        return 0
    command = [sys.executable, __file__, *(argv or sys.argv[1:])]
    for seed in args.seeds:
        for batch in args.batches:
            subprocess.run([*command, "--one", str(batch), str(seed)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
