r"""A whole default audit against the NumPy floor, on every case of the suite.

What is measured
----------------
For every case of :data:`mcdp.mechanisms.suite.SUITE` (``--cases``), on its peers'
pair (:data:`~mcdp.mechanisms.suite.PEER_PAIRS`, the case's first pair where it has
none), at its claimed epsilon and input length, and for every ``N`` of ``--draws``:

* **audit**: the wall-clock time of ::

      mcdp.run(mcdp.AuditSpec(name, epsilon, pair=pair, dim=dim, delta=0.0,
                              confidence=0.9, seed=seed), mcdp.Draws(N))

  with AuditSpec's default attack (``auto``, the portfolio), end to end: the
  spec's resolution, the attack's preparation (its own draws, training and
  selection: the record's ``attack_seconds``, the "prep" column), the N draws per
  input, the counting and the bounds. Before a case's first timed audit, the same
  audit runs once at ``--warmup-draws`` (default 1e5) with seed ``seed + 1``, so
  that the one-off JAX compilation of the engine, the mechanism and the attacks'
  programs is not what is measured (JAX's persistent compilation cache,
  :mod:`mcdp._compilation_cache`, may also hold them from earlier runs; whether
  it is on is in the JSON). Programs whose shapes depend on N itself, if any,
  still compile inside the timed run: that compilation is part of the audit's
  cost at that N. ``--warmup-draws 0`` times the cold run instead.
* **NumPy floor**: the time NumPy needs merely to *draw* the same outputs of the
  same mechanism, N for each of the two inputs, with one
  ``numpy.random.default_rng(seed)`` (PCG64) in float64 on one core, vectorised
  over the draws as DP-Sniper's samplers are (``dpsniper/mechanisms/``), in chunks
  of about ``--chunk-scalars`` random scalars (2^20: 8 MB of float64) that are not
  stored: each chunk is reduced to its sum, so the outputs are really computed.
  The mechanism's deterministic part (its ``transform``: RAPPOR's Bloom filter,
  snapping's clamp), computed once per input, is inside the timing. This is a lower
  bound on any NumPy-based auditor (DP-Sniper, StatDP) at N draws: it neither
  trains a classifier nor counts anything.

  The floor runs in a fresh Python process of its own (``--floor-process child``,
  the default; its time is taken there, the start excluded), whose glibc ``malloc``
  keeps the blocks it frees (:data:`FLOOR_MALLOC`): each chunk's temporaries then
  reuse the pages of the last chunk's. Under the default settings, glibc returns
  some of them to the system, and the next chunk's pay a page fault per 4 KB page
  on first touch. In one process, ``snapping``'s floor at 1e8 took 3.2-3.5 s under
  the default settings and 2.1 s with the pages kept; at 1e7,
  ``truncated-geometric``'s took 0.30 s against 0.17 s (57036 faults against
  none), and ``svt1``'s and ``svt3``'s 1.3x as long. Whether the blocks are
  returned depends on what the process allocated before (an audit of another
  case, say), so the floor in the audits' process moved between runs
  (``snapping``'s from 1.9 to 3.4 s). Kept, no case's floor is slower (all 21
  at 1e7), and the floor is what NumPy needs, not what glibc's history costs it.
  The audits keep the default settings in their own process: what a user's run
  gets (with the pages kept, the audits measured were no shorter).
  ``--floor-process same`` times the floor in the audits' process instead, as
  before 2026-11-29.

The figure is the ratio *audit / floor*: below 1, the whole audit costs less than
NumPy's drawing alone. The table also gives *(audit - prep) / floor*, the draws,
counting and bounds of the audit against the floor. Each time is one run
(``--repeats`` keeps the best of several), on whatever else the machine runs: the
JSON records the load average before the runs and each run's CPU utilisation
(process CPU seconds / wall seconds; JAX uses every core, the floor one).

The NumPy samplers (:data:`SAMPLERS`) follow SPEC §7 and the JAX mechanisms of
:mod:`mcdp.mechanisms`, with the parameters of the mechanism's own ``calibrate``
(as an audit resolves them, :mod:`mcdp.spec`); ``tests/test_bench_floor.py``
checks each against the JAX mechanism's draws (two-sample KS tests per output
column and on the row sums). How the NumPy draws are made (no choice changes the
law):

* Laplace noise is ``Generator.laplace`` (NumPy's textbook inverse CDF), the
  exponential ``Generator.exponential`` (ziggurat); mcdp uses its own inverse CDFs.
* ``svt2`` draws a fresh threshold only where one is still needed (after an answer
  above, while fewer than c answers are above); mcdp draws d thresholds up front.
* ``truncated-geometric`` takes ``floor(E / eps')`` of standard exponentials, as
  mcdp does.
* ``rappor``, ``one-time-rappor``: their coins compare float32 uniforms with the
  float32 probabilities, as mcdp does (NumPy's float32 uniforms are ``k 2^-24``,
  mcdp's ``k 2^-23``: realised probabilities differ by less than ``2^-23``).
* ``laplace-float`` is ``Generator.laplace(x, b)`` itself: what the mechanism
  models, bit for bit up to the stream.
* ``snapping`` takes U and the sign from one 64-bit word (``random_raw``: the top
  53 bits, as ``Generator.random``, and the lowest bit), as mcdp does.

A case without a sampler here, or whose mechanism is a black box (a Python
callable, not a JAX case), is skipped with its reason; a case whose audit or floor
raises is recorded as failed, with the error, and the run goes on. (A hang, such
as an XLA compilation that does not end, is not caught: leave that case out with
``--cases``.)

How to run
----------
From the repository root; the defaults are ``--draws 1e7,1e8 --json
benchmarks/results/floor.json``, every case. A full run takes hours on 2 CPU
cores: on a shared 2-core machine one audit of ``svt2`` at 1e5 draws took 80 s,
79 s of them in the default attack's preparation, and its warm-up 114 s. The
JSON is rewritten after every cell, so an interrupted run keeps what it measured::

    python benchmarks/bench_floor.py
    python benchmarks/bench_floor.py --draws 1e5 --cases noisy-hist1,svt1

On a GPU the floor (one core each) can run beside the audits: ``--part audit`` times
the audits alone, ``--part floor`` the floors alone (``JAX_PLATFORMS=cpu``, several
processes over disjoint ``--cases``), and ``--merge`` joins their JSON files by case
and N; ``--ceilings`` adds each cell's ceiling (:func:`mcdp.ceiling.ceiling`) and the
bound's ratio to it::

    python benchmarks/bench_floor.py --part audit --draws 1e8,2e8 --json A
    JAX_PLATFORMS=cpu python benchmarks/bench_floor.py --part floor --draws 1e8 --json F
    python benchmarks/bench_floor.py --merge A,F --ceilings --json OUT

``benchmarks/floor_beside.sh`` does these steps, six floor processes at a time.

``--prng splitmix64`` draws the audits in mcdp's faster opt-in stream
(:mod:`mcdp.prng`) instead of the default ``threefry4x32``: other numbers, so other
counts and bounds, at what the stream costs. The floor is NumPy's either way::

    python benchmarks/bench_floor.py --draws 1e8 --cases snapping --prng splitmix64 \
        --json F

``--candidates`` audits with the portfolio of those candidates alone
(``mcdp.attacks.auto_attack(candidates=...)``, in the portfolio's order) instead of
the default's: what a smaller portfolio would cost and find, against the same
floor. The default attack is unchanged::

    python benchmarks/bench_floor.py --draws 1e8 --cases svt3 \
        --candidates lr,structure,majority,support,float-support,learned,learned-bits \
        --json F
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import jax
import numpy as np

import mcdp
from mcdp._compilation_cache import OFF_VALUES
from mcdp.attacks import CANDIDATES, auto_attack
from mcdp.ceiling import ceiling, supported
from mcdp.mechanisms import MECHANISMS
from mcdp.mechanisms.counting import COPIES
from mcdp.mechanisms.numerical_svt import ABORTED as NUMERICAL_ABORTED
from mcdp.mechanisms.numerical_svt import BELOW as NUMERICAL_BELOW
from mcdp.mechanisms.sparse_vector import ABORTED, SVT3_ABORTED, SVT3_FALSE
from mcdp.mechanisms.suite import PEER_PAIRS, SUITE
from mcdp.pairs import make_pair
from mcdp.sampling import PRNG_IMPL, PRNG_IMPLS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    Timing,
    best_of,
    child_json,
    environment,
    environment_line,
    minor_faults,
    own_max_rss_bytes,
    parse_count_or_zero,
    parse_ints,
    write_json,
)

CONFIDENCE = 0.9  # DP-Sniper's level, as benchmarks/suite_scale.py
DEFAULT_DRAWS = "1e7,1e8"
DEFAULT_JSON = "benchmarks/results/floor.json"
WARMUP_DRAWS = 100_000
CHUNK_SCALARS = 1 << 20  # random scalars per chunk of the floor: 8 MB of float64
CLIP = 1.0  # the suite's pairs do not depend on it; calibrate takes it
# The floor's process: glibc's malloc serves blocks below 32 MiB (a chunk's
# temporaries, 8 MB each) from its heap and keeps what it frees up to 4 GiB, so that
# no chunk pays page faults for the last one's memory (module docstring). Other C
# libraries ignore these variables.
FLOOR_MALLOC = {
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(4 << 30),
}
FLOOR_PROCESSES = ("child", "same")

# --- the NumPy samplers ----------------------------------------------------------

# sample(rng, x, params, rows) -> (rows, k) float64: ``rows`` outputs of the
# mechanism on the input ``x`` (one row of ``Mechanism.transformed(pair, params)``),
# params with NumPy leaves
SampleFn = Callable[[np.random.Generator, np.ndarray, Any, int], np.ndarray]


@dataclass(frozen=True)
class NumpySampler:
    """A case's outputs drawn with NumPy.

    Attributes:
      sample: ``sample(rng, x, params, rows)``, see :data:`SampleFn`.
      scalars: random scalars per output for an input of length w (sets the rows
        of a chunk of the floor).
    """

    sample: SampleFn
    scalars: Callable[[int], int]


def _laplace(rng, x, scale, rows):
    """``x + Lap(scale)`` per entry, shape ``(rows, w)``."""
    y = rng.laplace(0.0, scale, (rows, x.size))
    y += x
    return y


def _noisy_hist(rng, x, params, rows):
    return _laplace(rng, x, float(params.scale), rows)


def _noisy_max(noise: str, value: bool) -> SampleFn:
    def sample(rng, x, params, rows):
        scale = float(params.scale)
        if noise == "laplace":
            y = rng.laplace(0.0, scale, (rows, x.size))
        else:
            y = rng.exponential(scale, (rows, x.size))
        y += x
        if value:
            return y.max(axis=1, keepdims=True)
        return y.argmax(axis=1)[:, None].astype(np.float64)

    return sample


def _answered(above: np.ndarray, cutoff: int) -> np.ndarray:
    """Whether each query is answered: fewer than ``cutoff`` answers above before."""
    hits = np.cumsum(above, axis=1, dtype=np.int32)
    return hits - above < cutoff


def _svt_above(rng, x, params, rows, query_noise: bool = True):
    """``(above, noisy)``: one threshold noise per row, the noisy answers."""
    rho = rng.laplace(0.0, float(params.threshold_scale), (rows, 1))
    rho += float(params.threshold)
    if not query_noise:
        return x >= rho, None
    noisy = _laplace(rng, x, float(params.query_scale), rows)
    return noisy >= rho, noisy


def _svt_flags(rng, x, params, rows):
    """Alg. 1 and 4: TRUE / FALSE / ABORTED."""
    above, _ = _svt_above(rng, x, params, rows)
    return np.where(_answered(above, int(params.cutoff)), above, ABORTED)


def _svt2(rng, x, params, rows):
    """Alg. 2: a fresh threshold after each answer above (while still needed)."""
    scale, threshold = float(params.threshold_scale), float(params.threshold)
    cutoff = int(params.cutoff)
    current = rng.laplace(0.0, scale, rows)
    noisy = _laplace(rng, x, float(params.query_scale), rows)
    count = np.zeros(rows, np.int64)
    out = np.empty((rows, x.size))
    for i in range(x.size):
        above = noisy[:, i] >= threshold + current
        answered = count < cutoff
        out[:, i] = np.where(answered, above, ABORTED)
        hit = above & answered
        count += hit
        refresh = hit & (count < cutoff)
        if i + 1 < x.size and refresh.any():
            current[refresh] = rng.laplace(0.0, scale, int(refresh.sum()))
    return out


def _svt3(rng, x, params, rows):
    """Alg. 3: the noisy answer for TRUE, SVT3_FALSE / SVT3_ABORTED otherwise."""
    above, noisy = _svt_above(rng, x, params, rows)
    values = np.where(above, noisy, SVT3_FALSE)
    return np.where(_answered(above, int(params.cutoff)), values, SVT3_ABORTED)


def _svt5(rng, x, params, rows):
    above, _ = _svt_above(rng, x, params, rows, query_noise=False)
    return above.astype(np.float64)


def _svt6(rng, x, params, rows):
    above, _ = _svt_above(rng, x, params, rows)
    return above.astype(np.float64)


def _svt34(rng, x, params, rows):
    return np.concatenate(
        [_svt3(rng, x, params.svt3, rows), _svt_flags(rng, x, params.svt4, rows)],
        axis=1,
    )


def _prefix_sum(rng, x, params, rows):
    y = _laplace(rng, x, float(params.scale), rows)
    return np.cumsum(y, axis=1, out=y)


def _truncated_geometric(rng, x, params, rows):
    rate = math.log1p(2.0 ** -int(params.k))  # P[floor(E / rate) >= m] = q^m
    g = np.floor(rng.standard_exponential((2, rows, x.size)) / rate)
    return np.clip(x + g[0] - g[1], 0.0, float(params.upper))


def _laplace_parallel(rng, x, params, rows):
    return _laplace(rng, np.tile(x, COPIES), float(params.scale), rows)


def _permanent(rng, bloom, f, rows):
    """RAPPOR's step 2 on the Bloom bits ``bloom`` (0/1 floats), as bools."""
    u = rng.random((rows, bloom.size), dtype=np.float32)
    f = np.float32(f)
    return np.where(u < f / np.float32(2), True, np.where(u < f, False, bloom > 0.5))


def _rappor(rng, x, params, rows):
    permanent = _permanent(rng, x, params.f, rows)
    u = rng.random((rows, x.size), dtype=np.float32)
    p, q = np.float32(params.p), np.float32(params.q)
    return (u < np.where(permanent, q, p)).astype(np.float64)


def _one_time_rappor(rng, x, params, rows):
    return _permanent(rng, x, params.f, rows).astype(np.float64)


def _numerical_svt(rng, x, params, rows):
    rho1 = rng.laplace(0.0, float(params.threshold_scale), (rows, 1))
    rho1 += float(params.threshold)
    above = _laplace(rng, x, float(params.query_scale), rows) >= rho1
    values = np.where(
        above, _laplace(rng, x, float(params.answer_scale), rows), NUMERICAL_BELOW
    )
    return np.where(_answered(above, int(params.cutoff)), values, NUMERICAL_ABORTED)


def _laplace_float(rng, x, params, rows):
    return rng.laplace(x, float(params.scale), (rows, x.size))


def _snapping(rng, x, params, rows):
    """``x`` is clamped already (the mechanism's transform)."""
    scale, grid, bound = (float(v) for v in params)
    words = rng.bit_generator.random_raw((rows, x.size))
    u = 1.0 - (words >> np.uint64(11)).astype(np.float64) * 2.0**-53
    sign = np.where(words & np.uint64(1), -1.0, 1.0)
    noisy = x + sign * scale * np.log(u)
    return np.clip(np.round(noisy / grid) * grid, -bound, bound)


def _per_entry(factor: int = 1, extra: int = 0) -> Callable[[int], int]:
    return lambda w: factor * w + extra


SAMPLERS: dict[str, NumpySampler] = {
    "noisy-hist1": NumpySampler(_noisy_hist, _per_entry()),
    "noisy-hist2": NumpySampler(_noisy_hist, _per_entry()),
    "report-noisy-max1": NumpySampler(_noisy_max("laplace", False), _per_entry()),
    "report-noisy-max2": NumpySampler(_noisy_max("exponential", False), _per_entry()),
    "report-noisy-max3": NumpySampler(_noisy_max("laplace", True), _per_entry()),
    "report-noisy-max4": NumpySampler(_noisy_max("exponential", True), _per_entry()),
    "svt1": NumpySampler(_svt_flags, _per_entry(1, 1)),
    "svt2": NumpySampler(_svt2, _per_entry(1, 1)),
    "svt3": NumpySampler(_svt3, _per_entry(1, 1)),
    "svt4": NumpySampler(_svt_flags, _per_entry(1, 1)),
    "svt5": NumpySampler(_svt5, _per_entry(0, 1)),
    "svt6": NumpySampler(_svt6, _per_entry(1, 1)),
    "svt34-parallel": NumpySampler(_svt34, _per_entry(2, 2)),
    "prefix-sum": NumpySampler(_prefix_sum, _per_entry()),
    "truncated-geometric": NumpySampler(_truncated_geometric, _per_entry(2)),
    "laplace-parallel": NumpySampler(_laplace_parallel, _per_entry(COPIES)),
    "rappor": NumpySampler(_rappor, _per_entry(2)),  # w: 20 Bloom bits per entry
    "one-time-rappor": NumpySampler(_one_time_rappor, _per_entry()),
    "numerical-svt": NumpySampler(_numerical_svt, _per_entry(2, 1)),
    "laplace-float": NumpySampler(_laplace_float, _per_entry()),
    "snapping": NumpySampler(_snapping, _per_entry()),
}


def pair_of(name: str) -> str:
    """The case's peers' pair, else its first named pair."""
    return PEER_PAIRS.get(name, SUITE[name].pairs[0])


def setup(name: str) -> tuple[np.ndarray, Any]:
    """``(pair, params)``: the case's pair as a ``(2, d)`` array and the params an
    audit resolves (``calibrate(epsilon, 0, d, 1)``)."""
    case = SUITE[name]
    mech = MECHANISMS[name]
    pair = make_pair(pair_of(name), case.dim, CLIP)
    return pair, mech.calibrate(case.epsilon, 0.0, case.dim, CLIP)


def numpy_floor(
    name: str,
    pair: np.ndarray,
    params: Any,
    draws: int,
    seed: int,
    chunk_scalars: int = CHUNK_SCALARS,
) -> float:
    """Draws ``draws`` outputs of case ``name`` on each row of ``pair`` with NumPy
    in chunks, keeping only their sum (returned): the floor's work.

    Args:
      name: a key of :data:`SAMPLERS`.
      pair: the raw ``(2, d)`` inputs; the mechanism's transform is applied here.
      params: the mechanism's params (as ``calibrate`` returns them).
      draws: outputs per input.
      seed: of ``numpy.random.default_rng``.
      chunk_scalars: random scalars per chunk, about.
    """
    sampler = SAMPLERS[name]
    host = jax.tree.map(np.asarray, params)
    tx = MECHANISMS[name].transformed(pair, host)
    rng = np.random.default_rng(seed)
    rows = max(1, chunk_scalars // sampler.scalars(tx.shape[1]))
    total = 0.0
    for x in tx:
        for start in range(0, draws, rows):
            total += float(sampler.sample(rng, x, host, min(rows, draws - start)).sum())
    return total


def timed_floor(
    name: str, draws: int, seed: int, chunk_scalars: int, repeats: int
) -> tuple[Timing, int]:
    """:func:`numpy_floor` of case ``name`` on its pair, the best of ``repeats``
    runs in this process, and the minor page faults of the process while they
    ran."""
    pair, params = setup(name)
    faults = minor_faults()
    timing = best_of(
        repeats,
        lambda: numpy_floor(name, pair, params, draws, seed, chunk_scalars),
    )
    return timing, minor_faults() - faults


def floor_in_child(
    name: str, draws: int, seed: int, chunk_scalars: int, repeats: int
) -> tuple[Timing, int]:
    """:func:`timed_floor` in a fresh Python process with :data:`FLOOR_MALLOC`
    and ``JAX_PLATFORMS=cpu`` (its parameters need JAX; the accelerator stays the
    audits'). The process's start and imports are not timed."""
    request = json.dumps(dict(
        name=name, draws=draws, seed=seed, chunk_scalars=chunk_scalars,
        repeats=repeats,
    ))  # fmt: skip
    here = str(Path(__file__).resolve().parent)
    path = os.environ.get("PYTHONPATH")
    env = {
        **os.environ, **FLOOR_MALLOC, "JAX_PLATFORMS": "cpu",
        "PYTHONPATH": here if not path else os.pathsep.join([here, path]),
    }  # fmt: skip
    code = "import sys, bench_floor; bench_floor.floor_child(sys.argv[1])"
    said = child_json(code, request, env=env, what=f"the floor's process of {name}")
    faults = said.pop("page_faults")
    return Timing(**said), faults


def floor_child(request: str) -> None:
    """The floor's process (:func:`floor_in_child`): times the floor that
    ``request`` (JSON, :func:`timed_floor`'s arguments) asks for and prints its
    timing and page faults as one line of JSON."""
    timing, faults = timed_floor(**json.loads(request))
    print(json.dumps({**asdict(timing), "page_faults": faults}))


# --- the benchmark ----------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One case at one N: a line of a table. A run of one part (``--part``) leaves
    the other part's fields ``None``; :func:`merge` joins the parts."""

    case: str
    pair: str
    dim: int
    epsilon: float
    draws: int  # per input
    audit_seconds: float | None = None  # wall clock of mcdp.run, end to end
    record_seconds: float | None = None  # the record's own `seconds`
    prep_seconds: float | None = None  # the record's `attack_seconds` (preparation)
    prep_stages: dict[str, float] | None = None  # the record's `attack_stages`
    audit_cpu_utilisation: float | None = None
    # the process's peak resident memory when the audit ended (ru_maxrss; with the
    # warm-up and any case before it in the process: one case per run for its own)
    audit_max_rss_bytes: int | None = None
    attack: str | None = None  # the attack the default chose
    epsilon_lower: float | None = None
    epsilon_exact: float | None = None
    warmup_seconds: float | None = None  # the warm-up audit (None: no warm-up)
    floor_seconds: float | None = None
    floor_cpu_utilisation: float | None = None
    floor_sum: float | None = None  # what the floor's draws reduce to
    # the minor page faults of the floor's process while it ran (all its --repeats
    # runs): first touches of memory that the system had to map
    floor_page_faults: int | None = None
    audit_over_floor: float | None = None
    counting_over_floor: float | None = None  # (audit - prep) / floor
    # --ceilings: the best bound any event gives at N (mcdp.ceiling), where computed
    ceiling: float | None = None
    ceiling_event_probability: float | None = None  # max(p, q) of its event
    bound_over_ceiling: float | None = None


PARTS = ("both", "audit", "floor")
_KEYS = ("case", "pair", "dim", "epsilon", "draws")
_RATIOS = ("audit_over_floor", "counting_over_floor", "bound_over_ceiling")


def with_ratios(cell: Cell) -> Cell:
    """``cell`` with its ratios to the floor, where it has both parts."""
    if cell.audit_seconds is None or cell.floor_seconds is None:
        return cell
    prep = cell.prep_seconds
    return replace(
        cell,
        audit_over_floor=cell.audit_seconds / cell.floor_seconds,
        counting_over_floor=(
            None if prep is None else (cell.audit_seconds - prep) / cell.floor_seconds
        ),
    )


def skip_reason(name: str) -> str | None:
    """Why case ``name`` is not benchmarked, or ``None``."""
    mech = MECHANISMS.get(name)
    if mech is None:
        return "not in mcdp.MECHANISMS"
    if mech.host_sample is not None:
        return "a black box (Python callable), not a JAX case"
    if name not in SAMPLERS:
        return "no NumPy sampler written for it (bench_floor.SAMPLERS)"
    return None


def _spec(
    name: str,
    seed: int,
    prng: str = PRNG_IMPL,
    candidates: Sequence[str] | None = None,
) -> mcdp.AuditSpec:
    """The audit of case ``name``: AuditSpec's default attack, or the portfolio of
    ``candidates`` alone."""
    case = SUITE[name]
    attack = None if candidates is None else auto_attack(candidates=candidates)
    return mcdp.AuditSpec(
        name, case.epsilon, pair=pair_of(name), dim=case.dim, delta=0.0,
        confidence=CONFIDENCE, seed=seed, prng=prng, attack=attack,
    )  # fmt: skip


def with_ceiling(cell: Cell) -> Cell:
    """``cell`` with the ceiling at its N and its bound's ratio to it, where
    :func:`mcdp.ceiling.ceiling` computes one for the case (the ideal mechanism's:
    a float sampler's leaks can take the bound above it)."""
    if cell.case not in supported():
        return cell
    top = ceiling(cell.case, cell.pair, cell.draws, CONFIDENCE)
    ratio = None if cell.epsilon_lower is None else cell.epsilon_lower / top.value
    return replace(
        cell, ceiling=top.value, ceiling_event_probability=max(top.p, top.q),
        bound_over_ceiling=ratio,
    )  # fmt: skip


def bench_case(
    name: str,
    draws: Sequence[int],
    seed: int,
    warmup_draws: int,
    repeats: int,
    chunk_scalars: int,
    done: Callable[[Cell], None],
    part: str = "both",
    prng: str = PRNG_IMPL,
    candidates: Sequence[str] | None = None,
    floor_process: str = "child",
) -> None:
    """Times the audit and the floor of case ``name`` at every N (only one of them
    where ``part`` is ``"audit"`` or ``"floor"``), the audits' seeds in the stream
    ``prng``, their attack the portfolio of ``candidates`` where given, the floor in
    a process of its own where ``floor_process`` is ``"child"``
    (:func:`floor_in_child`), else in this one; ``done(cell)`` after each."""
    case = SUITE[name]
    warmup_seconds = None
    if part != "floor" and warmup_draws:
        t0 = time.perf_counter()
        mcdp.run(_spec(name, seed + 1, prng, candidates), mcdp.Draws(warmup_draws))
        warmup_seconds = time.perf_counter() - t0
    for n in draws:
        fields: dict[str, Any] = {}
        if part != "floor":
            spec = _spec(name, seed, prng, candidates)
            audit = best_of(repeats, lambda s=spec, n=n: mcdp.run(s, mcdp.Draws(n)))
            record = audit.result
            fields.update(
                audit_seconds=audit.seconds,
                record_seconds=record.seconds,
                prep_seconds=record.attack_seconds,
                prep_stages=record.attack_stages,
                audit_cpu_utilisation=audit.cpu_utilisation,
                audit_max_rss_bytes=own_max_rss_bytes(),
                attack=record.attack,
                epsilon_lower=record.epsilon_lower,
                epsilon_exact=record.epsilon_exact,
                warmup_seconds=warmup_seconds,
            )
        if part != "audit":
            timed = floor_in_child if floor_process == "child" else timed_floor
            floor, faults = timed(name, n, seed, chunk_scalars, repeats)
            fields.update(
                floor_seconds=floor.seconds,
                floor_cpu_utilisation=floor.cpu_utilisation,
                floor_sum=floor.result,
                floor_page_faults=faults,
            )
        cell = Cell(
            case=name, pair=pair_of(name), dim=case.dim, epsilon=case.epsilon,
            draws=n, **fields,
        )  # fmt: skip
        done(with_ratios(cell))


def merge(documents: Sequence[dict[str, Any]]) -> list[Cell]:
    """The cells of several runs' JSON documents joined by case and N: an
    ``--part audit`` run's and an ``--part floor`` run's give whole cells.

    Raises:
      ValueError: where two documents give the same field of a cell different
        values.
    """
    joined: dict[tuple, dict[str, Any]] = {}
    for document in documents:
        for row in document["results"]:
            key = tuple(row[k] for k in _KEYS)
            cell = joined.setdefault(key, {})
            for field, value in row.items():
                if value is None or field in _RATIOS:
                    continue
                if cell.get(field, value) != value:
                    raise ValueError(
                        f"{row['case']} at N={row['draws']}: two runs give "
                        f"{field} = {cell[field]!r} and {value!r}"
                    )
                cell[field] = value
    return [with_ratios(Cell(**cell)) for cell in joined.values()]


def _draws(n: int) -> str:
    """``100000`` -> ``1e5``; other counts with separators."""
    exponent = round(math.log10(n))
    return f"1e{exponent}" if 10**exponent == n else f"{n:,}"


def _seconds(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def format_tables(
    cells: Sequence[Cell], skipped: dict[str, str], env: dict[str, Any]
) -> str:
    """A Markdown table per N, then the skipped cases."""
    lines = [environment_line(env)]
    for n in sorted({c.draws for c in cells}):
        row_cells = [c for c in cells if c.draws == n]
        top = any(c.ceiling is not None for c in row_cells)
        lines += [
            "",
            f"N = {_draws(n)} draws per input (audit: mcdp.run, default attack, "
            f"{CONFIDENCE:.0%}; floor: NumPy PCG64 float64, one core)",
            "",
            "| case | pair | attack chosen | ε lower bound "
            + ("| ceiling (event's probability) | bound / ceiling " if top else "")
            + "| audit s (of which prep) | NumPy floor s | audit / floor "
            "| (audit − prep) / floor |",
            "|---|---|---|---|" + ("---|---|" if top else "") + "---|---|---|---|",
        ]
        for c in row_cells:
            ceiling_columns = ""
            if top:
                probability = (
                    "" if c.ceiling is None else f" ({c.ceiling_event_probability:.2g})"
                )
                ceiling_columns = (
                    f"| {_ratio(c.ceiling)}{probability} "
                    f"| {_ratio(c.bound_over_ceiling)} "
                )
            lines.append(
                f"| `{c.case}` | `{c.pair}` | {c.attack or '–'} "
                f"| {_ratio(c.epsilon_lower)} {ceiling_columns}"
                f"| {_seconds(c.audit_seconds)} ({_seconds(c.prep_seconds)}) "
                f"| {_seconds(c.floor_seconds)} | {_ratio(c.audit_over_floor)} "
                f"| {_ratio(c.counting_over_floor)} |"
            )
    if skipped:
        lines += ["", "Skipped:"]
        lines += [f"- `{name}`: {reason}" for name, reason in skipped.items()]
    return "\n".join(lines)


def parse_cases(text: str) -> list[str]:
    """``"a,b"`` -> ``["a", "b"]``, each a case of SUITE, once."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [n for n in names if n not in SUITE]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated subset of {','.join(SUITE)}, got {text!r}"
        )
    return list(dict.fromkeys(names))


def parse_candidates(text: str) -> tuple[str, ...]:
    """``"a,b"`` -> ``("a", "b")``, each a candidate of the portfolio, once, in the
    portfolio's order (the order that breaks its ties)."""
    names = {v.strip() for v in text.split(",") if v.strip()}
    unknown = sorted(names - set(CANDIDATES))
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated subset of {','.join(CANDIDATES)}, got {text!r}"
        )
    return tuple(c for c in CANDIDATES if c in names)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; see the module docstring."""
    parser = argparse.ArgumentParser(
        description="A whole default audit against the NumPy floor (drawing the "
        "same outputs with NumPy), on the cases of the suite."
    )
    parser.add_argument(
        "--draws",
        type=parse_ints,
        default=parse_ints(DEFAULT_DRAWS),
        help=f"comma-separated N, draws per input (default {DEFAULT_DRAWS})",
    )
    parser.add_argument(
        "--cases",
        type=parse_cases,
        default=list(SUITE),
        help="comma-separated cases of the suite (default all)",
    )
    parser.add_argument(
        "--json",
        default=DEFAULT_JSON,
        metavar="PATH",
        help=f"where the raw numbers go (default {DEFAULT_JSON})",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the audits and the floor"
    )
    parser.add_argument(
        "--warmup-draws",
        type=parse_count_or_zero,
        default=WARMUP_DRAWS,
        help="draws of the untimed audit before each case's first timed one, "
        f"seed + 1 (default {WARMUP_DRAWS:g}; 0: none, cold timings)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="timed runs of each audit and floor, the best is kept (default 1)",
    )
    parser.add_argument(
        "--chunk-scalars",
        type=int,
        default=CHUNK_SCALARS,
        help=f"random scalars per chunk of the floor (default {CHUNK_SCALARS})",
    )
    parser.add_argument(
        "--part",
        choices=PARTS,
        default="both",
        help="time the audit and the floor (both, the default), or one of them: "
        "two runs of one part each, joined by --merge, can run side by side (the "
        "floor on CPU cores that the audit leaves idle)",
    )
    parser.add_argument(
        "--merge",
        default=None,
        metavar="PATHS",
        help="comma-separated JSON files of earlier runs: join their cells by case "
        "and N, write them to --json and print the tables; runs nothing",
    )
    parser.add_argument(
        "--prng",
        choices=PRNG_IMPLS,
        default=PRNG_IMPL,
        help=f"the stream of the audits' seeds (default {PRNG_IMPL}; the floor "
        "draws with NumPy's PCG64 either way)",
    )
    parser.add_argument(
        "--candidates",
        type=parse_candidates,
        default=None,
        help="audit with the portfolio of these candidates alone (comma-separated, "
        "of " + ",".join(CANDIDATES) + "; default: AuditSpec's default attack)",
    )
    parser.add_argument(
        "--floor-process",
        choices=FLOOR_PROCESSES,
        default="child",
        help="time the floor in a fresh process whose malloc keeps the memory it "
        "frees (child, the default), or in the audits' process (same)",
    )
    parser.add_argument(
        "--ceilings",
        action="store_true",
        help="add each cell's ceiling (mcdp.ceiling, the best bound any event gives "
        "at N and 90%%) and the bound's ratio to it, where computed",
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.warmup_draws < 0:
        parser.error("--warmup-draws must be at least 0")
    if args.chunk_scalars < 1:
        parser.error("--chunk-scalars must be at least 1")
    return args


def merge_files(paths: Sequence[str], out: str, ceilings: bool = False) -> int:
    """``--merge``: joins the runs' cells (:func:`merge`; with the ceilings, where
    ``ceilings``), writes them with each run's environment and settings to ``out``,
    prints the tables."""
    documents = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            documents.append(json.load(f))
    cells = merge(documents)
    if ceilings:
        cells = [with_ceiling(c) for c in cells]
    skipped: dict[str, str] = {}
    for document in documents:
        skipped.update(document.get("skipped", {}))
    for cell in cells:
        skipped.pop(cell.case, None)
    sources = []  # each run's environment and settings, those of merged runs too
    for path, document in zip(paths, documents, strict=True):
        sources += document.get("merged_from") or [
            {
                "path": path,
                "environment": document["environment"],
                "settings": document["settings"],
            }
        ]
    write_json(
        out,
        {
            "benchmark": "floor",
            "merged_from": sources,
            "results": [asdict(c) for c in cells],
            "skipped": skipped,
        },
    )
    print(format_tables(cells, skipped, sources[0]["environment"]), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark, prints the tables, writes the JSON after every cell."""
    args = parse_args(argv)
    if args.merge is not None:
        return merge_files(args.merge.split(","), args.json, args.ceilings)
    env = environment()
    cache = os.environ.get("MCDP_COMPILATION_CACHE", "1").strip().lower()
    env["mcdp_compilation_cache"] = cache not in OFF_VALUES
    settings = {
        "draws": args.draws,
        "cases": args.cases,
        "audit_seed": args.seed,
        "warmup_seed": args.seed + 1,
        "floor_seed": args.seed,
        "warmup_draws": args.warmup_draws,
        "repeats": args.repeats,
        "confidence": CONFIDENCE,
        "attack": "AuditSpec's default"
        if args.candidates is None
        else f"auto, candidates {','.join(args.candidates)}",
        "floor": "numpy.random.default_rng (PCG64), float64, one core, chunks of "
        f"about {args.chunk_scalars} random scalars reduced to their sum",
        "chunk_scalars": args.chunk_scalars,
        "floor_process": args.floor_process,
        "floor_malloc": FLOOR_MALLOC if args.floor_process == "child" else None,
        "part": args.part,
        "prng": args.prng,
    }
    cells: list[Cell] = []
    skipped: dict[str, str] = {}

    def save() -> None:
        write_json(
            args.json,
            {
                "benchmark": "floor",
                "environment": env,
                "settings": settings,
                "results": [asdict(c) for c in cells],
                "skipped": skipped,
            },
        )

    def done(cell: Cell) -> None:
        if args.ceilings:
            cell = with_ceiling(cell)
        cells.append(cell)
        print(
            f"  {cell.case} N={_draws(cell.draws)}: audit "
            f"{_seconds(cell.audit_seconds)} s (prep {_seconds(cell.prep_seconds)} s, "
            f"{cell.attack}, bound {_ratio(cell.epsilon_lower)}), floor "
            f"{_seconds(cell.floor_seconds)} s, ratio {_ratio(cell.audit_over_floor)}",
            file=sys.stderr,
            flush=True,
        )
        save()

    for name in args.cases:
        reason = skip_reason(name)
        if reason is not None:
            skipped[name] = reason
            continue
        print(f"running {name} ...", file=sys.stderr, flush=True)
        try:
            bench_case(
                name,
                args.draws,
                args.seed,
                args.warmup_draws,
                args.repeats,
                args.chunk_scalars,
                done,
                args.part,
                args.prng,
                args.candidates,
                args.floor_process,
            )
        except Exception as error:  # record it, go on with the rest
            skipped[name] = f"failed: {type(error).__name__}: {error}"
            print(f"WARNING: {name}: {skipped[name]}", file=sys.stderr, flush=True)
        save()
    save()
    print(format_tables(cells, skipped, env), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
