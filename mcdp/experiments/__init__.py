"""The papers' experiments, and the resumable result files they write.

* :mod:`mcdp.experiments.store`: the resumable JSON files and :func:`run_grid`, the
  one runner of every grid;
* :mod:`mcdp.experiments.acl2022`: the ACL 2022 grid (:class:`Acl2022Grid`) and the
  samplers of its Figure 2;
* :mod:`mcdp.experiments.emnlp2021`: the series of the EMNLP 2021 Figure 1;
* :mod:`mcdp.experiments.trlaplace`: the TrLaplace paper's claims
  (:class:`TrLaplaceGrid`);
* :mod:`mcdp.experiments.suite`: the benchmark suite of the auditing literature
  (:class:`SuiteGrid`), with the default attack (others where named).

``GRIDS`` maps the name of every grid (``mcdp grid NAME``) to its spec class.
``GridSpec``, ``E4Spec`` and ``SuiteSpec`` are the names earlier versions used for
the three classes.
"""

from mcdp.experiments.acl2022 import Acl2022Grid, GridSpec
from mcdp.experiments.store import Grid, eps_key, load_resumable, run_grid, write_atomic
from mcdp.experiments.suite import SuiteGrid, SuiteSpec
from mcdp.experiments.trlaplace import E4Spec, TrLaplaceGrid

GRIDS = {spec.EXPERIMENT: spec for spec in (Acl2022Grid, TrLaplaceGrid, SuiteGrid)}

__all__ = [
    "GRIDS",
    "Acl2022Grid",
    "E4Spec",
    "Grid",
    "GridSpec",
    "SuiteGrid",
    "SuiteSpec",
    "TrLaplaceGrid",
    "eps_key",
    "load_resumable",
    "run_grid",
    "write_atomic",
]
