"""The default attack's preparation by stage, at the training size of a large audit.

A default audit (``attack="auto"``) at N >= 1e7 draws per input prepares its
candidates on 1e6 training draws per input (``attacks.TRAIN_CAP``), whatever N is;
its selection sample grows with N up to 2^24. This benchmark isolates the
preparation: the portfolio with ``--train-draws`` training and ``--select-draws``
selection draws per input, counted on only ``--draws`` N, so that the audit's time
is nearly all preparation. Each case (on its peers' pair, 90 %, ``--seed``) runs once
untimed (its compiles), then ``--repeats`` times; the fastest run's record gives the
stages (``attack_stages``, seconds). To compare two versions of mcdp, run it at each
(``PYTHONPATH`` at a ``git worktree`` of the other), in turn, on an idle machine.

``--cpu`` adds each stage's CPU seconds (the process's, every thread's) and their
ratio to its wall seconds: how many cores the stage kept busy. ``--products`` times
instead the MLP's two products in ``--dtype`` (float64 by default; the MLP trains in
``learning.MLP_DTYPE``, float32, since 2026-11-29) at a training step's shapes (a
minibatch of ``learning.BATCH`` rows, ``--width`` features, ``learning.HIDDEN``
hidden units: the forward product, and the gradient's, which sums over the rows)
beside one large square product, in GFLOP/s, best of ``--repeats`` rounds of 20
products (2 of the square one): what the arithmetic of the MLP's training costs at
this machine's rates.

``--basis`` times instead the host's part of a scorer's preparation,
``learning.find_basis`` (each output coordinate's atoms and hinges) of a pooled
training sample of 2e6 outputs: continuous in 20 coordinates (as
``laplace-parallel``'s), and half atoms in 10 (as the Sparse Vector cases'), best of
``--repeats``. Before 2026-11-26 each of the portfolio's three scorers computed it;
since, they share one.

    python benchmarks/bench_prep.py --cases svt1,laplace-parallel --json F
    python benchmarks/bench_prep.py --cases laplace-parallel --select-draws 1e7 --cpu \\
        --json F
    python benchmarks/bench_prep.py --products --width 160 --json F

``--candidates`` prepares the portfolio of those candidates alone
(``mcdp.attacks.auto_attack(candidates=...)``): with one, its selection draws'
stage is the drawing and that candidate's values::

    python benchmarks/bench_prep.py --cases rappor --select-draws 1e7 \\
        --candidates learned-mlp --json F
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import (  # noqa: E402
    best_of,
    environment,
    environment_line,
    parse_count,
    write_json,
)
from bench_auto import _run  # noqa: E402
from bench_floor import parse_candidates  # noqa: E402

import mcdp  # noqa: E402
from mcdp import attacks, learning  # noqa: E402
from mcdp.attacks import AUTO_CANDIDATES, TRAIN_CAP, auto_attack  # noqa: E402
from mcdp.mechanisms import SUITE  # noqa: E402


class CpuStopwatch(attacks._Stopwatch):
    """The portfolio's stopwatch, with each stage's CPU seconds (every thread's)
    beside its wall seconds; the last one made is ``last``."""

    last: CpuStopwatch | None = None

    def __init__(self) -> None:
        super().__init__()
        self.cpu: dict[str, float] = {}
        self._cpu = time.process_time()
        CpuStopwatch.last = self

    def lap(self, stage: str, *pending) -> None:
        super().lap(stage, *pending)
        now = time.process_time()
        self.cpu[stage] = self.cpu.get(stage, 0.0) + now - self._cpu
        self._cpu = now


def _timed(name: str, attack, args: argparse.Namespace) -> tuple:
    """One audit: its record, seconds and, with ``--cpu``, its stages' CPU seconds."""
    if not args.cpu:
        return (*_run(name, attack, args.draws, args.seed), None)
    watch, attacks._Stopwatch = attacks._Stopwatch, CpuStopwatch
    try:
        record, seconds = _run(name, attack, args.draws, args.seed)
    finally:
        attacks._Stopwatch = watch
    return record, seconds, CpuStopwatch.last.cpu


def bench_case(name: str, args: argparse.Namespace) -> dict:
    attack = auto_attack(
        train_draws=args.train_draws, select_draws=args.select_draws,
        candidates=args.candidates or AUTO_CANDIDATES,
    )  # fmt: skip
    _run(name, attack, args.draws, args.seed + 1)  # compiles
    runs = [_timed(name, attack, args) for _ in range(args.repeats)]
    record, seconds, cpu = min(runs, key=lambda run: run[1])
    row = {
        "case": name, "seed": args.seed, "draws": args.draws,
        "train_draws": args.train_draws, "select_draws": args.select_draws,
        "candidates": list(args.candidates or AUTO_CANDIDATES),
        "audit_seconds": seconds, "prep_seconds": record.attack_seconds,
        "stages": record.attack_stages, "attack": record.attack,
        "bound": record.epsilon_lower, "selection": record.selection,
    }  # fmt: skip
    if cpu is not None:
        row["stages_cpu"] = cpu
    return row


def bench_products(width: int, repeats: int, dtype: str = "float64") -> list[dict]:
    """GFLOP/s of the MLP's products in ``dtype`` at a training step's shapes, and
    of a large square product (the module's docstring, ``--products``)."""
    rng = np.random.default_rng(0)
    rows, hidden, side = learning.BATCH, learning.HIDDEN, 4096

    def product(spec):
        return jax.jit(
            lambda a, b: jnp.einsum(spec, a, b, precision=jax.lax.Precision.HIGHEST)
        )

    def array(*shape):
        return jnp.asarray(rng.random(shape), dtype)

    with jax.enable_x64(True):
        z = array(rows, width)
        cases = {
            f"forward: ({rows}, {width}) x ({width}, {hidden})": (
                product("rf,fh->rh"), z, array(width, hidden), rows * width * hidden,
            ),
            f"gradient: ({rows}, {width})^T x ({rows}, {hidden})": (
                product("rf,rh->fh"), z, array(rows, hidden), rows * width * hidden,
            ),
            f"square: {side}^3": (
                product("ij,jk->ik"), array(side, side), array(side, side), side**3,
            ),
        }  # fmt: skip
        out = []
        for label, (f, a, b, fmas) in cases.items():
            f(a, b).block_until_ready()  # compiles
            reps = 2 if label.startswith("square") else 20

            def run(f=f, a=a, b=b, reps=reps):
                for _ in range(reps):
                    f(a, b).block_until_ready()

            timing = best_of(repeats, run)
            rate = 2 * fmas * reps / timing.seconds / 1e9
            out.append({"product": label, "dtype": dtype, "gflops": rate,
                        "cpu_utilisation": timing.cpu_utilisation})  # fmt: skip
            print(f"{label}: {rate:.1f} GFLOP/s, {timing.cpu_utilisation:.2f} cores")
    return out


def bench_basis(repeats: int) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = 2 * TRAIN_CAP
    mixed = rng.laplace(size=(rows, 10))
    mixed[: rows // 2] = np.floor(mixed[: rows // 2] * 2)  # atoms beside the rest
    samples = {"continuous, 20": rng.laplace(size=(rows, 20)), "mixed, 10": mixed}
    out = []
    for label, y in samples.items():
        timing = best_of(repeats, lambda y=y: learning.find_basis(y))
        out.append({"outputs": label, "rows": rows, "seconds": timing.seconds})
        print(f"find_basis, {label} coordinates, {rows} rows: {timing.seconds:.3f} s")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="svt1,laplace-parallel,rappor")
    parser.add_argument("--train-draws", type=parse_count, default=TRAIN_CAP)
    parser.add_argument("--select-draws", type=parse_count, default=100_000)
    parser.add_argument("--draws", type=parse_count, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--candidates", type=parse_candidates,
        help="the portfolio of these candidates alone (comma-separated; by default "
        "the default portfolio's)",
    )  # fmt: skip
    parser.add_argument("--basis", action="store_true")
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--products", action="store_true")
    parser.add_argument("--width", type=parse_count, default=160)
    parser.add_argument(
        "--dtype", choices=("float64", "float32"), default="float64",
        help="--products: the products' dtype (default float64)",
    )  # fmt: skip
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    env = environment()
    print(environment_line(env), f"| mcdp from {Path(mcdp.__file__).parent}")
    if args.basis:
        rows = bench_basis(args.repeats)
        if args.json:
            payload = {"benchmark": "prep --basis", "environment": env}
            write_json(args.json, {**payload, "settings": vars(args), "results": rows})
        return 0
    if args.products:
        rows = bench_products(args.width, args.repeats, args.dtype)
        if args.json:
            payload = {"benchmark": "prep --products", "environment": env}
            write_json(args.json, {**payload, "settings": vars(args), "results": rows})
        return 0
    rows = []
    for name in args.cases.split(","):
        if name not in SUITE:
            parser.error(f"--cases: {name!r} is not a suite case")
        rows.append(bench_case(name, args))
        row = rows[-1]
        cpu = row.get("stages_cpu", {})
        stages = ", ".join(
            f"{k} {v:.2f}" + (f" ({cpu[k] / v:.2f} cores)" if k in cpu else "")
            for k, v in row["stages"].items()
            if v > 0.005
        )
        print(
            f"{name}: preparation {row['prep_seconds']:.2f} s of "
            f"{row['audit_seconds']:.2f} s (chose {row['attack']}, bound "
            f"{row['bound']:.4g}): {stages}",
            flush=True,
        )
        if args.json:
            payload = {"benchmark": "prep", "environment": env}
            write_json(args.json, {**payload, "settings": vars(args), "results": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
