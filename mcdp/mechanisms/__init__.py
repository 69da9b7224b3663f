"""The closed registry of mechanisms; the CLI offers ``sorted(MECHANISMS)``."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from mcdp.mechanisms._base import Mechanism
from mcdp.mechanisms.adept import (
    ADEPT,
    ADEPT_L1,
    ADEPT_TRUE_SENSITIVITY,
    AdeptParams,
    adept_params,
    adept_true_sensitivity_params,
)
from mcdp.mechanisms.dptext import DPTEXT, NAN_POLICIES, DPTextParams, dptext_params
from mcdp.mechanisms.gaussian import GAUSSIAN, GaussianParams, gaussian_params
from mcdp.mechanisms.laplace import LAPLACE, LaplaceParams, laplace_params
from mcdp.mechanisms.trivial import NONE, RANDOM, NoParams
from mcdp.mechanisms.trlaplace import (
    TRLAPLACE,
    TrLaplaceParams,
    trlaplace_min_dim,
    trlaplace_params,
)

MECHANISMS: Mapping[str, Mechanism] = MappingProxyType(
    {
        m.name: m
        for m in (
            LAPLACE,
            ADEPT,
            ADEPT_L1,
            ADEPT_TRUE_SENSITIVITY,
            DPTEXT,
            NONE,
            RANDOM,
            GAUSSIAN,
            TRLAPLACE,
        )
    }
)


def get_mechanism(name: str) -> Mechanism:
    """Looks ``name`` up; the error lists the known mechanisms."""
    try:
        return MECHANISMS[name]
    except KeyError:
        raise ValueError(
            f"Unknown mechanism {name!r}; "
            f"expected one of: {', '.join(sorted(MECHANISMS))}."
        ) from None


__all__ = [
    "MECHANISMS",
    "NAN_POLICIES",
    "AdeptParams",
    "DPTextParams",
    "GaussianParams",
    "LaplaceParams",
    "Mechanism",
    "NoParams",
    "TrLaplaceParams",
    "adept_params",
    "adept_true_sensitivity_params",
    "dptext_params",
    "gaussian_params",
    "get_mechanism",
    "laplace_params",
    "trlaplace_min_dim",
    "trlaplace_params",
]
