"""The resumable result files, and the one runner that fills them from a grid.

A grid file is a JSON object keyed by the cells' coordinates (``mechanism →
epsilon → d`` for ACL 2022, ``mechanism → epsilon → pair → attack`` for the
TrLaplace audit), each cell a result record as a dict
(:meth:`mcdp.records.Record.to_dict`), plus one ``"_meta"`` entry with the grid's
settings. :func:`run_grid` writes the file atomically after every cell and skips the
cells already in it, so an interrupted run resumes where it stopped; a file of
another grid, or of the same grid with other settings, is refused before any work.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from mcdp import _validate
from mcdp._files import write_atomic
from mcdp._progress import progress_bar
from mcdp.core.records import Record
from mcdp.sampling import DTYPES, PRNG_IMPL, PRNG_IMPLS

META_KEY = "_meta"


def eps_key(epsilon: float) -> str:
    """JSON key of an epsilon, as in the reference ``results.json`` ("1.0", "0.1")."""
    return repr(float(epsilon))


def load_resumable(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """Reads a result file to resume, or starts one with ``meta`` if ``path`` does
    not exist. Raises :class:`ValueError` (naming ``--out``) if the file is not a
    grid of ``meta["experiment"]`` with exactly the settings in ``meta``."""
    path = Path(path)
    if not path.exists():
        return {META_KEY: dict(meta)}
    experiment = meta["experiment"]
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(
            f"--out {path} exists and is not a JSON grid file ({err})."
        ) from None
    found = data.get(META_KEY) if isinstance(data, dict) else None
    if not isinstance(found, dict) or found.get("experiment") != experiment:
        article = "an" if experiment[0] in "aeiou" else "a"
        raise ValueError(
            f"--out {path} exists and is not {article} {experiment} grid file; "
            "choose another file."
        )
    for field, wanted in meta.items():
        if found.get(field) != wanted:
            raise ValueError(
                f"--out {path} holds a grid with {field}={found.get(field)!r}, not "
                f"{wanted!r}; choose another file or the same settings to resume."
            )
    return data


class Cell(NamedTuple):
    """One cell of a grid: where it goes in the file, and how to compute it."""

    path: tuple[str, ...]  # the keys of the cell in the file
    weight: int  # scalars per draw, for the progress bar
    label: str  # shown beside the progress bar
    run: Callable[[], Iterator[Record]]  # partial records, the last one final


@dataclasses.dataclass(frozen=True, kw_only=True)
class Grid:
    """What every grid fixes: the draws per input and cell, the seed, the
    confidence, the dtype and the stream; a grid adds its cells' coordinates.

    A grid names its ``EXPERIMENT``, its ``RECORD`` type, the ``COORDINATES`` that
    must not be empty and the ``DEPTH`` of its cells in the file, and defines
    :meth:`cells`; :meth:`meta` is what a file must match to be resumed.
    """

    EXPERIMENT: ClassVar[str] = ""
    RECORD: ClassVar[type[Record]] = Record
    COORDINATES: ClassVar[tuple[str, ...]] = ("mechanisms", "epsilons")
    EMPTY: ClassVar[str] = "Expected at least one mechanism and epsilon in the grid."
    DEPTH: ClassVar[int] = 3
    RECORD_NAME: ClassVar[str] = "result"  # in the error for a foreign file

    draws: int
    mechanisms: Sequence[str] = ()
    epsilons: Sequence[float] = ()
    seed: int = 0
    confidence: float = 0.95
    dtype: str = "float64"
    prng: str = PRNG_IMPL

    @property
    def experiment(self) -> str:
        return self.EXPERIMENT

    def validated(self) -> Grid:
        """Checks the shared fields; raises a one-line :class:`ValueError`."""
        given = (getattr(self, name) for name in self.COORDINATES)
        if not all(value for value in given if value is not None):  # None: default
            raise ValueError(self.EMPTY)
        return dataclasses.replace(
            self,
            draws=_validate.integer(
                "draws", self.draws, low=1, high=_validate.MAX_DRAWS
            ),
            mechanisms=tuple(self.mechanisms),
            epsilons=tuple(_validate.positive("epsilons", e) for e in self.epsilons),
            seed=_validate.integer("seed", self.seed, low=0, high=_validate.MAX_SEED),
            confidence=_validate.open_unit("confidence", self.confidence),
            dtype=_validate.one_of("dtype", self.dtype, DTYPES),
            prng=_validate.one_of("prng", self.prng, PRNG_IMPLS),
        )

    def meta(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "draws": self.draws,
            "seed": self.seed,
            "confidence": self.confidence,
            "dtype": self.dtype,
            "prng_impl": self.prng,  # a grid never mixes two streams
        }

    def cells(self) -> list[Cell]:
        raise NotImplementedError

    def load(self, path: str | os.PathLike) -> dict[str, Any]:
        """:func:`load_resumable` for this grid; its cells must be records of the
        grid's type."""
        path = Path(path)
        data = load_resumable(path, self.meta())
        for top, entry in data.items():
            if top != META_KEY and not _holds_records(
                entry, self.DEPTH - 1, self.RECORD
            ):
                raise ValueError(
                    f"--out {path}: the entry {top!r} is not a grid of "
                    f"{self.RECORD_NAME} records."
                )
        return data


def _holds_records(entry: object, depth: int, record: type[Record]) -> bool:
    """``entry`` is ``depth`` levels of dicts over dicts with the fields of
    ``record`` (those with a default may be missing: records written before the
    field was added)."""
    if depth == 0:
        fields = dataclasses.fields(record)
        names = {f.name for f in fields}
        required = {
            f.name
            for f in fields
            if f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        }
        return isinstance(entry, dict) and required <= set(entry) <= names
    return isinstance(entry, dict) and all(
        _holds_records(v, depth - 1, record) for v in entry.values()
    )


def _get(data: dict[str, Any], path: Sequence[str]) -> Any:
    for key in path:
        data = data.get(key, {}) if isinstance(data, dict) else {}
    return data or None


def _put(data: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        data = data.setdefault(key, {})
    data[path[-1]] = value


def run_grid(
    spec: Grid,
    out: str | os.PathLike,
    *,
    progress: bool = False,
    on_cell: Callable[[Record, bool], None] | None = None,
) -> dict[str, Any]:
    """Runs every cell of ``spec`` not yet in ``out``, writing ``out`` atomically after
    each cell, so an interrupted run resumes where it stopped.

    ``on_cell(record, resumed)`` is called for every cell, finished or skipped. On
    Ctrl-C the cell under way is stored as far as it got (marked ``interrupted``,
    so a rerun computes it again) and :class:`KeyboardInterrupt` propagates.

    Returns:
      The file's contents.
    """
    spec = spec.validated()
    path = Path(out)
    data = spec.load(path)
    todo = []
    for cell in spec.cells():
        stored = _get(data, cell.path)
        if stored is not None and not stored.get("interrupted", False):
            if on_cell is not None:
                on_cell(spec.RECORD.from_dict(stored), True)
        else:
            todo.append(cell)
    total = sum(spec.draws * cell.weight for cell in todo)
    with progress_bar(progress, total=total, desc=spec.experiment) as bar:
        for cell in todo:
            bar.set_postfix_str(cell.label)
            done = bar.n
            result = None
            try:
                for result in cell.run():
                    bar.update(done + result.draws * cell.weight - bar.n)
            except KeyboardInterrupt:
                if result is not None:
                    _put(data, cell.path, result.to_dict())
                    write_atomic(path, data)
                raise
            _put(data, cell.path, result.to_dict())
            write_atomic(path, data)
            if on_cell is not None:
                on_cell(result, False)
    return data
