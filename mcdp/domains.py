"""Input domains and relations, under the name that earlier versions used: they
live in :mod:`mcdp.core.domains`."""

from mcdp.core.domains import *  # noqa: F403
from mcdp.core.domains import __all__ as __all__
