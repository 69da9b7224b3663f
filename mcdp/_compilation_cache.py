"""JAX's persistent compilation cache, on by default for every mcdp run.

A compiled engine program is written to the user's cache folder and read back by
the next process that compiles the same program (same mechanism, attack, shapes,
dtype, devices and jax version), so a repeated ``mcdp audit`` of one shape skips
compilation. The folder is ``$MCDP_CACHE_DIR`` if set, else
``$XDG_CACHE_HOME/mcdp/jax`` (``~/.cache/mcdp/jax``). ``MCDP_COMPILATION_CACHE=0``
turns it off; a cache folder that the user configured for JAX is left as it is.

Importing mcdp changes no JAX setting: :func:`enable` is called where a run starts
(a command of the CLI, :func:`mcdp.run_iter`, :func:`mcdp.search`, the counting
loop, the EMNLP 2021 computations), before its first compile.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

OFF_VALUES = ("0", "false", "no", "off")


def cache_dir() -> Path:
    """Where mcdp's compiled programs go (see the module docstring)."""
    if os.environ.get("MCDP_CACHE_DIR"):
        return Path(os.environ["MCDP_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mcdp" / "jax"


def enable() -> Path | None:
    """Points JAX's persistent cache at :func:`cache_dir`, unless turned off by
    ``MCDP_COMPILATION_CACHE=0`` or already configured; returns the folder in use,
    or None where the cache is off."""
    if os.environ.get("MCDP_COMPILATION_CACHE", "1").strip().lower() in OFF_VALUES:
        return None
    configured = jax.config.jax_compilation_cache_dir
    if configured:
        return Path(configured)
    folder = cache_dir()
    jax.config.update("jax_compilation_cache_dir", str(folder))
    # the engine compiles in about a second on a CPU: cache it, not only slow ones
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    return folder
