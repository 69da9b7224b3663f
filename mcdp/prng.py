r"""The random streams a seed can mean: ``threefry4x32`` (default) and ``splitmix64``.

``threefry4x32`` is JAX's counter-based Threefry with four 32-bit words per call: 20
rounds of integer adds, rotations and xors, designed as a block cipher. It is the
default stream of every seed.

``splitmix64`` is an opt-in stream for long CPU runs, built here as a JAX PRNG
implementation (:func:`jax.extend.random.define_prng_impl`), so every
``jax.random`` sampler takes its keys unchanged. A key is one 64-bit word ``k``
(stored as two uint32, high word first). Its bits are the SplitMix64 sequence of
Steele, Lea and Flood ("Fast splittable pseudorandom number generators", OOPSLA
2014) from the state ``k`` with the key's own odd increment :math:`\gamma(k)`:

.. math:: w_i = \mathrm{mix}(k + i\,\gamma(k) \bmod 2^{64}), \quad i = 1, 2, \dots

where ``mix`` is SplitMix64's output function (Stafford's "Mix13", a bijection of
64-bit words) and :math:`\gamma(k)` is MurmurHash3's finaliser of ``k``, made odd
and, as in Java's ``SplittableRandom``, xored with ``0xAAAA...`` when it has fewer
than 24 bit transitions. The i-th of ``n`` requested values of ``w`` bits is the top
``w`` bits of :math:`w_i` (one word per value: elementwise, with no reshuffling that
would cost more than the bits it saves). Keys derive by hashing:
``fold_in(k, d) = mix(fmix(k) xor mix(d + G))`` with ``G`` the golden-ratio
constant, and ``split`` the same with a tag xored into ``k``, so distinct ``d`` give
distinct keys. Every operation is an integer add, multiply, shift or xor modulo
:math:`2^{64}`: the bits are the same on every backend.

On a 2-core AVX-512 CPU, ``splitmix64`` made the engine 1.7-2.4x as fast in float64
and 1.7-3.9x in float32 (``benchmarks/bench_engine.py``; Laplace, float32, d = 32:
1.35e9 against 0.57e9 scalar draws/s): Threefry's 20 rounds cost more than the rest
of a float32 Laplace draw, two 64-bit multiplies per value much less. The price is a
weaker generator: its authors report that SplitMix64 passes the BigCrush battery as
a single sequence, but it is not a cipher and its streams are not proven
independent, so the default stays Threefry; use ``splitmix64`` to screen many
settings fast and confirm a finding with the default stream. Every record says
which stream it used (``prng_impl``).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import define_prng_impl

from mcdp import _validate
from mcdp._types import PRNGKey

DEFAULT = "threefry4x32"
SPLITMIX64 = "splitmix64"
STREAMS = (DEFAULT, SPLITMIX64)

GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / golden ratio, odd
SPLIT_TAG = 0x5851F42D4C957F2D  # separates split(k)[i] from fold_in(k, i)
_TRANSITIONS = 0xAAAAAAAAAAAAAAAA


def _u64(value: int) -> jax.Array:
    return jnp.asarray(np.uint64(value))


def mix(z: jax.Array) -> jax.Array:
    """SplitMix64's output function (Stafford's Mix13) on uint64 words."""
    z = (z ^ (z >> 30)) * _u64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> 27)) * _u64(0x94D049BB133111EB)
    return z ^ (z >> 31)


def fmix(z: jax.Array) -> jax.Array:
    """MurmurHash3's 64-bit finaliser on uint64 words."""
    z = (z ^ (z >> 33)) * _u64(0xFF51AFD7ED558CCD)
    z = (z ^ (z >> 33)) * _u64(0xC4CEB9FE1A85EC53)
    return z ^ (z >> 33)


def gamma(k: jax.Array) -> jax.Array:
    """The key's odd increment, with at least 24 bit transitions."""
    z = fmix(k) | _u64(1)
    few = jax.lax.population_count(z ^ (z >> 1)) < 24
    return jnp.where(few, z ^ _u64(_TRANSITIONS), z)


def _word(data: jax.Array) -> jax.Array:
    """The uint64 word of key data ``[high, low]``."""
    return (data[..., 0].astype(jnp.uint64) << 32) | data[..., 1].astype(jnp.uint64)


def _data(word: jax.Array) -> jax.Array:
    """Key data ``[high, low]`` (uint32) of uint64 words."""
    return jnp.stack(
        [(word >> 32).astype(jnp.uint32), word.astype(jnp.uint32)], axis=-1
    )


# Each function below runs with 64-bit types enabled, whatever the caller's setting:
# its inputs and outputs are uint32 (or the requested width), so a float32 program
# (x64 off) sees only types it knows.


def _seed(seed: jax.Array) -> jax.Array:
    """The key of an integer seed: ``mix(s + G)``, with ``s`` the seed's 64-bit word.

    A 32-bit seed (what ``jax.random.key`` passes when x64 is off) is read as
    unsigned, so the seeds 0 .. 2**32 - 1 give the same keys whatever the setting.
    """
    seed = jnp.asarray(seed)
    with jax.enable_x64(True):
        if seed.dtype.itemsize == 8:
            word = jax.lax.bitcast_convert_type(seed, jnp.uint64)
        else:
            as_int32 = seed.astype(jnp.int32)
            word = jax.lax.bitcast_convert_type(as_int32, jnp.uint32)
            word = word.astype(jnp.uint64)
        return _data(mix(word + _u64(GOLDEN)))


def _derive(data: jax.Array, tag: int, index: jax.Array) -> jax.Array:
    salt = mix(index.astype(jnp.uint64) + _u64(GOLDEN))
    return _data(mix(fmix(_word(data) ^ _u64(tag)) ^ salt))


def _fold_in(data: jax.Array, d: jax.Array) -> jax.Array:
    with jax.enable_x64(True):
        return _derive(data, 0, jnp.asarray(d).astype(jnp.uint32))


def _split(data: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    with jax.enable_x64(True):
        index = jnp.arange(math.prod(shape), dtype=jnp.uint64)
        return _derive(data, SPLIT_TAG, index).reshape(*shape, 2)


def _random_bits(data: jax.Array, bit_width: int, shape: tuple[int, ...]) -> Any:
    with jax.enable_x64(True):
        k = _word(data)
        n = jnp.arange(1, math.prod(shape) + 1, dtype=jnp.uint64)
        words = mix(k + n * gamma(k))
        if bit_width < 64:
            words = (words >> (64 - bit_width)).astype(jnp.dtype(f"uint{bit_width}"))
        return words.reshape(shape)


SPLITMIX64_IMPL = define_prng_impl(
    key_shape=(2,),
    seed=_seed,
    split=_split,
    random_bits=_random_bits,
    fold_in=_fold_in,
    name=SPLITMIX64,
    tag="sm64",
)

_IMPLS = {DEFAULT: DEFAULT, SPLITMIX64: SPLITMIX64_IMPL}


def key(seed: int, prng: str = DEFAULT) -> PRNGKey:
    """The root key of ``seed`` in the stream ``prng`` (one of :data:`STREAMS`)."""
    prng = _validate.one_of("prng", prng, STREAMS)
    return jax.random.key(seed, impl=_IMPLS[prng])


def stream_of(key: PRNGKey) -> str:
    """The name of the stream of a key: ``"splitmix64"`` or JAX's name of its impl."""
    impl = jax.random.key_impl(key)
    return SPLITMIX64 if impl == SPLITMIX64_IMPL else str(impl)
