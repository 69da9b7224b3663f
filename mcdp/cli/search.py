"""``mcdp search``: search a mechanism's input domain for the neighbouring pair with
the strongest bound; the best candidates are confirmed on fresh draws
(:func:`mcdp.search`).
"""

from __future__ import annotations

import argparse
import sys

from mcdp.cli._common import fail
from mcdp.cli._options import (
    add_common_options,
    add_prng_option,
    comma_list,
    count,
    delta_value,
    dimension,
    integer,
    one_of,
    positive,
    typed,
)
from mcdp.mechanisms import MECHANISMS
from mcdp.searching import BUDGET, CONFIRM, DRAWS, MAX_BUDGET, SCREEN_DRAWS, SOURCES


def add_parser(subparsers) -> None:
    from mcdp.attacks import ATTACKS

    s = subparsers.add_parser(
        "search",
        help="find the neighbouring pair with the strongest bound, confirmed on "
        "fresh draws",
    )
    s.set_defaults(handler=run)
    s.add_argument(
        "--mechanism",
        required=True,
        type=typed(
            one_of("--mechanism", [n for n, m in MECHANISMS.items() if m.domain])
        ),
        help="a mechanism that declares an input domain",
    )
    s.add_argument("--epsilon", required=True, type=typed(positive("--epsilon")))
    s.add_argument(
        "--delta",
        type=typed(delta_value),
        default=0.0,
        help="the claimed delta (default 0: a pure claim)",
    )
    s.add_argument(
        "--attack",
        type=typed(one_of("--attack", ATTACKS)),
        default="learned",
        help="the attack of every audit (default learned)",
    )
    s.add_argument(
        "--budget",
        type=typed(integer("--budget", 1, MAX_BUDGET)),
        default=BUDGET,
        help=f"candidate pairs screened: named, gradient and random (default {BUDGET})",
    )
    s.add_argument(
        "--confirm",
        type=typed(integer("--confirm", 1, MAX_BUDGET)),
        default=CONFIRM,
        help=f"best candidates confirmed on fresh draws, each at confidence "
        f"1 - (1 - c)/K (default {CONFIRM})",
    )
    s.add_argument(
        "--draws",
        type=typed(count("--draws")),
        default=DRAWS,
        help=f"draws per input of each confirmation (default {DRAWS:.0e})",
    )
    s.add_argument(
        "--screen-draws",
        type=typed(count("--screen-draws")),
        default=SCREEN_DRAWS,
        help=f"draws per input of each screening (default {SCREEN_DRAWS:.0e})",
    )
    s.add_argument(
        "--dim",
        type=typed(dimension("--dim")),
        default=None,
        help="d (default: the suite case's length)",
    )
    s.add_argument(
        "--clip",
        type=typed(positive("--clip")),
        default=1.0,
        help="the radius C of clipped embeddings (default 1)",
    )
    s.add_argument(
        "--sources",
        type=typed(comma_list(one_of("--sources", SOURCES))),
        default=list(SOURCES),
        help="which proposals: named, random, gradient (default all)",
    )
    s.add_argument("--json", action="store_true", help="print one JSON object")
    add_common_options(s)
    add_prng_option(s)


def run(args: argparse.Namespace) -> int:
    from mcdp.searching import search

    def log(message: str) -> None:
        if not args.json:
            print(message, file=sys.stderr)

    try:
        result = search(
            args.mechanism, args.epsilon, args.delta, args.dim, budget=args.budget,
            attack=args.attack, confirm=args.confirm, draws=args.draws,
            screen_draws=args.screen_draws, clip=args.clip, seed=args.seed,
            confidence=args.confidence, dtype=args.dtype, sources=args.sources,
            prng=args.prng, log=log,
        )  # fmt: skip
    except ValueError as err:
        fail(str(err))
    print(result.to_json() if args.json else result)
    return 0
