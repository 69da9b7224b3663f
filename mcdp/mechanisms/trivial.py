"""The two controls of the sanity check: no privacy at all, and no information."""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from mcdp._types import Array, PRNGKey
from mcdp.core.mechanism import Mechanism
from mcdp.mechanisms._base import additive_log_round_one, identity


class NoParams(NamedTuple):
    pass


def none_sample(key: PRNGKey, x: Array, params: NoParams) -> Array:
    """Returns the input unchanged: infinite privacy loss."""
    del key, params
    return x


def random_sample(key: PRNGKey, x: Array, params: NoParams) -> Array:
    """Each coordinate an independent fair coin in {0, 1}, whatever the input."""
    del params
    return jax.random.bernoulli(key, 0.5, x.shape).astype(x.dtype)


def _none_log_sf(t, params):
    with np.errstate(divide="ignore"):
        ge = np.log((np.asarray(t) <= 0).astype(np.float64))
        lt = np.log((np.asarray(t) > 0).astype(np.float64))
    return ge, lt


def _coin_log_sf(t, params):
    # The output is 0 + coin; with t = 1/2 - 0 the coin rounds up with probability 1/2.
    t = np.asarray(t, dtype=np.float64)
    return np.full(t.shape, np.log(0.5)), np.full(t.shape, np.log(0.5))


NONE = Mechanism(
    name="none",
    sample=none_sample,
    calibrate_sanity_check=lambda epsilon, dim: NoParams(),
    log_round_one=additive_log_round_one(identity, _none_log_sf),
    claim="none",
    flaw="returns its input: not private for any epsilon",
)

RANDOM = Mechanism(
    name="random",
    sample=random_sample,
    calibrate_sanity_check=lambda epsilon, dim: NoParams(),
    log_round_one=additive_log_round_one(lambda x, p: np.zeros_like(x), _coin_log_sf),
    claim="0-DP",
)
