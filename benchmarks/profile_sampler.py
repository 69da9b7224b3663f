"""Where a Laplace draw's time goes in the engine: its stages, one at a time.

What is measured
----------------
The real engine (:func:`mcdp.sampling.count_outcomes`, the ACL 2022 sanity check,
majority vote) runs four samplers in place of the Laplace mechanism, each
adding one stage of :func:`mcdp.mechanisms._base.standard_laplace` to the one
before:

* ``bits``: the PRNG's raw bits only (one bit of each becomes the noise);
* ``uniform``: + the uniforms on (0, 1) (:func:`uniform_midpoint`);
* ``log``: + ``-log(u)``, one-sided exponential noise;
* ``laplace``: the mechanism itself (sign, ``log1p`` of the centred uniform).

Each figure is process CPU nanoseconds per scalar (both cores counted), the best of
``--repeats`` runs after one that compiles, for every stream of
:data:`mcdp.sampling.PRNG_IMPLS` and both dtypes. Differences between rows are the
cost of a stage; the counts are not checked (the first three samplers are not
mechanisms), only that the loop runs.

How to run
----------
::

    python benchmarks/profile_sampler.py --dim 8
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from _common import best_of, environment, environment_line

from mcdp.attacks import MAJORITY_VOTE
from mcdp.mechanisms import get_mechanism
from mcdp.mechanisms._base import uniform_midpoint
from mcdp.sampling import PRNG_IMPLS, count_outcomes, key

LAPLACE = get_mechanism("laplace")


def _bits(k, x, params):
    width = jnp.uint64 if x.dtype == jnp.float64 else jnp.uint32
    bits = jax.random.bits(k, x.shape, width)
    return x + params.scale * (bits & 1).astype(x.dtype)


def _uniform(k, x, params):
    return x + params.scale * uniform_midpoint(k, x.shape, x.dtype)


def _log(k, x, params):
    return x - params.scale * jnp.log(uniform_midpoint(k, x.shape, x.dtype))


STAGES = {
    "bits": LAPLACE._replace(sample=_bits),
    "uniform": LAPLACE._replace(sample=_uniform),
    "log": LAPLACE._replace(sample=_log),
    "laplace": LAPLACE,
}


def cpu_ns_per_scalar(stage: str, stream: str, dtype: str, dim: int, scalars: int,
                      repeats: int) -> float:  # fmt: skip
    """Process CPU ns per scalar of the engine with the sampler of ``stage``."""
    mechanism = STAGES[stage]
    params = mechanism.calibrate_sanity_check(1.0, dim)
    xs = np.stack([np.zeros(dim), np.ones(dim)])
    draws = max(1, scalars // dim)

    def run(n: int):
        return count_outcomes(
            key(0, stream), mechanism, MAJORITY_VOTE, xs, params, n, dtype=dtype
        )

    run(1024)
    timing = best_of(repeats, lambda: run(draws))
    return 1e9 * timing.cpu_utilisation * timing.seconds / (2 * draws * dim)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=8, help="d (default 8)")
    parser.add_argument(
        "--scalars", type=float, default=5e7, help="scalars per dataset (5e7)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="best of (3)")
    args = parser.parse_args(argv)
    print(environment_line(environment()))
    print(f"CPU ns per scalar, laplace sanity-check engine, d = {args.dim}")
    header = f"{'stream':>13} {'dtype':>7} " + " ".join(f"{s:>8}" for s in STAGES)
    print(header)
    print("-" * len(header))
    for stream in PRNG_IMPLS:
        for dtype in ("float64", "float32"):
            costs = [
                cpu_ns_per_scalar(
                    stage, stream, dtype, args.dim, int(args.scalars), args.repeats
                )
                for stage in STAGES
            ]
            print(
                f"{stream:>13} {dtype:>7} " + " ".join(f"{c:>8.2f}" for c in costs),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
