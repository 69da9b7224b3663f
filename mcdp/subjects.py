r"""Real subjects: the mechanisms of DP libraries as black boxes, and two NumPy
controls.

Each factory returns a :class:`~mcdp.mechanisms.Mechanism` made by
:meth:`~mcdp.mechanisms.Mechanism.from_callable` for a scalar query of L1 (or
L2) sensitivity ``sensitivity``, applied to every coordinate of the input row:

* ``numpy-textbook-laplace``: :math:`x + \mathrm{Lap}(\Delta/\varepsilon)` in
  float64 from ``numpy.random.Generator.laplace``, the textbook mechanism that
  Mironov (2012) broke: its outputs under :math:`x' = 1` all lie on the grid
  :math:`2^{-53}`, those under :math:`x = 0` do not (the known-broken control);
* ``numpy-snapped-laplace``: a discrete Laplace on the grid :math:`2^{-k}` (the
  input rounded to the grid, plus the grid step times a two-sided geometric
  variable), which is :math:`\varepsilon`-DP for inputs on the grid (the correct
  control);
* diffprivlib's ``Laplace``, ``Gaussian`` and ``Geometric`` (``randomise`` once per
  value; they draw from ``random.SystemRandom``, so they are not reproducible);
* OpenDP's ``make_laplace`` and ``make_gaussian`` on float vectors (sampled on a
  fine grid by exact arithmetic; OS randomness, not reproducible).

:data:`DATASET_SUBJECTS` are library functions called on datasets, once per
release, each with the relation its claim assumes and the records its documentation
admits: diffprivlib's ``tools`` (mean, var, sum, count_nonzero, histogram), OpenDP's
clamp > sum > Laplace and count > Laplace pipelines, python-dp's ``BoundedMean``,
``BoundedSum`` and ``Count``, and pipeline-dp's ``DPEngine`` sum.

The callables are module-level classes, so that worker processes can unpickle
them. The libraries are optional (``pip install 'mcdp[audit-libs]'``); a factory
whose library is missing raises :class:`ImportError` saying so.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import numpy as np

from mcdp import _validate
from mcdp.core.mechanism import Mechanism

SNAP_BITS = 10  # the grid 2^-10 of the snapped Laplace


def _require(module: str) -> None:
    try:
        __import__(module)
    except ImportError as err:
        raise ImportError(
            f"{module} is not installed: pip install 'mcdp[audit-libs]' ({err})"
        ) from None


@dataclasses.dataclass(frozen=True)
class TextbookLaplace:
    """``x + rng.laplace(0, scale)`` per coordinate, in float64."""

    scale: float

    def __call__(self, rng: np.random.Generator, x: np.ndarray, n: int):
        return x[None, :] + rng.laplace(0.0, self.scale, size=(n, x.shape[0]))


@dataclasses.dataclass(frozen=True)
class SnappedLaplace:
    r"""The discrete Laplace on the grid :math:`g = 2^{-k}`: :math:`g
    \cdot (\mathrm{round}(x/g) + G_1 - G_2)` with :math:`G_i` geometric,
    :math:`P[G_1 - G_2 = j] \propto e^{-g |j| / b}`."""

    scale: float
    bits: int = SNAP_BITS

    def __call__(self, rng: np.random.Generator, x: np.ndarray, n: int):
        step = 2.0**-self.bits
        p = -math.expm1(-step / self.scale)
        shape = (n, x.shape[0])
        jumps = rng.geometric(p, size=shape) - rng.geometric(p, size=shape)
        return (np.round(x / step)[None, :] + jumps) * step


@dataclasses.dataclass(frozen=True)
class DiffprivlibScalar:
    """A diffprivlib mechanism's ``randomise`` on every value (integers for
    ``Geometric``); ``rng`` is not used: diffprivlib draws from
    ``random.SystemRandom``."""

    mechanism: str  # "Laplace", "Gaussian" or "Geometric"
    options: tuple[tuple[str, float], ...]

    def __call__(self, rng: np.random.Generator, x: np.ndarray, n: int):
        import diffprivlib.mechanisms as mechanisms

        mech = getattr(mechanisms, self.mechanism)(**dict(self.options))
        if self.mechanism == "Geometric":
            values = [int(round(v)) for v in x]
        else:
            values = [float(v) for v in x]
        randomise = mech.randomise
        return np.array(
            [[randomise(v) for v in values] for _ in range(n)], dtype=np.float64
        )


@dataclasses.dataclass(frozen=True)
class OpenDPVector:
    """OpenDP's ``make_laplace`` (L1) or ``make_gaussian`` (L2) on a float vector
    of ``n * d`` entries (the row repeated): one call gives ``n`` outputs."""

    measurement: str  # "make_laplace" or "make_gaussian"
    scale: float

    def __call__(self, rng: np.random.Generator, x: np.ndarray, n: int):
        import opendp.prelude as dp

        dp.enable_features("contrib")
        size = n * x.shape[0]
        metric = (
            dp.l1_distance if self.measurement == "make_laplace" else dp.l2_distance
        )
        space = (
            dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size),
            metric(T=float),
        )
        release = getattr(dp.m, self.measurement)(*space, scale=self.scale)
        out = release([float(v) for v in np.tile(x, n)])
        return np.asarray(out, dtype=np.float64).reshape(n, x.shape[0])


def gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    r"""The classic calibration :math:`\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/
    \varepsilon` (Dwork and Roth, Thm A.1; for :math:`\varepsilon < 1`)."""
    return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def _check(epsilon: float, delta: float | None, sensitivity: float):
    epsilon = _validate.positive("epsilon", epsilon)
    sensitivity = _validate.positive("sensitivity", sensitivity)
    if delta is not None:
        delta = _validate.open_unit("delta", delta)
    return epsilon, delta, sensitivity


def numpy_textbook_laplace(epsilon: float, sensitivity: float = 1.0) -> Mechanism:
    """The textbook float Laplace of NumPy: the known-broken control."""
    epsilon, _, sensitivity = _check(epsilon, None, sensitivity)
    return Mechanism.from_callable(
        "numpy-textbook-laplace",
        TextbookLaplace(sensitivity / epsilon),
        claim="epsilon-DP",
        flaw="float rounding: x' + eta lies on a coarser grid than x + eta "
        "(Mironov 2012)",
        library="numpy",
    )


def numpy_snapped_laplace(epsilon: float, sensitivity: float = 1.0) -> Mechanism:
    """The discrete Laplace on the grid 2^-10 in NumPy: the correct control."""
    epsilon, _, sensitivity = _check(epsilon, None, sensitivity)
    return Mechanism.from_callable(
        "numpy-snapped-laplace",
        SnappedLaplace(sensitivity / epsilon),
        claim="epsilon-DP",
        library="numpy",
    )


def diffprivlib_laplace(epsilon: float, sensitivity: float = 1.0) -> Mechanism:
    """diffprivlib's ``Laplace(epsilon, sensitivity)``."""
    epsilon, _, sensitivity = _check(epsilon, None, sensitivity)
    _require("diffprivlib")
    options = (("epsilon", epsilon), ("sensitivity", sensitivity))
    return Mechanism.from_callable(
        "diffprivlib-laplace",
        DiffprivlibScalar("Laplace", options),
        claim="epsilon-DP",
        reproducible=False,
        library="diffprivlib",
    )


def diffprivlib_gaussian(
    epsilon: float, delta: float, sensitivity: float = 1.0
) -> Mechanism:
    """diffprivlib's ``Gaussian(epsilon, delta, sensitivity)`` (epsilon <= 1)."""
    epsilon, delta, sensitivity = _check(epsilon, delta, sensitivity)
    _require("diffprivlib")
    options = (("epsilon", epsilon), ("delta", delta), ("sensitivity", sensitivity))
    return Mechanism.from_callable(
        "diffprivlib-gaussian",
        DiffprivlibScalar("Gaussian", options),
        claim="(epsilon, delta)-DP",
        reproducible=False,
        library="diffprivlib",
    )


def diffprivlib_geometric(epsilon: float, sensitivity: float = 1.0) -> Mechanism:
    """diffprivlib's ``Geometric(epsilon, sensitivity)`` on integer inputs."""
    epsilon, _, sensitivity = _check(epsilon, None, sensitivity)
    _require("diffprivlib")
    options = (("epsilon", epsilon), ("sensitivity", int(round(sensitivity))))
    return Mechanism.from_callable(
        "diffprivlib-geometric",
        DiffprivlibScalar("Geometric", options),
        claim="epsilon-DP",
        reproducible=False,
        library="diffprivlib",
    )


def opendp_laplace(epsilon: float, sensitivity: float = 1.0) -> Mechanism:
    """OpenDP's ``make_laplace`` at scale ``sensitivity / epsilon``."""
    epsilon, _, sensitivity = _check(epsilon, None, sensitivity)
    _require("opendp")
    return Mechanism.from_callable(
        "opendp-laplace",
        OpenDPVector("make_laplace", sensitivity / epsilon),
        claim="epsilon-DP",
        reproducible=False,
        library="opendp",
    )


def opendp_gaussian(
    epsilon: float, delta: float, sensitivity: float = 1.0
) -> Mechanism:
    """OpenDP's ``make_gaussian`` at the classic scale :func:`gaussian_sigma`."""
    epsilon, delta, sensitivity = _check(epsilon, delta, sensitivity)
    _require("opendp")
    return Mechanism.from_callable(
        "opendp-gaussian",
        OpenDPVector("make_gaussian", gaussian_sigma(epsilon, delta, sensitivity)),
        claim="(epsilon, delta)-DP",
        reproducible=False,
        library="opendp",
    )


# name -> (factory, takes delta)
SUBJECTS: dict[str, tuple[Callable[..., Mechanism], bool]] = {
    "numpy-textbook-laplace": (numpy_textbook_laplace, False),
    "numpy-snapped-laplace": (numpy_snapped_laplace, False),
    "diffprivlib-laplace": (diffprivlib_laplace, False),
    "diffprivlib-gaussian": (diffprivlib_gaussian, True),
    "diffprivlib-geometric": (diffprivlib_geometric, False),
    "opendp-laplace": (opendp_laplace, False),
    "opendp-gaussian": (opendp_gaussian, True),
}


# --- library functions called on datasets ---------------------------------------------
#
# Each is called through its public API as its documentation shows it, once per
# release, on the first column of the dataset (records of one number), at the
# claim EPSILON with the bounds (0, 1) where the call takes bounds. Calls that raise
# release the exception's type (:class:`~mcdp.core.releases.PerCall`); the
# library's warnings are silenced, as they are not releases.

EPSILON = 1.0  # the claim of every dataset subject
BINS = 4  # the histograms' bins over [0, 1]


def _diffprivlib_tool(tool: str) -> Callable[[list[float]], object]:
    import diffprivlib.tools as tools
    from diffprivlib.accountant import BudgetAccountant

    call = getattr(tools, tool)
    if tool == "count_nonzero":
        options: dict = {}
    elif tool == "histogram":
        options = {"bins": BINS, "range": (0.0, 1.0)}
    else:
        options = {"bounds": (0.0, 1.0)}

    def release(column: list[float]):
        # a fresh accountant a call: the default one keeps every spend, and its
        # check sums them all, which makes a long audit quadratic
        accountant = BudgetAccountant()
        return call(np.array(column), epsilon=EPSILON, accountant=accountant, **options)

    return release


def _opendp_pipeline(query: str) -> Callable[[list[float]], object]:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = (
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.symmetric_distance(),
    )
    if query == "sum":
        pipeline = space >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_sum()
    else:
        pipeline = space >> dp.t.then_count()
    # the scale that OpenDP's own map says spends EPSILON, as its docs calibrate
    scale = dp.binary_search_param(
        lambda s: pipeline >> dp.m.then_laplace(scale=s), d_in=1, d_out=EPSILON
    )
    return pipeline >> dp.m.then_laplace(scale=scale)


def _python_dp(aggregate: str) -> Callable[[list[float]], object]:
    from pydp.algorithms import laplacian

    def release(column: list[float]):
        if aggregate == "Count":
            algorithm = laplacian.Count(epsilon=EPSILON, dtype="float")
        else:
            algorithm = getattr(laplacian, aggregate)(
                epsilon=EPSILON, lower_bound=0.0, upper_bound=1.0, dtype="float"
            )
        return algorithm.quick_result(column)

    return release


def _pipeline_dp_sum() -> Callable[[list[float]], object]:
    import pipeline_dp

    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        metrics=[pipeline_dp.Metrics.SUM],
        max_partitions_contributed=1,
        max_contributions_per_partition=1,
        min_value=0.0,
        max_value=1.0,
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda row: row[0],
        partition_extractor=lambda row: 0,
        value_extractor=lambda row: row[1],
    )

    def release(column: list[float]):
        accountant = pipeline_dp.NaiveBudgetAccountant(
            total_epsilon=EPSILON, total_delta=0.0
        )
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
        rows = list(enumerate(column))  # one record per privacy unit
        result = engine.aggregate(rows, params, extractors, public_partitions=[0])
        accountant.compute_budgets()
        return [tuple(metrics) for _, metrics in result]

    return release


# name -> (distribution, its one-release function's builder, argument)
_CALLS: dict[str, tuple[str, Callable[[str], Callable[[list[float]], object]], str]]
_CALLS = {
    **{
        f"diffprivlib.tools.{tool}": ("diffprivlib", _diffprivlib_tool, tool)
        for tool in ("mean", "var", "sum", "count_nonzero", "histogram")
    },
    "opendp clamp>sum>laplace": ("opendp", _opendp_pipeline, "sum"),
    "opendp count>laplace": ("opendp", _opendp_pipeline, "count"),
    **{
        f"pydp.{a}": ("python-dp", _python_dp, a)
        for a in ("BoundedMean", "BoundedSum", "Count")
    },
    "pipeline_dp.DPEngine SUM": ("pipeline-dp", lambda _: _pipeline_dp_sum(), ""),
}


@functools.cache
def _release(call: str) -> Callable[[list[float]], object]:
    """The one-release function of a call, built once a process (OpenDP's
    pipeline with its calibration, not once a batch)."""
    _, builder, argument = _CALLS[call]
    return builder(argument)


@dataclasses.dataclass(frozen=True)
class LibraryCall:
    """``fn(rng, data, n)``: ``n`` calls of a library function (a key of
    ``_CALLS``) on the dataset's first column, as a list of Python floats; ``rng``
    is not used: these libraries draw from their own or the system's randomness."""

    call: str

    def __call__(self, rng: np.random.Generator, data: np.ndarray, n: int) -> list:
        import warnings

        from mcdp.core.releases import PerCall

        release = _release(self.call)
        column = [float(v) for v in data[:, 0]]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return PerCall(lambda _rng, _data: release(column))(rng, data, n)


@dataclasses.dataclass(frozen=True)
class DatasetSubject:
    """A library call audited on datasets: its claim's relation and the records
    its documentation admits (``records``: ``"any"`` float64, ``"no-nan"``, or
    ``"bounded"`` to [0, 1])."""

    name: str
    call: str
    relation: str
    records: str = "any"

    @property
    def distribution(self) -> str:
        """The library's distribution name (``pip install``)."""
        return _CALLS[self.call][0]

    @property
    def module(self) -> str:
        """The library's module name (``import``)."""
        return {"python-dp": "pydp"}.get(self.distribution, self.distribution).replace(
            "-", "_"
        )

    def domain(self, max_size: int = 100):
        from mcdp.core.datasets import DatasetDomain

        if self.records == "bounded":
            return DatasetDomain.of(self.relation, 1, 0.0, 1.0, False, max_size)
        if self.records == "no-nan":  # every float but NaN, in no bounds
            return DatasetDomain.of(
                self.relation, 1, -math.inf, math.inf, False, max_size
            )
        return DatasetDomain.of(self.relation, 1, 0.0, 1.0, True, max_size)

    def mechanism(self, max_size: int = 100) -> Mechanism:
        """The black box, its library's version named; ImportError without it."""
        _require(self.module)
        return Mechanism.from_callable(
            self.name,
            LibraryCall(self.call),
            claim=f"{EPSILON:g}-DP under {self.relation}",
            reproducible=False,
            library=self.distribution,
            domain=self.domain(max_size),
        )


DATASET_SUBJECTS: dict[str, DatasetSubject] = {
    s.name: s
    for s in (
        DatasetSubject("diffprivlib-mean", "diffprivlib.tools.mean", "replace-one"),
        DatasetSubject(
            "diffprivlib-mean-add-remove", "diffprivlib.tools.mean", "add-remove",
            "bounded",
        ),
        DatasetSubject("diffprivlib-var", "diffprivlib.tools.var", "replace-one"),
        DatasetSubject("diffprivlib-sum", "diffprivlib.tools.sum", "replace-one"),
        DatasetSubject(
            "diffprivlib-sum-add-remove", "diffprivlib.tools.sum", "add-remove",
            "bounded",
        ),
        DatasetSubject(
            "diffprivlib-count-nonzero", "diffprivlib.tools.count_nonzero",
            "replace-one",
        ),
        DatasetSubject(
            "diffprivlib-histogram", "diffprivlib.tools.histogram", "replace-one",
            "bounded",
        ),
        DatasetSubject(
            "diffprivlib-histogram-add-remove", "diffprivlib.tools.histogram",
            "add-remove",
        ),
        DatasetSubject(
            "opendp-sum", "opendp clamp>sum>laplace", "add-remove", "no-nan"
        ),
        DatasetSubject("opendp-count", "opendp count>laplace", "add-remove"),
        DatasetSubject("pydp-mean", "pydp.BoundedMean", "add-remove"),
        DatasetSubject("pydp-sum", "pydp.BoundedSum", "add-remove"),
        DatasetSubject("pydp-count", "pydp.Count", "add-remove"),
        DatasetSubject("pipeline-dp-sum", "pipeline_dp.DPEngine SUM", "add-remove"),
    )
}  # fmt: skip
