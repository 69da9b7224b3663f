"""mcdp: a JAX-accelerated Monte-Carlo privacy-loss estimator with confidence bounds."""

from mcdp._provenance import __version__ as __version__
from mcdp.analytic import ExactE2, exact_e2
from mcdp.estimators import MAJORITY_VOTE, Attack
from mcdp.experiments import (
    AuditResult,
    GridSpec,
    TargetWidthResult,
    audit,
    audit_iter,
    audit_to_width,
    audit_to_width_iter,
    draws_for_target,
    run_grid,
)
from mcdp.mechanisms import MECHANISMS, Mechanism, get_mechanism
from mcdp.sampling import count_outcomes, iter_counts
from mcdp.statistics import Estimate, clopper_pearson, loss_estimate

__all__ = [
    "MAJORITY_VOTE",
    "MECHANISMS",
    "Attack",
    "AuditResult",
    "Estimate",
    "ExactE2",
    "GridSpec",
    "Mechanism",
    "TargetWidthResult",
    "audit",
    "audit_iter",
    "audit_to_width",
    "audit_to_width_iter",
    "clopper_pearson",
    "count_outcomes",
    "draws_for_target",
    "exact_e2",
    "get_mechanism",
    "iter_counts",
    "loss_estimate",
    "run_grid",
]
