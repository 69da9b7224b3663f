"""The splitmix64 stream: its bits against a plain-Python definition, its statistics,
and audits drawn from it against exact values."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from mcdp import Acl2022Grid, audit, prng, run_grid
from mcdp.auditing import validate_audit
from mcdp.sampling import key

from conftest import FAIL_PROB, SEED, Z, assert_one_line_error

M64 = (1 << 64) - 1


# --- the definition of mcdp.prng, in Python integers ---------------------------------


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _fmix(z: int) -> int:
    z = ((z ^ (z >> 33)) * 0xFF51AFD7ED558CCD) & M64
    z = ((z ^ (z >> 33)) * 0xC4CEB9FE1A85EC53) & M64
    return z ^ (z >> 33)


def _gamma(k: int) -> int:
    z = _fmix(k) | 1
    return z ^ 0xAAAAAAAAAAAAAAAA if bin(z ^ (z >> 1)).count("1") < 24 else z


def _seed(s: int) -> int:
    return _mix((s + prng.GOLDEN) & M64)


def _derive(k: int, tag: int, index: int) -> int:
    return _mix(_fmix(k ^ tag) ^ _mix((index + prng.GOLDEN) & M64))


def _bits(k: int, width: int, size: int) -> list[int]:
    return [_mix((k + i * _gamma(k)) & M64) >> (64 - width) for i in range(1, size + 1)]


def _word_of(k) -> int:
    hi, lo = (int(v) for v in jax.random.key_data(k))
    return (hi << 32) | lo


# --- the implementation against the definition --------------------------------------


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 12345, 2**32 - 1])
def test_keys_follow_the_definition(seed, x64):
    with jax.enable_x64(x64):
        root = key(seed, "splitmix64")
        assert _word_of(root) == _seed(seed)
        for d in (0, 1, 7, 2**32 - 1):
            assert _word_of(jax.random.fold_in(root, d)) == _derive(_seed(seed), 0, d)
        children = jax.random.split(root, 5)
        expected = [_derive(_seed(seed), prng.SPLIT_TAG, i) for i in range(5)]
        assert [_word_of(c) for c in children] == expected


# 64-bit outputs need x64
WIDTHS = [(8, False), (16, False), (32, False), (32, True), (64, True)]


@pytest.mark.parametrize("width,x64", WIDTHS)
@pytest.mark.parametrize("size", [1, 3, 8, 1000])
def test_bits_follow_the_definition(width, size, x64):
    with jax.enable_x64(x64):
        k = jax.random.fold_in(key(SEED, "splitmix64"), 3)
        bits = jax.random.bits(k, (size,), jnp.dtype(f"uint{width}"))
        assert [int(b) for b in np.asarray(bits)] == _bits(_word_of(k), width, size)
        shaped = jax.random.bits(k, (2, 3), jnp.dtype(f"uint{width}"))
        assert np.asarray(shaped).ravel().tolist() == _bits(_word_of(k), width, 6)


def test_float32_draws_do_not_depend_on_the_x64_setting():
    k = jax.random.fold_in(key(SEED, "splitmix64"), 11)
    draws = []
    for x64 in (False, True):
        with jax.enable_x64(x64):
            draws.append(np.asarray(jax.random.laplace(k, (4096,), jnp.float32)))
    np.testing.assert_array_equal(draws[0], draws[1])


def test_the_gamma_always_has_24_transitions_and_is_odd():
    # xor with 0xAAAA... flips every one of the 63 transitions and keeps bit 0, so
    # a word with n < 24 transitions gets 63 - n > 24; checked on 100,000 keys
    with jax.enable_x64(True):
        ks = jnp.arange(100_000, dtype=jnp.uint64) * jnp.uint64(prng.GOLDEN)
        g = prng.gamma(prng.fmix(ks))
        assert bool(jnp.all(g & jnp.uint64(1) == 1))
        transitions = jax.lax.population_count(g ^ (g >> 1))
        assert int(jnp.min(transitions)) >= 24


# --- statistics of the bits ---------------------------------------------------------


def _block_uniforms(num_blocks: int, per_block: int) -> np.ndarray:
    """Uniforms of ``num_blocks`` consecutive block keys, as the engine makes them."""
    k = jax.random.fold_in(key(SEED, "splitmix64"), 0)
    blocks = jnp.arange(num_blocks, dtype=jnp.uint32)
    return np.asarray(
        jax.vmap(
            lambda b: jax.random.uniform(
                jax.random.fold_in(k, b), (per_block,), jnp.float32
            )
        )(blocks),
        dtype=np.float64,
    )


def test_bytes_are_uniform():
    k = key(SEED, "splitmix64")
    data = np.asarray(jax.random.bits(k, (1 << 22,), jnp.uint32)).view(np.uint8)
    observed = np.bincount(data, minlength=256)
    assert stats.chisquare(observed).pvalue > FAIL_PROB


def test_every_bit_is_fair():
    k = key(SEED, "splitmix64")
    words = np.asarray(jax.random.bits(k, (1 << 20,), jnp.uint32))
    n = words.size
    ones = np.array([np.count_nonzero((words >> i) & 1) for i in range(32)])
    z_bonferroni = stats.norm.isf(FAIL_PROB / 2 / 32)
    assert np.all(np.abs(ones - n / 2) <= z_bonferroni * math.sqrt(n / 4)), ones


def test_neighbouring_blocks_and_draws_are_uncorrelated():
    u = _block_uniforms(1024, 1024) - 0.5  # var 1/12 each
    pairs = {
        "neighbouring blocks": (u[:-1], u[1:]),
        "neighbouring draws": (u[:, :-1], u[:, 1:]),
        "blocks 2**k apart": (u[:-256], u[256:]),
    }
    z_bonferroni = stats.norm.isf(FAIL_PROB / 2 / len(pairs))
    for name, (a, b) in pairs.items():
        r = np.mean(a * b) * 12  # correlation; sd 1 / sqrt(n) when independent
        assert abs(r) <= z_bonferroni / math.sqrt(a.size), (name, r)


def test_block_means_spread_as_independent_blocks_do():
    """A block's 1024 uniforms have mean 1/2, sd sqrt(1/12/1024); the spread of 4096
    block means tests that blocks are neither copies nor anti-correlated."""
    means = _block_uniforms(4096, 1024).mean(axis=1)
    sd = math.sqrt(1 / 12 / 1024)
    statistic = np.sum(((means - 0.5) / sd) ** 2)  # chi-square with 4096 dof
    low, high = stats.chi2.ppf([FAIL_PROB / 2, 1 - FAIL_PROB / 2], df=means.size)
    assert low <= statistic <= high


# --- audits drawn from it ----------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    "name,epsilon,d,draws",
    [
        ("laplace", 1.0, 8, 200_000),
        ("adept", 0.5, 32, 100_000),
        ("adept", 10.0, 1, 10**6),
    ],
)
def test_audits_match_exact_values(name, epsilon, d, draws, dtype):
    result = audit(name, epsilon, d, draws, seed=SEED, dtype=dtype, prng="splitmix64")
    assert result.prng_impl == "splitmix64"
    p, q = result.exact_guess1
    for rate, exact in zip(result.guess1_rate, (p, q), strict=True):
        assert abs(rate - exact) <= Z * math.sqrt(exact * (1 - exact) / draws)


def test_the_two_streams_differ_and_each_repeats():
    runs = {
        p: [audit("laplace", 1.0, 4, 50_000, seed=SEED, prng=p).counts for _ in "ab"]
        for p in prng.STREAMS
    }
    for first, second in runs.values():
        assert first == second
    assert runs["threefry4x32"][0] != runs["splitmix64"][0]


def test_violation_records_name_the_stream_of_their_key():
    from mcdp.violations import count_violations

    for stream in prng.STREAMS:
        (record,) = count_violations(key(SEED, stream), "uniform", [4], 1000)
        assert record.prng_impl == stream


def test_a_grid_file_keeps_one_stream(tmp_path):
    out = tmp_path / "grid.json"
    spec = Acl2022Grid(draws=2048, mechanisms=("laplace",), epsilons=(1.0,), dims=(2,))
    run_grid(spec, out)
    with pytest.raises(ValueError, match="prng_impl"):
        run_grid(Acl2022Grid(**{**spec.__dict__, "prng": "splitmix64"}), out)


def test_unknown_streams_are_refused(capsys):
    with pytest.raises(ValueError, match="prng"):
        key(0, "philox4x32")
    with pytest.raises(ValueError, match="prng"):
        audit("laplace", 1.0, 2, 100, prng="rbg")
    with pytest.raises(ValueError, match="prng"):
        Acl2022Grid(draws=10, prng="rbg").validated()
    validate_audit(1.0, 2, 100, 0, 0.95, "float32")  # the other arguments still pass
    assert_one_line_error(
        capsys,
        ["audit", "--mechanism", "laplace", "--epsilon", "1", "--dim", "2",
         "--draws", "100", "--prng", "rbg"],
        "--prng", "splitmix64",
    )  # fmt: skip
