"""The logistic scorers term by term on a CPU, against their sums by block.

On a CPU the logistic scorers (``learned``, ``learned-bits``, ``learned-inputs``)
add each output coordinate's terms one by one, elementwise over the rows
(``learning._affine_by_term``; ``learning.TERMS_ON_CPU = True``), where before they
summed each feature block over its axes (``learning._affine``, still the form off a
CPU; ``False``). This runs the same audit in both forms in one process, each after
an untimed warm-up at 1e5 draws (JAX's caches cleared first: the flag is read where
a score is traced), for each ``case:attack`` of ``--runs`` (``auto``: the default
portfolio; else that candidate alone, ``auto_attack(candidates=(attack,))``) at
``--draws`` N, on the case's peers' pair at the suite's 90 %: the audit's, the
selection draws' and the counting's seconds in each form and their ratios, and
whether the two gave the same record (bound, choice, privacy profile, selection
table). The two forms sum in different orders, so the scores differ at rounding;
the counts should not.

    python benchmarks/bench_logistic_terms.py --draws 2e6 \\
        --json benchmarks/results/logistic_terms.json
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import runs_main  # noqa: E402
from bench_selection import (  # noqa: E402
    compared_row,
    in_forms,
    stages_header,
    stages_line,
)

from mcdp import learning  # noqa: E402
from mcdp.attacks import auto_attack  # noqa: E402

RUNS = "svt2:learned,svt1:learned-bits,laplace-parallel:learned,svt2:auto,svt1:auto"
FORMS = {"by block": {"TERMS_ON_CPU": False}, "by term": {"TERMS_ON_CPU": True}}


def bench_run(name: str, attack: str, draws: int, seed: int) -> dict:
    row: dict = {"case": name, "attack": attack, "draws": draws, "seed": seed}
    audited = "auto" if attack == "auto" else auto_attack(candidates=(attack,))
    runs = in_forms(FORMS, name, audited, draws, seed, module=learning, clear=True)
    return compared_row(row, runs, stage="selection draws")


def _line(row: dict) -> str:
    return f"| {row['attack']} " + stages_line(row, FORMS)


def main() -> int:
    return runs_main(
        __doc__,
        RUNS,
        2_000_000,
        bench_run,
        "| attack " + stages_header(FORMS),
        _line,
    )


if __name__ == "__main__":
    sys.exit(main())
