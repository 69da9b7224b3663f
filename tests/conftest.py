"""Shared test settings: strict JAX promotion, a fixed seed, the false-alarm budget.

Every stochastic assertion uses a fixed key (override with ``MCDP_TEST_SEED``; the
seed is printed in the header of a failing run) and a tolerance derived from its
sampling error with a stated false-alarm probability ``FAIL_PROB``.
"""

import importlib.util
import math
import os
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import integrate, stats

from mcdp import _compilation_cache, sampling

# pytest-xdist's workers (``make test``) share one accelerator: none may take most of
# its memory up front, as JAX does by default. No backend exists yet at this point.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# ... and each worker its own compilation cache: JAX writes an entry in place, so a
# worker could read another's entry half written (a warning, an error here)
if os.environ.get("PYTEST_XDIST_WORKER") and not os.environ.get("MCDP_CACHE_DIR"):
    _worker_cache = f"jax-{os.environ['PYTEST_XDIST_WORKER']}"
    os.environ["MCDP_CACHE_DIR"] = str(
        _compilation_cache.cache_dir().with_name(_worker_cache)
    )
jax.config.update("jax_numpy_rank_promotion", "raise")
jax.config.update("jax_numpy_dtype_promotion", "strict")

SEED = int(os.environ.get("MCDP_TEST_SEED", "0"))
FAIL_PROB = 1e-4  # per stochastic assertion
Z = float(stats.norm.isf(FAIL_PROB / 2))  # two-sided multiplier (~3.9)

# the fields of an audit record: ``mcdp audit --json`` and each cell of a grid file
AUDIT_FIELDS = {
    "mechanism",
    "epsilon",
    "dim",
    "draws",
    "seed",
    "counts",
    "loss",
    "loss_lower",
    "loss_upper",
    "confidence",
    "exact",
    "seconds",
}


def load_benchmark(name: str):
    """The module ``benchmarks/<name>.py``, imported under ``name`` (its dataclasses
    look their module up in ``sys.modules``)."""
    path = Path(__file__).parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def pytest_report_header(config):
    return (
        f"MCDP_TEST_SEED={SEED} (false-alarm probability {FAIL_PROB:g} per assertion)"
    )


def assert_one_line_error(capsys, args, *fragments):
    """``mcdp args`` exits 2 with nothing on stdout and one ``mcdp: error:`` line on
    stderr that contains every fragment (the argument's name, say)."""
    from mcdp.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1, captured.err
    assert lines[0].startswith("mcdp: error:")
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def binomial_region(draws: int, p: float) -> tuple[int, int]:
    """The counts ``[low, high]`` outside which Binomial(draws, p) falls with
    probability at most ``FAIL_PROB`` (at most half of it in each tail), from the
    exact tails; where a cell expects few hits, ``Z`` binomial standard errors would
    misstate them."""
    low = int(stats.binom.ppf(FAIL_PROB / 2, draws, p))
    high = int(stats.binom.isf(FAIL_PROB / 2, draws, p))
    return low, high


def binomial_variance(n: int, p: float, f) -> float:
    """Var[f(K)] for K ~ Binomial(n, p), summed over the pmf within 12 standard
    deviations of the mean (counts >= 1; ``f`` takes an array of counts)."""
    sd = math.sqrt(n * p * (1 - p))
    k = np.arange(max(1, int(n * p - 12 * sd)), int(n * p + 12 * sd) + 1)
    w = stats.binom.pmf(k, n, p)
    w = w / w.sum()
    values = f(k)
    mean = np.sum(w * values)
    return float(np.sum(w * (values - mean) ** 2))


@pytest.fixture
def key():
    return sampling.key(SEED)


def trlaplace_slab(params, shift: float) -> float:
    """P[eta > A - shift] for eta with density exp(-alpha |t|) / B on [-A, A], by
    quadrature of the density (B too), independently of mcdp's closed forms.

    Shared by the support test's probabilities (``test_attacks.py``) and the
    TrLaplace audits (``test_auditing_delta.py``)."""
    alpha, bound = float(params.alpha), float(params.bound)
    lo = bound - shift
    if lo <= -bound:
        return 1.0

    def density(t):
        return math.exp(-alpha * abs(t))

    def mass(a, b):
        points = [0.0] if a < 0 < b else None
        value, _ = integrate.quad(density, a, b, points=points, epsabs=0, epsrel=1e-12)
        return value

    return mass(lo, bound) / mass(-bound, bound)
