"""``mcdp figures``: compute (or reuse) the data of every figure, then draw it.

Each figure ``<name>`` is written to ``figures/<name>.png`` and ``.pdf`` with the
data it was drawn from beside it in ``figures/<name>.json``. Long computations are
cached, resumable, in ``results/`` (keyed by their settings), so rerunning after an
interruption, or to restyle a figure, recomputes nothing that is finished.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax

from mcdp import _validate
from mcdp.experiments import Acl2022Grid, TrLaplaceGrid, run_grid, write_atomic
from mcdp.experiments.acl2022 import sampler_histograms
from mcdp.experiments.emnlp2021 import violation_series
from mcdp.sampling import PRNG_IMPL
from mcdp.sampling import key as sampling_key

FIGURES = (
    "acl2022-fig1",
    "acl2022-fig2",
    "emnlp2021-fig1",
    "emnlp2021-fig1-extended",
    "trlaplace-audit",
    "benchmarks-suite",
    "benchmarks-tradeoff",
    "search-budget",
)
# the cases whose trade-off points the benchmarks-tradeoff figure shows
TRADEOFF_CASES = ("noisy-hist2", "report-noisy-max3", "laplace-parallel")
# the attack of the benchmark-suite figures: the default of every audit. Its cells
# are kept in the suite's file beside any of another attack that the file holds
# (the learned attack's, the default of earlier versions); the figures show its own
SUITE_ATTACK = "auto"
# the search-budget figure: (mechanism, epsilon, d), each searched with the lr
# attack at every budget of SEARCH_BUDGETS (ADePT's named pairs start with its
# claimed worst case, the axis; the diagonal is the true one)
SEARCH_CASES = (("adept", 1.0, 8), ("prefix-sum", 0.1, 10), ("noisy-hist2", 0.1, 5))
SEARCH_BUDGETS = (1, 2, 4, 8, 16, 32)


@dataclasses.dataclass(frozen=True)
class FigureSettings:
    """What ``mcdp figures`` computes; the defaults take minutes on a 2-core CPU."""

    out_dir: Path = Path("figures")
    cache_dir: Path = Path("results")
    draws: int = 1_000_000  # per dataset and cell of the ACL 2022 grid
    pairs: int = 100_000  # per n of the EMNLP 2021 experiment
    e4_draws: int = 100_000  # per input and cell of the TrLaplace audit
    sampler_draws: int = 100_000  # per sampler of ACL 2022 Figure 2 (as the paper)
    suite_draws: int = 100_000  # per input and cell of the benchmark suite
    search_draws: int = 200_000  # per input, each confirmation of the input search
    search_screen_draws: int = 20_000  # per input, each screening of the search
    seed: int = 0
    confidence: float = 0.95
    dtype: str = "float64"

    def validated(self) -> FigureSettings:
        return dataclasses.replace(
            self,
            out_dir=Path(self.out_dir),
            cache_dir=Path(self.cache_dir),
            draws=_validate.integer(
                "draws", self.draws, low=1, high=_validate.MAX_DRAWS
            ),
            pairs=_validate.integer(
                "pairs", self.pairs, low=1, high=_validate.MAX_DRAWS
            ),
            sampler_draws=_validate.integer(
                "sampler_draws", self.sampler_draws, low=1, high=10**9
            ),
            suite_draws=_validate.integer(
                "suite_draws", self.suite_draws, low=1, high=_validate.MAX_DRAWS
            ),
            search_draws=_validate.integer(
                "search_draws", self.search_draws, low=1, high=_validate.MAX_DRAWS
            ),
            search_screen_draws=_validate.integer(
                "search_screen_draws",
                self.search_screen_draws,
                low=1,
                high=_validate.MAX_DRAWS,
            ),
            seed=_validate.integer("seed", self.seed, low=0, high=_validate.MAX_SEED),
            confidence=_validate.open_unit("confidence", self.confidence),
            dtype=_validate.one_of("dtype", self.dtype, _validate.DTYPES),
        )


def _save(fig, out_dir: Path, name: str, data: Any) -> list[Path]:
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.pdf"]
    fig.savefig(paths[0], dpi=150)
    fig.savefig(paths[1])
    plt.close(fig)
    write_atomic(out_dir / f"{name}.json", data)
    return paths + [out_dir / f"{name}.json"]


def _acl2022_grid(s: FigureSettings, progress: bool, log) -> dict[str, Any]:
    cache = (
        s.cache_dir / f"acl2022-{s.dtype}-draws{s.draws}-seed{s.seed}-{PRNG_IMPL}.json"
    )
    spec = Acl2022Grid(
        draws=s.draws, seed=s.seed, confidence=s.confidence, dtype=s.dtype
    )
    log(f"acl2022 grid: {s.draws:,} draws per dataset -> {cache}")
    return run_grid(spec, cache, progress=progress)


def make_figures(
    settings: FigureSettings = FigureSettings(),
    names: Sequence[str] | None = None,
    *,
    progress: bool = False,
    log: Callable[[str], None] = lambda message: None,
) -> list[Path]:
    """Computes what is missing and writes every figure in ``names`` (default: all).

    Returns the paths written (PNG, PDF and JSON per figure).
    """
    from mcdp import plotting

    s = settings.validated()
    names = list(FIGURES if names is None else names)
    for name in names:
        _validate.one_of("figure", name, FIGURES)
    written: list[Path] = []
    root = sampling_key(s.seed)
    if "acl2022-fig1" in names:
        start = time.perf_counter()
        grid = _acl2022_grid(s, progress, log)
        written += _save(plotting.acl2022_fig1(grid), s.out_dir, "acl2022-fig1", grid)
        log(f"acl2022-fig1: {time.perf_counter() - start:.1f} s")
    if "acl2022-fig2" in names:
        start = time.perf_counter()
        data = sampler_histograms(jax.random.fold_in(root, 2), s.sampler_draws)
        data["seed"] = s.seed
        written += _save(plotting.acl2022_fig2(data), s.out_dir, "acl2022-fig2", data)
        log(f"acl2022-fig2: {time.perf_counter() - start:.1f} s")
    emnlp = [n for n in names if n.startswith("emnlp2021")]
    if emnlp:
        start = time.perf_counter()
        records = violation_series(
            s.cache_dir, s.pairs, seed=s.seed, confidence=s.confidence,
            dtype=s.dtype, log=log,
        )  # fmt: skip
        data = {"settings": _settings_json(s), "records": records}
        for name in emnlp:
            max_dim = 64 if name == "emnlp2021-fig1" else None
            subset = [r for r in records if max_dim is None or r["dim"] <= max_dim]
            fig = plotting.emnlp2021_fig1(subset)
            written += _save(fig, s.out_dir, name, {**data, "records": subset})
        log(f"emnlp2021-fig1: {time.perf_counter() - start:.1f} s")
    if "trlaplace-audit" in names:
        start = time.perf_counter()
        data = _e4_grid(s, log)
        fig = plotting.trlaplace_audit(data)
        written += _save(fig, s.out_dir, "trlaplace-audit", data)
        log(f"trlaplace-audit: {time.perf_counter() - start:.1f} s")
    suite = [n for n in names if n.startswith("benchmarks")]
    if suite:
        start = time.perf_counter()
        data = plotting.attack_cells(_suite_grid(s, progress, log), SUITE_ATTACK)
        if "benchmarks-suite" in suite:
            fig = plotting.suite_table(data, SUITE_ATTACK)
            written += _save(fig, s.out_dir, "benchmarks-suite", data)
        if "benchmarks-tradeoff" in suite:
            records = [plotting.strongest_cell(data[n]) for n in TRADEOFF_CASES]
            fig = plotting.tradeoff(records)
            written += _save(fig, s.out_dir, "benchmarks-tradeoff", records)
        log(f"benchmarks: {time.perf_counter() - start:.1f} s")
    if "search-budget" in names:
        start = time.perf_counter()
        data = _search_budget(s, log)
        fig = plotting.search_budget(data)
        written += _save(fig, s.out_dir, "search-budget", data)
        log(f"search-budget: {time.perf_counter() - start:.1f} s")
    return written


def _search_budget(s: FigureSettings, log) -> dict[str, Any]:
    """One search per case and budget (:data:`SEARCH_CASES`,
    :data:`SEARCH_BUDGETS`) with the lr attack; a few minutes on a 2-core CPU."""
    from mcdp.mechanisms import get_mechanism
    from mcdp.pairs import PAIRS, make_pair
    from mcdp.searching import CONFIRM, search

    cases = []
    for name, epsilon, dim in SEARCH_CASES:
        mech = get_mechanism(name)
        params = mech.calibrate(epsilon, 0.0, dim, 1.0)
        domain = mech.domain.at(1.0)
        named = []
        for pair in PAIRS:
            try:
                xs = make_pair(pair, dim)
            except ValueError:
                continue
            if domain.contains(xs):
                named.append(mech.exact_epsilon(params, mech.transformed(xs, params)))
        runs = []
        for budget in SEARCH_BUDGETS:
            result = search(
                name, epsilon, 0.0, dim, budget=budget, attack="lr",
                confirm=min(CONFIRM, budget),
                draws=s.search_draws, screen_draws=s.search_screen_draws,
                seed=s.seed, confidence=s.confidence, dtype=s.dtype,
            )  # fmt: skip
            runs.append(
                {
                    "budget": budget,
                    "epsilon_lower": result.epsilon_lower,
                    "epsilon_exact": result.epsilon_exact,
                    "witness_label": result.witness_label,
                    "witness": result.witness,
                    "seconds": result.seconds,
                }
            )
            log(f"search {name} budget {budget}: {result.epsilon_lower:.4g}")
        best = max((e for e in named if e is not None), default=None)
        cases.append(
            {"mechanism": name, "epsilon": epsilon, "dim": dim, "attack": "lr",
             "best_named_exact": best, "runs": runs}
        )  # fmt: skip
    return {
        "settings": _settings_json(s),
        "confidence": s.confidence,
        "draws": s.search_draws,
        "screen_draws": s.search_screen_draws,
        "cases": cases,
    }


def _suite_grid(s: FigureSettings, progress: bool, log) -> dict[str, Any]:
    from mcdp.experiments import SuiteGrid

    cache = (
        s.cache_dir
        / f"benchmarks-{s.dtype}-draws{s.suite_draws}-seed{s.seed}-{PRNG_IMPL}.json"
    )
    log(f"benchmark suite: {s.suite_draws:,} draws per input -> {cache}")
    spec = SuiteGrid(
        draws=s.suite_draws, seed=s.seed, confidence=s.confidence, dtype=s.dtype,
        attacks=(SUITE_ATTACK,),
    )  # fmt: skip
    return run_grid(spec, cache, progress=progress)


def _settings_json(s: FigureSettings) -> dict[str, Any]:
    d = dataclasses.asdict(s)
    return {k: str(v) if isinstance(v, Path) else v for k, v in d.items()}


def _e4_grid(s: FigureSettings, log) -> dict[str, Any]:
    cache = (
        s.cache_dir
        / f"trlaplace-{s.dtype}-draws{s.e4_draws}-seed{s.seed}-{PRNG_IMPL}.json"
    )
    log(f"trlaplace audit: {s.e4_draws:,} draws per input -> {cache}")
    spec = TrLaplaceGrid(
        draws=s.e4_draws, seed=s.seed, confidence=s.confidence, dtype=s.dtype
    )
    return run_grid(spec, cache)
