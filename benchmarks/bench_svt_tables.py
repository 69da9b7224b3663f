"""The Sparse Vector losses read from their tables against integrated per output,
the loss alone.

For each case of ``--cases`` (on its peers' pair, the suite's calibration), this
draws ``--outputs`` outputs of the first input once, then times the case's exact
privacy loss on them by blocks of 1,024 rows (``lax.map``, as the engine scores the
selection draws and counts it on a CPU), with the pair and the params passed to the
compiled program as the engine passes them, with
``mcdp.mechanisms._svt_density.TABLE_QUERIES`` at 0 (each output integrated alone)
and at its default, in turn, ``--repeats`` times each, after one untimed call per
form (its compile). Each row gives the seconds of every call, their ratio (the
medians) and the largest difference between the two forms' losses.

    python benchmarks/bench_svt_tables.py --cases svt3,svt34-parallel \
        --json benchmarks/results/svt_tables_loss.json

``--engine N`` also draws N outputs per input of ``svt3``'s peers' pair through the
engine (``mcdp.sampling.draw``, as the portfolio draws its selection sample), once
with a trivial transform (a sum: the draws' own time), once with the exact loss as
the transform with the params alone (its tables of whole pieces made in the
engine's program, as before 2026-11-29), and once with the params that the default
attack gives it (``mcdp.attacks.loss_params``: the tables made before the draws),
in turn, ``--repeats`` times each after an untimed call per form: what the loss
costs inside the engine's program, and what of it the tables cost there.

``bench_loss_memo.py --table`` runs the whole audit in each form.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import parse_count, print_table, write_json  # noqa: E402
from bench_floor import pair_of, setup  # noqa: E402

from mcdp.attacks import loss_params  # noqa: E402
from mcdp.engines.base import BLOCK_DRAWS  # noqa: E402
from mcdp.mechanisms import MECHANISMS, _svt_density  # noqa: E402
from mcdp.mechanisms import sparse_vector as sv  # noqa: E402
from mcdp.sampling import draw  # noqa: E402

FORMS = {"integrated": 0, "tabled": _svt_density.TABLE_QUERIES}


def _scored_by_block(mechanism):
    """The loss of ``y`` (rows a multiple of ``BLOCK_DRAWS``) block by block, a
    program of its own per call (jit traces it again: the setting is read there)."""

    def losses(y, tx, params):
        blocks = y.reshape((-1, BLOCK_DRAWS) + y.shape[1:])
        scored = jax.lax.map(
            lambda b: mechanism.privacy_loss(b, tx[0], tx[1], params), blocks
        )
        return scored.reshape(-1)

    return jax.jit(losses)


def bench_case(name: str, outputs: int, repeats: int, seed: int) -> dict:
    mechanism = MECHANISMS[name]
    if mechanism.privacy_loss is None:
        raise SystemExit(f"{name!r} has no exact privacy loss.")
    pair, params = setup(name)
    with jax.enable_x64(True):
        tx = jnp.asarray(mechanism.transformed(pair, params))
        params = jax.tree.map(jnp.asarray, params)
        x = jnp.broadcast_to(tx[0], (outputs, tx.shape[1]))
        y = jax.jit(lambda k, x: mechanism.sample(k, x, params))(
            jax.random.key(seed), x
        )
        saved = _svt_density.TABLE_QUERIES
        compiled, values = {}, {}
        try:
            for form, limit in FORMS.items():
                _svt_density.TABLE_QUERIES = limit
                compiled[form] = _scored_by_block(mechanism)
                values[form] = np.asarray(compiled[form](y, tx, params))
            seconds = {form: [] for form in FORMS}
            for _ in range(repeats):
                for form in FORMS:
                    start = time.perf_counter()
                    jax.block_until_ready(compiled[form](y, tx, params))
                    seconds[form].append(time.perf_counter() - start)
        finally:
            _svt_density.TABLE_QUERIES = saved
    first, second = values["integrated"], values["tabled"]
    finite = np.isfinite(first)
    same_finite = bool(np.array_equal(finite, np.isfinite(second)))
    return {
        "case": name,
        "pair": pair_of(name),
        "outputs": outputs,
        "seconds": seconds,
        "ratio": statistics.median(seconds["integrated"])
        / statistics.median(seconds["tabled"]),
        "same_finite": same_finite,
        "max_abs_difference": float(np.abs(first[finite] - second[finite]).max()),
    }


def _summed(y, aux):
    """The engine's draws with a transform that costs next to nothing."""
    del aux
    return jnp.sum(y, axis=-1)


def _svt3_loss(y, aux):
    """``svt3``'s exact loss (``aux``: the transformed pair and the params, or the
    params with the pair's tables, :class:`mcdp.mechanisms.sparse_vector.
    Svt3Tables`)."""
    tx, params = aux
    return sv.svt3_privacy_loss(y, tx[0], tx[1], params)


def bench_engine(draws: int, repeats: int, seed: int) -> dict:
    """``svt3``'s loss as the engine's transform of ``draws`` outputs per input."""
    name = "svt3"
    mechanism = MECHANISMS[name]
    pair, params = setup(name)
    tx = mechanism.transformed(pair, params)
    forms = {
        "draws": (_summed, None),
        "loss": (_svt3_loss, (tx, params)),
        "loss, tables given": (
            _svt3_loss,
            (tx, loss_params(mechanism, tx, params, "float64")),
        ),
    }
    seconds = {form: [] for form in forms}
    for rep in range(repeats + 1):
        for form, (transform, aux) in forms.items():
            start = time.perf_counter()
            jax.block_until_ready(
                draw(
                    jax.random.key(seed + rep), mechanism, pair, params, draws,
                    transform=transform, aux=aux,
                )
            )  # fmt: skip
            if rep:  # the first of each form compiles
                seconds[form].append(time.perf_counter() - start)
    return {"case": name, "pair": pair_of(name), "draws": draws, "seconds": seconds}


def _line(row: dict) -> str:
    integrated, tabled = (
        ", ".join(f"{s:.3f}" for s in row["seconds"][form]) for form in FORMS
    )
    return (
        f"| {row['case']} | {row['outputs']} | {integrated} | {tabled} "
        f"| {row['ratio']:.2f} | {'yes' if row['same_finite'] else 'NO'} "
        f"| {row['max_abs_difference']:.2g} |"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="svt3,svt34-parallel")
    p.add_argument("--outputs", type=parse_count, default=1 << 20)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--engine", type=parse_count, default=None, metavar="N")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    if args.repeats < 1:
        p.error(f"--repeats must be at least 1, got {args.repeats}")
    if args.outputs % BLOCK_DRAWS:
        p.error(f"--outputs must be a multiple of {BLOCK_DRAWS}, got {args.outputs}")
    header = (
        "| case | outputs | integrated s | tabled s | ratio | finite alike "
        "| largest difference |"
    )
    rows = (
        bench_case(name, args.outputs, args.repeats, args.seed)
        for name in args.cases.split(",")
    )
    print_table(header, rows, _line, args.json)
    if args.engine:
        row = bench_engine(args.engine, args.repeats, args.seed)
        print(f"\nsvt3 through the engine, {args.engine} draws per input (s):")
        for form, times in row["seconds"].items():
            print(f"  {form}: " + ", ".join(f"{t:.2f}" for t in times))
        if args.json:
            path = Path(args.json)
            write_json(path.with_name(path.stem + "_engine.json"), row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
