"""The selection draws' host arrays in base pages against NumPy's transparent huge
pages, each in a fresh process.

A default audit (``attack="auto"``) copies each candidate's values on the selection
draws, call by call, into one host array per candidate (``DeviceEngine.draw``): 2
x 10^7 float64 values each at 10^8 draws, written once, then sorted and counted. On
Linux NumPy advises the kernel to back every array of 4 MB and more with
transparent huge pages (``MADV_HUGEPAGE``, where the system's policy is
``madvise``). Since 2026-11-29 the engine maps these arrays itself on a CPU, in
pages of the system's base size (``mcdp.engines.device.HOST_PAGES_SMALL``); the
values are the same.

For every case of ``--cases`` (its peers' pair, 90 %, seed 0) this runs, in turn
for ``--rounds`` rounds, one fresh process per form: a warm-up audit at 10^5 draws,
then the timed default audit at ``--draws`` N, the process's first large one, as
the command line's audit is. Each row gives the audit's seconds, its
preparation's, the selection draws' and the choice's (the record's
``attack_stages``; the JSON keeps every stage's), the minor page faults of the
timed audit, and its bound, which must be the same in both forms (the selection
draws' seconds include the screening's, where it screens).

    python benchmarks/bench_host_pages.py --cases truncated-geometric,svt1 \\
        --json benchmarks/results/host_pages.json

``--switch narrow-outcomes`` compares instead the outcome attacks' values on the
selection draws in floats and in the narrowest unsigned integer that holds their
outcomes (``mcdp.attacks.NARROW_OUTCOMES``, one byte for up to 256; the default
since 2026-11-29), the host arrays in base pages in both::

    python benchmarks/bench_host_pages.py --switch narrow-outcomes \\
        --cases truncated-geometric,report-noisy-max2,svt1 --json F

``--switch mlp-dtype`` compares the portfolio's MLP trained and scored in the
audit's float64 and in float32 (``mcdp.learning.MLP_DTYPE``; the default since
2026-11-29). Its scores, and so its row of the selection table, differ (Adam's
steps carry float32's rounding further than rounding); the bound must be the same
where the MLP is not chosen::

    python benchmarks/bench_host_pages.py --switch mlp-dtype \\
        --cases laplace-parallel,rappor,one-time-rappor --json F

``--switch mlp-columns`` compares the MLP's hidden layer reading every feature and
reading only those it weighs (``mcdp.learning.SKIP_ZERO_COLUMNS``; the default since
2026-11-29): the same scores up to float32's rounding.

``--switch screen`` compares the selection sample judged whole and the candidates
screened on its first eighth (``mcdp.attacks.SCREEN_FROM``; the default since
2026-11-30, from 2^23 selection draws per input: audits of 8.4·10^7 draws and
more). The choice and bound must be the same; the selection table's rows of the
candidates left at the screening (the JSON's ``screened``) are their screening
scores.

``--switch screen-steps`` compares the scorers that the screening judges trained on
every step and on a quarter of them (``mcdp.attacks.SCREEN_STEPS``; the default
since 2026-11-30), those kept trained again on every step.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    child_json,
    environment,
    parse_count,
    print_table,
)

# --switch -> (module, its switch, {form: the switch's value, as JSON carries it})
SWITCHES = {
    "host-pages": (
        "mcdp.engines.device", "HOST_PAGES_SMALL", {"numpy": False, "base pages": True}
    ),
    "narrow-outcomes": (
        "mcdp.attacks", "NARROW_OUTCOMES", {"floats": False, "one byte": True}
    ),
    "mlp-dtype": (
        "mcdp.learning", "MLP_DTYPE", {"float64": None, "float32": "float32"}
    ),
    "mlp-columns": (
        "mcdp.learning", "SKIP_ZERO_COLUMNS", {"every feature": False, "weighed": True}
    ),
    "screen": (
        "mcdp.attacks", "SCREEN_FROM", {"whole": 1 << 40, "screened": 1 << 23}
    ),
    "screen-steps": (
        "mcdp.attacks", "SCREEN_STEPS", {"every step": 400, "a quarter": 100}
    ),
}  # fmt: skip
WARMUP_DRAWS = 100_000

# what each fresh process runs: argv = case, draws, module, switch, its value (JSON)
CHILD = """
import importlib, json, sys, time
sys.path.insert(0, {here!r})
import mcdp
from _common import minor_faults
from bench_floor import _spec
name, draws, module, switch = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
switched = importlib.import_module(module)
setattr(switched, switch, json.loads(sys.argv[5]))
mcdp.run(_spec(name, 1), mcdp.Draws({warmup}))
faults = minor_faults()
start = time.perf_counter()
record = mcdp.run(_spec(name, 0), mcdp.Draws(draws))
seconds = time.perf_counter() - start
faults = minor_faults() - faults
stages = dict(record.attack_stages)
print(json.dumps(dict(
    audit_seconds=seconds, prep_seconds=record.attack_seconds,
    selection_seconds=sum(
        stages.get(k, 0.0) for k in ("screening draws", "screening", "selection draws")
    ),
    choice_seconds=stages.get("choice"), page_faults=faults,
    attack=record.attack, bound=record.epsilon_lower,
    switch_value=getattr(switched, switch), stages=stages,
    screened=record.screened,
)))
"""


def run_form(name: str, draws: int, module: str, switch: str, value: Any) -> dict:
    """One fresh process's audit of ``name`` at ``draws``, with ``module``'s
    ``switch`` set to ``value`` (a JSON value)."""
    code = CHILD.format(here=str(Path(__file__).resolve().parent), warmup=WARMUP_DRAWS)
    return child_json(
        code, name, str(draws), module, switch, json.dumps(value),
        what=f"the audit of {name}",
    )  # fmt: skip


def rows(cases: list[str], draws: int, rounds: int, switch: str = "host-pages"):
    module, name_of_switch, forms = SWITCHES[switch]
    for name in cases:
        for round_ in range(1, rounds + 1):
            for form, value in forms.items():
                started = time.time()
                row = run_form(name, draws, module, name_of_switch, value)
                yield {
                    "case": name, "round": round_, "form": form, "draws": draws,
                    "started": started, **row,
                }  # fmt: skip


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="truncated-geometric,svt1,prefix-sum")
    parser.add_argument("--draws", type=parse_count, default=10**8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument(
        "--switch", choices=tuple(SWITCHES), default="host-pages",
        help="the two forms compared (default host-pages)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    header = (
        "| case | round | form | audit s | prep s | selection draws s | "
        "choice s | page faults | chose, bound |"
    )

    def line(r: dict) -> str:
        left = r.get("screened")
        left = f" left at the screening: {', '.join(left)}" if left else ""
        return (
            f"| `{r['case']}` | {r['round']} | {r['form']} | {r['audit_seconds']:.2f} "
            f"| {r['prep_seconds']:.2f} | {r['selection_seconds']:.2f} | "
            f"{r['choice_seconds']:.2f} | {r['page_faults']} | "
            f"{r['attack']} {r['bound']!r} |{left}"
        )

    results = print_table(
        header,
        rows(args.cases.split(","), args.draws, args.rounds, args.switch),
        line,
        args.json,
    )
    if args.json:  # the settings beside the rows
        payload = json.loads(Path(args.json).read_text(encoding="utf-8"))
        payload["settings"] = {**vars(args), "warmup_draws": WARMUP_DRAWS}
        payload["environment"] = environment()
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", "utf-8")
    bounds = {}
    for r in results:
        bounds.setdefault(r["case"], set()).add((r["attack"], r["bound"]))
    for name, seen in bounds.items():
        print(f"{name}: {'the same bound' if len(seen) == 1 else 'DIFFERENT bounds'}")
    return 0 if all(len(seen) == 1 for seen in bounds.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
