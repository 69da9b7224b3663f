r"""Numerical L1 sensitivity: maximise :math:`\lVert f(x) - f(x') \rVert_1` by ascent.

ADePT (Krishna et al. 2021) claims that L2 clipping
:math:`f(r) = r \min(1, C / \lVert r \rVert_2)` has L1 sensitivity :math:`2C`;
EMNLP 2021, Thm 5.1 proves :math:`\Delta_1 = 2C\sqrt{n}` on :math:`\mathbb{R}^n`.
:func:`max_l1_distance` searches the sensitivity of *any* JAX function:

.. math::
    \Delta_1(f) = \sup_{x, x' \in \mathbb{R}^n} \lVert f(x) - f(x') \rVert_1
    \ge \max_{\text{restarts}} \max_{t \le T} \lVert f(x_t) - f(x'_t) \rVert_1 .

Each restart draws :math:`x = s z`, :math:`z \sim N(0, I)` (``s = init_scale``) and
runs Adam on :math:`-\lVert f(s z) - f(s z') \rVert_1` over :math:`z`, the step
cosine-decayed from ``learning_rate`` to 1/1000 of it (no jitter at the optimum).
Adam's steps do not depend on the gradient's size: they are in units of ``s``
however flat :math:`f` is. A clipping's search starts *inside* the ball (``s = C /
(2\sqrt{n})``): there :math:`f` is the identity, the gradient of the distance is a
sign vector :math:`\pm\sigma`, and Adam's equal per-coordinate steps head straight
for the maximiser :math:`x = -x' = C\sigma/\sqrt{n}`. From outside, a pair on one
side of a 1-D clipping (constant beyond :math:`\pm C`) has zero gradient and stays
at distance 0. A value found is a lower bound on :math:`\Delta_1`, never a proof.

Restart :math:`i` starts from ``fold_in(key, i)``; restarts run in vmapped blocks of
:data:`RESTART_BLOCK` in one jitted ``fori_loop``, so a run's first :math:`k`
restarts are the run with :math:`k` restarts. Restarts, steps, learning rate, scale
and ``C`` never re-trace: one compile per ``(f, dim, dtype)``. The clippings commute
with zero padding, so :func:`sensitivity_records` pads ``n`` to a power of two (at
least 16): ``n`` = 1..64 takes 3 compiles.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.tree_util import Partial

from mcdp import _compilation_cache, _validate
from mcdp._types import Array, PRNGKey
from mcdp.core.records import Record, provenance
from mcdp.mechanisms._base import clip_norm
from mcdp.prng import stream_of

DTYPES = _validate.DTYPES
CLIPS = ("l1", "l2")
RESTART_BLOCK = 16  # restarts per compiled call; results do not depend on it
RESTARTS = 64
STEPS = 400
LEARNING_RATE = 0.2
FINAL_LR_FRACTION = 1e-3
MIN_PAD = 16


class SensitivitySearchResult(NamedTuple):
    """What :func:`max_l1_distance` found.

    Attributes:
      max_l1: :math:`\\lVert f(x) - f(x') \\rVert_1` recomputed at the best pair.
      x: the best pair's first input, shape ``(n,)``.
      x_prime: its second input, shape ``(n,)``.
      restart_max_l1: the best distance of each restart, shape ``(restarts,)``.
    """

    max_l1: float
    x: np.ndarray
    x_prime: np.ndarray
    restart_max_l1: np.ndarray


SearchResult = SensitivitySearchResult  # the name earlier versions used


class _Settings(NamedTuple):
    restarts: int
    steps: int
    learning_rate: float
    dtype: str


def _clip_l2(radius, x):
    return clip_norm(x, radius, 2)


def _clip_l1(radius, x):
    return clip_norm(x, radius, 1)


def l2_clipper(C: float) -> Callable[[Array], Array]:
    r""":math:`f(x) = x \min(1, C / \lVert x \rVert_2)`; :math:`\Delta_1 = 2C\sqrt{n}`.

    A :class:`jax.tree_util.Partial` with ``C`` as a leaf: searches with different
    ``C`` share one compiled program. Works on NumPy and JAX vectors.
    """
    return Partial(_clip_l2, _validate.positive("C", C))


clip_l2 = l2_clipper  # the name earlier versions used


def clip_l1(C: float) -> Callable[[Array], Array]:
    r""":math:`f(x) = x \min(1, C / \lVert x \rVert_1)`; :math:`\Delta_1 = 2C`."""
    return Partial(_clip_l1, _validate.positive("C", C))


def _distance(f: Partial, x: Array, x_prime: Array) -> Array:
    return jnp.sum(jnp.abs(f(x) - f(x_prime)))


_distance_jit = jax.jit(_distance)


@jax.jit
def _search_block(f, key, first, mask, scale, learning_rate, steps):
    """Best distance ``(block,)`` and pair ``(block, 2, dim)`` of the restarts
    ``first, ..., first + block - 1``. ``mask`` (``(1, dim)`` of 0/1) holds padded
    coordinates at exactly 0: their gradient is 0, so Adam never moves them."""
    dtype, total = scale.dtype, steps.astype(scale.dtype)

    def lr_at(count: Array) -> Array:
        cosine = (1 + jnp.cos(jnp.pi * jnp.minimum(count.astype(dtype) / total, 1))) / 2
        return learning_rate * (FINAL_LR_FRACTION + (1 - FINAL_LR_FRACTION) * cosine)

    def objective(z: Array) -> Array:
        x = scale * mask * z
        return _distance(f, x[0], x[1])

    def loss(z: Array) -> tuple[Array, Array]:
        values = jax.vmap(objective)(z)  # restarts are independent: grad of the sum
        return -jnp.sum(values), values  # ascent = descent on the negative

    def keep_best(z, value, best, best_z):
        better = value > best  # NaN never wins
        best_z = jnp.where(better[:, None, None], z, best_z)
        return jnp.where(better, value, best), best_z

    def step(_, carry):
        z, state, best, best_z = carry
        (_, value), grad = jax.value_and_grad(loss, has_aux=True)(z)
        best, best_z = keep_best(z, value, best, best_z)
        with jax.numpy_dtype_promotion("standard"):  # optax: python float ** int32
            updates, state = opt.update(grad, state, z)
        return optax.apply_updates(z, updates), state, best, best_z

    opt = optax.adam(lr_at)
    index = first + jnp.arange(RESTART_BLOCK, dtype=jnp.uint32)
    keys = jax.vmap(partial(jax.random.fold_in, key))(index)
    shape = (2, mask.shape[1])
    z = mask[None] * jax.vmap(lambda k: jax.random.normal(k, shape, dtype))(keys)
    init = (z, opt.init(z), jax.vmap(objective)(z), z)
    z, _, best, best_z = jax.lax.fori_loop(0, steps, step, init)
    best, best_z = keep_best(z, jax.vmap(objective)(z), best, best_z)
    return best, scale * mask[None] * best_z


def _search(
    key, f, dim, pad_to, scale, settings: _Settings, evaluate
) -> SensitivitySearchResult:
    """:func:`max_l1_distance` on checked arguments. ``pad_to > dim`` is valid only
    for an ``f`` that commutes with zero padding (the clippings); ``evaluate(x, x')``
    recomputes the distance of the best pair, unpadded."""
    restarts, steps, learning_rate, dtype = settings
    mask = jnp.asarray(np.arange(pad_to)[None, :] < dim, dtype)
    args = (jnp.asarray(scale, dtype), jnp.asarray(learning_rate, dtype))
    args += (jnp.int32(steps),)
    values, pairs = [], []
    for first in range(0, restarts, RESTART_BLOCK):
        value, pair = _search_block(f, key, jnp.uint32(first), mask, *args)
        values.append(np.asarray(value))
        pairs.append(np.asarray(pair)[..., :dim])
    restart_max = np.concatenate(values)[:restarts]
    best = 0 if np.isnan(restart_max).all() else int(np.nanargmax(restart_max))
    x, x_prime = np.concatenate(pairs)[best]
    return SensitivitySearchResult(float(evaluate(x, x_prime)), x, x_prime, restart_max)


def _settings(restarts, steps, learning_rate, dtype) -> _Settings:
    return _Settings(
        _validate.integer("restarts", restarts, low=1, high=1 << 20),
        _validate.integer("steps", steps, low=1, high=1 << 24),
        _validate.positive("learning_rate", learning_rate),
        _validate.one_of("dtype", dtype, DTYPES),
    )


def _check_f(f: Any, dim: int, dtype: str) -> None:
    if not callable(f):
        raise ValueError(f"Expected f to be callable, got {type(f).__name__}.")
    try:
        out = jax.eval_shape(f, jax.ShapeDtypeStruct((dim,), dtype))
    except Exception as e:  # whatever the user's f raised, as one line
        first_line = (str(e).splitlines() or [""])[0]
        raise ValueError(
            f"Expected f to map a ({dim},) {dtype} array to a vector; calling it "
            f"raised {type(e).__name__}: {first_line}"
        ) from e
    shape, out_dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
    if not isinstance(out, jax.ShapeDtypeStruct) or len(shape) != 1 or not shape[0]:
        got = shape if isinstance(out, jax.ShapeDtypeStruct) else type(out).__name__
        raise ValueError(f"Expected f to return one array of shape (m,), got {got}.")
    if not jnp.issubdtype(out_dtype, jnp.floating):
        raise ValueError(f"Expected f to return floats, got {out_dtype}.")


def max_l1_distance(
    key: PRNGKey,
    f: Callable[[Array], Array],
    dim: int,
    *,
    restarts: int = RESTARTS,
    steps: int = STEPS,
    learning_rate: float = LEARNING_RATE,
    init_scale: float = 1.0,
    dtype: str = "float64",
) -> SensitivitySearchResult:
    r"""The largest :math:`\lVert f(x) - f(x') \rVert_1` found on :math:`\mathbb{R}^n`.

    Args:
      key: restart :math:`i` starts from ``fold_in(key, i)``.
      f: JAX-traceable, from one vector of shape ``(dim,)`` to one vector of shape
        ``(m,)`` (usually ``m = dim``); it never sees a batch (it is vmapped). The
        compiled search is reused when the same ``f`` object is passed again (or a
        :class:`jax.tree_util.Partial` of the same function, as :func:`l2_clipper`).
      dim: :math:`n \ge 1`.
      restarts: independent random starts (default 64).
      steps: Adam steps per restart (default 400).
      learning_rate: Adam's first step in units of ``init_scale`` (default 0.2),
        cosine-decayed to 1/1000 of it.
      init_scale: :math:`s`, starts are :math:`s\,N(0, I)` (default 1; for a
        clipping of radius :math:`C`, :math:`C / (2\sqrt{n})` starts inside the ball).
      dtype: ``"float64"`` (default) or ``"float32"``.

    Returns:
      A :class:`SensitivitySearchResult`: a lower bound on :math:`\Delta_1(f)` and
      its witness (for an unbounded ``f``, a value that grows with ``steps``).

    Raises:
      ValueError: a bad argument, or an ``f`` that does not map ``(dim,)`` floats to
        ``(m,)`` floats.

    Example:
      >>> r = max_l1_distance(jax.random.key(0), l2_clipper(1.0), 4, restarts=16)
      >>> round(r.max_l1, 9)  # 2 C sqrt(n)
      4.0
    """
    _compilation_cache.enable()
    dim = _validate.integer("dim", dim, low=1, high=_validate.MAX_DIM)
    settings = _settings(restarts, steps, learning_rate, dtype)
    init_scale = _validate.positive("init_scale", init_scale)
    with jax.enable_x64(dtype == "float64"):
        _check_f(f, dim, dtype)
        fp = f if isinstance(f, Partial) else Partial(f)
        evaluate = partial(_distance_jit, fp)
        return _search(key, fp, dim, dim, init_scale, settings, evaluate)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SensitivityRecord(Record):
    """One dimension of the sensitivity search (EMNLP 2021, Thm 5.1).

    ``max_l1`` is the largest distance found, a lower bound on the sensitivity;
    ``claimed`` is ADePT's :math:`2C`; ``theorem`` the proven sensitivity
    (:math:`2C\\sqrt{n}` for ``l2``, :math:`2C` for ``l1``); ``ratio = max_l1 /
    theorem``; ``exceeds_claim`` is ``max_l1 > claimed`` beyond rounding
    (:math:`8 n \\epsilon_{mach}` relative). ``init_scale`` is
    :math:`C / (2\\sqrt{n})`; ``seconds`` includes any compile.
    """

    dim: int
    clip: str
    C: float
    max_l1: float
    claimed: float
    theorem: float
    ratio: float
    exceeds_claim: bool
    restarts: int
    steps: int
    learning_rate: float
    init_scale: float
    dtype: str
    seconds: float


def sensitivity_records(
    key: PRNGKey,
    dims: Sequence[int],
    *,
    clip: str = "l2",
    C: float = 10.0,
    restarts: int = RESTARTS,
    steps: int = STEPS,
    learning_rate: float = LEARNING_RATE,
    dtype: str = "float64",
) -> list[SensitivityRecord]:
    r"""Searches the L1 sensitivity of L2 or L1 clipping for every ``n`` in ``dims``.

    Dimension ``n`` uses ``fold_in(key, n)``, so its record does not depend on the
    other dimensions. Starts are :math:`\tfrac{C}{2\sqrt{n}} N(0, I)`, inside the
    ball; the best pair is recomputed on the host with NumPy, unpadded.

    Args:
      key: the run's key.
      dims: dimensions :math:`n \ge 1`.
      clip: ``"l2"`` (ADePT, :math:`\Delta_1 = 2C\sqrt{n}`) or ``"l1"`` (the remedy,
        :math:`\Delta_1 = 2C`).
      C: the clipping radius, finite and > 0.
      restarts, steps, learning_rate, dtype: as in :func:`max_l1_distance`.

    Returns:
      One :class:`SensitivityRecord` per entry of ``dims``, in order.
    """
    clip = _validate.one_of("clip", clip, CLIPS)
    C = _validate.positive("C", C)
    dims = [_validate.integer("dims", n, low=1, high=_validate.MAX_DIM) for n in dims]
    if not dims:
        raise ValueError("Expected dims to hold at least one dimension, got none.")
    settings = _settings(restarts, steps, learning_rate, dtype)
    f, order = (l2_clipper(C), 2) if clip == "l2" else (clip_l1(C), 1)

    def evaluate(x: np.ndarray, x_prime: np.ndarray) -> float:
        return np.abs(clip_norm(x, C, order) - clip_norm(x_prime, C, order)).sum()

    common = dict(clip=clip, C=C, claimed=2 * C, **settings._asdict())
    common |= provenance(dtype, stream_of(key))
    eps = float(np.finfo(dtype).eps)
    records = []
    for n in dims:
        start = time.perf_counter()
        scale = C / (2 * math.sqrt(n))
        pad_to = max(MIN_PAD, 1 << (n - 1).bit_length())
        with jax.enable_x64(dtype == "float64"):
            found = _search(
                jax.random.fold_in(key, n), f, n, pad_to, scale, settings, evaluate
            )
        theorem = 2 * C * (math.sqrt(n) if clip == "l2" else 1.0)
        records.append(
            SensitivityRecord(
                dim=n,
                max_l1=found.max_l1,
                theorem=theorem,
                ratio=found.max_l1 / theorem,
                exceeds_claim=found.max_l1 > 2 * C * (1 + 8 * n * eps),
                init_scale=scale,
                seconds=round(time.perf_counter() - start, 4),
                **common,
            )
        )
    return records
