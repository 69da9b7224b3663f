"""``mcdp violations``: the EMNLP 2021 Fig. 1 experiment, pairs of clipped inputs
that violate ADePT's claimed L1 sensitivity 2C, per input dimension n.
"""

from __future__ import annotations

import argparse
import json

from mcdp.cli._common import fail
from mcdp.cli._options import (
    add_common_options,
    add_prng_option,
    comma_list,
    count,
    dims,
    one_of,
    positive,
    typed,
)
from mcdp.cli._text import render


def add_parser(subparsers) -> None:
    v = subparsers.add_parser(
        "violations", help="EMNLP 2021 Fig. 1: pairs violating ADePT's 2C bound"
    )
    v.set_defaults(handler=run)
    v.add_argument(
        "--dist",
        type=typed(
            comma_list(
                one_of("--dist", ("uniform", "normal")),
                unique=True,
                empty="Expected --dist uniform, normal or uniform,normal.",
            )
        ),
        default=["uniform", "normal"],
        help="uniform, normal, or both comma-separated (default both)",
    )
    v.add_argument(
        "--dims",
        type=typed(dims("--dims")),
        default=list(range(1, 257)),
        help="list or range, e.g. 1,2,8 or 1-256 (default 1-256)",
    )
    v.add_argument(
        "--pairs",
        type=typed(count("--pairs")),
        default=10_000,
        help="pairs per n, e.g. 1e8 (default 1e4, as the reference)",
    )
    v.add_argument("--clip", choices=("l2", "l1"), default="l2")
    v.add_argument(
        "--C",
        dest="C",
        type=typed(positive("--C")),
        default=10.0,
        help="clipping radius (default 10, as the reference)",
    )
    v.add_argument(
        "--normal-scale",
        type=typed(positive("--normal-scale")),
        default=0.1,
        help="normal inputs: s = scale*C (default 0.1)",
    )
    v.add_argument(
        "--normal-reading",
        choices=("std", "variance"),
        default="std",
        help="scale*C is the std (the reference code) or the variance (the paper)",
    )
    add_common_options(v)
    add_prng_option(v)
    v.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from mcdp.sampling import key
    from mcdp.violations import iter_violations

    records = []
    try:
        for dist in args.dist:
            runs = iter_violations(
                key(args.seed, args.prng),
                dist,
                args.dims,
                args.pairs,
                clip=args.clip,
                C=args.C,
                normal_scale=args.normal_scale,
                normal_reading=args.normal_reading,
                confidence=args.confidence,
                dtype=args.dtype,
            )
            for record in runs:
                if record.complete:
                    records.append(record.to_dict() | {"seed": args.seed})
                    if not args.json:
                        print(render(record))
    except ValueError as err:
        fail(str(err))
    if args.json:
        print(json.dumps({"experiment": "emnlp2021-violations", "records": records}))
    return 0
