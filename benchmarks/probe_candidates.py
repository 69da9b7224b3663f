"""Each of the portfolio's candidates alone on one suite case, each in a process of
its own under a time limit: which one is slow, or never finishes, on this backend.

On an H200 the default audit of ``snapping`` did not finish: one XLA compilation for
the GPU ran for minutes (benchmarks/RESULTS.md, "GPU: the six cases ..."). This runs
``auto_attack(candidates=(label,))`` for every default candidate on the case's peers'
pair at ``--draws`` N, with the persistent compilation cache off (a compile is
timed, not read back), and prints each one's seconds, its bound, or that it was
stopped at ``--timeout`` seconds or does not apply.

    python benchmarks/probe_candidates.py snapping --draws 1e6 --timeout 60

On an H200 (2026-11-27) the candidate was ``learned-mlp``: stopped at 45 s and at
240 s, its counting program still compiling. ``--variants`` runs each candidate
once per form of the MLP's score, each in its own process, ``--jobs`` at a time
(see :data:`VARIANTS`): which form compiles on the accelerator, and whether each
gives the same bound (it should: they compute the same numbers, up to rounding
for ``dot``). On the next H200 only ``barrier-hidden`` and ``dot`` compiled, ``dot``
in half the time; ``learning.score_mlp`` now uses that product on every backend,
so ``"as-is"`` is ``dot``.

    python benchmarks/probe_candidates.py snapping --candidates learned-mlp \\
        --variants as-is,barrier,barrier-hidden,barrier-score,dot --jobs 5 \\
        --timeout 150
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jax
import jax.numpy as jnp

from mcdp import learning
from mcdp.learning import _affine, _mlp_hidden

HERE = Path(__file__).resolve().parent


def _barrier_mlp(y, scorer, parts=None):
    """The MLP's score with its outputs materialised first: on a GPU, XLA expands an
    optimization barrier only after fusion (on a CPU, before it), so the
    mechanism's sampler is not fused into the hidden layer's reductions."""
    y = jax.lax.optimization_barrier(y)
    w1, b1, w2, b2 = scorer.weights
    hidden = _affine(parts(y, scorer.basis), w1, scorer) + b1[None, :]
    return jnp.sum(jnp.tanh(hidden) * w2[None, :], axis=-1) + b2


def _barrier_hidden_mlp(y, scorer, parts=None):
    """The hidden layer's values materialised before ``tanh`` and the output's sum."""
    w1, b1, w2, b2 = scorer.weights
    hidden = _affine(parts(y, scorer.basis), w1, scorer) + b1[None, :]
    hidden = jax.lax.optimization_barrier(hidden)
    return jnp.sum(jnp.tanh(hidden) * w2[None, :], axis=-1) + b2


def _barrier_score_mlp(y, scorer, parts=None):
    """The MLP's scores materialised before what reads them (the counting loop's
    thresholds and outcome sums), as in the selection draws' program, where the
    score is the program's output."""
    w1, b1, w2, b2 = scorer.weights
    hidden = _affine(parts(y, scorer.basis), w1, scorer) + b1[None, :]
    score = jnp.sum(jnp.tanh(hidden) * w2[None, :], axis=-1) + b2
    return jax.lax.optimization_barrier(score)


def _dot_mlp(y, scorer, parts=None):
    """The hidden layer as one product of the standardised features on every
    backend (``_mlp_hidden``'s product, at full precision: the GPU's default for a
    float32 product, TF32, moved the scores by up to 1.2 % on an H200)."""
    w1, b1, w2, b2 = scorer.weights
    hidden = _mlp_hidden(parts(y, scorer.basis), w1, scorer) + b1[None, :]
    return jnp.sum(jnp.tanh(hidden) * w2[None, :], axis=-1) + b2


# variant -> the body that replaces learning.score_mlp's (its __code__, so that every
# reference to it, the partials of SCORES_BY_FEATURES included, runs the variant;
# names resolve in mcdp.learning's globals)
VARIANTS = {
    "as-is": learning.score_mlp.__code__,
    "barrier": _barrier_mlp.__code__,
    "barrier-hidden": _barrier_hidden_mlp.__code__,
    "barrier-score": _barrier_score_mlp.__code__,
    "dot": _dot_mlp.__code__,
}


def apply_variant(name: str) -> None:
    """Gives ``mcdp.learning.score_mlp`` the body of :data:`VARIANTS` ``[name]``
    (``"as-is"``: its own again)."""
    learning.score_mlp.__code__ = VARIANTS[name]


# one candidate in a fresh process: prints one JSON line
_CHILD = """
import json, sys, time
sys.path.insert(0, {here!r})
from probe_candidates import apply_variant
apply_variant({variant!r})
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


def probe(
    case: str, label: str, draws: int, timeout: float, variant: str = "as-is"
) -> dict:
    code = _CHILD.format(
        here=str(HERE), case=case, label=label, draws=draws, variant=variant
    )  # fmt: skip
    # processes side by side on one accelerator: each takes memory as it needs it
    env = {
        **os.environ, "MCDP_COMPILATION_CACHE": "0",
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
    }  # fmt: skip
    t0 = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True,
            timeout=timeout, env=env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"label": label, "variant": variant, "stopped_after": timeout}
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        error = done.stderr.strip().splitlines()[-1:]
        return {"label": label, "variant": variant, "error": error}
    return {
        "label": label,
        "variant": variant,
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
    parser.add_argument("--variants", default="as-is", help=f"of {list(VARIANTS)}")
    parser.add_argument("--jobs", type=int, default=1, help="processes at a time")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    variants = args.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"--variants: {unknown} not among {list(VARIANTS)}")
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    runs = [(label, v) for label in args.candidates.split(",") for v in variants]

    def one(run):
        row = probe(args.case, run[0], args.draws, args.timeout, run[1])
        print(json.dumps(row), flush=True)
        return row

    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(one, runs))
    if args.json:
        Path(args.json).write_text(json.dumps({"case": args.case, "results": rows}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
