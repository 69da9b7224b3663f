"""The ``mcdp`` command line: ``mcdp audit`` and ``mcdp grid acl2022``.

Errors in the arguments print one line, ``mcdp: error: ...``, naming the argument,
and exit with status 2 before anything is computed or written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mcdp import _validate
from mcdp.mechanisms import MECHANISMS, NAN_POLICIES
from mcdp.sampling import DTYPES

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage block
        _fail(f"{self.prog}: {message}")


def _fail(message: str):
    print(f"mcdp: error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def _count(name: str):
    def parse(text: str) -> int:
        value = _validate.parse_count(name, text)
        return _validate.integer(name, value, low=1, high=_validate.MAX_DRAWS)

    return parse


def _float_list(name: str):
    def parse(text: str) -> list[float]:
        try:
            values = [float(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected numbers separated by commas, got {text!r}"
            ) from None
        return [_validate.positive(name, v) for v in values]

    return parse


def _int_list(name: str):
    def parse(text: str) -> list[int]:
        return [
            _validate.integer(name, _validate.parse_count(name, v), low=1)
            for v in text.split(",")
            if v.strip()
        ]

    return parse


def _real(name: str):
    def parse(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"Expected {name} to be a number, got {text!r}.") from None

    return parse


def _name_list(text: str) -> list[str]:
    return [
        _validate.one_of("mechanism", v.strip(), MECHANISMS)
        for v in text.split(",")
        if v.strip()
    ]


def _typed(parse):
    """Turns our ValueError into argparse's error so the message names the option."""

    def wrapped(text):
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    wrapped.__name__ = getattr(parse, "__name__", "value")
    return wrapped


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--seed",
        type=_typed(
            lambda t: _validate.integer(
                "--seed",
                _validate.parse_count("--seed", t),
                low=0,
                high=_validate.MAX_SEED,
            )
        ),
        default=0,
        help="integer seed (default 0)",
    )
    p.add_argument(
        "--confidence",
        type=_typed(
            lambda t: _validate.open_unit("--confidence", _real("--confidence")(t))
        ),
        default=0.95,
        help="joint confidence of the intervals (default 0.95)",
    )
    p.add_argument(
        "--dtype",
        choices=DTYPES,
        default="float64",
        help="float64 (default) or float32",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mcdp",
        description="Monte-Carlo privacy-loss estimation with confidence bounds.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    a = sub.add_parser(
        "audit", help="the ACL 2022 sanity check for one mechanism, epsilon and d"
    )
    a.add_argument("--mechanism", required=True, choices=sorted(MECHANISMS))
    a.add_argument(
        "--epsilon",
        required=True,
        type=_typed(lambda t: _validate.positive("--epsilon", _real("--epsilon")(t))),
    )
    a.add_argument(
        "--dim",
        required=True,
        type=_typed(
            lambda t: _validate.integer(
                "--dim",
                _validate.parse_count("--dim", t),
                low=1,
                high=_validate.MAX_DIM,
            )
        ),
    )
    a.add_argument(
        "--draws",
        required=True,
        type=_typed(_count("--draws")),
        help="draws per dataset, e.g. 1e8",
    )
    a.add_argument(
        "--nan-policy",
        choices=NAN_POLICIES,
        default=None,
        help="dptext only (default zero)",
    )
    _common(a)
    a.add_argument(
        "--json", action="store_true", help="print one JSON object on stdout"
    )

    g = sub.add_parser(
        "grid", help="a whole experiment grid into one resumable JSON file"
    )
    g.add_argument("experiment", choices=["acl2022"])
    g.add_argument(
        "--draws",
        required=True,
        type=_typed(_count("--draws")),
        help="draws per dataset and cell",
    )
    g.add_argument(
        "--out",
        required=True,
        help="JSON file; an existing one of the same grid is resumed",
    )
    g.add_argument(
        "--mechanisms",
        type=_typed(_name_list),
        default=None,
        help="comma-separated subset",
    )
    g.add_argument("--epsilons", type=_typed(_float_list("--epsilons")), default=None)
    g.add_argument("--dims", type=_typed(_int_list("--dims")), default=None)
    _common(g)
    return parser


def _audit(args) -> int:
    from mcdp.experiments import _progress_bar, audit_iter, validate_audit

    try:  # everything is checked before the first draw
        validate_audit(
            args.epsilon, args.dim, args.draws, args.seed, args.confidence, args.dtype
        )
        runs = audit_iter(
            args.mechanism,
            args.epsilon,
            args.dim,
            args.draws,
            seed=args.seed,
            confidence=args.confidence,
            dtype=args.dtype,
            nan_policy=args.nan_policy,
        )
        result = next(runs)
    except ValueError as err:
        _fail(str(err))
    except KeyboardInterrupt:
        print("mcdp: interrupted before any draws were counted", file=sys.stderr)
        return EXIT_INTERRUPTED
    status = 0
    with _progress_bar(True, total=args.draws, desc=args.mechanism) as bar:
        bar.update(result.draws)
        try:
            for result in runs:
                bar.update(result.draws - bar.n)
        except KeyboardInterrupt:
            status = EXIT_INTERRUPTED
    print(result.to_json() if args.json else result)
    return status


def _grid(args) -> int:
    from mcdp.experiments import GridSpec, load_grid, run_grid

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
        **narrowed,
    )
    try:
        spec = spec.validated()
        load_grid(Path(args.out), spec)  # refuse a foreign file before any work
    except ValueError as err:
        _fail(str(err))

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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = {"audit": _audit, "grid": _grid}[args.command]
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
