r"""The benchmark suite of the auditing literature: which case audits what.

StatDP (Ding et al., *Detecting Violations of Differential Privacy*, CCS 2018) and
DP-Sniper (Bichsel et al., *DP-Sniper: Black-Box Discovery of Differential Privacy
Violations using Classifiers*, S&P 2021) evaluate on these mechanisms; their
definitions come from Ding et al. (noisy histograms, Report Noisy Max), Lyu, Su and
Li (VLDB 2017; Sparse Vector), Wang et al. (PLDI 2019; prefix sums and Numerical
Sparse Vector), Balcer and Vadhan (2018; the truncated geometric), Erlingsson et al.
(CCS 2014; RAPPOR) and Mironov (CCS 2012; the float Laplace and its snapping
repair). :data:`SUITE` maps each mechanism name to
its default input length, the claimed epsilon it is audited at, and the named
pairs (:mod:`mcdp.pairs`) of DP-Sniper's pattern generator for it: the histograms
take the patterns in which one entry changes, the query-answer mechanisms all of
StatDP's patterns, the scalar mechanisms the two scalar pairs. RAPPOR claims no
epsilon (its parameters f, p, q fix its loss; DP-Sniper audits it without a
claim): its cases carry the suite's 0.1 only as the epsilon at which an
(epsilon, delta) audit reads the profile, and its calibration ignores it.

The exact loss of each case on its worst pattern at ε = 0.1 (``exact_epsilon`` of
each mechanism; computed with the parameters of :data:`SUITE`):

======================= ===== =================================== ==============
mechanism               claim worst pair                          true epsilon
======================= ===== =================================== ==============
``noisy-hist1``         0.1   ``one-above``                       0.1
``noisy-hist2``         0.1   ``one-above``                       10
``report-noisy-max1``   0.1   ``one-below-rest-above``            0.0946
``report-noisy-max2``   0.1   ``one-below-rest-above``            0.1
``report-noisy-max3``   0.1   ``all-above-all-below``             0.25
``report-noisy-max4``   0.1   every pattern                       inf
``svt1``                0.1   ``half-half``                       0.0885
``svt2``                0.1   ``half-half``                       0.0882
``svt3``                0.1   ``all-above-all-below``             0.5
``svt4``                0.1   ``half-half``                       0.1725
``svt5``                0.1   ``one-above`` (and most)            inf
``svt6``                0.1   ``half-half``                       0.4200
``svt34-parallel``      0.1   ``half-half``                       0.4874
``prefix-sum``          0.1   ``one-above-rest-below`` (and more) 1.0
``truncated-geometric`` 0.118 ``scalar-0-1``, ``scalar-1-2``      0.1178
``laplace-parallel``    0.1   ``scalar-0-1``, ``scalar-1-2``      0.1
``rappor``              –     ``scalar-0-1``                      0.30006
``one-time-rappor``     –     ``scalar-0-1``                      0.60050
``numerical-svt``       0.1   ``half-half``                       0.0805
``laplace-float``       0.1   ``scalar-0-1``, ``scalar-1-2``      inf
``snapping``            0.1   ``scalar-1-2``                      0.1 + 1.0e-12
======================= ===== =================================== ==============

Beside them: ``rappor`` on ``scalar-1-2`` 0.25005 (5 differing Bloom bits; the
worst pairs of its domain [-10, 10], such as 6 and 10, differ in 8 bits: 0.40008),
``one-time-rappor`` 0.50042 there (at most 0.80067); ``numerical-svt`` 0.0588 on
DP-Sniper's pair ``all-above-all-below``; ``snapping`` 0.1 + 5.3e-13 on
``scalar-0-1`` (over its claim by what 53-bit uniforms leave, Mironov's proof
assumes full-precision ones: no audit resolves it).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from mcdp.mechanisms.counting import geo_sample_epsilon
from mcdp.pairs import PATTERNS, SCALAR_PAIRS, SWAPPED

SUITE_EPSILON = 0.1  # the claimed epsilon of the suite (DP-Sniper's default)


class SuiteCase(NamedTuple):
    """One case of the suite: audit ``mechanism`` at ``epsilon`` on each of
    ``pairs`` (names of :func:`mcdp.pairs.make_pair`) with inputs of length
    ``dim``."""

    mechanism: str
    dim: int
    epsilon: float
    pairs: tuple[str, ...]


def _both_orders(*patterns: str) -> tuple[str, ...]:
    return tuple(p + s for p in patterns for s in ("", SWAPPED))


ONE_ENTRY_PAIRS = _both_orders("one-above", "one-below")
QUERY_PAIRS = _both_orders(*PATTERNS)


def _cases():
    yield SuiteCase("noisy-hist1", 5, SUITE_EPSILON, ONE_ENTRY_PAIRS)
    yield SuiteCase("noisy-hist2", 5, SUITE_EPSILON, ONE_ENTRY_PAIRS)
    for i in range(1, 5):
        yield SuiteCase(f"report-noisy-max{i}", 5, SUITE_EPSILON, QUERY_PAIRS)
    for name in ("svt1", "svt2", "svt3", "svt4", "svt5", "svt6", "svt34-parallel"):
        yield SuiteCase(name, 10, SUITE_EPSILON, QUERY_PAIRS)
    yield SuiteCase("prefix-sum", 10, SUITE_EPSILON, QUERY_PAIRS)
    # GeoSample(0.1, 5) is ln(1 + 2^-3)-DP: the claim that it is audited at
    yield SuiteCase(
        "truncated-geometric", 1, geo_sample_epsilon(SUITE_EPSILON), SCALAR_PAIRS
    )
    yield SuiteCase("laplace-parallel", 1, SUITE_EPSILON, SCALAR_PAIRS)
    # no claim: the epsilon is only where an (epsilon, delta) audit reads the profile
    yield SuiteCase("rappor", 1, SUITE_EPSILON, SCALAR_PAIRS)
    yield SuiteCase("one-time-rappor", 1, SUITE_EPSILON, SCALAR_PAIRS)
    yield SuiteCase("numerical-svt", 10, SUITE_EPSILON, QUERY_PAIRS)
    yield SuiteCase("laplace-float", 1, SUITE_EPSILON, SCALAR_PAIRS)
    yield SuiteCase("snapping", 1, SUITE_EPSILON, SCALAR_PAIRS)


SUITE: Mapping[str, SuiteCase] = MappingProxyType({c.mechanism: c for c in _cases()})

# The pair of DP-Sniper's published bound on each case (its logistic-regression run,
# ``eval_sp2021/reference-results/dd_search_reg_data.log``; for laplace-float and
# snapping its neural network on the float bits, ``floating_point_data.log`` and
# ``floating_fixed_data.log``; see benchmarks/peers.py),
# as the named pattern (or its swap: the pure-epsilon bound takes both orders). The
# comparison with the peers runs on these; where a pair's loss is infinite or lies in
# events too rare for 1e7 draws (svt3's worst pair: 0.5 from outputs of probability
# below 1e-6), theirs is also the one whose loss shows at that scale.
PEER_PAIRS: Mapping[str, str] = MappingProxyType(
    {
        "noisy-hist1": "one-above",
        "noisy-hist2": "one-above",
        "report-noisy-max1": "one-below-rest-above",
        "report-noisy-max2": "one-below-rest-above",
        "report-noisy-max3": "all-below",
        "report-noisy-max4": "all-above-all-below",
        "svt1": "x-shuffle",
        "svt2": "x-shuffle",
        "svt3": "half-half",
        "svt4": "half-half",
        "svt5": "half-half",
        "svt6": "x-shuffle",
        "svt34-parallel": "half-half",
        "prefix-sum": "all-below",
        "truncated-geometric": "scalar-1-2",
        "laplace-parallel": "scalar-0-1",
        "rappor": "scalar-0-1",
        "one-time-rappor": "scalar-0-1",
        "numerical-svt": "all-above-all-below",
        "laplace-float": "scalar-0-1",
        "snapping": "scalar-0-1",
    }
)
