"""The host blocks' generators (mcdp._seedseq) are NumPy's, exactly: the same
PCG64 states and draws as Generator(PCG64(SeedSequence(words, spawn_key=(i, h)))),
and whatever else is asked of the seed answers as the real SeedSequence would."""

import pickle

import numpy as np
import pytest

from mcdp import _seedseq, sampling
from mcdp.engines import host

from conftest import SEED


def _numpy(words, i, h):
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(words, spawn_key=(i, h)))
    )


def _cases():
    """Entropy of 1 to 6 words (zeros, the largest word, words past 32 bits) and
    spawn keys of one and two words each."""
    rng = np.random.default_rng(SEED)
    edges = [0, 1, 17, 2**31, 2**32 - 1, 2**32, 2**40 + 3]
    cases = []
    for t in range(300):
        size = int(rng.integers(1, 7))
        words = tuple(int(w) for w in rng.integers(0, 2**32, size, dtype=np.uint64))
        if t % 10 == 0:
            words = (0,) * size
        if t % 10 == 1:
            words = words[:-1] + (2**32 + int(words[-1]),)
        i = int(rng.choice(edges[:5]))
        h = int(rng.choice(edges)) if t % 2 else int(rng.integers(0, 2**26))
        cases.append((words, i, h))
    return cases


def test_the_states_are_numpys():
    for words, i, h in _cases():
        expected = np.random.SeedSequence(words, spawn_key=(i, h)).generate_state(
            4, np.uint64
        )
        assert _seedseq.block_state(words, i, h) == tuple(int(w) for w in expected)
        seeding = _seedseq.Seeding(words)
        assert seeding.state(i, h) == tuple(int(w) for w in expected)


def test_the_generators_draw_as_numpys():
    words = host.entropy(sampling.key(SEED))
    seeding = _seedseq.Seeding(words)
    for i, h in [(0, 0), (1, 0), (0, 1), (1, 12345), (2, 2**32 - 1), (1, 2**32 + 5)]:
        ours, numpy = seeding.generator(i, h), _numpy(words, i, h)
        assert ours.bit_generator.state == numpy.bit_generator.state
        np.testing.assert_array_equal(ours.laplace(size=100), numpy.laplace(size=100))
        np.testing.assert_array_equal(
            host.block_generator(words, i, h).random(10), _numpy(words, i, h).random(10)
        )


def test_the_seed_answers_as_the_seed_sequence():
    words, key = (3, 4), (1, 9)
    ours = _seedseq.Seeding(words).generator(*key)
    numpy = _numpy(words, *key)
    seed, real = ours.bit_generator.seed_seq, numpy.bit_generator.seed_seq
    assert seed.entropy == real.entropy and seed.spawn_key == real.spawn_key
    np.testing.assert_array_equal(seed.pool, real.pool)
    np.testing.assert_array_equal(seed.generate_state(8), real.generate_state(8))
    spawned, expected = ours.spawn(2), numpy.spawn(2)
    for a, b in zip(spawned, expected, strict=True):
        np.testing.assert_array_equal(a.random(5), b.random(5))
    again = pickle.loads(pickle.dumps(ours))
    assert isinstance(again.bit_generator.seed_seq, np.random.SeedSequence)
    np.testing.assert_array_equal(again.random(5), ours.random(5))


def test_a_numpy_that_hashes_otherwise_gets_numpys_own(monkeypatch):
    """Should NumPy's hash ever change, the check warns and NumPy makes the
    generators: the streams stay NumPy's."""
    monkeypatch.setattr(_seedseq, "block_state", lambda words, i, h: (0, 0, 0, 0))
    _seedseq._agrees_with_numpy.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="SeedSequence no longer hashes"):
            seeding = _seedseq.Seeding((5, 6))
        assert not seeding.exact
        ours, numpy = seeding.generator(1, 2), _numpy((5, 6), 1, 2)
        assert ours.bit_generator.state == numpy.bit_generator.state
    finally:
        _seedseq._agrees_with_numpy.cache_clear()


def test_negative_entropy_is_refused():
    with pytest.raises(ValueError, match="entropy integers >= 0"):
        _seedseq.Seeding((-1,))
