"""``mcdp grid EXPERIMENT``: a whole experiment grid into one resumable JSON file,
the ACL 2022 sanity checks (``acl2022``) or the TrLaplace (epsilon, delta) audits
(``trlaplace``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcdp.cli._common import EXIT_INTERRUPTED, fail
from mcdp.cli._options import (
    add_common_options,
    add_prng_option,
    comma_list,
    count,
    e4_pair,
    integer,
    one_of,
    positive,
    typed,
)
from mcdp.mechanisms import MECHANISMS


def add_parser(subparsers) -> None:
    g = subparsers.add_parser(
        "grid", help="a whole experiment grid into one resumable JSON file"
    )
    g.set_defaults(handler=run)
    g.add_argument("experiment", choices=["acl2022", "trlaplace"])
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
        type=typed(comma_list(e4_pair)),
        default=None,
        help="trlaplace only: axis, diagonal (default both)",
    )
    add_common_options(g)
    add_prng_option(g)


def run(args: argparse.Namespace) -> int:
    from mcdp.experiments import GridSpec, load_grid, run_grid

    if args.experiment == "trlaplace":
        return _run_trlaplace(args)
    if args.pairs is not None:
        fail("--pairs applies to the trlaplace grid.")

    narrowed = {
        name: value
        for name, value in (
            ("mechanisms", args.mechanisms),
            ("epsilons", args.epsilons),
            ("dims", args.dims),
        )
        if value is not None
    }
    spec = GridSpec(
        draws=args.draws,
        seed=args.seed,
        confidence=args.confidence,
        dtype=args.dtype,
        prng=args.prng,
        **narrowed,
    )
    try:
        spec = spec.validated()
        load_grid(Path(args.out), spec)  # refuse a foreign file before any work
    except ValueError as err:
        fail(str(err))

    def report(result, resumed):
        tag = "resumed" if resumed else f"{result.seconds:7.1f} s"
        exact = "  -  " if result.exact is None else f"{result.exact:.4g}"
        print(
            f"{result.mechanism:>8} eps={result.epsilon:<5g} d={result.dim:<4} "
            f"loss {result.loss:.4g} "
            f"[{result.loss_lower:.4g}, {result.loss_upper:.4g}] "
            f"exact {exact}  ({tag})",
            file=sys.stderr,
        )

    try:
        run_grid(spec, args.out, progress=True, on_cell=report)
    except KeyboardInterrupt:
        print(
            f"interrupted; finished cells are in {args.out}; rerun to resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    print(args.out)
    return 0


def _run_trlaplace(args: argparse.Namespace) -> int:
    """``mcdp grid trlaplace``: the (epsilon, delta) audits of TrLaplace."""
    from mcdp.trlaplace_audit import E4Spec, load_e4, run_e4

    if args.dims is not None:
        fail("--dims applies to the acl2022 grid; trlaplace uses the paper's d.")
    narrowed = {
        name: value
        for name, value in (
            ("mechanisms", args.mechanisms),
            ("epsilons", args.epsilons),
            ("pairs", args.pairs),
        )
        if value is not None
    }
    spec = E4Spec(
        draws=args.draws,
        seed=args.seed,
        confidence=args.confidence,
        dtype=args.dtype,
        prng=args.prng,
        **narrowed,
    )
    try:
        spec = spec.validated()
        load_e4(Path(args.out), spec)
    except ValueError as err:
        fail(str(err))

    def report(result, resumed):
        r = result if isinstance(result, dict) else result.to_dict()
        tag = "resumed" if resumed else f"{r['seconds']:7.1f} s"
        print(
            f"{r['mechanism']:>9} eps={r['epsilon']:<5g} d={r['dim']:<5} "
            f"{r['pair']:>8} {r['attack']:>7}: delta claimed {r['delta_claimed']:.3g}, "
            f"lower {r['delta_lower']:.3g}, estimate {r['delta_estimate']:.3g}"
            f"{'  VIOLATED' if r['violated'] else ''}  ({tag})",
            file=sys.stderr,
        )

    try:
        run_e4(spec, args.out, on_cell=report)
    except KeyboardInterrupt:
        print(f"interrupted; finished cells are in {args.out}", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(args.out)
    return 0
