"""``benchmarks/probe_candidates.py`` runs one candidate per process and says which
did not apply, which finished (with its bound) and which it stopped; its variants
of the MLP's score compute the scores of the form in use."""

import argparse
import time

import jax
import numpy as np
import pytest

from conftest import load_benchmark

probe_candidates = load_benchmark("probe_candidates")
probe = probe_candidates.probe


@pytest.mark.slow
def test_a_candidate_is_run_alone_or_said_not_to_apply_or_stopped():
    ran = probe("snapping", "majority", 2_000, timeout=300)
    assert ran["applies"] and ran["bound"] >= 0 and ran["seconds"] > 0
    assert ran["variant"] == "as-is"
    assert probe("snapping", "lr", 2_000, timeout=300)["applies"] is False
    stopped = probe("snapping", "majority", 2_000, timeout=0.01)
    assert stopped == {"label": "majority", "variant": "as-is", "stopped_after": 0.01}


@pytest.mark.parametrize(
    "variant", ["barrier", "barrier-hidden", "barrier-score", "dot"]
)
def test_each_variant_of_the_mlp_gives_its_scores(variant):
    """Each variant runs in place of ``score_mlp`` (its partials too), gives the
    same scores up to rounding (the barrier variants sum by block, in another
    order), and ``"as-is"`` puts the form in use back."""
    from mcdp import learning

    rng = np.random.default_rng(0)
    first, second = rng.laplace(size=(400, 2)), rng.laplace(1.0, size=(400, 2))
    scorer = learning.fit(jax.random.key(0), first, second, model="mlp", steps=20)
    score = learning.SCORES_BY_FEATURES["ramps"]["mlp"]  # a partial of score_mlp
    y = jax.numpy.asarray(first)
    before = np.asarray(score(y, scorer))
    try:
        probe_candidates.apply_variant(variant)
        assert learning.score_mlp.__code__ is probe_candidates.VARIANTS[variant]
        after = np.asarray(score(y, scorer))
    finally:
        probe_candidates.apply_variant("as-is")
    assert learning.score_mlp.__code__ is probe_candidates.VARIANTS["as-is"]
    rounding = 64 * np.finfo(before.dtype).eps
    np.testing.assert_allclose(after, before, rtol=rounding, atol=rounding)


probe_features_once = load_benchmark("probe_features_once")


def test_the_features_probe_tells_scorers_apart_by_their_last_bit():
    same = probe_features_once._same
    a = [np.array([0.1, np.nan]), np.array([3], dtype=np.int32)]
    assert same(a, [np.array([0.1, np.nan]), np.array([3], dtype=np.int32)])
    assert not same(a, [np.array([np.nextafter(0.1, 1), np.nan]), a[1]])
    assert not same(a, [a[0], np.array([4], dtype=np.int32)])


@pytest.mark.slow
def test_the_features_probe_trains_each_scorer_both_ways_and_restores_fit():
    from mcdp import learning

    fit, decide = learning.fit, learning.features_fit
    rows = probe_features_once.probe_case("laplace-float", 100_000, 5)
    assert [(r["model"], r["features"]) for r in rows] == [
        ("logistic", "moments"), ("mlp", "moments"), ("logistic", "bits"),
    ]  # fmt: skip
    assert all(r["same"] for r in rows)
    assert learning.fit is fit and learning.features_fit is decide


bench_prep = load_benchmark("bench_prep")


def test_the_preparations_cpu_seconds_are_each_stages_own(monkeypatch):
    """``bench_prep.py --cpu`` times each stage's CPU seconds beside its wall seconds
    with the portfolio's own stopwatch in its place, and puts that back, even where
    the audit fails: a stage that sleeps costs next to none, one that computes its
    wall time."""
    from mcdp import attacks

    stopwatch = attacks._Stopwatch

    def audit(name, attack, draws, seed):
        assert attacks._Stopwatch is bench_prep.CpuStopwatch
        watch = attacks._Stopwatch()
        time.sleep(0.1)
        watch.lap("slept")
        start = time.process_time()
        while time.process_time() - start < 0.1:
            pass
        watch.lap("computed")
        return "record", 1.0

    monkeypatch.setattr(bench_prep, "_run", audit)
    args = argparse.Namespace(cpu=True, draws=1, seed=0)
    record, seconds, cpu = bench_prep._timed("svt1", None, args)
    assert attacks._Stopwatch is stopwatch
    assert (record, seconds) == ("record", 1.0)
    assert set(cpu) == {"slept", "computed"}
    assert cpu["computed"] >= 0.1 and cpu["slept"] < 0.05

    def failed(*_):
        raise RuntimeError("the audit failed")

    monkeypatch.setattr(bench_prep, "_run", failed)
    with pytest.raises(RuntimeError, match="the audit failed"):
        bench_prep._timed("svt1", None, args)
    assert attacks._Stopwatch is stopwatch
    args.cpu = False
    monkeypatch.setattr(bench_prep, "_run", lambda *_: ("r", 2.0))
    assert bench_prep._timed("svt1", None, args) == ("r", 2.0, None)
