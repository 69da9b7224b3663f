"""The result records, under the name that earlier versions used: they live in
:mod:`mcdp.core.records`."""

from mcdp.core.records import *  # noqa: F403
from mcdp.core.records import __all__ as __all__
