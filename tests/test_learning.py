"""The learned attack's features, training and sample sizes (mcdp.learning and
mcdp.attacks.learned_sizes)."""

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special, stats

from mcdp import ceiling, learning
from mcdp.attacks import learned_sizes
from mcdp.sampling import cell_key

from conftest import FAIL_PROB, binomial_variance

# Agreement "to rounding" of two computations of one scorer, by the precision it
# trains in (learning.model_dtype): {dtype: (after a few Adam steps, one forward
# pass)}. Adam divides each step by the gradient's running size, so rounding in the
# gradients moves the weights by more than their own rounding: after 20-30 steps the
# MLP's float32 weights differed by up to 4e-5 of their largest (1e-12 in float64).
ROUNDING = {"float64": (1e-9, 1e-10), "float32": (1e-3, 1e-5)}


def _precision(scorer: learning.Scorer) -> str:
    """The dtype of ``scorer``'s weights."""
    return np.asarray(jax.tree.leaves(scorer.weights)[0]).dtype.name


def _mixed(rng, n):
    """Sparse Vector's svt3 shape: a code or a continuous value per coordinate."""
    y = rng.laplace(size=(n, 3))
    y[:, 0] = np.where(y[:, 0] < 0, -1000.0, y[:, 0])
    y[:, 2] = rng.integers(0, 4, size=n)
    return y


def test_atoms_are_the_values_of_positive_probability():
    y = _mixed(np.random.default_rng(0), 20_000)
    atoms = learning.find_atoms(y)
    assert atoms.shape == (3, 4)
    np.testing.assert_array_equal(atoms[0, :1], [-1000.0])
    assert np.isnan(atoms[0, 1:]).all()
    assert np.isnan(atoms[1]).all()  # a continuous coordinate repeats no value
    np.testing.assert_array_equal(atoms[2], [0.0, 1.0, 2.0, 3.0])


def test_continuous_outputs_have_no_atoms_and_hinges_at_their_quantiles():
    y = np.random.default_rng(1).laplace(size=(5000, 2))
    y[0, 1] = np.nan
    basis = learning.find_basis(y)
    assert basis.atoms.shape == (2, 0)
    levels = learning.KNOT_LEVELS
    np.testing.assert_allclose(basis.knots[0], np.quantile(y[:, 0], levels))
    np.testing.assert_allclose(basis.knots[1], np.nanquantile(y[:, 1], levels))
    with jax.enable_x64(True):
        phi = np.asarray(learning.features(y, basis))
    clean = np.where(np.isnan(y), 0.0, y)
    hinges = np.maximum(clean[:, :, None] - basis.knots[None], 0.0)
    hinges[0, 1] = 0.0  # a NaN output has no hinge
    expected = np.concatenate([clean, hinges.reshape(len(y), -1), np.isnan(y)], axis=1)
    np.testing.assert_array_equal(phi, expected)


def test_atom_features_mask_the_value_and_flag_the_atom():
    y = np.array([[-1000.0, 0.5], [2.0, 0.5], [np.nan, 3.0]])
    atoms = np.array([[-1000.0, np.nan], [0.5, np.nan]])
    knots = np.array([[1.0], [np.nan]])  # the second coordinate has no hinge
    with jax.enable_x64(True):
        phi = np.asarray(learning.features(y, learning.Basis(atoms, knots)))
    value = [[0.0, 0.0], [2.0, 0.0], [0.0, 3.0]]
    hinges = [[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]
    nan = [[0, 0], [0, 0], [1, 0]]
    hits = [[1, 0, 1, 0], [0, 0, 1, 0], [0, 0, 0, 0]]
    expected = np.concatenate([value, hinges, nan, hits], axis=1)
    np.testing.assert_array_equal(phi, expected)


def _basis_by_definition(y, knots=None):
    """find_basis' definition, column by column: numpy.unique's counts of the
    values other than NaN for the atoms, numpy.quantile of the values that are
    neither NaN nor atoms for the hinges."""
    y = y.reshape(len(y), -1)
    least = max(learning.ATOM_COUNT, learning.ATOM_SHARE * len(y))
    found = []
    for column in y.T:
        values, counts = np.unique(column[~np.isnan(column)], return_counts=True)
        frequent = np.argsort(-counts, kind="stable")[: learning.MAX_ATOMS]
        found.append(np.sort(values[frequent[counts[frequent] >= least]]))
    atoms = np.full((y.shape[1], max(map(len, found))), np.nan, dtype=y.dtype)
    for row, values in zip(atoms, found, strict=True):
        row[: len(values)] = values
    width = len(learning.KNOT_LEVELS if knots is None else knots)
    hinges = np.full((y.shape[1], width), np.nan, dtype=y.dtype)
    for j, column in enumerate(y.T):
        rest = column[~np.isnan(column) & ~np.isin(column, atoms[j])]
        if rest.size:
            hinges[j] = (
                np.quantile(rest, learning.KNOT_LEVELS) if knots is None else knots
            )
    return atoms, hinges


@pytest.mark.parametrize("cores", [1, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_basis_is_its_definition_exactly(monkeypatch, dtype, cores):
    """find_basis sorts each coordinate once and takes the atoms, their counts and
    the hinges from it: the atoms and hinges of the definition, to the last bit,
    on atoms beside continuous values, ties, NaN, infinities and signed zeros, a
    coordinate of atoms only and one of NaN only; with given knots too; one
    coordinate at a time, or three at once in threads of their own."""
    monkeypatch.setattr(learning, "usable_cores", lambda: cores)
    rng = np.random.default_rng(14)
    y = _mixed(rng, 30_000).astype(dtype)
    extra = rng.laplace(size=(30_000, 3)).astype(dtype)
    extra[:40, 0], extra[40:90, 0], extra[90:95, 0] = np.nan, -0.0, np.inf
    extra[95:120, 0], extra[120:130, 0] = 0.0, -np.inf
    extra[:, 1] = np.round(extra[:, 1] * 3)  # ties: atoms and a continuous rest
    extra[:, 2] = np.nan
    y = np.concatenate([y, extra], axis=1)
    for knots in (None, np.array([0.0, 1.0])):
        basis = learning.find_basis(y, knots)
        atoms, hinges = _basis_by_definition(y, knots)
        assert basis.atoms.dtype == basis.knots.dtype == dtype
        np.testing.assert_array_equal(basis.atoms, atoms)
        np.testing.assert_array_equal(basis.knots, hinges)


def test_input_knots_are_the_pairs_few_distinct_finite_values():
    pair = np.array([[2.0, 1.0, np.inf], [1.0, 0.0, np.nan]])
    np.testing.assert_array_equal(learning.input_knots(pair), [0.0, 1.0, 2.0])
    many = np.arange(2 * (learning.MAX_INPUT_KNOTS + 1)).reshape(2, -1)
    assert learning.input_knots(many) is None
    assert learning.input_knots(many[:, : learning.MAX_INPUT_KNOTS // 2]) is not None
    assert learning.input_knots(np.full((2, 3), np.nan)) is None


def test_given_knots_sit_on_every_coordinate_with_continuous_values():
    y = _mixed(np.random.default_rng(4), 20_000)
    basis = learning.find_basis(y, np.array([0.0, 1.0]))
    np.testing.assert_array_equal(basis.knots[:2], [[0.0, 1.0], [0.0, 1.0]])
    assert np.isnan(basis.knots[2]).all()  # atoms only: no hinge
    np.testing.assert_array_equal(basis.atoms, learning.find_atoms(y))


def test_ramps_are_the_hinges_cut_at_the_next_knot():
    """Ramp k is hinge k minus hinge k + 1 (the same span); the last is the open
    hinge; the other blocks are the moments' features."""
    y = np.array([[-2.0], [0.25], [1.0], [1.5], [7.0], [-1000.0]])
    basis = learning.Basis(np.array([[-1000.0]]), np.array([[0.0, 1.0, 2.0]]))
    with jax.enable_x64(True):
        value, hinges, *rest = learning.feature_parts(y, basis)
        r_value, ramps, *r_rest = learning.ramp_feature_parts(y, basis)
    hinges, ramps = np.asarray(hinges)[:, 0], np.asarray(ramps)[:, 0]
    np.testing.assert_array_equal(ramps[:, :2], hinges[:, :2] - hinges[:, 1:])
    np.testing.assert_array_equal(ramps[:, 2], hinges[:, 2])
    np.testing.assert_array_equal(ramps[:, 2], [0.0, 0.0, 0.0, 0.0, 5.0, 0.0])
    for a, b in zip([value, *rest], [r_value, *r_rest], strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_ramps_at_the_inputs_fit_the_laplace_log_likelihood_ratio():
    """Lap(1) at 0 against Lap(1) at 1: the log-likelihood ratio 1 - 2 clip(y, 0, 1)
    lies in the span of the value, the ramp from 0 to 1 and the hinge at 1, so the
    logit fitted on ramps at the inputs' values {0, 1} is the maximum-likelihood
    estimate of it. At each of 7 points its error is within 4.9 asymptotic
    standard errors (the delta method on the inverse Fisher information at the
    truth): a false-alarm rate of at most 7e-6, if the optimiser reaches the
    estimate. (On the draws of seeds 5-7 the ramps' errors are at most 1.3
    standard errors; Adam on the plain hinges at the same knots, the same span,
    left up to 3.3.)"""
    n = 100_000
    rng = np.random.default_rng(5)
    first, second = rng.laplace(size=(n, 1)), rng.laplace(size=(n, 1)) + 1.0
    grid = np.array([-3.0, -0.5, 0.25, 0.5, 0.75, 1.5, 4.0])
    with jax.enable_x64(True):
        scorer = learning.fit(
            cell_key(0, "fit"), first, second, feature_set="ramps",
            knots=np.array([0.0, 1.0]),
        )  # fmt: skip
        score = np.asarray(learning.SCORES_BY_FEATURES["ramps"]["logistic"](
            grid[:, None], scorer
        ))  # fmt: skip

    def design(y):  # the raw features that vary (value, two ramps) and a constant
        y = y[:, 0]
        return np.stack([y, np.clip(y, 0, 1), np.maximum(y - 1, 0), 1 + 0 * y], 1)

    truth = 1 - 2 * np.clip(grid, 0, 1)
    pooled = np.concatenate([first, second])
    llr = 1 - 2 * np.clip(pooled[:, 0], 0, 1)
    weight = 1 / (4 * np.cosh(llr / 2) ** 2)  # sigma (1 - sigma) at the true logit
    phi = design(pooled)
    information = (phi * weight[:, None]).T @ phi
    g = design(grid[:, None])
    se = np.sqrt(np.einsum("ij,jk,ik->i", g, np.linalg.inv(information), g))
    assert np.all(np.abs(score - truth) <= 4.9 * se), (score - truth) / se


@pytest.mark.parametrize("rows", [3000, 2 * learning.BATCH + 5])
def test_fit_separates_a_shift_in_full_batch_and_minibatches(rows):
    """Logistic regression on Lap(1) against Lap(1) + 1: the optimal logit is the
    log-likelihood ratio |y| - |y - 1|, increasing in y, so the fitted score must
    rank the means of the two samples' scores (first above second) by far."""
    rng = np.random.default_rng(2)
    first = rng.laplace(size=(rows // 2, 1)) + 1.0
    second = rng.laplace(size=(rows // 2, 1))
    with jax.enable_x64(True):
        scorer = learning.fit(cell_key(0, "fit"), first, second)
        s1 = np.asarray(learning.score_logistic(first, scorer))
        s2 = np.asarray(learning.score_logistic(second, scorer))
    # the scores' means differ by several standard errors of their difference
    gap = s1.mean() - s2.mean()
    error = np.sqrt(s1.var() / len(s1) + s2.var() / len(s2))
    assert gap > 10 * error


def _minibatch_outputs(seed: int, extra_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Two inputs' outputs in 2 coordinates, more than a batch of them (``BATCH +
    extra_rows`` and a few): Laplace values rounded to 0.1, an atom at -1 in the
    second coordinate, a shift of 0.5 in the second input."""
    rng = np.random.default_rng(seed)
    first = np.round(rng.laplace(size=(learning.BATCH + extra_rows + 7, 2)), 1)
    second = np.round(rng.laplace(size=(learning.BATCH + extra_rows + 3, 2)) + 0.5, 1)
    first[:500, 1] = second[:700, 1] = -1.0  # an atom
    return first, second


def _assert_same_scorer(a: learning.Scorer, b: learning.Scorer) -> None:
    """Every array of the two scorers equal to the last bit (NaN padding too)."""
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _sample_by_definition(first, second, knots=None):
    """training_sample's definition: the outputs pooled, shuffled where they are
    more than a batch, their basis, and one copy to the device."""
    pooled = np.concatenate([first, second])
    labels = np.concatenate([np.ones(len(first)), np.zeros(len(second))])
    if len(pooled) > learning.BATCH:
        order = np.random.default_rng(learning.SHUFFLE_SEED).permutation(len(pooled))
        pooled, labels = pooled[order], labels[order]
    dtype = jnp.result_type(float)
    basis = learning.find_basis(pooled, knots)
    return learning.TrainingSample(
        jnp.asarray(pooled, dtype),
        jnp.asarray(labels, dtype),
        jax.tree.map(lambda a: jnp.asarray(a, dtype), basis),
        min(len(pooled), learning.BATCH),
    )


@pytest.mark.parametrize("cores", [1, 4])
@pytest.mark.parametrize("x64", [True, False])
@pytest.mark.parametrize(
    "extra_rows", [-learning.BATCH // 2 - 100, -learning.BATCH // 2, 300]
)
def test_the_training_sample_built_in_pieces_is_its_definition(
    monkeypatch, x64, extra_rows, cores
):
    """The training sample is gathered on the host and written to the device a
    piece of rows at a time, its basis found a coordinate per thread: the pooled
    outputs (shuffled where they are more than a batch), their labels and basis to
    the last bit, in outputs of several coordinates, of two dtypes, with signed
    zeros (equals, whose places after a sort depend on the order they came in: a
    basis of the unshuffled columns fails here), NaN and atoms, a last, shorter
    piece, and given knots."""
    first, second = _minibatch_outputs(6, extra_rows)
    first, second = np.repeat(first, 3, axis=1), np.repeat(second, 3, axis=1)
    first[:20, 0], first[20:60, 0], second[:30, 0] = -0.0, 0.0, np.nan
    second[30:90, 2] = -0.0
    first = first.reshape(len(first), 2, 3)
    second = second.reshape(len(second), 2, 3).astype(np.float32)
    monkeypatch.setattr(learning, "SAMPLE_PIECE_ROWS", 10_007)
    monkeypatch.setattr(learning, "usable_cores", lambda: cores)  # bases in threads
    for knots in (None, np.array([-0.5, 0.0, 1.0])):
        with jax.enable_x64(x64):
            built = learning.training_sample(first, second, knots)
            expected = _sample_by_definition(first, second, knots)
        assert built.y.shape == (len(first) + len(second), 2, 3)
        assert built.batch == expected.batch
        arrays = [(built.y, expected.y), (built.labels, expected.labels)]
        arrays += list(zip(built.basis, expected.basis, strict=True))
        for x, y in arrays:
            assert x.dtype == y.dtype
            assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    with pytest.raises(ValueError, match="outputs of one shape"):
        learning.training_sample(first, second[:, :1])


@pytest.mark.parametrize(
    "model, feature_set", [("mlp", "moments"), ("logistic", "bits")]
)
def test_a_shared_training_sample_trains_the_scorer_of_the_outputs(model, feature_set):
    """The portfolio prepares one training sample for its scorers: a scorer trained
    on it is, to the last bit, the one trained on the outputs themselves (in
    minibatches of the fixed shuffle, with atoms and hinges)."""
    first, second = _minibatch_outputs(3, 0)
    with jax.enable_x64(True):
        key = cell_key(1, "fit")
        alone = learning.fit(
            key, first, second, model=model, feature_set=feature_set, steps=30
        )
        sample = learning.training_sample(first, second)
        shared = learning.fit(
            key, model=model, feature_set=feature_set, steps=30, sample=sample
        )
    _assert_same_scorer(alone, shared)
    with pytest.raises(ValueError, match="training sample"):
        learning.fit(key)
    with pytest.raises(ValueError, match="not both"):
        learning.fit(key, first, second, sample=sample)


def test_the_head_of_a_training_sample_is_its_first_minibatches():
    """The portfolio's screening trains its scorers on a share of the training
    sample's minibatches (:func:`mcdp.learning.sample_head`): the first ones, at
    least one, their rows and labels as they are, the basis and batch of the whole
    sample; for few distinct outputs, the counts of those minibatches."""
    first, second = _minibatch_outputs(2, 3 * learning.BATCH // 2)  # 5 minibatches
    with jax.enable_x64(True):
        sample = learning.training_sample(first, second)
        heads = {share: learning.sample_head(sample, share) for share in (0.4, 0.1, 1)}
    batch = sample.batch
    assert sample.labels.shape[0] // batch == 5
    for share, blocks in ((0.4, 2), (0.1, 1), (1, 5)):
        head = heads[share]
        rows = blocks * batch
        assert np.asarray(head.y).tobytes() == np.asarray(sample.y[:rows]).tobytes()
        assert np.array_equal(np.asarray(head.labels), np.asarray(sample.labels)[:rows])
        assert head.basis is sample.basis and head.batch == batch
    discrete = _discrete_outputs(6, 2 * learning.BATCH)  # 4 minibatches
    pooled = np.concatenate(discrete)
    _, firsts, inverse = np.unique(
        pooled, axis=0, return_index=True, return_inverse=True
    )
    with jax.enable_x64(True):
        counted = learning.training_sample(
            *discrete, distinct=(firsts, inverse.ravel())
        )
        head = learning.sample_head(counted, 0.5)
    counts = np.asarray(counted.distinct.counts)
    assert counts.shape[0] == 4
    assert np.array_equal(np.asarray(head.distinct.counts), counts[:2])
    assert head.distinct.rows is counted.distinct.rows and head.y is counted.y


def _discrete_outputs(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Outputs of 3 coordinates of few values each, whose law differs by input."""
    rng = np.random.default_rng(seed)
    values = np.array([-1.0, 0.0, 2.5])
    first = values[rng.choice(3, size=(n, 3), p=[0.5, 0.3, 0.2])]
    second = values[rng.choice(3, size=(n, 3), p=[0.3, 0.4, 0.3])]
    return first, second


@pytest.mark.parametrize(
    "model, feature_set",
    [("logistic", "moments"), ("mlp", "moments"), ("logistic", "bits")],
)
def test_few_distinct_outputs_train_on_their_counts_as_on_every_row(model, feature_set):
    """Where the training outputs take few values, the scorers train on those
    values, each counted as often as each minibatch holds it with each label. Per
    minibatch (two here, and a remainder that the steps skip), the counts are
    those of its rows in the fixed shuffle. The scorer is the one trained on every
    row to rounding: the same loss and gradient, summed in another order, agree to
    1e-9 of each array's largest weight (one row counted once too often, in one
    minibatch, moves them by 2e-3 to 3e-3 of it), and its scores order the
    distinct outputs alike. The sample with them holds the first minibatch of the
    pooled outputs alone, which standardises the features. A distinct output that
    is not finite leaves the sample without them, and with every pooled output;
    an output of -0.0, keyed by its bits as the portfolio keys them, is a distinct
    output of its own."""
    first, second = _discrete_outputs(6, learning.BATCH + 3000)
    pooled = np.concatenate([first, second])
    _, firsts, inverse = np.unique(
        pooled, axis=0, return_index=True, return_inverse=True
    )
    inverse = inverse.ravel()
    with jax.enable_x64(True):
        plain = learning.training_sample(first, second)
        counted = learning.training_sample(first, second, distinct=(firsts, inverse))
    batch, distinct = plain.batch, counted.distinct
    y, labels = np.asarray(plain.y), np.asarray(plain.labels)
    rows, counts = np.asarray(distinct.rows), np.asarray(distinct.counts)
    k = len(firsts)
    assert np.array_equal(rows[:k], pooled[firsts]) and (rows[k:] == rows[0]).all()
    assert counts.shape == (2, len(rows), 2) and len(y) > 2 * batch
    assert np.array_equal(np.asarray(counted.y), y[:batch])
    assert np.array_equal(np.asarray(counted.labels), labels)
    for b in range(2):
        block = slice(b * batch, (b + 1) * batch)
        for j in range(k):
            match = (y[block] == rows[j]).all(axis=1)
            assert counts[b, j, 0] == np.sum(match & (labels[block] == 1))
            assert counts[b, j, 1] == np.sum(match & (labels[block] == 0))
        assert counts[b, k:].sum() == 0 and counts[b].sum() == batch
    key = cell_key(5, "fit")
    with jax.enable_x64(True):
        scorers = [
            learning.fit(key, model=model, feature_set=feature_set, steps=30, sample=s)
            for s in (plain, counted)
        ]
        scores = [
            np.asarray(learning.SCORES_BY_FEATURES[feature_set][model](
                jnp.asarray(rows[:k]), scorer
            ))
            for scorer in scorers
        ]  # fmt: skip
    steps_rounding = ROUNDING[_precision(scorers[0])][0]
    for x, z in zip(*map(jax.tree.leaves, (s.weights for s in scorers)), strict=True):
        x, z = np.asarray(x), np.asarray(z)
        np.testing.assert_allclose(x, z, rtol=0, atol=steps_rounding * np.abs(x).max())
    assert np.array_equal(np.argsort(scores[0]), np.argsort(scores[1]))
    for value in (np.nan, -0.0):
        spoilt = first.copy()
        spoilt[7, 1] = value
        pooled = np.concatenate([spoilt, second])
        _, firsts, inverse = np.unique(
            pooled.view(np.int64), axis=0, return_index=True, return_inverse=True
        )  # by bits: -0.0 is not 0.0
        with jax.enable_x64(True):
            sample = learning.training_sample(
                spoilt, second, distinct=(firsts, inverse.ravel())
            )
        if np.isnan(value):
            assert sample.distinct is None
            assert sample.y.shape[0] == len(pooled)
        else:
            rows = np.asarray(sample.distinct.rows)[: len(firsts)]
            assert np.sum(np.signbit(rows) & (rows == 0)) == 1  # its own row
            assert sample.y.shape[0] == batch


@pytest.mark.parametrize(
    "model, feature_set", [("mlp", "moments"), ("logistic", "bits")]
)
def test_features_computed_once_or_every_step_train_the_same_scorer(
    monkeypatch, model, feature_set
):
    """Where they fit in memory, the training features are computed once (in one
    program, or in pieces past :data:`mcdp.learning.FEATURE_SCALARS`), else
    every step on its batch: on a CPU, the scorer is the same to the last bit (in
    minibatches, with atoms and hinges), so the machine's memory decides the time of
    a preparation and never its result. On a CPU the features computed once are
    also read minibatch by minibatch (:data:`mcdp.learning.BY_BATCH`), or sliced
    from those of every row: the same scorer again. Off a CPU the form follows the
    sample's size alone (:func:`mcdp.learning.features_fit`), and the forms'
    scorers agree to rounding: on an H200, the bit features' weights differed in
    their last bit or two (8e-15 relative at most)."""
    assert learning._by_batch(4, "cpu") and not learning._by_batch(4, "gpu")
    assert not learning._by_batch(1, "cpu")
    assert not learning._by_batch(learning.BY_BATCH_BLOCKS + 1, "cpu")
    first, second = _minibatch_outputs(4, learning.BATCH)
    trained = []
    forms = ("one program", "in pieces", "every step")
    for form, by_batch in [(form, True) for form in forms] + [
        ("one program", False),
        ("in pieces", False),
    ]:
        once = form != "every step"
        monkeypatch.setattr(learning, "features_fit", lambda *_, once=once, **__: once)
        scalars = 0 if form == "in pieces" else 1 << 26
        monkeypatch.setattr(learning, "FEATURE_SCALARS", scalars)
        monkeypatch.setattr(learning, "BUILT_IN_PIECES", set(learning.FEATURE_SETS))
        monkeypatch.setattr(learning, "BY_BATCH", by_batch)
        key = cell_key(2, "fit")
        with jax.enable_x64(True):
            trained.append(
                learning.fit(
                    key, first, second, model=model, feature_set=feature_set, steps=30
                )
            )
    for other in trained[1:]:
        if jax.default_backend() == "cpu":
            _assert_same_scorer(trained[0], other)
        else:
            for x, y in zip(*map(jax.tree.leaves, (trained[0], other)), strict=True):
                np.testing.assert_allclose(
                    np.asarray(x), np.asarray(y), rtol=1e-12, atol=1e-14
                )


@pytest.mark.parametrize(
    "model, feature_set", [("logistic", "moments"), ("mlp", "bits")]
)
def test_features_zero_on_every_training_row_are_left_out_of_the_steps(
    monkeypatch, model, feature_set
):
    """A standardised feature that is 0 on every row the steps read has a gradient
    of 0 at every step, and Adam leaves its weights where they started: the steps
    train the other features' weights alone, and the scorer holds the left-out
    ones at their initial values: 0, the MLP's first layer too (its other rows
    start at random). The scorer is the one trained on every feature, up to the
    rounding of its sums: its left-out weights to the bit, the others within 1e-12
    of the largest (1e-5 in the MLP's float32). A coordinate that is 0 in the first
    minibatch (whose features standardise them all) but not in a later one is
    trained on."""
    first, second = _minibatch_outputs(6, learning.BATCH)
    rows = len(first) + len(second)
    order = np.random.default_rng(learning.SHUFFLE_SEED).permutation(rows)
    rare = order[learning.BATCH + 5 : learning.BATCH + 15]  # in the second minibatch
    pooled = np.concatenate([first, second])
    pooled = np.concatenate([pooled, np.zeros((rows, 1))], axis=1)
    pooled[rare, 2] = 4.0  # coordinate 2: 0 but in the second minibatch
    first, second = pooled[: len(first)], pooled[len(first) :]
    widths = []
    real_train = learning._train

    def train(y, labels, mean, *args, **kwargs):
        widths.append(mean.shape[0])
        return real_train(y, labels, mean, *args, **kwargs)

    monkeypatch.setattr(learning, "_train", train)
    key = cell_key(3, "fit")
    scorers = []
    with jax.enable_x64(True):
        sample = learning.training_sample(first, second)
        for skip in (False, True):
            monkeypatch.setattr(learning, "SKIP_ZERO_FEATURES", skip)
            scorers.append(
                learning.fit(
                    key, model=model, feature_set=feature_set, sample=sample, steps=30
                )
            )
        batch = sample.batch
        used = (sample.y.shape[0] // batch) * batch
        phi = np.asarray(learning.FEATURES[feature_set](sample.y[:used], sample.basis))
        initial = learning._init(key, model, phi.shape[1], learning.model_dtype(model))
    assert np.all(np.asarray(sample.y[:batch, 2]) == 0)
    assert np.any(np.asarray(sample.y[batch:used, 2]) != 0)
    mean, scale = (np.asarray(a) for a in scorers[0][:2])
    zero = np.all((phi - mean) / scale == 0, axis=0)
    assert widths == [phi.shape[1], phi.shape[1] - zero.sum()]
    assert 0 < zero.sum() < phi.shape[1]
    rare_value = 2  # coordinate 2's value: the first block's third column
    assert not zero[rare_value]
    full, skipped = (jax.tree.leaves(s.weights) for s in scorers)
    assert np.asarray(skipped[0])[rare_value].any()
    # the same steps but for sums of fewer zero terms
    tol = {"float64": 1e-12, "float32": 1e-5}[_precision(scorers[0])]
    for x, z, start in zip(full, skipped, jax.tree.leaves(initial), strict=True):
        x, z, start = np.asarray(x), np.asarray(z), np.asarray(start)
        np.testing.assert_allclose(z, x, rtol=0, atol=tol * np.abs(x).max())
        if x.shape[:1] == zero.shape:  # the first layer: one row per feature
            np.testing.assert_array_equal(z[zero], 0)
            np.testing.assert_array_equal(x[zero], 0)
            if model == "mlp":  # the rows trained on start at random
                assert np.all(start[~zero] != 0) and np.all(z[~zero] != 0)
    for x, z in zip(scorers[0][:2], scorers[1][:2], strict=True):  # mean, scale
        np.testing.assert_array_equal(np.asarray(z), np.asarray(x))


def _left_out_scored(model: str, feature_set: str) -> tuple:
    """Two scorers of ``model`` on ``feature_set`` trained on the same outputs (no
    training output NaN or -0.0), the score that ``learning.score_of`` gives the
    first, the score of every feature, and the first's scores of fresh outputs
    (NaN, values outside the training's range and -0.0 among them) by each."""
    rng = np.random.default_rng(8)
    first, second = _mixed(rng, 3000), _mixed(rng, 3000)
    second[:, 1] += 0.5
    with jax.enable_x64(True):
        scorers = [
            learning.fit(cell_key(i, "fit"), first, second, model=model,
                         feature_set=feature_set, steps=20)
            for i in range(2)
        ]  # fmt: skip
        score = learning.score_of(feature_set, model, scorers[0])
        y = _mixed(rng, 4000)
        y[:50, 1] = np.nan
        y[50:100, 1] = 40.0
        y[100:150, 2] = -0.0
        full = learning.SCORES_BY_FEATURES[feature_set][model]
        by_all = np.asarray(jax.jit(full)(y, scorers[0]))
        by_some = np.asarray(jax.jit(score)(y, scorers[0]))
    return scorers, score, full, by_all, by_some


@pytest.mark.parametrize("feature_set", ["moments", "bits"])
def test_the_logistic_score_leaves_out_the_terms_of_weight_zero(feature_set):
    """The terms whose weights are 0 at every coordinate (here the NaN indicator,
    and the sign of a zero among the bit features: no training output is NaN or
    -0.0), left out of the logistic score's sum on a CPU, leave the scores of
    outputs with finite features the same to the bit: NaN, atoms, values outside
    the training's range and -0.0 included. Scorers whose terms left out are the
    same share one score function (one compile)."""
    scorers, score, full, by_all, by_some = _left_out_scored("logistic", feature_set)
    zero = learning.zero_terms(scorers[0], feature_set)
    nan_block = 2  # value, hinges, NaN, atoms (then the bits' blocks)
    assert zero[nan_block] == (0,)
    assert feature_set == "moments" or zero[-1] == (0,)  # the sign of a zero
    assert sum(map(len, zero)) < scorers[0].mean.shape[0]
    assert score is not full
    assert learning.score_of(feature_set, "logistic", scorers[1]) is score
    np.testing.assert_array_equal(by_some, by_all)
    assert np.isfinite(by_all).all()


@pytest.mark.parametrize("model", ["logistic", "mlp"])
@pytest.mark.parametrize("feature_set", ["moments", "bits"])
def test_a_scorer_trained_on_one_output_scores_every_row(model, feature_set):
    """Trained on one output repeated, the same for both inputs (as the suite's
    Sparse Vector cases give at a few thousand draws), every standardised feature is
    0 on every training row, and the scorer weighs every one at 0. Its score leaves
    out every term (a logistic scorer's sum on a CPU) or reads no feature (the MLP's
    hidden layer): one score per row still, that of every feature read."""
    same = np.ones((600, 3))
    with jax.enable_x64(True):
        scorer = learning.fit(
            cell_key(0, "fit"), same, same, model=model, feature_set=feature_set,
            steps=5,
        )  # fmt: skip
        assert not np.any(np.asarray(scorer.weights[0]))
        score = learning.score_of(feature_set, model, scorer)
        full = learning.SCORES_BY_FEATURES[feature_set][model]
        assert score is not full
        y = np.random.default_rng(3).normal(size=(17, 3))
        by_none = np.asarray(jax.jit(score)(y, scorer))
        by_all = np.asarray(jax.jit(full)(y, scorer))
    assert by_none.shape == (17,)
    np.testing.assert_array_equal(by_none, by_all)


@pytest.mark.parametrize("feature_set", ["moments", "bits"])
def test_the_mlp_reads_only_the_features_it_weighs(feature_set):
    """The MLP weighs the features that no training row shows at 0 (here the NaN
    indicator, and the sign of a zero among the bit features), and its hidden layer
    then reads the others alone (:data:`learning.SKIP_ZERO_COLUMNS`): the scores of
    outputs with finite features are those of every feature to float32's rounding
    (:data:`ROUNDING`), NaN, atoms, values outside the training's range and -0.0
    included. Scorers that read the same features share one score function."""
    scorers, score, full, by_all, by_some = _left_out_scored("mlp", feature_set)
    columns = learning.zero_columns(scorers[0], feature_set)
    w1 = np.asarray(scorers[0].weights[0])
    width = w1.shape[0]
    read = sum(map(len, columns))
    assert np.count_nonzero(np.all(w1 == 0, axis=1)) == width - read > 0
    assert score is not full and score.keywords["columns"] == columns
    assert learning.score_of(feature_set, "mlp", scorers[1]) is score
    tol = ROUNDING[_precision(scorers[0])][1]
    assert np.isfinite(by_all).all()
    np.testing.assert_allclose(by_some, by_all, rtol=tol, atol=tol)


@pytest.mark.parametrize("feature_set", learning.FEATURE_SETS)
def test_standardised_features_in_pieces_are_those_of_one_program(feature_set):
    """The training features built in pieces into one array are, to the last bit,
    those of one program over all the rows (on a CPU, where that form is used: a
    loop over the pieces inside one program rounded the bit features' ``precision
    / nmant`` otherwise), the rows' features in order, a last, shorter piece
    included."""
    first, second = _minibatch_outputs(5, 2 * learning.BATCH)
    with jax.enable_x64(True):
        sample = learning.training_sample(first, second)
        y, basis, batch = sample.y, sample.basis, sample.batch
        rows = (y.shape[0] // batch) * batch - 100  # not a multiple of a piece
        phi = learning.FEATURES[feature_set](y[:batch], basis)
        mean, scale = jnp.mean(phi, axis=0), jnp.std(phi, axis=0) + 1.0

        @jax.jit
        def one_program(y, basis, mean, scale):  # as the training computes them
            phi = learning.FEATURES[feature_set](y, basis)
            return learning._standardized(phi, mean, scale)

        whole = one_program(y[:rows], basis, mean, scale)
        built = learning._standardized_in_pieces(
            y[:rows], basis, mean, scale, feature_set
        )
    assert built.shape == (rows, phi.shape[1])
    assert rows > 2 * batch and rows % learning.PIECE_ROWS
    if jax.default_backend() == "cpu":
        np.testing.assert_array_equal(np.asarray(built), np.asarray(whole))
    else:
        np.testing.assert_allclose(built, whole, rtol=1e-12, atol=1e-14)


def test_features_are_computed_once_up_to_a_share_of_a_cpus_memory(monkeypatch):
    """Up to 2^26 numbers on every device; beyond, on a CPU only, where two arrays
    of them fit in a third of the machine's memory, and nowhere where that memory
    is unknown."""
    monkeypatch.setattr(learning, "machine_memory", lambda: 24 << 30)
    limit = (24 << 30) // 3 // 2 // 8  # float64 numbers
    assert learning.features_fit(1 << 26, 8, "gpu")
    assert not learning.features_fit((1 << 26) + 1, 8, "gpu")
    assert learning.features_fit(limit, 8, "cpu")
    assert not learning.features_fit(limit + 1, 8, "cpu")
    assert learning.features_fit(2 * limit, 4, "cpu")
    assert learning.features_fit(2 * limit, 8, "cpu", copies=1)
    assert not learning.features_fit(2 * limit + 1, 8, "cpu", copies=1)
    assert not learning.features_fit((1 << 26) + 1, 8, "gpu", copies=1)
    monkeypatch.setattr(learning, "machine_memory", lambda: None)
    assert learning.features_fit(1 << 26, 8, "cpu")
    assert not learning.features_fit((1 << 26) + 1, 8, "cpu")
    monkeypatch.undo()
    memory = learning.machine_memory()
    assert memory is None or memory > 0


def test_features_built_in_pieces_count_once_against_the_memory(monkeypatch):
    """Past :data:`mcdp.learning.FEATURE_SCALARS` numbers, the bit features are
    built in pieces into one array (at the peak, that array and a piece's), and
    :func:`mcdp.learning.fit` asks memory for one array of them; the moments,
    computed by one program for every row, for
    :data:`mcdp.learning.FEATURE_COPIES`. At or below it, the same ask for both."""
    asked = []

    def fits(scalars, itemsize, platform=None, *, copies=learning.FEATURE_COPIES):
        asked.append(copies)
        return True

    monkeypatch.setattr(learning, "features_fit", fits)
    first, second = _minibatch_outputs(6, learning.BATCH)
    with jax.enable_x64(True):
        for scalars in (0, 1 << 26):
            monkeypatch.setattr(learning, "FEATURE_SCALARS", scalars)
            for feature_set in ("bits", "moments"):
                learning.fit(
                    cell_key(6, "fit"), first, second, feature_set=feature_set,
                    steps=2,
                )  # fmt: skip
    copies = learning.FEATURE_COPIES
    assert asked == [1, copies, copies, copies]


def test_a_containers_memory_limit_is_read_from_its_control_group(tmp_path):
    """A container sees its host's memory through ``os.sysconf``: the limit of its
    control group (version 2 or 1, at its own path or the root's, the least) is
    read instead; none where the files say ``max``, a value past 2^60, or nothing."""

    def limit(lines, files):
        proc, root = tmp_path / "cgroup", tmp_path / "fs"
        proc.write_text(lines)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text + "\n")
        try:
            return learning.cgroup_memory_limit(str(proc), str(root))
        finally:
            for name in files:
                (root / name).unlink()

    v2 = "0::/job/a\n"
    assert limit(v2, {"job/a/memory.max": "4294967296"}) == 4 << 30
    assert limit(v2, {"job/a/memory.max": "max", "memory.max": "1073741824"}) == 1 << 30
    assert limit(v2, {"job/a/memory.max": "max"}) is None
    v1 = "4:memory:/box\n3:cpu,cpuacct:/box\n"
    files = {"memory/box/memory.limit_in_bytes": "2147483648"}
    assert limit(v1, files) == 2 << 30
    unlimited = {"memory/box/memory.limit_in_bytes": "9223372036854771712"}
    assert limit(v1, unlimited) is None
    assert limit("", {}) is None
    missing = str(tmp_path / "no-such-file")
    assert learning.cgroup_memory_limit(missing, str(tmp_path)) is None


def test_sample_sizes_follow_the_counted_draws_within_their_range():
    assert learned_sizes(10_000) == (100_000, 100_000)
    assert learned_sizes(10**6) == (100_000, 100_000)
    assert learned_sizes(10**7) == (10**6, 10**6)
    assert learned_sizes(2 * 10**8) == (10**6, 1 << 24)
    assert learned_sizes(10**8, 5000, 7000) == (5000, 7000)


def test_minibatch_fit_keeps_a_tail_in_order():
    """Report Noisy Max returning the value, on 0^5 against 1^5 (``all-below``): the
    log-likelihood ratio rises with the output, flat at -0.25 below 0 and near 0.05
    in the right tail. The logit fitted on minibatches must follow that order over
    the training outputs' 0.1 %-99.9 % quantiles: a later (larger) output may score
    lower by no more than 0.1, a third of the ratio's range. With a constant step
    size the last hinge's weight stayed noisy: on this sample the score fell by
    0.21 past the 99.8 % quantile (0.03-0.21 over the draws of seeds 0-4), toward
    the left tail's, so events meant for the left tail took in the far right one
    (the 2e8 audit of ``report-noisy-max3`` fell from 0.24 to 0.22). With the step
    size decaying, the largest fall over those draws is 0.06 (0.006 here)."""
    from mcdp.mechanisms import get_mechanism
    from mcdp.pairs import make_pair
    from mcdp.sampling import draw

    mech = get_mechanism("report-noisy-max3")
    params = mech.calibrate(0.1, 0.0, 5, 1.0)
    with jax.enable_x64(True):
        y = draw(cell_key(0, "mono"), mech, make_pair("all-below", 5), params, 10**6)
        scorer = learning.fit(cell_key(0, "fit"), y[0], y[1])
        grid = np.quantile(y.reshape(-1), np.linspace(0.001, 0.999, 200))
        s = np.asarray(learning.score_logistic(grid[:, None], scorer))
    later_minimum = np.minimum.accumulate(s[::-1])[::-1]
    assert np.max(s - later_minimum) <= 0.1


@pytest.mark.parametrize("feature_set", learning.FEATURE_SETS)
@pytest.mark.parametrize("model", learning.MODELS)
def test_scores_are_the_trained_models_on_the_standardised_features(model, feature_set):
    """The scores sum the feature blocks against the weights without building the
    features (fast in the engine's loop); they must equal the models as trained,
    on the standardised concatenated features, to rounding."""
    y = _mixed(np.random.default_rng(3), 4000)
    with jax.enable_x64(True):
        scorer = learning.fit(
            cell_key(0, "fit"), y[:2000], y[2000:] + 0.5, model=model,
            feature_set=feature_set, steps=20,
        )  # fmt: skip
        phi = learning.FEATURES[feature_set](y, scorer.basis)
        z = (phi - scorer.mean[None, :]) / scorer.scale[None, :]
        expected = np.asarray(learning.HEADS[model](z, scorer.weights))
        score = learning.SCORES_BY_FEATURES[feature_set][model](y, scorer)
    tol = ROUNDING[_precision(scorer)][1]
    np.testing.assert_allclose(np.asarray(score), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("by_block", [True, False])
def test_both_forms_of_the_hidden_layer_are_the_product_to_float32_rounding(by_block):
    """The MLP's hidden layer summed by block (:func:`mcdp.learning._affine`, the
    probes' forms) and as one product (the score's, on every backend), in float32,
    equal the float64 product of the standardised features within the forward
    error of a float32 sum of F terms, 4 F u of the terms' magnitudes: a product at
    lower precision (a GPU's TF32, u = 2^-11) would not."""
    y = _mixed(np.random.default_rng(7), 4000).astype(np.float32)
    scorer = learning.fit(
        cell_key(0, "fit"), y[:2000], y[2000:] + 0.5, model="mlp", steps=20
    )
    parts = learning.feature_parts(jax.numpy.asarray(y), scorer.basis)
    w1 = scorer.weights[0]
    assert w1.dtype == np.float32
    hidden_of = learning._affine if by_block else learning._mlp_hidden
    hidden = np.asarray(hidden_of(parts, w1, scorer))
    phi = np.asarray(learning.features(y, scorer.basis), np.float64)
    mean = np.asarray(scorer.mean, np.float64)
    w = np.asarray(w1, np.float64) / np.asarray(scorer.scale, np.float64)[:, None]
    expected = (phi - mean) @ w
    magnitude = (np.abs(phi) + np.abs(mean)) @ np.abs(w)
    bound = 4 * phi.shape[1] * np.finfo(np.float32).eps * magnitude
    assert np.all(np.abs(hidden - expected) <= bound)


def test_select_thresholds_skips_near_events_by_the_given_factor():
    """Two events of a discrete score, {s >= 4} (ratio 2.5) and {s >= 3} (1.9),
    whose pooled tail masses are 1.88x apart: the default factor 2 keeps only
    the better one, 1.5 keeps both; a factor <= 1 is refused."""
    values = np.arange(5.0)
    first = np.repeat(values, [50_800, 30_000, 14_000, 2_200, 3_000])
    second = np.repeat(values, [56_300, 30_000, 11_000, 1_500, 1_200])
    common = dict(draws=1_000_000, confidence=0.9, max_events=3, epsilon=0.1, delta=0.0)

    def upper_counts(near):
        chosen = learning.select_thresholds(first, second, near=near, **common)
        return {int((first >= t).sum()) for t in chosen.thresholds}

    assert {3_000, 5_200} <= upper_counts(1.5)
    assert 3_000 in upper_counts(2.0) and 5_200 not in upper_counts(2.0)
    with pytest.raises(ValueError, match="near > 1"):
        learning.select_thresholds(first, second, near=1.0, **common)


def _selection_by_definition(first, second, max_events, near=2.0, **common):
    """select_thresholds' definition, computed directly: quantiles of the raw
    scores, counts and pooled ranks by comparison, the greedy choice."""
    n = min(len(first), len(second))
    tail = np.logspace(math.log10(1 / n), -1, 50)
    levels = np.unique(np.concatenate([tail, np.linspace(0.1, 0.9, 50), 1 - tail]))
    with np.errstate(invalid="ignore"):
        values = np.concatenate(
            [np.quantile(first, levels), np.quantile(second, levels)]
        )
    thresholds = np.unique(values[np.isfinite(values)])
    # a NaN score sorts last: it is in every upper set, as in the counted guess
    at_least = [
        np.array([((s >= t) | np.isnan(s)).sum() for t in thresholds])
        for s in (first, second)
    ]
    predicted = learning.promises_of_counts(
        at_least[0], len(first), at_least[1], len(second),
        num_events=max_events, **common,
    )[0]  # fmt: skip
    pooled = np.concatenate([first, second])
    below = (np.array([(pooled < t).sum() for t in thresholds]) + 0.5) / (
        len(pooled) + 1
    )
    chosen = []
    for i in np.argsort(-predicted, kind="stable"):
        if not any(
            abs(math.log(below[i] / below[j])) < math.log(near)
            and abs(math.log((1 - below[i]) / (1 - below[j]))) < math.log(near)
            for j in chosen
        ):
            chosen.append(int(i))
        if len(chosen) == max_events:
            break
    order = np.array(sorted(chosen, key=lambda i: thresholds[i]))
    return thresholds[order], predicted[order]


@pytest.mark.parametrize("kind", ["continuous", "ties", "nan-inf-signed-zeros"])
def test_select_thresholds_is_its_definition_exactly(kind):
    """select_thresholds sorts each input's scores once and takes quantiles,
    counts and pooled ranks from them: the thresholds and promises are those of
    the definition computed on the raw scores, to the last bit."""
    rng = np.random.default_rng(11)
    first, second = rng.normal(size=3_001), rng.normal(0.3, 1.0, size=2_500)
    if kind == "ties":
        first, second = np.round(first, 1), np.round(second, 1)
    elif kind == "nan-inf-signed-zeros":
        first[:5], second[:3] = np.nan, np.inf
        first[10:40], second[10:40] = -0.0, 0.0
    common = dict(draws=10**7, confidence=0.9, epsilon=0.1, delta=0.0)
    chosen = learning.select_thresholds(first, second, max_events=3, **common)
    thresholds, predicted = _selection_by_definition(
        first, second, max_events=3, **common
    )
    np.testing.assert_array_equal(chosen.thresholds, thresholds)
    np.testing.assert_array_equal(chosen.predicted, predicted)


def _binomial_pair(n_first, n_second, seed):
    """Outputs of Binomial(20, 0.5) and Binomial(20, 0.6), as their exact privacy
    loss (21 levels, one per value), with the exact pmfs and losses."""
    values = np.arange(21)
    p, q = stats.binom.pmf(values, 20, 0.5), stats.binom.pmf(values, 20, 0.6)
    loss = np.log(p) - np.log(q)
    rng = np.random.default_rng(seed)
    first = loss[rng.binomial(20, 0.5, size=n_first)]
    second = loss[rng.binomial(20, 0.6, size=n_second)]
    return np.sort(first), np.sort(second), p, q, loss


def test_loss_weighted_counts_are_unbiased_within_their_spread():
    """On outputs whose scores are the exact loss, each input's estimated count of
    {L >= t} is within z of its (first-order) standard deviation of n P(L >= t), at
    every level of the loss whose pooled expected count is at least 100 (where the
    normal approximation holds); z for a false-alarm budget of 1e-6 over all the
    comparisons. The estimate is self-normalised: the sample's size for an event
    of every output, 0 for an empty one, exactly."""
    n_first, n_second = 30_000, 20_000  # unequal: the posterior's prior term counts
    first, second, p, q, loss = _binomial_pair(n_first, n_second, seed=5)
    levels = np.sort(loss)
    thresholds = np.concatenate([levels - 1e-9, [levels[-1] + 1e-9]])
    k_first, k_second = learning.loss_weighted_counts(first, second, thresholds)
    assert (k_first[0], k_second[0]) == (n_first, n_second)
    assert (k_first[-1], k_second[-1]) == (0, 0)
    # one output of loss L adds w(L) = n1 / (n1 + n2 e^-L) to the first sum
    weight = n_first / (n_first + n_second * np.exp(-loss))
    checked = 0
    z = stats.norm.isf(1e-6 / (2 * 2 * len(thresholds)))
    # the event of every output (checked above) has no spread but the rounding's
    for t, k1, k2 in zip(thresholds[1:], k_first[1:], k_second[1:], strict=True):
        inside = loss >= t
        if n_first * p[inside].sum() + n_second * q[inside].sum() < 100:
            continue
        for k, w, n, mass in ((k1, weight, n_first, p), (k2, 1 - weight, n_second, q)):
            share = mass[inside].sum()
            # k - n P is, to first order, the sum over both samples of
            # (1_A - P) w: variance n_i Var_i((1_A - P) w) for each sample i
            term = (inside - share) * w
            var = sum(
                size * (np.sum(pmf * term**2) - np.sum(pmf * term) ** 2)
                for size, pmf in ((n_first, p), (n_second, q))
            )
            assert abs(k - n * share) <= z * math.sqrt(var)
            checked += 1
    assert checked >= 20


def test_loss_weighted_counts_weigh_each_run_of_equal_losses_once_to_the_bit(
    monkeypatch,
):
    """The binomial pair's losses take a few dozen values: their weights, computed
    once per run of equal losses and repeated, give the counts of every value
    weighed on its own, bit for bit (so no choice of thresholds moves). Continuous
    losses (a run per value) take the elementwise path."""
    first, second, _, _, loss = _binomial_pair(30_000, 20_000, seed=5)
    thresholds = np.sort(loss) - 1e-9
    assert learning._runs(first[::-1]) is not None
    by_runs = learning.loss_weighted_counts(first, second, thresholds)
    monkeypatch.setattr(learning, "_runs", lambda ordered: None)
    by_value = learning.loss_weighted_counts(first, second, thresholds)
    for k_runs, k_value in zip(by_runs, by_value, strict=True):
        assert np.array_equal(k_runs, k_value)
    monkeypatch.undo()
    assert learning._runs(np.sort(np.random.default_rng(0).normal(size=1000))) is None


def test_running_sums_a_piece_at_a_time_are_numpys_cumsum_to_the_bit(monkeypatch):
    """loss_weighted_counts sums its weights a piece at a time: at every position
    (pieces of 7 here, so that positions fall on both sides of each edge), the
    running sums of the weights of each value and of each run of equal values are
    np.cumsum's of all the weights at once, bit for bit, and so are their totals."""
    monkeypatch.setattr(learning, "SUM_PIECE", 7)
    rng = np.random.default_rng(3)
    logit = np.sort(rng.normal(size=100))[::-1] * 40  # weights across many binades
    ties = np.repeat(logit[:9], rng.integers(1, 12, size=9))
    at = np.array([-1, 0, 5, 6, 7, 13, 14, 20, 48, 49, 50, 97, 98, 99, 100, 500])
    for values in (logit, ties):
        for sign in (1, -1):
            whole = np.cumsum(special.expit(sign * values))
            inside = (at >= 0) & (at < values.size)
            expected = np.where(inside, whole[np.clip(at, 0, values.size - 1)], 0.0)
            runs = learning._runs(values)
            forms = [partial(learning._weights, values, 0.0, sign)]
            if runs is not None:
                of_run = special.expit(sign * values[runs[0]])
                forms.append(partial(learning._weights_of_runs, *runs, of_run))
            for weights in forms:
                sums, total = learning._running_sums_at(weights, values.size, at)
                assert np.array_equal(sums, expected) and total == whole[-1]
        assert (learning._runs(values) is not None) == (values is ties)


def test_loss_weighted_counts_are_those_of_whole_running_sums_to_the_bit(monkeypatch):
    """The counts, summed a piece at a time and each run of equal losses weighed
    once, are those of ``np.cumsum`` over each input's weights at once (the two
    inputs' sums added in turn), bit for bit: on the binomial pair's few losses
    and on continuous scores."""
    monkeypatch.setattr(learning, "SUM_PIECE", 1000)
    first, second, _, _, loss = _binomial_pair(30_000, 20_000, seed=4)
    rng = np.random.default_rng(4)
    plain = np.sort(rng.normal(size=25_000)), np.sort(rng.normal(0.2, 1, 15_000))
    for pair, thresholds in (
        ((first, second), np.sort(loss) - 1e-9),
        (plain, np.quantile(plain[0], np.linspace(0.01, 0.99, 30))),
    ):
        prior = math.log(len(pair[0]) / len(pair[1]))
        sums, totals = np.zeros((2, len(thresholds))), np.zeros((2, 1))
        for scores in pair:
            logit = scores[::-1] + prior
            count = len(scores) - np.searchsorted(scores, thresholds, side="left")
            for i, sign in enumerate((1, -1)):
                whole = np.cumsum(special.expit(sign * logit))
                totals[i] += whole[-1]
                sums[i] += np.where(count > 0, whole[np.maximum(count - 1, 0)], 0.0)
        sizes = np.array([[len(pair[0])], [len(pair[1])]])
        got = learning.loss_weighted_counts(*pair, thresholds)
        for k, want in zip(got, sizes * sums / totals, strict=True):
            assert np.array_equal(k, want)


def test_loss_weighted_counts_of_float32_scores_are_summed_in_float64():
    """float32 scores of an exact loss are weighed and summed in float64: their
    weighted counts are those of the same values in float64, to the last few bits
    of n. Summed in float32, the 2^20 tied weights per input of the binomial pair
    put the counts of {L >= t} off by up to 1,333 (1.3e-3 of n), and an event of a
    few percent, weighed as n less such a count, by several percent of itself."""
    n = 1 << 20
    first, second, _, _, loss = _binomial_pair(n, n, seed=8)
    thresholds = np.sort(loss) - 1e-6
    narrow = learning.loss_weighted_counts(
        first.astype(np.float32), second.astype(np.float32), thresholds
    )
    wide = learning.loss_weighted_counts(
        first.astype(np.float32).astype(np.float64),
        second.astype(np.float32).astype(np.float64),
        thresholds,
    )
    for k_narrow, k_wide in zip(narrow, wide, strict=True):
        assert k_narrow.dtype == np.float64
        np.testing.assert_allclose(k_narrow, k_wide, rtol=0, atol=1e-9 * n)


def test_an_exact_loss_chooses_the_best_event_and_promises_what_it_gives():
    """On 1e5 outputs per input of the binomial pair scored by their exact loss, the
    loss-weighted choice for 1e7 counted draws takes the best of the exact events
    {L >= t} and {L < t} (whose bound comes from the pmfs at the expected counts),
    and promises it within 5 % (within 2.3 % on seeds 0-4; an empty lower set
    promising from the weights' noise alone promised 18 times it). The counts
    alone take an event of 0.87 of it here, as on seeds 0-4."""
    first, second, p, q, loss = _binomial_pair(100_000, 100_000, seed=7)
    draws = 10**7
    common = dict(draws=draws, confidence=0.9, max_events=3, epsilon=0.1, delta=0.0)

    def exact(t):
        inside = loss >= t
        return max(
            max(ceiling.bounds(p[e].sum(), q[e].sum(), draws, 0.9, 3))
            for e in (inside, ~inside)
        )

    best = max(exact(t) for t in np.sort(loss) - 1e-9)
    weighted = learning.select_thresholds(first, second, exact_loss=True, **common)
    assert max(exact(t) for t in weighted.thresholds) == best
    assert weighted.predicted.max() == pytest.approx(best, rel=0.05)
    counted = learning.select_thresholds(first, second, **common)
    assert max(exact(t) for t in counted.thresholds) < 0.9 * best


def test_select_thresholds_of_an_exact_loss_falls_back_to_counts_on_nan():
    """A NaN among the scores of an exact loss leaves the weights undefined: the
    choice is then the counts' choice, to the last bit; without one it differs
    (the weighted masses at face value)."""
    first, second, *_ = _binomial_pair(4_000, 4_000, seed=6)
    common = dict(draws=10**7, confidence=0.9, max_events=3, epsilon=0.1, delta=0.0)
    counted = learning.select_thresholds(first, second, **common)
    weighted = learning.select_thresholds(first, second, exact_loss=True, **common)
    assert not np.array_equal(weighted.predicted, counted.predicted)
    first[0] = np.nan
    counted = learning.select_thresholds(first, second, **common)
    fallback = learning.select_thresholds(first, second, exact_loss=True, **common)
    np.testing.assert_array_equal(fallback.thresholds, counted.thresholds)
    np.testing.assert_array_equal(fallback.predicted, counted.predicted)


@pytest.mark.parametrize("delta", [0.0, 1e-3])
def test_a_promise_spreads_as_its_best_event_counts_vary(delta):
    """The spread of each event's promise is the standard deviation of what its
    best set and order measure on counts of that size (the log ratio for delta 0,
    p - e^eps q else): within 2 % of the exact one over the binomial pmfs. The
    second event's best set is its lower set {s < t}, whose counts are n - k."""
    n, eps = 4_000, 0.5
    k_first, k_second = np.array([200, 3_000]), np.array([100, 3_700])
    common = dict(draws=10**6, confidence=0.9, num_events=2, epsilon=eps)
    values, spreads = learning.promises_of_counts(
        k_first, n, k_second, n, delta=delta, **common
    )
    # scores with these counts at or above the thresholds 1.5 and 0.5
    first = np.repeat([2.0, 1.0, 0.0], [200, 2_800, 1_000])
    second = np.repeat([2.0, 1.0, 0.0], [100, 3_600, 300])
    np.testing.assert_array_equal(
        values,
        learning.predicted_bounds(
            first, second, np.array([1.5, 0.5]), delta=delta, **common
        ),
    )

    # what the event measures is f(K) - g(L) for the independent counts K, L of
    # its two inputs, so its variance is Var f(K) + Var g(L)
    def rate(k):
        return (k + 0.5) / (n + 1)

    if delta == 0:
        f = g = lambda k: np.log(rate(k))
    else:
        f, g = rate, lambda k: math.exp(eps) * rate(k)
    # event 0 speaks for the first input with its upper set (200 against 100
    # outputs at or above t), event 1 with its lower set (1,000 against 300 below)
    rates = [(200 / n, 100 / n), (1_000 / n, 300 / n)]
    for spread, (p, q) in zip(spreads, rates, strict=True):
        exact = math.sqrt(binomial_variance(n, p, f) + binomial_variance(n, q, g))
        assert spread == pytest.approx(exact, rel=0.02)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_quantiles_of_sorted_scores_are_numpys_to_the_last_bit(dtype):
    """The quantiles read off sorted scores are numpy.quantile's (linear) of the
    same scores: sizes from 1 up, ties, infinities of both signs, signed zeros,
    NaN, at the levels the selection uses and at 0, 1/2 and 1."""
    rng = np.random.default_rng(13)
    levels = np.unique(
        np.concatenate(
            [np.logspace(-6, -1, 50), np.linspace(0.1, 0.9, 50), [0.0, 0.5, 1.0]]
        )
    )
    levels = np.unique(np.concatenate([levels, 1 - levels]))
    samples = [rng.normal(size=n).astype(dtype) for n in (1, 2, 3, 10, 1_001, 65_537)]
    ties = np.round(rng.normal(size=5_000), 1).astype(dtype)
    extremes = rng.normal(size=2_000).astype(dtype)
    extremes[:20], extremes[20:40], extremes[40:60] = np.inf, -np.inf, -0.0
    extremes[60:80] = 0.0
    nan = extremes.copy()
    nan[100:103] = np.nan
    for scores in [*samples, ties, extremes, nan, -extremes]:
        ordered = np.sort(scores)
        with np.errstate(invalid="ignore"):
            got = learning.quantiles_of_sorted(ordered, levels)
            expected = np.quantile(scores, levels)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)  # NaN where NaN
        nonzero = expected != 0  # the same bits, but for the sign of a zero
        assert (
            np.array_equal(
                got[nonzero].view(np.uint64), expected[nonzero].view(np.uint64)
            )
            or np.isnan(expected).all()
        )


def _equal_rows_scored(model: str, feature_set: str, *, batched: bool = False):
    """Six distinct output rows (a continuous coordinate and 39 of three values)
    repeated at random positions of four blocks of 1031 rows, and a scorer
    ``model`` trained on them: every row's scores, block by block (``lax.map``),
    whole and, where ``batched``, over the blocks at once (``vmap``), with the
    index of the distinct row that each scored. The scorer is each program's
    argument, as the engine passes it: a scorer closed over is a constant, and XLA
    folds the logistic score's offset (a sum over the features) at compile time,
    in another order than the compiled sum (1 ulp of it apart)."""
    rng = np.random.default_rng(3)
    distinct = rng.integers(0, 3, size=(6, 40)).astype(float)
    distinct[:, 0] = rng.laplace(size=6)
    picks = rng.integers(0, 6, size=(2, 3000))
    shift = rng.random((3000, 1)) < 0.3
    with jax.enable_x64(True):
        scorer = learning.fit(
            cell_key(0, "fit"), distinct[picks[0]], distinct[picks[1]] + shift,
            model=model, feature_set=feature_set, steps=20,
        )  # fmt: skip
        score = learning.SCORES_BY_FEATURES[feature_set][model]
        which = rng.integers(0, 6, size=(4, 1031))
        blocks = jax.numpy.asarray(distinct[which])
        by_block = jax.jit(lambda b, s: jax.lax.map(lambda y: score(y, s), b))
        forms = [
            by_block(blocks, scorer),
            jax.jit(score)(blocks.reshape(-1, 40), scorer),
        ]
        if batched:
            forms.append(jax.jit(jax.vmap(score, (0, None)))(blocks, scorer))
    scores = np.concatenate([np.asarray(f).ravel() for f in forms])
    return scores, np.tile(which.ravel(), len(forms))


def _assert_equal_rows_score_alike(scores: np.ndarray, labels: np.ndarray) -> None:
    for j in np.unique(labels):
        if jax.default_backend() == "cpu":
            assert np.unique(scores[labels == j]).size == 1
        else:
            same = scores[labels == j]
            np.testing.assert_allclose(same, same[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("feature_set", ["moments", "bits"])
def test_the_mlp_scores_equal_outputs_equally_wherever_they_lie(feature_set):
    """The MLP's product scores equal output rows to the same bits on a CPU, at
    every position of a block, block by block (``lax.map``, the engine's form on a
    CPU) or whole: the portfolio's check for few values and its discrete events
    count the scores of a discrete mechanism's outputs as that mechanism's few
    values. On a GPU the two programs' products may round apart (on an H200 one
    row's scores took two values, equal to 8 digits): there they agree within
    1e-12 (absolute and relative), far inside the hair below its atoms at which
    the portfolio puts a few-valued scorer's thresholds (``attacks._below_atoms``:
    1.5e-8 times max(1, |t|) in float64)."""
    _assert_equal_rows_score_alike(*_equal_rows_scored("mlp", feature_set))


@pytest.mark.parametrize("feature_set", learning.FEATURE_SETS)
def test_the_logistic_scores_equal_outputs_equally_wherever_they_lie(feature_set):
    """The logistic scorers' sums, term by term on a CPU, score equal output rows
    to the same bits there, at every position of a block, block by block, whole or
    over the blocks at once (the counting loop's form for them): each row's terms
    are added in one order wherever it lies. Off a CPU, within 1e-12, as the
    MLP's."""
    scored = _equal_rows_scored("logistic", feature_set, batched=True)
    _assert_equal_rows_score_alike(*scored)


@pytest.mark.parametrize("feature_set", learning.FEATURE_SETS)
def test_the_logistic_scores_term_by_term_are_the_sums_by_block(feature_set):
    """On a CPU the logistic score adds each coordinate's terms in turn
    (``learning._affine_by_term``); its sums by block (``learning._affine``, the
    form off a CPU) compute the same number in another order: the two differ by at
    most the sum of the forward errors of two float64 sums of 2F numbers, on
    outputs with atoms, NaN and continuous values. On a CPU the score is the
    term-by-term sum to the bit."""
    rng = np.random.default_rng(4)
    y = _mixed(rng, 4000)
    y[rng.random(y.shape) < 0.05] = np.nan
    with jax.enable_x64(True):
        scorer = learning.fit(
            cell_key(0, "fit"), y[:2000], y[2000:] + 0.5, feature_set=feature_set,
            steps=20,
        )  # fmt: skip
        parts = learning.FEATURE_PARTS[feature_set]
        w = scorer.weights[0]
        by_term = np.asarray(learning._affine_by_term(y, w, scorer, parts))
        by_block = np.asarray(learning._logistic_affine(y, w, scorer, parts))
        score = np.asarray(learning.SCORES_BY_FEATURES[feature_set]["logistic"](
            y, scorer
        ))  # fmt: skip
        phi = np.asarray(learning.FEATURES[feature_set](y, scorer.basis))
    # each form adds the F terms to the same offset; each such sum errs by at most
    # (F + 1) u times the magnitudes summed, u = eps / 2, the products' rounding
    # included: the two differ by at most about (F + 1) eps times them, and the
    # bound allows twice that
    magnitude = (np.abs(phi) + np.abs(np.asarray(scorer.mean))) @ np.abs(
        np.asarray(w) / np.asarray(scorer.scale)
    )
    bound = 2 * phi.shape[1] * np.finfo(np.float64).eps * magnitude
    assert np.all(np.abs(by_term - by_block) <= bound)
    if jax.default_backend() == "cpu":
        np.testing.assert_array_equal(score, by_term + np.asarray(scorer.weights[1]))


@pytest.mark.parametrize("mlp_dtype", [None, "float32"])
def test_the_mlp_trains_and_scores_in_its_own_precision(monkeypatch, mlp_dtype):
    """In a float64 audit the MLP's weights, its steps and its scores are in
    :data:`learning.MLP_DTYPE` (``None``: the audit's float64); the logistic
    scorer's stay in float64."""
    monkeypatch.setattr(learning, "MLP_DTYPE", mlp_dtype)
    y = _mixed(np.random.default_rng(4), 4000)
    with jax.enable_x64(True):
        for model in learning.MODELS:
            scorer = learning.fit(
                cell_key(0, "fit"), y[:2000], y[2000:] + 0.5, model=model, steps=5
            )
            score = learning.SCORES_BY_FEATURES["moments"][model](y, scorer)
            want = mlp_dtype if model == "mlp" and mlp_dtype else "float64"
            assert {
                np.asarray(w).dtype.name for w in jax.tree.leaves(scorer.weights)
            } == {want}
            assert np.asarray(score).dtype.name == want
            assert np.isfinite(np.asarray(score)).all()
            assert scorer.mean.dtype == scorer.scale.dtype == jnp.float64


def test_the_mlp_in_float32_separates_as_in_float64(monkeypatch):
    """Trained in float32 (the default), the MLP separates Laplace(0, 1) from
    Laplace(1, 1) on fresh draws as well as in float64: its AUC is not below the
    float64 one's by more than z standard errors of an AUC on these draws
    (Hanley and McNeil), z the normal quantile of the false-alarm budget. (Adam's
    steps amplify rounding, so the two trained weights differ by more than
    float32's rounding; what must not differ is how well they separate.)"""
    rng = np.random.default_rng(0)
    n = 20_000
    train = rng.laplace(0.0, 1.0, (n, 2)), rng.laplace(1.0, 1.0, (n, 2))
    fresh = rng.laplace(0.0, 1.0, (n, 2)), rng.laplace(1.0, 1.0, (n, 2))
    aucs = {}
    for mlp_dtype in (None, "float32"):
        monkeypatch.setattr(learning, "MLP_DTYPE", mlp_dtype)
        with jax.enable_x64(True):
            scorer = learning.fit(cell_key(0, "fit"), *train, model="mlp")
            first, second = (
                np.asarray(learning.score_mlp(jnp.asarray(f), scorer)) for f in fresh
            )
        aucs[mlp_dtype] = stats.mannwhitneyu(first, second).statistic / n**2
    auc = aucs[None]
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    se = math.sqrt((auc * (1 - auc) + 2 * (n - 1) * (q1 - auc**2 + q2 - auc**2)) / n**2)
    assert 0.75 < auc < 0.85  # the pair's AUC: the scorer learned the pair
    assert aucs["float32"] >= auc - stats.norm.isf(FAIL_PROB) * se
