"""``mcdp figures``: computes the results that are missing (resumable, in the cache
folder) and draws every figure, or those of ``--only``, into the figures folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcdp.cli._common import fail, interrupted
from mcdp.cli._options import add_common_options, comma_list, count, figure, typed


def add_parser(subparsers) -> None:
    f = subparsers.add_parser(
        "figures", help="compute what is missing and draw every figure into figures/"
    )
    f.set_defaults(handler=run)
    f.add_argument(
        "--only",
        type=typed(comma_list(figure)),
        default=None,
        help="comma-separated figure names (default: all)",
    )
    f.add_argument("--out", default="figures", help="folder of the figures (figures)")
    f.add_argument(
        "--cache", default="results", help="folder of resumable results (results)"
    )
    f.add_argument(
        "--draws",
        type=typed(count("--draws")),
        default=1_000_000,
        help="draws per dataset of the ACL 2022 grid (1e6; the paper used 1e7)",
    )
    f.add_argument(
        "--pairs",
        type=typed(count("--pairs")),
        default=100_000,
        help="pairs per n of the EMNLP 2021 experiment (1e5; the paper used 1e4)",
    )
    f.add_argument(
        "--e4-draws",
        type=typed(count("--e4-draws")),
        default=100_000,
        help="draws per input and cell of the TrLaplace audit (1e5)",
    )
    f.add_argument(
        "--suite-draws",
        type=typed(count("--suite-draws")),
        default=100_000,
        help="draws per input and cell of the benchmark suite (1e5)",
    )
    add_common_options(f)


def run(args: argparse.Namespace) -> int:
    from mcdp.figures import FigureSettings, make_figures

    settings = FigureSettings(
        out_dir=Path(args.out),
        cache_dir=Path(args.cache),
        draws=args.draws,
        pairs=args.pairs,
        e4_draws=args.e4_draws,
        suite_draws=args.suite_draws,
        seed=args.seed,
        confidence=args.confidence,
        dtype=args.dtype,
    )

    def log(message: str) -> None:
        print(message, file=sys.stderr)

    try:
        settings = settings.validated()
        paths = make_figures(settings, args.only, progress=True, log=log)
    except ValueError as err:
        fail(str(err))
    except KeyboardInterrupt:
        return interrupted(f"finished results are in {args.cache}/")
    for path in paths:
        print(path)
    return 0
