r"""Named pairs of neighbouring inputs, as ``(2, d)`` arrays.

An audit compares a mechanism on two inputs; these are the pairs it can name
(``pair="axis"``, ``--pair axis``), beside a user's own ``(2, d)`` array.

* The pairs of clipped embeddings: ``zeros-ones`` (the ACL 2022 sanity check),
  ``axis`` and ``diagonal``.
* StatDP's input patterns (Ding et al., CCS 2018, §5), as DP-Sniper's
  ``dpsniper/input/pattern_generator.py`` generates them (Bichsel et al., S&P 2021),
  for vectors of query answers; each also swapped (``-swapped``: the rows
  exchanged), since DP-Sniper audits both orders. The base vector is
  :math:`a = 1^d`; with :math:`h = \lfloor d/2 \rfloor`, the second row is

  ======================== ==============================================
  ``one-above``            :math:`(0, 1, \dots, 1)`
  ``one-below``            :math:`(2, 1, \dots, 1)`
  ``one-above-rest-below`` :math:`(2, 0, \dots, 0)`
  ``one-below-rest-above`` :math:`(0, 2, \dots, 2)`
  ``half-half``            :math:`(2^h, 0^{d-h})`
  ``all-above-all-below``  :math:`2^d` (DP-Sniper's "all above")
  ``all-below``            :math:`0^d` (DP-Sniper's "all below")
  ``x-shuffle``            rows :math:`(1^h, 0^{d-h})` and :math:`(0^h, 1^{d-h})`
  ======================== ==============================================

  The names follow DP-Sniper's comments (and the suite's specification): in
  ``one-above`` the first row is the one above. StatDP's own comments name the
  first two the other way round.
* The scalar pairs ``scalar-0-1`` and ``scalar-1-2`` (:math:`d = 1`): the only
  patterns DP-Sniper generates for one-dimensional inputs, ``one-above`` and
  ``one-below``, up to the order of the rows.
"""

from __future__ import annotations

import math

import numpy as np

from mcdp import _validate

PATTERNS = (
    "one-above",
    "one-below",
    "one-above-rest-below",
    "one-below-rest-above",
    "half-half",
    "all-above-all-below",
    "all-below",
    "x-shuffle",
)
SWAPPED = "-swapped"  # the suffix of a pattern with its rows exchanged
SCALAR_PAIRS = ("scalar-0-1", "scalar-1-2")
PAIRS = (
    ("zeros-ones", "axis", "diagonal")
    + tuple(p + s for p in PATTERNS for s in ("", SWAPPED))
    + SCALAR_PAIRS
)


def make_pair(name: str, dim: int, clip: float = 1.0) -> np.ndarray:
    r"""A named neighbouring pair as a ``(2, d)`` array.

    * ``zeros-ones``: :math:`0^d` and :math:`1^d` (the sanity check);
    * ``axis``: :math:`+C e_1` and :math:`-C e_1` (the L∞ worst case of clipped
      embeddings, :math:`\lVert x - x'\rVert_2 = 2C`);
    * ``diagonal``: :math:`\pm (C/\sqrt d)(1, \dots, 1)` (the L1 worst case,
      :math:`\lVert x - x'\rVert_1 = 2C\sqrt d`);
    * StatDP's patterns and the scalar pairs (the module's docstring); ``clip``
      does not enter them, and the scalar pairs need ``dim = 1``.
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
    if name == "diagonal":
        ones = np.full(dim, clip / math.sqrt(dim))
        return np.stack([ones, -ones])
    if name in SCALAR_PAIRS:
        if dim != 1:
            raise ValueError(f"Expected dim = 1 for pair {name!r}, got {dim}.")
        low = float(name.split("-")[1])
        return np.array([[low], [low + 1]])
    base = name.removesuffix(SWAPPED)
    pair = _pattern(base, dim)
    return pair[::-1].copy() if name.endswith(SWAPPED) else pair


def _pattern(name: str, dim: int) -> np.ndarray:
    half = dim // 2
    first = np.ones(dim)
    if name == "x-shuffle":
        first = np.concatenate([np.ones(half), np.zeros(dim - half)])
        second = 1 - first
    elif name == "half-half":
        second = np.concatenate([np.full(half, 2.0), np.zeros(dim - half)])
    else:
        head, rest = {
            "one-above": (0, 1),
            "one-below": (2, 1),
            "one-above-rest-below": (2, 0),
            "one-below-rest-above": (0, 2),
            "all-above-all-below": (2, 2),
            "all-below": (0, 0),
        }[name]
        second = np.full(dim, float(rest))
        second[0] = head
    return np.stack([first, second])
