r"""EMNLP 2021, Figure 1: pairs that violate ADePT's sensitivity bound.

Draw pairs :math:`r, r' \in \mathbb{R}^n` with iid coordinates, :math:`U(-C, C)`
(``uniform``) or :math:`N(0, s^2)` (``normal``), clip each,

.. math::
    f(r) = r \min\bigl(1, C / \lVert r \rVert_p\bigr), \qquad
    p = 2 \text{ (ADePT, ``l2``)} \text{ or } p = 1 \text{ (the control, ``l1``)},

and count the pairs with :math:`\lVert f(r) - f(r') \rVert_1 > 2C`, ADePT's claimed
sensitivity. L2 clipping has true sensitivity :math:`2C\sqrt n` (EMNLP 2021, Thm
5.1), so violations appear for every :math:`n > 1`; L1 clipping has sensitivity
exactly :math:`2C`, so the control has none.

**Units of C.** :math:`f(Cx) = C f_1(x)` with :math:`f_1` the clipping to radius 1,
so a pair violates iff :math:`\lVert f_1(x) - f_1(x') \rVert_1 > 2` with
:math:`x = r / C`: coordinates :math:`U(-1, 1)`, or :math:`N(0, (s/C)^2)`. The
device works at radius 1 (no overflow whatever ``C``); the uniform counts do not
depend on ``C`` at all. With ``normal_reading="std"`` (the reference code)
:math:`s = \text{normal\_scale} \cdot C`; with ``"variance"`` (the paper's text,
:math:`\sigma^2 = 0.1 C`) :math:`s = \sqrt{\text{normal\_scale} \cdot C}`. At the
paper's ``C = 10``, ``normal_scale = 0.1`` both give :math:`s = 1`.

**Streams.** The pairs of dimension ``n`` come from
``key_n = fold_in(fold_in(key, DIST_CODES[dist]), n)``: block ``b`` draws an array
``(2, block_pairs(w), w)`` from ``fold_in(key_n, b)``, with ``w = bucket_width(n)``,
and zeroes the coordinates ``>= n`` (adding a zero to a norm or a distance is exact).
``w`` depends on ``n`` alone, so the counts of ``(key, dist, clip, n)`` do not
depend on the other dims requested, nor on the chunk or call size (pairs past
``pairs`` are masked out); ``l1`` and ``l2`` share the pairs (a paired control).

**One program per bucket.** ``n`` is traced: one compile serves every ``n`` with the
same :func:`bucket_width`, so ``n`` = 1..256 takes 13 compiles per ``(dist, clip,
dtype)`` (widths 1, 2, 4, 8, 16, 24, 32, 48, ..., 256), for 16 % more work than
exact widths. A compiled call runs a ``fori_loop`` over chunks of blocks carrying
one int32 count; the host adds the calls' counts as Python ints, so memory does not
grow with ``pairs`` and totals stay exact past :math:`2^{31}`.

**Tolerance.** A pair counts only if its computed distance exceeds
:math:`2(1 + \tau_n)`, where :math:`\tau_n` (:func:`tolerance`) bounds the
floating-point error, so every counted pair violates in exact arithmetic and the
``l1`` control counts none (see :func:`tolerance` for the derivation).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mcdp import _compilation_cache, _validate
from mcdp._types import Array, PRNGKey
from mcdp.core.records import Record, provenance
from mcdp.mechanisms._base import clip_norm
from mcdp.prng import stream_of
from mcdp.statistics import clopper_pearson

DISTS = ("uniform", "normal")
DIST_CODES = {"uniform": 0, "normal": 1}  # folded into the key; never change them
CLIPS = ("l2", "l1")
READINGS = ("std", "variance")
DTYPES = _validate.DTYPES
BLOCK_SCALARS = 1 << 18  # drawn per key; changing it changes every stream: fixed
CALL_SCALARS = 1 << 28  # drawn scalars per compiled call: one progress step
MIN_UNIT_SCALE, MAX_UNIT_SCALE = 1e-12, 1e12  # s / C: no overflow, no underflow


def bucket_width(dim: int) -> int:
    r"""The drawn (padded) width for ``dim``: the smallest of 1, 2, 4, 8, 16, 24, 32,
    48, 64, 96, ... (:math:`2^k`, and :math:`3 \cdot 2^k` from 24 on) that is
    :math:`\ge` ``dim``. Part of the stream definition: fixed.

    On CPU, widths 6 and 12 are slower per pair than 8 and 16 (the reduction over
    the short last axis vectorises badly), so the 3/4 steps start at 24; from there
    padding costs at most a third more work (a quarter on average).
    """
    power = 1 << (int(dim) - 1).bit_length()
    return 3 * power // 4 if power >= 32 and dim <= 3 * power // 4 else power


def block_pairs(width: int) -> int:
    """Pairs per block (per key) at drawn width ``width``: :data:`BLOCK_SCALARS`
    scalars, so a block is large enough to amortise the loop at any width."""
    return max(1, BLOCK_SCALARS // (2 * width))


def tolerance(dim: int, clip: str, dtype: str) -> float:
    r"""Relative error bound :math:`\tau_n` on the computed clipped L1 distance.

    Model: every operation (``+ - * / sqrt``) has relative error at most
    :math:`e` = ``finfo(dtype).eps``, twice the unit roundoff, so that a division
    or square root off by one ulp is covered; abs, min and adding a masked zero are
    exact. With :math:`\gamma_m = m e / (1 - m e)` (Higham, *Accuracy and
    Stability*, Lemma 3.1/3.3; a sum of :math:`n` terms in any order errs by at most
    :math:`\gamma_{n-1} \sum |x_i|`), at radius 1:

    * the norm errs by :math:`\gamma_{n+1}` (``l2``: squares, sum, sqrt) or
      :math:`\gamma_{n-1}` (``l1``); the factor :math:`\min(1, 1/\lVert r\rVert)` by
      :math:`\gamma_{n+2}`; so :math:`\hat f_i = f_i (1 + \theta_i)`,
      :math:`|\theta_i| \le \gamma_{n+3}`;
    * :math:`\hat D = \mathrm{fl}\sum_i |\mathrm{fl}(\hat f_i - \hat f'_i)|
      \le (1 + \gamma_n)\,(D + \gamma_{n+3}(\lVert f\rVert_1 + \lVert f'\rVert_1))`
      with :math:`\lVert f \rVert_1 \le \rho`, :math:`\rho = \sqrt n` for ``l2``
      (:math:`\lVert f\rVert_1 \le \sqrt n \lVert f \rVert_2`) and 1 for ``l1``.

    Hence :math:`D \le 2 \Rightarrow \hat D \le 2(1 + \tau_n)` with

    .. math:: \tau_n = (1 + \gamma_n)(1 + \rho\,\gamma_{n+3}) - 1
              \approx (n + \rho (n + 3))\,e,

    i.e. a computed :math:`\hat D > 2(1 + \tau_n)` proves :math:`D > 2`. Pairs with
    :math:`2 < D \lesssim 2(1 + 2\tau_n)` may be missed, an undercount by that
    probability; at :math:`n = 256` (``l2``) :math:`\tau_n \approx 10^{-12}` in
    float64 and :math:`5 \cdot 10^{-4}` in float32.
    Underflow adds absolute errors below :math:`n` times the smallest normal, far
    inside the factor-2 slack; overflow cannot happen at radius 1.
    """
    e = float(np.finfo(dtype).eps)

    def gamma(m: int) -> float:
        return m * e / (1 - m * e)

    rho = math.sqrt(dim) if clip == "l2" else 1.0
    return (1 + gamma(dim)) * (1 + rho * gamma(dim + 3)) - 1


@dataclasses.dataclass(frozen=True, kw_only=True)
class ViolationResult(Record):
    """One ``(dist, dim)`` of EMNLP 2021, Figure 1: how many pairs violate :math:`2C`.

    ``fraction = violations / pairs`` with the Clopper–Pearson interval
    ``[fraction_lower, fraction_upper]`` at ``confidence``. ``pairs`` is the number
    counted so far; ``complete`` is false for the progress records of
    :func:`iter_violations` (``pairs < pairs_requested``). ``normal_std`` is the
    absolute :math:`s` (``None`` for ``uniform``; ``normal_scale`` and
    ``normal_reading`` are then recorded but unused). ``tolerance`` is
    :math:`\\tau_n` of :func:`tolerance`; ``seconds`` is the wall time of this dim,
    compile included; ``key_data`` is ``jax.random.key_data(key)`` of the root key.
    """

    dist: str
    dim: int
    pairs: int
    violations: int
    fraction: float
    fraction_lower: float
    fraction_upper: float
    clip: str
    C: float
    normal_scale: float
    normal_reading: str
    normal_std: float | None
    confidence: float
    dtype: str
    tolerance: float
    seconds: float
    complete: bool
    pairs_requested: int
    key_data: list[int]


@partial(jax.jit, static_argnames=("dist", "order", "width", "chunk_blocks"))
def _count_impl(
    key: PRNGKey,
    dim: Array,
    scale: Array,
    threshold: Array,
    first_block: Array,
    num_chunks: Array,
    full_blocks: Array,
    remainder: Array,
    *,
    dist: str,
    order: int,
    width: int,
    chunk_blocks: int,
) -> Array:
    """int32 count of computed distances > ``threshold`` in ``num_chunks`` chunks
    from ``first_block``, at radius 1 (``scale`` = s/C); pairs with global index
    ``>= full_blocks * block_pairs(width) + remainder`` are masked out."""
    shape = (2, block_pairs(width), width)
    row = jnp.arange(shape[1], dtype=jnp.uint32)
    keep = jnp.arange(width, dtype=jnp.int32).reshape(1, 1, width) < dim

    def block_count(block):
        key_b = jax.random.fold_in(key, block)
        if dist == "uniform":
            r = jax.random.uniform(key_b, shape, scale.dtype, minval=-1.0, maxval=1.0)
        else:
            r = scale * jax.random.normal(key_b, shape, scale.dtype)
        f = clip_norm(jnp.where(keep, r, 0), 1.0, order)
        hit = jnp.sum(jnp.abs(f[0] - f[1]), axis=-1) > threshold
        valid = (block < full_blocks) | ((block == full_blocks) & (row < remainder))
        return jnp.sum(hit & valid, dtype=jnp.int32)

    def chunk(c, count):
        first = first_block + c.astype(jnp.uint32) * chunk_blocks
        if chunk_blocks == 1:  # no vmap: a 3-4x faster compile
            return count + block_count(first)
        blocks = first + jnp.arange(chunk_blocks, dtype=jnp.uint32)
        return count + jnp.sum(jax.vmap(block_count)(blocks), dtype=jnp.int32)

    return jax.lax.fori_loop(0, num_chunks, chunk, jnp.int32(0))


def _check_key(key: Any) -> PRNGKey:
    if isinstance(key, jax.Array):
        if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) and key.shape == ():
            return key
        if key.dtype == jnp.uint32 and key.shape == (2,):  # legacy raw key
            return jax.random.wrap_key_data(key)  # the same stream
    raise ValueError(f"Expected key to be one PRNG key (jax.random.key), got {key!r}.")


def _check_dims(dims: Any) -> list[int]:
    if isinstance(dims, (str, bytes)) or not isinstance(dims, Sequence) or not dims:
        raise ValueError(f"Expected dims to be a non-empty sequence, got {dims!r}.")
    out = [_validate.integer("dims", n, low=1, high=_validate.MAX_DIM) for n in dims]
    if len(set(out)) != len(out):
        raise ValueError(f"Expected dims without repeats, got {list(dims)!r}.")
    return out


def _threshold(dim: int, clip: str, dtype: str) -> np.ndarray:
    """:math:`2(1 + \\tau_n)` rounded up to ``dtype``."""
    exact = 2 * (1 + tolerance(dim, clip, dtype))
    t = np.asarray(exact, dtype=dtype)
    return t if float(t) >= exact else np.nextafter(t, np.asarray(np.inf, dtype))


def iter_violations(
    key: PRNGKey,
    dist: str,
    dims: Sequence[int],
    pairs: int,
    *,
    clip: str = "l2",
    C: float = 10.0,
    normal_scale: float = 0.1,
    normal_reading: str = "std",
    confidence: float = 0.95,
    dtype: str = "float64",
    chunk_blocks: int = 1,
    call_chunks: int | None = None,
) -> Iterator[ViolationResult]:
    r"""The fraction of pairs with :math:`\lVert f(r) - f(r')\rVert_1 > 2C`
    (EMNLP 2021, Figure 1).

    Args:
      key: a PRNG key (``jax.random.key(seed)``); dim ``n`` uses
        ``fold_in(fold_in(key, DIST_CODES[dist]), n)``.
      dist: ``"uniform"`` (coordinates :math:`U(-C, C)`) or ``"normal"``
        (:math:`N(0, s^2)`).
      dims: the latent dimensions :math:`n \ge 1`, no repeats, any order.
      pairs: pairs per dim, :math:`1 \le N \le 2^{40}`.
      clip: ``"l2"`` (ADePT: :math:`r \min(1, C/\lVert r\rVert_2)`) or ``"l1"``
        (the control: :math:`r \min(1, C/\lVert r\rVert_1)`).
      C: the clipping radius, finite and > 0; the claimed sensitivity is :math:`2C`.
      normal_scale: :math:`s = \text{normal\_scale} \cdot C` (``"std"``) or
        :math:`s^2 = \text{normal\_scale} \cdot C` (``"variance"``); default 0.1.
      normal_reading: ``"std"`` (the reference code) or ``"variance"`` (the paper).
      confidence: of the Clopper–Pearson intervals, in (0, 1).
      dtype: ``"float64"`` (default) or ``"float32"``.
      chunk_blocks: blocks drawn at once (vmapped) per loop step; default 1, the
        fastest compile on CPU (more may help an accelerator). Counts do not change.
      call_chunks: chunks per compiled call, i.e. per progress step (default: about
        :data:`CALL_SCALARS` drawn scalars). Counts do not change.

    Yields:
      A :class:`ViolationResult` after every compiled call, so that a caller can
      show progress or stop early and keep what is counted; the last of each dim
      has ``complete=True``. Dims run in the order of ``dims``.

    Raises:
      ValueError: a bad argument (one line naming it), at the call, before any
        record is drawn.
    """
    _compilation_cache.enable()
    key = _check_key(key)
    dist = _validate.one_of("dist", dist, DISTS)
    dims = _check_dims(dims)
    pairs = _validate.integer("pairs", pairs, low=1, high=_validate.MAX_DRAWS)
    clip = _validate.one_of("clip", clip, CLIPS)
    C = _validate.positive("C", C)
    normal_scale = _validate.positive("normal_scale", normal_scale)
    normal_reading = _validate.one_of("normal_reading", normal_reading, READINGS)
    confidence = _validate.open_unit("confidence", confidence)
    dtype = _validate.one_of("dtype", dtype, DTYPES)
    chunk = _validate.integer("chunk_blocks", chunk_blocks, low=1, high=1 << 16)
    if call_chunks is not None:
        _validate.integer("call_chunks", call_chunks, low=1, high=1 << 31)
    if normal_reading == "std":  # s = normal_scale * C
        unit, std = normal_scale, normal_scale * C
    else:  # s^2 = normal_scale * C
        unit, std = math.sqrt(normal_scale / C), math.sqrt(normal_scale * C)
    if dist == "normal" and not MIN_UNIT_SCALE <= unit <= MAX_UNIT_SCALE:
        raise ValueError(
            f"Expected normal_scale giving s/C in [{MIN_UNIT_SCALE:g}, "
            f"{MAX_UNIT_SCALE:g}], got normal_scale={normal_scale!r} (s/C={unit:g})."
        )
    for dim in dims:  # block indices are uint32; 2**31 leaves room for the end
        limit = 2**31 * block_pairs(bucket_width(dim))
        if pairs > limit:
            raise ValueError(f"Expected pairs <= {limit} at dims={dim}, got {pairs}.")

    meta = dict(
        dist=dist,
        clip=clip,
        C=C,
        normal_scale=normal_scale,
        normal_reading=normal_reading,
        normal_std=std if dist == "normal" else None,
        confidence=confidence,
        dtype=dtype,
        pairs_requested=pairs,
        key_data=[int(v) for v in np.ravel(jax.random.key_data(key))],
        **provenance(dtype, stream_of(key)),
    )
    return _stream(key, dims, pairs, unit, chunk, call_chunks, meta)


def _stream(
    key: PRNGKey,
    dims: list[int],
    pairs: int,
    unit: float,
    chunk: int,
    call_chunks: int | None,
    meta: dict[str, Any],
) -> Iterator[ViolationResult]:
    """The generator behind :func:`iter_violations` (which validates eagerly)."""
    dist, clip, dtype = meta["dist"], meta["clip"], meta["dtype"]
    for dim in dims:
        start = time.perf_counter()
        width = bucket_width(dim)
        size = block_pairs(width)
        full_blocks, remainder = divmod(pairs, size)
        total_blocks = full_blocks + (remainder > 0)
        per_call = call_chunks or max(1, CALL_SCALARS // (chunk * 2 * size * width))
        per_call = min(per_call, (2**31 - 1) // (chunk * size))  # int32 count
        static = dict(dist=dist, order=2 if clip == "l2" else 1, width=width)
        violations, block = 0, 0
        while block < total_blocks:
            chunks = min(per_call, -(-(total_blocks - block) // chunk))
            with jax.enable_x64(dtype == "float64"):  # not held across the yield
                count = _count_impl(
                    jax.random.fold_in(jax.random.fold_in(key, DIST_CODES[dist]), dim),
                    jnp.int32(dim),
                    jnp.asarray(unit, dtype),
                    jnp.asarray(_threshold(dim, clip, dtype)),
                    jnp.uint32(block),
                    jnp.int32(chunks),
                    jnp.uint32(full_blocks),
                    jnp.uint32(remainder),
                    chunk_blocks=chunk,
                    **static,
                )
                violations += int(count)
            block += chunks * chunk
            done = min(block * size, pairs)
            lower, upper = clopper_pearson(violations, done, meta["confidence"])
            yield ViolationResult(
                dim=dim,
                pairs=done,
                violations=violations,
                fraction=violations / done,
                fraction_lower=lower,
                fraction_upper=upper,
                tolerance=tolerance(dim, clip, dtype),
                seconds=time.perf_counter() - start,
                complete=done == pairs,
                **meta,
            )


def count_violations(
    key: PRNGKey, dist: str, dims: Sequence[int], pairs: int, **options: Any
) -> list[ViolationResult]:
    """The complete records of :func:`iter_violations` (same arguments): one per
    dim, in the order of ``dims``.

    Example:
      >>> import jax
      >>> rs = count_violations(jax.random.key(0), "uniform", [1, 64], 1000)
      >>> [(r.dim, r.violations) for r in rs]
      [(1, 0), (64, 1000)]
    """
    records = iter_violations(key, dist, dims, pairs, **options)
    return [r for r in records if r.complete]
