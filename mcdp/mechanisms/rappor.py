r"""RAPPOR, as DP-Sniper runs it: a Bloom filter and randomised response.

Erlingsson, Pihur and Korolova, *RAPPOR: Randomized Aggregatable
Privacy-Preserving Ordinal Response*, CCS 2014, steps 1–3, with the parameters of
DP-Sniper's ``dpsniper/mechanisms/rappor.py`` (Bichsel et al., S&P 2021):

1. **Bloom filter.** The value :math:`v` (an integer) sets :data:`HASHES` = 4 of
   :data:`FILTER_BITS` = 20 bits: bit :math:`h_s(v) \bmod 20` for the seeds
   :math:`s = 0, \dots, 3`, where :math:`h_s` is MurmurHash3 (x86, 32-bit) of the
   decimal string of :math:`v` (``str(v)``, UTF-8) read as a *signed* 32-bit integer
   and reduced by Python's ``%``, as ``mmh3.hash(str(v), seed=s) % 20`` does. So
   :math:`v = 0` sets bits {0, 11, 18} and :math:`v = 1` bits {3, 10, 13} (hashes
   may collide: a value sets 3 or 4 bits).
2. **Permanent randomised response**, drawn afresh for every output (DP-Sniper
   audits one report): each bit is set to 1 with probability :math:`f/2`, to 0 with
   probability :math:`f/2`, and kept with probability :math:`1 - f`.
3. **Instantaneous randomised response**: each bit is reported as 1 with
   probability :math:`q` if it is 1 and :math:`p` if it is 0.

``rappor`` runs steps 1–3 with :math:`f = 0.75`, :math:`p = 0.45`,
:math:`q = 0.55`; ``one-time-rappor`` steps 1–2 with :math:`f = 0.95`. Each bit of
the report is then an independent coin whose probability of 1 depends only on its
Bloom bit :math:`B_i`: :math:`q^* = \tfrac12 f (p + q) + (1 - f) q = 0.5125` if
:math:`B_i = 1`, :math:`p^* = 0.4875` if :math:`B_i = 0` (``rappor``);
:math:`1 - f/2 = 0.525` and :math:`f/2 = 0.475` (``one-time-rappor``). The exact
loss of a pair is therefore a sum over the bits in which the two Bloom filters
differ, :math:`\ln(0.5125/0.4875) = 0.050010` each for ``rappor`` (6 bits for
(1) vs (0): 0.30006; at most 8 = 2h bits, 0.40008, Erlingsson et al.'s
:math:`\varepsilon_1`) and :math:`\ln(0.525/0.475) = 0.10008` each for
``one-time-rappor`` (0.60050 for (1) vs (0); at most 0.80067, their
:math:`\varepsilon_\infty`).

The Bloom filter is the mechanism's deterministic part: its ``transform`` computes
it on the host (pure Python MurmurHash3, :func:`murmur3_32`), the sampler in JAX
(the same hash in ``uint32`` arithmetic, :func:`bloom_filter`), and the exact
references read it from the transformed pair. Inputs are the integers in
:math:`[-10, 10]` (DP-Sniper's domain), any two of them neighbours (local DP); the
sampler rounds an input to the nearest integer (half to even) and clips it to
:math:`|v| \le 2^{31} - 1`. Outputs are the 20 reported bits of every input
entry, as floats 0/1, shape ``(n, 20 d)``.

The coins compare float32 uniforms :math:`k 2^{-23}` with the probabilities, so
every realised probability is :math:`\lceil c\, 2^{23} \rceil 2^{-23}` for
:math:`c` the float32 value of :math:`f/2`, :math:`f`, :math:`p` or :math:`q`
(:func:`realised`), in float32 and float64 runs alike (0.55 becomes
0.55000007); the exact references use the realised values, which move the losses
by less than 1e-6 of themselves (0.6005002 instead of 0.6005008). A float32 run
represents the integers exactly up to :math:`2^{24}` only.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mcdp._types import Array, PRNGKey
from mcdp.core.domains import InputDomain
from mcdp.core.mechanism import Mechanism
from mcdp.mechanisms._numerics import epsilon_of

FILTER_BITS = 20  # m: the Bloom filter's bits (shape-setting: fixed)
HASHES = 4  # h: hash functions, MurmurHash3 with seeds 0, ..., h - 1
MAX_MAGNITUDE = 2**31 - 1  # inputs are clipped to [-MAX_MAGNITUDE, MAX_MAGNITUDE]
UNIFORM_BITS = 23  # float32 uniforms are k 2^-23
PERMANENT_KEY, INSTANTANEOUS_KEY = 0, 1  # fold_in tags of the two coins

# integers in [-10, 10], any two neighbours (local DP): every entry may move by 20
RAPPOR_VALUES = InputDomain(
    "every-entry", 20.0, low=-10.0, high=10.0, integer=True, window=(-10.0, 10.0)
)


class RapporParams(NamedTuple):
    f: Array | float  # permanent randomised response: P[randomise a bit]
    p: Array | float  # P[report 1 | permanent bit 0]
    q: Array | float  # P[report 1 | permanent bit 1]


class OneTimeRapporParams(NamedTuple):
    f: Array | float  # permanent randomised response only: its bits are reported


def rappor_params(f: float = 0.75, p: float = 0.45, q: float = 0.55) -> RapporParams:
    """DP-Sniper's ``Rappor`` defaults."""
    return RapporParams(f=f, p=p, q=q)


def one_time_rappor_params(f: float = 0.95) -> OneTimeRapporParams:
    """DP-Sniper's ``OneTimeRappor`` default."""
    return OneTimeRapporParams(f=f)


# --- MurmurHash3 x86_32: the host reference -----------------------------------------

_C1, _C2 = 0xCC9E2D51, 0x1B873593
_F1, _F2 = 0x85EBCA6B, 0xC2B2AE35
_ROUND_ADD = 0xE6546B64
_MASK = 0xFFFFFFFF


def _rotl_int(value: int, r: int) -> int:
    return ((value << r) | (value >> (32 - r))) & _MASK


def _mix_int(k: int) -> int:
    k = (k * _C1) & _MASK
    return (_rotl_int(k, 15) * _C2) & _MASK


def murmur3_32(data: bytes, seed: int) -> int:
    """MurmurHash3_x86_32 of ``data`` (Appleby's reference), unsigned."""
    h = seed & _MASK
    blocks = len(data) // 4
    for i in range(blocks):
        h ^= _mix_int(int.from_bytes(data[4 * i : 4 * i + 4], "little"))
        h = (_rotl_int(h, 13) * 5 + _ROUND_ADD) & _MASK
    tail = data[4 * blocks :]
    if tail:
        h ^= _mix_int(int.from_bytes(tail, "little"))
    h ^= len(data)
    h ^= h >> 16
    h = (h * _F1) & _MASK
    h ^= h >> 13
    h = (h * _F2) & _MASK
    return h ^ (h >> 16)


def bloom_bits(v: int) -> frozenset[int]:
    """The bits that the integer ``v`` sets: ``mmh3.hash(str(v), seed=s) % 20``
    for s = 0, ..., 3 (the hash read as signed, Python's ``%``)."""
    data = str(int(v)).encode()
    bits = set()
    for seed in range(HASHES):
        h = murmur3_32(data, seed)
        signed = h - (1 << 32) if h >= 1 << 31 else h
        bits.add(signed % FILTER_BITS)
    return frozenset(bits)


def _as_integers(x):
    """Inputs rounded to the nearest integer (half to even), clipped."""
    xp = jnp if isinstance(x, jax.Array) else np
    return xp.clip(xp.round(x), -MAX_MAGNITUDE, MAX_MAGNITUDE)


def bloom_filter_host(xs: np.ndarray, params=None) -> np.ndarray:
    """The Bloom filters of the rows of ``xs`` (shape ``(n, d)``) on the host: shape
    ``(n, 20 d)``, float64 0/1, the 20 bits of entry j at columns ``20 j ...``. The
    mechanisms' ``transform``."""
    del params
    values = _as_integers(np.asarray(xs, dtype=np.float64))
    out = np.zeros(values.shape + (FILTER_BITS,))
    for index in np.ndindex(values.shape):
        out[index + (sorted(bloom_bits(int(values[index]))),)] = 1.0
    return out.reshape(values.shape[:-1] + (-1,))


# --- the same hash in JAX uint32 arithmetic ---------------------------------------

_DIGITS = 10  # of |v| <= 2^31 - 1
_BYTES = 12  # the sign and ten digits, padded to three 4-byte blocks
_POWERS = tuple(10**i for i in range(_DIGITS))


def _u32(value: int) -> Array:
    return jnp.asarray(value, jnp.uint32)


def _rotl(h: Array, r: int) -> Array:
    return (h << _u32(r)) | (h >> _u32(32 - r))


def _mix(k: Array) -> Array:
    return _rotl(k * _u32(_C1), 15) * _u32(_C2)


def _lead(values, ndim: int) -> Array:
    """``values`` with ``ndim`` leading axes of length 1 (explicit broadcasting)."""
    values = jnp.asarray(values)
    return values.reshape((1,) * ndim + values.shape)


def _decimal_bytes(v: Array) -> tuple[Array, Array]:
    """``(blocks, length)``: ``str(v)`` as little-endian uint32 blocks, shape
    ``v.shape + (3,)``, zero-padded, and its length in bytes."""
    rank = v.ndim
    negative = v < 0
    magnitude = jnp.abs(v).astype(jnp.uint32)[..., None]
    powers = jnp.asarray(_POWERS, jnp.uint32)
    digits = 1 + jnp.sum(magnitude >= _lead(powers[1:], rank), axis=-1, dtype=jnp.int32)
    length = digits + negative.astype(jnp.int32)
    position = length[..., None] - 1 - _lead(jnp.arange(_BYTES, dtype=jnp.int32), rank)
    power = powers[jnp.clip(position, 0, _DIGITS - 1)]
    digit = (magnitude // power) % _u32(10)
    is_digit = (position >= 0) & (position < digits[..., None])
    sign = negative[..., None] & _lead(jnp.arange(_BYTES) == 0, rank)
    byte = jnp.where(
        is_digit,
        digit + _u32(ord("0")),
        jnp.where(sign, _u32(ord("-")), _u32(0)),
    )
    quads = byte.reshape(v.shape + (_BYTES // 4, 4))
    shifts = _lead(jnp.asarray([0, 8, 16, 24], jnp.uint32), rank + 1)
    blocks = jnp.bitwise_or.reduce(quads << shifts, axis=-1)
    return blocks, length


def murmur3_decimal(v: Array, seed: int) -> Array:
    """MurmurHash3_x86_32 of the decimal string of every int32 of ``v`` (|v| <
    2^31), unsigned, in uint32 arithmetic; equals :func:`murmur3_32` of
    ``str(v).encode()``."""
    blocks, length = _decimal_bytes(v)
    full = length // 4  # whole blocks; the tail (zero-padded) is block ``full``
    h = jnp.full(v.shape, seed, jnp.uint32)
    for i in range(_BYTES // 4):
        mixed = _rotl(h ^ _mix(blocks[..., i]), 13) * _u32(5) + _u32(_ROUND_ADD)
        h = jnp.where(i < full, mixed, h)
    tail = jnp.take_along_axis(
        blocks, jnp.minimum(full, _BYTES // 4 - 1)[..., None], axis=-1
    )[..., 0]
    tail = jnp.where(full < _BYTES // 4, tail, _u32(0))
    h = h ^ _mix(tail)  # an empty tail mixes to 0: no change
    h = h ^ length.astype(jnp.uint32)
    h = (h ^ (h >> _u32(16))) * _u32(_F1)
    h = (h ^ (h >> _u32(13))) * _u32(_F2)
    return h ^ (h >> _u32(16))


def bloom_filter(x: Array) -> Array:
    """The Bloom filter of every entry of ``x`` (shape ``(n, d)``), bool, shape
    ``(n, 20 d)``: :func:`bloom_filter_host` in JAX."""
    v = _as_integers(x).astype(jnp.int32)
    # the hash read as a signed 32-bit integer, reduced by a floor modulo
    wrap = (1 << 32) % FILTER_BITS
    columns = _lead(jnp.arange(FILTER_BITS, dtype=jnp.uint32), v.ndim)
    bits = jnp.zeros(v.shape + (FILTER_BITS,), bool)
    for seed in range(HASHES):
        h = murmur3_decimal(v, seed)
        r = h % _u32(FILTER_BITS)
        r = jnp.where(
            h >= _u32(1 << 31), (r + _u32(FILTER_BITS - wrap)) % _u32(FILTER_BITS), r
        )
        bits = bits | (r[..., None] == columns)
    return bits.reshape(v.shape[:-1] + (-1,))


# --- the coins ------------------------------------------------------------------


def realised(probability, xp=np):
    r"""The probability :math:`\lceil c\,2^{23} \rceil 2^{-23}` of ``u < c`` for a
    float32 uniform ``u``, :math:`c` the float32 value of ``probability``
    (computed in float32 with NumPy, or in the array's dtype with ``xp=jnp``)."""
    scale = 2.0**UNIFORM_BITS
    if xp is np:
        c = np.float64(np.float32(probability))
        return float(np.ceil(c * scale) / scale)
    c = jnp.asarray(probability, jnp.float32)
    return jnp.ceil(c * scale) / scale


def _permanent(key: PRNGKey, bloom: Array, f) -> Array:
    u = jax.random.uniform(key, bloom.shape, jnp.float32)
    f = jnp.asarray(f, jnp.float32)
    return jnp.where(u < f / 2, True, jnp.where(u < f, False, bloom))


def rappor_sample(key: PRNGKey, x: Array, params: RapporParams) -> Array:
    r"""One RAPPOR report (steps 1–3) per row: 20 bits per input entry, shape
    ``(n, 20 d)``.

    True loss at f = 0.75, p = 0.45, q = 0.55: 0.30006 on ``scalar-0-1`` (6
    differing bits), 0.25005 on ``scalar-1-2`` (5); 0.40008 on the worst pairs of
    [-10, 10] (8, e.g. 6 and 10).
    """
    bloom = bloom_filter(x)
    permanent = _permanent(jax.random.fold_in(key, PERMANENT_KEY), bloom, params.f)
    u = jax.random.uniform(
        jax.random.fold_in(key, INSTANTANEOUS_KEY), bloom.shape, jnp.float32
    )
    p = jnp.asarray(params.p, jnp.float32)
    q = jnp.asarray(params.q, jnp.float32)
    return (u < jnp.where(permanent, q, p)).astype(x.dtype)


def one_time_rappor_sample(key: PRNGKey, x: Array, params: OneTimeRapporParams):
    r"""One permanent RAPPOR report (steps 1–2) per row, shape ``(n, 20 d)``.

    True loss at f = 0.95: 0.60050 on ``scalar-0-1`` (6 differing bits), 0.50042
    on ``scalar-1-2`` (5); 0.80067 on the worst pairs of [-10, 10] (8).
    """
    bloom = bloom_filter(x)
    key_permanent = jax.random.fold_in(key, PERMANENT_KEY)
    return _permanent(key_permanent, bloom, params.f).astype(x.dtype)


def report_probabilities(params, dtype=None):
    r"""``(P[report 1 | Bloom bit 1], P[report 1 | Bloom bit 0])`` with the
    realised coins: :math:`(q^*, p^*)` for ``rappor``, :math:`(1 - f/2, f/2)` for
    ``one-time-rappor``. Python floats on the host; JAX scalars of ``dtype``
    (traceable ``params``) where ``dtype`` is given."""
    if dtype is None:
        f = np.float32(params.f)
        half, randomise = realised(f / np.float32(2)), realised(f)
    else:
        f = jnp.asarray(params.f, jnp.float32)
        half = realised(f / 2, jnp).astype(dtype)
        randomise = realised(f, jnp).astype(dtype)
    keep = 1 - randomise
    if isinstance(params, OneTimeRapporParams):
        return half + keep, half
    if dtype is None:
        p, q = realised(params.p), realised(params.q)
    else:
        p, q = (realised(v, jnp).astype(dtype) for v in (params.p, params.q))
    set_one, set_zero = half + keep, randomise - half  # P[permanent 1 | B = 1]
    return set_one * q + set_zero * p, half * q + (1 - half) * p


def _bit_log_ratios(pi: np.ndarray, pi_prime: np.ndarray) -> np.ndarray:
    """Per bit, ``ln P[y_i | x] - ln P[y_i | x']`` for y_i = 1 and 0, shape
    ``(2, bits)``: ``inf`` where only x reaches y_i, ``nan`` where neither does."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ones = np.log(pi) - np.log(pi_prime)
        zeros = np.log1p(-pi) - np.log1p(-pi_prime)
    return np.stack([ones, zeros])


def rappor_exact_epsilon(params, tx: np.ndarray) -> float:
    r"""The exact loss of a pair given its Bloom filters ``tx`` (shape ``(2, 20
    d)``): the report's bits are independent, so the extremes of the log ratio add
    over the bits, :math:`\sum_i \max_{y_i} |\ln P[y_i \mid x] / P[y_i \mid
    x']|` in the worse direction."""
    one, zero = report_probabilities(params)
    tx = np.asarray(tx, dtype=np.float64)
    pi, pi_prime = (np.where(row > 0.5, one, zero) for row in tx)
    ratios = _bit_log_ratios(pi, pi_prime)
    reachable = ~np.isnan(ratios)
    hi = float(np.sum(np.max(np.where(reachable, ratios, -np.inf), axis=0)))
    lo = float(np.sum(np.min(np.where(reachable, ratios, np.inf), axis=0)))
    return epsilon_of(lo, hi)


def rappor_privacy_loss(y, tx, tx_prime, params):
    r""":math:`\ln p(y \mid x) - \ln p(y \mid x')` of reports ``y`` (0/1 floats) given
    the Bloom filters ``tx``, ``tx_prime``: a sum of independent bits."""
    one, zero = report_probabilities(params, y.dtype)
    pi = jnp.where(jnp.broadcast_to(tx, y.shape) > 0.5, one, zero)
    pi_prime = jnp.where(jnp.broadcast_to(tx_prime, y.shape) > 0.5, one, zero)
    log_one = jnp.log(pi) - jnp.log(pi_prime)
    log_zero = jnp.log1p(-pi) - jnp.log1p(-pi_prime)
    return jnp.sum(jnp.where(y > 0.5, log_one, log_zero), axis=-1)


def rappor_epsilon_bound(params, bits: int = 2 * HASHES) -> float:
    r"""The loss of a pair whose Bloom filters differ in ``bits`` bits (at most
    :math:`2h = 8`: Erlingsson et al.'s :math:`\varepsilon_1` for ``rappor``,
    :math:`\varepsilon_\infty` for ``one-time-rappor``), with the realised coins."""
    one, zero = report_probabilities(params)
    per_bit = max(abs(math.log(one / zero)), abs(math.log1p(-one) - math.log1p(-zero)))
    return bits * per_bit


def _record(name: str, sample, params) -> Mechanism:
    return Mechanism(
        name=name,
        sample=sample,
        claim=None,  # DP-Sniper audits it without a claimed epsilon
        calibrate=lambda epsilon, delta, dim, clip: params(),
        transform=bloom_filter_host,
        privacy_loss=rappor_privacy_loss,
        exact_epsilon=rappor_exact_epsilon,
        domain=RAPPOR_VALUES,
    )


RAPPOR = _record("rappor", rappor_sample, rappor_params)
ONE_TIME_RAPPOR = _record(
    "one-time-rappor", one_time_rappor_sample, one_time_rappor_params
)
