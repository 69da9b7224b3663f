"""Dataset audits: datasets and their relations, releases of any structure, the
structure attack, the dataset search and the command line."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import mcdp
from mcdp.attacks import auto_attack
from mcdp.core.datasets import DatasetDomain, Datasets, load_datasets, neighbours
from mcdp.core.releases import PerCall, Raised, ReleaseCall, encode, structure
from mcdp.dataset_pairs import propose_datasets

SEED = 20261125
SMALL = dict(train_draws=20_000, select_draws=20_000)
# where only which attack wins is checked: a leak that every draw shows
TINY = dict(train_draws=5_000, select_draws=5_000)
NAN = math.nan


def test_neighbours_under_each_relation():
    a = np.array([[1.0], [2.0]])
    assert neighbours(a, np.array([[2.0], [1.0], [3.0]]), "add-remove")
    assert neighbours(np.zeros((0, 1)), np.array([[NAN]]), "add-remove")
    assert not neighbours(a, np.array([[1.0], [3.0], [4.0]]), "add-remove")
    assert neighbours(a, np.array([[3.0], [1.0]]), "replace-one")
    assert neighbours(np.array([[NAN], [1.0]]), np.array([[1.0], [NAN]]), "replace-one")
    assert not neighbours(a, np.array([[3.0], [4.0]]), "replace-one")
    assert not neighbours(a, np.array([[1.0]]), "replace-one")


def test_bad_datasets_and_domains_get_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match="d_prime"):
        Datasets.of([[1.0]], [[1.0, 2.0]])
    with pytest.raises(ValueError, match="--dim"):
        Datasets.of([1.0, 2.0], [1.0], width=2)
    with pytest.raises(ValueError, match="low <= high"):
        DatasetDomain.of("add-remove", 1, 1.0, 0.0)
    with pytest.raises(ValueError, match="dataset relation"):
        DatasetDomain.of("swap", 1)
    with pytest.raises(ValueError, match="max_size"):
        DatasetDomain.of("add-remove", 1, max_size=0)
    path = tmp_path / "x.npz"
    np.savez(path, d=np.zeros((1, 1)))
    with pytest.raises(ValueError, match="d_prime"):
        load_datasets(str(path))


def test_releases_of_any_structure_encode_keys_lengths_and_nonfinite_values():
    same, other = structure({"a": 1.0, "b": 2.0}), structure({"b": 5.0, "a": 7.0})
    assert same[0] == other[0] and same[1] == [1.0, 2.0]  # keys sorted
    distinct = [
        {"a": 1.0}, {"a": 1.0, "c": 1.0}, [1.0], [1.0, 2.0], None, NAN, math.inf,
        -math.inf, 1.0, Raised("ZeroDivisionError"), "x", (1.0,),
        np.array([1.0, NAN]), np.array([1.0, 2.0]),
    ]  # fmt: skip
    ids = [structure(r)[0] for r in distinct]
    assert len(set(ids)) == len(ids)
    rows = encode([{"a": 1.0}, {"a": NAN}, None], 3, 2)
    assert rows.shape == (3, 3) and np.all(np.isfinite(rows))
    assert rows[0, 1] == 1.0 and rows[1, 1] == 0.0 and rows[0, 0] != rows[1, 0]
    fast = encode(np.array([[1.0, 2.0], [NAN, 1.0]]), 2, 2)
    slow = encode([np.array([1.0, 2.0]), np.array([NAN, 1.0])], 2, 2)
    assert np.array_equal(fast, slow)
    # plain numbers, one per call, take a vectorised path: the rows that the
    # general one (forced by a None among them) gives
    numbers = [0.5, 1, np.float64(2.5), NAN, math.inf, -math.inf, np.int64(3)]
    general = encode([*numbers, None], len(numbers) + 1, 1)[:-1]
    assert np.array_equal(encode(numbers, len(numbers), 1), general)
    assert len(set(general[:, 0])) == 4  # a number, NaN, +inf, -inf
    with pytest.raises(ValueError, match="cannot be compared"):
        encode([object()], 1, 1)
    with pytest.raises(ValueError, match="3 releases"):
        encode([1.0, 2.0], 3, 1)


def test_a_call_that_raises_is_a_release():
    def f(rng, data):
        if len(data) == 0:
            raise ZeroDivisionError
        return float(np.mean(data))

    call = ReleaseCall(PerCall(f), 1)
    rng = np.random.default_rng(0)
    empty, one = call(rng, np.zeros((0, 1)), 4), call(rng, np.ones((1, 1)), 4)
    assert empty[0, 0] == structure(Raised("ZeroDivisionError"))[0]
    assert one[0, 0] != empty[0, 0] and one[0, 1] == 1.0


def keyed_counts(rng, data, n):
    """Categories read from the data: the keys of the release reveal a record."""
    keys = np.unique(data[:, 0])
    return [
        {float(k): float(np.sum(data[:, 0] == k)) + rng.laplace(0, 1) for k in keys}
        for _ in range(n)
    ]


def fixed_counts(rng, data, n):
    """The corrected twin: the categories are fixed in advance, and the noise is
    the two-sided geometric on integers (no float grid to leak): 0.5-DP, as one
    record moves one count by one."""
    p = -math.expm1(-0.5)
    return [
        {
            k: int(np.sum(data[:, 0] == k)) + int(rng.geometric(p) - rng.geometric(p))
            for k in (0.0, 1.0)
        }
        for _ in range(n)
    ]


def test_a_key_present_for_one_dataset_only_refutes_the_claim():
    mech = mcdp.Mechanism.from_callable("keyed-counts", keyed_counts)
    pair = Datasets.of([[0.0], [1.0]], [[0.0], [1.0], [2.0]])
    r = mcdp.run(
        mcdp.AuditSpec(mech, 1.0, pair=pair, attack=auto_attack(**TINY), seed=SEED),
        mcdp.Draws(5_000),
    )
    assert r.attack == "structure" and r.violated and r.epsilon_lower > 5
    # every release of D has a structure that only D produced (outcome 2), every
    # release of D' one that only D' produced (outcome 0)
    assert r.counts == [[0, 0, 5_000], [5_000, 0, 0]]
    assert r.datasets == {"d": [[0.0], [1.0]], "d_prime": [[0.0], [1.0], [2.0]]}
    assert r.releases["raised"] == [0.0, 0.0] and r.releases["structures"] == [1, 1]
    assert json.loads(r.to_json())["datasets"]["d_prime"][2] == [2.0]


@pytest.mark.slow
def test_the_corrected_twin_is_not_refuted():
    """Claimed 1, true 0.5: a refutation would need a bound wrong by 0.5."""
    mech = mcdp.Mechanism.from_callable("fixed-counts", fixed_counts)
    pair = Datasets.of([[0.0], [1.0]], [[0.0], [1.0], [1.0]])
    r = mcdp.run(
        mcdp.AuditSpec(mech, 1.0, pair=pair, attack=auto_attack(**SMALL), seed=SEED),
        mcdp.Draws(20_000),
    )
    assert not r.violated


def test_datasets_must_be_neighbours_under_the_declared_relation():
    domain = DatasetDomain.of("replace-one", 1)
    mech = mcdp.Mechanism.from_callable("keyed", keyed_counts, domain=domain)
    with pytest.raises(ValueError, match="neighbours under 'replace-one'"):
        mcdp.AuditSpec(mech, 1.0, pair=Datasets.of([[0.0]], [[0.0], [1.0]]))
    with pytest.raises(ValueError, match="Datasets"):
        mcdp.AuditSpec(mech, 1.0, pair="axis")
    with pytest.raises(ValueError, match="black boxes"):
        mcdp.AuditSpec("laplace", 1.0, pair=Datasets.of([[0.0]], [[1.0]]))


def test_proposals_lie_in_the_domain_and_try_what_breaks_code():
    domain = DatasetDomain.of("add-remove", 2, 0.0, 1.0, max_size=50)
    found = propose_datasets(domain, 200, np.random.default_rng(0))
    assert len(found) == 200 and all(domain.contains(c.pair) for c in found)
    labels = {c.label for c in found}
    for want in ("empty+nan", "one+far-above", "categories+typical", "large-50+nan",
                 "empty+-inf", "one+just-inside-high", "one+nan[col0]"):  # fmt: skip
        assert want in labels
    replace = DatasetDomain.of("replace-one", 1, 0.0, 1.0, any_records=False)
    for c in propose_datasets(replace, 64, np.random.default_rng(0)):
        assert len(c.pair.d) == len(c.pair.d_prime) > 0
        assert np.all(np.isfinite(c.pair.d_prime)) and replace.contains(c.pair)


def clipped_mean(rng, data, n):
    """np.clip lets NaN through: one NaN record makes the whole release NaN."""
    x = np.clip(data[:, 0], 0.0, 1.0)
    m = max(len(x), 1)
    return np.full(n, x.sum() / m) + rng.laplace(0, 1.0 / m, size=n)


def test_the_dataset_search_finds_nan_through_clip(capsys):
    domain = DatasetDomain.of("add-remove", 1, 0.0, 1.0)
    mech = mcdp.Mechanism.from_callable("clipped-mean", clipped_mean, domain=domain)
    cheap = auto_attack(
        train_draws=5_000, select_draws=5_000, candidates=("structure", "learned")
    )
    r = mcdp.search(
        mech, 1.0, budget=8, confirm=2, draws=20_000, screen_draws=5_000,
        seed=SEED, attack=auto_attack(**TINY), screen_attack=cheap,
    )  # fmt: skip
    assert r.violated and "nan" in r.witness_label and r.epsilon_lower > 5
    assert r.domain["relation"] == "add-remove" and len(r.candidates) == 8
    assert isinstance(r.witness[0], list) and len(r.witness) == 2
    from mcdp.cli._text import render

    text = render(r)
    assert f"witness {r.witness_label}: D = [" in text and "nan" in text


def test_cli_audits_a_function_on_two_datasets(tmp_path):
    (tmp_path / "keyed.py").write_text(
        "import numpy as np\n"
        "def counts(rng, data, n):\n"
        "    keys = np.unique(data[:, 0])\n"
        "    return [{float(k): 1.0 + rng.laplace(0, 1) for k in keys}\n"
        "            for _ in range(n)]\n"
    )
    np.savez(tmp_path / "pair.npz", d=np.array([0.0]), d_prime=np.array([0.0, 3.0]))
    cmd = [
        sys.executable, "-m", "mcdp", "audit", "--callable", "keyed:counts",
        "--epsilon", "1", "--datasets", "pair.npz", "--domain", "add-remove",
        "--draws", "5e3", "--train-draws", "5e3", "--select-draws", "5e3", "--json",
    ]  # fmt: skip
    out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, check=True)
    record = json.loads(out.stdout)
    assert record["violated"] and record["attack"] == "structure"
    bad = subprocess.run(
        cmd[:9] + ["empty.npz"] + cmd[10:], cwd=tmp_path, capture_output=True,
        text=True,
    )  # fmt: skip
    assert bad.returncode == 2 and "--datasets" in bad.stderr
    assert bad.stderr.count("\n") == 1
