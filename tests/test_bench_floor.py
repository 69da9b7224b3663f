"""The NumPy samplers of the floor benchmark (``benchmarks/bench_floor.py``) draw
what the JAX mechanisms draw.

For every case of the suite with a sampler, ``N`` draws per input of the case's pair
from the sampler and from the JAX mechanism (its ``sample``) are
compared by two-sample Kolmogorov–Smirnov tests, one per input and output column
and one per input on the row sums (which sees the joint law: cutoffs, cumulative
sums); the smallest p-value must exceed ``FAIL_PROB`` over the number of tests of
the case (Bonferroni: one false alarm in ``1 / FAIL_PROB`` cases). KS is
conservative on discrete outputs, where it still compares the whole distribution
function.
"""

import argparse
import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import mcdp
from mcdp.mechanisms import MECHANISMS, SUITE
from mcdp.sampling import key as stream_key

from conftest import FAIL_PROB, SEED, load_benchmark

bench_floor = load_benchmark("bench_floor")
N = 20_000  # draws per input of each side
CASES = [name for name in SUITE if name in bench_floor.SAMPLERS]
# The JAX draws come from the mechanism's own sampler, eagerly, on mcdp's opt-in
# splitmix64 stream: the law does not depend on the stream, and this compiles in a
# fraction of the time of the engine's program on the default threefry4x32 stream
# (whose program for laplace-float did not finish compiling in 8 minutes with JAX
# 0.10.2 on CPU).
STREAM = "splitmix64"


def _numpy_draws(name, pair, params, n, seed):
    sampler = bench_floor.SAMPLERS[name]
    host = jax.tree.map(np.asarray, params)
    tx = MECHANISMS[name].transformed(pair, host)
    rng = np.random.default_rng(seed)
    return np.stack([sampler.sample(rng, x, host, n) for x in tx])


@pytest.mark.parametrize("name", CASES)
def test_numpy_sampler_matches_the_jax_mechanism(name):
    pair, params = bench_floor.setup(name)
    key = stream_key(SEED, STREAM)
    with jax.enable_x64(True):
        jax_out = np.stack(
            [
                MECHANISMS[name].sample(
                    jax.random.fold_in(key, i),
                    jnp.asarray(np.broadcast_to(x, (N, x.size))),
                    params,
                )
                for i, x in enumerate(pair)
            ]
        )
    np_out = _numpy_draws(name, pair, params, N, SEED)
    assert np_out.dtype == np.float64
    assert np_out.shape == jax_out.shape, (np_out.shape, jax_out.shape)
    assert np.all(np.isfinite(np_out))
    pvalues = {}
    for i in range(2):
        columns = [(f"input {i} column {j}", j) for j in range(np_out.shape[2])]
        for label, j in columns:
            pvalues[label] = stats.ks_2samp(np_out[i, :, j], jax_out[i, :, j]).pvalue
        pvalues[f"input {i} row sum"] = stats.ks_2samp(
            np_out[i].sum(axis=1), jax_out[i].sum(axis=1)
        ).pvalue
    label, smallest = min(pvalues.items(), key=lambda item: item[1])
    assert smallest > FAIL_PROB / len(pvalues), (name, label, smallest)


def test_every_case_of_the_suite_has_a_sampler_or_a_reason():
    for name in SUITE:
        reason = bench_floor.skip_reason(name)
        assert (reason is None) == (name in bench_floor.SAMPLERS), (name, reason)


@pytest.mark.parametrize("name", CASES)
def test_the_floor_runs_every_sampler_in_chunks(name):
    pair, params = bench_floor.setup(name)
    total = bench_floor.numpy_floor(name, pair, params, 37, SEED, chunk_scalars=64)
    assert math.isfinite(total)


@pytest.mark.parametrize("name", ["noisy-hist1", "laplace-parallel", "snapping"])
def test_the_floor_reduces_every_draw(name):
    # one draw call per chunk: the chunks continue one stream, so several short
    # chunks (the last one shorter) sum to what one call over all rows gives
    pair, params = bench_floor.setup(name)
    draws = 37
    total = bench_floor.numpy_floor(name, pair, params, draws, SEED, chunk_scalars=64)
    whole = _numpy_draws(name, pair, params, draws, SEED).sum()
    assert total == pytest.approx(whole, rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("name", ["truncated-geometric", "svt3"])
def test_the_floor_in_a_process_of_its_own_draws_what_it_draws_here(name):
    # the same stream, sampler and chunks in another process, whose malloc keeps
    # its memory: the same numbers, so the same sum to the last bit
    pair, params = bench_floor.setup(name)
    here = bench_floor.numpy_floor(name, pair, params, 5000, SEED, chunk_scalars=4096)
    there, faults = bench_floor.floor_in_child(name, 5000, SEED, 4096, repeats=2)
    assert there.result == here
    assert there.seconds > 0 and there.cpu_utilisation > 0 and faults >= 0
    mine, _ = bench_floor.timed_floor(name, 5000, SEED, 4096, repeats=1)
    assert mine.result == here


def test_the_floors_process_that_fails_says_which_case_and_why():
    with pytest.raises(RuntimeError, match="no-such-case.*KeyError"):
        bench_floor.floor_in_child("no-such-case", 10, SEED, 64, repeats=1)


def test_the_command_line_defaults():
    args = bench_floor.parse_args([])
    assert args.draws == [10**7, 10**8]
    assert args.cases == list(SUITE)
    assert args.json == "benchmarks/results/floor.json"
    assert args.warmup_draws == 100_000
    args = bench_floor.parse_args(["--draws", "1e5", "--cases", "svt1,snapping"])
    assert args.draws == [10**5] and args.cases == ["svt1", "snapping"]
    with pytest.raises(SystemExit):
        bench_floor.parse_args(["--cases", "no-such-case"])
    assert args.part == "both" and args.merge is None and not args.ceilings
    assert args.floor_process == "child"
    assert bench_floor.parse_args(["--floor-process", "same"]).floor_process == "same"
    assert bench_floor.parse_args(["--warmup-draws", "1e7"]).warmup_draws == 10**7
    assert bench_floor.parse_args(["--warmup-draws", "0"]).warmup_draws == 0
    with pytest.raises(SystemExit):
        bench_floor.parse_args(["--warmup-draws", "1e5,2e5"])


def test_the_audits_stream_is_the_default_unless_asked_for():
    assert bench_floor.parse_args([]).prng == "threefry4x32"
    assert bench_floor._spec("snapping", 0).prng == "threefry4x32"
    args = bench_floor.parse_args(["--prng", "splitmix64"])
    assert args.prng == "splitmix64"
    assert bench_floor._spec("snapping", 0, args.prng).prng == "splitmix64"
    with pytest.raises(SystemExit):
        bench_floor.parse_args(["--prng", "pcg64"])


def _document(**fields):
    row = dict(case="svt1", pair="x-shuffle", dim=10, epsilon=0.1, draws=10**8)
    return {"results": [{**row, **fields}]}


def test_merge_joins_an_audit_run_and_a_floor_run():
    audit = _document(audit_seconds=6.0, prep_seconds=5.0, epsilon_lower=0.08)
    floor = _document(floor_seconds=12.0, floor_cpu_utilisation=1.0)
    (cell,) = bench_floor.merge([audit, floor])
    assert cell.audit_seconds == 6.0 and cell.floor_seconds == 12.0
    assert cell.audit_over_floor == 0.5
    assert cell.counting_over_floor == pytest.approx(1 / 12)
    (alone,) = bench_floor.merge([audit])
    assert alone.floor_seconds is None and alone.audit_over_floor is None


def test_merge_refuses_two_runs_that_disagree():
    with pytest.raises(ValueError, match="audit_seconds"):
        bench_floor.merge([_document(audit_seconds=6.0), _document(audit_seconds=7.0)])


def test_the_ceiling_column_is_the_ceiling_at_the_cells_draws():
    (cell,) = bench_floor.merge([_document(epsilon_lower=0.08)])
    cell = bench_floor.with_ceiling(cell)
    top = bench_floor.ceiling("svt1", "x-shuffle", 10**8, bench_floor.CONFIDENCE)
    assert cell.ceiling == top.value
    assert cell.bound_over_ceiling == pytest.approx(0.08 / top.value)


def test_the_candidates_option_takes_the_portfolios_labels_in_its_order():
    """``--candidates`` names candidates of the portfolio, each once, kept in the
    portfolio's order (the order that breaks its ties), and the audits take the
    portfolio of those alone; without it, AuditSpec's default attack."""
    parse = bench_floor.parse_candidates
    assert parse("learned,lr, majority,lr") == ("lr", "majority", "learned")
    for text in ("mlp", "", "lr,bogus"):
        with pytest.raises(argparse.ArgumentTypeError, match="learned-mlp"):
            parse(text)
    assert bench_floor.parse_args([]).candidates is None
    args = bench_floor.parse_args(["--candidates", "float-support,lr"])
    assert args.candidates == ("lr", "float-support")
    default = {f.name: f.default for f in dataclasses.fields(mcdp.AuditSpec)}
    assert bench_floor._spec("svt1", 0).attack is default["attack"]  # the default's
    smaller = bench_floor._spec("svt1", 0, candidates=args.candidates).attack
    assert smaller.name == "auto"
    assert smaller.prepare.args[0].candidates == ("lr", "float-support")
