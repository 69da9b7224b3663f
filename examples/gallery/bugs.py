"""A gallery of the bug families that real DP libraries had, each beside its
corrected twin. Example mechanisms for audits, not part of mcdp's API.

Every function is ``fn(rng, data, n)``: ``n`` releases of a query on the dataset
``data`` (an ``(m, 1)`` float64 array of records the function is told lie in
[0, 1]), claimed 1-DP under add/remove (1.5-DP for the rounded scale). The buggy
ones are refuted by the default dataset search (``tests/test_gallery.py``;
``mcdp search --callable examples.gallery.bugs:NAME --domain add-remove:0:1
--epsilon 1``); the twins, whose noise is exact (the two-sided geometric on a grid,
so no float rounding leaks), are not.

=========================  ==================================================
bug                        what leaks
=========================  ==================================================
``mean_true_size``         the mean is divided by the true number of records,
                           so its noise scale reveals the size
``sum_unclipped``          the sensitivity assumes records in [0, 1], the code
                           never clips: a record at 1e6 moves the sum by 1e6
``sum_nan_clip``           ``np.clip`` lets NaN through: one NaN record makes
                           every release NaN
``counts_unique_keys``     categories read with ``np.unique``: the keys of the
                           release reveal a record
``mean_raises_on_empty``   the empty dataset raises, its neighbour does not
``sum_scale_rounded``      a floor division rounds the noise scale to 0
=========================  ==================================================
"""

from __future__ import annotations

import math

import numpy as np

EPSILON = 1.0
SCALE_EPSILON = 1.5  # the claim of the rounded-scale pair
GRID = 64  # the twins' records are rounded to multiples of 1/GRID


def _geometric(rng: np.random.Generator, scale: float, n: int) -> np.ndarray:
    """n draws of the two-sided geometric P(k) ~ exp(-|k| / scale), exactly."""
    p = -math.expm1(-1.0 / scale)
    return rng.geometric(p, n) - rng.geometric(p, n)


def _records(data: np.ndarray) -> np.ndarray:
    """The twins' records: NaN to 0, clipped to [0, 1], rounded to the grid (as
    integers of 1/GRID)."""
    x = np.nan_to_num(data[:, 0], nan=0.0, posinf=1.0, neginf=0.0)
    return np.round(np.clip(x, 0.0, 1.0) * GRID).astype(np.int64)


def _noisy_sum(rng, data, n, epsilon):
    """The sum of the records, in units of 1/GRID, with the two-sided geometric of
    sensitivity GRID (one record adds at most GRID units)."""
    return _records(data).sum() + _geometric(rng, GRID / epsilon, n)


# --- a mean divided by the true size -------------------------------------------------


def mean_true_size(rng, data, n):
    """BUG: clipped mean plus Lap(1 / (m epsilon)), m the true size (private under
    add/remove)."""
    m = max(len(data), 1)
    x = np.clip(np.nan_to_num(data[:, 0]), 0.0, 1.0)
    return x.sum() / m + rng.laplace(0.0, 1.0 / (m * EPSILON), n)


def mean_noisy_size(rng, data, n):
    """TWIN: a noisy sum over a noisy count, each with half the budget."""
    total = _noisy_sum(rng, data, n, EPSILON / 2)
    count = len(data) + _geometric(rng, 2 / EPSILON, n)
    return total / GRID / np.maximum(count, 1)


# --- clipping assumed, never enforced ------------------------------------------------


def sum_unclipped(rng, data, n):
    """BUG: sum plus noise for records in [0, 1], which it never enforces."""
    x = np.nan_to_num(data[:, 0], nan=0.0, posinf=0.0, neginf=0.0)
    return x.sum() + rng.laplace(0.0, 1.0 / EPSILON, n)


def sum_clipped(rng, data, n):
    """TWIN: records clipped (and put on a grid) before the exact noise."""
    return _noisy_sum(rng, data, n, EPSILON) / GRID


# --- NaN through np.clip -------------------------------------------------------------


def sum_nan_clip(rng, data, n):
    """BUG: np.clip(NaN) is NaN, so one NaN record makes the release NaN."""
    x = np.clip(data[:, 0], 0.0, 1.0)
    return np.round(x.sum() * GRID) / GRID + _geometric(rng, GRID / EPSILON, n) / GRID


def sum_nan_handled(rng, data, n):
    """TWIN: NaN replaced before clipping."""
    return _noisy_sum(rng, data, n, EPSILON) / GRID


# --- categories read from the data ---------------------------------------------------


def counts_unique_keys(rng, data, n):
    """BUG: a noisy count per category found in the data: the keys leak."""
    keys = np.unique(np.round(np.nan_to_num(data[:, 0]), 0))
    counts = [int(np.sum(np.round(data[:, 0]) == k)) for k in keys]
    noisy = (np.asarray(counts, np.int64) + _geometric(
        rng, 1 / EPSILON, n * len(keys)).reshape(n, len(keys))).tolist()  # fmt: skip
    names = [float(k) for k in keys]
    return [dict(zip(names, row, strict=True)) for row in noisy]


def counts_fixed_keys(rng, data, n):
    """TWIN: the categories 0 and 1 are fixed in advance (any other record counts in
    neither); one record moves one count by one."""
    x = np.round(np.nan_to_num(data[:, 0], nan=-1.0))
    counts = {k: int(np.sum(x == k)) for k in (0.0, 1.0)}
    noise = [_geometric(rng, 1 / EPSILON, n) for _ in counts]
    return [{k: c + int(z[i]) for (k, c), z in zip(counts.items(), noise, strict=True)}
            for i in range(n)]  # fmt: skip


# --- a call that raises on one dataset -----------------------------------------------


def mean_raises_on_empty(rng, data, n):
    """BUG: the mean of an empty dataset divides by zero; its neighbour answers."""
    if len(data) == 0:
        raise ZeroDivisionError("mean of no records")
    return mean_noisy_size(rng, data, n)


def mean_empty_handled(rng, data, n):
    """TWIN: the empty dataset answers like any other (the noisy count is >= 1)."""
    return mean_noisy_size(rng, data, n)


# --- a hyperparameter that rounds the noise away -------------------------------------


def sum_scale_rounded(rng, data, n):
    """BUG (claimed 1.5-DP): the noise scale computed as ``sensitivity //
    epsilon``, floor division, which is 1 // 1.5 = 0: no noise at all."""
    scale = 1 // SCALE_EPSILON  # 0.0
    total = _records(data).sum()
    noise = _geometric(rng, scale * GRID, n) if scale > 0 else np.zeros(n, np.int64)
    return (total + noise) / GRID


def sum_scale_exact(rng, data, n):
    """TWIN (claimed 1.5-DP): the scale kept as a float, sensitivity / epsilon."""
    return _noisy_sum(rng, data, n, SCALE_EPSILON) / GRID


BUGS = {
    "mean_true_size": mean_noisy_size,
    "sum_unclipped": sum_clipped,
    "sum_nan_clip": sum_nan_handled,
    "counts_unique_keys": counts_fixed_keys,
    "mean_raises_on_empty": mean_empty_handled,
    "sum_scale_rounded": sum_scale_exact,
}
"""Each bug's name and its corrected twin."""
CLAIMS = {"sum_scale_rounded": SCALE_EPSILON}
"""The claimed epsilon where it is not :data:`EPSILON`."""
