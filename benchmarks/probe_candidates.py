"""Each of the portfolio's candidates alone on one suite case, each in a process of
its own under a time limit: which one is slow, or never finishes, on this backend.

On an H200 the default audit of ``snapping`` did not finish: one XLA compilation for
the GPU ran for minutes (benchmarks/RESULTS.md, "GPU: the six cases ..."). This runs
``auto_attack(candidates=(label,))`` for every default candidate on the case's peers'
pair at ``--draws`` N, with the persistent compilation cache off (a compile is
timed, not read back), and prints each one's seconds, its bound, or that it was
stopped at ``--timeout`` seconds or does not apply.

    python benchmarks/probe_candidates.py snapping --draws 1e6 --timeout 60
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# one candidate in a fresh process: prints one JSON line
_CHILD = """
import json, sys, time
sys.path.insert(0, {here!r})
from bench_auto import _run
from mcdp.attacks import auto_attack
t0 = time.perf_counter()
try:
    r, _ = _run({case!r}, auto_attack(candidates=({label!r},)), {draws}, 0)
except ValueError as err:
    if "none of the candidates" not in str(err):
        raise
    print(json.dumps({{"applies": False}}))
else:
    print(json.dumps({{"applies": True, "bound": r.epsilon_lower,
                      "seconds": time.perf_counter() - t0}}))
"""


def probe(case: str, label: str, draws: int, timeout: float) -> dict:
    code = _CHILD.format(here=str(HERE), case=case, label=label, draws=draws)
    env = {**os.environ, "MCDP_COMPILATION_CACHE": "0"}
    t0 = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True,
            timeout=timeout, env=env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"label": label, "stopped_after": timeout}
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        return {"label": label, "error": done.stderr.strip().splitlines()[-1:]}
    return {
        "label": label,
        "wall_seconds": wall,
        **json.loads(done.stdout.splitlines()[-1]),
    }


def main(argv=None) -> int:
    from _common import parse_count  # noqa: PLC0415

    from mcdp.attacks import AUTO_CANDIDATES  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case")
    parser.add_argument("--draws", type=parse_count, default=10**6)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--candidates", default=",".join(AUTO_CANDIDATES))
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    rows = []
    for label in args.candidates.split(","):
        row = probe(args.case, label, args.draws, args.timeout)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"case": args.case, "results": rows}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
