"""What every result record stores about how it was made (STYLE §4.5)."""

from __future__ import annotations

from importlib import metadata

import jax

try:
    __version__ = metadata.version("mcdp")
except metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0"


def provenance(dtype: str) -> dict[str, object]:
    """The mcdp and jax versions, the backend and the x64 flag of a run."""
    return {
        "mcdp_version": __version__,
        "jax_version": jax.__version__,
        "backend": jax.default_backend(),
        "x64": dtype == "float64",
    }
