"""The names earlier versions used still name the same objects (pure renames)."""

import copy
import pickle

import jax
import numpy as np
import pytest

import mcdp
import mcdp.experiments
import mcdp.records
import mcdp.sensitivity
from mcdp.core import records
from mcdp.experiments import acl2022, suite, trlaplace
from mcdp.mechanisms import MECHANISMS, Mechanism, _base


def _sample(key, x, params):
    return x


def _calibration(epsilon, dim):
    return None


def _other_calibration(epsilon, dim):
    return 0


def _host(rng, x, n):
    return rng.random((n, len(x)))


def test_the_grid_classes_keep_their_earlier_names():
    assert mcdp.GridSpec is mcdp.Acl2022Grid is mcdp.experiments.Acl2022Grid
    assert mcdp.E4Spec is mcdp.TrLaplaceGrid is mcdp.experiments.TrLaplaceGrid
    assert mcdp.experiments.SuiteSpec is mcdp.experiments.SuiteGrid
    assert acl2022.GridSpec is acl2022.Acl2022Grid
    assert trlaplace.E4Spec is trlaplace.TrLaplaceGrid
    assert suite.SuiteSpec is suite.SuiteGrid
    assert mcdp.experiments.GRIDS == {
        "acl2022": mcdp.experiments.Acl2022Grid,
        "trlaplace": mcdp.experiments.TrLaplaceGrid,
        "benchmarks": mcdp.experiments.SuiteGrid,
    }
    for name in ("Acl2022Grid", "TrLaplaceGrid", "GridSpec", "E4Spec"):
        assert name in mcdp.__all__
    for name in ("Acl2022Grid", "TrLaplaceGrid", "SuiteGrid"):
        assert getattr(mcdp.experiments, name).__name__ == name
        assert name in mcdp.experiments.__all__
    for name in ("GridSpec", "E4Spec", "SuiteSpec"):
        assert name in mcdp.experiments.__all__


def test_the_search_results_keep_their_earlier_names():
    assert mcdp.SearchResult is mcdp.InputSearchResult is records.InputSearchResult
    assert records.SearchResult is records.InputSearchResult
    assert mcdp.records.SearchResult is records.InputSearchResult
    assert {"SearchResult", "InputSearchResult"} <= set(records.__all__)
    assert {"SearchResult", "InputSearchResult"} <= set(mcdp.__all__)
    assert mcdp.sensitivity.SearchResult is mcdp.sensitivity.SensitivitySearchResult
    assert records.InputSearchResult.__name__ == "InputSearchResult"


def test_the_clippings_keep_their_earlier_names():
    assert _base.clip_l2 is _base.clip_l2_by_params
    assert mcdp.sensitivity.clip_l2 is mcdp.sensitivity.l2_clipper
    assert MECHANISMS["adept"].transform is _base.clip_l2_by_params


def test_e2_params_is_the_earlier_name_of_calibrate_sanity_check():
    old = Mechanism("m", _sample, e2_params=_calibration)
    new = Mechanism("m", _sample, calibrate_sanity_check=_calibration)
    positional = Mechanism("m", _sample, _calibration)
    assert type(old) is Mechanism
    assert old.calibrate_sanity_check is _calibration
    assert old.e2_params is _calibration
    assert old == new == positional and hash(old) == hash(new) == hash(positional)
    assert Mechanism("m", _sample).e2_params is None
    for m in MECHANISMS.values():
        assert m.e2_params is m.calibrate_sanity_check
    with pytest.raises(AttributeError):
        old.e2_params = _other_calibration


@pytest.mark.parametrize(
    "args, kwargs",
    [
        (("m", _sample), {"calibrate_sanity_check": _calibration}),
        (("m", _sample, _calibration), {}),
    ],
)
def test_both_names_at_once_are_refused(args, kwargs):
    with pytest.raises(ValueError, match="calibrate_sanity_check.*e2_params") as info:
        Mechanism(*args, e2_params=_other_calibration, **kwargs)
    assert "\n" not in str(info.value)


def test_the_mechanism_record_still_behaves_as_a_named_tuple():
    m = Mechanism("m", _sample, _calibration, claim="epsilon-DP")
    assert Mechanism._fields[:4] == (
        "name",
        "sample",
        "calibrate_sanity_check",
        "log_round_one",
    )
    assert m._asdict()["calibrate_sanity_check"] is _calibration
    assert m[2] is _calibration
    replaced = m._replace(claim=None)
    assert type(replaced) is Mechanism and replaced.claim is None
    assert replaced.calibrate_sanity_check is _calibration
    renamed = m._replace(e2_params=_other_calibration)
    assert renamed.calibrate_sanity_check is _other_calibration
    with pytest.raises(ValueError, match="both"):
        m._replace(e2_params=_calibration, calibrate_sanity_check=_calibration)
    for twin in (pickle.loads(pickle.dumps(m)), copy.copy(m), copy.deepcopy(m)):
        assert type(twin) is Mechanism and twin == m and hash(twin) == hash(m)
    leaves, tree = jax.tree.flatten(m)
    assert jax.tree.unflatten(tree, leaves) == m
    assert not hasattr(m, "__dict__")


def test_from_callable_still_makes_a_mechanism():
    m = Mechanism.from_callable("black-box", _host)
    assert type(m) is Mechanism and m.host_sample is _host
    assert m.e2_params is m.calibrate_sanity_check is None
    assert pickle.loads(pickle.dumps(m)) == m
    y = m.host_sample(np.random.default_rng(0), np.zeros(3), 2)
    assert y.shape == (2, 3)
