r"""DPText's Laplace sampler (Beigi et al., 2019), as audited in ACL 2022.

DPText samples :math:`u \sim U(0, 1)` and returns
:math:`\eta = -b\,\mathrm{sgn}(u)\ln(1 - 2|u|)`: the inverse CDF of the Laplace
distribution applied to :math:`u` instead of :math:`u - 1/2`. For :math:`u > 1/2`
the log gets a negative argument (NaN), and every finite draw is
:math:`\eta \ge 0`, so an output below the input is impossible: infinite privacy loss.

NaN policies (how an implementation may deal with the NaNs):

* ``zero``: NaN becomes 0, as the reference code does (``np.nan_to_num``);
* ``resample``: NaN draws are discarded and drawn again; the NaNs are exactly the
  draws with :math:`u > 1/2`, so the kept draw has :math:`u \mid u \le 1/2`, which is
  sampled directly (and exactly, in distribution) as :math:`u/2`;
* ``nan``: the NaN is kept (the attack then rounds it to 1, since ``NaN < 0.5`` is
  false).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mcdp._types import Array, PRNGKey
from mcdp.core.mechanism import Mechanism
from mcdp.mechanisms._base import additive_log_round_one, identity

NAN_POLICIES = ("zero", "resample", "nan")
_ZERO, _RESAMPLE, _NAN = range(3)


class DPTextParams(NamedTuple):
    scale: Array | float  # b = sensitivity / epsilon
    nan_policy: Array | int  # index into NAN_POLICIES


def dptext_params(epsilon: float, sensitivity: float, nan_policy: str = "zero"):
    """Calibrates :math:`b = \\Delta_1/\\varepsilon`; ``nan_policy`` is one of
    ``zero``, ``resample``, ``nan``."""
    if nan_policy not in NAN_POLICIES:
        raise ValueError(
            f"Unknown nan_policy {nan_policy!r}; expected one of: "
            f"{', '.join(sorted(NAN_POLICIES))}."
        )
    return DPTextParams(
        scale=sensitivity / epsilon, nan_policy=NAN_POLICIES.index(nan_policy)
    )


def dptext_sample(key: PRNGKey, x: Array, params: DPTextParams) -> Array:
    """One draw of ``x + eta`` per row of ``x`` with DPText's broken sampler."""
    u = jax.random.uniform(key, x.shape, x.dtype)
    u = jnp.where(params.nan_policy == _RESAMPLE, 0.5 * u, u)
    eta = -params.scale * jnp.sign(u) * jnp.log(1 - 2 * jnp.abs(u))
    eta = jnp.where((params.nan_policy == _ZERO) & jnp.isnan(eta), 0, eta)
    return x + eta


def _log_sf(t: np.ndarray, params: DPTextParams):
    r"""``(log P[eta >= t or NaN], log P[eta < t])``. Every policy has
    :math:`\eta \ge 0` or NaN, so for :math:`t \le 0` the first is 1. For
    :math:`t > 0`, with :math:`s = e^{-t/b}`: zero :math:`s/2`, resample :math:`s`,
    nan :math:`(1 + s)/2`."""
    t = np.asarray(t, dtype=np.float64)
    z = np.maximum(t, 0) / params.scale
    policy = int(params.nan_policy)
    if policy == _ZERO:
        ge, lt = np.log(0.5) - z, np.log1p(-0.5 * np.exp(-z))
    elif policy == _RESAMPLE:
        with np.errstate(divide="ignore"):
            ge, lt = -z, np.log(-np.expm1(-z))
    else:
        with np.errstate(divide="ignore"):
            ge, lt = (
                np.log(0.5) + np.log1p(np.exp(-z)),
                np.log(0.5) + np.log(-np.expm1(-z)),
            )
    positive = t > 0
    return np.where(positive, ge, 0.0), np.where(positive, lt, -np.inf)


def _sanity_check_params(
    epsilon: float, dim: int, nan_policy: str = "zero"
) -> DPTextParams:
    return dptext_params(epsilon, sensitivity=dim, nan_policy=nan_policy)


DPTEXT = Mechanism(
    name="dptext",
    sample=dptext_sample,
    calibrate_sanity_check=_sanity_check_params,
    log_round_one=additive_log_round_one(identity, _log_sf),
    claim="epsilon-DP",
    flaw="inverse CDF applied to u instead of u - 1/2: the noise is never negative",
    nan_policies=NAN_POLICIES,
)
