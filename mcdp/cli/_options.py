"""The types of the command line's options (argparse ``type=`` callables) and the
option groups that several subcommands share.

A type is built from a parser that raises :class:`ValueError` with a message naming
the option; :func:`typed` hands that message to argparse, which prints it after
``argument --name:``. Lists of values separated by commas all go through
:func:`comma_list`, with a parser of one item.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from mcdp import _validate
from mcdp.core.datasets import DATASET_RELATIONS, DatasetDomain
from mcdp.core.domains import RELATIONS, InputDomain
from mcdp.pairs import PAIRS
from mcdp.sampling import DTYPES, PRNG_IMPL, PRNG_IMPLS

T = TypeVar("T")


def typed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """Turns our ValueError into argparse's error so the message names the option."""

    def wrapped(text):
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    wrapped.__name__ = getattr(parse, "__name__", "value")
    return wrapped


# one value


def integer(name: str, low: int, high: int | None = None) -> Callable[[str], int]:
    """An integer (``1e3`` is accepted) in ``[low, high]``."""
    return lambda text: _validate.integer(name, text, low=low, high=high)


def count(name: str) -> Callable[[str], int]:
    """A number of draws, pairs or restarts: ``1e8`` is accepted."""
    return integer(name, 1, _validate.MAX_DRAWS)


def dimension(name: str) -> Callable[[str], int]:
    """A dimension d of the mechanism's input."""
    return integer(name, 1, _validate.MAX_DIM)


def seed(name: str) -> Callable[[str], int]:
    """An integer seed (uint32)."""
    return integer(name, 0, _validate.MAX_SEED)


def real(name: str) -> Callable[[str], float]:
    """Any number ``float`` reads, ``inf`` and ``nan`` included."""

    def parse(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"Expected {name} to be a number, got {text!r}.") from None

    return parse


def positive(name: str) -> Callable[[str], float]:
    """A finite real number > 0."""
    return lambda text: _validate.positive(name, real(name)(text))


def open_unit(name: str) -> Callable[[str], float]:
    """A real number strictly between 0 and 1."""
    return lambda text: _validate.open_unit(name, real(name)(text))


def delta_value(text: str) -> float:
    """The claimed delta of ``--delta``, in ``[0, 1)``."""
    value = real("--delta")(text)
    if not 0 <= value < 1:
        raise ValueError(f"Expected --delta in [0, 1), got {value!r}.")
    return value


def one_of(name: str, allowed: Iterable[str]) -> Callable[[str], str]:
    """One of ``allowed``; the message lists them."""
    return lambda text: _validate.one_of(name, text, allowed)


def pair_arg(text: str):
    """A pair name, or a ``.npy`` file with a ``(2, d)`` array of finite numbers."""
    if not text.endswith(".npy"):
        return _validate.one_of("--pair", text, PAIRS)
    import numpy as np

    try:
        pair = np.load(text, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise ValueError(f"--pair {text}: cannot read a NumPy array ({err}).") from None
    if pair.ndim != 2 or pair.shape[0] != 2 or not np.all(np.isfinite(pair)):
        raise ValueError(
            f"--pair {text}: expected a finite (2, d) array, got {pair.shape}."
        )
    return pair.astype(np.float64)


def pair_name(text: str) -> str:
    """The name of a pair (:data:`mcdp.pairs.PAIRS`); a grid checks which it takes."""
    return _validate.one_of("--pairs", text, PAIRS)


def figure(text: str) -> str:
    """The name of a figure (:mod:`mcdp.figures` is imported only when needed)."""
    from mcdp.figures import FIGURES

    return _validate.one_of("figure", text, FIGURES)


# values separated by commas


def comma_list(
    parse_item: Callable[[str], T],
    *,
    unique: bool = False,
    empty: str | None = None,
) -> Callable[[str], list[T]]:
    """Values separated by commas, each read by ``parse_item``.

    Spaces around an item are dropped and empty items skipped (``"1, 2,"`` is two
    items); the first bad item raises ``parse_item``'s error. ``unique`` keeps the
    first of repeated values; ``empty``, if given, is the error message when no
    item is left (otherwise the list is just empty).
    """

    def parse(text: str) -> list[T]:
        values = [parse_item(item) for item in map(str.strip, text.split(",")) if item]
        if not values and empty is not None:
            raise ValueError(empty)
        return list(dict.fromkeys(values)) if unique else values

    return parse


def dims(name: str) -> Callable[[str], list[int]]:
    """``1,2,8``, ``1-256`` or a mix such as ``1-8,16,32``: sorted, each once."""
    parse_ranges = comma_list(
        _dim_range(name), empty=f"Expected {name} to name at least one dimension."
    )

    def parse(text: str) -> list[int]:
        return sorted({dim for block in parse_ranges(text) for dim in block})

    return parse


def _dim_range(name: str) -> Callable[[str], range]:
    """``n`` or ``low-high``: the dimensions from low to high, both included."""

    def parse(part: str) -> range:
        low, _, high = part.partition("-")
        first = integer(name, 1)(low)
        last = first
        if high:
            last = integer(name, 1)(high)
        if last < first:
            raise ValueError(f"Expected {name} ranges low-high, got {part!r}.")
        return range(first, last + 1)

    return parse


# option groups


def add_common_options(p: argparse.ArgumentParser) -> None:
    """``--seed``, ``--confidence`` and ``--dtype``."""
    p.add_argument(
        "--seed",
        type=typed(seed("--seed")),
        default=0,
        help="integer seed (default 0)",
    )
    p.add_argument(
        "--confidence",
        type=typed(open_unit("--confidence")),
        default=0.95,
        help="joint confidence of the intervals (default 0.95)",
    )
    p.add_argument(
        "--dtype",
        choices=DTYPES,
        default="float64",
        help="float64 (default) or float32",
    )


def add_prng_option(p: argparse.ArgumentParser) -> None:
    """``--prng``: the stream the seed starts."""
    p.add_argument(
        "--prng",
        choices=PRNG_IMPLS,
        default=PRNG_IMPL,
        help=f"the stream of the seed: {PRNG_IMPL} (default) or splitmix64, faster "
        "and weaker (screen with it, confirm with the default)",
    )


def add_host_options(p: argparse.ArgumentParser) -> None:
    """Options that join a ``jax.distributed`` run (see :mod:`mcdp.distributed`);
    :func:`mcdp.cli._common.join_distributed` joins it."""
    d = p.add_argument_group(
        "several hosts",
        "run the same command on every host; the draws are shared out and only "
        "process 0 prints",
    )
    d.add_argument(
        "--coordinator", metavar="HOST:PORT", help="address of process 0's host"
    )
    d.add_argument(
        "--num-processes",
        type=typed(integer("--num-processes", 1, 1 << 16)),
        help="how many processes take part",
    )
    d.add_argument(
        "--process-id",
        type=typed(integer("--process-id", 0, (1 << 16) - 1)),
        help="this process, 0 .. N-1",
    )


def domain_value(text: str) -> InputDomain | DatasetDomain:
    """``RELATION[:SIZE[:LOW:HIGH]]`` as an :class:`~mcdp.domains.InputDomain`, or
    ``add-remove[:LOW:HIGH]``, ``replace-one[:LOW:HIGH]`` as a
    :class:`~mcdp.core.datasets.DatasetDomain` of records of one column (the
    command gives it ``--dim`` columns)."""
    parts = text.split(":")
    if parts[0] in DATASET_RELATIONS and len(parts) in (1, 3):
        try:
            bounds = [float(p) for p in parts[1:]] or [-math.inf, math.inf]
        except ValueError:
            raise ValueError(
                f"Expected numbers for LOW and HIGH in --domain, got {text!r}."
            ) from None
        return DatasetDomain.of(parts[0], 1, *bounds)
    if parts[0] not in RELATIONS or len(parts) not in (1, 2, 4):
        raise ValueError(
            f"Expected --domain RELATION[:SIZE[:LOW:HIGH]] with RELATION one of "
            f"{', '.join(RELATIONS)}, or DATASET-RELATION[:LOW:HIGH] with one of "
            f"{', '.join(DATASET_RELATIONS)}, got {text!r}."
        )
    try:
        numbers = [float(p) for p in parts[1:]]
    except ValueError:
        raise ValueError(
            f"Expected numbers for SIZE, LOW and HIGH in --domain, got {text!r}."
        ) from None
    size = numbers[0] if numbers else (None if parts[0] == "l2-ball" else 1.0)
    if size is not None and not size > 0:
        raise ValueError(f"Expected --domain SIZE > 0, got {text!r}.")
    low, high = numbers[1:] if len(numbers) == 3 else (float("-inf"), float("inf"))
    if not low < high:
        raise ValueError(f"Expected --domain LOW < HIGH, got {text!r}.")
    return InputDomain(parts[0], size, low, high)
