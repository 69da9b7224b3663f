"""The portfolio's selection draws brought to the host, alone.

A default audit (``attack="auto"``) draws its selection sample with
``sampling.draw``, the transform giving each candidate's values as an array of
its own. This benchmark runs the default audit of each suite case (``--cases``,
on its peers' pair, 90 %, ``--seed``) with ``--select-draws`` per input, counted
on ``--draws``; when that audit reaches its selection draws, it times the same
``draw`` (same key, mechanism, candidates) ``--repeats`` times with the
candidates' transform (``all``) and with none (``raw``, the outputs alone), and
keeps the fastest of each. An untimed audit at seed + 1 compiles first. To
compare two versions of mcdp, run it at each (``PYTHONPATH`` at a ``git
worktree`` of the other), in turn.

    python benchmarks/bench_draw_host.py --cases truncated-geometric,svt1 \\
        --select-draws 1e7 --json F
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
from _common import parse_count, print_table  # noqa: E402
from bench_auto import _run  # noqa: E402

from mcdp import attacks  # noqa: E402
from mcdp.attacks import auto_attack  # noqa: E402
from mcdp.mechanisms import SUITE  # noqa: E402

_DRAW = attacks.draw


def timed_draws(repeats: int, found: dict):
    """A stand-in for ``attacks.draw`` that, for the selection draws (a transform
    given), first times them with and without the transform into ``found``."""
    draw = _DRAW

    def stand_in(key, mech, pair, params, n, *, transform=None, aux=None, **kw):
        if transform is not None:
            for label, tr, ax in (("raw", None, None), ("all", transform, aux)):
                seconds = []
                for _ in range(repeats):
                    start = time.perf_counter()
                    jax.block_until_ready(draw(key, mech, pair, params, n,
                                               transform=tr, aux=ax, **kw))  # fmt: skip
                    seconds.append(time.perf_counter() - start)
                found[label] = min(seconds)
            found["arrays"] = len(aux)
        return draw(key, mech, pair, params, n, transform=transform, aux=aux, **kw)

    return stand_in


def bench_case(name: str, args: argparse.Namespace) -> dict:
    attack = auto_attack(select_draws=args.select_draws)
    _run(name, attack, args.draws, args.seed + 1)  # compiles
    found: dict = {}
    attacks.draw = timed_draws(args.repeats, found)
    try:
        record, _ = _run(name, attack, args.draws, args.seed)
    finally:
        attacks.draw = _DRAW
    return {
        "case": name, "select_draws": args.select_draws, "seed": args.seed,
        "attack": record.attack, **found,
    }  # fmt: skip


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="truncated-geometric,report-noisy-max1")
    parser.add_argument("--select-draws", type=parse_count, default=10_000_000)
    parser.add_argument("--draws", type=parse_count, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    for name in args.cases.split(","):
        if name not in SUITE:
            parser.error(f"--cases: {name!r} is not a suite case")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    print_table(
        "| case | candidates' arrays | raw s | all s |",
        (bench_case(name, args) for name in args.cases.split(",")),
        lambda r: (
            f"| `{r['case']}` | {r['arrays']} | {r['raw']:.3f} | {r['all']:.3f} |"
        ),
        args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
