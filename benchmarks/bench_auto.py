"""The default attack against every single attack and against the ceiling, per
suite case, on the same draws.

For each case of :data:`mcdp.mechanisms.suite.SUITE` on its peers' pair, at each
``--draws`` N, at the suite's 90 % confidence and one seed: the default audit
(``attack="auto"``, the portfolio) and, on the same counted draws, each of its
candidates alone (``auto_attack(candidates=(label,))``: the same training and
selection samples, no choice), and the ceiling at N (:func:`mcdp.ceiling.ceiling`,
the best bound any event gives at its expected counts; not for ``laplace-float``,
whose best event is its float support) beside the portfolio without its attacks on
float artefacts (``float-support``, ``learned-bits``): the ceiling is that of the
ideal mechanism, and mcdp's float Laplace samplers leak more than it (Mironov
2012), which the full portfolio finds. The table gives the bound of each, auto's
ratio to the best single attack and to the ceiling, what auto chose and the share
of its time that its preparation took. A ratio below 1 is auto choosing a weaker
candidate on its selection draws, or the luck of the counted draws.

    python benchmarks/bench_auto.py --draws 1e6,1e7 --json benchmarks/results/auto.json

``--reuse-singles FILE`` takes the single attacks' bounds from an earlier run's JSON
(same case, N and seed) rather than counting them again: a single attack's counts do
not depend on how the portfolio chooses, so a change to the choice alone needs only
the portfolio's columns redrawn; ``--recount LABELS`` (comma-separated) counts those
singles again all the same, where the change is to how they choose their events.

``--ideal-only`` runs the portfolio without the float attacks and the ceiling
alone (no singles, no full portfolio), over ``--seeds``; ``--summary FILE`` prints
each case's ratios to the ceiling per seed and their mean from such files
(comma-separated); ``--train-draws`` sets its training sample per input (rows keep
it as ``train_draws``):

    python benchmarks/bench_auto.py --ideal-only --draws 1e7 --seeds 0,1 \
        --json benchmarks/results/auto_ceiling.json
    python benchmarks/bench_auto.py --summary benchmarks/results/auto_ceiling.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_floor import CONFIDENCE, pair_of  # noqa: E402

import mcdp  # noqa: E402
from mcdp.attacks import AUTO_CANDIDATES, auto_attack  # noqa: E402
from mcdp.ceiling import ceiling, supported  # noqa: E402
from mcdp.mechanisms.suite import SUITE  # noqa: E402

SINGLES = tuple(c for c in AUTO_CANDIDATES if c != "structure")  # no datasets here
# the portfolio without the attacks on float artefacts: what it finds of the ideal
# mechanism, whose ceiling mcdp.ceiling computes
IDEAL = tuple(c for c in SINGLES if c not in ("float-support", "learned-bits"))
# --with-inputs: the ideal portfolio and the scorer at the inputs' values, last (the
# other candidates keep their keys, so a row that does not choose it counts as
# the ideal portfolio's row of the same seed)
IDEAL_WITH_INPUTS = (*IDEAL, "learned-inputs")


def spec_of(name: str, attack, seed: int) -> mcdp.AuditSpec:
    """The audit of suite case ``name`` by ``attack``, on its peers' pair, 90 %."""
    case = SUITE[name]
    return mcdp.AuditSpec(
        name, case.epsilon, pair=pair_of(name), dim=case.dim, delta=0.0,
        confidence=CONFIDENCE, seed=seed, attack=attack,
    )  # fmt: skip


def _run(name: str, attack, draws: int, seed: int):
    spec = spec_of(name, attack, seed)
    start = time.perf_counter()
    r = mcdp.run(spec, mcdp.Draws(draws))
    return r, time.perf_counter() - start


def bench_case(
    name: str,
    draws: int,
    seed: int,
    singles: dict | None = None,
    recount: tuple[str, ...] = (),
) -> dict:
    """The row of one case; ``singles`` (label -> bound) reuses the single attacks'
    bounds of an earlier run on the same draws instead of counting them again, but
    those of ``recount``, which are counted again (a change to how they choose)."""
    auto, seconds = _run(name, "auto", draws, seed)
    labels = SINGLES if singles is None else tuple(x for x in SINGLES if x in recount)
    singles = {k: v for k, v in (singles or {}).items() if k not in labels}
    for label in labels:
        try:
            r, _ = _run(name, auto_attack(candidates=(label,)), draws, seed)
        except ValueError as err:  # not applicable to this case
            if "none of the candidates" not in str(err):
                raise
            continue
        singles[label] = r.epsilon_lower
    best = max(singles, key=singles.get)
    row = {
        "case": name,
        "pair": pair_of(name),
        "draws": draws,
        "seed": seed,
        "auto": auto.epsilon_lower,
        "auto_chose": auto.attack,
        "selection": dict(auto.selection or {}),
        "singles": singles,
        "best_single": best,
        "auto_over_best": _ratio(auto.epsilon_lower, singles[best]),
        "auto_seconds": seconds,
        "prep_share": (auto.attack_seconds or 0.0) / seconds,
        "epsilon_exact": auto.epsilon_exact,
    }
    if name in supported():
        ideal = ideal_case(name, draws, seed)
        row.update(
            {k: ideal[k] for k in IDEAL_FIELDS},
            auto_over_ceiling=_ratio(auto.epsilon_lower, ideal["ceiling"]),
        )
    return row


# what bench_case keeps of ideal_case's row
IDEAL_FIELDS = (
    "ideal", "ideal_chose", "ceiling", "ceiling_event_probability",
    "ideal_over_ceiling",
)  # fmt: skip


def ideal_case(
    name: str,
    draws: int,
    seed: int,
    candidates: tuple[str, ...] = IDEAL,
    train_draws: int | None = None,
) -> dict:
    """The portfolio without the float attacks against the ceiling at ``draws``
    (``train_draws``: the training sample per input, by default the audit's)."""
    attack = auto_attack(candidates=candidates, train_draws=train_draws)
    ideal, seconds = _run(name, attack, draws, seed)
    top = ceiling(name, pair_of(name), draws, CONFIDENCE)
    return {
        "case": name, "pair": pair_of(name), "draws": draws, "seed": seed,
        **({} if candidates == IDEAL else {"candidates": list(candidates)}),
        **({} if train_draws is None else {"train_draws": train_draws}),
        "ideal": ideal.epsilon_lower, "ideal_chose": ideal.attack,
        "selection": dict(ideal.selection or {}),
        "ideal_seconds": seconds,
        "prep_share": (ideal.attack_seconds or 0.0) / seconds,
        "ceiling": top.value, "ceiling_event_probability": max(top.p, top.q),
        "ceiling_spread": top.spread,
        "ideal_over_ceiling": _ratio(ideal.epsilon_lower, top.value),
    }  # fmt: skip


def summary(path: str) -> None:
    """Each case's ratio to the ceiling per seed and the mean over its seeds, from
    one file or several, comma-separated; beside them, the standard deviation of
    one seed's bound on the ceiling's own event over the ceiling
    (:attr:`mcdp.ceiling.Ceiling.spread`: what the counts' noise alone moves a
    ratio by, whatever the attack chose) and the mean's standard error from the
    seeds' own spread (two seeds or more)."""
    rows = [r for part in path.split(",") for r in json.load(open(part))]
    print("| case | N | P[S] of the ceiling | bound per seed (chose) | ceiling | "
          "ratio per seed | one seed's sd at the ceiling's event | mean ratio "
          "(± se, seeds) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    keys = dict.fromkeys((r["case"], r["draws"]) for r in rows)
    for name, n in keys:
        mine = sorted(
            (r for r in rows if (r["case"], r["draws"]) == (name, n)),
            key=lambda r: r["seed"],
        )
        ratios = [r["ideal_over_ceiling"] for r in mine]
        bounds = ", ".join(f"{r['ideal']:.4g} ({r['ideal_chose']})" for r in mine)
        spread = mine[0].get("ceiling_spread")
        if spread is None:  # rows written before the field
            spread = ceiling(name, pair_of(name), n, CONFIDENCE).spread
        mean = statistics.fmean(ratios)
        se = (
            f" ± {statistics.stdev(ratios) / math.sqrt(len(ratios)):.3f}"
            if len(ratios) > 1 else ""
        )  # fmt: skip
        print(
            f"| {name} | {n:.0e} | {mine[0]['ceiling_event_probability']:.2g} | "
            f"{bounds} | {mine[0]['ceiling']:.4g} | "
            f"{', '.join(f'{x:.3f}' for x in ratios)} | "
            f"{spread / mine[0]['ceiling']:.3f} | {mean:.3f}{se} ({len(ratios)}) |"
        )


def _save(rows: list[dict], path: str | None) -> None:
    """Writes the rows so far (after every row: an interrupted run keeps them)."""
    if path:
        with open(path, "w") as f:
            json.dump(rows, f, indent=1, allow_nan=True)


def _ratio(value: float, reference: float) -> float:
    return value / reference if reference > 0 else math.nan


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cases", nargs="*", help="suite cases (default: all)")
    p.add_argument("--draws", default="1e6", help="comma-separated N per input")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", default=None, help="comma-separated (--ideal-only)")
    p.add_argument("--ideal-only", action="store_true")
    p.add_argument(
        "--with-inputs", action="store_true",
        help="--ideal-only with the scorer at the inputs' values (learned-inputs)",
    )  # fmt: skip
    p.add_argument(
        "--train-draws", default=None,
        help="--ideal-only with this training sample per input (default: the audit's)",
    )  # fmt: skip
    p.add_argument("--summary", default=None, metavar="FILE")
    p.add_argument("--reuse-singles", default=None, metavar="FILE")
    p.add_argument(
        "--recount", default="", metavar="LABELS",
        help="with --reuse-singles: the singles to count again (comma-separated)",
    )  # fmt: skip
    p.add_argument("--json", default=None)
    args = p.parse_args()
    recount = tuple(x for x in args.recount.split(",") if x)
    if args.summary:
        summary(args.summary)
        return
    earlier = {}
    if args.reuse_singles:
        with open(args.reuse_singles) as f:
            earlier = {
                (r["case"], r["draws"], r["seed"]): r["singles"] for r in json.load(f)
            }
    rows = []
    if args.ideal_only:
        seeds = [int(x) for x in (args.seeds or str(args.seed)).split(",")]
        cases = args.cases or [c for c in SUITE if c in supported()]
        candidates = IDEAL_WITH_INPUTS if args.with_inputs else IDEAL
        train = None if args.train_draws is None else int(float(args.train_draws))
        for n in (int(float(x)) for x in args.draws.split(",")):
            for seed in seeds:
                for name in cases:
                    rows.append(ideal_case(name, n, seed, candidates, train))
                    r = rows[-1]
                    print(
                        f"{name} N={n:.0e} seed={seed}: {r['ideal']:.4g} "
                        f"({r['ideal_chose']}) / ceiling {r['ceiling']:.4g} = "
                        f"{r['ideal_over_ceiling']:.3f}, {r['ideal_seconds']:.0f} s",
                        flush=True,
                    )
                    _save(rows, args.json)
        return
    print(
        "| case | N | auto | chose | best single | auto / best | prep share | "
        "auto without float attacks | ceiling | its ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in (int(float(x)) for x in args.draws.split(",")):
        for name in args.cases or SUITE:
            row = bench_case(
                name, n, args.seed, earlier.get((name, n, args.seed)), recount
            )
            rows.append(row)
            top = row.get("ceiling")
            shown = ("—", "—", "—")
            if top is not None:
                shown = (
                    f"{row['ideal']:.4g} ({row['ideal_chose']})",
                    f"{top:.4g}",
                    f"{row['ideal_over_ceiling']:.3f}",
                )
            print(
                f"| {name} | {n:.0e} | {row['auto']:.4g} | {row['auto_chose']} | "
                f"{row['singles'][row['best_single']]:.4g} ({row['best_single']}) | "
                f"{row['auto_over_best']:.3f} | {row['prep_share']:.2f} | "
                f"{shown[0]} | {shown[1]} | {shown[2]} |",
                flush=True,
            )
            _save(rows, args.json)


if __name__ == "__main__":
    main()
