"""The portfolio's selection draws with their outputs keyed once or by each candidate.

A default audit (``attack="auto"``) scores its selection draws with every candidate
inside the engine's draw (``mcdp.attacks._portfolio_values``). Where the outputs are
discrete, several candidates look their values up by each output's key. For each
case (``--cases``, on its peers' pair, at the suite's 90 %, ``--seed``), this runs
the default audit at ``--draws`` N up to its selection draws, takes that call (its
key, sizes and prepared candidates), and times the same call with the transform in
each form below, ``--repeats`` times each, alternating, after one untimed call of
each at 1e5 draws (its compiles):

- ``each its own``: each candidate looked up by the outputs' keys keys them itself
  (the transform before 2026-11-29);
- ``keys shared``: the keys computed once for all of them, even where the audit
  does not share them (``attacks._shared_keys``: outputs of one coordinate).

It reports each form's median seconds, wall and CPU (this process's), their ratio,
and whether the two forms gave the same values.

    python benchmarks/bench_selection_keys.py --draws 1e8 \\
        --cases svt1,svt6,truncated-geometric --json F
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from _common import environment, environment_line, parse_count, write_json  # noqa: E402
from bench_auto import _run  # noqa: E402

from mcdp import attacks  # noqa: E402

WARMUP_DRAWS = 100_000


class _Stop(Exception):
    """Raised at the selection draws, once their call is taken."""


def selection_call(name: str, draws: int, seed: int) -> dict:
    """The arguments of ``name``'s selection draws in its default audit at
    ``draws`` (``attacks.draw``'s, where the audit calls it with a transform; the
    audit stops there) and the candidates prepared for them."""
    taken: dict = {}
    real, shared = attacks.draw, attacks._shared_keys

    def candidates(found):  # the prepared candidates, as the audit passes them
        taken["candidates"] = list(found)
        return shared(found)

    def take(key, mechanism, pair, params, n, **options):
        if options.get("transform") is None:
            return real(key, mechanism, pair, params, n, **options)
        taken.update(args=(key, mechanism, pair, params, n), options=options)
        raise _Stop

    attacks.draw, attacks._shared_keys = take, candidates
    try:
        _run(name, "auto", draws, seed)
    except _Stop:
        pass
    finally:
        attacks.draw, attacks._shared_keys = real, shared
    return taken


def forms_of(options: dict, candidates: list) -> dict:
    """``{form: (transform, aux)}`` for the taken call's ``options``, whose
    ``candidates`` (``attacks._Candidate``) give the arrays that key the outputs."""
    fns = options["transform"].keywords["fns"]
    _, auxes = options["aux"]
    tables = [c.keys for c in candidates if c.keys is not None]
    keys = tables[0] if tables else None
    keyed = tuple(keys is not None and c.keys is not None for c in candidates)
    own = tuple(False for _ in fns)
    return {
        "each its own": (attacks._values_transform(fns, own), (None, auxes)),
        "keys shared": (attacks._values_transform(fns, keyed), (keys, auxes)),
    }


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def bench_case(name: str, draws: int, seed: int, repeats: int) -> dict:
    taken = selection_call(name, draws, seed)
    key, mechanism, pair, params, n = taken["args"]
    forms = forms_of(taken["options"], taken["candidates"])

    def call(form: str, count: int):
        transform, aux = forms[form]
        options = {**taken["options"], "transform": transform, "aux": aux}
        return jax.block_until_ready(
            attacks.draw(key, mechanism, pair, params, count, **options)
        )

    for form in forms:
        call(form, WARMUP_DRAWS)
    walls: dict = {form: [] for form in forms}
    cpus: dict = {form: [] for form in forms}
    values: dict = {}
    for turn in range(repeats):
        for form in forms if turn % 2 == 0 else list(forms)[::-1]:
            start, cpu = time.perf_counter(), _cpu()
            values[form] = call(form, n)
            walls[form].append(time.perf_counter() - start)
            cpus[form].append(_cpu() - cpu)
    same = all(
        np.array_equal(np.asarray(a), np.asarray(b))
        for a, b in zip(*values.values(), strict=True)
    )
    row = {"case": name, "draws": draws, "select_draws": n, "seed": seed,
           "repeats": repeats, "same_values": same}  # fmt: skip
    for form in forms:
        row[form] = {
            "wall_seconds": walls[form], "cpu_seconds": cpus[form],
            "median_wall": statistics.median(walls[form]),
            "median_cpu": statistics.median(cpus[form]),
        }  # fmt: skip
    row["shared / own"] = (
        row["keys shared"]["median_wall"] / row["each its own"]["median_wall"]
    )
    return row


def _line(row: dict) -> str:
    medians = " | ".join(
        f"{row[f]['median_wall']:.2f} ({row[f]['median_cpu']:.2f})"
        for f in ("each its own", "keys shared")
    )
    return (
        f"| {row['case']} | {row['select_draws']:.0e} | {medians} "
        f"| {row['shared / own']:.2f} | {'yes' if row['same_values'] else 'NO'} |"
    )


HEADER = (
    "| case | selection draws per input | each its own s (CPU s) | keys shared "
    "| shared / own | same values |\n"
    "|---|---|---|---|---|---|"
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="svt1,svt6,truncated-geometric")
    parser.add_argument("--draws", type=parse_count, default=100_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}.")
    env = environment()
    print(environment_line(env))
    print(HEADER)
    rows = []
    for name in args.cases.split(","):
        rows.append(bench_case(name, args.draws, args.seed, args.repeats))
        print(_line(rows[-1]), flush=True)
    if args.json:
        write_json(args.json, {"benchmark": "selection keys", "environment": env,
                               "settings": vars(args), "results": rows})  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
