r"""Releases of any structure, as rows of numbers that the attacks can read.

A library's function returns a number, an array whose length varies, a tuple, a
dict (its keys included), ``None``, NaN or ±inf, or raises. Everything a user of
the release can see is output (SPEC §8), so each release becomes one row of
``1 + width`` numbers:

* column 0, the *structure*: a 24-bit hash (exact in float32 and float64) of the
  release's shape: its types, lengths, dict keys, the positions and kinds of its
  non-finite values, strings as categories, and for an exception its type. Two
  releases with the same structure differ only in their finite numbers;
* columns 1 to ``width``: the finite numbers of the release in a fixed order (dict
  keys sorted), non-finite ones as 0 (their kind is in the structure), padded with
  0 or cut at ``width`` (the length is in the structure).

The attacks see these rows like any mechanism's outputs; the ``structure`` attack
(:mod:`mcdp.attacks`) reads column 0 alone: a structure that one input produced
and the other never did (a key present for one dataset only, an exception, a NaN)
is an event of probability 0 under the other.

:class:`ReleaseCall` wraps ``fn(rng, data, n)`` so that it returns such rows;
:class:`PerCall` wraps a function that makes one release per call. Both are
module-level classes, so worker processes can unpickle them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

STRUCTURE_BITS = 24  # exact in float32's mantissa
MAX_VALUES = 256  # the widest row of numbers a release gets
PROBE_DRAWS = 256  # releases per dataset that fix the width before the audit


class Raised(NamedTuple):
    """The release of a call that raised: the exception's type name."""

    name: str


def _flatten(release: Any, sig: list[str], values: list[float]) -> None:
    if isinstance(release, Raised):
        sig.append(f"raise:{release.name}")
    elif release is None:
        sig.append("None")
    elif isinstance(release, str | bytes):
        sig.append(f"str:{release!r}")
    elif isinstance(release, bool | np.bool_):
        sig.append("bool")
        values.append(float(release))
    elif isinstance(release, numbers.Real):
        _number(float(release), sig, values)
    elif isinstance(release, numbers.Complex):
        _number(float(release.real), sig, values)
        _number(float(release.imag), sig, values)
    elif isinstance(release, np.ndarray) and release.dtype != object:
        _array(release, sig, values)
    elif isinstance(release, Mapping):
        sig.append("{")
        for key in sorted(release, key=repr):
            sig.append(f"{key!r}:")
            _flatten(release[key], sig, values)
        sig.append("}")
    elif isinstance(release, Sequence | np.ndarray):
        sig.append(f"{type(release).__name__}({len(release)}")
        for item in release:
            _flatten(item, sig, values)
        sig.append(")")
    else:
        raise ValueError(
            f"Expected releases of numbers, arrays, strings, None, tuples, lists or "
            f"dicts of them; got {type(release).__name__}, which cannot be compared."
        )


def _number(v: float, sig: list[str], values: list[float]) -> None:
    if math.isfinite(v):
        sig.append("n")
        values.append(v)
    else:
        sig.append("nan" if math.isnan(v) else ("+inf" if v > 0 else "-inf"))


def _array(a: np.ndarray, sig: list[str], values: list[float]) -> None:
    if not np.issubdtype(a.dtype, np.number) and a.dtype != np.bool_:
        sig.append(f"array{a.shape}:{a.dtype.str}")
        sig.extend(repr(v) for v in a.ravel().tolist())
        return
    flat = np.asarray(a, dtype=np.float64).ravel()
    sig.append(f"array{a.shape}")
    bad = ~np.isfinite(flat)
    if bad.any():
        where = np.flatnonzero(bad)
        kinds = np.where(np.isnan(flat[where]), 0, np.sign(flat[where]))
        sig.append(f"nonfinite{where.tolist()}{kinds.tolist()}")
        flat = np.where(bad, 0.0, flat)
    values.extend(flat.tolist())


def _signature(release: Any) -> tuple[list[str], list[float]]:
    sig: list[str] = []
    values: list[float] = []
    _flatten(release, sig, values)
    return sig, values


def _hash(sig: list[str]) -> int:
    digest = hashlib.blake2b("|".join(sig).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << STRUCTURE_BITS) - 1)


def structure(release: Any) -> tuple[int, list[float]]:
    """A release's structure (the 24-bit hash of its shape, types, keys and
    non-finite values) and its finite numbers in order."""
    sig, values = _signature(release)
    return _hash(sig), values


def _numeric_rows(releases: Any, n: int) -> bool:
    """Whether ``releases`` is a numeric array of ``n`` rows (the fast path)."""
    return (
        isinstance(releases, np.ndarray)
        and releases.dtype != object
        and np.issubdtype(releases.dtype, np.number)
        and releases.ndim >= 1
        and releases.shape[0] == n
    )


def release_list(releases: Any, n: int) -> list:
    """``fn``'s ``n`` releases as a list, checked: an array whose first axis is
    ``n``, or a sequence of ``n``."""
    if _numeric_rows(releases, n):
        return list(releases)
    if isinstance(releases, str | bytes | Mapping) or not isinstance(
        releases, Sequence | np.ndarray
    ):
        raise ValueError(
            f"Expected fn to return its {n} releases as an array whose first axis "
            f"is {n} or as a sequence of {n}, got {type(releases).__name__}."
        )
    if len(releases) != n:
        raise ValueError(f"Expected fn to return {n} releases, got {len(releases)}.")
    return list(releases)


def encode(releases: Any, n: int, width: int) -> np.ndarray:
    """``n`` releases as an ``(n, 1 + width)`` float64 array (the module's
    docstring): an array whose first axis is ``n``, or a sequence of ``n``
    releases of any structure."""
    out = np.zeros((n, 1 + width))
    if _numeric_rows(releases, n):
        rows = np.asarray(releases, dtype=np.float64).reshape(n, -1)
        good = np.all(np.isfinite(rows), axis=1)
        if good.any():  # one structure for every finite row: hashed once
            out[good, 0], _ = structure(
                rows[np.argmax(good)].reshape(releases.shape[1:])
            )
            cut = min(width, rows.shape[1])
            out[good, 1 : 1 + cut] = rows[good, :cut]
        for i in np.flatnonzero(~good):
            _row(out[i], releases[i], width)
        return out
    items = release_list(releases, n)
    if width >= 1 and all(type(r) in _SCALARS for r in items):
        _scalar_rows(out, np.asarray(items, dtype=np.float64))
        return out
    for i, release in enumerate(items):
        _row(out[i], release, width)
    return out


# plain numbers (not bool, which is a structure of its own): the common release of
# a function of one release per call, encoded at once (the rows of _row exactly)
_SCALARS = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})
_SCALAR_IDS = {kind: _hash([kind]) for kind in ("n", "nan", "+inf", "-inf")}


def _scalar_rows(out: np.ndarray, values: np.ndarray) -> None:
    finite = np.isfinite(values)
    out[:, 0] = np.where(
        finite,
        _SCALAR_IDS["n"],
        np.where(
            np.isnan(values),
            _SCALAR_IDS["nan"],
            np.where(values > 0, _SCALAR_IDS["+inf"], _SCALAR_IDS["-inf"]),
        ),
    )
    out[:, 1] = np.where(finite, values, 0.0)


def _row(row: np.ndarray, release: Any, width: int) -> None:
    sid, values = structure(release)
    row[0] = sid
    cut = min(width, len(values))
    row[1 : 1 + cut] = values[:cut]


def leaf_count(releases: Any, n: int) -> int:
    """The most numbers any of ``n`` releases holds (what fixes the width)."""
    counts = (len(_signature(r)[1]) for r in release_list(releases, n))
    return max(counts, default=0)


@dataclasses.dataclass(frozen=True)
class PerCall:
    """``fn(rng, data, n)`` from ``f(rng, data)``, one release per call: a library
    function that releases one value per call, without the user's loop. A call
    that raises gives the release :class:`Raised` (its type name)."""

    f: Callable[[np.random.Generator, np.ndarray], Any]

    def __call__(self, rng: np.random.Generator, data: np.ndarray, n: int) -> list:
        out = []
        for _ in range(n):
            try:
                out.append(self.f(rng, data))
            except Exception as err:  # noqa: BLE001 (the type is the release)
                out.append(Raised(type(err).__name__))
        return out


@dataclasses.dataclass(frozen=True)
class ReleaseCall:
    """``fn(rng, data, n)`` whose releases come back as rows of ``1 + width``
    numbers (:func:`encode`); a call that raises gives ``n`` releases of
    :class:`Raised`."""

    fn: Callable[[np.random.Generator, np.ndarray, int], Any]
    width: int

    def __call__(self, rng: np.random.Generator, data: np.ndarray, n: int):
        try:
            releases = self.fn(rng, data, n)
        except Exception as err:  # noqa: BLE001 (the type is the release)
            releases = [Raised(type(err).__name__)] * n
        return encode(releases, n, self.width)


def probe_width(
    fn: Callable[[np.random.Generator, np.ndarray, int], Any],
    datasets: Sequence[np.ndarray],
    seed: int,
    draws: int = PROBE_DRAWS,
) -> int:
    """The numbers per release that the audit keeps: the most that ``draws``
    releases of each dataset held (at least 1, at most :data:`MAX_VALUES`), from
    generators of their own."""
    most = 0
    for i, data in enumerate(datasets):
        rng = np.random.default_rng([seed, 0x5EED, i])
        try:
            releases = fn(rng, data, draws)
        except Exception:  # noqa: BLE001 (a raise is a release of no numbers)
            continue
        most = max(most, leaf_count(releases, draws))
    return max(1, min(MAX_VALUES, most))


def summary(
    fn: Callable[[np.random.Generator, np.ndarray, int], Any],
    datasets: Sequence[np.ndarray],
    seed: int,
    draws: int,
) -> dict[str, Any]:
    """How often each dataset's releases raised, held a non-finite number, and how
    many structures they took, on ``draws`` releases of each from generators of
    their own (the record's ``releases``)."""
    raised, nonfinite, structures = [], [], []
    for i, data in enumerate(datasets):
        rng = np.random.default_rng([seed, 0x5A11, i])
        try:
            releases = fn(rng, data, draws)
        except Exception as err:  # noqa: BLE001
            releases = [Raised(type(err).__name__)] * draws
        sig_raised = sig_nonfinite = 0
        seen = set()
        for release in release_list(releases, draws):
            sig, _ = _signature(release)
            seen.add(_hash(sig))
            if isinstance(release, Raised):
                sig_raised += 1
            elif any(_nonfinite(s) for s in sig):
                sig_nonfinite += 1
        raised.append(sig_raised / draws)
        nonfinite.append(sig_nonfinite / draws)
        structures.append(len(seen))
    return {
        "draws": draws,
        "raised": raised,
        "nonfinite": nonfinite,
        "structures": structures,
    }


def _nonfinite(part: str) -> bool:
    """Whether a part of a signature marks a non-finite number."""
    return part in ("nan", "+inf", "-inf") or part.startswith("nonfinite")
