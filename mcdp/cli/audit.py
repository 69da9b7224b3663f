"""``mcdp audit``: the ACL 2022 sanity check of one mechanism, epsilon and d; with
``--target-width W``, the same in rounds until the loss interval is narrow enough;
with ``--delta``, an (epsilon, delta) audit of a pair of inputs with an attack.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from mcdp._progress import progress_bar
from mcdp.attacks import ATTACKS
from mcdp.cli._common import fail, follow
from mcdp.cli._options import (
    add_common_options,
    add_host_options,
    add_prng_option,
    count,
    delta_value,
    dimension,
    integer,
    pair_arg,
    positive,
    typed,
)
from mcdp.cli._text import round_line
from mcdp.mechanisms import MECHANISMS, NAN_POLICIES
from mcdp.running import draws_for_target, run_iter
from mcdp.spec import FIRST_DRAWS, MAX_DRAWS, AuditSpec, Draws, TargetWidth

LEARNED_OPTIONS = ("train_draws", "select_draws", "model", "max_events")
AUTO_OPTIONS = ("train_draws", "select_draws", "max_events")  # the portfolio's too
BLACK_BOX_OPTIONS = (
    "claim", "library", "workers", "threads", "non_reproducible", "scheduler",
)  # fmt: skip


def add_parser(subparsers) -> None:
    a = subparsers.add_parser(
        "audit", help="the ACL 2022 sanity check for one mechanism, epsilon and d"
    )
    a.set_defaults(handler=run)
    subject = a.add_mutually_exclusive_group(required=True)
    subject.add_argument("--mechanism", choices=sorted(MECHANISMS))
    subject.add_argument(
        "--callable",
        metavar="MODULE:NAME",
        help="audit Python code as shipped: NAME in MODULE is fn(rng, x, n) (n "
        "outputs for the input row x) or a Mechanism.from_callable; implies an "
        "(epsilon, delta) audit (delta 0 unless --delta)",
    )
    a.add_argument("--epsilon", required=True, type=typed(positive("--epsilon")))
    a.add_argument(
        "--dim",
        type=typed(dimension("--dim")),
        default=None,
        help="d (required, except with --callable and a .npy --pair, which fixes it)",
    )
    a.add_argument(
        "--draws",
        type=typed(count("--draws")),
        default=None,
        help="draws per dataset, e.g. 1e8; with --target-width: the first round "
        "(default 131072), rounded up to a multiple of 1024",
    )
    a.add_argument(
        "--target-width",
        metavar="W",
        type=typed(positive("--target-width")),
        default=None,
        help="run in rounds until the loss interval (upper - lower) is at most W "
        "wide or --max-draws is reached; prints the draws W needs before the run "
        "and after each round",
    )
    a.add_argument(
        "--max-draws",
        metavar="N",
        type=typed(count("--max-draws")),
        default=None,
        help="with --target-width: the budget, draws per dataset (default 1e10)",
    )
    a.add_argument(
        "--resume",
        metavar="FILE",
        default=None,
        help="keep the counts in FILE as the run goes (and on Ctrl-C or a lost "
        "cluster); a rerun of the same command goes on from them",
    )
    a.add_argument(
        "--nan-policy",
        choices=NAN_POLICIES,
        default=None,
        help="dptext only (default zero)",
    )
    a.add_argument(
        "--delta",
        type=typed(delta_value),
        default=None,
        help="claimed delta: audit (epsilon, delta) with --pair and --attack; "
        "--pair or --attack without --delta audits pure epsilon (delta 0)",
    )
    a.add_argument(
        "--pair",
        type=typed(pair_arg),
        default=None,
        help="axis (default), diagonal, zeros-ones, a StatDP pattern (one-above, "
        "..., x-shuffle, each also -swapped; mcdp.pairs), scalar-0-1, scalar-1-2, "
        "or a .npy file holding a (2, d) array",
    )
    a.add_argument(
        "--datasets",
        metavar="FILE.npz",
        default=None,
        help="with --callable fn(rng, data, n): audit it on two neighbouring "
        "datasets, the arrays d and d_prime of FILE.npz (records of --dim "
        "columns, default 1)",
    )
    a.add_argument(
        "--domain",
        default=None,
        metavar="RELATION[:LOW:HIGH]",
        help="with --datasets: the relation they must be neighbours under, "
        "add-remove or replace-one (and the bounds fn is told its records lie in)",
    )
    a.add_argument(
        "--attack",
        choices=sorted(ATTACKS),
        default=None,
        help="auto (default with --pair, --delta or --callable): the portfolio "
        "of every attack that applies, the best on fresh draws counted; "
        "learned: a scorer trained on one sample, events chosen on a second; "
        "majority: the sanity check's (its default)",
    )
    a.add_argument(
        "--clip",
        type=typed(positive("--clip")),
        default=None,
        help="clipping radius C of the pair and calibration (1)",
    )
    learned = a.add_argument_group(
        "the learned attack and the portfolio",
        "with --attack learned or auto (each sample is fresh: the "
        "bounds come from --draws alone; --model is the learned attack's)",
    )
    learned.add_argument(
        "--train-draws",
        type=typed(count("--train-draws")),
        default=None,
        help="draws per input that train the scorer (default: --draws / 10, "
        "within 1e5 to 1e6)",
    )
    learned.add_argument(
        "--select-draws",
        type=typed(count("--select-draws")),
        default=None,
        help="draws per input that choose its events (default: --draws / 10, "
        "within 1e5 to 2^24)",
    )
    learned.add_argument(
        "--model",
        choices=("logistic", "mlp"),
        default=None,
        help="logistic regression (default) or a one-hidden-layer MLP",
    )
    learned.add_argument(
        "--max-events",
        type=typed(integer("--max-events", 1, 64)),
        default=None,
        help="thresholds carried into the counted draws (default 3)",
    )
    add_black_box_options(a)
    add_common_options(a)
    add_prng_option(a)
    add_host_options(a)
    a.add_argument(
        "--json", action="store_true", help="print one JSON object on stdout"
    )


def add_black_box_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``--callable NAME`` where NAME is a plain function."""
    box = parser.add_argument_group(
        "black boxes", "with --callable NAME where NAME is a plain function"
    )
    box.add_argument(
        "--claim", default=None, help="the claim to record, e.g. epsilon-DP"
    )
    box.add_argument(
        "--library",
        default=None,
        help="the library under audit (its installed version is recorded), or "
        "name==version",
    )
    box.add_argument(
        "--workers",
        type=typed(integer("--workers", 1, 256)),
        default=None,
        help="processes that call the function (default 1)",
    )
    box.add_argument(
        "--threads",
        action="store_true",
        help="the workers are threads of this process, not processes: for a "
        "function that releases the GIL while it draws, as NumPy does",
    )
    box.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="call the function on a Dask cluster: a scheduler's address "
        "(tcp://host:8786), or local:N for N worker processes on this machine "
        "(needs mcdp[cluster]); the counts are those of a run without it",
    )
    box.add_argument(
        "--non-reproducible",
        action="store_true",
        help="the function draws from its own randomness, not from rng: the "
        "record says reproducible: false",
    )


def run(args: argparse.Namespace) -> int:
    for flag in LEARNED_OPTIONS:
        if getattr(args, flag) is None or args.attack == "learned":
            continue
        if flag in AUTO_OPTIONS and args.attack in ("auto", None):
            continue
        if not (flag == "train_draws" and args.attack == "float-support"):
            fail(f"--{flag.replace('_', '-')} applies to --attack learned.")
    if args.callable is None:
        for flag in BLACK_BOX_OPTIONS:
            if getattr(args, flag) not in (None, False):
                fail(f"--{flag.replace('_', '-')} applies to --callable.")
    elif args.target_width is not None or args.max_draws is not None:
        fail("--target-width and --max-draws apply to registered mechanisms.")
    check_workers(args)
    if args.datasets is not None or args.domain is not None:
        return _audit_datasets(args)
    if isinstance(args.pair, np.ndarray):  # a .npy file says d
        width = args.pair.shape[1]
        if args.dim is not None and args.dim != width:
            fail(f"Expected --dim = {width} (the width of --pair), got {args.dim}.")
        args.dim = width
    if args.dim is None:
        if args.callable is not None:
            fail("--callable needs --dim, or a .npy --pair that fixes it.")
        fail("mcdp audit: the following arguments are required: --dim")
    if args.callable is not None and args.delta is None:
        args.delta = 0.0  # a black box's audit is an (epsilon, delta) audit
    if args.delta is None and any(
        getattr(args, flag) is not None for flag in ("pair", "attack", "clip")
    ):
        args.delta = 0.0  # a pure-epsilon audit of the pair
    if args.delta is not None:
        if args.target_width is not None or args.max_draws is not None:
            fail(
                "--target-width and --max-draws apply to the sanity check, not to "
                "--delta audits."
            )
        if args.nan_policy is not None:
            fail("--nan-policy applies to the sanity check, not to --delta audits.")
    if args.resume is not None and args.target_width is not None:
        fail("--resume keeps runs of --draws, not of --target-width.")
    elif args.max_draws is not None and args.target_width is None:
        fail("--max-draws applies with --target-width W.")
    if args.draws is None and args.target_width is None:
        fail(
            "mcdp audit: the following arguments are required: --draws "
            "(or --target-width W)"
        )
    try:  # everything is checked before the first draw
        spec = build_spec(args)
        connect(args.scheduler)
        if args.target_width is not None:
            return _audit_to_width(args, spec)
        runs = run_iter(spec, Draws(args.draws), resume=args.resume)
    except ValueError as err:
        fail(str(err))
    return _follow(args, spec, runs)


def _follow(args: argparse.Namespace, spec: AuditSpec, runs) -> int:
    """Prints the run's final record, a progress bar meanwhile."""
    name = spec.plan.mechanism.name
    with progress_bar(True, total=args.draws, desc=name) as bar:
        show = lambda r: bar.update(r.draws - bar.n)  # noqa: E731
        return follow(runs, show, args.json, args.resume)


def _audit_datasets(args: argparse.Namespace) -> int:
    """``--callable fn --datasets FILE.npz [--domain RELATION]``: an (epsilon,
    delta) audit of fn on the two datasets."""
    from mcdp.cli._options import domain_value
    from mcdp.core.datasets import DatasetDomain, load_datasets

    if args.callable is None:
        fail("--datasets and --domain apply to --callable fn(rng, data, n).")
    if args.datasets is None:
        fail("--domain applies with --datasets FILE.npz (the two datasets).")
    for flag in ("pair", "clip", "target_width", "max_draws", "nan_policy"):
        if getattr(args, flag) is not None:
            fail(f"--{flag.replace('_', '-')} does not apply to --datasets.")
    if args.draws is None:
        fail("mcdp audit: the following arguments are required: --draws")
    try:
        pair = load_datasets(args.datasets, args.dim)
        domain = None
        if args.domain is not None:
            d = domain_value(args.domain)
            if not isinstance(d, DatasetDomain):
                fail(
                    f"Expected --domain add-remove or replace-one with --datasets, "
                    f"got {args.domain!r}."
                )
            domain = DatasetDomain.of(d.relation, pair.width, d.low[0], d.high[0])
        args.pair, args.delta = pair, 0.0 if args.delta is None else args.delta
        args.dim = pair.width
        mechanism = load_callable(args, domain=domain)
        spec = build_spec(args, mechanism)
        connect(args.scheduler)
        runs = run_iter(spec, Draws(args.draws), resume=args.resume)
    except ValueError as err:
        fail(str(err))
    return _follow(args, spec, runs)


def build_spec(args: argparse.Namespace, mechanism=None) -> AuditSpec:
    """The :class:`~mcdp.spec.AuditSpec` that the options of ``mcdp audit`` say."""
    from mcdp.attacks import auto_attack, float_support_attack, learned_attack

    attack = args.attack
    given = {f: getattr(args, f) for f in AUTO_OPTIONS if getattr(args, f) is not None}
    if attack in ("auto", None) and given:
        if args.delta is None:
            fail(
                f"--{next(iter(given)).replace('_', '-')} applies to the "
                "(epsilon, delta) audit's attacks, not to the sanity check."
            )
        attack = auto_attack(**given)
    elif attack == "learned":
        options = {
            flag: getattr(args, flag)
            for flag in LEARNED_OPTIONS
            if getattr(args, flag) is not None
        }
        attack = learned_attack(**options)
    elif attack == "float-support" and args.train_draws is not None:
        attack = float_support_attack(train_draws=args.train_draws)
    if mechanism is not None:
        pass
    elif args.callable is not None:
        mechanism = load_callable(args)
    else:
        mechanism = args.mechanism
    return AuditSpec(
        mechanism,
        args.epsilon,
        delta=args.delta,
        dim=args.dim,
        pair=args.pair,
        attack=attack,
        clip=args.clip,
        confidence=args.confidence,
        dtype=args.dtype,
        prng=args.prng,
        seed=args.seed,
        nan_policy=args.nan_policy,
        scheduler=args.scheduler,
    )


def _audit_to_width(args: argparse.Namespace, spec: AuditSpec) -> int:
    """``mcdp audit --target-width W``: rounds, each printed, then the outcome."""
    max_draws = MAX_DRAWS if args.max_draws is None else args.max_draws
    first = FIRST_DRAWS if args.draws is None else args.draws
    if first > max_draws:
        fail(
            f"Expected --draws (the first round) <= --max-draws = {max_draws:,}, "
            f"got {first:,}."
        )
    stop = TargetWidth(args.target_width, max_draws, first)
    needed = draws_for_target(spec, stop.width)
    runs = run_iter(spec, stop)
    # the plan and the rounds go beside the table, or to stderr beside the JSON
    # (from process 0 only: the stdout of the others is already silenced)
    log = sys.stdout
    if args.json:
        from mcdp.distributed import is_main_process

        log = sys.stderr if is_main_process() else sys.stdout
    target = f"a {args.confidence:.0%} loss interval at most {args.target_width:g} wide"
    print(f"target: {target}, within {max_draws:,} draws per dataset", file=log)
    print(f"before the run: {_plan(needed, max_draws)}", file=log)
    with progress_bar(True, total=None, desc=args.mechanism) as bar:

        def show(step) -> None:  # the bar runs to the end of the round under way
            bar.total = step.round_draws
            bar.update(step.audit.draws - bar.n)
            if step.audit.draws == step.round_draws:
                bar.write(round_line(step), file=log)

        return follow(runs, show, args.json)


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


def check_workers(args: argparse.Namespace) -> None:
    """``--workers`` and ``--threads`` are this machine's: not with ``--scheduler``."""
    if args.scheduler is not None and (args.workers is not None or args.threads):
        fail("--workers and --threads apply without --scheduler (its cluster's).")


def connect(scheduler: str | None) -> None:
    """Connects to ``--scheduler`` (starts a local cluster for ``local:N``) before
    the run, and says where its dashboard is."""
    if scheduler is None:
        return
    from mcdp.engines.cluster import cluster_engine

    engine = cluster_engine(scheduler)
    if engine.dashboard:
        print(
            f"mcdp: the cluster's dashboard is at {engine.dashboard}", file=sys.stderr
        )


def load_callable(args: argparse.Namespace, domain=None):
    """The mechanism that ``--callable MODULE:NAME`` names: a Mechanism as it is
    (the black-box options then do not apply), or ``fn(rng, x, n)`` wrapped with
    them. The working directory is searched first, as ``python -m`` does."""
    import importlib
    import os

    from mcdp.core.mechanism import Mechanism

    module_name, _, name = args.callable.partition(":")
    if not module_name or not name:
        raise ValueError(
            f"Expected --callable MODULE:NAME (e.g. mymech:sample), got "
            f"{args.callable!r}."
        )
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(
            f"--callable {args.callable}: cannot import ({err})."
        ) from None
    target = module
    for part in name.split("."):
        if not hasattr(target, part):
            raise ValueError(
                f"--callable {args.callable}: {module_name} has no attribute {name!r}."
            )
        target = getattr(target, part)
    if isinstance(target, Mechanism):
        given = [f for f in BLACK_BOX_OPTIONS if getattr(args, f) not in (None, False)]
        if given:
            raise ValueError(
                f"--{given[0].replace('_', '-')} applies to a plain function; "
                f"--callable {args.callable} is a Mechanism with its own."
            )
        return target
    if not callable(target):
        raise ValueError(
            f"--callable {args.callable}: expected fn(rng, x, n) or a Mechanism, "
            f"got {type(target).__name__}."
        )
    return Mechanism.from_callable(
        name,
        target,
        claim=args.claim,
        reproducible=not args.non_reproducible,
        library=args.library,
        workers=1 if args.workers is None else args.workers,
        domain=domain,
        threads=args.threads,
    )
