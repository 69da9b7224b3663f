"""mcdp: a JAX-accelerated Monte-Carlo privacy-loss estimator with confidence bounds.

The public API; the README's "Architecture" section says which module holds what.
"""

from mcdp.attacks import ATTACKS, MAJORITY_VOTE, get_attack
from mcdp.auditing import (
    audit,
    audit_delta,
    audit_delta_iter,
    audit_iter,
    audit_to_width,
    audit_to_width_iter,
    draws_for_target,
)
from mcdp.core import Attack, AttackContext
from mcdp.core.datasets import DatasetDomain, Datasets
from mcdp.core.domains import InputDomain
from mcdp.core.records import (
    AuditResult,
    DeltaAuditResult,
    InputSearchResult,
    ProfilePoint,
    Provenance,
    SearchResult,
    TargetWidthResult,
)
from mcdp.core.records import __version__ as __version__
from mcdp.core.releases import PerCall
from mcdp.exact import ExactE2, exact_delta, exact_e2
from mcdp.experiments import Acl2022Grid, E4Spec, GridSpec, TrLaplaceGrid, run_grid
from mcdp.mechanisms import MECHANISMS, Mechanism, get_mechanism
from mcdp.running import run, run_iter
from mcdp.sampling import count_outcomes, iter_counts
from mcdp.searching import search
from mcdp.spec import AuditSpec, Draws, TargetWidth
from mcdp.statistics import Estimate, clopper_pearson, loss_estimate

__all__ = [
    "ATTACKS",
    "MAJORITY_VOTE",
    "MECHANISMS",
    "Acl2022Grid",
    "Attack",
    "AttackContext",
    "DatasetDomain",
    "Datasets",
    "AuditResult",
    "AuditSpec",
    "DeltaAuditResult",
    "Draws",
    "E4Spec",
    "Estimate",
    "ExactE2",
    "GridSpec",
    "InputDomain",
    "InputSearchResult",
    "Mechanism",
    "PerCall",
    "ProfilePoint",
    "Provenance",
    "SearchResult",
    "TargetWidth",
    "TargetWidthResult",
    "TrLaplaceGrid",
    "audit",
    "audit_delta",
    "audit_delta_iter",
    "audit_iter",
    "audit_to_width",
    "audit_to_width_iter",
    "clopper_pearson",
    "count_outcomes",
    "draws_for_target",
    "exact_delta",
    "exact_e2",
    "get_attack",
    "get_mechanism",
    "iter_counts",
    "loss_estimate",
    "run",
    "run_grid",
    "run_iter",
    "search",
]
