"""The core layer: the types that every other layer shares.

* :mod:`mcdp.core.mechanism`: the :class:`Mechanism` record and black boxes
  (:func:`~mcdp.core.mechanism.from_callable`);
* :mod:`mcdp.core.attack`: the :class:`Attack` record and its
  :class:`AttackContext`;
* :mod:`mcdp.core.domains`: input domains and their neighbouring relations;
* :mod:`mcdp.core.records`: the result records and their provenance.

It imports nothing else of mcdp but the argument checks (:mod:`mcdp._validate`)
and the type aliases; every other module imports it, never the other way round.
"""

from mcdp.core.attack import Attack, AttackContext
from mcdp.core.domains import InputDomain
from mcdp.core.mechanism import Mechanism

__all__ = ["Attack", "AttackContext", "InputDomain", "Mechanism"]
