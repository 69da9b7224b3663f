"""mcdp: a JAX-accelerated Monte-Carlo privacy-loss estimator with confidence bounds."""

from importlib import metadata as _metadata

from mcdp.analytic import ExactE2, exact_e2
from mcdp.estimators import MAJORITY_VOTE, Attack
from mcdp.experiments import AuditResult, GridSpec, audit, audit_iter, run_grid
from mcdp.mechanisms import MECHANISMS, Mechanism, get_mechanism
from mcdp.sampling import count_outcomes, iter_counts
from mcdp.statistics import Estimate, clopper_pearson, loss_estimate

try:
    __version__ = _metadata.version("mcdp")
except _metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0"

__all__ = [
    "MAJORITY_VOTE",
    "MECHANISMS",
    "Attack",
    "AuditResult",
    "Estimate",
    "ExactE2",
    "GridSpec",
    "Mechanism",
    "audit",
    "audit_iter",
    "clopper_pearson",
    "count_outcomes",
    "exact_e2",
    "get_mechanism",
    "iter_counts",
    "loss_estimate",
    "run_grid",
]
