r"""Datasets and their neighbouring relations: what DP libraries are called on.

A *dataset* is an ``m x k`` float64 array of records, ``m >= 0``; two datasets are
neighbours under

========================= ====================================================
``add-remove``            one is the other with one record added (the number
                          of records is private)
``replace-one``           one is the other with one record replaced (the number
                          of records is public)
========================= ====================================================

Records are compared as a multiset (the order of the rows does not make two
datasets farther apart) and NaN equals NaN. :class:`DatasetDomain` says which
relation a function's claim is about, the bounds ``low``/``high`` that the function
is told its records lie in (per column; default unbounded), whether records outside
them (and NaN, ±inf) belong to the domain (by default they do: the claim covers
every dataset, SPEC §8), and the largest dataset the search proposes.
:class:`Datasets` is a pair of them, the input of a dataset audit.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

DATASET_RELATIONS = ("add-remove", "replace-one")
MAX_RECORDS = 1 << 20  # records of one dataset
MAX_WIDTH = 1024  # columns of a record
DEFAULT_MAX_SIZE = 1000  # the largest dataset the search proposes, by default


def dataset(name: str, value: object, width: int | None = None) -> np.ndarray:
    """``value`` as an ``(m, k)`` float64 array of records (a 1-D array is one
    column); a one-line error names ``name`` otherwise."""
    try:
        data = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"Expected {name} to be an (m, k) array of numbers, got "
            f"{type(value).__name__}."
        ) from None
    if data.ndim == 1 and width in (None, 1):
        data = data.reshape(-1, 1)  # one column
    if data.ndim != 2:
        raise ValueError(
            f"Expected {name} to be an (m, k) array of records"
            + ("" if width is None else f" with k = {width} (--dim)")
            + f", got shape {data.shape}."
        )
    m, k = data.shape
    if not 1 <= k <= MAX_WIDTH or m > MAX_RECORDS:
        raise ValueError(
            f"Expected {name} to have 1 to {MAX_WIDTH} columns and at most "
            f"{MAX_RECORDS:,} records, got shape {data.shape}."
        )
    if width is not None and k != width:
        raise ValueError(
            f"Expected the records of {name} to have {width} column"
            f"{'s' if width != 1 else ''} (--dim), got {k}."
        )
    return data


def _rows(data: np.ndarray) -> list[tuple[float, ...]]:
    """The records as sortable tuples, NaN equal to NaN (it sorts last)."""
    keyed = [tuple((1, 0.0) if math.isnan(v) else (0, v) for v in row) for row in data]
    return sorted(keyed)


def neighbours(d: np.ndarray, d_prime: np.ndarray, relation: str) -> bool:
    """Whether ``d`` and ``d_prime`` are neighbours under ``relation`` (multisets
    of records; NaN equals NaN)."""
    check_dataset_relation(relation)
    if d.shape[1] != d_prime.shape[1]:
        return False
    a, b = _rows(d), _rows(d_prime)
    if relation == "replace-one":
        if len(a) != len(b):
            return False
        extra_a, extra_b = _difference(a, b), _difference(b, a)
        return len(extra_a) <= 1 and len(extra_b) <= 1
    if abs(len(a) - len(b)) != 1:
        return False
    small, large = (a, b) if len(a) < len(b) else (b, a)
    return len(_difference(small, large)) == 0


def _difference(a: list, b: list) -> list:
    """The records of ``a`` not matched in ``b`` (multisets, both sorted)."""
    out, j = [], 0
    for row in a:
        while j < len(b) and b[j] < row:
            j += 1
        if j < len(b) and b[j] == row:
            j += 1
        else:
            out.append(row)
    return out


class Datasets(NamedTuple):
    """Two neighbouring datasets, the input of a dataset audit: ``(m, k)`` and
    ``(m', k)`` float64 arrays of records."""

    d: np.ndarray
    d_prime: np.ndarray

    @classmethod
    def of(cls, d: object, d_prime: object, width: int | None = None) -> Datasets:
        """Both checked (:func:`dataset`): numbers, two dimensions, one width."""
        first = dataset("d", d, width)
        second = dataset("d_prime", d_prime, first.shape[1])
        return cls(first, second)

    @property
    def width(self) -> int:
        """k, the columns of a record."""
        return int(self.d.shape[1])

    def describe(self, limit: int = 6) -> str:
        """Both datasets in one line each, the first ``limit`` records shown."""

        def show(data: np.ndarray) -> str:
            rows = [
                "(" + ", ".join(f"{v:g}" for v in row) + ")"
                if len(row) > 1
                else f"{row[0]:g}"
                for row in data[:limit]
            ]
            more = f", ... ({len(data)} records)" if len(data) > limit else ""
            return "[" + ", ".join(rows) + more + "]"

        return f"D = {show(self.d)}, D' = {show(self.d_prime)}"


def load_datasets(path: str, width: int | None = None) -> Datasets:
    """The arrays ``d`` and ``d_prime`` of an ``.npz`` file (``--datasets``)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [k for k in ("d", "d_prime") if k not in data.files]
            if missing:
                raise ValueError(
                    f"Expected --datasets {path} to hold the arrays d and d_prime, "
                    f"it lacks {' and '.join(missing)} (it has: "
                    f"{', '.join(data.files) or 'none'})."
                )
            return Datasets.of(data["d"], data["d_prime"], width)
    except OSError as err:
        raise ValueError(
            f"Expected --datasets to be a readable .npz file: {err}"
        ) from None


class DatasetDomain(NamedTuple):
    """Where a dataset function's inputs live and which datasets are neighbours.

    Attributes:
      relation: ``add-remove`` or ``replace-one``.
      width: k, the columns of a record.
      low, high: the bounds the function is told its records lie in, per column
        (a number applies to every column); ``-inf``/``inf`` for none.
      any_records: whether records outside ``[low, high]``, NaN and ±inf belong to
        the domain (default: they do; the claim covers every dataset).
      max_size: the largest dataset the search proposes.
    """

    relation: str
    width: int = 1
    low: tuple[float, ...] | float = -math.inf
    high: tuple[float, ...] | float = math.inf
    any_records: bool = True
    max_size: int = DEFAULT_MAX_SIZE

    @classmethod
    def of(
        cls,
        relation: str,
        width: int = 1,
        low: object = -math.inf,
        high: object = math.inf,
        any_records: bool = True,
        max_size: int = DEFAULT_MAX_SIZE,
    ) -> DatasetDomain:
        """A checked domain: a known relation, ``low <= high`` column by column,
        ``1 <= max_size <= MAX_RECORDS``."""
        check_dataset_relation(relation)
        if not isinstance(width, int | np.integer) or not 1 <= width <= MAX_WIDTH:
            raise ValueError(
                f"Expected width (--dim) to be an integer in [1, {MAX_WIDTH}], got "
                f"{width!r}."
            )
        lows, highs = _bound("low", low, width), _bound("high", high, width)
        for j, (a, b) in enumerate(zip(lows, highs, strict=True)):
            if not a <= b:
                raise ValueError(
                    f"Expected low <= high in every column, got low {a:g} > high "
                    f"{b:g} in column {j}."
                )
        if not isinstance(any_records, bool):
            raise ValueError(
                f"Expected any_records to be True or False, got {any_records!r}."
            )
        if not isinstance(max_size, int | np.integer) or not (
            1 <= max_size <= MAX_RECORDS
        ):
            raise ValueError(
                f"Expected max_size to be an integer in [1, {MAX_RECORDS}], got "
                f"{max_size!r}."
            )
        return cls(relation, int(width), lows, highs, any_records, int(max_size))

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``low`` and ``high`` as arrays of one value per column."""
        return (
            np.asarray(_bound("low", self.low, self.width)),
            np.asarray(_bound("high", self.high, self.width)),
        )

    def contains(self, pair: Datasets) -> bool:
        """Whether ``pair`` is a neighbouring pair of the domain: the relation,
        the width, the sizes, and the records' bounds where ``any_records`` is
        false."""
        d, d_prime = pair
        if d.shape[1] != self.width or d_prime.shape[1] != self.width:
            return False
        if max(len(d), len(d_prime)) > max(self.max_size, 1) + 1:
            return False
        if not self.any_records:
            low, high = self.bounds()
            for data in (d, d_prime):
                if not np.all(np.isfinite(data)):
                    return False
                if np.any(data < low) or np.any(data > high):
                    return False
        return neighbours(d, d_prime, self.relation)


def _bound(name: str, value: object, width: int) -> tuple[float, ...]:
    try:
        values = np.broadcast_to(np.asarray(value, dtype=np.float64), (width,))
    except (TypeError, ValueError):
        raise ValueError(
            f"Expected {name} to be a number or {width} numbers (one per column), "
            f"got {value!r}."
        ) from None
    if np.any(np.isnan(values)):
        raise ValueError(f"Expected {name} to be numbers, got NaN.")
    return tuple(float(v) for v in values)


def check_dataset_relation(relation: str) -> str:
    """``relation`` is one of :data:`DATASET_RELATIONS`; the message lists them."""
    if relation not in DATASET_RELATIONS:
        raise ValueError(
            f"Unknown dataset relation {relation!r}; expected one of: "
            f"{', '.join(DATASET_RELATIONS)}."
        )
    return relation
