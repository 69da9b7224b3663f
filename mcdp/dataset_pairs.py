r"""Neighbouring datasets that break real code: the proposals of the dataset search.

:func:`propose_datasets` builds, for a :class:`~mcdp.core.datasets.DatasetDomain`,
the pairs that the bugs of DP libraries need (SPEC §8):

* *edge* records: values at the bounds, just inside them, far outside them, 0,
  ±1e300, ±inf and NaN (in every column, and in the first column alone);
* *bases* to add them to or replace in: the empty dataset (a single record
  against none), one typical record, the two bounds, duplicates of one record,
  two categories (0 and 1, so that any other value is a new category), and a
  large dataset of ``max_size`` records spread over the bounds;
* under ``add-remove`` each edge record added to each base; under
  ``replace-one`` one record of each non-empty base replaced by it (and a
  duplicate by a new category);
* random pairs: a random base of random size, a random record (typical or edge)
  added or replaced.

The named proposals come first, in a fixed order, then the random ones, up to the
budget; every proposal is checked against the domain before any draw.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from mcdp.core.datasets import DatasetDomain, Datasets

FAR = 1e6  # "far outside": this many times the bounds' span past them
HUGE = 1e300
TYPICAL_SPAN = 1.0  # the span of typical values where a column is unbounded


class DatasetCandidate(NamedTuple):
    label: str
    source: str  # "named" or "random"
    pair: Datasets


def _span(domain: DatasetDomain) -> tuple[np.ndarray, np.ndarray]:
    """Per column, the typical interval: the bounds where finite, else [0, 1]
    (one finite bound: that bound and one unit inwards)."""
    low, high = domain.bounds()
    lo = np.where(np.isfinite(low), low, np.where(np.isfinite(high), high - 1, 0.0))
    hi = np.where(np.isfinite(high), high, lo + TYPICAL_SPAN)
    return lo, hi


def edge_records(domain: DatasetDomain) -> list[tuple[str, np.ndarray]]:
    """The records that break code, each labelled: every column at the value, then
    the first column alone at it (the others typical), where the width is > 1."""
    lo, hi = _span(domain)
    low, high = domain.bounds()
    mid = (lo + hi) / 2
    span = np.maximum(hi - lo, 1.0)
    inside = (hi - lo) * 1e-6
    values: list[tuple[str, np.ndarray]] = [
        ("typical", mid),
        ("low", lo),
        ("high", hi),
        ("just-inside-low", lo + inside),
        ("just-inside-high", hi - inside),
        ("far-below", lo - FAR * span),
        ("far-above", hi + FAR * span),
        ("zero", np.zeros_like(mid)),
        ("+1e300", np.full_like(mid, HUGE)),
        ("-1e300", np.full_like(mid, -HUGE)),
        ("+inf", np.full_like(mid, math.inf)),
        ("-inf", np.full_like(mid, -math.inf)),
        ("nan", np.full_like(mid, math.nan)),
    ]
    if not domain.any_records:  # only records inside the bounds belong
        values = [
            (name, v)
            for name, v in values
            if np.all(np.isfinite(v)) and np.all(v >= low) and np.all(v <= high)
        ]
    out = list(values)
    if domain.width > 1:
        for name, v in values[1:]:
            one = mid.copy()
            one[0] = v[0]
            out.append((f"{name}[col0]", one))
    return out


def bases(domain: DatasetDomain) -> list[tuple[str, np.ndarray]]:
    """The datasets that edge records are added to or replaced in."""
    lo, hi = _span(domain)
    mid = (lo + hi) / 2
    k = domain.width
    size = domain.max_size
    spread = lo + (hi - lo) * ((np.arange(size) + 0.5) / size)[:, None]
    categories = np.stack([np.zeros(k), np.ones(k)])
    out = [
        ("empty", np.zeros((0, k))),
        ("one", mid[None, :]),
        ("bounds", np.stack([lo, hi])),
        ("duplicates", np.repeat(mid[None, :], 3, axis=0)),
        ("categories", categories),
        (f"large-{size}", spread),
    ]
    if not domain.any_records:
        low, high = domain.bounds()
        out = [(n, d) for n, d in out if np.all((d >= low) & (d <= high))]
    return out


def _neighbour(
    domain: DatasetDomain, base: np.ndarray, record: np.ndarray, at: int
) -> Datasets | None:
    """``base`` and its neighbour with ``record`` added (add-remove) or put in
    place of record ``at`` (replace-one); ``None`` where there is none."""
    if domain.relation == "add-remove":
        if len(base) >= domain.max_size + 1:
            return None
        return Datasets(base, np.concatenate([base, record[None, :]]))
    if len(base) == 0:
        return None
    other = base.copy()
    other[at % len(base)] = record
    return Datasets(base, other)


def propose_datasets(
    domain: DatasetDomain, budget: int, rng: np.random.Generator
) -> list[DatasetCandidate]:
    """Up to ``budget`` neighbouring pairs in ``domain``: the named ones in order
    (labels ``base+record`` or ``base/record``), then random ones."""
    edges = edge_records(domain)
    out: list[DatasetCandidate] = []
    seen: set[str] = set()

    def add(label: str, source: str, pair: Datasets | None) -> None:
        if pair is None or label in seen or not domain.contains(pair):
            return
        seen.add(label)
        out.append(DatasetCandidate(label, source, pair))

    sep = "+" if domain.relation == "add-remove" else "/"
    named = bases(domain)
    # the records that break most code first, each against every base, so that
    # a small budget still tries every base and the worst kinds of record
    first = ("far-above", "nan", "typical", "+inf", "far-below")
    order = [e for e in edges if e[0] in first]
    order.sort(key=lambda e: first.index(e[0]))
    order += [e for e in edges if e[0] not in first]
    for name, record in order:
        for base_name, base in named:
            add(f"{base_name}{sep}{name}", "named", _neighbour(domain, base, record, 0))
            if len(out) >= budget:
                return out
    if domain.relation == "add-remove":  # a duplicate of a record present
        for base_name, base in named:
            if len(base):
                add(f"{base_name}+duplicate", "named", Datasets(
                    base, np.concatenate([base, base[:1]])))  # fmt: skip
    lo, hi = _span(domain)
    tries = 0
    while len(out) < budget and tries < 20 * budget:
        tries += 1
        m = int(rng.integers(0, min(domain.max_size, 64) + 1))
        base = lo + (hi - lo) * rng.random((m, domain.width))
        if rng.random() < 0.5:
            name, record = edges[int(rng.integers(len(edges)))]
        else:
            name, record = "random", lo + (hi - lo) * rng.random(domain.width)
        at = int(rng.integers(max(m, 1)))
        add(f"random-{tries}({m}{sep}{name})", "random",
            _neighbour(domain, base, record, at))  # fmt: skip
    return out[:budget]
