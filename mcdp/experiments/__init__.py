"""The papers' experiments, and the resumable result files they write.

* :mod:`mcdp.experiments.store`: the resumable JSON files and :func:`run_grid`, the
  one runner of every grid;
* :mod:`mcdp.experiments.acl2022`: the ACL 2022 grid (:class:`GridSpec`) and the
  samplers of its Figure 2;
* :mod:`mcdp.experiments.emnlp2021`: the series of the EMNLP 2021 Figure 1;
* :mod:`mcdp.experiments.trlaplace`: the TrLaplace paper's claims (:class:`E4Spec`);
* :mod:`mcdp.experiments.suite`: the benchmark suite of the auditing literature
  (:class:`SuiteSpec`), with the learned attack.

``GRIDS`` maps the name of every grid (``mcdp grid NAME``) to its spec class.
"""

from mcdp.experiments.acl2022 import GridSpec
from mcdp.experiments.store import Grid, eps_key, load_resumable, run_grid, write_atomic
from mcdp.experiments.suite import SuiteSpec
from mcdp.experiments.trlaplace import E4Spec

GRIDS = {spec.EXPERIMENT: spec for spec in (GridSpec, E4Spec, SuiteSpec)}

__all__ = [
    "GRIDS",
    "E4Spec",
    "Grid",
    "GridSpec",
    "SuiteSpec",
    "eps_key",
    "load_resumable",
    "run_grid",
    "write_atomic",
]
