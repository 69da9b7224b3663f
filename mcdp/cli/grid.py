"""``mcdp grid EXPERIMENT``: a whole experiment grid into one resumable JSON file,
any grid of :data:`mcdp.experiments.GRIDS`: the ACL 2022 sanity checks
(``acl2022``), the TrLaplace (epsilon, delta) audits (``trlaplace``) or the
benchmark suite (``benchmarks``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcdp.attacks import ATTACKS
from mcdp.cli._common import fail, interrupted
from mcdp.cli._options import (
    add_common_options,
    add_prng_option,
    comma_list,
    count,
    integer,
    one_of,
    pair_name,
    positive,
    typed,
)
from mcdp.cli._text import summary
from mcdp.experiments import GRIDS
from mcdp.mechanisms import MECHANISMS


def add_parser(subparsers) -> None:
    g = subparsers.add_parser(
        "grid", help="a whole experiment grid into one resumable JSON file"
    )
    g.set_defaults(handler=run)
    g.add_argument("experiment", choices=sorted(GRIDS))
    g.add_argument(
        "--draws",
        required=True,
        type=typed(count("--draws")),
        help="draws per dataset and cell",
    )
    g.add_argument(
        "--out",
        required=True,
        help="JSON file; an existing one of the same grid is resumed",
    )
    g.add_argument(
        "--mechanisms",
        type=typed(comma_list(one_of("mechanism", MECHANISMS))),
        default=None,
        help="comma-separated subset",
    )
    g.add_argument(
        "--epsilons", type=typed(comma_list(positive("--epsilons"))), default=None
    )
    g.add_argument(
        "--dims",
        type=typed(comma_list(integer("--dims", 1))),
        default=None,
        help="acl2022 only",
    )
    g.add_argument(
        "--pairs",
        type=typed(comma_list(pair_name)),
        default=None,
        help="trlaplace: axis, diagonal (default both); benchmarks: a subset of "
        "each case's pairs (default all)",
    )
    g.add_argument(
        "--attacks",
        type=typed(comma_list(one_of("--attacks", ATTACKS), unique=True)),
        default=None,
        help="benchmarks only: comma-separated attacks, each a cell of every pair "
        "(default auto)",
    )
    add_common_options(g)
    add_prng_option(g)


NARROWING = ("mechanisms", "epsilons", "dims", "pairs", "attacks")  # a grid's own


def run(args: argparse.Namespace) -> int:
    """One handler for every grid of :data:`mcdp.experiments.GRIDS`: the options
    that narrow a grid must be among its coordinates."""
    from mcdp.experiments import GRIDS, run_grid

    grid = GRIDS[args.experiment]
    narrowed = {}
    for name in NARROWING:
        value = getattr(args, name)
        if value is None:
            continue
        if name not in grid.COORDINATES:
            owners = [e for e, g in sorted(GRIDS.items()) if name in g.COORDINATES]
            fail(
                f"--{name} applies to the {' and '.join(owners)} grid, not to "
                f"{args.experiment}."
            )
        narrowed[name] = value
    spec = grid(
        draws=args.draws,
        seed=args.seed,
        confidence=args.confidence,
        dtype=args.dtype,
        prng=args.prng,
        **narrowed,
    )
    try:
        spec = spec.validated()
        spec.load(Path(args.out))  # refuse a foreign file before any work
    except ValueError as err:
        fail(str(err))

    def report(record, resumed: bool) -> None:
        tag = "resumed" if resumed else f"{record.seconds:7.1f} s"
        print(f"{summary(record)}  ({tag})", file=sys.stderr)

    try:
        run_grid(spec, args.out, progress=True, on_cell=report)
    except KeyboardInterrupt:
        return interrupted(f"finished cells are in {args.out}; rerun to resume")
    print(args.out)
    return 0
