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
from mcdp.core.domains import RELATIONS, InputDomain
from mcdp.mechanisms import MECHANISMS
from mcdp.searching import BUDGET, CONFIRM, DRAWS, MAX_BUDGET, SCREEN_DRAWS, SOURCES


def domain_value(text: str) -> InputDomain:
    """``RELATION[:SIZE[:LOW:HIGH]]`` as an :class:`~mcdp.domains.InputDomain`."""
    parts = text.split(":")
    if parts[0] not in RELATIONS or len(parts) not in (1, 2, 4):
        raise ValueError(
            f"Expected --domain RELATION[:SIZE[:LOW:HIGH]] with RELATION one of "
            f"{', '.join(RELATIONS)}, got {text!r}."
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
        f"(relations: {', '.join(RELATIONS)}; SIZE default 1, l2-ball: --clip)",
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
        for flag in (*BLACK_BOX_OPTIONS, "domain"):
            if getattr(args, flag) not in (None, False):
                fail(f"--{flag.replace('_', '-')} applies to --callable.")
    else:
        check_workers(args)
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
