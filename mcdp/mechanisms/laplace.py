r"""The Laplace mechanism, the reference that everything else is compared with.

:math:`M(x) = x + \eta`, :math:`\eta_i \sim \mathrm{Lap}(\Delta_1/\varepsilon)` iid;
:math:`\varepsilon`-DP for queries of L1 sensitivity :math:`\Delta_1`.
"""

from __future__ import annotations

from typing import NamedTuple

from mcdp._types import Array, PRNGKey
from mcdp.core.domains import CLIPPED_EMBEDDINGS
from mcdp.core.mechanism import Mechanism, NoiseApart
from mcdp.mechanisms._base import (
    additive_log_round_one,
    identity,
    laplace_exact_delta,
    laplace_exact_epsilon,
    laplace_log_sf,
    laplace_privacy_loss,
    standard_laplace,
    standard_laplace_noise,
)


class LaplaceParams(NamedTuple):
    scale: Array | float  # b = sensitivity / epsilon


def laplace_params(epsilon: float, sensitivity: float) -> LaplaceParams:
    """Calibrates :math:`b = \\Delta_1 / \\varepsilon`."""
    return LaplaceParams(scale=sensitivity / epsilon)


def laplace_sample(key: PRNGKey, x: Array, params: LaplaceParams) -> Array:
    r"""One draw of :math:`M(x) = x + \mathrm{Lap}(b)^{\otimes d}` per row of ``x``."""
    return laplace_from_noise(x, standard_laplace(key, x.shape, x.dtype), params)


def laplace_from_noise(x: Array, noise: Array, params: LaplaceParams) -> Array:
    """:func:`laplace_sample`'s outputs from its standard Laplace draws ``noise``."""
    return x + params.scale * noise


# laplace_sample in two parts (Mechanism.noise_apart), for the mechanisms that declare
# it; the scaling goes with the outputs, so that they are computed as in the sampler
# whole, to the bit (on a CPU, XLA fuses a product into the sum that reads it)
LAPLACE_APART = NoiseApart(standard_laplace_noise, laplace_from_noise)


def _sanity_check_params(epsilon: float, dim: int) -> LaplaceParams:
    # the sanity check: D = 0^d vs D' = 1^d under the identity query, so Delta_1 = d
    return laplace_params(epsilon, sensitivity=dim)


LAPLACE = Mechanism(
    name="laplace",
    sample=laplace_sample,
    calibrate_sanity_check=_sanity_check_params,
    log_round_one=additive_log_round_one(
        identity, lambda t, p: laplace_log_sf(t, p.scale)
    ),
    claim="epsilon-DP",
    # embeddings in the L2 ball of radius C: the L1 sensitivity is 2 C sqrt(d)
    calibrate=lambda epsilon, delta, dim, clip: laplace_params(
        epsilon, sensitivity=2 * clip * dim**0.5
    ),
    privacy_loss=lambda y, x, x_prime, p: laplace_privacy_loss(y, x, x_prime, p.scale),
    exact_delta=laplace_exact_delta,
    exact_epsilon=laplace_exact_epsilon,
    domain=CLIPPED_EMBEDDINGS,
)
