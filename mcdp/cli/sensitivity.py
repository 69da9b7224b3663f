"""``mcdp sensitivity``: a search for the true L1 sensitivity of L2 or L1 clipping
(the largest L1 distance between two clipped vectors), per input dimension n.
"""

from __future__ import annotations

import argparse
import json

from mcdp.cli._common import fail
from mcdp.cli._options import count, dims, positive, seed, typed
from mcdp.cli._text import render


def add_parser(subparsers) -> None:
    s = subparsers.add_parser(
        "sensitivity", help="search the true L1 sensitivity of L2 or L1 clipping"
    )
    s.set_defaults(handler=run)
    s.add_argument(
        "--dims",
        type=typed(dims("--dims")),
        default=list(range(1, 65)),
        help="list or range (default 1-64)",
    )
    s.add_argument("--clip", choices=("l2", "l1"), default="l2")
    s.add_argument("--C", dest="C", type=typed(positive("--C")), default=10.0)
    s.add_argument(
        "--restarts",
        type=typed(count("--restarts")),
        default=64,
        help="random restarts per n (default 64)",
    )
    s.add_argument("--seed", type=typed(seed("--seed")), default=0)
    s.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from mcdp.sampling import key
    from mcdp.sensitivity import sensitivity_records

    try:
        records = sensitivity_records(
            key(args.seed),
            args.dims,
            clip=args.clip,
            C=args.C,
            restarts=args.restarts,
        )
    except ValueError as err:
        fail(str(err))
    rows = [r.to_dict() | {"seed": args.seed} for r in records]
    if args.json:
        print(json.dumps({"experiment": "sensitivity", "records": rows}))
        return 0
    print(
        f"{'n':>5} {'max L1 found':>14} {'claimed 2C':>11} {'theorem':>10} {'ratio':>9}"
    )
    for record in records:
        print(render(record))
    return 0
