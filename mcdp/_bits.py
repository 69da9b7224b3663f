"""Floats told apart by their bit patterns, not their values: as floats, ``-0.0 ==
0.0``, but a release shows its bits, and its sign of zero can tell its inputs
apart. The portfolio keys discrete outputs so (:func:`mcdp.attacks.output_keys`),
and the exact law of the snapping mechanism counts its two zeros apart
(:func:`mcdp.mechanisms.float_laplace.snapping_levels`)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np


def bit_order(xp: Any, a: Any) -> Any:
    """The bit patterns of float ``a`` (a NumPy array where ``xp`` is NumPy, else
    a JAX array) as signed integers of their width, in the floats' order: each
    pattern its own integer, and -0.0 the one just below 0.0. On every other
    value they have the floats' order and equality; NaN lies past +-inf. The map
    is its own inverse on the integers (:func:`bit_floats`). Integers are
    returned as they are."""
    if not xp.issubdtype(a.dtype, xp.floating):
        return a
    signed = {2: xp.int16, 4: xp.int32, 8: xp.int64}[a.dtype.itemsize]
    bits = a.view(signed) if xp is np else jax.lax.bitcast_convert_type(a, signed)
    return _flip_negative(bits)


def _flip_negative(bits: Any) -> Any:
    """Signed integers with the bits after the sign flipped where it is set: so
    larger float magnitudes order lower there. Its own inverse."""
    width = 8 * bits.dtype.itemsize
    magnitude = np.iinfo(bits.dtype).max
    return bits ^ ((bits >> (width - 1)) & magnitude).astype(bits.dtype)


def bit_floats(ordered: np.ndarray, dtype: Any) -> np.ndarray:
    """The floats of ``dtype`` whose :func:`bit_order` is ``ordered``."""
    return _flip_negative(ordered).view(dtype)


def bit_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct bit patterns of float ``values``, in :func:`bit_order`'s order
    (``np.unique`` keeps one of -0.0 and 0.0)."""
    values = np.asarray(values)
    return bit_floats(np.unique(bit_order(np, values)), values.dtype)
