"""The engine: reproducible per block, exact totals, no re-tracing."""

import itertools

import jax
import numpy as np
import pytest

from mcdp.attacks import MAJORITY_VOTE
from mcdp.engines.device import _count_impl
from mcdp.mechanisms import MECHANISMS, Mechanism, get_mechanism
from mcdp.sampling import (
    BLOCK_DRAWS,
    Progress,
    count_outcomes,
    iter_counts,
)


def _xs(d):
    return np.stack([np.zeros(d), np.ones(d)])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,d", [("adept", 8), ("dptext", 3), ("random", 1)])
def test_counts_do_not_depend_on_chunk_or_call_size(key, dtype, name, d):
    m = get_mechanism(name)
    params = m.calibrate_sanity_check(1.0, d)
    draws = 7 * BLOCK_DRAWS + 123  # a partial last block
    runs = [
        count_outcomes(key, m, MAJORITY_VOTE, _xs(d), params, draws, dtype=dtype, **kw)
        for kw in (
            {},
            {"chunk_blocks": 1},
            {"chunk_blocks": 3, "call_chunks": 1},
            {"chunk_blocks": 64},
        )
    ]
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0], other)
    assert runs[0].sum(axis=1).tolist() == [draws, draws]


def test_different_keys_give_different_counts(key):
    m = get_mechanism("laplace")
    a = count_outcomes(
        key, m, MAJORITY_VOTE, _xs(4), m.calibrate_sanity_check(1.0, 4), 10_000
    )
    b = count_outcomes(
        jax.random.fold_in(key, 1),
        m,
        MAJORITY_VOTE,
        _xs(4),
        m.calibrate_sanity_check(1.0, 4),
        10_000,
    )
    assert not np.array_equal(a, b)


def test_a_prefix_of_draws_is_a_prefix_of_blocks(key):
    """Stopping early keeps what was counted: the progress after each call equals a
    fresh run with that many draws."""
    m = get_mechanism("laplace")
    steps = list(
        iter_counts(
            key,
            m,
            MAJORITY_VOTE,
            _xs(2),
            m.calibrate_sanity_check(1.0, 2),
            10 * BLOCK_DRAWS,
            chunk_blocks=2,
            call_chunks=1,
        )
    )
    assert [s.draws for s in steps] == [2 * BLOCK_DRAWS * (i + 1) for i in range(5)]
    fresh = count_outcomes(
        key, m, MAJORITY_VOTE, _xs(2), m.calibrate_sanity_check(1.0, 2), steps[1].draws
    )
    np.testing.assert_array_equal(steps[1].counts, fresh)


def _tracing_laplace(traces: list) -> Mechanism:
    """Laplace whose sampler appends to ``traces`` each time JAX traces it."""
    laplace = get_mechanism("laplace")

    def counting_sample(k, x, p):
        traces.append(1)
        return laplace.sample(k, x, p)

    return Mechanism(
        "counting", counting_sample, laplace.calibrate_sanity_check, None, "epsilon-DP"
    )


def test_new_keys_params_and_draws_do_not_retrace(key):
    traces = []
    m = _tracing_laplace(traces)
    _count_impl.clear_cache()
    for i, (eps, draws) in enumerate(
        [(1.0, 5000), (2.0, 9000), (0.3, 3 * BLOCK_DRAWS)]
    ):
        count_outcomes(
            jax.random.fold_in(key, i),
            m,
            MAJORITY_VOTE,
            _xs(4),
            m.calibrate_sanity_check(eps, 4),
            draws,
        )
    assert len(traces) == 1


def test_draws_of_one_bracket_of_blocks_share_one_program(key):
    """``draw`` compiles for its blocks per call (:func:`call_blocks`), not for the
    draws: sizes between the same powers of two of blocks, and all sizes of a
    call or more (on a CPU, the selection draws of audits at 1e5, 1e7 and 1e8),
    trace the sampler once each, and each is a prefix of the larger draws of its
    key."""
    from mcdp.engines.device import draw_call_blocks
    from mcdp.sampling import draw

    traces = []
    m = _tracing_laplace(traces)
    per_call = draw_call_blocks(1, jax.default_backend())  # blocks of one scalar
    sizes = (
        3 * BLOCK_DRAWS + 1,  # 4 blocks
        4 * BLOCK_DRAWS,
        per_call * 3 // 4 * BLOCK_DRAWS + 5,  # 97 blocks on a CPU: about 1e5 draws
        (per_call + per_call // 2) * BLOCK_DRAWS + 5,
    )
    params = m.calibrate_sanity_check(1.0, 1)
    outputs = [draw(key, m, _xs(1), params, n, dtype="float32") for n in sizes]
    assert len(traces) == 2
    for small in outputs[:-1]:
        np.testing.assert_array_equal(small, outputs[-1][:, : small.shape[1]])


@pytest.mark.parametrize("d", [1, 3])
def test_draws_do_not_depend_on_the_blocks_per_call(key, monkeypatch, d):
    """``draw``'s outputs, and a transform's values of them, are the same with
    calls of 3 blocks as with the default's, across a partial first and last
    block (``first_draw``)."""
    from mcdp.engines import device
    from mcdp.sampling import draw

    m = get_mechanism("laplace")
    params = m.calibrate_sanity_check(1.0, d)
    n, first = 9 * BLOCK_DRAWS + 77, BLOCK_DRAWS // 3

    def both():
        return (
            draw(key, m, _xs(d), params, n, first_draw=first),
            draw(key, m, _xs(d), params, n, transform=_max_of_row, first_draw=first),
        )

    default = both()
    monkeypatch.setattr(device, "draw_call_blocks", lambda dim, platform: 3)
    for ours, theirs in zip(both(), default, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def _max_of_row(y, aux):
    del aux
    return y.max(axis=-1)


def _buffer_owner(array):
    """What holds ``array``'s memory: ``None`` where NumPy allocated it."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    owner = array.base
    return owner.obj if isinstance(owner, memoryview) else owner


def test_the_host_arrays_in_base_pages_hold_the_same_draws(key, monkeypatch):
    """``draw``'s host arrays mapped in base pages (``HOST_PAGES_SMALL``) hold the
    values that NumPy's arrays hold, for every array of a transform's tuple, and
    are ordinary writable arrays; those under ``SMALL_PAGES_FROM`` bytes stay
    NumPy's."""
    import mmap

    from mcdp.engines import device
    from mcdp.sampling import draw

    m = get_mechanism("laplace")
    params = m.calibrate_sanity_check(1.0, 1)
    # 2n float64 values past the bound, 2n int32 under it
    n = device.SMALL_PAGES_FROM // 16 + 3 * BLOCK_DRAWS + 5

    def transform(y, aux):
        del aux
        return y[:, 0], (y[:, 0] > 0).astype(np.int32)

    forms = {}
    for small in (False, True):
        monkeypatch.setattr(device, "HOST_PAGES_SMALL", small)
        forms[small] = draw(
            key, m, _xs(1), params, n, dtype="float64", transform=transform
        )
    for numpy_array, mapped in zip(forms[False], forms[True], strict=True):
        np.testing.assert_array_equal(numpy_array, mapped)
        assert mapped.shape == (2, n) and mapped.flags.c_contiguous
        assert mapped.flags.writeable
    assert isinstance(_buffer_owner(forms[True][0]), mmap.mmap)
    assert not isinstance(_buffer_owner(forms[False][0]), mmap.mmap)
    assert not isinstance(_buffer_owner(forms[True][1]), mmap.mmap)
    small = device.host_array((3, 5), np.float32)
    assert small.shape == (3, 5) and small.dtype == np.float32


def test_a_resumed_run_counts_as_one_run(key):
    """Going on from a stored Progress (another chunk size too) gives the counts of
    one run of the total, so later rounds reuse what is counted."""
    m = get_mechanism("adept")
    params, total = m.calibrate_sanity_check(1.0, 8), 9 * BLOCK_DRAWS + 77
    one_run = count_outcomes(key, m, MAJORITY_VOTE, _xs(8), params, total)
    first = count_outcomes(key, m, MAJORITY_VOTE, _xs(8), params, 4 * BLOCK_DRAWS)
    *_, last = iter_counts(
        key, m, MAJORITY_VOTE, _xs(8), params, total, chunk_blocks=3,
        resume=Progress(4 * BLOCK_DRAWS, first),
    )  # fmt: skip
    assert last.draws == total
    np.testing.assert_array_equal(last.counts, one_run)


@pytest.mark.parametrize(
    "draws,counts,match",
    [
        (1000, [[1000, 0], [0, 1000]], "multiple of 1024"),
        (BLOCK_DRAWS, [[BLOCK_DRAWS, 0]], r"shape \(2, 2\)"),
        (BLOCK_DRAWS, [[BLOCK_DRAWS, 1], [0, BLOCK_DRAWS]], "sum to"),
        (8 * BLOCK_DRAWS, [[8 * BLOCK_DRAWS, 0], [0, 8 * BLOCK_DRAWS]], "resume.draws"),
    ],
)
def test_a_bad_resume_is_refused(key, draws, counts, match):
    m = get_mechanism("laplace")
    runs = iter_counts(
        key, m, MAJORITY_VOTE, _xs(2), m.calibrate_sanity_check(1.0, 2),
        4 * BLOCK_DRAWS,
        resume=Progress(draws, np.array(counts)),
    )  # fmt: skip
    with pytest.raises(ValueError, match=match):
        next(runs)


def test_counts_stay_exact_past_int32(key):
    """More than 2**31 draws: each compiled call counts in int32, the host sums."""
    m = get_mechanism("none")  # cheap: the attack and the counting are all there is
    draws = 2**31 + 1234
    counts = count_outcomes(
        key,
        m,
        MAJORITY_VOTE,
        _xs(1),
        m.calibrate_sanity_check(1.0, 1),
        draws,
        dtype="float32",
    )
    assert counts.tolist() == [[draws, 0], [0, draws]]


def test_x64_is_not_left_on_between_yields(key):
    m = get_mechanism("laplace")
    before = jax.config.jax_enable_x64
    runs = iter_counts(
        key, m, MAJORITY_VOTE, _xs(2), m.calibrate_sanity_check(1.0, 2),
        3 * BLOCK_DRAWS,
        dtype="float64", chunk_blocks=1, call_chunks=1,
    )  # fmt: skip
    for _ in runs:
        assert jax.config.jax_enable_x64 == before


def test_the_counting_loop_by_block_gives_the_batched_counts(monkeypatch):
    """The MLP's attack asks the counting loop to guess block by block on a CPU;
    batched or by block, each block or each chunk's blocks drawn once (in a cond)
    or not, an audit counts the same."""
    import mcdp
    from mcdp.attacks import learned_attack
    from mcdp.engines import device

    mlp = learned_attack(train_draws=5_000, select_draws=5_000, model="mlp")
    spec = mcdp.AuditSpec("laplace", 1.0, dim=3, delta=0.0, seed=3, attack=mlp)
    records = []
    forms = ((False, True, False), (False, True, True), (True, False, False),
             (True, True, False))  # fmt: skip
    for flag, once, batch_once in forms:
        monkeypatch.setattr(device, "GUESS_BY_BLOCK", flag)
        monkeypatch.setattr(device, "DRAW_ONCE", once)
        monkeypatch.setattr(device, "BATCH_ONCE", batch_once)
        records.append(mcdp.run(spec, mcdp.Draws(40_000)))
    for record in records[1:]:
        assert record.events == records[0].events
        assert record.profile == records[0].profile
        assert record.epsilon_lower == records[0].epsilon_lower > 0


def _pattern_classes(y, aux):
    """Each 0/1 pattern of ``y``'s queries read as a binary number, modulo 7: a guess
    that every output's every query moves."""
    weights = 2.0 ** jax.numpy.arange(y.shape[-1], dtype=y.dtype)
    return (jax.numpy.sum(y * weights[None, :], axis=-1) % 7).astype(jax.numpy.int32)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_sampler_in_two_parts_is_the_sample_and_counts_the_same(monkeypatch, dtype):
    """Every mechanism that declares its sampler in two parts (``noise_apart``) samples
    the same outputs, to the bit, through them; and the counting loop, which draws
    the noise apart where it draws blocks once on a CPU (batched or by block), counts
    the same with and without it, either way."""
    from mcdp.core.attack import Attack
    from mcdp.engines import device
    from mcdp.mechanisms import MECHANISMS

    declared = [m for m in MECHANISMS.values() if m.noise_apart is not None]
    assert {"svt1", "svt6", "svt34-parallel", "noisy-hist1"} <= {
        m.name for m in declared
    }
    for m in declared:
        params = m.calibrate(0.1, 0.0, 10, 1.0)
        with jax.enable_x64(dtype == "float64"):
            x = jax.numpy.asarray(np.linspace(-1.0, 2.0, 30).reshape(3, 10), dtype)
            for seed in range(3):
                k = jax.random.key(seed)
                whole = np.asarray(jax.jit(m.sample)(k, x, params))
                parts = np.asarray(
                    jax.jit(lambda *a, m=m: m.noise_apart(*a))(k, x, params)
                )
                assert whole.dtype == parts.dtype
                np.testing.assert_array_equal(whole, parts)
    m = get_mechanism("svt6")
    params = m.calibrate(0.1, 0.0, 10, 1.0)
    classes = Attack("classes", 7, _pattern_classes)
    counts = []
    for apart, by_block in itertools.product((False, True), repeat=2):
        monkeypatch.setattr(device, "NOISE_APART", apart)
        monkeypatch.setattr(device, "GUESS_BY_BLOCK", by_block)
        counts.append(
            count_outcomes(
                jax.random.key(5),
                m,
                classes,
                _xs(10),
                params,
                50_000,
                dtype=dtype,
                chunk_blocks=8,
            )
        )
    assert counts[0].sum() == 2 * 50_000 and (counts[0] > 0).all()
    for other in counts[1:]:
        np.testing.assert_array_equal(other, counts[0])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    "name",
    [
        "svt1",
        "svt34-parallel",
        "noisy-hist1",
        "numerical-svt",
        "prefix-sum",
        "truncated-geometric",
        "report-noisy-max1",
        "report-noisy-max2",
    ],
)
def test_the_noise_drawn_apart_gives_the_outputs_of_the_sample(key, name, dtype):
    """The engine's draws of a sampler in two parts, its noise in a cond of its own and
    flat (by block and batched, drawn once), are those of the sampler whole, in every
    form, to the bit."""
    from mcdp.engines.device import _draw_impl, _identity, _input_keys

    m = get_mechanism(name)
    d = 10
    params = m.calibrate(0.1, 0.0, d, 1.0)
    with jax.enable_x64(dtype == "float64"):
        keys = _input_keys(key, 2)
        xs = jax.numpy.asarray(np.stack([np.linspace(-1.0, 2.0, d), np.ones(d)]), dtype)
        raw = [
            np.asarray(_draw_impl(keys, xs, params, 3, None, sample=sample,
                                  transform=_identity, num_blocks=4,
                                  by_block=by_block, once=once))
            for sample in (m.sample, m.noise_apart)
            for by_block, once in itertools.product((False, True), repeat=2)
        ]  # fmt: skip
    assert raw[0].dtype == dtype
    assert raw[0].shape[:2] == (2, 4 * BLOCK_DRAWS)
    rows = raw[0].reshape(-1, raw[0].shape[-1])
    assert len(np.unique(rows, axis=0)) > 5  # outputs that move
    for other in raw[1:]:
        np.testing.assert_array_equal(other, raw[0])


def test_only_the_mlp_asks_for_guesses_by_block():
    from mcdp.attacks import _scored

    thresholds = np.array([0.0, 1.0])
    assert _scored("learned", "mlp", "moments", thresholds, "mlp").by_block
    assert not _scored("learned", "logistic", "moments", thresholds, "x").by_block
    assert not MAJORITY_VOTE.by_block


def test_the_sparse_vector_cutoffs_ask_for_their_draws_by_block(monkeypatch):
    """The Sparse Vector variants with a cutoff ask the counting loop on a CPU to
    draw block by block whatever the attack; no other mechanism does, and the
    majority vote's guess alone (which does not ask) is counted batched on
    ``svt6`` (no cutoff). Either way an audit counts the same."""
    import mcdp
    from mcdp.engines import device

    asking = {name for name, m in MECHANISMS.items() if m.draws_by_block}
    cutoffs = {"svt1", "svt2", "svt3", "svt4", "svt34-parallel", "numerical-svt"}
    assert asking == cutoffs
    forms = []
    count = device._count_impl

    def spy(*args, **kwargs):
        forms.append(kwargs["by_block"])
        return count(*args, **kwargs)

    monkeypatch.setattr(device, "_count_impl", spy)
    records = {}
    for name in ("svt2", "svt1", "svt6"):
        spec = mcdp.AuditSpec(
            name, 0.1, pair="x-shuffle", dim=10, delta=0.0, seed=2,
            attack="majority",
        )  # fmt: skip
        for flag in (None, False):
            monkeypatch.setattr(device, "GUESS_BY_BLOCK", flag)
            forms.clear()
            records[name, flag] = mcdp.run(spec, mcdp.Draws(3 * BLOCK_DRAWS))
            cpu = jax.default_backend() == "cpu"
            asked = flag is None and name in cutoffs and cpu
            assert forms and set(forms) == {asked}, (name, flag)
        assert records[name, None].profile == records[name, False].profile


@pytest.mark.parametrize(
    "model", [pytest.param("logistic", marks=pytest.mark.slow), "mlp"]
)
def test_a_transform_block_by_block_gives_the_batched_values(key, model):
    """The draws' transform (here a scorer, as the portfolio's selection draws have)
    runs block by block on a CPU, each block drawn once (in a cond), and batched
    elsewhere, or batched with the blocks drawn once: the same outputs, and their
    scores equal to rounding."""
    from mcdp import learning
    from mcdp.engines.device import _draw_impl, _identity, _input_keys

    m = get_mechanism("laplace")
    d = 3
    params = m.calibrate_sanity_check(1.0, d)
    keys = _input_keys(key, 2)
    xs = jax.numpy.asarray(_xs(d))
    common = dict(sample=m.sample, num_blocks=5)
    forms = (
        (False, False),
        (False, True),
        (True, False),
        (True, True),
    )  # by block; once
    raw = [
        np.asarray(_draw_impl(keys, xs, params, 2, None, transform=_identity,
                              by_block=flag, once=once, **common))
        for flag, once in forms
    ]  # fmt: skip
    for other in raw[1:]:
        np.testing.assert_array_equal(other, raw[0])
    scorer = learning.fit(key, raw[0][0], raw[0][1], model=model, steps=20)
    scores = [
        np.asarray(_draw_impl(keys, xs, params, 2, scorer, by_block=flag, once=once,
                              transform=learning.SCORES[model], **common))
        for flag, once in forms
    ]  # fmt: skip
    assert scores[0].shape == (2, 5 * BLOCK_DRAWS)
    rounding = 64 * np.finfo(scores[0].dtype).eps  # a sum's reordering, any dtype
    for other in scores[1:]:
        np.testing.assert_allclose(other, scores[0], rtol=rounding, atol=rounding)
