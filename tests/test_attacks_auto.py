"""The portfolio (attack "auto"): what it picks, what it records, and that its bound
stays valid whatever it compared.

The validity tests audit mechanisms whose privacy loss on the pair is known (0 for
an input-independent mechanism, the claim for exact samplers) at a confidence whose
false alarms over all their runs stay within a stated budget, with fixed seeds.
"""

from __future__ import annotations

import functools
import gc
import math
import re
import weakref

import jax.numpy as jnp
import numpy as np
import pytest

import mcdp
from mcdp import attacks, learning, subjects
from mcdp._bits import bit_floats, bit_order
from mcdp.attacks import (
    AUTO_CANDIDATES,
    CANDIDATES,
    auto_attack,
    float_support_attack,
    histogram_score,
    histogram_table,
    learned_attack,
)  # fmt: skip
from mcdp.mechanisms import SUITE
from mcdp.pairs import make_pair

from conftest import Z, load_benchmark

SEED = 20261125
SMALL = dict(train_draws=20_000, select_draws=20_000)
OUTCOME_LABELS = ("support", "structure", "majority", "float-support")


def test_auto_is_the_default_of_the_epsilon_delta_audit_and_of_the_search():
    spec = mcdp.AuditSpec("laplace", 1.0, pair="axis", dim=1)
    assert spec.plan.attack.name == "auto"
    assert mcdp.AuditSpec("laplace", 1.0, dim=1).plan.attack.name == "majority"
    import inspect

    assert inspect.signature(mcdp.search).parameters["attack"].default == "auto"
    assert inspect.signature(mcdp.audit_delta).parameters["attack"].default == "auto"


def test_auto_catches_the_textbook_float_laplace_like_float_support():
    """The README's example: x + Lap(1) in float64 from NumPy, 0 against 1. The
    portfolio must reach at least 0.9x the bound of the specialised attack on the
    same counted draws (the key follows the spec, not the attack)."""
    textbook = subjects.numpy_textbook_laplace(1.0)
    pair = np.array([[0.0], [1.0]])
    common = dict(pair=pair, delta=0.0, seed=SEED)
    auto = mcdp.run(
        mcdp.AuditSpec(textbook, 1.0, attack=auto_attack(**SMALL), **common),
        mcdp.Draws(100_000),
    )
    special = mcdp.run(
        mcdp.AuditSpec(
            textbook, 1.0, attack=float_support_attack(train_draws=20_000), **common
        ),
        mcdp.Draws(100_000),
    )
    assert special.violated and auto.violated
    assert auto.epsilon_lower >= 0.9 * special.epsilon_lower
    assert auto.attack in ("float-support", "learned-bits")
    # the record keeps every applicable candidate's score, the winner's the best
    assert set(auto.selection) <= set(AUTO_CANDIDATES)
    assert {"float-support", "learned", "learned-mlp", "learned-bits"} <= set(
        auto.selection
    )
    assert auto.selection[auto.attack] == max(auto.selection.values())


@pytest.mark.slow
def test_the_scorer_at_the_inputs_joins_where_outputs_vary_and_inputs_are_few():
    """``learned-inputs`` (asked for: not a default) needs a continuous output
    (numerical-svt's answers, not svt1's codes) and a pair of at most
    MAX_INPUT_KNOTS distinct values."""

    # the logistic scorer beside it, which always applies; few draws: only which
    # candidates are prepared matters here
    candidates = ("learned", "learned-inputs")
    assert set(candidates) <= set(CANDIDATES)

    def selection(mechanism, pair, dim):
        r = mcdp.audit_delta(
            mechanism, 0.1, 0.0, dim, 5_000, pair=pair, seed=SEED,
            attack=auto_attack(
                candidates=candidates, train_draws=5_000, select_draws=5_000
            ),
        )  # fmt: skip
        return set(r.selection)

    assert "learned-inputs" in selection("numerical-svt", "all-above-all-below", 10)
    assert "learned-inputs" not in selection("svt1", "all-above-all-below", 10)
    many = np.arange(10.0).reshape(2, 5)  # ten distinct values
    assert "learned-inputs" not in selection("noisy-hist1", many, 5)
    assert "learned-inputs" in selection("noisy-hist1", many[:, :4], 4)


def test_the_scorer_at_the_inputs_counts_where_it_wins():
    """``learned-inputs`` alone in the portfolio wins, and its events are counted
    (its scorer's aux takes the form of every scorer's, with no table: it trains on
    its own sample, of continuous outputs)."""
    r = mcdp.audit_delta(
        "numerical-svt", 0.1, 0.0, 10, 20_000, pair="all-above-all-below", seed=SEED,
        attack=auto_attack(
            candidates=("learned-inputs",), train_draws=5_000, select_draws=5_000
        ),
    )  # fmt: skip
    assert r.attack == "learned-inputs" and set(r.selection) == {"learned-inputs"}
    assert math.isfinite(r.epsilon_lower) and r.epsilon_lower >= 0.0


def test_auto_takes_the_likelihood_ratio_where_the_mechanism_has_a_density():
    r = mcdp.audit_delta(
        "noisy-hist1", 0.1, 0.0, 5, 50_000, pair="one-above",
        attack=auto_attack(**SMALL), seed=SEED,
    )  # fmt: skip
    assert "lr" in r.selection and "majority" not in r.selection


def test_auto_adds_the_majority_vote_for_discrete_outputs():
    # svt2: discrete outputs and no declared loss (svt1 has its patterns' one)
    tiny = auto_attack(train_draws=5_000, select_draws=5_000)
    r = mcdp.audit_delta(
        "svt2", 0.1, 0.0, 10, 5_000, pair="x-shuffle", attack=tiny, seed=SEED
    )
    assert "majority" in r.selection and "lr" not in r.selection
    assert "histogram" in r.selection  # at most 4,096 distinct outputs
    # 5,000 selection draws promise no positive bound at their pessimistic ends:
    # the candidates are compared by the bounds at the rates themselves, and the
    # winner is the best of what is recorded, not the first in order
    assert r.selection[r.attack] == max(r.selection.values())
    assert len(set(r.selection.values())) > 1
    # where the preparation's time went, in the order it was spent: every candidate,
    # applicable or not, between the two draws, in the portfolio's order but the
    # scorers that share a sample, last, after it; then the choice
    shared = ("learned", "learned-mlp", "learned-bits")
    stages = [
        "training draws",
        *(f"prepare {label}" for label in AUTO_CANDIDATES if label not in shared),
        "training sample",
        *(f"prepare {label}" for label in shared),
        "selection draws",
        "choice",
    ]
    assert list(r.attack_stages) == stages
    assert all(v >= 0 for v in r.attack_stages.values())
    assert sum(r.attack_stages.values()) <= r.attack_seconds + 1e-3


@pytest.mark.parametrize("attack", ["auto", "learned"])
def test_the_training_outputs_are_dropped_before_the_scorers_train(monkeypatch, attack):
    """A scorer trains on a sample that copies the training outputs, as large, so
    the outputs are dropped first. In the portfolio, the scorers that share one
    sample train after every other candidate is prepared on the outputs; the record
    keeps the portfolio's order. No reference to the outputs is left while a
    scorer fits."""
    drawn, alive = [], []
    draw, fit = attacks.draw, attacks.learning.fit

    def recorded_draw(*args, **kwargs):
        out = draw(*args, **kwargs)
        if kwargs.get("transform") is None:  # the training draws
            drawn.append(weakref.ref(out))
        return out

    def watched_fit(*args, **kwargs):
        gc.collect()
        alive.append([ref() is not None for ref in drawn])
        return fit(*args, **kwargs)

    monkeypatch.setattr(attacks, "draw", recorded_draw)
    monkeypatch.setattr(attacks.learning, "fit", watched_fit)
    tiny = dict(train_draws=5_000, select_draws=5_000)
    chosen = auto_attack(**tiny) if attack == "auto" else learned_attack(**tiny)
    r = mcdp.audit_delta(
        "svt2", 0.1, 0.0, 10, 5_000, pair="x-shuffle", attack=chosen, seed=SEED
    )
    fits = 3 if attack == "auto" else 1  # auto: logistic, MLP, bits
    assert len(drawn) == 1 and alive == [[False]] * fits
    if attack == "auto":
        assert "histogram" in r.selection  # prepared first, on the outputs' keys
        assert list(r.selection) == [c for c in AUTO_CANDIDATES if c in r.selection]


@pytest.mark.slow
def test_the_exact_loss_of_few_values_is_judged_as_a_discrete_scorer():
    """svt1's patterns take ten values of the exact loss. On the first half of the
    selection draws its events are ranked at their rates, as the histogram's are:
    both promise a positive bound and the exact loss, first in the order and within
    the margin, is counted. At the counts' pessimistic ends, as before, its promise
    was below 0 (-8e-5 at seed 0) and the histogram was counted (0.0456 against
    0.0495)."""
    tried = auto_attack(
        candidates=("lr", "histogram"), train_draws=100_000, select_draws=100_000
    )
    r = mcdp.audit_delta(
        "svt1", 0.1, 0.0, 10, 1_000_000, pair="x-shuffle", attack=tried, seed=0
    )
    assert r.selection["lr"] > 0 and r.selection["histogram"] > 0
    assert r.attack == "lr"


def _svt1_memo(drop_pattern: bool):
    """svt1's mechanism, pair, params and outputs of both inputs, and the memo of
    its exact loss on them, made without the outputs of one pattern (all below) when
    ``drop_pattern``."""
    import jax

    mech = mcdp.mechanisms.MECHANISMS["svt1"]
    pair = make_pair("x-shuffle", 10, 1.0)
    params = mech.calibrate(0.1, 0.0, 10, 1.0)
    sample = jax.jit(mech.sample)
    outputs = np.stack([
        np.asarray(sample(jax.random.key(i), jnp.broadcast_to(x, (4096, 10)), params))
        for i, x in enumerate(jnp.asarray(pair))
    ])  # fmt: skip
    training = outputs
    if drop_pattern:  # a memo that lacks the all-below outputs
        kept = ~(outputs == 0).all(axis=-1).any(axis=0)
        training = outputs[:, kept]
    aux = (jnp.asarray(pair[0]), jnp.asarray(pair[1]), params)
    keyed = attacks.output_keys(training)
    return mech, aux, outputs, attacks.loss_memo(mech, aux, training, keyed, "float64")


def test_the_loss_memo_gives_the_exact_loss_and_computes_only_what_it_lacks():
    """svt1's exact loss looked up at its training outputs' distinct patterns
    equals the loss computed at each output (float64, to 1e-12);
    a block whose outputs are all in the memo never calls the loss (a loss of NaN
    would show), and a block with an output that the memo lacks gets the computed
    loss there, one block at a time (lax.map, the CPU's counting loop) and batched
    (vmap)."""
    import jax

    with jax.enable_x64(True):
        _check_the_memo_of_svt1()


def _check_the_memo_of_svt1():
    import jax

    mech, aux, outputs, memo = _svt1_memo(drop_pattern=True)
    y = jnp.asarray(outputs[0, :2048].reshape(2, 1024, 10))
    lacking = np.asarray((y == 0).all(axis=-1))  # the pattern the memo lacks
    assert lacking.any(axis=1).all()  # both blocks hold it
    exact = np.asarray(jax.vmap(lambda b: mech.privacy_loss(b, *aux))(y))

    def poisoned(b, *args):  # the computed loss, NaN at the outputs in the memo
        seen = ~(b == 0).all(axis=-1)
        return jnp.where(seen, jnp.nan, mech.privacy_loss(b, *args))

    memo = jax.tree.map(jnp.asarray, memo)
    for over in (jax.vmap, _by_block):
        got = np.asarray(
            over(lambda b: attacks.memoised_loss(b, memo, mech.privacy_loss, aux))(y)
        )
        np.testing.assert_allclose(got, exact, rtol=0, atol=1e-12)
        assert np.array_equal(got[lacking], exact[lacking])  # computed there
        # with the NaN loss: finite where looked up, the loss where it lacks
        mixed = np.asarray(
            over(lambda b: attacks.memoised_loss(b, memo, poisoned, aux))(y)
        )
        assert np.isfinite(mixed).all()
        np.testing.assert_array_equal(mixed[lacking], exact[lacking])
    # a block of outputs all in the memo: the loss is not computed at all
    full = y[:, ~lacking.any(axis=0)][:1]

    def nan(b, *args):
        return jnp.full(b.shape[:1], jnp.nan)

    for over in (jax.vmap, _by_block):
        got = np.asarray(over(lambda b: attacks.memoised_loss(b, memo, nan, aux))(full))
        assert np.isfinite(got).all()


def _outside_loop_bodies(hlo: str) -> str:
    """The text of the computations of a compiled program (XLA's HLO text) that run
    whatever its loops do: the entry and what it calls, not through a loop's body."""
    computations, name = {}, None
    for line in hlo.splitlines():
        head = re.match(r"(ENTRY )?%?([\w.\-]+) \(.*\{$", line)
        if head:
            name = "ENTRY" if head.group(1) else head.group(2)
            computations[name] = []
        elif name is not None:
            computations[name].append(line)
    reached, pending = set(), ["ENTRY"]
    while pending:
        name = pending.pop()
        if name in reached or name not in computations:
            continue
        reached.add(name)
        for line in computations[name]:
            for kind, callee in re.findall(r"(\w+)=%([\w.\-]+)", line):
                if kind != "body":
                    pending.append(callee)
            for group in re.findall(r"\w+=\{([^}]*)\}", line):
                pending += re.findall(r"%([\w.\-]+)", group)
    return "\n".join(line for name in reached for line in computations[name])


def test_the_loss_of_outputs_in_the_memo_is_computed_only_in_the_loop():
    """Where every output is in the memo, the loss's pass never runs: in the compiled
    program, batched (``vmap``, the CPU's counting loop) and one block at a time, no
    operation of the loss sits outside the loop's body, where XLA moved a loss of
    the outputs alone (loop-invariant) and computed it at every block. The loss
    here is marked by the one cube root of the program."""
    import jax

    with jax.enable_x64(True):
        mech, aux, outputs, memo = _svt1_memo(drop_pattern=False)
        memo = jax.tree.map(jnp.asarray, memo)
        y = jnp.asarray(outputs[0, :2048].reshape(2, 1024, 10))

        def marked(b, *args):
            return jnp.sum(jnp.cbrt(b), axis=-1) + mech.privacy_loss(b, *args)

        def one(b):
            return attacks.memoised_loss(b, memo, marked, aux)

        for name, over in (("batched", jax.vmap), ("by block", _by_block)):
            hlo = jax.jit(over(one)).lower(y).compile().as_text()
            assert "cbrt(" in hlo, name  # the mark survives compilation
            assert "cbrt(" not in _outside_loop_bodies(hlo), name
            got = np.asarray(jax.jit(over(one))(y))
            exact = np.asarray(jax.vmap(lambda b: mech.privacy_loss(b, *aux))(y))
            np.testing.assert_allclose(got, exact, rtol=0, atol=1e-12)


def test_a_loss_looked_up_is_counted_batched_and_one_computed_by_block():
    """The portfolio's exact loss counts batched on a CPU where it is looked up
    (svt1's patterns), by block where a quadrature computes it at every output
    (svt3's continuous answers: no memo), as the mechanism asks."""
    import jax

    from mcdp.running import _bind

    tried = auto_attack(candidates=("lr",))
    for name, pair, memoised in (
        ("svt1", "x-shuffle", True),
        ("svt3", "half-half", False),
    ):
        spec = mcdp.AuditSpec(name, 0.1, pair=pair, dim=10, attack=tried, seed=0)
        attack, (aux, _) = _bind(spec, jax.random.key(0), 100_000)
        assert attack.name == "lr" and mcdp.mechanisms.MECHANISMS[name].loss_by_block
        assert (aux[-1] is not None) == memoised, name
        assert attack.by_block == (not memoised), name


def test_the_shared_scorers_are_looked_up_where_the_outputs_are_discrete():
    """The portfolio's scorer, where it wins on svt2's patterns, carries the table of
    its scores at the training outputs' distinct patterns, and its guess with the
    table is the guess that scores every output, to the bit, on fresh outputs of
    both inputs, one block at a time and batched; on laplace-parallel's continuous
    outputs it has none."""
    import jax

    with jax.enable_x64(True):
        _check_the_score_memo("svt2", "x-shuffle", memoised=True)
        _check_the_score_memo("laplace-parallel", "scalar-0-1", memoised=False)


def _check_the_score_memo(name: str, pair: str, memoised: bool) -> None:
    import jax

    from mcdp.running import _bind

    case = SUITE[name]
    spec = mcdp.AuditSpec(
        name, case.epsilon, pair=pair, dim=case.dim, seed=0,
        attack=auto_attack(candidates=("learned",)),
    )  # fmt: skip
    attack, ((scorer, memo), thresholds) = _bind(spec, jax.random.key(0), 100_000)
    assert attack.name == "learned"
    assert (memo is not None) == memoised, name
    if memo is None:
        return
    assert np.isfinite(memo.table).sum() == 11  # the patterns drawn
    plan = spec.plan
    y = jnp.stack([
        plan.mechanism.sample(
            jax.random.key(9 + i), jnp.broadcast_to(x, (2048, case.dim)), plan.params
        )
        for i, x in enumerate(jnp.asarray(plan.pair))
    ]).reshape(4, 1024, case.dim)  # fmt: skip
    plain = attacks._LEARNED_GUESSES["moments"]["logistic"]
    want = np.asarray(jax.vmap(lambda b: plain(b, (scorer, thresholds)))(y))
    aux = (jax.tree.map(jnp.asarray, (scorer, memo)), thresholds)
    for over in (jax.vmap, _by_block):
        got = np.asarray(jax.jit(over(lambda b: attack.guess(b, aux)))(y))
        np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 1  # the thresholds split the outputs


def _by_block(f):
    import jax

    return lambda ys: jax.lax.map(f, ys)


def test_outcomes_held_in_one_byte_change_no_record(monkeypatch):
    """The outcome attacks' values on the selection draws held in one byte each
    (NARROW_OUTCOMES) give the record that floats give: the same outcomes, so the
    same counts, selection table and bound."""
    real, held = attacks.draw, []

    def spy(*args, **options):
        out = real(*args, **options)
        if options.get("transform") is not None:
            held.append([np.asarray(v).dtype for v in out])
        return out

    monkeypatch.setattr(attacks, "draw", spy)
    audit = functools.partial(
        mcdp.audit_delta, "report-noisy-max1", 0.1, 0.0, 5, 200_000,
        pair="one-below-rest-above", seed=3,
    )  # fmt: skip
    records = []
    for narrow in (False, True):
        monkeypatch.setattr(attacks, "NARROW_OUTCOMES", narrow)
        records.append(audit())
    floats, narrow = records
    assert narrow.attack == floats.attack == "majority"
    assert narrow.epsilon_lower == floats.epsilon_lower
    assert narrow.selection == floats.selection
    assert len(held) == 2
    labels = list(narrow.selection)  # in the candidates' order, as their arrays
    assert [dtype.kind for dtype in held[0]] == ["f"] * len(labels)
    outcomes = [label in OUTCOME_LABELS for label in labels]
    assert sum(outcomes) == 2  # majority and float-support apply here
    assert [dtype == np.uint8 for dtype in held[1]] == outcomes, (labels, held[1])


@pytest.mark.slow
def test_the_score_memo_changes_no_count():
    """The default audits of svt2 and svt5, where a scorer wins, give the same
    record with the shared scorers looked up and computed at every output."""
    records = {}
    try:
        for memo in (False, True):
            attacks.SCORE_MEMO = memo
            records[memo] = [
                mcdp.audit_delta(name, 0.1, 0.0, 10, 200_000, pair="x-shuffle", seed=3)
                for name in ("svt2", "svt5")
            ]
    finally:
        attacks.SCORE_MEMO = True
    for computed, memoised in zip(records[False], records[True], strict=True):
        assert memoised.attack == computed.attack
        assert memoised.attack.startswith("learned")
        assert memoised.epsilon_lower == computed.epsilon_lower
        assert memoised.selection == computed.selection


@pytest.mark.slow
def test_the_loss_memo_changes_no_count(monkeypatch):
    """The default audit of svt1 and svt6 (their exact loss alone, whose memo holds
    every pattern their training draws took: 11 and 1,024) gives the same record with
    the loss looked up and computed at every output."""
    tried = auto_attack(candidates=("lr",))
    records, sizes = {}, []

    original = attacks.loss_memo

    def counted(*args):
        memo = original(*args)
        sizes.append(int(np.sum(~np.isnan(memo.table))))
        return memo

    monkeypatch.setattr(attacks, "loss_memo", counted)
    try:
        for memo in (False, True):
            attacks.LOSS_MEMO = memo
            records[memo] = [
                mcdp.audit_delta(
                    name, 0.1, 0.0, 10, 200_000, pair="x-shuffle", attack=tried, seed=3
                )
                for name in ("svt1", "svt6")
            ]
    finally:
        attacks.LOSS_MEMO = True
    assert sizes == [11, 1024]  # built where looked up only
    for computed, memoised in zip(records[False], records[True], strict=True):
        assert memoised.attack == computed.attack == "lr"
        assert memoised.epsilon_lower == computed.epsilon_lower
        assert memoised.profile == computed.profile
        assert memoised.selection == computed.selection


def test_auto_options_are_checked():
    with pytest.raises(ValueError, match="candidates"):
        auto_attack(candidates=("oracle",))
    with pytest.raises(ValueError, match="at least one candidate"):
        auto_attack(candidates=())
    with pytest.raises(ValueError, match="train_draws"):
        auto_attack(train_draws=0)
    with pytest.raises(ValueError, match="sanity check"):
        mcdp.AuditSpec("laplace", 1.0, dim=2, attack="auto")
    with pytest.raises(ValueError, match="none of the candidates"):
        mcdp.audit_delta(
            "laplace", 1.0, 0.0, 1, 1000, pair="axis",
            attack=auto_attack(candidates=("support",)),
        )  # fmt: skip


def test_a_later_candidate_displaces_an_earlier_one_only_beyond_the_margin():
    """The choice among promises (scores) with their spreads: the earlier of two
    within ``margin`` spreads of the best is kept, one further below is passed
    over, margin 0 takes the best, equals go to the earlier, and a candidate that
    promises no bound never displaces one that does, however wide its spread."""
    choice = attacks._choice
    scores, spreads = (0.20, 0.23, 0.25), (0.01, 0.01, 0.04)
    assert choice(scores, spreads, 2.0) == 0  # 0.20 >= 0.25 - 2 * 0.04
    assert choice(scores, spreads, 1.0) == 1  # 0.20 < 0.25 - 0.04 <= 0.23
    assert choice(scores, spreads, 0.0) == 2
    assert choice((0.1, 0.1), (0.0, 0.0), 0.0) == 0
    assert choice((-0.01, 0.05), (0.0, 0.2), 1.0) == 1
    assert choice((0.0, 0.05), (0.0, 0.2), 1.0) == 1
    # nothing promises a bound: the order within the margin still decides
    assert choice((-0.02, -0.01), (0.0, 0.05), 1.0) == 0
    assert attacks.AutoSettings().margin == attacks.CHOICE_MARGIN == 1.0
    with pytest.raises(ValueError, match="margin >= 0"):
        auto_attack(margin=-0.5)
    with pytest.raises(ValueError, match="margin >= 0"):
        auto_attack(margin=math.inf)


# --- the screening -------------------------------------------------------------------

SCREENED = dict(train_draws=20_000, select_draws=160_000)


def _textbook(candidates=AUTO_CANDIDATES, screen_from=None, screen_steps=None):
    """The README's textbook float Laplace (0 against 1), its selection sample of
    1.6e5 per input screened on its first eighth where ``screen_from`` is small."""
    attack = auto_attack(
        candidates=candidates, screen_from=screen_from, screen_steps=screen_steps,
        **SCREENED,
    )  # fmt: skip
    return mcdp.audit_delta(
        subjects.numpy_textbook_laplace(1.0), 1.0, 0.0, 1, 100_000,
        pair=np.array([[0.0], [1.0]]), attack=attack, seed=SEED,
    )  # fmt: skip


def test_the_screening_keeps_the_choice_its_events_and_the_counts():
    """Screened (the default from 2^23 selection draws per input; here from 2),
    the textbook float Laplace's scorers leave the two moment scorers at the
    screening, far below the bit scorer, which leads there and is judged on the
    whole sample: the same choice, events, counts and bound as the sample judged
    whole, and the same score, its values being drawn in two parts. The record
    names those left and the screening's size. (The scorers trained on every step
    for the screening: the next tests train them on its steps alone.)"""
    candidates = ("learned", "learned-mlp", "learned-bits")
    whole = _textbook(candidates, screen_from=1 << 40)
    screened = _textbook(candidates, screen_from=2, screen_steps=learning.STEPS)
    assert whole.screened is None and whole.screen_draws is None
    assert screened.screen_steps is None
    assert screened.screened == ["learned", "learned-mlp"]
    assert screened.screen_draws == 19_456  # 1.6e5 / 8, in whole blocks
    assert screened.attack == whole.attack == "learned-bits"
    assert screened.counts == whole.counts and screened.events == whole.events
    assert screened.epsilon_lower == whole.epsilon_lower
    assert list(screened.selection) == list(whole.selection)  # the portfolio's order
    assert screened.selection["learned-bits"] == whole.selection["learned-bits"]
    for label in screened.screened:  # judged on fewer draws: a lower promise
        assert screened.selection[label] < screened.selection["learned-bits"]
    assert list(screened.attack_stages)[-4:] == [
        "screening draws", "screening", "selection draws", "choice",
    ]  # fmt: skip


def test_an_outcome_attack_chosen_at_the_screening_is_counted_at_once():
    """Where the choice on the screening's draws is an outcome attack and no scorer
    kept was trained short for it, the rest of the selection draws is not drawn:
    the textbook float Laplace's float-support leads the bit scorer, which is kept,
    and is counted with the counts of the sample judged whole; every score in the
    record is the screening's."""
    whole = _textbook(screen_from=1 << 40)
    settled = _textbook(screen_from=2, screen_steps=learning.STEPS)
    assert settled.attack == whole.attack == "float-support"
    assert settled.screened == list(whole.selection)
    assert settled.screened == [
        "float-support",
        "learned",
        "learned-mlp",
        "learned-bits",
    ]
    assert settled.screen_steps is None
    assert "selection draws" not in settled.attack_stages
    assert settled.counts == whole.counts
    assert settled.epsilon_lower == whole.epsilon_lower


def test_the_exact_loss_chosen_at_the_screening_settles_it():
    """Where the choice on the screening's draws is the exact loss, its thresholds
    are chosen on those draws, and no scorer is trained on every step nor any
    candidate judged on the rest, even beside a scorer trained short: on
    noisy-hist2 the logistic scorer, kept at the screening, is not trained again.
    Its events are chosen on draws that the counted sample never sees."""
    whole, settled = _screened_and_whole(
        "noisy-hist2", 0.1, 5, "one-above", ("lr", "float-support", "learned")
    )
    assert settled.attack == whole.attack == "lr"
    assert settled.screened == ["lr", "float-support", "learned"]
    assert settled.screen_steps == attacks.SCREEN_STEPS
    stages = list(settled.attack_stages)
    assert "selection draws" not in stages
    assert not any(stage.startswith("train ") for stage in stages)
    # its events are the head's: more than the one event of no information
    assert len(settled.events) > 1 and settled.epsilon_lower > 0.1


def test_the_screening_settles_on_the_exact_loss_or_an_outcome_attack_alone():
    """:func:`attacks._settled`: the one kept where it is an outcome attack; the
    choice where it is the exact loss, whatever is kept beside it; an outcome
    attack chosen only where no scorer kept was trained short; never a scorer, nor
    a choice that the screening did not keep."""
    settled = attacks._settled
    lr = attacks._Candidate("lr", None, None, None)
    outcome = attacks._Candidate("majority", None, None, attacks.MAJORITY_VOTE)
    scorer = attacks._Candidate("learned", None, None, None)
    short = scorer._replace(full=lambda: scorer)
    assert settled([scorer, outcome], [1], 0) == 1
    assert settled([lr, short], [0, 1], 0) == 0
    assert settled([outcome, scorer], [0, 1], 0) == 0
    assert settled([outcome, short], [0, 1], 0) is None
    assert settled([lr, scorer], [0, 1], 1) is None
    assert settled([lr, outcome, scorer], [1, 2], 0) is None


def test_the_scorers_screened_on_fewer_steps_leave_the_choice_and_the_counts():
    """By default the screening judges scorers trained on a quarter of their steps
    (SCREEN_STEPS): on the textbook float Laplace, float-support is then kept alone
    and counted at once, with the counts and bound of the sample judged whole, and
    the record says on how many steps the scorers left were trained."""
    whole = _textbook(screen_from=1 << 40)
    screened = _textbook(screen_from=2)
    assert attacks.SCREEN_STEPS == learning.STEPS // 4 == 100
    assert screened.screen_steps == attacks.SCREEN_STEPS
    assert whole.screen_steps is None
    assert screened.attack == whole.attack == "float-support"
    assert screened.screened == list(whole.selection)
    assert screened.counts == whole.counts
    assert screened.epsilon_lower == whole.epsilon_lower
    # the scorers' short trainings, and no training on every step
    stages = list(screened.attack_stages)
    assert "prepare learned-bits" in stages
    assert not any(stage.startswith("train ") for stage in stages)


def _screened_and_whole(mechanism, epsilon, dim, pair, candidates):
    """The audits of ``mechanism`` at 1e5 draws by the portfolio of ``candidates``,
    its selection sample judged whole, then screened."""
    return [
        mcdp.audit_delta(
            mechanism,
            epsilon,
            0.0,
            dim,
            100_000,
            pair=pair,
            seed=SEED,
            attack=auto_attack(
                candidates=candidates, screen_from=screen_from, **SCREENED
            ),
        )
        for screen_from in (1 << 40, 2)
    ]


def test_a_scorer_kept_at_the_screening_is_judged_as_if_never_screened():
    """A scorer that the screening keeps is trained again on every step of the
    whole training sample, from its key, and judged on the whole selection sample
    drawn again: its promise, the choice and the counts are those of the portfolio
    that screened nothing. On noisy-hist2 the logistic scorer is kept beside
    float-support, which wins."""
    whole, screened = _screened_and_whole(
        "noisy-hist2", 0.1, 5, "one-above", ("float-support", "learned")
    )
    assert screened.attack == whole.attack == "float-support"
    assert screened.counts == whole.counts and screened.selection == whole.selection
    assert screened.screened is None and screened.screen_steps is None
    stages = list(screened.attack_stages)
    assert stages.index("prepare learned") < stages.index("screening")
    assert stages.index("screening") < stages.index("train learned")
    assert stages.index("train learned") < stages.index("selection draws")


def test_scorers_are_trained_short_only_where_the_float_grids_differ():
    """Where the two inputs' float grids on the training outputs are the same,
    float-support has nothing to count, and the scorers are trained once, on every
    step: one-time RAPPOR's bits of 0.0 and 1.0 lie on one grid under either
    input, and its logistic scorer wins with the events and counts of the
    portfolio that screened nothing, and is not trained again."""
    whole, screened = _screened_and_whole(
        "one-time-rappor", 0.1, 1, "scalar-0-1", ("float-support", "learned")
    )
    assert screened.attack == whole.attack == "learned"
    assert screened.events == whole.events and screened.counts == whole.counts
    assert screened.selection == whole.selection
    assert "screening" in screened.attack_stages
    assert not any(stage.startswith("train ") for stage in screened.attack_stages)
    # float-support among the candidates is what tells: without it, none is short
    alone = auto_attack(candidates=("learned",), screen_from=2, **SCREENED)
    record = mcdp.audit_delta(
        "noisy-hist2", 0.1, 0.0, 5, 100_000, pair="one-above", seed=SEED, attack=alone
    )
    assert not any(stage.startswith("train ") for stage in record.attack_stages)


def test_scorers_are_trained_short_where_the_exact_loss_is_a_candidate():
    """Where the exact loss is a candidate, the scorers are trained short for the
    screening even where the float grids are the same: the screening most likely
    settles on the loss, and then no scorer is trained on every step. One-time
    RAPPOR's logistic scorer is so (the grids are the same: the test above), and
    the exact loss, chosen on the screening's draws, is counted with no training
    after it."""
    whole, screened = _screened_and_whole(
        "one-time-rappor", 0.1, 1, "scalar-0-1", ("lr", "learned")
    )
    assert screened.attack == whole.attack == "lr"
    assert screened.screened == ["lr", "learned"]
    assert screened.screen_steps == attacks.SCREEN_STEPS
    stages = list(screened.attack_stages)
    assert "selection draws" not in stages
    assert not any(stage.startswith("train ") for stage in stages)


def test_scorers_of_few_distinct_outputs_are_screened_as_trained_once():
    """Scorers that train on few distinct outputs (a tenth of a second or so) are
    trained once, on every step, where the screening applies: svt5's logistic
    scorer, far ahead of the majority vote, is not trained again, and counts as the
    portfolio that screened nothing counts."""
    whole, screened = _screened_and_whole(
        "svt5", 0.1, 10, "half-half", ("majority", "learned")
    )
    assert screened.attack == whole.attack == "learned"
    assert screened.counts == whole.counts and screened.selection == whole.selection
    assert "screening" in screened.attack_stages
    assert not any(stage.startswith("train ") for stage in screened.attack_stages)


def test_the_screening_leaves_a_scorer_whose_counts_are_an_earlier_ones():
    """A scorer trained on every step whose judged counts at the screening are
    those of an earlier one kept is left: the same events and counts promise the
    same, and the choice gives the earlier one such ties. On svt5's few outputs the
    histogram ranks them as the logistic scorer does: it is left at the screening,
    its score is the screening's, and the choice and counts are those of the
    sample judged whole."""
    whole, screened = _screened_and_whole(
        "svt5", 0.1, 10, "half-half", ("learned", "histogram")
    )
    assert whole.selection["learned"] == whole.selection["histogram"]
    assert screened.attack == whole.attack == "learned"
    assert screened.screened == ["histogram"]
    assert screened.selection["learned"] == whole.selection["learned"]
    assert screened.counts == whole.counts
    assert screened.epsilon_lower == whole.epsilon_lower


def test_only_twins_trained_on_every_step_are_left():
    """:func:`attacks._untwinned`: a scorer is left where an earlier one kept,
    trained on every step, has its very counts; an outcome attack, a scorer trained
    short, one whose twin the screening did not keep, or one whose counts are all
    0, is not."""
    untwinned = attacks._untwinned
    scorer = attacks._Candidate("learned", None, None, None)
    short = scorer._replace(full=lambda: scorer)
    outcome = attacks._Candidate("majority", None, None, attacks.MAJORITY_VOTE)
    same = (np.array([5, 2]), np.array([3, 1]), 3, 100)
    other = (np.array([5, 2]), np.array([3, 0]), 3, 100)
    assert untwinned([scorer, scorer, scorer], [0, 1, 2], [same, same, other]) == [0, 2]
    assert untwinned([scorer, scorer], [1], [same, same]) == [1]
    assert untwinned([scorer, short], [0, 1], [same, same]) == [0, 1]
    assert untwinned([short, scorer], [0, 1], [same, same]) == [0, 1]
    assert untwinned([scorer, outcome], [0, 1], [same, same]) == [0, 1]
    assert untwinned([outcome, scorer], [0, 1], [same, same]) == [0, 1]
    assert not attacks._same_counts(same, (*same[:2], 4, 100))
    # events that no input showed say nothing of the rest: such twins are kept
    empty = (np.zeros(2, int), np.zeros(2, int), 3, 100)
    assert untwinned([scorer, scorer], [0, 1], [empty, empty]) == [0, 1]


def test_an_outcome_attack_left_alone_at_the_screening_is_counted_at_once():
    """Where the screening leaves one candidate and it is an outcome attack, which
    chooses nothing on the selection draws, the rest of them is not drawn: every
    score is the screening's, and the counts are the whole sample's choice's."""
    candidates = ("float-support", "learned", "learned-mlp")
    whole = _textbook(candidates, screen_from=1 << 40)
    alone = _textbook(candidates, screen_from=2)
    assert alone.attack == whole.attack == "float-support"
    assert alone.screened == list(candidates)
    assert "selection draws" not in alone.attack_stages
    assert alone.counts == whole.counts and alone.epsilon_lower == whole.epsilon_lower


def test_the_screening_keeps_what_could_still_be_chosen():
    """A candidate is left only where its promise with every rate at its optimistic
    end is below the best promise with every rate at its pessimistic end; where
    nothing promises a positive bound, every one is kept."""
    kept = attacks._kept
    scores = (0.5, 0.1, -0.2, 0.45)
    lowest = (0.4, 0.0, -0.5, 0.3)
    highest = (0.6, 0.39, 0.41, 0.6)
    assert kept(scores, lowest, highest) == [0, 2, 3]
    assert kept((-0.1, -0.2), (-0.3, -0.4), (-0.2, -0.35)) == [0, 1]
    assert attacks._screen_draws(attacks.SCREEN_FROM - 1, attacks.SCREEN_FROM) == 0
    # an eighth, in whole calls of 2^20 draws where it holds one, else in blocks
    assert attacks._screen_draws(10**7, attacks.SCREEN_FROM) == 1 << 20
    assert attacks._screen_draws(2 * 10**7, attacks.SCREEN_FROM) == 2 << 20
    assert attacks._screen_draws(160_000, 2) == 19 * attacks.BLOCK_DRAWS
    assert attacks.SCREEN_FROM == 1 << 23  # audits of 8.4e7 draws and more
    # the rest leaves outcome attacks only where no scorer is kept or a scorer
    # is left too: a program without them is compiled anew for a byte a value
    scorer = attacks._Candidate("learned", None, None, None)
    outcome = attacks._Candidate("majority", None, None, attacks.MAJORITY_VOTE)
    worth = attacks._worth_leaving
    assert not worth([scorer, outcome], [0])
    assert worth([scorer, outcome, scorer], [0])
    assert worth([outcome, outcome], [1])
    with pytest.raises(ValueError, match="screen_from"):
        auto_attack(screen_from=1)
    with pytest.raises(ValueError, match="screen_steps"):
        auto_attack(screen_steps=0)


def test_auto_with_one_candidate_counts_what_that_attack_counts():
    """Restricted to the majority vote (no preparation of its own), the portfolio
    hands the counted draws to the same event: the counts are the attack's, draw
    for draw."""
    common = dict(pair="scalar-1-2", seed=SEED)
    args = ("truncated-geometric", 0.118, 0.0, 1, 20_000)
    alone = mcdp.audit_delta(*args, attack="majority", **common)
    auto = mcdp.audit_delta(
        *args, attack=auto_attack(candidates=("majority",)), **common
    )
    assert auto.counts == alone.counts and auto.attack == "majority"
    assert list(auto.selection) == ["majority"]


def test_auto_counts_the_loss_at_its_own_few_thresholds():
    """Where the mechanism has a density, the portfolio's likelihood ratio is a
    scorer of the exact loss: at most ``max_events`` thresholds chosen on the
    selection draws, rather than the explicit attack's fixed grid of 51, whose
    correction costs more. On Laplace at its calibration the best event is the
    atom {L = epsilon} (mass 1/2 under x): both find it, the portfolio with the
    smaller correction."""
    common = dict(pair="axis", seed=SEED)
    args = ("laplace", 1.0, 0.0, 1, 20_000)
    alone = mcdp.audit_delta(*args, attack="lr", **common)
    auto = mcdp.audit_delta(*args, attack=auto_attack(candidates=("lr",)), **common)
    assert auto.attack == "lr" and list(auto.selection) == ["lr"]
    events = auto.events
    assert 1 <= len(events) <= attacks.MAX_EVENTS
    assert all(e.startswith("privacy loss >= ") for e in events)
    assert len(alone.events) > 40
    assert 0.9 < auto.epsilon_lower <= 1.0  # true loss 1, not refuted
    assert auto.epsilon_lower > alone.epsilon_lower


def test_the_loss_atom_is_not_split_by_rounding_on_the_selection_draws():
    """Laplace's loss has atoms at +-a (a = |x - x'| / b): computed from outputs on
    different float grids, the atom's values differ in their last bits between
    the inputs, and a threshold exactly at it would split them by rounding; the
    selection would promise a float artefact that the counted events (a hair below
    the atom) do not have. The promise stays at or below the bound at the exact
    rates (the ceiling), as an honest estimate's pessimistic end does."""
    from mcdp.ceiling import ceiling

    draws = 1_000_000
    r = mcdp.audit_delta(
        "noisy-hist1", 0.1, 0.0, 5, draws, pair="one-above",
        attack=auto_attack(candidates=("lr",), **SMALL), seed=SEED,
    )  # fmt: skip
    top = ceiling("noisy-hist1", "one-above", draws, confidence=0.95).value
    assert 0 < r.selection["lr"] <= top


@pytest.mark.parametrize("model", ["logistic", "mlp"])
def test_a_few_valued_scorers_atoms_survive_a_last_bit_of_rounding(monkeypatch, model):
    """A scorer of svt1's discrete patterns takes few values, and its thresholds,
    quantiles of its selection scores, sit on them. The counting scores in
    another program than the selection draws, and on an H200 two programs rounded
    equal outputs' MLP scores apart (tests/test_learning.py): each threshold sits
    a hair below its atom, so counting scores one unit in the last place below the
    selection's gives the same events and counts."""

    score = learning.SCORES_BY_FEATURES["moments"][model]

    def rounded_down(y, scorer):
        s = score(y, scorer)
        return jnp.nextafter(s, jnp.full_like(s, -jnp.inf))

    label = {"logistic": "learned", "mlp": "learned-mlp"}[model]
    case = SUITE["svt1"]

    def audited():
        return mcdp.audit_delta(
            "svt1", case.epsilon, 0.0, case.dim, 200_000, pair="x-shuffle",
            attack=auto_attack(candidates=(label,), **SMALL), seed=SEED,
        )  # fmt: skip

    exact = audited()
    assert exact.attack == label and exact.epsilon_lower > 0
    monkeypatch.setitem(
        attacks._LEARNED_GUESSES["moments"],
        model,
        functools.partial(attacks._thresholded_guess, score=rounded_down),
    )
    rounded = audited()
    assert rounded.events == exact.events
    assert rounded.profile == exact.profile
    assert rounded.epsilon_lower == exact.epsilon_lower


# False alarms: each run's claim holds (input-independent outputs: true loss 0; the
# snapped Laplace on its grid is exactly 1-DP), so a run that refutes it is a false
# alarm. Each run is at confidence 1 - ALARM / RUNS, so all of them together raise a
# false alarm with probability at most ALARM, whatever the portfolio compared.
ALARM = 1e-3


def _audits(
    mechanism, epsilon, pair, runs, draws, candidates=AUTO_CANDIDATES, screen_from=None
):
    confidence = 1 - ALARM / runs
    return [
        mcdp.audit_delta(
            mechanism,
            epsilon,
            0.0,
            pair.shape[1],
            draws,
            pair=pair,
            attack=auto_attack(candidates=candidates, screen_from=screen_from, **SMALL),
            seed=seed,
            confidence=confidence,
        )  # fmt: skip
        for seed in range(SEED, SEED + runs)
    ]


def _refutations(mechanism, epsilon, pair, runs, draws, screen_from=None):
    audits = _audits(mechanism, epsilon, pair, runs, draws, screen_from=screen_from)
    return sum(r.violated for r in audits)


@pytest.mark.parametrize("screen_from", [None, 2], ids=["default", "screened"])
def test_auto_never_refutes_a_mechanism_that_ignores_its_input(screen_from):
    """``random`` outputs do not depend on the input: any claim holds, even 0.05.
    Three seeds here (the slow test runs 20), with the selection sample judged
    whole (the default at this size) and screened on its first eighth."""
    pair = np.array([[0.0, 0.0], [1.0, 1.0]])
    runs = _refutations(
        "random", 0.05, pair, runs=3, draws=20_000, screen_from=screen_from
    )
    assert runs == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "mechanism, epsilon",
    [
        ("random", 0.05),
        (subjects.numpy_snapped_laplace(1.0), 1.0),
        ("truncated-geometric", None),
        ("snapping", None),
    ],
    ids=["random", "numpy-snapped-laplace", "truncated-geometric", "snapping"],
)
@pytest.mark.parametrize("screen_from", [None, 2], ids=["default", "screened"])
def test_auto_never_refutes_correct_controls_over_20_seeds(
    mechanism, epsilon, screen_from
):
    """``snapping``'s zeros are -0.0 or 0.0 by the sign of the noisy value, and
    the histogram keys them apart; its loss over those outputs is its claim (up to
    5.3e-13: ``snapping_exact_epsilon``, which counts them apart). Each with the
    selection sample judged whole (the default at this size) and screened on its
    first eighth: what the screening leaves or keeps is chosen on selection draws,
    which the counted sample never sees, so the budget is the same."""
    if mechanism in ("truncated-geometric", "snapping"):
        epsilon = SUITE[mechanism].epsilon
        pair = make_pair("scalar-0-1", 1)
    elif mechanism == "random":
        pair = np.array([[0.0, 0.0], [1.0, 1.0]])
    else:
        pair = np.array([[0.0], [1.0]])
    assert epsilon is not None and math.isfinite(epsilon)
    refuted = _refutations(
        mechanism, epsilon, pair, runs=20, draws=100_000, screen_from=screen_from
    )
    assert refuted == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "mechanism, epsilon, pair",
    [
        ("laplace", 0.05, [[0.0, 1.0], [0.0, 1.0]]),
        (subjects.numpy_snapped_laplace(1.0), 1.0, [[0.0], [1.0]]),
    ],
    ids=["laplace-same-input", "numpy-snapped-laplace"],
)
def test_the_scorer_at_the_inputs_values_never_refutes_correct_controls(
    mechanism, epsilon, pair
):
    """The portfolio with ``learned-inputs`` asked for (CANDIDATES), over 20 seeds
    at the same budget, on continuous outputs (``random``'s are coins, where the
    scorer does not apply): Laplace noise on one input twice (loss 0), and the
    snapped Laplace at its exact loss. The scorer applies on both (a pair of two
    values) and is compared on every run, chosen or not."""
    runs = _audits(
        mechanism, epsilon, np.array(pair), runs=20, draws=100_000,
        candidates=CANDIDATES,
    )  # fmt: skip
    assert all("learned-inputs" in r.selection for r in runs)
    assert sum(r.violated for r in runs) == 0


# --- the histogram of discrete outputs ----------------------------------------------


def test_the_histogram_tabulates_each_distinct_output_and_its_log_ratio():
    rng = np.random.default_rng(SEED)
    n = 40_000
    first = rng.choice([0.0, 1.0, 2.0], size=(n, 2), p=[0.5, 0.3, 0.2])
    second = rng.choice([0.0, 1.0, 2.0], size=(n, 2), p=[0.2, 0.3, 0.5])
    first[:100, 1] = np.nan  # NaN is one more value
    table = histogram_table(np.stack([first, second]))
    assert table is not None and table.keys.size == attacks.HISTOGRAM_VALUES
    seen = table.keys[table.keys != attacks._KEY_LIMIT]  # the padding's key
    assert seen.size == 9 + 3  # 3 x 3 pairs, 3 with NaN
    # the score of an output is its log ratio of training frequencies, smoothed by
    # 1/2: ln(0.5^2 / 0.2^2) for (0, 0), within Z standard errors (and the 100 NaN)
    got = np.asarray(histogram_score(jnp.asarray([[0.0, 0.0], [2.0, 2.0]]), table))
    error = Z * math.sqrt(1 / (n * 0.25) + 1 / (n * 0.04)) + 100 / (n * 0.25)
    assert abs(got[0] - 2 * math.log(2.5)) < error
    assert abs(got[1] + 2 * math.log(2.5)) < error
    # NumPy's keys (the table) and JAX's (the counted draws) agree exactly
    keys = np.asarray(attacks._histogram_keys(jnp, jnp.asarray(first), *table[:3]))
    assert np.array_equal(keys, attacks._histogram_keys(np, first, *table[:3]))
    # JAX compares each value with every training value where NumPy searches: the
    # same keys, on values never seen (7, -inf, inf, -0.0) and NaN too
    probe = np.concatenate(
        [first[:50], [[7.0, np.nan], [-np.inf, np.inf], [-0.0, 0.0]]]
    )
    values, lengths, strides = table[:3]
    searched = attacks._coordinate_indices(
        np, bit_order(np, probe), bit_order(np, values), lengths
    )
    assert searched[-3:].tolist() == [[3, 3], [3, 3], [3, 0]]  # 3: not seen
    by_index = (searched * strides[None, :]).sum(axis=-1)
    for xp in (np, jnp):
        compared = attacks._compared_keys(
            xp, xp.asarray(probe), *(xp.asarray(a) for a in table[:3])
        )
        assert np.array_equal(np.asarray(compared), by_index)
        # +inf a training value, and the padding after it, which never matches;
        # -0.0 not one (its bits are not 0.0's), nor NaN
        one = attacks._histogram_keys(
            xp, xp.asarray([[np.inf], [1.0], [5.0], [np.nan], [-0.0], [0.0]]),
            xp.asarray([[0.0, 1.0, np.inf, np.inf]]), xp.asarray([3], np.int32),
            xp.asarray([1], np.int32),
        )  # fmt: skip
        assert np.asarray(one).tolist() == [2, 1, 3, 3, 3, 0]
        # both zeros training values (each output's own), or -0.0 alone; as
        # floats, a zero output equals each zero value
        zeros = xp.asarray([[-0.0], [0.0], [1.0], [5.0], [np.nan]])
        for values, length, want in (
            ([[-0.0, 0.0, 1.0, np.inf]], 3, [0, 1, 2, 3, 3]),
            ([[-0.0, 1.0, np.inf, np.inf]], 2, [0, 2, 1, 2, 2]),
        ):
            keys = attacks._histogram_keys(
                xp, zeros, xp.asarray(values), xp.asarray([length], np.int32),
                xp.asarray([1], np.int32),
            )  # fmt: skip
            assert np.asarray(keys).tolist() == want
    # an output never seen in training scores 0; continuous outputs get no table
    assert float(histogram_score(jnp.asarray([[7.0, 0.0]]), table)[0]) == 0.0
    assert histogram_table(rng.normal(size=(2, 20_000, 1))) is None


def test_the_compiled_keys_are_those_of_the_outputs_bits():
    """The benchmark's forms on 4,096 outputs of 10 coordinates, a tenth of them
    -0.0 (5 values each), and of one coordinate: the audit's keys (floats, a zero
    output's other zero taken off) are those of bit_order's integers and of the
    raw bit patterns, and the floats' alone (-0.0 == 0.0) are not."""
    import jax

    bench_keys = load_benchmark("bench_keys")
    with jax.enable_x64(True):
        for coordinates, count in ((10, 4), (1, 2)):
            row = bench_keys.bench_shape(coordinates, count, 4096, 1, True)
            assert row["compared"]
            assert row["same_keys_as_the_audit"] == {
                "the audit's": True, "floats": False, "bit order": True,
                "raw bits": True,
            }  # fmt: skip


def test_candidates_whose_keys_differ_in_a_zero_s_sign_do_not_share_them():
    """The selection draws key the outputs once only for tables that are the same
    bit for bit: two tables whose values differ only in a zero's sign key -0.0
    apart, so they are not the same (as floats they would be)."""
    lengths, strides = np.array([2, 2], np.int32), np.array([1, 3], np.int32)
    first = np.array([[-0.0, 1.0], [0.0, 1.0]])
    second = np.array([[0.0, 1.0], [0.0, 1.0]])

    def candidate(values):
        return attacks._Candidate(
            "c", None, None, None, keys=(values, lengths, strides)
        )

    same = [candidate(first), candidate(first.copy())]
    assert attacks._shared_keys(same) is same[0].keys
    assert attacks._shared_keys([candidate(first), candidate(second)]) is None


def _keys_by_sorting(outputs):
    """output_keys' definition: each column's distinct bit patterns but NaN's
    (bit_order's) sorted whole, each output's key from its indices among them, the
    keys' distinct values sorted."""
    n = outputs.shape[1]
    flat = outputs.reshape(2 * n, -1)
    if flat.shape[1] == 0:
        return None
    if any(np.unique(c).size > attacks.HISTOGRAM_VALUES
           for c in flat[: attacks.DISCRETE_PROBE].T):  # fmt: skip
        return None
    bits = bit_order(np, flat)
    columns = [np.unique(b[~np.isnan(c)]) for b, c in zip(bits.T, flat.T, strict=True)]
    if any(c.size > attacks.HISTOGRAM_VALUES for c in columns):
        return None
    lengths = np.array([c.size for c in columns])
    if math.prod(int(k) + 1 for k in lengths) > 2**31 - 1:
        return None
    radices = np.cumprod(np.concatenate([[1], lengths + 1]))
    width = 1 << max(0, int(lengths.max()) - 1).bit_length()
    ordered = np.full((len(columns), width), bit_order(np, np.array(np.inf)))
    for j, c in enumerate(columns):
        ordered[j, : c.size] = c
    strides = radices[:-1].astype(np.int32)
    indices = attacks._coordinate_indices(np, bits, ordered, lengths.astype(np.int32))
    values = bit_floats(ordered, np.float64)
    keys = (indices * strides[None, :]).sum(axis=-1).astype(np.int32)
    return (values, lengths.astype(np.int32), strides) + np.unique(
        keys, return_index=True, return_inverse=True
    )


@pytest.mark.parametrize("compared", [0, attacks.COMPARED_COLUMN_VALUES])
def test_the_training_outputs_keys_are_those_of_each_column_sorted_whole(
    monkeypatch, compared
):
    """output_keys searches each column among the values of a probe of its first
    rows and sorts only what the probe lacks: the same values, keys, first
    occurrences and inverse as sorting every column whole, where values, NaN,
    -0.0 and inf first occur after the probe, where the probe has NaN alone,
    where a column turns continuous after it, and where there are too many values
    or keys (None); searched by a binary search, and by comparisons where the
    probe has few values (4 here)."""
    monkeypatch.setattr(attacks, "COMPARED_COLUMN_VALUES", compared)
    rng = np.random.default_rng(SEED)
    n = 2 * attacks.DISCRETE_PROBE
    base = rng.integers(0, 4, size=(2, n, 3)).astype(float)
    cases = [base]
    for where, value in (
        ((0, n - 5, 1), 9.0), ((1, 5, 2), np.nan), ((0, 3, 0), np.nan),
        ((1, 7, 0), -0.0), ((1, 9, 2), np.inf), ((0, n - 1, 2), -np.inf),
    ):  # fmt: skip
        y = base.copy()
        y[where] = value
        cases.append(y)
    late = base.copy()
    late[:, n // 2 :, 2] = 7.0  # every row after the probe a new value
    late[0, n // 3, 2] = np.nan
    cases.append(late)
    unseen = base.copy()
    unseen[0, : attacks.DISCRETE_PROBE, 1] = np.nan  # no value in the probe
    cases.append(unseen)
    continuous = base.copy()
    continuous[1, :, 0] = rng.normal(size=n)  # continuous after the probe
    cases.append(continuous)
    many = base.copy()
    many[0, :, 0] = np.arange(n) % (attacks.HISTOGRAM_VALUES + 1)  # in the probe
    cases.append(many)
    cases.append(rng.integers(0, 3000, size=(2, n, 3)).astype(float))  # keys
    # 40 bits: 3^40 keys, a product that wraps below 0 in int64
    cases.append(rng.integers(0, 2, size=(2, n, 40)).astype(float))
    cases.append(np.zeros((2, n, 0)))
    expected_none = [False] * 9 + [True] * 5
    for y, none in zip(cases, expected_none, strict=True):
        got, want = attacks.output_keys(y), _keys_by_sorting(y)
        assert (got is None) == (want is None) == none
        if got is not None:
            for a, b in zip(got, want, strict=True):
                assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("size", [1, 7, 1000, 4000])
def test_keys_counted_are_those_sorted(size):
    """distinct_keys gives np.unique's distinct keys, first occurrences and
    inverse, with their dtypes: by counting where the key space is at most the
    number of keys (1, 7 and 1000 values here, some never taken), and by sorting
    where it is larger (4000)."""
    rng = np.random.default_rng(SEED)
    keys = rng.integers(0, size, 3000).astype(np.int32)
    keys[keys % 5 == 3] = 0  # values of the space that no key takes
    want = np.unique(keys, return_index=True, return_inverse=True)
    got = attacks.distinct_keys(keys, size)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_the_shared_scorers_train_on_few_distinct_outputs_counted(monkeypatch):
    """The portfolio's scorers share a training sample that holds its distinct
    outputs and their counts per minibatch where the outputs are discrete (svt1's
    patterns, 11 here), and not where they are continuous (noisy-hist1)."""
    made = []

    def kept(*args, **kwargs):
        sample = training_sample(*args, **kwargs)
        made.append(sample.distinct)
        return sample

    training_sample = learning.training_sample
    monkeypatch.setattr(learning, "training_sample", kept)
    for name, pair in (("svt1", "x-shuffle"), ("noisy-hist1", "one-above")):
        case = SUITE[name]
        r = mcdp.audit_delta(
            name, case.epsilon, 0.0, case.dim, 20_000, pair=pair,
            attack=auto_attack(candidates=("learned",), **SMALL), seed=SEED,
        )  # fmt: skip
        assert r.attack == "learned"
    assert len(made) == 2 and made[1] is None
    assert np.asarray(made[0].counts).sum() == 2 * SMALL["train_draws"]
    assert 11 <= made[0].rows.shape[0] <= 16


def test_the_histogram_never_refutes_a_discrete_mechanism_that_ignores_its_input():
    """The histogram alone, 3 seeds, each at confidence 1 - ALARM / 3: outputs in
    {0, ..., 4} drawn whatever the input, so any claim holds and a refutation is a
    false alarm (probability at most ALARM)."""

    def dice(rng, x, n):
        return rng.integers(0, 5, size=(n, 1)).astype(float)

    mech = mcdp.Mechanism.from_callable("dice", dice)
    pair = np.array([[0.0], [1.0]])
    attack = auto_attack(candidates=("histogram",), **SMALL)
    for seed in range(SEED, SEED + 3):
        r = mcdp.audit_delta(
            mech, 0.01, 0.0, 1, 20_000, pair=pair, attack=attack, seed=seed,
            confidence=1 - ALARM / 3,
        )  # fmt: skip
        assert r.attack == "histogram" and not r.violated


def _signed_zero(rng, x, n):
    """A rounded Laplace draw (scale 1) whatever the input, whose zeros are -0.0
    with probability 0.9 under x = 0 and 0.1 under x = 1: the sign of a zero is
    the leak, a likelihood ratio of 9 (loss ln 9) at either zero and 1 elsewhere."""
    y = np.round(rng.laplace(0.0, 1.0, size=(n, 1)))
    negative = rng.random((n, 1)) < (0.9 if x[0] == 0 else 0.1)
    return np.where(y == 0, np.where(negative, -0.0, 0.0), y)


def _signed_zero_or_noise(rng, x, n):
    """Half the outputs a zero, -0.0 with probability 0.9 under x = 0 and 0.1
    under x = 1, half a Laplace draw (scale 1) whatever the input: loss ln 9, in
    outputs too many-valued for the histogram."""
    noise = rng.laplace(0.0, 1.0, size=(n, 1))
    negative = rng.random((n, 1)) < (0.9 if x[0] == 0 else 0.1)
    zero = np.where(negative, -0.0, 0.0)
    return np.where(rng.random((n, 1)) < 0.5, zero, noise)


def test_the_outputs_are_keyed_by_their_bits_so_a_sign_of_zero_is_seen():
    """-0.0 == 0.0 as floats, but a release shows its bits. output_keys keeps the
    two zeros apart, and the histogram scores each by its own frequencies."""
    outputs = np.array([[-0.0, -0.0, -0.0, 0.0, 1.0], [0.0, 0.0, -0.0, 0.0, 1.0]])
    keyed = attacks.output_keys(outputs[:, :, None])
    assert keyed.distinct.size == 3 and keyed.lengths.tolist() == [3]
    zeros = np.array([[-0.0], [0.0]])
    table = histogram_table(outputs[:, :, None], keyed)
    got = np.asarray(histogram_score(jnp.asarray(zeros), table))
    # smoothed log ratios: -0.0 three times against once, 0.0 once against three
    # times (in float32, JAX's default dtype here)
    want = [math.log(3.5 / 1.5), math.log(1.5 / 3.5)]
    assert np.allclose(got, want, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "release, seeing",
    [
        (_signed_zero, {"histogram", "learned-bits"}),
        (_signed_zero_or_noise, {"learned-bits"}),
    ],
    ids=["discrete", "with-noise"],
)
def test_the_default_refutes_a_release_whose_sign_of_zero_leaks(release, seeing):
    """The default portfolio refutes a claim of epsilon = 1 on each release (loss
    ln 9), and its bound stays below ln 9 (a false alarm has probability at most
    ALARM at that confidence). The candidates that see the sign promise more than
    1 on the selection draws: the histogram, whose keys are the outputs' bits,
    where the outputs are few-valued, and the bit scorer (a feature for -0.0);
    float-support sees both zeros under both inputs, and the other scorers read
    values, so they promise nothing."""
    mech = mcdp.Mechanism.from_callable("signed-zero", release)
    r = mcdp.audit_delta(
        mech, 1.0, 0.0, 1, 50_000, pair=np.array([[0.0], [1.0]]),
        attack=auto_attack(**SMALL), seed=SEED, confidence=1 - ALARM,
    )  # fmt: skip
    assert r.violated and 1.0 < r.epsilon_lower <= math.log(9)
    assert r.attack in seeing
    assert {label for label, v in r.selection.items() if v > 1.0} == seeing
    assert all(v <= 0.0 for label, v in r.selection.items() if label not in seeing)


def test_few_values_answers_as_the_whole_sample_does():
    """The check for scores of few values looks at a probe first: its answer is
    that of all the scores, where the probe has many values (continuous scores),
    where the probe has few and the rest many, and where all have few."""
    rng = np.random.default_rng(5)
    n = 3 * attacks.DISCRETE_PROBE
    continuous = rng.normal(size=(2, n))
    few_then_many = continuous.copy()
    few_then_many[:, : attacks.DISCRETE_PROBE] = 1.0
    few = rng.integers(0, 50, size=(2, n)).astype(float)
    for scores, expected in ((continuous, False), (few_then_many, False), (few, True)):
        assert (np.unique(scores).size <= attacks.HISTOGRAM_VALUES) == expected
        assert attacks._few_values(scores) == expected


def test_the_selection_draws_key_the_outputs_once_for_all_looked_up(monkeypatch):
    """On svt1's patterns, the portfolio's candidates looked up by the outputs' keys
    (the exact loss, the three shared scorers, the histogram) share one computation
    of those keys in the selection draws' transform, and their values are those of
    each candidate keying the outputs itself, to the bit on a CPU, on fresh outputs
    of both inputs. Candidates whose tables key the outputs otherwise, or outputs of
    one coordinate, key their own."""
    import jax

    captured = {}
    real = attacks.draw

    def spy(*args, **kw):
        if kw.get("transform") is not None:
            captured.update(kw)
        return real(*args, **kw)

    monkeypatch.setattr(attacks, "draw", spy)
    case = SUITE["svt1"]
    spec = mcdp.AuditSpec(
        "svt1", case.epsilon, pair="x-shuffle", dim=case.dim, seed=3
    )  # fmt: skip
    with jax.enable_x64(True):
        mcdp.run(spec, mcdp.Draws(200_000))
        transform, (keys, aux) = captured["transform"], captured["aux"]
        fns, keyed = transform.keywords["fns"], transform.keywords["keyed"]
        assert keys is not None and sum(keyed) == 5, keyed
        own = attacks._values_transform(fns, (False,) * len(fns))
        plan = spec.plan
        y = jnp.concatenate([
            plan.mechanism.sample(
                jax.random.key(9 + i), jnp.broadcast_to(x, (4096, case.dim)),
                plan.params,
            )
            for i, x in enumerate(jnp.asarray(plan.pair))
        ])  # fmt: skip
        calls = []
        keys_of = attacks._histogram_keys
        monkeypatch.setattr(
            attacks, "_histogram_keys", lambda *a: calls.append(1) or keys_of(*a)
        )
        for form, table, expected in ((transform, keys, 1), (own, None, 5)):
            calls.clear()
            jax.make_jaxpr(form)(y, (table, aux))
            assert len(calls) == expected
        shared_values = jax.jit(transform)(y, (keys, aux))
        own_values = jax.jit(own)(y, (None, aux))
    for j, (a, b) in enumerate(zip(shared_values, own_values, strict=True)):
        a, b = np.asarray(a), np.asarray(b)
        if jax.default_backend() == "cpu":
            np.testing.assert_array_equal(a, b, err_msg=str(j))
        else:  # a value not in a memo is computed in each program (GPU rounding)
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=str(j))
    assert len(np.unique(np.asarray(shared_values[-1]))) > 1  # the histogram's

    def candidate(values):
        return attacks._Candidate("c", None, None, None, keys=(values, 1, 1))

    one, other = np.arange(8.0).reshape(2, 4), np.arange(8.0).reshape(2, 4) + 1
    assert attacks._shared_keys([candidate(one), candidate(one.copy())])[0] is one
    assert attacks._shared_keys([candidate(one), candidate(other)]) is None
    assert attacks._shared_keys([attacks._Candidate("c", None, None, None)]) is None
    # one coordinate: each candidate keys the outputs itself (one search, cheaper)
    column = np.arange(4.0).reshape(1, 4)
    assert attacks._shared_keys([candidate(column), candidate(column)]) is None
