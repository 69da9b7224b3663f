"""``mcdp search``: search a mechanism's input domain for the neighbouring pair with
the strongest bound; the best candidates are confirmed on fresh draws
(:func:`mcdp.search`).
"""

from __future__ import annotations

import argparse
import sys

from mcdp.cli._common import fail, interrupted
from mcdp.cli._options import (
    add_common_options,
    add_prng_option,
    comma_list,
    count,
    delta_value,
    dimension,
    domain_value,
    integer,
    one_of,
    positive,
    typed,
)
from mcdp.cli._text import render
from mcdp.cli.audit import (
    BLACK_BOX_OPTIONS,
    add_black_box_options,
    check_workers,
    connect,
    load_callable,
)
from mcdp.core.datasets import DEFAULT_MAX_SIZE, MAX_RECORDS, DatasetDomain
from mcdp.core.domains import RELATIONS
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
    subject = s.add_mutually_exclusive_group(required=True)
    subject.add_argument(
        "--mechanism",
        type=typed(
            one_of("--mechanism", [n for n, m in MECHANISMS.items() if m.domain])
        ),
        help="a mechanism that declares an input domain",
    )
    subject.add_argument(
        "--callable",
        metavar="MODULE:NAME",
        help="search for Python code as shipped: NAME in MODULE is fn(rng, x, n) "
        "(with --domain and --dim) or a Mechanism.from_callable with a domain",
    )
    s.add_argument(
        "--domain",
        type=typed(domain_value),
        default=None,
        metavar="RELATION[:SIZE[:LOW:HIGH]]",
        help="with --callable fn: its inputs' domain, e.g. every-entry:1:0:10 "
        f"(relations: {', '.join(RELATIONS)}; SIZE default 1, l2-ball: --clip); "
        "for fn(rng, data, n) on datasets of --dim columns: add-remove[:LOW:HIGH] "
        "or replace-one[:LOW:HIGH] (the bounds fn is told its records lie in)",
    )
    s.add_argument(
        "--max-size",
        type=typed(integer("--max-size", 1, MAX_RECORDS)),
        default=None,
        help=f"with a dataset --domain: the largest dataset proposed (default "
        f"{DEFAULT_MAX_SIZE})",
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
        default="auto",
        help="the attack of every confirmation (default auto: the portfolio of "
        "every attack that applies, the best on fresh draws counted)",
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
    add_black_box_options(s)
    add_common_options(s)
    add_prng_option(s)


def run(args: argparse.Namespace) -> int:
    from mcdp.searching import search

    def log(message: str) -> None:
        if not args.json:
            print(message, file=sys.stderr)

    mechanism = args.mechanism
    if args.callable is None:
        for flag in (*BLACK_BOX_OPTIONS, "domain", "max_size"):
            if getattr(args, flag) not in (None, False):
                fail(f"--{flag.replace('_', '-')} applies to --callable.")
    else:
        check_workers(args)
        if isinstance(args.domain, DatasetDomain):  # records of --dim columns
            d = args.domain
            try:
                args.domain = DatasetDomain.of(
                    d.relation, args.dim or 1, d.low[0], d.high[0],
                    max_size=args.max_size or DEFAULT_MAX_SIZE,
                )  # fmt: skip
            except ValueError as err:
                fail(str(err))
            args.dim = args.domain.width
        elif args.max_size is not None:
            fail("--max-size applies to a dataset --domain (add-remove, replace-one).")
        if args.dim is None:
            fail("--callable needs --dim.")
        try:
            mechanism = load_callable(args, domain=args.domain)
        except ValueError as err:
            fail(str(err))
        if mechanism.domain is None:
            fail(f"--callable {args.callable} needs --domain: it declares none.")
        if args.domain is not None and mechanism.domain != args.domain:
            fail(f"--domain applies to a plain function; {args.callable} has one.")
    try:
        connect(args.scheduler)
        result = search(
            mechanism, args.epsilon, args.delta, args.dim, budget=args.budget,
            attack=args.attack, confirm=args.confirm, draws=args.draws,
            screen_draws=args.screen_draws, clip=args.clip, seed=args.seed,
            confidence=args.confidence, dtype=args.dtype, sources=args.sources,
            prng=args.prng, log=log, scheduler=args.scheduler,
        )  # fmt: skip
    except ValueError as err:
        fail(str(err))
    except KeyboardInterrupt:
        return interrupted("a search keeps no partial result")
    print(result.to_json() if args.json else render(result))
    return 0
