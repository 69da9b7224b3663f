r"""The Laplace mechanism in float64: the textbook sampler and Mironov's snapping.

Both draw their uniforms as NumPy does, :math:`U = k\,2^{-53}` for a uniform
53-bit integer :math:`k`, and exist only in float64: a float32 run (``dtype =
"float32"``) is refused with a one-line error, since a float32 sampler would be a
different mechanism with different rounding.

* ``laplace-float``: :math:`x + \mathrm{Lap}(1/\varepsilon)` drawn the textbook
  way, exactly as NumPy's ``random_laplace`` (``numpy.random.laplace``, which
  DP-Sniper's ``LaplaceMechanism`` calls): :math:`U = k 2^{-53}` with
  :math:`k = 0` rejected (here: replaced by a second 53-bit integer), then
  :math:`x - b \ln(2 - U - U)` for :math:`U \ge 1/2` and :math:`x + b \ln(U + U)`
  otherwise, :math:`b = 1/\varepsilon`. It claims :math:`\varepsilon`-DP and is not:
  the set of floats that :math:`x + \eta` can take depends on :math:`x`, so some
  outputs of one input are impossible under the other (Mironov, *On Significance
  of the Least Significant Bits for Differential Privacy*, CCS 2012): the true loss
  is infinite. :func:`laplace_float_exact_epsilon` proves it for a pair by a
  witness, an output of one input that the other cannot produce.
* ``snapping``: Mironov's snapping mechanism as DP-Sniper's ``LaplaceFixed``, with
  :math:`B = 100`, :math:`\lambda = (1 + B 2^{-49})/\varepsilon` and
  :math:`\Lambda` the smallest power of two :math:`\ge \lambda` (16 at
  :math:`\varepsilon = 0.1`):
  :math:`\mathrm{clamp}_B(\lfloor \mathrm{clamp}_B(x) + S \lambda \ln U
  \rceil_\Lambda)`, :math:`S` a random sign, :math:`U = 1 - k 2^{-53}` uniform in
  (0, 1], :math:`\lfloor\cdot\rceil_\Lambda` rounding to the nearest multiple of
  :math:`\Lambda` (half to even). Its outputs are the multiples of
  :math:`\Lambda` in :math:`[-B, B]` and :math:`\pm B`. Mironov's Thm 1 makes it
  :math:`(1 + B 2^{-49})/\lambda = \varepsilon`-DP for a full-precision uniform;
  with :math:`U` on the grid :math:`2^{-53}` the exact loss on ``scalar-0-1`` at
  :math:`\varepsilon = 0.1` is :math:`0.1 + 5.3 \cdot 10^{-13}`
  (:func:`snapping_exact_epsilon`), over the claim by an amount no audit resolves.

The exact references evaluate the samplers' own arithmetic (the same JAX
functions, on the CPU backend in float64): the law of ``snapping`` is a count of
the :math:`k` that give each output, found by bisection (the output is monotone in
:math:`k` for each sign), so its probabilities are exact rationals :math:`c /
2^{54}`. A GPU's ``log`` may round differently in the last bit, which moves these
counts by a few :math:`k` at most.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mcdp import _validate
from mcdp._bits import bit_order, bit_sorted
from mcdp._types import Array, PRNGKey
from mcdp.core.domains import InputDomain
from mcdp.core.mechanism import Mechanism
from mcdp.mechanisms.laplace import LaplaceParams

MANTISSA = 53  # U = k 2^-53, k uniform in [0, 2^53)
HALF = 1 << (MANTISSA - 1)  # k of U = 1/2
SNAPPING_BOUND = 100.0  # DP-Sniper's B
WITNESS_WINDOW = 4096  # k' searched around the real-arithmetic preimage
BOUNDARY_WINDOW = 64  # k checked on each side of a snapping boundary

# DP-Sniper's domain of both: floats in [-10, 10] that differ by at most 1
FLOAT_SCALARS = InputDomain(
    "every-entry", 1.0, low=-10.0, high=10.0, window=(-10.0, 10.0)
)


class SnappingParams(NamedTuple):
    scale: Array | float  # lambda = (1 + B 2^-49) / eps
    grid: Array | float  # Lambda: the smallest power of two >= lambda
    bound: Array | float  # B: inputs and outputs are clamped to [-B, B]


def _power_of_two_at_least(value: float) -> float:
    mantissa, exponent = math.frexp(value)  # value = mantissa 2^exponent, in [1/2, 1)
    return value if mantissa == 0.5 else math.ldexp(1.0, exponent)


def snapping_params(epsilon: float, bound: float = SNAPPING_BOUND) -> SnappingParams:
    r"""Mironov's calibration as DP-Sniper's ``LaplaceFixed``: :math:`\lambda = (1 +
    B 2^{-49})/\varepsilon`, :math:`\Lambda` the smallest power of two
    :math:`\ge \lambda`; Thm 1 needs :math:`\lambda < B < 2^{46} \lambda`."""
    epsilon = _validate.positive("epsilon", epsilon)
    bound = _validate.positive("bound", bound)
    scale = (1.0 + bound * 2.0**-49) / epsilon
    if not scale < bound < 2.0**46 * scale:
        raise ValueError(
            f"Expected lambda < B < 2^46 lambda (Mironov's Thm 1), got lambda = "
            f"{scale:g} (epsilon={epsilon:g}) and B = bound={bound:g}."
        )
    return SnappingParams(scale, _power_of_two_at_least(scale), bound)


def _require_float64(x: Array, name: str) -> None:
    if x.dtype != jnp.float64:
        raise ValueError(
            f"Expected dtype='float64' for mechanism {name!r}: it draws float64 "
            f"uniforms k/2^53 as NumPy does; got dtype={str(x.dtype)!r}."
        )


def uniform_integers(key: PRNGKey, shape: tuple[int, ...]) -> tuple[Array, Array]:
    """``(k, low)``: the top 53 bits of a uniform 64-bit word, as NumPy's
    ``next_double`` takes them, and the word's lowest bit (independent of them)."""
    bits = jax.random.bits(key, shape, jnp.uint64)
    return bits >> jnp.uint64(64 - MANTISSA), bits & jnp.uint64(1)


def _unit(k: Array, dtype) -> Array:
    return k.astype(dtype) * jnp.asarray(2.0**-MANTISSA, dtype)


def _rounded(product: Array) -> Array:
    """``product``, rounded before it is added to anything: XLA contracts ``a * b +
    c`` into one fused multiply-add (one rounding), NumPy rounds the product and
    then the sum. A select that LLVM cannot fold (it passes NaN through) sits
    between the two and keeps them apart."""
    return jnp.where(product == product, product, jnp.zeros_like(product))


# --- the textbook float Laplace ---------------------------------------------------


def textbook_laplace(loc: Array, k: Array, scale) -> Array:
    r"""NumPy's ``random_laplace(loc, scale)`` given :math:`U = k 2^{-53}`, with its
    operations in its order and roundings: :math:`x - b\ln(2 - U - U)` for
    :math:`U \ge 1/2`, :math:`x + b\ln(U + U)` otherwise. Only ``log`` may round
    differently from the C library's in the last bit (XLA's own: 0.3 % of the
    values on a CPU)."""
    u = _unit(k, loc.dtype)
    scale = jnp.asarray(scale, loc.dtype)
    upper = loc - _rounded(scale * jnp.log(2.0 - u - u))
    lower = loc + _rounded(scale * jnp.log(u + u))
    return jnp.where(u >= 0.5, upper, lower)


def textbook_integers(key: PRNGKey, shape: tuple[int, ...]) -> Array:
    """NumPy's ``k`` of ``next_double`` with its rejection of 0: the first of two
    53-bit integers from one call of the generator, the second where the first is
    0 (both 0: probability :math:`2^{-106}`). One call: two ``fold_in`` keys with
    64-bit draws took XLA minutes to compile under the engine's ``vmap``."""
    words = jax.random.bits(key, (2,) + tuple(shape), jnp.uint64)
    k = words >> jnp.uint64(64 - MANTISSA)
    return jnp.where(k[0] == 0, k[1], k[0])


def laplace_float_sample(key: PRNGKey, x: Array, params: LaplaceParams) -> Array:
    r""":math:`x + \mathrm{Lap}(b)` per entry as NumPy draws it in float64
    (:func:`textbook_laplace` of :func:`textbook_integers`).

    True loss on ``scalar-0-1`` and ``scalar-1-2`` (and every pair with
    :math:`x \ne x'` that was checked): infinite.
    """
    _require_float64(x, "laplace-float")
    return textbook_laplace(x, textbook_integers(key, x.shape), params.scale)


def _on_cpu(fn, *args) -> np.ndarray:
    """``fn(*args)`` in float64 on the CPU backend, as NumPy."""
    with jax.enable_x64(True), jax.default_device(jax.devices("cpu")[0]):
        return np.asarray(fn(*(jnp.asarray(a) for a in args)))


_textbook_jit = jax.jit(textbook_laplace)


def _preimage(target: np.ndarray, scale: float) -> np.ndarray:
    r"""The real :math:`k` whose textbook noise is ``target``:
    :math:`2^{52} e^{t/b}` for :math:`t < 0`, :math:`2^{53} - 2^{52} e^{-t/b}`
    otherwise."""
    with np.errstate(over="ignore"):
        below = HALF * np.exp(np.minimum(target, 0.0) / scale)
        above = 2.0 * HALF - HALF * np.exp(-np.maximum(target, 0.0) / scale)
    return np.where(target < 0, below, above)


def _witness(loc: float, other: float, scale: float) -> bool:
    r"""Whether an output of ``loc`` is out of reach of ``other``.

    Candidates: the outputs of ``loc`` at :math:`k` near :math:`2^{52}` (noise near
    0, the finest floats) and at 64 spread :math:`k`. Each is sought among the
    outputs of ``other`` at the :math:`k'` within :data:`WITNESS_WINDOW` of the
    real-arithmetic preimage; outside that window the real noise differs from the
    needed one by more than :math:`4096\,b\,2^{-53}`, far beyond the few ulps by
    which the computed noise and the sum can round.
    """
    top = 2 * HALF - 1
    near = HALF + np.arange(-64, 64, dtype=np.int64)
    spread = (np.linspace(0.01, 0.99, 64) * 2 * HALF).astype(np.int64)
    ks = np.concatenate([near, spread])
    outputs = _on_cpu(
        _textbook_jit, np.full(ks.shape, loc), ks.astype(np.uint64), scale
    )
    centre = np.rint(_preimage(outputs - other, scale)).astype(np.int64)
    window = centre[:, None] + np.arange(-WITNESS_WINDOW, WITNESS_WINDOW + 1)
    window = np.clip(window, 1, top)
    reached = _on_cpu(
        _textbook_jit, np.full(window.shape, other), window.astype(np.uint64), scale
    )
    return bool(np.any(~np.any(reached == outputs[:, None], axis=1)))


def laplace_float_exact_epsilon(params: LaplaceParams, tx: np.ndarray):
    """``inf`` where some entry has an output under one input that the other cannot
    produce (:func:`_witness`, both orders), ``0.0`` for equal inputs, ``None``
    where no witness was found (not a proof of finiteness)."""
    tx = np.asarray(tx, dtype=np.float64)
    differ = np.flatnonzero(tx[0] != tx[1])
    if differ.size == 0:
        return 0.0
    scale = float(params.scale)
    for j in differ:
        a, b = float(tx[0, j]), float(tx[1, j])
        if _witness(a, b, scale) or _witness(b, a, scale):
            return math.inf
    return None


# --- snapping ---------------------------------------------------------------------


def snap(loc: Array, k: Array, negative: Array, params: SnappingParams) -> Array:
    r"""The snapping mechanism given :math:`k` (:math:`U = 1 - k 2^{-53}`) and the
    sign (:math:`S = -1` where ``negative``), for a clamped input ``loc``, with
    DP-Sniper's operations in its order."""
    dtype = loc.dtype
    scale, grid, bound = (jnp.asarray(v, dtype) for v in params)
    u = 1.0 - _unit(k, dtype)
    sign = jnp.where(negative, jnp.asarray(-1.0, dtype), jnp.asarray(1.0, dtype))
    noisy = loc + _rounded(sign * scale * jnp.log(u))
    snapped = jnp.round(noisy / grid) * grid
    return jnp.clip(snapped, -bound, bound)


def clamp(x, params: SnappingParams):
    """Inputs clamped to :math:`[-B, B]` (NumPy or JAX arrays): the ``transform``."""
    return x.clip(-params.bound, params.bound)


def snapping_sample(key: PRNGKey, x: Array, params: SnappingParams) -> Array:
    r"""One output per entry, on the grid :math:`\Lambda` or at :math:`\pm B`; the
    sign is the lowest bit of the 64-bit word whose top 53 bits give :math:`U`.

    True loss on ``scalar-0-1`` at ε = 0.1: :math:`0.1 + 5.3 \cdot 10^{-13}`;
    on ``scalar-1-2`` the same up to :math:`10^{-12}`.
    """
    _require_float64(x, "snapping")
    k, low = uniform_integers(key, x.shape)
    bound = jnp.asarray(params.bound, x.dtype)
    return snap(jnp.clip(x, -bound, bound), k, low == 1, params)


_snap_jit = jax.jit(snap)


def snapping_levels(params: SnappingParams) -> np.ndarray:
    """Every output, bit pattern by bit pattern (:func:`mcdp._bits.bit_sorted`):
    the multiples of the grid in :math:`[-B, B]` and :math:`\\pm B`, with 0 as
    -0.0 and 0.0, two outputs (a noisy value in :math:`(-\\Lambda/2, 0)` rounds to
    -0.0)."""
    bound, grid = float(params.bound), float(params.grid)
    top = math.floor(bound / grid)
    multiples = np.arange(-top, top + 1) * grid
    return bit_sorted(np.concatenate([multiples, [-0.0, -bound, bound]]))


def _level_counts(loc: float, negative: bool, params) -> np.ndarray | None:
    """How many :math:`k \\in [0, 2^{53})` give each level for one sign, by
    bisection of the non-decreasing map (``k`` reversed for :math:`S = +1`), the
    outputs compared by their bits (-0.0 below 0.0: :func:`mcdp._bits.bit_order`);
    each boundary is checked on :data:`BOUNDARY_WINDOW` k on both sides (``None``
    if the outputs there are not monotone)."""
    levels = bit_order(np, snapping_levels(params))
    size = 2 * HALF

    def output(ks: np.ndarray) -> np.ndarray:
        ks = ks if negative else size - 1 - ks  # S = +1: decreasing in k
        return bit_order(np, _on_cpu(
            _snap_jit, np.full(ks.shape, loc), ks.astype(np.uint64),
            np.full(ks.shape, negative), params,
        ))  # fmt: skip

    lo = np.zeros(levels.size, dtype=np.int64)  # first k with output >= level
    hi = np.full(levels.size, size, dtype=np.int64)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        reaches = output(np.minimum(mid, size - 1)) >= levels
        active = lo < hi
        hi = np.where(active & reaches, mid, hi)
        lo = np.where(active & ~reaches, mid + 1, lo)
    offsets = np.arange(-BOUNDARY_WINDOW, BOUNDARY_WINDOW)
    for first, level in zip(lo, levels, strict=True):
        window = np.clip(first + offsets, 0, size - 1)
        values = output(window)
        if np.any(np.diff(values) < 0) or np.any(
            (values >= level) != (window >= first)
        ):
            return None
    return np.diff(np.append(lo, size))


def snapping_log_probs(loc: float, params: SnappingParams) -> np.ndarray | None:
    r"""How many of the :math:`2^{54}` equally likely (sign, k) give each output of
    :func:`snapping_levels`, for the clamped input ``loc`` (int64; the log
    probabilities are :math:`\ln(c / 2^{54})`); ``None`` where a boundary check
    fails."""
    counts = [_level_counts(loc, negative, params) for negative in (False, True)]
    if counts[0] is None or counts[1] is None:
        return None
    return counts[0] + counts[1]


def snapping_exact_epsilon(params: SnappingParams, tx: np.ndarray):
    """The exact loss on the clamped pair ``tx``: entries are independent, so the
    largest log ratio of each entry's counts adds up over the entries; ``None``
    where a boundary check fails."""
    tx = np.asarray(tx, dtype=np.float64)
    host = SnappingParams(*(float(v) for v in params))
    hi = lo = 0.0
    for a, b in zip(tx[0], tx[1], strict=True):
        if a == b:
            continue
        counts = snapping_log_probs(a, host), snapping_log_probs(b, host)
        if counts[0] is None or counts[1] is None:
            return None
        ratios = [
            math.inf if c2 == 0 else -math.inf if c == 0 else math.log(c / c2)
            for c, c2 in zip(*(np.asarray(c).tolist() for c in counts), strict=True)
            if c or c2
        ]
        hi, lo = hi + max(ratios), lo + min(ratios)
    return float(max(hi, -lo, 0.0))


LAPLACE_FLOAT = Mechanism(
    name="laplace-float",
    sample=laplace_float_sample,
    claim="epsilon-DP",
    flaw="float64 rounding: the outputs of x and x' lie on different sets of floats "
    "(Mironov 2012), so some outputs of one are impossible under the other",
    calibrate=lambda epsilon, delta, dim, clip: LaplaceParams(scale=1.0 / epsilon),
    exact_epsilon=laplace_float_exact_epsilon,
    domain=FLOAT_SCALARS,
)

SNAPPING = Mechanism(
    name="snapping",
    sample=snapping_sample,
    claim="epsilon-DP",
    calibrate=lambda epsilon, delta, dim, clip: snapping_params(epsilon),
    transform=clamp,
    exact_epsilon=snapping_exact_epsilon,
    domain=FLOAT_SCALARS,
)
