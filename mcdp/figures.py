"""``mcdp figures``: compute (or reuse) the data of every figure, then draw it.

Each figure ``<name>`` is written to ``figures/<name>.png`` and ``.pdf`` with the
data it was drawn from beside it in ``figures/<name>.json``. Long computations are
cached, resumable, in ``results/`` (keyed by their settings), so rerunning after an
interruption, or to restyle a figure, recomputes nothing that is finished.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mcdp import _validate
from mcdp.experiments import GridSpec, _write_atomic, run_grid
from mcdp.mechanisms._base import standard_laplace
from mcdp.mechanisms.dptext import dptext_params, dptext_sample
from mcdp.sampling import PRNG_IMPL
from mcdp.sampling import key as sampling_key

FIGURES = (
    "acl2022-fig1",
    "acl2022-fig2",
    "emnlp2021-fig1",
    "emnlp2021-fig1-extended",
    "trlaplace-audit",
)
# the EMNLP 2021 series: (dist, clip, normal_scale) at the reference's C = 10
EMNLP_SERIES = (
    ("uniform", "l2", 0.1),
    ("normal", "l2", 0.1),
    ("normal", "l2", 0.01),
    ("uniform", "l1", 0.1),
)
EMNLP_DIMS = tuple(range(1, 257))
HIST_EDGES = np.linspace(-5, 5, 101)


@dataclasses.dataclass(frozen=True)
class FigureSettings:
    """What ``mcdp figures`` computes; the defaults take minutes on a 2-core CPU."""

    out_dir: Path = Path("figures")
    cache_dir: Path = Path("results")
    draws: int = 1_000_000  # per dataset and cell of the ACL 2022 grid
    pairs: int = 100_000  # per n of the EMNLP 2021 experiment
    e4_draws: int = 100_000  # per input and cell of the TrLaplace audit
    sampler_draws: int = 100_000  # per sampler of ACL 2022 Figure 2 (as the paper)
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
            seed=_validate.integer("seed", self.seed, low=0, high=_validate.MAX_SEED),
            confidence=_validate.open_unit("confidence", self.confidence),
            dtype=_validate.one_of("dtype", self.dtype, _validate.DTYPES),
        )


def sampler_histograms(
    key, draws: int, edges: np.ndarray = HIST_EDGES
) -> dict[str, Any]:
    """Histograms of the samplers of ACL 2022 Figure 2 (SPEC E3), ``draws`` each.

    Samplers, all of unit scale: the library's standard Laplace
    (``jax.random.laplace``), the standard uniform, the correct inverse-CDF transform,
    and DPText's transform with NaNs kept and with NaN → 0.
    """
    keys = jax.random.split(key, 5)
    with jax.enable_x64(True):
        zeros = jnp.zeros((draws, 1))
        samples = {
            "library Laplace (jax.random.laplace)": jax.random.laplace(
                keys[0], (draws,), jnp.float64
            ),
            "uniform U(0, 1)": jax.random.uniform(keys[1], (draws,), jnp.float64),
            "correct inverse CDF": standard_laplace(keys[2], (draws,), jnp.float64),
            "DPText, NaN kept": dptext_sample(
                keys[3], zeros, dptext_params(1.0, 1.0, "nan")
            ),
            "DPText, NaN → 0": dptext_sample(
                keys[4], zeros, dptext_params(1.0, 1.0, "zero")
            ),
        }
    panels = []
    for title, values in samples.items():
        x = np.asarray(values, dtype=np.float64).ravel()
        nan = int(np.isnan(x).sum())
        x = x[~np.isnan(x)]
        counts, _ = np.histogram(x, bins=edges)
        outside = int(((x < edges[0]) | (x > edges[-1])).sum())
        panels.append(
            {"title": title, "counts": counts.tolist(), "nan": nan, "outside": outside}
        )
    return {"draws": draws, "edges": edges.tolist(), "samplers": panels}


def _save(fig, out_dir: Path, name: str, data: Any) -> list[Path]:
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.pdf"]
    fig.savefig(paths[0], dpi=150)
    fig.savefig(paths[1])
    plt.close(fig)
    _write_atomic(out_dir / f"{name}.json", data)
    return paths + [out_dir / f"{name}.json"]


def _acl2022_grid(s: FigureSettings, progress: bool, log) -> dict[str, Any]:
    cache = (
        s.cache_dir / f"acl2022-{s.dtype}-draws{s.draws}-seed{s.seed}-{PRNG_IMPL}.json"
    )
    spec = GridSpec(draws=s.draws, seed=s.seed, confidence=s.confidence, dtype=s.dtype)
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
        records = _emnlp2021_records(s, progress, log)
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
    return written


def _settings_json(s: FigureSettings) -> dict[str, Any]:
    d = dataclasses.asdict(s)
    return {k: str(v) if isinstance(v, Path) else v for k, v in d.items()}


def _emnlp2021_records(s: FigureSettings, progress: bool, log) -> list[dict[str, Any]]:
    """Every EMNLP 2021 series for n = 1..256, cached per series."""
    from mcdp.violations import count_violations

    cache = (
        s.cache_dir
        / f"emnlp2021-{s.dtype}-pairs{s.pairs}-seed{s.seed}-{PRNG_IMPL}.json"
    )
    done = load_json(cache) if cache.exists() else {}
    for dist, clip, scale in EMNLP_SERIES:
        name = f"{dist}-{clip}-{scale!r}"
        if name in done:
            continue
        log(f"emnlp2021: {name}, {s.pairs:,} pairs per n, n = 1..{EMNLP_DIMS[-1]}")
        records = count_violations(
            sampling_key(s.seed),
            dist,
            EMNLP_DIMS,
            s.pairs,
            clip=clip,
            C=10.0,
            normal_scale=scale,
            confidence=s.confidence,
            dtype=s.dtype,
        )
        done[name] = [r.to_dict() for r in records]
        _write_atomic(cache, done)
    return [r for name in sorted(done) for r in done[name]]


def _e4_grid(s: FigureSettings, log) -> dict[str, Any]:
    from mcdp.trlaplace_audit import E4Spec, run_e4

    cache = (
        s.cache_dir
        / f"trlaplace-{s.dtype}-draws{s.e4_draws}-seed{s.seed}-{PRNG_IMPL}.json"
    )
    log(f"trlaplace audit: {s.e4_draws:,} draws per input -> {cache}")
    spec = E4Spec(draws=s.e4_draws, seed=s.seed, confidence=s.confidence, dtype=s.dtype)
    return run_e4(spec, cache)


def load_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())
