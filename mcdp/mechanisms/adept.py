r"""ADePT (Krishna et al., 2021) and the two remedies of Habernal (EMNLP 2021, §6).

ADePT clips the latent vector by its L2 norm and adds Laplace noise calibrated to a
claimed sensitivity of :math:`2C`:
:math:`r' = r \min(1, C/\lVert r \rVert_2) + \eta`, :math:`\eta_i \sim
\mathrm{Lap}(2C/\varepsilon)`. The L1 sensitivity of L2 clipping is
:math:`2C\sqrt d` (EMNLP 2021, Thm 5.1), so the claim fails for every ``d > 1``.
The remedies clip by the L1 norm (``adept-l1``) or use the true sensitivity
(``adept-true-sensitivity``); both are :math:`\varepsilon`-DP.

In the ACL 2022 sanity check, the reference code gives ADePT Laplace noise
of scale :math:`1/\varepsilon` for every ``d`` (sensitivity :math:`2C` with
:math:`C = 1/2`) and does not clip; ``adept`` keeps that convention there
(``clip = inf``). The remedies clip at :math:`C = 1/2` in the sanity check, as they
must to be private.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from mcdp._types import Array, PRNGKey
from mcdp.core.domains import CLIPPED_EMBEDDINGS
from mcdp.core.mechanism import Mechanism
from mcdp.mechanisms._base import (
    additive_log_round_one,
    clip_l2_by_params,
    clip_norm,
    laplace_exact_delta,
    laplace_exact_epsilon,
    laplace_log_sf,
    laplace_privacy_loss,
    standard_laplace,
)

E2_CLIP = 0.5  # C in the ACL 2022 experiment: 2C = 1


class AdeptParams(NamedTuple):
    clip: Array | float  # C, the clipping radius (inf: no clipping)
    scale: Array | float  # b, the Laplace scale


def adept_params(epsilon: float, clip: float) -> AdeptParams:
    """ADePT's own calibration: :math:`b = 2C/\\varepsilon` (the wrong sensitivity)."""
    return AdeptParams(clip=clip, scale=2 * clip / epsilon)


def adept_true_sensitivity_params(epsilon: float, clip: float, dim: int) -> AdeptParams:
    """Calibration to the true L1 sensitivity :math:`2C\\sqrt d` of L2 clipping."""
    return AdeptParams(clip=clip, scale=2 * clip * math.sqrt(dim) / epsilon)


def adept_sample(key: PRNGKey, x: Array, params: AdeptParams) -> Array:
    r"""One draw of :math:`x\min(1, C/\lVert x\rVert_2) + \mathrm{Lap}(b)^{\otimes d}`
    per row of ``x``."""
    clipped = clip_norm(x, params.clip, order=2)
    return clipped + params.scale * standard_laplace(key, x.shape, x.dtype)


def adept_l1_sample(key: PRNGKey, x: Array, params: AdeptParams) -> Array:
    r"""One draw of :math:`x\min(1, C/\lVert x\rVert_1) + \mathrm{Lap}(b)^{\otimes d}`
    per row of ``x``."""
    clipped = clip_norm(x, params.clip, order=1)
    return clipped + params.scale * standard_laplace(key, x.shape, x.dtype)


def _log_sf(t, params: AdeptParams):
    return laplace_log_sf(t, params.scale)


ADEPT = Mechanism(
    name="adept",
    sample=adept_sample,
    calibrate_sanity_check=lambda epsilon, dim: AdeptParams(
        clip=math.inf, scale=1 / epsilon
    ),
    log_round_one=additive_log_round_one(
        lambda x, p: clip_norm(x, p.clip, order=2), _log_sf
    ),
    claim="epsilon-DP",
    flaw="noise calibrated to 2C, but the L1 sensitivity of L2 clipping is 2C*sqrt(d)",
    calibrate=lambda epsilon, delta, dim, clip: adept_params(epsilon, clip),
    transform=clip_l2_by_params,
    privacy_loss=lambda y, x, x_prime, p: laplace_privacy_loss(y, x, x_prime, p.scale),
    exact_delta=laplace_exact_delta,
    exact_epsilon=laplace_exact_epsilon,
    domain=CLIPPED_EMBEDDINGS,
)

ADEPT_L1 = Mechanism(
    name="adept-l1",
    sample=adept_l1_sample,
    calibrate_sanity_check=lambda epsilon, dim: adept_params(epsilon, E2_CLIP),
    log_round_one=additive_log_round_one(
        lambda x, p: clip_norm(x, p.clip, order=1), _log_sf
    ),
    claim="epsilon-DP",
    calibrate=lambda epsilon, delta, dim, clip: adept_params(epsilon, clip),
    transform=lambda x, p: clip_norm(x, p.clip, order=1),
    privacy_loss=lambda y, x, x_prime, p: laplace_privacy_loss(y, x, x_prime, p.scale),
    exact_delta=laplace_exact_delta,
    exact_epsilon=laplace_exact_epsilon,
    domain=CLIPPED_EMBEDDINGS,
)

ADEPT_TRUE_SENSITIVITY = Mechanism(
    name="adept-true-sensitivity",
    sample=adept_sample,
    calibrate_sanity_check=lambda epsilon, dim: adept_true_sensitivity_params(
        epsilon, E2_CLIP, dim
    ),
    log_round_one=ADEPT.log_round_one,
    claim="epsilon-DP",
    calibrate=lambda epsilon, delta, dim, clip: adept_true_sensitivity_params(
        epsilon, clip, dim
    ),
    transform=clip_l2_by_params,
    privacy_loss=ADEPT.privacy_loss,
    exact_delta=laplace_exact_delta,
    exact_epsilon=laplace_exact_epsilon,
    domain=CLIPPED_EMBEDDINGS,
)
