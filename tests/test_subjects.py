"""Real subjects: the NumPy controls always; diffprivlib's and OpenDP's mechanisms
where the extra ``mcdp[audit-libs]`` is installed (skipped cleanly otherwise)."""

import numpy as np
import pytest
from scipy import stats

import mcdp
from mcdp import subjects
from mcdp.attacks import auto_attack, float_support_attack

from conftest import FAIL_PROB, SEED

ATTACK = float_support_attack(train_draws=16_384)


def _audit(mech, epsilon=1.0, delta=0.0, draws=16_384):
    return mcdp.audit_delta(
        mech, epsilon, delta, 1, draws, pair="scalar-0-1", attack=ATTACK, seed=SEED
    )


def test_numpy_controls_are_reproducible_and_named():
    textbook = subjects.numpy_textbook_laplace(1.0)
    first, again = _audit(textbook), _audit(textbook)
    assert first.counts == again.counts and first.reproducible
    assert first.violated and first.library == f"numpy=={np.__version__}"
    assert first.callable == "mcdp.subjects:TextbookLaplace"
    assert not _audit(subjects.numpy_snapped_laplace(1.0)).violated


def test_snapped_laplace_is_a_discrete_laplace():
    """P[y = x] = tanh(g / 2b) for the two-sided geometric on the grid g."""
    rng = np.random.default_rng(SEED)
    n, scale = 200_000, 2.0**-8
    y = subjects.SnappedLaplace(scale)(rng, np.array([1.0]), n)
    p = np.tanh(2.0**-subjects.SNAP_BITS / (2 * scale))
    assert abs(np.mean(y == 1.0) - p) < 4.5 * np.sqrt(p * (1 - p) / n)
    assert np.all(np.round(y * 2**subjects.SNAP_BITS) == y * 2**subjects.SNAP_BITS)


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: subjects.numpy_textbook_laplace(0.0), "epsilon"),
        (lambda: subjects.numpy_snapped_laplace(1.0, sensitivity=-1), "sensitivity"),
        (lambda: subjects.opendp_gaussian(0.5, 2.0), "delta"),
    ],
)
def test_bad_calibrations_name_the_argument(call, fragment):
    with pytest.raises(ValueError, match=fragment):
        call()


@pytest.mark.audit_libs
@pytest.mark.parametrize(
    "name, refuted",
    [
        ("diffprivlib-laplace", True),  # a float Laplace: y = 1 - b S on 2^-53
        ("diffprivlib-gaussian", True),
        ("diffprivlib-geometric", False),
        ("opendp-laplace", False),  # sampled on a fine grid, exactly
        ("opendp-gaussian", False),
    ],
)
def test_library_mechanisms(name, refuted):
    pytest.importorskip("diffprivlib" if name.startswith("diff") else "opendp")
    factory, takes_delta = subjects.SUBJECTS[name]
    epsilon, delta = (0.5, 1e-5) if takes_delta else (1.0, 0.0)
    mech = factory(epsilon, delta) if takes_delta else factory(epsilon)
    r = _audit(mech, epsilon, delta)
    assert r.reproducible is False and r.library.startswith(name.split("-")[0])
    assert r.violated is refuted


@pytest.mark.audit_libs
@pytest.mark.parametrize(
    "name",
    [
        "diffprivlib-geometric",
        # OpenDP's exact samplers: 53 s and 133 s of the default run on 2 cores
        pytest.param("opendp-laplace", marks=pytest.mark.slow),
        pytest.param("opendp-gaussian", marks=pytest.mark.slow),
    ],
)
def test_correct_library_mechanisms_are_not_flagged_over_seeds(name):
    """A mechanism sampled exactly on one grid for both inputs satisfies its claim,
    so every flag of a 95 % bound is a false alarm. These libraries draw from their
    own randomness, so the runs are independent whatever the seeds; over 20 runs the
    flags stay at most the binomial quantile at FAIL_PROB (1 expected)."""
    pytest.importorskip("diffprivlib" if name.startswith("diff") else "opendp")
    runs, alpha = 20, 0.05
    factory, takes_delta = subjects.SUBJECTS[name]
    epsilon, delta = (0.5, 1e-5) if takes_delta else (1.0, 0.0)
    mech = factory(epsilon, delta) if takes_delta else factory(epsilon)
    attack = float_support_attack(train_draws=4000)
    flags = sum(
        mcdp.audit_delta(
            mech, epsilon, delta, 1, 4000, pair="scalar-0-1", attack=attack, seed=s
        ).violated
        for s in range(SEED, SEED + runs)
    )
    assert flags <= stats.binom.isf(FAIL_PROB, runs, alpha)


# --- library functions called on datasets ---------------------------------------------

SMALL_AUTO = auto_attack(train_draws=4000, select_draws=4000)


def _dataset_audit(name: str, d, d_prime, draws: int = 8000, seed: int = SEED):
    subject = subjects.DATASET_SUBJECTS[name]
    pytest.importorskip(subject.module)
    spec = mcdp.AuditSpec(
        subject.mechanism(), subjects.EPSILON, pair=mcdp.Datasets.of(d, d_prime),
        attack=SMALL_AUTO, seed=seed,
    )  # fmt: skip
    return mcdp.run(spec, mcdp.Draws(draws))


def test_dataset_subjects_name_their_claims_and_domains():
    for name, subject in subjects.DATASET_SUBJECTS.items():
        domain = subject.domain()
        assert domain.relation == subject.relation and domain.width == 1
        assert subject.distribution in ("diffprivlib", "opendp", "python-dp",
                                        "pipeline-dp")  # fmt: skip
        assert domain.any_records is (subject.records == "any"), name


@pytest.mark.audit_libs
def test_a_library_call_releases_what_the_library_returns_or_raises():
    pytest.importorskip("diffprivlib")
    call = subjects.LibraryCall("diffprivlib.tools.mean")
    empty = call(np.random.default_rng(SEED), np.zeros((0, 1)), 3)
    assert [type(r).__name__ for r in empty] == ["Raised"] * 3
    assert empty[0].name == "ZeroDivisionError"  # the mean of no records
    nan = call(np.random.default_rng(SEED), np.array([[np.nan]]), 2)
    assert all(np.isnan(v) for v in nan)  # np.clip keeps NaN, and so does the noise


@pytest.mark.audit_libs
@pytest.mark.parametrize(
    "name, d, d_prime",
    [
        # np.clip lets the NaN through: every release of D' is NaN
        ("diffprivlib-mean", [[0.5]], [[np.nan]]),
        # the output is truncated to [0, size]: the empty dataset releases 0 always
        ("diffprivlib-sum-add-remove", [], [[1.0]]),
        # DPEngine.aggregate raises on the empty dataset ("col must be non-empty")
        ("pipeline-dp-sum", [], [[0.5]]),
        # and a NaN value makes the released sum NaN
        ("pipeline-dp-sum", [[0.5]], [[0.5], [np.nan]]),
    ],
)
def test_library_bugs_on_their_witnesses(name, d, d_prime):
    r = _dataset_audit(name, np.reshape(d, (-1, 1)), d_prime)
    assert r.violated and r.epsilon_lower > 3


@pytest.mark.audit_libs
def test_a_per_bin_histogram_spends_twice_its_claim_under_replace_one():
    """Moving a record between two bins changes both counts by 1, each noised at
    epsilon: the true loss is 2. At 20,000 draws the bound clears 1."""
    r = _dataset_audit("diffprivlib-histogram", [[0.1]], [[0.9]], draws=20_000)
    assert r.violated and 1 < r.epsilon_lower <= 2


@pytest.mark.audit_libs
@pytest.mark.slow
@pytest.mark.parametrize(
    "name, d, d_prime",
    [("opendp-count", [], [[0.5]]), ("opendp-sum", [[0.0]], [[0.0], [1.0]])],
)
def test_a_correct_pipeline_is_not_flagged_over_seeds(name, d, d_prime):
    """OpenDP's pipelines satisfy their claim (the count's sensitivity is 1, the
    clamped sum's 1 plus its float error, which OpenDP's own map charges), so
    every flag of a 95 % bound is a false alarm; over 20 independent runs the
    flags stay at most the binomial quantile at FAIL_PROB. OpenDP draws from the
    system's randomness, so the runs are independent whatever the seeds."""
    runs, alpha = 20, 0.05
    d = np.reshape(d, (-1, 1))
    flags = sum(
        _dataset_audit(name, d, d_prime, draws=8000, seed=s).violated
        for s in range(SEED, SEED + runs)
    )
    assert flags <= stats.binom.isf(FAIL_PROB, runs, alpha)
