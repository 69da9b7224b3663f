"""What every result record stores about how it was made (STYLE §4.5)."""

from __future__ import annotations

from importlib import metadata

import jax

from mcdp.sampling import PRNG_IMPL

try:
    __version__ = metadata.version("mcdp")
except metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0"


def provenance(dtype: str, prng: str = PRNG_IMPL) -> dict[str, object]:
    """The mcdp and jax versions, the backend, the x64 flag and the PRNG of a run."""
    return {
        "mcdp_version": __version__,
        "jax_version": jax.__version__,
        "backend": jax.default_backend(),
        "x64": dtype == "float64",
        "prng_impl": prng,
    }
