"""ACL 2022 (Habernal, *How reparametrization trick broke differentially-private
text representation learning*): the grid of its Figure 1 and the samplers of its
Figure 2.

The grid runs the sanity check (:func:`mcdp.audit`) for 5 mechanisms × 7 epsilons ×
6 dimensions; its file is keyed ``mechanism → epsilon → d`` like the paper's
reference ``results.json`` (epsilon keys ``"1.0"``, d keys ``"8"``), each cell an
:class:`~mcdp.records.AuditResult` as a dict. A cell's key depends on the cell
alone, so ``mcdp audit`` reproduces any cell exactly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from mcdp import _validate
from mcdp.auditing import SANITY_CHECK, audit_iter
from mcdp.core.records import AuditResult
from mcdp.experiments.store import Cell, Grid, eps_key
from mcdp.mechanisms import get_mechanism
from mcdp.mechanisms._base import standard_laplace
from mcdp.mechanisms.dptext import dptext_params, dptext_sample

EXPERIMENT = SANITY_CHECK
ACL2022_MECHANISMS = ("laplace", "adept", "dptext", "none", "random")
ACL2022_EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
ACL2022_DIMS = (1, 2, 8, 32, 64, 128)
HIST_EDGES = np.linspace(-5, 5, 101)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Acl2022Grid(Grid):
    """The cells of the ACL 2022 grid and the settings shared by all of them."""

    EXPERIMENT: ClassVar[str] = EXPERIMENT
    RECORD: ClassVar[type[AuditResult]] = AuditResult
    COORDINATES: ClassVar[tuple[str, ...]] = ("mechanisms", "epsilons", "dims")
    EMPTY: ClassVar[str] = (
        "Expected at least one mechanism, epsilon and dim in the grid."
    )
    DEPTH: ClassVar[int] = 3
    RECORD_NAME: ClassVar[str] = "audit"

    mechanisms: Sequence[str] = ACL2022_MECHANISMS
    epsilons: Sequence[float] = ACL2022_EPSILONS
    dims: Sequence[int] = ACL2022_DIMS

    def validated(self) -> Acl2022Grid:
        """Checks every field; raises a one-line :class:`ValueError`."""
        spec = super().validated()
        for name in spec.mechanisms:
            get_mechanism(name)
        return dataclasses.replace(
            spec,
            dims=tuple(
                _validate.integer("dims", d, low=1, high=_validate.MAX_DIM)
                for d in self.dims
            ),
        )

    def cells(self) -> list[Cell]:
        run = partial(
            audit_iter,
            seed=self.seed,
            confidence=self.confidence,
            dtype=self.dtype,
            prng=self.prng,
        )
        return [
            Cell(
                path=(m, eps_key(e), str(d)),
                weight=d,
                label=f"{m} eps={e:g} d={d}",
                run=partial(run, m, e, d, self.draws),
            )
            for m in self.mechanisms
            for e in self.epsilons
            for d in self.dims
        ]


GridSpec = Acl2022Grid  # the name earlier versions used


def sampler_histograms(
    key, draws: int, edges: np.ndarray = HIST_EDGES
) -> dict[str, Any]:
    """Histograms of the samplers of ACL 2022 Figure 2, ``draws`` each.

    Samplers, all of unit scale: the library's standard Laplace
    (``jax.random.laplace``), the standard uniform, the correct inverse-CDF transform,
    and DPText's transform with NaNs kept and with NaN → 0.
    """
    keys = jax.random.split(key, 5)
    with jax.enable_x64(True):
        zeros = jnp.zeros((draws, 1))
        samples = {
            "library Laplace (jax.random.laplace)": jax.random.laplace(
                keys[0], (draws,), jnp.float64
            ),
            "uniform U(0, 1)": jax.random.uniform(keys[1], (draws,), jnp.float64),
            "correct inverse CDF": standard_laplace(keys[2], (draws,), jnp.float64),
            "DPText, NaN kept": dptext_sample(
                keys[3], zeros, dptext_params(1.0, 1.0, "nan")
            ),
            "DPText, NaN → 0": dptext_sample(
                keys[4], zeros, dptext_params(1.0, 1.0, "zero")
            ),
        }
    panels = []
    for title, values in samples.items():
        x = np.asarray(values, dtype=np.float64).ravel()
        nan = int(np.isnan(x).sum())
        x = x[~np.isnan(x)]
        counts, _ = np.histogram(x, bins=edges)
        outside = int(((x < edges[0]) | (x > edges[-1])).sum())
        panels.append(
            {"title": title, "counts": counts.tolist(), "nan": nan, "outside": outside}
        )
    return {"draws": draws, "edges": edges.tolist(), "samplers": panels}
