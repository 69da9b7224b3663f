"""The mechanism record and the pieces that several mechanisms share.

A mechanism is a pure function ``sample(key, x, params) -> y`` that draws one output
for every row of the batch ``x`` (shape ``(n, d)``) from a single key, plus host-side
metadata: what it claims, how the ACL 2022 sanity check (README, "The estimate")
parametrises it, and the closed forms from which :mod:`mcdp.exact` computes exact
references. Every exact reference comes from a field of the record, never from its
name, so a user's mechanism gets exactly the references it declares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mcdp._types import Array, PRNGKey
from mcdp.domains import InputDomain
from mcdp.exact import laplace_delta

LogProbs = tuple[np.ndarray, np.ndarray]


class Mechanism(NamedTuple):
    r"""A registered (or user-defined) mechanism.

    Only ``name`` and ``sample`` are required; every other field is optional and
    says what the mechanism declares about itself. An audit that needs a field the
    mechanism lacks says so in a one-line :class:`ValueError`.

    Attributes:
      name: registry name; never changes meaning.
      sample: ``sample(key, x, params) -> y`` with ``x`` of shape ``(n, d)``; pure JAX,
        not jitted (the engine owns the jit boundary).
      e2_params: ``e2_params(epsilon, dim, **options) -> params``, the parameters the
        ACL 2022 sanity check (inputs :math:`0^d` and :math:`1^d`) uses for this
        mechanism; ``None`` where the mechanism is not meant for it (then the sanity
        check needs explicit ``params``).
      log_round_one: host function ``(x, params) -> (log_p1, log_p0)`` giving, per
        coordinate of the 1-D input ``x``, ``log P[y_i >= 1/2 or y_i is NaN]`` and
        its complement in log space; the exact loss of the majority vote follows
        (:func:`mcdp.exact.exact_e2`). ``None`` where no closed form is known.
      claim: the privacy claim, e.g. ``"epsilon-DP"``; ``None`` where none is stated
        (the sanity check then gives no verdict).
      flaw: one line on why the claim fails, or ``None`` for a correct mechanism.
      nan_policies: the values ``e2_params`` accepts for ``nan_policy`` (DPText only).
      calibrate: ``calibrate(epsilon, delta, dim, clip) -> params``, the mechanism's
        own calibration for embeddings clipped at radius ``clip`` (used by the
        (epsilon, delta) audits); ``None`` if it has none.
      transform: ``transform(x, params) -> x``, the deterministic part applied before
        the noise (clipping); ``None`` for the identity.
      privacy_loss: ``privacy_loss(y, tx, tx_prime, params)``, the exact
        :math:`\ln p(y \mid x) - \ln p(y \mid x')` of an output row, given the
        transformed inputs; ``None`` where no density is known.
      noise_bound: ``noise_bound(params) -> A``: every noise coordinate lies in
        :math:`[-A, A]`; ``None`` for unbounded noise.
      exact_delta: host function ``exact_delta(params, tx, epsilon) -> delta | None``:
        the exact privacy profile :math:`\delta(\varepsilon)` on the transformed
        pair ``tx`` (shape ``(2, d)``), or ``None`` for pairs without a closed form;
        the field is ``None`` where no pair has one.
      exact_epsilon: host function ``exact_epsilon(params, tx) -> epsilon | None``:
        the exact pure-epsilon privacy loss on the transformed pair ``tx``, the
        largest :math:`|\ln p(y \mid x) - \ln p(y \mid x')|` over outputs (``inf``
        where one input reaches outputs the other cannot), or ``None`` for pairs
        without a closed form; the field is ``None`` where no pair has one.
      host_sample: ``fn(rng, x, n) -> y`` for a black-box mechanism in any Python
        code (:meth:`from_callable`): ``n`` outputs (first axis ``n``) for one
        1-D float64 input row ``x``, drawn from the ``numpy.random.Generator``
        ``rng``. The engine calls it on the host (:mod:`mcdp.host`); ``sample``
        then only raises. ``None`` for a JAX mechanism.
      reproducible: whether the outputs depend on ``rng`` alone (a library that
        draws from its own or the operating system's randomness is not: its
        records say ``reproducible: false``).
      library: ``"name==version"`` of the library under audit, for the records.
      workers: processes (threads where ``fn`` cannot be pickled) that call
        ``host_sample``; the counts do not depend on it.
      threads: whether the workers are threads of this process rather than
        processes.
    """

    name: str
    sample: Callable[[PRNGKey, Array, Any], Array]
    e2_params: Callable[..., Any] | None = None
    log_round_one: Callable[[np.ndarray, Any], LogProbs] | None = None
    claim: str | None = None
    flaw: str | None = None
    nan_policies: tuple[str, ...] = ()
    calibrate: Callable[[float, float, int, float], Any] | None = None
    transform: Callable[[Any, Any], Any] | None = None
    privacy_loss: Callable[[Array, Array, Array, Any], Array] | None = None
    noise_bound: Callable[[Any], Any] | None = None
    exact_delta: Callable[[Any, np.ndarray, float], float | None] | None = None
    exact_epsilon: Callable[[Any, np.ndarray], float | None] | None = None
    host_sample: Callable[[np.random.Generator, np.ndarray, int], Any] | None = None
    reproducible: bool = True
    library: str | None = None
    workers: int = 1
    domain: InputDomain | None = None
    threads: bool = False

    @classmethod
    def from_callable(
        cls,
        name: str,
        fn: Callable[[np.random.Generator, np.ndarray, int], Any],
        *,
        claim: str | None = None,
        flaw: str | None = None,
        reproducible: bool = True,
        library: str | None = None,
        workers: int = 1,
        domain: InputDomain | None = None,
        threads: bool = False,
    ) -> Mechanism:
        """A black-box mechanism: ``fn(rng, x, n)`` returns ``n`` outputs for the
        input row ``x``, in any Python code (see :func:`mcdp.host.from_callable`,
        which checks the arguments)."""
        from mcdp.host import from_callable

        return from_callable(
            name, fn, claim=claim, flaw=flaw, reproducible=reproducible,
            library=library, workers=workers, domain=domain, threads=threads,
        )  # fmt: skip

    def sanity_check_params(self, epsilon: float, dim: int, **options) -> Any:
        """``e2_params(epsilon, dim, **options)``, or a one-line error naming the
        missing field where the mechanism has none."""
        if self.e2_params is None:
            raise ValueError(
                f"mechanism {self.name!r} has no e2_params, so the sanity check "
                "cannot calibrate it: pass params= explicitly."
            )
        return self.e2_params(epsilon, dim, **options)

    def transformed(self, xs: np.ndarray, params: Any) -> np.ndarray:
        """The inputs after the deterministic part (``transform``), on the host in
        float64: what the noise is added to."""
        xs = np.asarray(xs, dtype=np.float64)
        if self.transform is None:
            return xs
        return np.asarray(self.transform(xs, jax.tree.map(np.asarray, params)))


def uniform_midpoint(key: PRNGKey, shape: tuple[int, ...], dtype) -> Array:
    r"""Uniforms on the open interval (0, 1), symmetric about 1/2.

    ``jax.random.uniform`` returns :math:`k 2^{-m}` for :math:`k = 0, \dots, 2^m - 1`
    (:math:`m` = 23 in float32, 52 in float64), so it can return 0 but never 1, and an
    inverse CDF applied to it has one infinite and one finite tail. Shifting by half a
    step gives :math:`(2k + 1) 2^{-m-1}`, exact in the same dtype, never 0 or 1, and
    the two tails of a symmetric inverse CDF are cut at the same point.
    """
    half_step = jnp.finfo(dtype).eps / 2
    return jax.random.uniform(key, shape, dtype) + jnp.asarray(half_step, dtype)


def standard_laplace(key: PRNGKey, shape: tuple[int, ...], dtype) -> Array:
    r"""Lap(1) by inverse CDF, :math:`-\mathrm{sgn}(u - h)\ln(1 - 2|u - h|)`, h = 1/2.

    Exact arithmetic up to the final ``log``; the tails stop at
    :math:`\ln 2^{m}` (about 36 in float64, 16 in float32).
    """
    centred = uniform_midpoint(key, shape, dtype) - jnp.asarray(0.5, dtype)
    return -jnp.sign(centred) * jnp.log1p(-2 * jnp.abs(centred))


def laplace_log_sf(t: np.ndarray, scale: float) -> LogProbs:
    r"""``(log P[eta >= t], log P[eta < t])`` for eta ~ Lap(scale), in log space.

    :math:`P[\eta \ge t] = \tfrac12 e^{-t/b}` for :math:`t \ge 0` and
    :math:`1 - \tfrac12 e^{t/b}` otherwise; neither side underflows.
    """
    z = np.abs(np.asarray(t, dtype=np.float64)) / scale
    small = np.log(0.5) - z
    large = np.log1p(-0.5 * np.exp(-z))
    right = np.asarray(t) >= 0
    return np.where(right, small, large), np.where(right, large, small)


def additive_log_round_one(
    transform: Callable[[np.ndarray, Any], np.ndarray],
    log_sf: Callable[[np.ndarray, Any], LogProbs],
) -> Callable[[np.ndarray, Any], LogProbs]:
    """Exact rounding probabilities of ``y = transform(x) + eta`` with iid ``eta``:
    ``y_i >= 1/2`` iff ``eta_i >= 1/2 - transform(x)_i``."""

    def log_round_one(x: np.ndarray, params: Any) -> LogProbs:
        shifted = transform(np.asarray(x, dtype=np.float64), params)
        return log_sf(0.5 - shifted, params)

    return log_round_one


def identity(x, params):
    del params
    return x


def clip_l2(x, params):
    """The L2 clipping of mechanisms whose params have a ``clip`` radius."""
    return clip_norm(x, params.clip, order=2)


def laplace_exact_delta(params: Any, tx: np.ndarray, epsilon: float) -> float | None:
    """The exact profile of iid Laplace noise of scale ``params.scale`` on a pair
    that differs in at most one coordinate (:func:`mcdp.exact.laplace_delta`);
    ``None`` for other pairs."""
    diff = tx[0] - tx[1]
    if np.count_nonzero(diff) > 1:
        return None
    return laplace_delta(epsilon, float(params.scale), float(np.abs(diff).sum()))


def laplace_exact_epsilon(params: Any, tx: np.ndarray) -> float:
    r"""The exact pure-epsilon loss of iid Laplace noise of scale ``params.scale`` on
    any pair: :math:`\lVert x - x'\rVert_1 / b`."""
    return float(np.abs(tx[0] - tx[1]).sum() / float(params.scale))


def laplace_privacy_loss(y, x, x_prime, scale):
    r""":math:`(\lVert y - x'\rVert_1 - \lVert y - x\rVert_1)/b` for iid Lap(b) noise,
    over the last axis; ``x`` and ``x_prime`` broadcast against ``y`` explicitly."""
    x = jnp.broadcast_to(x, y.shape)
    x_prime = jnp.broadcast_to(x_prime, y.shape)
    return jnp.sum(jnp.abs(y - x_prime) - jnp.abs(y - x), axis=-1) / scale


def clip_norm(x, radius, order: int):
    r"""Row-wise :math:`x \min(1, C / \lVert x \rVert_p)` for ``order`` p = 1 or 2.

    Works on NumPy arrays (host, exact references) and JAX arrays (device). A zero
    row and ``radius = inf`` (no clipping) both give the factor 1.
    """
    xp = jnp if isinstance(x, jax.Array) else np
    if order == 2:
        norm = xp.sqrt(xp.sum(x * x, axis=-1, keepdims=True))
    else:
        norm = xp.sum(xp.abs(x), axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        factor = xp.minimum(1, radius / norm)
    return x * factor
