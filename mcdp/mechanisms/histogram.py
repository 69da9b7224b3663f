r"""The noisy histograms of StatDP's evaluation.

Ding et al., *Detecting Violations of Differential Privacy*, CCS 2018, Alg. 9 and
10, as DP-Sniper evaluates them (Bichsel et al., S&P 2021,
``dpsniper/mechanisms/noisy_hist.py``): a histogram :math:`x \in \mathbb R^d` whose
neighbours differ in one entry by one, released with Laplace noise on every entry.

* ``noisy-hist1``: :math:`x + \mathrm{Lap}(1/\varepsilon)^{\otimes d}`, the Laplace
  mechanism: :math:`\varepsilon`-DP.
* ``noisy-hist2``: :math:`x + \mathrm{Lap}(\varepsilon)^{\otimes d}`, the scale
  inverted: its loss is :math:`\lVert x - x'\rVert_1/\varepsilon`, 10 for a unit
  change at :math:`\varepsilon = 0.1`.

Outputs have the shape of the input, ``(n, d)``. Both declare the exact Laplace
references: the privacy loss :math:`\lVert x - x'\rVert_1/b`, the profile of a pair
that differs in one entry, and the log density ratio of an output (for the ``lr``
attack).
"""

from __future__ import annotations

from mcdp._types import Array, PRNGKey
from mcdp.core.domains import HISTOGRAMS
from mcdp.core.mechanism import Mechanism
from mcdp.mechanisms._base import (
    laplace_exact_delta,
    laplace_exact_epsilon,
    laplace_privacy_loss,
)
from mcdp.mechanisms.laplace import LAPLACE_APART, LaplaceParams, laplace_sample


def noisy_hist1_params(epsilon: float) -> LaplaceParams:
    r"""Alg. 9: :math:`b = 1/\varepsilon` (sensitivity 1)."""
    return LaplaceParams(scale=1.0 / epsilon)


def noisy_hist2_params(epsilon: float) -> LaplaceParams:
    r"""Alg. 10: :math:`b = \varepsilon`, the inverted scale."""
    return LaplaceParams(scale=float(epsilon))


def noisy_hist1_sample(key: PRNGKey, x: Array, params: LaplaceParams) -> Array:
    r""":math:`x + \mathrm{Lap}(b)^{\otimes d}` per row, :math:`b = 1/\varepsilon`.

    True loss on its pairs (``one-above``, ``one-below``) at ε = 0.1: 0.1.
    """
    return laplace_sample(key, x, params)


def noisy_hist2_sample(key: PRNGKey, x: Array, params: LaplaceParams) -> Array:
    r""":math:`x + \mathrm{Lap}(b)^{\otimes d}` per row, :math:`b = \varepsilon`.

    True loss on its pairs (``one-above``, ``one-below``) at ε = 0.1: 10.
    """
    return laplace_sample(key, x, params)


def _histogram(name: str, sample, params, flaw: str | None) -> Mechanism:
    return Mechanism(
        name=name,
        sample=sample,
        claim="epsilon-DP",
        flaw=flaw,
        calibrate=lambda epsilon, delta, dim, clip: params(epsilon),
        privacy_loss=lambda y, x, x_prime, p: laplace_privacy_loss(
            y, x, x_prime, p.scale
        ),
        exact_delta=laplace_exact_delta,
        exact_epsilon=laplace_exact_epsilon,
        domain=HISTOGRAMS,
        noise_apart=LAPLACE_APART,
    )


NOISY_HIST1 = _histogram("noisy-hist1", noisy_hist1_sample, noisy_hist1_params, None)
NOISY_HIST2 = _histogram(
    "noisy-hist2",
    noisy_hist2_sample,
    noisy_hist2_params,
    "noise Lap(eps) instead of Lap(1/eps): the loss is 1/eps per unit change",
)
