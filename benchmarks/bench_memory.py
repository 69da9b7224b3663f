"""Peak memory of a whole ``mcdp audit`` run against the number of draws.

What is measured
----------------
For each number of draws per dataset (``--draws``, default 1e6, 1e7, 1e8, 1e9 and
1e10), one run of the command line in a fresh process::

    mcdp audit --mechanism laplace --epsilon 1 --dim 1 --draws N --dtype float32 --json

(``python -m mcdp`` where the package has a ``__main__``, otherwise the ``mcdp``
script beside the running Python, otherwise ``python -m mcdp.cli``), and its peak
resident set size: ``ru_maxrss`` of that child alone, from ``os.wait4``. The engine
streams: every compiled call draws, attacks and counts a fixed number of chunks and
returns only counts, so the peak should not grow with the draws. The table gives the
wall time of the process (start-up, compilation and the audit), the audit's own
seconds, the peak RSS and its ratio to the smallest run's; the spread is the largest
peak over the smallest, against the target of the "Performance and scale" issue:
flat within 10 % from 1e6 to 1e10 draws (reported, not asserted).

How to run
----------
``make bench`` runs this with the defaults (1e10 draws at d = 1 are 2e10 scalars:
a minute or two on 2 CPU cores) and writes ``benchmarks/results/memory.json``. For
example::

    python benchmarks/bench_memory.py --draws 1e6,1e7 --json memory.json
    python benchmarks/bench_memory.py --dim 32 --dtype float64 --draws 1e6,1e7,1e8
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from _common import (
    environment,
    environment_line,
    max_rss_bytes,
    parse_ints,
    write_json,
)

from mcdp.engines.device import chunk_blocks_for
from mcdp.mechanisms import MECHANISMS
from mcdp.sampling import BLOCK_DRAWS

DEFAULT_DRAWS = "1e6,1e7,1e8,1e9,1e10"
TARGET_SPREAD = 1.10  # largest peak RSS / smallest


@dataclass(frozen=True)
class Point:
    """One ``mcdp audit`` process: a line of the table."""

    draws: int  # per dataset
    scalars: int  # 2 datasets x draws x d
    wall_seconds: float  # the whole process
    audit_seconds: float  # the audit's own "seconds"
    peak_rss_mb: float
    ratio_to_smallest: float  # peak RSS / the smallest run's
    counts: list[list[int]]


def mcdp_command() -> list[str]:
    """How to start the ``mcdp`` command line with the running Python."""
    if importlib.util.find_spec("mcdp.__main__") is not None:
        return [sys.executable, "-m", "mcdp"]
    script = Path(sys.executable).parent / "mcdp"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "mcdp.cli"]


def run_audit(command: Sequence[str]) -> tuple[dict, float, float]:
    """Runs one audit in a fresh process.

    Args:
      command: the full command line.

    Returns:
      The audit's JSON record, the wall seconds of the process and its peak RSS in
      MB of 10^6 bytes (``ru_maxrss`` of this child only, from ``os.wait4``).

    Raises:
      RuntimeError: if the process fails.
    """
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command)} exited with {proc.returncode}:\n"
                f"{err.read()[-2000:]}"
            )
        record = json.loads(out.read())
    return record, wall, max_rss_bytes(usage) / 1e6


def format_table(
    points: Sequence[Point], settings: dict, env: dict, spread: float
) -> str:
    """The printed report: a header, one line per run, the spread."""
    columns = (
        f"{'draws/dataset':>16} {'scalars':>10} {'wall s':>8} {'audit s':>8} "
        f"{'peak RSS MB':>12} {'/ smallest':>10}"
    )
    lines = [
        f"Peak RSS of `mcdp audit --mechanism {settings['mechanism']} --epsilon "
        f"{settings['epsilon']:g} --dim {settings['dim']} --dtype "
        f"{settings['dtype']} --draws N --json`, one fresh process per N",
        f"chunk = {settings['chunk_scalars']:,} scalars per dataset, prng="
        f"{env['mcdp_prng_impl']}, dtype={settings['dtype']} (every row)",
        environment_line(env),
        "",
        columns,
        "-" * len(columns),
    ]
    for p in points:
        lines.append(
            f"{p.draws:>16,} {p.scalars:>10.2e} {p.wall_seconds:>8.2f} "
            f"{p.audit_seconds:>8.2f} {p.peak_rss_mb:>12.1f} "
            f"{p.ratio_to_smallest:>10.3f}"
        )
    verdict = "met" if spread <= TARGET_SPREAD else "NOT met"
    lines += [
        "",
        f"spread (largest / smallest peak RSS) = {spread:.3f}; target <= "
        f"{TARGET_SPREAD:g} (flat within {100 * (TARGET_SPREAD - 1):.0f} %): "
        f"{verdict} (reported, not asserted)",
        "wall s = the whole process (start-up, compilation, audit); audit s = the "
        "audit's own seconds.",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; see the module docstring."""
    parser = argparse.ArgumentParser(
        description="Peak RSS of one `mcdp audit` process per number of draws.",
    )
    parser.add_argument(
        "--draws",
        type=parse_ints,
        default=parse_ints(DEFAULT_DRAWS),
        help=f"comma-separated draws per dataset (default {DEFAULT_DRAWS})",
    )
    parser.add_argument("--dim", type=int, default=1, help="d (default 1)")
    parser.add_argument(
        "--mechanism",
        choices=sorted(MECHANISMS),
        default="laplace",
        help="(default laplace)",
    )
    parser.add_argument("--epsilon", type=float, default=1.0, help="(default 1)")
    parser.add_argument(
        "--dtype", choices=("float32", "float64"), default="float32", help="(float32)"
    )
    parser.add_argument("--seed", type=int, default=0, help="(default 0)")
    parser.add_argument("--json", metavar="PATH", help="also write the results here")
    args = parser.parse_args(argv)
    if args.dim < 1:
        parser.error("--dim must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one audit per number of draws, prints the table, optionally writes JSON.

    Returns:
      0; a spread above the target is reported only.
    """
    args = parse_args(argv)
    env = environment()
    base = mcdp_command()
    settings = {
        "command": base,
        "mechanism": args.mechanism,
        "epsilon": args.epsilon,
        "dim": args.dim,
        "dtype": args.dtype,
        "seed": args.seed,
        "chunk_scalars": chunk_blocks_for(args.dim) * BLOCK_DRAWS * args.dim,
        "target_spread": TARGET_SPREAD,
    }
    runs = []
    for draws in args.draws:
        print(f"  mcdp audit --draws {draws:,} ...", file=sys.stderr, flush=True)
        command = [
            *base,
            "audit",
            "--mechanism",
            args.mechanism,
            "--epsilon",
            repr(args.epsilon),
            "--dim",
            str(args.dim),
            "--draws",
            str(draws),
            "--dtype",
            args.dtype,
            "--seed",
            str(args.seed),
            "--json",
        ]
        runs.append((draws, *run_audit(command)))
    smallest = min(rss for *_, rss in runs)
    points = [
        Point(
            draws=draws,
            scalars=2 * draws * args.dim,
            wall_seconds=wall,
            audit_seconds=float(record["seconds"]),
            peak_rss_mb=rss,
            ratio_to_smallest=rss / smallest,
            counts=record["counts"],
        )
        for draws, record, wall, rss in runs
    ]
    spread = max(p.peak_rss_mb for p in points) / smallest
    print(format_table(points, settings, env, spread), flush=True)
    if args.json:
        write_json(
            args.json,
            {
                "benchmark": "memory",
                "environment": env,
                "settings": settings,
                "results": [asdict(p) for p in points],
                "spread": spread,
                "target_met": spread <= TARGET_SPREAD,
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
