r"""The host blocks' generators, made fast and exactly as NumPy makes them.

Host block ``h`` of input ``i`` draws from ``Generator(PCG64(SeedSequence(words,
spawn_key=(i, h))))`` (:mod:`mcdp.engines.host`). Making one costs about 13 us, most
of it the Python around :class:`numpy.random.SeedSequence`'s few dozen 32-bit hashes.
With thousands of blocks a second that is several per cent of a fast callable's
time, and it holds the interpreter lock while the callable's thread waits for it.

:class:`Seeding` computes the same four 64-bit words that
``SeedSequence(...).generate_state(4, numpy.uint64)`` gives ``PCG64`` (the hash of
O'Neill's ``seed_seq`` alternative, as NumPy implements it), once per run for the
entropy, once per input for ``i`` and a few operations per block for ``h``: a
generator in about 6.5 us, against NumPy's 13. :class:`BlockSeed` hands them to
``PCG64`` in place of the ``SeedSequence``; anything else asked of it (``spawn``,
``entropy``, ``pool``, pickling) goes to the real ``SeedSequence``, made when
first asked. The first :class:`Seeding` of a process checks itself against NumPy
and falls back to NumPy's own, with a warning, should they differ.
"""

from __future__ import annotations

import warnings
from functools import cache
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISpawnableSeedSequence

_M32 = 0xFFFFFFFF
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875  # the hash of entropy into the pool
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED  # the hash of the pool into the state
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4  # SeedSequence's default pool size, in 32-bit words


def _words32(value: int) -> list[int]:
    """An entropy integer as SeedSequence reads it: 32-bit words, low first."""
    if value < 0:
        raise ValueError(f"Expected entropy integers >= 0, got {value}.")
    words = [value & _M32]
    value >>= 32
    while value:
        words.append(value & _M32)
        value >>= 32
    return words


def _hashmix(value: int, const: int) -> tuple[int, int]:
    value ^= const
    const = const * _MULT_A & _M32
    value = value * const & _M32
    return value ^ (value >> 16), const


def _mix(x: int, y: int) -> int:
    r = (_MIX_L * x - _MIX_R * y) & _M32
    return r ^ (r >> 16)


def _absorb(pool: tuple[int, ...], const: int, word: int) -> tuple[tuple, int]:
    """One entropy word past the pool's size mixed into every pool word."""
    out = []
    for d in pool:
        v, const = _hashmix(word, const)
        out.append(_mix(d, v))
    return tuple(out), const


def _consts(init: int, mult: int, count: int) -> tuple[tuple[int, int], ...]:
    """The ``(xor, multiply)`` constants of ``count`` hashes from ``init``: they
    do not depend on the data hashed."""
    pairs = []
    for _ in range(count):
        pairs.append((init, init * mult & _M32))
        init = init * mult & _M32
    return tuple(pairs)


_STATE_CONSTS = _consts(_INIT_B, _MULT_B, 2 * _POOL)


def _state(pool: tuple[int, ...]) -> tuple[int, int, int, int]:
    """``generate_state(4, numpy.uint64)`` of a mixed pool."""
    words = []
    for k, (xor, mult) in enumerate(_STATE_CONSTS):
        v = (pool[k % _POOL] ^ xor) * mult & _M32
        words.append(v ^ (v >> 16))
    return tuple(words[2 * k] | words[2 * k + 1] << 32 for k in range(4))


def _last_word_state(pool: tuple, consts: tuple, word: int) -> tuple:
    """:func:`_state` of ``pool`` with one more word absorbed, whose hashes'
    constants are ``consts`` (:func:`_absorb` with them known): the per-block
    work, about 4 us."""
    mixed = []
    for p, (xor, mult) in zip(pool, consts, strict=True):
        v = (word ^ xor) * mult & _M32
        r = (_MIX_L * p - _MIX_R * (v ^ (v >> 16))) & _M32
        mixed.append(r ^ (r >> 16))
    return _state(tuple(mixed))


def _run_pool(words: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """The pool and hash constant once the run's entropy ``words`` are mixed in,
    padded as SeedSequence pads them when there is a spawn key."""
    run = [w for value in words for w in _words32(value)]
    run += [0] * (_POOL - len(run))
    const, pool = _INIT_A, []
    for k in range(_POOL):
        v, const = _hashmix(run[k], const)
        pool.append(v)
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                v, const = _hashmix(pool[src], const)
                pool[dst] = _mix(pool[dst], v)
    mixed = tuple(pool)
    for word in run[_POOL:]:
        mixed, const = _absorb(mixed, const, word)
    return mixed, const


def _spawned(pool: tuple, const: int, key: tuple[int, ...]) -> tuple[tuple, int]:
    """The pool and constant once the spawn ``key``'s integers are mixed in."""
    for value in key:
        for word in _words32(value):
            pool, const = _absorb(pool, const, word)
    return pool, const


def block_state(words: tuple[int, ...], i: int, h: int) -> tuple[int, int, int, int]:
    """``SeedSequence(words, spawn_key=(i, h)).generate_state(4, numpy.uint64)``
    as Python integers, computed here."""
    return _state(_spawned(*_run_pool(words), (i, h))[0])


class Seeding:
    """The generator of each block ``(i, h)`` of one run's entropy ``words``."""

    def __init__(self, words: tuple[int, ...]):
        self.words = tuple(int(w) for w in words)
        self._pool, self._const = _run_pool(self.words)
        self._inputs: dict[int, tuple[tuple, int, tuple]] = {}
        self.exact = _agrees_with_numpy()

    def state(self, i: int, h: int) -> tuple[int, int, int, int]:
        """:func:`block_state` of this run's words: the run's and input ``i``'s
        share computed once."""
        if i not in self._inputs:
            pool, const = _spawned(self._pool, self._const, (i,))
            self._inputs[i] = pool, const, _consts(const, _MULT_A, _POOL)
        pool, const, consts = self._inputs[i]
        if 0 <= h <= _M32:  # one word: the common case, written out
            return _last_word_state(pool, consts, h)
        return _state(_spawned(pool, const, (h,))[0])

    def generator(self, i: int, h: int) -> np.random.Generator:
        """``Generator(PCG64(SeedSequence(words, spawn_key=(i, h))))``."""
        if not self.exact:
            seed = np.random.SeedSequence(self.words, spawn_key=(i, h))
        else:
            seed = BlockSeed(self.words, (i, h), self.state(i, h))
        return np.random.Generator(np.random.PCG64(seed))


def _sequence(words: tuple[int, ...], spawn_key: tuple[int, ...]):
    return np.random.SeedSequence(words, spawn_key=spawn_key)


class BlockSeed(ISpawnableSeedSequence):
    """``SeedSequence(words, spawn_key=key)`` with its PCG64 state known: that is
    what ``PCG64`` asks of it; the real one answers everything else."""

    def __init__(self, words: tuple[int, ...], key: tuple[int, ...], state: tuple):
        self._words, self._key, self._state = words, key, state
        self._sequence: np.random.SeedSequence | None = None

    @property
    def sequence(self) -> np.random.SeedSequence:
        if self._sequence is None:
            self._sequence = _sequence(self._words, self._key)
        return self._sequence

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        if n_words == 4 and np.dtype(dtype) == np.uint64:
            return np.array(self._state, dtype=np.uint64)
        return self.sequence.generate_state(n_words, dtype)

    def spawn(self, n_children: int) -> list[np.random.SeedSequence]:
        return self.sequence.spawn(n_children)

    def __getattr__(self, name: str) -> Any:  # entropy, spawn_key, pool, ...
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.sequence, name)

    def __reduce__(self):  # pickled as the SeedSequence it stands for
        return _sequence, (self._words, self._key)


@cache
def _agrees_with_numpy() -> bool:
    """Whether :func:`block_state` gives NumPy's states (checked once a process,
    on entropy of one, two and five words, spawn keys of one and two words)."""
    cases = [((0,), 0, 0), ((1, 2), 1, 7), ((2**32 - 1, 5, 6, 7, 8), 3, 2**33 + 9)]
    for words, i, h in cases:
        numpy = np.random.SeedSequence(words, spawn_key=(i, h))
        if tuple(int(w) for w in numpy.generate_state(4, np.uint64)) != block_state(
            words, i, h
        ):
            warnings.warn(
                "numpy.random.SeedSequence no longer hashes as mcdp expects: the "
                "host blocks' generators are made by NumPy itself (slower, the "
                "same streams).",
                RuntimeWarning,
                stacklevel=3,
            )
            return False
    return True
