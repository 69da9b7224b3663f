r"""Input domains and neighbouring relations: which pairs an audit may compare.

A mechanism declares its :class:`InputDomain` (``Mechanism.domain``): the box its
inputs live in and the relation that makes two inputs neighbours. The input search
(:func:`mcdp.search`) proposes pairs only inside it: every candidate is
:meth:`InputDomain.project`-ed into the domain and checked with
:meth:`InputDomain.contains` before any draw.

Relations (:data:`RELATIONS`), with :math:`s` the domain's ``size``:

======================= =======================================================
``one-entry``           :math:`x` and :math:`x'` differ in at most one entry, by
                        at most :math:`s` (histograms: one record changes one
                        count by one)
``every-entry``         :math:`\lVert x - x'\rVert_\infty \le s` (vectors of
                        query answers: Report Noisy Max, Sparse Vector, prefix
                        sums, each answer of sensitivity :math:`s`)
``l2-ball``             any two points of the L2 ball of radius :math:`C`
                        (clipped embeddings; :math:`C` is the audit's ``clip``
                        where ``size`` is ``None``)
======================= =======================================================

The box ``[low, high]`` bounds every entry (``-inf``/``inf`` for none; the
``l2-ball`` relation ignores it); ``integer`` domains hold integers only (counting
queries). Random proposals in an unbounded box are drawn within ``window``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import numpy as np

from mcdp._types import PRNGKey

RELATIONS = ("one-entry", "every-entry", "l2-ball")
TOLERANCE = 1e-9  # relative slack of contains(): projections are exact up to rounding


class InputDomain(NamedTuple):
    """Where a mechanism's inputs live and which pairs are neighbours.

    Attributes:
      relation: one of :data:`RELATIONS`.
      size: :math:`s`, the largest change of an entry (``one-entry``,
        ``every-entry``) or the radius of the ball (``l2-ball``); ``None`` for a ball
        whose radius is the audit's ``clip`` (:meth:`at` fills it in).
      low, high: every entry lies in ``[low, high]`` (not for ``l2-ball``).
      integer: entries are integers.
      window: where random pairs are proposed within an unbounded box: entries of
        the first input are drawn in ``[max(low, window[0]), min(high,
        window[1])]``.
    """

    relation: str
    size: float | None = 1.0
    low: float = -math.inf
    high: float = math.inf
    integer: bool = False
    window: tuple[float, float] = (-1.0, 3.0)

    def at(self, clip: float) -> InputDomain:
        """The domain with its size fixed: a ball without one gets radius ``clip``."""
        if self.size is not None:
            return self
        return self._replace(size=float(clip))

    def _box(self) -> tuple[float, float]:
        if self.relation == "l2-ball":
            return -math.inf, math.inf
        return self.low, self.high

    def contains(self, pair: np.ndarray) -> bool:
        """Whether ``pair`` (shape ``(2, d)``) is a neighbouring pair of the domain,
        up to a relative rounding slack of :data:`TOLERANCE`."""
        self._check_size()
        pair = np.asarray(pair, dtype=np.float64)
        if pair.ndim != 2 or pair.shape[0] != 2 or not np.all(np.isfinite(pair)):
            return False
        s = float(self.size)
        slack = TOLERANCE * max(1.0, s, float(np.abs(pair).max()))
        low, high = self._box()
        if np.any(pair < low - slack) or np.any(pair > high + slack):
            return False
        if self.integer and np.any(np.abs(pair - np.round(pair)) > slack):
            return False
        diff = np.abs(pair[1] - pair[0])
        if self.relation == "one-entry":
            return bool(np.count_nonzero(diff > slack) <= 1 and diff.max() <= s + slack)
        if self.relation == "every-entry":
            return bool(diff.max() <= s + slack)
        norms = np.sqrt(np.sum(pair * pair, axis=-1))
        return bool(np.all(norms <= s + slack))

    def project(self, pair: np.ndarray) -> np.ndarray:
        """A neighbouring pair of the domain near ``pair``: the first input clipped
        into the box, the second moved as little as the relation needs (for
        ``one-entry``: only the entry that differs most is kept), then into the
        box; for ``l2-ball``, each input scaled into the ball. Pairs already in the
        domain come back unchanged (up to rounding)."""
        self._check_size()
        pair = np.array(pair, dtype=np.float64)
        s = float(self.size)
        if self.relation == "l2-ball":
            norms = np.sqrt(np.sum(pair * pair, axis=-1, keepdims=True))
            with np.errstate(divide="ignore", invalid="ignore"):
                factor = np.where(norms > s, s / norms, 1.0)
            return pair * factor
        first = self._into_box(pair[0])
        change = pair[1] - first
        if self.relation == "one-entry":
            keep = np.zeros_like(change)
            j = int(np.argmax(np.abs(change)))
            keep[j] = change[j]
            change = keep
        second = self._into_box(first + np.clip(change, -s, s))
        return np.stack([first, second])

    def _into_box(self, x: np.ndarray) -> np.ndarray:
        x = np.clip(x, self.low, self.high)
        return np.round(x) if self.integer else x

    def random_pairs(self, key: PRNGKey, count: int, dim: int) -> np.ndarray:
        r"""``count`` random neighbouring pairs, shape ``(count, 2, dim)``.

        ``l2-ball``: both inputs uniform on the sphere of radius :math:`s` (inputs
        outside the ball are clipped onto it by the mechanisms that clip, and the
        largest distances are between points of the sphere). Otherwise the first
        input is uniform in the box (within ``window``) and each entry that may
        change (every entry, or one at random) changes by :math:`\pm s` or by a
        uniform amount in :math:`[-s, s]`, half of the pairs each; then
        :meth:`project`.
        """
        self._check_size()
        s = float(self.size)
        k_first, k_second, k_sign, k_entry = jax.random.split(key, 4)
        shape = (count, dim)
        if self.relation == "l2-ball":
            points = np.asarray(
                jax.random.normal(k_first, (count, 2, dim), dtype=np.float32),
                dtype=np.float64,
            )
            norms = np.sqrt(np.sum(points * points, axis=-1, keepdims=True))
            return s * points / np.maximum(norms, np.finfo(np.float64).tiny)
        low = max(self.low, self.window[0])
        high = min(self.high, self.window[1])
        unit = np.asarray(jax.random.uniform(k_first, shape), dtype=np.float64)
        first = low + (high - low) * unit
        full = s * np.asarray(
            jax.random.rademacher(k_sign, shape, dtype=np.int32), dtype=np.float64
        )
        partial = s * np.asarray(
            jax.random.uniform(k_second, shape, minval=-1.0, maxval=1.0),
            dtype=np.float64,
        )
        use_full = (np.arange(count) % 2 == 0)[:, None]
        change = np.where(use_full, full, partial)
        if self.relation == "one-entry":
            entry = np.asarray(jax.random.randint(k_entry, (count,), 0, dim))
            change = np.where(np.arange(dim)[None, :] == entry[:, None], change, 0.0)
        pairs = np.stack([first, first + change], axis=1)
        return np.stack([self.project(p) for p in pairs])

    def _check_size(self) -> None:
        if self.size is None:
            raise ValueError(
                "Expected a domain with a size: call at(clip) on an l2-ball domain "
                "whose radius is the audit's clip."
            )


def check_relation(relation: str) -> str:
    """``relation`` is one of :data:`RELATIONS`; the message lists them."""
    if relation not in RELATIONS:
        raise ValueError(
            f"Unknown relation {relation!r}; expected one of: {', '.join(RELATIONS)}."
        )
    return relation


CLIPPED_EMBEDDINGS = InputDomain("l2-ball", size=None)  # the audit's clip radius
HISTOGRAMS = InputDomain("one-entry", 1.0, low=0.0)  # counts: one record, one count
QUERY_ANSWERS = InputDomain("every-entry", 1.0)  # answers of sensitivity 1


__all__ = [
    "CLIPPED_EMBEDDINGS",
    "HISTOGRAMS",
    "QUERY_ANSWERS",
    "RELATIONS",
    "InputDomain",
    "check_relation",
]
