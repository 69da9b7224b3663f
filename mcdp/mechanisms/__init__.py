"""The closed registry of mechanisms; the CLI offers ``sorted(MECHANISMS)``."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import jax
import numpy as np

from mcdp.core.mechanism import Mechanism
from mcdp.mechanisms.adept import (
    ADEPT,
    ADEPT_L1,
    ADEPT_TRUE_SENSITIVITY,
    AdeptParams,
    adept_params,
    adept_true_sensitivity_params,
)
from mcdp.mechanisms.counting import (
    LAPLACE_PARALLEL,
    PREFIX_SUM,
    TRUNCATED_GEOMETRIC,
    TruncatedGeometricParams,
    geo_sample_params,
    truncated_geometric_params,
)
from mcdp.mechanisms.dptext import DPTEXT, NAN_POLICIES, DPTextParams, dptext_params
from mcdp.mechanisms.float_laplace import (
    LAPLACE_FLOAT,
    SNAPPING,
    SnappingParams,
    snapping_params,
)
from mcdp.mechanisms.gaussian import GAUSSIAN, GaussianParams, gaussian_params
from mcdp.mechanisms.histogram import NOISY_HIST1, NOISY_HIST2
from mcdp.mechanisms.laplace import LAPLACE, LaplaceParams, laplace_params
from mcdp.mechanisms.noisy_max import (
    RNM1,
    RNM2,
    RNM3,
    RNM4,
    NoisyMaxParams,
    noisy_max_params,
)
from mcdp.mechanisms.numerical_svt import (
    NUMERICAL_SVT,
    NumericalSvtParams,
    numerical_svt_params,
)
from mcdp.mechanisms.rappor import (
    ONE_TIME_RAPPOR,
    RAPPOR,
    OneTimeRapporParams,
    RapporParams,
    one_time_rappor_params,
    rappor_params,
)
from mcdp.mechanisms.sparse_vector import (
    SVT1,
    SVT2,
    SVT3,
    SVT4,
    SVT5,
    SVT6,
    SVT34,
    NoCutoffSvtParams,
    Svt34Params,
    SvtParams,
    svt_params,
)
from mcdp.mechanisms.suite import SUITE, SuiteCase
from mcdp.mechanisms.trivial import NONE, RANDOM, NoParams
from mcdp.mechanisms.trlaplace import (
    TRLAPLACE,
    TrLaplaceParams,
    trlaplace_min_dim,
    trlaplace_params,
)
from mcdp.pairs import make_pair

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
            # the benchmark suite of the auditing literature (mcdp.mechanisms.suite)
            NOISY_HIST1,
            NOISY_HIST2,
            RNM1,
            RNM2,
            RNM3,
            RNM4,
            SVT1,
            SVT2,
            SVT3,
            SVT4,
            SVT5,
            SVT6,
            SVT34,
            PREFIX_SUM,
            TRUNCATED_GEOMETRIC,
            LAPLACE_PARALLEL,
            RAPPOR,
            ONE_TIME_RAPPOR,
            NUMERICAL_SVT,
            LAPLACE_FLOAT,
            SNAPPING,
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


def worst_pair(name: str) -> tuple[str, float | None]:
    """The named pair of the case ``name`` whose exact loss (``exact_epsilon``) is
    largest, the first of equals, and that loss (``None`` where no pair has one).

    It is computed from the mechanism's closed forms, before anything is drawn, so
    auditing only this pair costs no confidence."""
    case = SUITE[name]
    mech = get_mechanism(name)
    params = mech.calibrate(case.epsilon, 0.0, case.dim, 1.0)
    host = jax.tree.map(np.asarray, params)
    best, best_loss = case.pairs[0], None
    for pair in case.pairs:
        tx = mech.transformed(make_pair(pair, case.dim, 1.0), params)
        loss = mech.exact_epsilon(host, tx)
        if loss is not None and (best_loss is None or loss > best_loss):
            best, best_loss = pair, loss
    return best, best_loss


__all__ = [
    "MECHANISMS",
    "NAN_POLICIES",
    "SUITE",
    "AdeptParams",
    "DPTextParams",
    "GaussianParams",
    "LaplaceParams",
    "Mechanism",
    "NoCutoffSvtParams",
    "NoParams",
    "NoisyMaxParams",
    "NumericalSvtParams",
    "OneTimeRapporParams",
    "RapporParams",
    "SnappingParams",
    "SuiteCase",
    "Svt34Params",
    "SvtParams",
    "TrLaplaceParams",
    "TruncatedGeometricParams",
    "adept_params",
    "adept_true_sensitivity_params",
    "dptext_params",
    "gaussian_params",
    "geo_sample_params",
    "get_mechanism",
    "laplace_params",
    "noisy_max_params",
    "numerical_svt_params",
    "one_time_rappor_params",
    "rappor_params",
    "snapping_params",
    "svt_params",
    "trlaplace_min_dim",
    "trlaplace_params",
    "truncated_geometric_params",
    "worst_pair",
]
