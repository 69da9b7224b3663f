"""The ``mcdp`` command line: ``mcdp audit`` and ``mcdp grid acl2022``.

Errors in the arguments print one line, ``mcdp: error: ...``, naming the argument,
and exit with status 2 before anything is computed or written.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from mcdp import _validate
from mcdp.attacks import ATTACKS
from mcdp.auditing import PAIRS
from mcdp.mechanisms import MECHANISMS, NAN_POLICIES
from mcdp.sampling import DTYPES, PRNG_IMPL, PRNG_IMPLS

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage block
        _fail(f"{self.prog}: {message}")


def _fail(message: str):
    print(f"mcdp: error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def _integer(name: str, low: int, high: int | None = None):
    """An integer (``1e3`` is accepted) in ``[low, high]``."""
    return lambda text: _validate.integer(name, text, low=low, high=high)


def _count(name: str):
    """A number of draws, pairs or restarts: ``1e8`` is accepted."""
    return _integer(name, 1, _validate.MAX_DRAWS)


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
        return [_integer(name, 1)(v) for v in text.split(",") if v.strip()]

    return parse


def _real(name: str):
    def parse(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"Expected {name} to be a number, got {text!r}.") from None

    return parse


def _positive(name: str):
    """A finite real number > 0."""
    return lambda text: _validate.positive(name, _real(name)(text))


def _delta_value(text: str) -> float:
    value = _real("--delta")(text)
    if not 0 <= value < 1:
        raise ValueError(f"Expected --delta in [0, 1), got {value!r}.")
    return value


def _dims(name: str):
    """``1,2,8``, ``1-256`` or a mix such as ``1-8,16,32``."""

    def parse(text: str) -> list[int]:
        dims: list[int] = []
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            low, _, high = part.partition("-")
            first = _integer(name, 1)(low)
            last = first
            if high:
                last = _integer(name, 1)(high)
            if last < first:
                raise ValueError(f"Expected {name} ranges low-high, got {part!r}.")
            dims.extend(range(first, last + 1))
        if not dims:
            raise ValueError(f"Expected {name} to name at least one dimension.")
        return sorted(set(dims))

    return parse


def _pair_arg(text: str):
    """A pair name, or a ``.npy`` file with a ``(2, d)`` array of finite numbers."""
    if not text.endswith(".npy"):
        return _validate.one_of("--pair", text, PAIRS)
    import numpy as np

    try:
        pair = np.load(text, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise ValueError(f"--pair {text}: cannot read a NumPy array ({err}).") from None
    if pair.ndim != 2 or pair.shape[0] != 2 or not np.all(np.isfinite(pair)):
        raise ValueError(
            f"--pair {text}: expected a finite (2, d) array, got {pair.shape}."
        )
    return pair.astype(np.float64)


def _pair_list(text: str) -> list[str]:
    from mcdp.experiments.trlaplace import E4_PAIRS

    return [
        _validate.one_of("--pairs", v.strip(), E4_PAIRS)
        for v in text.split(",")
        if v.strip()
    ]


def _dist_list(text: str) -> list[str]:
    names = [
        _validate.one_of("--dist", v.strip(), ("uniform", "normal"))
        for v in text.split(",")
        if v.strip()
    ]
    if not names:
        raise ValueError("Expected --dist uniform, normal or uniform,normal.")
    return list(dict.fromkeys(names))


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
        type=_typed(_integer("--seed", 0, _validate.MAX_SEED)),
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


def _prng_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prng",
        choices=PRNG_IMPLS,
        default=PRNG_IMPL,
        help=f"the stream of the seed: {PRNG_IMPL} (default) or splitmix64, faster "
        "and weaker (screen with it, confirm with the default)",
    )


def _distributed_options(p: argparse.ArgumentParser) -> None:
    """Options that join a ``jax.distributed`` run (see :mod:`mcdp.distributed`)."""
    d = p.add_argument_group(
        "several hosts",
        "run the same command on every host; the draws are shared out and only "
        "process 0 prints",
    )
    d.add_argument(
        "--coordinator", metavar="HOST:PORT", help="address of process 0's host"
    )
    d.add_argument(
        "--num-processes",
        type=_typed(_integer("--num-processes", 1, 1 << 16)),
        help="how many processes take part",
    )
    d.add_argument(
        "--process-id",
        type=_typed(_integer("--process-id", 0, (1 << 16) - 1)),
        help="this process, 0 .. N-1",
    )


def _join_distributed(args) -> None:
    """Joins the run if ``--coordinator`` was given; other processes stay silent."""
    given = [
        getattr(args, name, None) is not None
        for name in ("coordinator", "num_processes", "process_id")
    ]
    if not any(given):
        return
    if not all(given):
        _fail("--coordinator, --num-processes and --process-id go together.")
    from mcdp import distributed

    try:
        distributed.initialize(args.coordinator, args.num_processes, args.process_id)
    except ValueError as err:
        message = str(err)
        for name, flag in [
            ("coordinator_address", "--coordinator"),
            ("num_processes", "--num-processes"),
            ("process_id", "--process-id"),
        ]:
            message = message.replace(f"Expected {name} ", f"Expected {flag} ", 1)
        _fail(message)
    # the collectives' native libraries log to file descriptor 1: send that to
    # stderr and keep the real stdout for mcdp's own output (process 0 only)
    sys.stdout.flush()
    real_stdout = os.dup(1)
    os.dup2(2, 1)
    if distributed.is_main_process():
        sys.stdout = os.fdopen(real_stdout, "w")
    else:
        os.close(real_stdout)
        sys.stdout = open(os.devnull, "w")  # for the rest of the process


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
        type=_typed(_positive("--epsilon")),
    )
    a.add_argument(
        "--dim",
        required=True,
        type=_typed(_integer("--dim", 1, _validate.MAX_DIM)),
    )
    a.add_argument(
        "--draws",
        type=_typed(_count("--draws")),
        default=None,
        help="draws per dataset, e.g. 1e8; with --target-width: the first round "
        "(default 131072), rounded up to a multiple of 1024",
    )
    a.add_argument(
        "--target-width",
        metavar="W",
        type=_typed(_positive("--target-width")),
        default=None,
        help="run in rounds until the loss interval (upper - lower) is at most W "
        "wide or --max-draws is reached; prints the draws W needs before the run "
        "and after each round",
    )
    a.add_argument(
        "--max-draws",
        metavar="N",
        type=_typed(_count("--max-draws")),
        default=None,
        help="with --target-width: the budget, draws per dataset (default 1e10)",
    )
    a.add_argument(
        "--nan-policy",
        choices=NAN_POLICIES,
        default=None,
        help="dptext only (default zero)",
    )
    a.add_argument(
        "--delta",
        type=_typed(_delta_value),
        default=None,
        help="claimed delta: audit (epsilon, delta) with --pair and --attack",
    )
    a.add_argument(
        "--pair",
        type=_typed(_pair_arg),
        default=None,
        help="with --delta: axis (default), diagonal, zeros-ones, or a .npy file "
        "holding a (2, d) array",
    )
    a.add_argument(
        "--attack",
        choices=ATTACKS,
        default=None,
        help="with --delta (default lr where the density is known, else majority)",
    )
    a.add_argument(
        "--clip",
        type=_typed(_positive("--clip")),
        default=None,
        help="with --delta: clipping radius C of the pair and calibration (1)",
    )
    _common(a)
    _prng_option(a)
    _distributed_options(a)
    a.add_argument(
        "--json", action="store_true", help="print one JSON object on stdout"
    )

    v = sub.add_parser(
        "violations", help="EMNLP 2021 Fig. 1: pairs violating ADePT's 2C bound"
    )
    v.add_argument(
        "--dist",
        type=_typed(_dist_list),
        default=["uniform", "normal"],
        help="uniform, normal, or both comma-separated (default both)",
    )
    v.add_argument(
        "--dims", type=_typed(_dims("--dims")), default=list(range(1, 257)),
        help="list or range, e.g. 1,2,8 or 1-256 (default 1-256)",
    )  # fmt: skip
    v.add_argument(
        "--pairs",
        type=_typed(_count("--pairs")),
        default=10_000,
        help="pairs per n, e.g. 1e8 (default 1e4, as the reference)",
    )
    v.add_argument("--clip", choices=("l2", "l1"), default="l2")
    v.add_argument(
        "--C",
        dest="C",
        type=_typed(_positive("--C")),
        default=10.0,
        help="clipping radius (default 10, as the reference)",
    )
    v.add_argument(
        "--normal-scale",
        type=_typed(_positive("--normal-scale")),
        default=0.1,
        help="normal inputs: s = scale*C (default 0.1)",
    )
    v.add_argument(
        "--normal-reading",
        choices=("std", "variance"),
        default="std",
        help="scale*C is the std (the reference code) or the variance (the paper)",
    )
    _common(v)
    _prng_option(v)
    v.add_argument("--json", action="store_true", help="print one JSON object")

    s_ = sub.add_parser(
        "sensitivity", help="search the true L1 sensitivity of L2 or L1 clipping"
    )
    s_.add_argument(
        "--dims", type=_typed(_dims("--dims")), default=list(range(1, 65)),
        help="list or range (default 1-64)",
    )  # fmt: skip
    s_.add_argument("--clip", choices=("l2", "l1"), default="l2")
    s_.add_argument(
        "--C",
        dest="C",
        type=_typed(_positive("--C")),
        default=10.0,
    )
    s_.add_argument(
        "--restarts",
        type=_typed(_count("--restarts")),
        default=64,
        help="random restarts per n (default 64)",
    )
    s_.add_argument(
        "--seed",
        type=_typed(_integer("--seed", 0, _validate.MAX_SEED)),
        default=0,
    )
    s_.add_argument("--json", action="store_true", help="print one JSON object")

    g = sub.add_parser(
        "grid", help="a whole experiment grid into one resumable JSON file"
    )
    g.add_argument("experiment", choices=["acl2022", "trlaplace"])
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
    g.add_argument(
        "--dims", type=_typed(_int_list("--dims")), default=None, help="acl2022 only"
    )
    g.add_argument(
        "--pairs",
        type=_typed(_pair_list),
        default=None,
        help="trlaplace only: axis, diagonal (default both)",
    )
    _common(g)
    _prng_option(g)

    f = sub.add_parser(
        "figures", help="compute what is missing and draw every figure into figures/"
    )
    f.add_argument(
        "--only",
        type=_typed(_figure_list),
        default=None,
        help="comma-separated figure names (default: all)",
    )
    f.add_argument("--out", default="figures", help="folder of the figures (figures)")
    f.add_argument(
        "--cache", default="results", help="folder of resumable results (results)"
    )
    f.add_argument(
        "--draws",
        type=_typed(_count("--draws")),
        default=1_000_000,
        help="draws per dataset of the ACL 2022 grid (1e6; the paper used 1e7)",
    )
    f.add_argument(
        "--pairs",
        type=_typed(_count("--pairs")),
        default=100_000,
        help="pairs per n of the EMNLP 2021 experiment (1e5; the paper used 1e4)",
    )
    f.add_argument(
        "--e4-draws",
        type=_typed(_count("--e4-draws")),
        default=100_000,
        help="draws per input and cell of the TrLaplace audit (1e5)",
    )
    _common(f)
    return parser


def _figure_list(text: str) -> list[str]:
    from mcdp.figures import FIGURES

    return [
        _validate.one_of("figure", v.strip(), FIGURES)
        for v in text.split(",")
        if v.strip()
    ]


def _audit(args) -> int:
    from mcdp._progress import progress_bar as _progress_bar
    from mcdp.auditing import audit_iter, validate_audit

    if args.delta is not None:
        if args.target_width is not None or args.max_draws is not None:
            _fail("--target-width and --max-draws apply to the sanity check, not to "
                  "--delta audits.")  # fmt: skip
        _require_draws(args)
        return _audit_delta(args)
    for flag in ("pair", "attack", "clip"):
        if getattr(args, flag) is not None:
            _fail(f"--{flag} applies to (epsilon, delta) audits: add --delta CLAIMED.")
    if args.target_width is not None:
        return _audit_to_width(args)
    if args.max_draws is not None:
        _fail("--max-draws applies with --target-width W.")
    _require_draws(args)

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
            prng=args.prng,
        )
    except ValueError as err:
        _fail(str(err))
    with _progress_bar(True, total=args.draws, desc=args.mechanism) as bar:
        return _follow(runs, lambda r: bar.update(r.draws - bar.n), args.json)


def _follow(runs, show, as_json: bool) -> int:
    """Show each partial result of ``runs``, then print the last one.

    Bad input found at the first step exits with its message; an interrupt
    keeps (and prints) the last result counted, with exit status 130.
    """
    try:
        result = next(runs)
    except ValueError as err:
        _fail(str(err))
    except KeyboardInterrupt:
        print("mcdp: interrupted before any draws were counted", file=sys.stderr)
        return EXIT_INTERRUPTED
    status = 0
    show(result)
    try:
        for result in runs:
            show(result)
    except KeyboardInterrupt:
        status = EXIT_INTERRUPTED
    print(result.to_json() if as_json else result)
    return status


def _require_draws(args) -> None:
    if args.draws is None:
        _fail(
            "mcdp audit: the following arguments are required: --draws "
            "(or --target-width W)"
        )


def _audit_to_width(args) -> int:
    """``mcdp audit --target-width W``: rounds, each printed, then the outcome."""
    from mcdp._progress import progress_bar as _progress_bar
    from mcdp.auditing import (
        FIRST_DRAWS,
        MAX_DRAWS,
        audit_to_width_iter,
        draws_for_target,
        validate_audit,
    )

    max_draws = MAX_DRAWS if args.max_draws is None else args.max_draws
    first = FIRST_DRAWS if args.draws is None else args.draws
    if first > max_draws:
        _fail(
            f"Expected --draws (the first round) <= --max-draws = {max_draws:,}, "
            f"got {first:,}."
        )
    try:  # everything is checked before the first draw
        validate_audit(
            args.epsilon, args.dim, first, args.seed, args.confidence, args.dtype
        )
        needed = draws_for_target(
            args.mechanism,
            args.epsilon,
            args.dim,
            args.target_width,
            confidence=args.confidence,
            nan_policy=args.nan_policy,
        )
        runs = audit_to_width_iter(
            args.mechanism,
            args.epsilon,
            args.dim,
            args.target_width,
            max_draws=max_draws,
            first_draws=first,
            seed=args.seed,
            confidence=args.confidence,
            dtype=args.dtype,
            nan_policy=args.nan_policy,
            prng=args.prng,
        )
    except ValueError as err:
        _fail(str(err))
    # the plan and the rounds go beside the table, or to stderr beside the JSON
    # (from process 0 only: the stdout of the others is already silenced)
    log = sys.stdout
    if args.json:
        from mcdp.distributed import is_main_process

        log = sys.stderr if is_main_process() else sys.stdout
    target = f"a {args.confidence:.0%} loss interval at most {args.target_width:g} wide"
    print(f"target: {target}, within {max_draws:,} draws per dataset", file=log)
    print(f"before the run: {_plan(needed, max_draws)}", file=log)
    with _progress_bar(True, total=None, desc=args.mechanism) as bar:

        def show(step) -> None:  # the bar runs to the end of the round under way
            bar.total = step.round_draws
            bar.update(step.audit.draws - bar.n)
            if step.audit.draws == step.round_draws:
                bar.write(step.round_line(), file=log)

        return _follow(runs, show, args.json)


def _plan(needed: int | float | None, max_draws: int) -> str:
    """What the exact probabilities say about the draws a target width needs."""
    from mcdp.statistics import SEARCH_LIMIT

    if needed is None:
        return (
            "no exact probabilities for this mechanism; the rounds predict from "
            "the counts"
        )
    if not math.isfinite(needed):
        return (
            f"no number of draws up to {SEARCH_LIMIT:.3g} per dataset reaches it "
            "from the exact probabilities"
        )
    beyond = "; more than --max-draws allows" if needed > max_draws else ""
    return f"the exact probabilities need about {needed:,} draws per dataset{beyond}"


def _audit_delta(args) -> int:
    from mcdp.auditing import audit_delta
    from mcdp.mechanisms import get_mechanism

    if args.nan_policy is not None:
        _fail("--nan-policy applies to the sanity check, not to --delta audits.")
    try:
        mech = get_mechanism(args.mechanism)
        attack = args.attack or ("lr" if mech.privacy_loss is not None else "majority")
        result = audit_delta(
            mech,
            args.epsilon,
            args.delta,
            args.dim,
            args.draws,
            pair="axis" if args.pair is None else args.pair,
            attack=attack,
            clip=1.0 if args.clip is None else args.clip,
            seed=args.seed,
            confidence=args.confidence,
            dtype=args.dtype,
            prng=args.prng,
        )
    except ValueError as err:
        _fail(str(err))
    print(json.dumps(result.to_dict(), allow_nan=True) if args.json else result)
    return EXIT_INTERRUPTED if result.interrupted else 0


def _violations(args) -> int:
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
                        print(record)
    except ValueError as err:
        _fail(str(err))
    if args.json:
        print(json.dumps({"experiment": "emnlp2021-violations", "records": records}))
    return 0


def _sensitivity(args) -> int:
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
        _fail(str(err))
    rows = [r.to_dict() | {"seed": args.seed} for r in records]
    if args.json:
        print(json.dumps({"experiment": "sensitivity", "records": rows}))
        return 0
    print(
        f"{'n':>5} {'max L1 found':>14} {'claimed 2C':>11} {'theorem':>10} {'ratio':>9}"
    )
    for r in rows:
        print(
            f"{r['dim']:>5} {r['max_l1']:>14.6f} {r['claimed']:>11.4g} "
            f"{r['theorem']:>10.6g} {r['ratio']:>9.6f}"
        )
    return 0


def _grid(args) -> int:
    from mcdp.experiments import GridSpec, run_grid

    if args.experiment == "trlaplace":
        return _grid_trlaplace(args)
    if args.pairs is not None:
        _fail("--pairs applies to the trlaplace grid.")

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
        spec.load(Path(args.out))  # refuse a foreign file before any work
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


def _grid_trlaplace(args) -> int:
    from mcdp.experiments import E4Spec
    from mcdp.experiments import run_grid as run_e4

    if args.dims is not None:
        _fail("--dims applies to the acl2022 grid; trlaplace uses the paper's d.")
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
        spec.load(Path(args.out))
    except ValueError as err:
        _fail(str(err))

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


def _figures(args) -> int:
    from mcdp.figures import FigureSettings, make_figures

    settings = FigureSettings(
        out_dir=Path(args.out),
        cache_dir=Path(args.cache),
        draws=args.draws,
        pairs=args.pairs,
        e4_draws=args.e4_draws,
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
        _fail(str(err))
    except KeyboardInterrupt:
        print(f"interrupted; finished results are in {args.cache}/", file=sys.stderr)
        return EXIT_INTERRUPTED
    for path in paths:
        print(path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _join_distributed(args)
    handler = {
        "audit": _audit,
        "grid": _grid,
        "figures": _figures,
        "violations": _violations,
        "sensitivity": _sensitivity,
    }[args.command]
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
