"""What the benchmarks share: timing, the environment record, parsing, JSON output."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np

from mcdp import learning
from mcdp.sampling import BLOCK_DRAWS, PRNG_IMPL


@dataclass(frozen=True)
class Timing:
    """The best of several timed runs.

    Attributes:
      seconds: best wall-clock time.
      cpu_utilisation: process CPU seconds / wall seconds of that best run (all
        threads: 2.0 means two cores were busy all the time).
      result: what that run returned.
    """

    seconds: float
    cpu_utilisation: float
    result: Any


def best_of(repeats: int, run: Callable[[], Any]) -> Timing:
    """Times ``run`` ``repeats`` times and keeps the fastest run.

    Args:
      repeats: number of timed runs (at least 1).
      run: the work; it must end with a synchronisation point (host results, or
        ``block_until_ready``).

    Returns:
      The fastest run's :class:`Timing`.
    """
    best: Timing | None = None
    for _ in range(repeats):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        result = run()
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        if best is None or wall < best.seconds:
            best = Timing(wall, cpu / wall, result)
    assert best is not None
    return best


def cpu_model() -> str | None:
    """The CPU's model name (Linux's ``/proc/cpuinfo``), or None where unread: the
    shared machines differ from session to session, and their times with them."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def environment() -> dict[str, Any]:
    """What every figure depends on besides its own settings."""
    usable = learning.usable_cores()
    load = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    devices = jax.devices()
    return {
        "jax_version": jax.__version__,
        "jax_backend": jax.default_backend(),
        "jax_device_count": jax.device_count(),
        "jax_device_kind": devices[0].device_kind,
        "jax_devices": [str(d) for d in devices],
        "mcdp_prng_impl": PRNG_IMPL,
        "block_draws": BLOCK_DRAWS,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable,
        "load_average_1min": load,
        "cpu_model": cpu_model(),
    }


def environment_line(env: dict[str, Any]) -> str:
    """One header line that applies to every row of a table."""
    return (
        f"jax {env['jax_version']} backend={env['jax_backend']} "
        f"device_count={env['jax_device_count']} device_kind={env['jax_device_kind']} "
        f"| mcdp prng={env['mcdp_prng_impl']} | numpy {env['numpy_version']} | "
        f"python {env['python_version']} | cpu {env.get('cpu_model')}, "
        f"cores={env['cpu_count']} (usable "
        f"{env['usable_cpus']}), load avg (1 min, before the runs)="
        f"{env['load_average_1min']}"
    )


def parse_ints(text: str) -> list[int]:
    """``"1,8,1e6"`` -> ``[1, 8, 1000000]``; each must be a positive integer."""
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers, got {text!r}") from None
    if not values or any(v < 1 or v != int(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return [int(v) for v in values]


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]``: seeds, each an integer >= 0."""
    try:
        seeds = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seeds, got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError(f"expected seeds >= 0, got {text!r}")
    return seeds


def parse_suite_cases(text: str) -> list[str]:
    """``"svt1,rappor"`` -> ``["svt1", "rappor"]``: suite cases
    (``mcdp.mechanisms.SUITE``), each known."""
    from mcdp.mechanisms import SUITE

    cases = [c for c in text.split(",") if c]
    unknown = [c for c in cases if c not in SUITE]
    if unknown or not cases:
        raise argparse.ArgumentTypeError(
            f"unknown suite cases {unknown or text!r}; known: {sorted(SUITE)}"
        )
    return cases


def parse_count(text: str) -> int:
    """``"1e7"`` -> ``10000000``: one positive count."""
    values = parse_ints(text)
    if len(values) != 1:
        raise argparse.ArgumentTypeError(f"expected one count, got {text!r}")
    return values[0]


def parse_count_or_zero(text: str) -> int:
    """:func:`parse_count`, or ``"0"`` -> ``0``: one count, at least 0."""
    if text.strip() in ("0", "0.0", "0e0"):
        return 0
    return parse_count(text)


def write_json(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Writes ``payload`` as indented JSON, creating the parent folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2)
        f.write("\n")


def print_table(
    header: str,
    rows: Iterable[dict[str, Any]],
    line: Callable[[dict[str, Any]], str],
    json_path: str | os.PathLike | None,
    key: str = "results",
) -> list[dict[str, Any]]:
    """The machine's :func:`environment_line`, the Markdown ``header`` of a table
    (``"| a | b |"``) and its rule, then :func:`print_rows` with that environment."""
    env = environment()
    print(environment_line(env), flush=True)
    print(header)
    print("|" + "---|" * (header.count("|") - 1), flush=True)
    return print_rows(rows, line, json_path, env, key)


def print_rows(
    rows: Iterable[dict[str, Any]],
    line: Callable[[dict[str, Any]], str],
    json_path: str | os.PathLike | None,
    env: dict[str, Any],
    key: str = "results",
) -> list[dict[str, Any]]:
    """Prints ``line(row)`` of each row as it is measured and, where ``json_path``
    is given, writes every row so far (``{"environment": env, key: rows}``), so
    that an interrupted run keeps what it measured."""
    done: list[dict[str, Any]] = []
    for row in rows:
        done.append(row)
        print(line(row), flush=True)
        if json_path:
            write_json(json_path, {"environment": env, key: done})
    return done


def runs_main(
    doc: str,
    runs: str,
    draws: int,
    bench_run: Callable[[str, str, int, int], dict[str, Any]],
    header: str,
    line: Callable[[dict[str, Any]], str],
) -> int:
    """The ``main`` of a benchmark of ``case:attack`` runs: ``--runs`` (default
    ``runs``), ``--draws`` (comma-separated N, default ``draws``), ``--seed`` and
    ``--json``; ``bench_run(case, attack, n, seed)`` gives each row of the table
    ``header`` (:func:`print_table`)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--runs", default=runs, help="comma-separated case:attack")
    p.add_argument("--draws", type=parse_ints, default=[draws])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    rows = (
        bench_run(*run.split(":"), n, args.seed)
        for run in args.runs.split(",")
        for n in args.draws
    )
    print_table(header, rows, line, args.json)
    return 0


def max_rss_bytes(usage: Any) -> int:
    """The peak resident set of a ``resource.getrusage`` (or ``os.wait4``) result,
    in bytes: ``ru_maxrss`` is in bytes on macOS and in KiB elsewhere."""
    return usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)


def minor_faults() -> int:
    """This process's minor page faults so far: first touches of memory that the
    system had to map (POSIX)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def child_json(
    code: str, *args: str, env: dict[str, str] | None = None, what: str = "a child"
) -> dict[str, Any]:
    """Runs ``python -c code args`` in a fresh process (with ``env``, by default
    this one's) and returns the JSON object of the last line it printed.

    Raises:
      RuntimeError: where the process fails, with its last line on stderr (the
        error) first, then the lines before it; ``what`` names the process.
    """
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        said = done.stderr.strip().splitlines() or ["(nothing on stderr)"]
        raise RuntimeError(
            f"{what} exited with {done.returncode}: {said[-1]}\n"
            + "\n".join(said[-30:-1])
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def own_max_rss_bytes() -> int | None:
    """This process's peak resident set so far, in bytes (``None`` off POSIX)."""
    try:
        import resource
    except ImportError:
        return None
    return max_rss_bytes(resource.getrusage(resource.RUSAGE_SELF))
