"""Figures from result data: pure functions of JSON-like data to matplotlib figures.

Nothing here samples or computes an estimate; every number drawn comes from the
records passed in (see :mod:`mcdp.figures`, which produces and caches them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display needed

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.transforms import blended_transform_factory  # noqa: E402

ACL2022_PANELS = ("none", "random", "laplace", "adept", "dptext")
PANEL_TITLES = {
    "none": "none (no privacy)",
    "random": "random (no information)",
    "laplace": "laplace (correct)",
    "adept": "adept (sensitivity 2C)",
    "dptext": "dptext (broken sampler)",
}
TOP = 0.97  # where infinite values are drawn, in axes coordinates


def _eps_colors(epsilons: Sequence[float]) -> dict[float, Any]:
    cmap = plt.get_cmap("viridis")
    n = max(len(epsilons) - 1, 1)
    return {e: cmap(0.9 * i / n) for i, e in enumerate(sorted(epsilons))}


def _cells(grid: Mapping[str, Any], mechanism: str) -> dict[float, list[dict]]:
    """``{epsilon: [cells sorted by d]}`` for one mechanism of a grid file."""
    by_eps = grid.get(mechanism, {})
    return {
        float(e): sorted(by_dim.values(), key=lambda c: c["dim"])
        for e, by_dim in by_eps.items()
    }


def _finite(values) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def acl2022_fig1(grid: Mapping[str, Any]) -> Figure:
    """ACL 2022 Figure 1: empirical loss of the majority-vote attack against d.

    One panel per mechanism, one line per epsilon; bands are the loss intervals,
    hollow diamonds the exact loss; an infinite estimate is a triangle at the panel's
    top edge with a line from its (finite) lower bound; for ``laplace`` the dashed
    lines are the guarantees y = epsilon.
    """
    meta = grid.get("_meta", {})
    panels = [m for m in ACL2022_PANELS if m in grid] + sorted(
        m for m in grid if m not in ACL2022_PANELS and not m.startswith("_")
    )
    epsilons = sorted({float(e) for m in panels for e in grid[m]})
    colors = _eps_colors(epsilons)
    ncols = 3
    nrows = math.ceil((len(panels) + 1) / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(4.4 * ncols, 3.6 * nrows), squeeze=False
    )
    flat = axes.ravel()
    for ax, mech in zip(flat, panels, strict=False):
        _acl2022_panel(ax, mech, _cells(grid, mech), colors)
    for ax in flat[len(panels) :]:
        ax.axis("off")
    _acl2022_legend(flat[len(panels)], colors, meta)
    fig.suptitle(
        "Empirical privacy loss of the majority-vote attack, D = 0^d vs D' = 1^d "
        f"({meta.get('draws', 0):,} draws per dataset)",
        fontsize=12,
    )
    fig.tight_layout()
    return fig


def _acl2022_panel(ax, mech: str, cells: dict[float, list[dict]], colors) -> None:
    everything = [
        v
        for row in cells.values()
        for c in row
        for v in (c["loss"], c["loss_lower"], c["loss_upper"], c["exact"])
    ]
    finite = _finite(everything)
    positive = [v for v in finite if v > 0]
    use_log = mech != "random" and positive and max(positive) / min(positive) > 20
    bars = mech == "random"  # bands of overlapping lines near 0 are unreadable
    top = _top_value(use_log, finite)
    top_edge = blended_transform_factory(ax.transData, ax.transAxes)
    for k, (eps, row) in enumerate(sorted(cells.items())):
        color = colors[eps]
        # a small horizontal dodge per epsilon (log-x), so equal values stay visible
        shift = 2 ** (0.05 * (k - (len(cells) - 1) / 2))
        dims = [c["dim"] * shift for c in row]
        ok = [i for i, c in enumerate(row) if math.isfinite(c["loss"])]
        xs = [dims[i] for i in ok]
        ys = [row[i]["loss"] for i in ok]
        lows = [row[i]["loss_lower"] for i in ok]
        highs = [min(row[i]["loss_upper"], top) for i in ok]
        if bars:
            ax.errorbar(
                xs,
                ys,
                yerr=[
                    [y - lo for y, lo in zip(ys, lows, strict=True)],
                    [hi - y for y, hi in zip(ys, highs, strict=True)],
                ],
                fmt="o-",
                color=color,
                ms=3.5,
                lw=1.0,
                capsize=2,
                elinewidth=0.8,
            )
        else:
            ax.plot(xs, ys, "o-", color=color, ms=3.5, lw=1.3)
            ax.fill_between(xs, lows, highs, color=color, alpha=0.25, lw=0)
        for x, c in zip(dims, row, strict=True):
            if not math.isfinite(c["loss"]):
                ax.plot([x], [TOP], "^", color=color, ms=7, transform=top_edge)
                ax.plot([x, x], [c["loss_lower"], top], color=color, lw=1, alpha=0.7)
                ax.plot([x], [c["loss_lower"]], "_", color=color, ms=8, mew=1.5)
            exact = c.get("exact")
            if (
                exact is not None
                and math.isfinite(exact)
                and (exact > 0 or not use_log)
            ):
                ax.plot([x], [exact], "D", mfc="none", mec=color, ms=5.5, mew=1)
        if mech == "laplace":
            ax.axhline(eps, color=color, ls="--", lw=0.9)
    ax.set_xscale("log", base=2)
    ticks = sorted({c["dim"] for row in cells.values() for c in row})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    if use_log:
        ax.set_yscale("log")
        ax.set_ylim(min(positive) / 2, top)
    else:
        ax.set_ylim(0, top)
    title = PANEL_TITLES.get(mech, mech)
    if all(not math.isfinite(c["loss"]) for row in cells.values() for c in row):
        title += ": every estimate infinite"
    ax.set_title(title, fontsize=11)
    ax.set_xlabel("dimension d")
    ax.set_ylabel("privacy loss")
    ax.grid(alpha=0.3, which="major")


def _top_value(use_log: bool, finite: list[float]) -> float:
    """The data value of the panel's top edge: above every finite value."""
    high = max(finite, default=1.0)
    if use_log:
        return high * 2.5
    return max(high * 1.15, 1e-3)


def _acl2022_legend(ax, colors, meta: Mapping[str, Any]) -> None:
    ax.axis("off")
    handles = [
        Line2D([], [], color=c, marker="o", ms=4, label=f"ε = {e:g}")
        for e, c in colors.items()
    ]
    grey = "0.35"
    handles += [
        Patch(
            color=grey,
            alpha=0.3,
            label=f"{meta.get('confidence', 0.95):.0%} interval (bars for random)",
        ),
        Line2D([], [], ls="none", marker="D", mfc="none", mec=grey, label="exact loss"),
        Line2D(
            [],
            [],
            ls="none",
            marker="^",
            color=grey,
            label="infinite estimate (top edge)",
        ),
        Line2D(
            [], [], color=grey, lw=1, marker="_", ms=8, label="… and its lower bound"
        ),
        Line2D([], [], color=grey, ls="--", lw=0.9, label="guarantee y = ε (laplace)"),
    ]
    ax.legend(handles=handles, loc="center", frameon=False, fontsize=10)


def acl2022_fig2(histograms: Mapping[str, Any]) -> Figure:
    """ACL 2022 Figure 2: histograms of the Laplace samplers."""
    panels = histograms["samplers"]
    edges = histograms["edges"]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(3.3 * len(panels), 3.0), sharex=True, squeeze=False
    )
    for ax, panel in zip(axes[0], panels, strict=True):
        widths = [b - a for a, b in zip(edges[:-1], edges[1:], strict=True)]
        ax.bar(edges[:-1], panel["counts"], width=widths, align="edge", color="C0")
        ax.set_title(panel["title"], fontsize=10)
        notes = []
        if panel["nan"]:
            notes.append(f"{panel['nan'] / histograms['draws']:.1%} NaN (not shown)")
        if panel["outside"]:
            notes.append(f"{panel['outside'] / histograms['draws']:.1%} outside ±5")
        if notes:
            ax.text(
                0.03,
                0.96,
                "\n".join(notes),
                transform=ax.transAxes,
                va="top",
                fontsize=8,
            )
        ax.set_xlim(edges[0], edges[-1])
        ax.set_xlabel("value")
    axes[0][0].set_ylabel(f"count of {histograms['draws']:,} draws")
    fig.tight_layout()
    return fig


def emnlp2021_fig1(
    records: Sequence[Mapping[str, Any]], max_dim: int | None = None
) -> Figure:
    """EMNLP 2021 Figure 1: % of pairs whose clipped L1 distance exceeds 2C, vs n."""
    fig, ax = plt.subplots(figsize=(6.8, 4.8))
    series: dict[tuple, list] = {}
    for r in records:
        if max_dim is None or r["dim"] <= max_dim:
            series.setdefault(_series_key(r), []).append(r)
    # the control last and on top: it sits at 0 %, where a normal series may too
    ordered = sorted(series.items(), key=lambda kv: (kv[0][0] == "l1", kv[0][1:]))
    ordered.sort(key=lambda kv: (kv[0][0] == "l1", kv[0][1] != "uniform"))
    for i, (key, rows) in enumerate(ordered):
        rows.sort(key=lambda r: r["dim"])
        dims = [r["dim"] for r in rows]
        control = key[0] == "l1"
        color = "k" if control else f"C{i}"
        ax.plot(
            dims,
            [100 * r["fraction"] for r in rows],
            color=color,
            lw=1.8 if control else 1.4,
            ls="--" if control else "-",
            zorder=3 if control else 2,
            label=_series_label(rows[0]),
        )
        ax.fill_between(
            dims,
            [100 * r["fraction_lower"] for r in rows],
            [100 * r["fraction_upper"] for r in rows],
            color=color,
            alpha=0.25,
            lw=0,
        )
    pairs = sorted({r["pairs"] for r in records})
    conf = records[0].get("confidence", 0.95) if records else 0.95
    ax.set_xlabel("latent dimension n")
    ax.set_ylabel("pairs violating the 2C bound (%)")
    ax.set_ylim(-2, 102)
    ax.set_xlim(
        1, max(r["dim"] for r in records if max_dim is None or r["dim"] <= max_dim)
    )
    ax.grid(alpha=0.3)
    ax.legend(
        title=f"bands: {conf:.0%} Clopper–Pearson",
        fontsize=9,
        title_fontsize=9,
        ncol=2,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        frameon=False,
    )
    ax.set_title(
        "Pairs violating ADePT's sensitivity bound "
        f"({', '.join(f'{p:,}' for p in pairs)} pairs per n)",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def _series_key(r: Mapping[str, Any]) -> tuple:
    return (
        r.get("clip", "l2"),
        r["dist"],
        r.get("normal_reading", ""),
        r.get("normal_scale", 0),
    )


def _series_label(r: Mapping[str, Any]) -> str:
    clip = "L1 clip (control)" if r.get("clip") == "l1" else "L2 clip"
    if r["dist"] == "uniform":
        source = "uniform U(−C, C)"
    elif r.get("normal_reading") == "variance":
        source = f"normal, σ² = {r['normal_scale']:g}·C"
    else:
        source = f"normal, σ = {r['normal_scale']:g}·C"
    return f"{source}, {clip}"


E4_PANELS = ("gaussian", "laplace", "trlaplace")
E4_STYLES = {
    ("axis", "lr"): ("C0", "o", "axis pair, likelihood-ratio test"),
    ("diagonal", "lr"): ("C1", "s", "diagonal pair, likelihood-ratio test"),
    ("axis", "support"): ("C2", "^", "axis pair, support test"),
    ("diagonal", "support"): ("C3", "v", "diagonal pair, support test"),
}


def trlaplace_audit(data: Mapping[str, Any]) -> Figure:
    """The TrLaplace audit: claimed delta against the measured lower bound, per epsilon.

    One panel per mechanism, log-log. Filled markers are the lower confidence bounds
    on delta (a bound of 0, i.e. nothing detected, sits on the bottom edge as an
    open marker), the shaded bands reach up to the upper bound (together, the
    interval of the attack's delta at the stated confidence), small crosses are
    the exact delta where a closed form exists, and the black line is the claimed
    delta. A filled marker above the line refutes the claim.
    """
    meta = data.get("_meta", {})
    panels = [m for m in E4_PANELS if m in data]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.6 * len(panels), 4.2), squeeze=False, sharey=True
    )
    floor = 1e-7
    for ax, mech in zip(axes[0], panels, strict=True):
        cells = [
            cell
            for by_pair in data[mech].values()
            for by_attack in by_pair.values()
            for cell in by_attack.values()
        ]
        eps = sorted({c["epsilon"] for c in cells})
        claimed = [
            next(c["delta_claimed"] for c in cells if c["epsilon"] == e) for e in eps
        ]
        ax.plot(eps, claimed, "k-", lw=1.5, label="claimed δ = 1/(4d)")
        bottom = blended_transform_factory(ax.transData, ax.transAxes)
        for (pair, attack), (color, marker, label) in E4_STYLES.items():
            rows = sorted(
                (c for c in cells if c["pair"] == pair and c["attack"] == attack),
                key=lambda c: c["epsilon"],
            )
            if not rows:
                continue
            xs = [r["epsilon"] for r in rows]
            lows = [r["delta_lower"] for r in rows]
            highs = [max(r["delta_upper"], floor) for r in rows]
            shown = [(x, lo) for x, lo in zip(xs, lows, strict=True) if lo > 0]
            ax.fill_between(
                xs,
                [max(lo, floor) for lo in lows],
                highs,
                color=color,
                alpha=0.15,
                lw=0,
            )
            ax.plot(
                [x for x, _ in shown],
                [lo for _, lo in shown],
                marker,
                color=color,
                ms=6,
                ls="-",
                lw=1,
                label=label,
            )
            zero = [x for x, lo in zip(xs, lows, strict=True) if lo <= 0]
            ax.plot(
                zero,
                [0.02] * len(zero),
                marker,
                mfc="none",
                mec=color,
                ms=6,
                ls="none",
                transform=bottom,
            )
            exact = [(r["epsilon"], r["delta_exact"]) for r in rows if r["delta_exact"]]
            if exact:
                ax.plot(
                    [x for x, _ in exact],
                    [max(v, floor) for _, v in exact],
                    "x",
                    color=color,
                    ms=6,
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(floor / 3, 2)
        ax.set_xlabel("ε")
        ax.set_title(
            {
                "gaussian": "gaussian (Thm 2)",
                "laplace": "laplace, sensitivity 2C√d",
                "trlaplace": "trlaplace (Thm 3)",
            }.get(mech, mech)
        )
        ax.grid(alpha=0.3, which="major")
    axes[0][0].set_ylabel("δ")
    handles, labels = [], []
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    handles += [
        Line2D([], [], ls="none", marker="o", mfc="none", mec="0.3",
               label="lower bound 0 (not detected)"),
        Line2D([], [], ls="none", marker="x", color="0.3", label="exact δ"),
        Patch(color="0.3", alpha=0.15, label="interval of the attack's δ"),
    ]  # fmt: skip
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=9, frameon=False)
    fig.suptitle(
        "TrLaplace paper settings (d = 300; 500 at ε = 10; 1700 at ε = 20): "
        f"{meta.get('draws', 0):,} draws per input",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def tradeoff(records: Sequence[Mapping[str, Any]]) -> Figure:
    """Trade-off curves: what the counts show beside what the claims allow.

    One panel per audit record (an (epsilon, delta) audit's dict with ``tradeoff``),
    on log axes so that the rare events where the evidence sits are visible: the
    x axis is the false-positive rate alpha, the y axis the power 1 - beta. The dots
    are the simultaneous confidence points (alpha+, 1 - beta+) of the final events'
    tests: the mechanism's trade-off curve allows at least that much power. The
    solid line is the most power the claimed epsilon-DP allows, the dashed line
    that of Gaussian DP at the largest mu the dots refute. A dot above the solid
    line refutes the claim.
    """
    from scipy import stats

    panels = max(1, len(records))
    fig, axes = plt.subplots(1, panels, figsize=(4.4 * panels, 4.0), squeeze=False)
    alpha = [10 ** (-9 + 9 * t / 600) for t in range(601)]
    for ax, record in zip(axes[0], records, strict=False):
        eps = record["epsilon"]
        allowed = [min(1.0, math.exp(eps) * a, 1 - math.exp(-eps) * (1 - a))
                   for a in alpha]  # fmt: skip
        ax.plot(alpha, allowed, color="k", lw=1.2, label=f"claim: {eps:g}-DP")
        mu = record["tradeoff"]["gdp_mu_lower"]
        if 0 < mu < math.inf:
            gdp = [float(stats.norm.sf(stats.norm.isf(a) - mu)) for a in alpha]
            label = f"{mu:.3g}-GDP (refuted, as every smaller mu)"
            ax.plot(alpha, gdp, "--", color="C3", lw=1.0, label=label)
        points = [(a, 1 - b) for a, b in record["tradeoff"]["points"] if a > 0]
        if points:
            xs, ys = zip(*points, strict=True)
            label = f"the events' tests ({record['confidence']:.0%}, simultaneous)"
            ax.plot(xs, ys, "o", color="C0", ms=4, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(1e-9, 1)
        ax.set_ylim(1e-6, 1.5)
        ax.set_xlabel("false-positive rate α")
        ax.set_ylabel("power 1 − β")
        ax.set_title(
            f"{record['mechanism']}, {record['pair']} pair, {record['attack']} attack"
            f"\n{record['draws']:,} draws per input", fontsize=9,
        )  # fmt: skip
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def suite_table(grid: Mapping[str, Any], attack: str | None = None) -> Figure:
    """The benchmark suite as a table: per mechanism, the claimed epsilon, the
    largest lower bound over its pairs, and the exact loss of that pair.

    ``grid`` is a ``mcdp grid benchmarks`` file (``mechanism → pair → attack``);
    ``attack`` keeps its cells of that attack alone (None: every cell). Bars are
    the lower bounds (log scale; a bound of 0 is a stub at the left edge), black
    ticks the claims, hollow diamonds the exact losses where known (an infinite one
    is a triangle at the right edge). A bar past its tick refutes the claim. On the
    right, the pair and the attack that counted it (the portfolio's choice, where
    the cell's is ``auto``); a hatched bar is float-support's: outputs that one
    input's float64 noise produced and the other's cannot, a flaw of the sampler's
    floating point, beyond the exact loss, which is that of the mechanism in real
    arithmetic.
    """
    if attack is not None:
        grid = attack_cells(grid, attack)
    rows = []
    for name, by_pair in grid.items():
        if name.startswith("_"):
            continue
        best = strongest_cell(by_pair)
        if best is None:
            continue
        rows.append((name, best, best.get("epsilon_exact")))
    height = 0.42 * len(rows) + 1.9
    fig, ax = plt.subplots(figsize=(7.5, height))
    floor, ceiling = 1e-3, 1e3
    for i, (_name, best, exact) in enumerate(rows):
        lower = best.get("epsilon_lower") or 0.0
        refuted = lower > best["epsilon"]
        color = "C3" if refuted else "C0"
        hatch = "////" if best.get("attack") == "float-support" else None
        ax.barh(
            i, max(lower, floor) - floor, left=floor, color=color, alpha=0.8,
            hatch=hatch, edgecolor="white" if hatch else None, linewidth=0,
        )  # fmt: skip
        ax.plot([best["epsilon"]] * 2, [i - 0.4, i + 0.4], color="k", lw=1.5)
        if exact is not None:
            shown, marker = (ceiling, ">") if math.isinf(exact) else (exact, "D")
            ax.plot(shown, i, marker, mfc="none", mec="k", ms=6)
        label = f"{best['pair']}, {best['attack']}"
        ax.text(ceiling * 1.2, i, label, va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(floor, ceiling)
    ax.set_xlabel("epsilon")
    meta = grid.get("_meta", {})
    by = "" if attack is None else f", {attack} attack"
    ax.set_title(
        f"The benchmark suite: {meta.get('draws', 0):,} draws per input{by}, "
        f"{meta.get('confidence', 0.95):.0%} lower bounds (red: claim refuted)",
        fontsize=9,
    )
    handles = [
        Patch(color="C0", alpha=0.8, label="lower bound, claim stands"),
        Patch(color="C3", alpha=0.8, label="lower bound, claim refuted"),
        Line2D([], [], color="k", lw=1.5, label="claimed epsilon"),
        Line2D([], [], marker="D", mfc="none", mec="k", ls="", label="exact loss"),
    ]
    if any(best.get("attack") == "float-support" for _, best, _ in rows):
        hatched = Patch(
            facecolor="C3", alpha=0.8, hatch="////", edgecolor="white",
            label="float-support's: the float64 outputs",
        )  # fmt: skip
        handles.insert(2, hatched)
    # below the axes, where no bar runs (a refuted claim's bar may reach the edge)
    fig.legend(handles=handles, fontsize=7, loc="lower center", ncol=3)
    fig.tight_layout(rect=(0, 0.5 / height, 1, 1))
    return fig


def strongest_cell(by_pair: Mapping[str, Any]) -> dict[str, Any] | None:
    """The cell of a suite case (``pair → attack → cell``) with the largest
    ``epsilon_lower`` (None where it has none)."""
    cells = [c for by_attack in by_pair.values() for c in by_attack.values()]
    return max(cells, key=lambda c: c.get("epsilon_lower") or 0.0, default=None)


def attack_cells(grid: Mapping[str, Any], attack: str) -> dict[str, Any]:
    """A ``mcdp grid benchmarks`` file (``mechanism → pair → attack``, and
    ``_meta``) with the cells of ``attack`` alone."""
    return {
        name: by_pair if name.startswith("_") else {
            pair: {a: c for a, c in cells.items() if a == attack}
            for pair, cells in by_pair.items()
        }
        for name, by_pair in grid.items()
    }  # fmt: skip


def search_budget(data: Mapping[str, Any]) -> Figure:
    """The input search against its budget: per case, the witness's confirmed
    lower bound on epsilon (dots, at the stated confidence, Bonferroni-corrected
    for the confirmed candidates) for each number of candidates screened, beside
    the exact loss of the case's strongest named pair (dashed) and the claim
    (solid).

    ``data["cases"]`` lists, per case, its ``mechanism``, ``epsilon`` (the claim),
    ``best_named_exact`` and ``runs`` (one per budget: ``budget``,
    ``epsilon_lower``, ``epsilon_exact``, ``witness_label``).
    """
    cases = data["cases"]
    fig, axes = plt.subplots(
        1, len(cases), figsize=(3.8 * len(cases), 3.6), squeeze=False
    )
    for ax, case in zip(axes[0], cases, strict=True):
        runs = case["runs"]
        budgets = [r["budget"] for r in runs]
        ax.plot(budgets, [r["epsilon_lower"] for r in runs], "o-", color="C0",
                label=f"confirmed lower bound ({data['confidence']:.0%})")  # fmt: skip
        exact = [r["epsilon_exact"] for r in runs]
        if all(e is not None and math.isfinite(e) for e in exact):
            ax.plot(budgets, exact, "D", mfc="none", mec="k", ms=5,
                    label="exact loss of the witness")  # fmt: skip
        named = case.get("best_named_exact")
        if named is not None and math.isfinite(named):
            ax.axhline(named, ls="--", color="C3", lw=1,
                       label="exact loss, best named pair")  # fmt: skip
        ax.axhline(case["epsilon"], color="k", lw=1, label="claimed epsilon")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("budget (candidate pairs screened)")
        ax.set_ylabel("epsilon")
        ax.set_ylim(bottom=0)
        ax.set_title(
            f"{case['mechanism']}, d = {case['dim']}, {case['attack']} attack",
            fontsize=9,
        )
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(
        f"Input search: {data['screen_draws']:,} screening and {data['draws']:,} "
        "confirmation draws per input",
        fontsize=9,
    )
    fig.tight_layout()
    return fig
