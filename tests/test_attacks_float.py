"""Attacks on floating-point outputs: the float layout against a plain-Python
oracle, the float-support attack and the learned attack's bit features refuting
the textbook float Laplace, and valid bounds over seeds for a snapped (discrete)
Laplace whose true loss equals its claim.
"""

import math
import struct

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import mcdp
from mcdp import attacks, learning, subjects
from mcdp.attacks import ATTACKS, float_support_attack, learned_attack

from conftest import FAIL_PROB, SEED, Z

VALUES = [1.0, 1.5, 0.1, -0.75, 0.0, 2.0**-1074, 3.0 * 2.0**-60, -(2.0**52 + 1)]


def _oracle(v: float) -> tuple[int, int]:
    """(sign and exponent field, significant mantissa bits) from the bytes."""
    bits = struct.unpack("<Q", struct.pack("<d", v))[0]
    mantissa = bits & ((1 << 52) - 1)
    trailing = 52 if mantissa == 0 else (mantissa & -mantissa).bit_length() - 1
    return bits >> 52, 52 - trailing


def test_float_bits_match_the_bytes():
    with jax.enable_x64(True):
        top, precision, _ = learning.float_bits(jnp.asarray(VALUES, jnp.float64))
    assert [(int(t), int(p)) for t, p in zip(top, precision, strict=True)] == [
        _oracle(v) for v in VALUES
    ]
    assert _oracle(1.5) == (1023, 1) and _oracle(1.0) == (1023, 0)


def test_float_bits_in_float32():
    top, precision, _ = learning.float_bits(jnp.asarray([1.5, 0.1], jnp.float32))
    assert top.tolist() == [127, 123]
    assert precision.tolist() == [1, 23 - 0]  # 0.1f has its last mantissa bit set


def _table_oracle(outputs: np.ndarray, dtype: str) -> dict:
    """{(input, coordinate, binade): most significant bits seen}, value by value
    from the bytes (float64 or float32)."""
    fmt, uint, nmant = {"float64": ("<d", "<Q", 52), "float32": ("<f", "<I", 23)}[dtype]
    seen: dict = {}
    for (i, _, c), v in np.ndenumerate(outputs):
        bits = struct.unpack(uint, struct.pack(fmt, v))[0]
        mantissa = bits & ((1 << nmant) - 1)
        trailing = nmant if mantissa == 0 else (mantissa & -mantissa).bit_length() - 1
        cell = (i, c, bits >> nmant)
        seen[cell] = max(seen.get(cell, -1), nmant - trailing)
    return seen


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("piece", [7, 64, 1 << 22])  # pieces of 2 rows, 21, all
def test_float_support_table_matches_the_bytes(dtype, piece):
    """Every cell of the table against the oracle, with NaN, infinities, signed
    zeros, subnormals and a short last piece among the outputs."""
    rng = np.random.default_rng(SEED)
    outputs = rng.laplace(size=(2, 101, 3)).astype(dtype)
    outputs[0, :6, 0] = [
        np.nan,
        np.inf,
        -np.inf,
        0.0,
        -0.0,
        np.finfo(dtype).smallest_subnormal,
    ]
    outputs[1, :, 2] = 1.5  # one cell of one bit
    table = attacks.float_support_table(outputs, dtype, piece=piece)
    bins = {"float64": 4096, "float32": 512}[dtype]
    assert table.shape == (2, 3, bins) and table.dtype == np.int32
    seen = _table_oracle(outputs, dtype)
    expected = np.full(table.shape, -1, np.int32)
    for cell, precision in seen.items():
        expected[cell] = precision
    np.testing.assert_array_equal(table, expected)
    assert table[1, 2, 1023 if dtype == "float64" else 127] == 1


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_float_support_guess_matches_the_bytes(dtype):
    """The guess of every output against the oracle's tables, read value by value:
    2 where some coordinate has more significant bits than the second input's
    training outputs had in its cell (or a cell they never reached) and none has
    more than the first's, 0 the other way round, 1 otherwise. The outputs mix
    values seen in training, finer ones, NaN, infinities, signed zeros and a
    binade that neither input reached."""
    rng = np.random.default_rng(SEED)
    training = np.round(rng.laplace(size=(2, 200, 3)), 3).astype(dtype)
    training[1, :, 1] = np.round(training[1, :, 1])  # a coarse grid for x'
    training[0, :3, 0] = [np.nan, np.inf, -0.0]
    outputs = np.concatenate(
        [
            training[0, :40],
            training[1, :40],
            rng.laplace(size=(40, 3)).astype(dtype),  # every bit
            np.round(rng.laplace(size=(40, 3))).astype(dtype),
        ]
    )
    outputs[:5, 2] = [np.nan, np.inf, -np.inf, -0.0, 2.0**-20]
    seen = _table_oracle(training, dtype)
    expected = []
    for row in outputs:
        cells = _table_oracle(row[None, None, :], dtype)  # (0, c, binade)
        outside = [
            any(p > seen.get((i, c, top), -1) for (_, c, top), p in cells.items())
            for i in (0, 1)
        ]
        expected.append(1 + outside[1] - outside[0])
    aux = attacks._float_support_aux(training, dtype)
    with jax.enable_x64(dtype == "float64"):
        guess = jax.jit(attacks._float_support_guess)(jnp.asarray(outputs), aux)
    np.testing.assert_array_equal(np.asarray(guess), expected)
    assert {0, 1, 2} <= set(expected)


def test_float_support_is_registered_and_checks_its_sample():
    assert "float-support" in ATTACKS
    with pytest.raises(ValueError, match="train_draws"):
        float_support_attack(train_draws=1)
    with pytest.raises(ValueError, match="features"):
        learned_attack(features="pixels")
    with pytest.raises(ValueError, match="piece"):
        attacks.float_support_table(np.zeros((2, 3, 1)), "float64", piece=0)


def test_float_support_refutes_the_textbook_laplace():
    """Under x' = 1 every output is a multiple of 2^-53, under x = 0 the outputs
    in (-1/2, 1/2) are not (probability 1 - e^{-1/2}, about 0.39; more fire in
    other binades, where x' reaches only a coarser grid still): the event has
    probability 0 under x', so the bound grows like ln(0.4 n)."""
    textbook = subjects.numpy_textbook_laplace(1.0)
    r = mcdp.audit_delta(
        textbook, 1.0, 0.0, 1, 20_000, pair="scalar-0-1",
        attack=float_support_attack(train_draws=20_000), seed=SEED,
    )  # fmt: skip
    assert r.violated and r.epsilon_lower > 5
    (_, _, speaks_for_x), (_, _, under_x_prime) = r.counts
    p = -math.expm1(-0.5)  # P[|eta| < 1/2]
    assert speaks_for_x / 20_000 > p - Z * math.sqrt(p * (1 - p) / 20_000)
    assert under_x_prime <= 20  # binades never seen in training only


def test_bit_features_refute_the_textbook_laplace():
    textbook = subjects.numpy_textbook_laplace(1.0)
    bits = learned_attack(train_draws=20_000, select_draws=20_000, features="bits")
    r = mcdp.audit_delta(
        textbook, 1.0, 0.0, 1, 50_000, pair="scalar-0-1", attack=bits, seed=SEED
    )
    assert r.violated and r.epsilon_lower > 1
    assert r.events and all("(bits)" in e for e in r.events)


def test_float_support_does_not_flag_the_snapped_laplace():
    """One grid for both inputs: what fires is the tails' unseen binades only."""
    snapped = subjects.numpy_snapped_laplace(1.0)
    r = mcdp.audit_delta(
        snapped, 1.0, 0.0, 1, 20_000, pair="scalar-0-1",
        attack=float_support_attack(train_draws=20_000), seed=SEED,
    )  # fmt: skip
    assert not r.violated and r.epsilon_lower < 1


def _false_alarms(attack, runs: int) -> int:
    snapped = subjects.numpy_snapped_laplace(1.0)
    flags = 0
    for seed in range(SEED, SEED + runs):
        r = mcdp.audit_delta(
            snapped, 1.0, 0.0, 1, 4000, pair="scalar-0-1", attack=attack, seed=seed
        )
        flags += r.violated
    return flags


def test_bit_features_bound_is_valid_over_seeds():
    """The snapped Laplace on inputs one unit apart, its sensitivity: the true
    loss equals the claim, so every flag is a false alarm.
    Over 30 seeds the flags of a 95 % bound stay at most the binomial quantile
    at FAIL_PROB (2 flags expected at most; the region is [0, 7])."""
    runs, alpha = 30, 0.05
    bits = learned_attack(train_draws=2000, select_draws=4000, features="bits")
    assert _false_alarms(bits, runs) <= stats.binom.isf(FAIL_PROB, runs, alpha)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["learned-bits", "float-support"])
def test_bounds_are_valid_over_many_seeds(name):
    runs, alpha = 200, 0.05
    attack = {
        "learned-bits": learned_attack(
            train_draws=2000, select_draws=4000, features="bits"
        ),
        "float-support": float_support_attack(train_draws=4000),
    }[name]
    assert _false_alarms(attack, runs) <= stats.binom.isf(FAIL_PROB, runs, alpha)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_support_refutes_the_jax_laplace_in_floats(dtype):
    """mcdp's own ``laplace`` is a textbook float Laplace too: on x = +-1 an output
    in [1/2, 1) comes from eta in [-1/2, 0) under +1 (full precision) but from
    eta in [3/2, 2) under -1 (a grid twice as coarse), so about a quarter of the
    outputs under one input are impossible under the other, whatever the dtype;
    its true loss on real numbers is 2."""
    r = mcdp.audit_delta(
        "laplace", 2.0, 0.0, 1, 10_000, pair="axis", dtype=dtype,
        attack=float_support_attack(train_draws=10_000), seed=SEED,
    )  # fmt: skip
    assert r.attack == "float-support" and r.violated and r.epsilon_lower > 4
    assert np.sum(r.counts) == 20_000
