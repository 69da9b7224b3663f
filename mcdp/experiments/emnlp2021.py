"""EMNLP 2021 (Habernal, *When differential privacy meets NLP: the devil is in the
detail*): the series of its Figure 1, pairs of clipped vectors whose L1 distance
exceeds ADePT's claimed sensitivity 2C, for n = 1 … 256.

The counting itself is :mod:`mcdp.violations`; the search for the true sensitivity
(the paper's Theorem 5.1) is :mod:`mcdp.sensitivity`. This module fixes the series
of the figure and caches them, resumable, one series at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcdp.experiments.store import write_atomic
from mcdp.sampling import PRNG_IMPL
from mcdp.sampling import key as sampling_key

# (dist, clip, normal_scale) at the reference's C = 10
EMNLP_SERIES = (
    ("uniform", "l2", 0.1),
    ("normal", "l2", 0.1),
    ("normal", "l2", 0.01),
    ("uniform", "l1", 0.1),
)
EMNLP_DIMS = tuple(range(1, 257))
EMNLP_C = 10.0


def violation_series(
    cache_dir: Path,
    pairs: int,
    *,
    seed: int,
    confidence: float,
    dtype: str,
    log: Callable[[str], None] = lambda message: None,
) -> list[dict[str, Any]]:
    """The records of every series of the figure for n = 1..256, cached per series
    in ``cache_dir`` (a rerun computes only the series not yet there)."""
    import json

    from mcdp.violations import count_violations

    name = f"emnlp2021-{dtype}-pairs{pairs}-seed{seed}-{PRNG_IMPL}.json"
    cache = Path(cache_dir) / name
    done = json.loads(cache.read_text()) if cache.exists() else {}
    for dist, clip, scale in EMNLP_SERIES:
        series = f"{dist}-{clip}-{scale!r}"
        if series in done:
            continue
        log(f"emnlp2021: {series}, {pairs:,} pairs per n, n = 1..{EMNLP_DIMS[-1]}")
        records = count_violations(
            sampling_key(seed),
            dist,
            EMNLP_DIMS,
            pairs,
            clip=clip,
            C=EMNLP_C,
            normal_scale=scale,
            confidence=confidence,
            dtype=dtype,
        )
        done[series] = [r.to_dict() for r in records]
        write_atomic(cache, done)
    return [r for series in sorted(done) for r in done[series]]
