r"""Named pairs of neighbouring inputs, as ``(2, d)`` arrays.

An audit compares a mechanism on two inputs; these are the pairs it can name
(``pair="axis"``, ``--pair axis``), beside a user's own ``(2, d)`` array.
"""

from __future__ import annotations

import math

import numpy as np

from mcdp import _validate

PAIRS = ("zeros-ones", "axis", "diagonal")


def make_pair(name: str, dim: int, clip: float = 1.0) -> np.ndarray:
    r"""A named neighbouring pair as a ``(2, d)`` array.

    * ``zeros-ones``: :math:`0^d` and :math:`1^d` (the sanity check);
    * ``axis``: :math:`+C e_1` and :math:`-C e_1` (the L∞ worst case of clipped
      embeddings, :math:`\lVert x - x'\rVert_2 = 2C`);
    * ``diagonal``: :math:`\pm (C/\sqrt d)(1, \dots, 1)` (the L1 worst case,
      :math:`\lVert x - x'\rVert_1 = 2C\sqrt d`).
    """
    _validate.one_of("pair", name, PAIRS)
    dim = _validate.integer("dim", dim, low=1, high=_validate.MAX_DIM)
    clip = _validate.positive("clip", clip)
    if name == "zeros-ones":
        return np.stack([np.zeros(dim), np.ones(dim)])
    if name == "axis":
        e1 = np.zeros(dim)
        e1[0] = clip
        return np.stack([e1, -e1])
    ones = np.full(dim, clip / math.sqrt(dim))
    return np.stack([ones, -ones])
