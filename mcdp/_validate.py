"""Argument checks that run in Python before anything is traced or written.

Every check raises :class:`ValueError` with a one-line message that names the
argument and the allowed range, e.g. ``Expected epsilon > 0, got -1.``; the CLI
turns these into ``mcdp: error: ...`` and exit status 2.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

MAX_DRAWS = 1 << 40  # block indices must fit in uint32: 2**40 / 1024 = 2**30 blocks
MAX_DIM = 1 << 16
MAX_SEED = 2**32 - 1  # seeds are uint32
DTYPES = ("float64", "float32")  # float64 first: the audits' default


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def positive(name: str, value: object) -> float:
    """``value`` is a finite real number > 0."""
    if not _is_real(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"Expected {name} > 0 (finite), got {value!r}.")
    return float(value)


def nonnegative(name: str, value: object) -> float:
    """``value`` is a finite real number >= 0."""
    if not _is_real(value) or not math.isfinite(value) or value < 0:
        raise ValueError(f"Expected {name} >= 0 (finite), got {value!r}.")
    return float(value)


def open_unit(name: str, value: object) -> float:
    """``value`` lies strictly between 0 and 1."""
    if not _is_real(value) or not 0 < value < 1:
        raise ValueError(f"Expected {name} in (0, 1), got {value!r}.")
    return float(value)


def integer(name: str, value: object, *, low: int, high: int | None = None) -> int:
    """``value`` is an integer (``1e8`` is accepted) with ``low <= value <= high``."""
    if isinstance(value, str):
        value = parse_count(name, value)
    if _is_real(value) and math.isfinite(value) and float(value).is_integer():
        as_int = int(value)
        if as_int >= low and (high is None or as_int <= high):
            return as_int
    bound = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"
    raise ValueError(f"Expected {name} to be {bound}, got {value!r}.")


def delta(name: str, value: object) -> int | float:
    """A claimed delta, in ``[0, 1)``, returned as given (an int 0 stays an int: the
    audits' key identities spell it with ``repr``)."""
    if not (isinstance(value, (int, float)) and 0 <= value < 1):
        raise ValueError(f"Expected {name} in [0, 1), got {value!r}.")
    return value


def draws_or_none(name: str, value: object) -> int | None:
    """A sample size of at least 2 draws, or ``None`` for a default chosen later."""
    return None if value is None else integer(name, value, low=2, high=MAX_DRAWS)


def parse_count(name: str, text: str) -> int | float:
    """Parses ``"1e8"``, ``"100000000"`` or ``"1_000_000"``; the range check is left
    to :func:`integer`."""
    cleaned = text.strip().replace("_", "")
    try:
        return int(cleaned)
    except ValueError:
        pass
    try:
        return float(cleaned)
    except ValueError:
        raise ValueError(
            f"Expected {name} to be a number such as 1e8, got {text!r}."
        ) from None


def one_of(name: str, value: object, allowed: Iterable[str]) -> str:
    """``value`` is one of ``allowed``; the message lists them."""
    allowed = sorted(allowed)
    if value not in allowed:
        raise ValueError(
            f"Unknown {name} {value!r}; expected one of: {', '.join(allowed)}."
        )
    return value  # type: ignore[return-value]
