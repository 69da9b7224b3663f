"""``benchmarks/probe_candidates.py`` runs one candidate per process and says which
did not apply, which finished (with its bound) and which it stopped."""

from conftest import load_benchmark

probe = load_benchmark("probe_candidates").probe


def test_a_candidate_is_run_alone_or_said_not_to_apply_or_stopped():
    ran = probe("snapping", "majority", 2_000, timeout=300)
    assert ran["applies"] and ran["bound"] >= 0 and ran["seconds"] > 0
    assert probe("snapping", "lr", 2_000, timeout=300)["applies"] is False
    stopped = probe("snapping", "majority", 2_000, timeout=0.01)
    assert stopped == {"label": "majority", "stopped_after": 0.01}
