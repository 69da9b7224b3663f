r"""The streaming engine: draw, attack and count inside one compiled loop.

Randomness is fixed per *block* of :data:`BLOCK_DRAWS` draws: the draws of input
``i`` in block ``b`` come from ``fold_in(fold_in(key, i), b)``. A *chunk* is a
number of consecutive blocks drawn at once (vmapped), and one compiled call runs a
``fori_loop`` over chunks that carries only the outcome counts. So:

* memory is one chunk, however many draws (nothing but counts leaves the loop);
* the counts of a seed do not depend on the chunk size or the call size, because
  every block has its own key and blocks past the requested number of draws are
  masked out;
* counts stay exact: each call counts fewer than :math:`2^{31}` draws in int32, and
  the host adds the per-call totals as Python ints.

This module is the only jit boundary of the audits (the EMNLP 2021 computations,
:mod:`mcdp.violations` and :mod:`mcdp.sensitivity`, compile loops of their own).
Mechanisms and attacks are plain functions, passed as static arguments; parameters
are pytrees of arrays, so new keys, parameters or numbers of draws do not re-trace.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from mcdp import _validate
from mcdp import prng as prng_module
from mcdp._types import Array, PRNGKey
from mcdp.attacks import Attack
from mcdp.mechanisms import Mechanism

BLOCK_DRAWS = 1024  # draws per key; changing it changes every stream, so it is fixed
PRNG_IMPL = prng_module.DEFAULT  # the stream of a seed; see :func:`key`
PRNG_IMPLS = prng_module.STREAMS  # the streams a seed can mean
CHUNK_SCALARS = 1 << 20  # CPU: scalars per chunk (per input): ~1e6 fits the caches
CALL_SCALARS = 1 << 27  # CPU: scalars per device per compiled call (per input)
# Accelerators: (largest d, scalars per chunk) rows, and scalars per call. Set from
# one H100 sweep of laplace at d = 1, 8, 32, 128 (threefry4x32, both dtypes): chunks
# of 2^24 scalars and calls of ~2^30 ran 3-4x the CPU sizes' 2.7-3.5e10 draws/s,
# except at d = 8, where 2^24 fell to 3.5e10 and 2^22 gave 9.3e10 (float32). Which
# d between 2 and 16 share that cliff is not measured: they take 2^22 too.
ACCELERATOR_CHUNKS = ((1, 1 << 24), (16, 1 << 22), (_validate.MAX_DIM, 1 << 24))
ACCELERATOR_CALL_SCALARS = 1 << 30
SMALL_CHUNK_BLOCKS = 16  # the chunk of runs of at most this many blocks per device
MESH_AXIS = "blocks"  # the device axis that the blocks of a run are spread over
DTYPES = _validate.DTYPES


def key(seed: int, prng: str = PRNG_IMPL) -> PRNGKey:
    """The root key of a seed: ``jax.random.key(seed, impl=...)`` of stream ``prng``.

    Every seed of mcdp means the ``threefry4x32`` stream by default, on every
    backend: the counter-based Threefry of JAX's default (``threefry2x32``) with four
    32-bit words per call, integer adds, rotations and xors only, so its bits do not
    depend on the backend, and it shards like the default. In the engine on a 2-core
    AVX-512 CPU it drew float32 Laplace noise 1.7-2.1x as fast as the default at
    d >= 8 (0.6x at d = 1), and float64 noise at 0.9-1.0x at d >= 8 (1.6x at d = 1;
    ``benchmarks/RESULTS.md``); philox was no faster, ``rbg`` was 5x slower in
    float32 and differs between backends. ``prng="splitmix64"`` is the faster,
    weaker stream of :mod:`mcdp.prng`. Any key may be passed to the engine; only the
    seeds that mcdp turns into keys are bound to these choices.
    """
    return prng_module.key(seed, prng)


def cell_key(seed: int, identity: str, prng: str = PRNG_IMPL) -> PRNGKey:
    """The key of one audit: ``fold_in(key(seed, prng), crc32(identity))``.

    ``identity`` names what is audited (experiment, mechanism, epsilon, d, ...), so
    an audit gives the same counts whether it runs alone or inside a grid, in any
    order. The callers' identity strings are part of their streams: fixed.
    """
    return jax.random.fold_in(key(seed, prng), zlib.crc32(identity.encode()))


class Progress(NamedTuple):
    """What the engine has counted so far: yielded after every compiled call."""

    draws: int  # draws done per input
    counts: np.ndarray  # (num_inputs, num_outcomes) int64 totals


def default_sizes(dim: int, platform: str = "cpu") -> tuple[int, int]:
    """``(chunk scalars, call scalars)`` per input for ``dim`` on ``platform``
    (``jax.Device.platform``): :data:`CHUNK_SCALARS` and :data:`CALL_SCALARS` on a
    CPU, :data:`ACCELERATOR_CHUNKS` and :data:`ACCELERATOR_CALL_SCALARS` elsewhere.
    The counts of a seed do not depend on them."""
    if platform == "cpu":
        return CHUNK_SCALARS, CALL_SCALARS
    chunk = next(scalars for top, scalars in ACCELERATOR_CHUNKS if dim <= top)
    return chunk, ACCELERATOR_CALL_SCALARS


def chunk_blocks_for(dim: int, platform: str = "cpu") -> int:
    """Blocks per chunk so that a chunk holds about the platform's chunk scalars
    (:func:`default_sizes`)."""
    return max(1, default_sizes(dim, platform)[0] // (BLOCK_DRAWS * dim))


@partial(jax.jit, static_argnames=("sample", "attack", "chunk_blocks", "mesh"))
def _count_impl(
    keys: PRNGKey,
    xs: Array,
    params: Any,
    first_block: Array,
    num_chunks: Array,
    num_draws_blocks: Array,
    remainder: Array,
    aux: Any,
    *,
    sample,
    attack: Attack,
    chunk_blocks: int,
    mesh: Mesh,
) -> Array:
    """Counts the outcomes of ``num_chunks`` chunks per device from ``first_block``.

    Device ``j`` of the ``D`` devices in ``mesh`` draws the chunks ``j, j + D, j +
    2D, ...`` after ``first_block``; the per-device counts are summed across devices
    (``psum``), so every block is counted once whatever ``D`` is. Rows with global
    index ``>= num_draws`` (``num_draws_blocks`` full blocks plus ``remainder`` rows)
    are masked out. Returns int32 counts of shape ``(num_inputs, num_outcomes)``,
    replicated on every device.
    """
    dim = xs.shape[-1]
    num_devices = mesh.size

    def per_device(keys, xs, params, first_block, num_chunks, full, remainder, aux):
        device = jax.lax.axis_index(MESH_AXIS).astype(jnp.uint32)
        outcomes = jnp.arange(attack.num_outcomes, dtype=jnp.int32)
        row = jnp.arange(BLOCK_DRAWS, dtype=jnp.uint32)
        offsets = jnp.arange(chunk_blocks, dtype=jnp.uint32)

        def block_counts(key, x, block):
            batch = jnp.broadcast_to(x, (BLOCK_DRAWS, dim))
            y = sample(jax.random.fold_in(key, block), batch, params)
            guess = attack.guess(y, aux)
            valid = (block < full) | ((block == full) & (row < remainder))
            if attack.num_outcomes == 2:
                # one sum over the draws, not one per outcome: where the guess is
                # elementwise in the draws (d = 1), XLA fuses the sampler into every
                # sum that reads it, so two sums drew everything twice
                ones = jnp.sum(jnp.where(valid, guess, 0), dtype=jnp.int32)
                n = jnp.sum(valid, dtype=jnp.int32)
                return jnp.stack([n - ones, ones])
            hits = (guess[:, None] == outcomes[None, :]) & valid[:, None]
            return jnp.sum(hits, axis=0, dtype=jnp.int32)

        def chunk_counts(c, counts):
            chunk = c.astype(jnp.uint32) * num_devices + device
            blocks = first_block + chunk * chunk_blocks + offsets
            per_input = jax.vmap(
                lambda key, x: jnp.sum(
                    jax.vmap(lambda b: block_counts(key, x, b))(blocks),
                    axis=0,
                    dtype=jnp.int32,
                )
            )(keys, xs)
            return counts + per_input

        init = jnp.zeros((xs.shape[0], attack.num_outcomes), dtype=jnp.int32)
        init = jax.lax.pcast(init, (MESH_AXIS,), to="varying")  # differs by device
        local = jax.lax.fori_loop(0, num_chunks, chunk_counts, init)
        return jax.lax.psum(local, MESH_AXIS)

    replicated = P()
    return jax.shard_map(
        per_device, mesh=mesh, in_specs=replicated, out_specs=replicated
    )(keys, xs, params, first_block, num_chunks, num_draws_blocks, remainder, aux)


def _mesh(devices: Sequence[jax.Device] | None) -> Mesh:
    """A one-axis mesh over ``devices`` (default: every device, on every host)."""
    devices = jax.devices() if devices is None else list(devices)
    if not devices:
        raise ValueError("Expected at least one device in devices, got none.")
    return Mesh(np.array(devices), (MESH_AXIS,))


def _replicate(mesh: Mesh, tree: Any) -> Any:
    """Places every leaf of ``tree`` on every device of ``mesh``, key arrays too.

    Leaves go through host NumPy: ``jax.device_put`` onto devices of other hosts
    takes host values (each host passes the same, which it checks), not arrays
    already placed on this host's devices.
    """
    sharding = NamedSharding(mesh, P())

    def leaf(v):
        if jax.dtypes.issubdtype(v.dtype, jax.dtypes.prng_key):
            data = jax.device_put(np.asarray(jax.random.key_data(v)), sharding)
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(v))
        return jax.device_put(np.asarray(v), sharding)

    return jax.tree.map(leaf, tree)


def _device_params(params: Any, dtype) -> Any:
    """Floating leaves become arrays of the run's dtype, integer leaves int32: one
    trace per dtype, whatever Python or NumPy types the caller used."""

    def leaf(v):
        kind = np.asarray(v).dtype.kind
        return jnp.asarray(v, dtype=jnp.int32 if kind in "biu" else dtype)

    return jax.tree.map(leaf, params)


def iter_counts(
    key: PRNGKey,
    mechanism: Mechanism,
    attack: Attack,
    xs: Array | np.ndarray,
    params: Any,
    num_draws: int,
    *,
    dtype: str = "float64",
    chunk_blocks: int | None = None,
    call_chunks: int | None = None,
    aux: Any = None,
    resume: Progress | None = None,
    devices: Sequence[jax.Device] | None = None,
) -> Iterator[Progress]:
    """Runs ``num_draws`` draws of ``mechanism`` on every row of ``xs``, streaming.

    Yields a :class:`Progress` after every compiled call, so a caller can show
    progress or stop early and keep what is counted (both inputs always have the same
    number of draws). The last item holds the totals.

    Args:
      key: the run's key; input ``i`` uses ``fold_in(key, i)``.
      mechanism: what to sample.
      attack: what to count.
      xs: ``(num_inputs, d)`` inputs, e.g. ``[0^d, 1^d]``.
      params: the mechanism's parameters (a pytree of floats or arrays).
      num_draws: draws per input, ``1 <= num_draws <= 2**40``.
      dtype: ``"float64"`` (default; the Laplace tails reach ~36 b) or ``"float32"``.
      chunk_blocks: blocks per chunk (default: :func:`default_sizes` of the
        devices' platform, about 1e6 scalars on a CPU); any value gives the same
        counts.
      call_chunks: chunks per device per compiled call (default: about 1.3e8
        scalars per device per call on a CPU, 1e9 on an accelerator).
      aux: the attack's data (a pytree; floats become arrays of ``dtype``).
      resume: a :class:`Progress` of an earlier run with the same key, mechanism,
        attack, inputs, parameters and dtype whose ``draws`` is a multiple of
        :data:`BLOCK_DRAWS` (every item but the last of a run is): the run goes on
        from there to ``num_draws`` and yields totals, the same counts as one run of
        ``num_draws`` from the start.
      devices: the devices that share the blocks (default: ``jax.devices()``, every
        device of the default backend, on every host of a ``jax.distributed`` run);
        the counts are the same for any number of devices.

    A black-box mechanism (``mechanism.host_sample``, made by
    :meth:`~mcdp.mechanisms.Mechanism.from_callable`) runs on the host through
    :mod:`mcdp.host`, with its own chunks and workers; ``chunk_blocks``,
    ``call_chunks`` and ``devices`` do not apply to it.
    """
    num_draws = _validate.integer(
        "num_draws", num_draws, low=1, high=_validate.MAX_DRAWS
    )
    dtype = _validate.one_of("dtype", dtype, DTYPES)
    xs_host = np.asarray(xs)
    if xs_host.ndim != 2 or 0 in xs_host.shape:
        raise ValueError(f"Expected xs of shape (num_inputs, d), got {xs_host.shape}.")
    num_inputs, dim = xs_host.shape
    if mechanism.host_sample is not None:  # a Python callable: mcdp.host
        yield from _iter_host_counts(
            key, mechanism, attack, xs_host, num_draws, dtype, aux, resume
        )
        return
    mesh = _mesh(devices)
    platform = mesh.devices.flat[0].platform
    num_devices = mesh.size
    full_blocks, remainder = divmod(num_draws, BLOCK_DRAWS)
    total_blocks = full_blocks + (remainder > 0)
    if not chunk_blocks:
        chunk_blocks = chunk_blocks_for(dim, platform)
        if -(-total_blocks // num_devices) <= SMALL_CHUNK_BLOCKS:
            # a small run (a test, a screening) need not draw a whole chunk; one
            # small size, so that new numbers of draws still do not re-trace
            chunk_blocks = min(chunk_blocks, SMALL_CHUNK_BLOCKS)
    call_chunks = call_chunks or max(
        1, default_sizes(dim, platform)[1] // (chunk_blocks * BLOCK_DRAWS * dim)
    )
    # int32 counts per call must not overflow
    call_chunks = min(
        call_chunks, (2**31 - 1) // (num_devices * chunk_blocks * BLOCK_DRAWS)
    )
    if call_chunks < 1:
        raise ValueError(
            f"Expected chunk_blocks * {BLOCK_DRAWS} * {num_devices} devices below "
            f"2**31 (the counts of one call), got chunk_blocks={chunk_blocks}."
        )
    totals = np.zeros((num_inputs, attack.num_outcomes), dtype=np.int64)
    block = 0
    if resume is not None:
        block, totals = _resume(resume, num_draws, totals.shape)

    # the compiled program depends on what the attack computes, not on what it says
    # about itself: equal guesses share one compile whatever their events' names
    kernel = Attack(attack.name, attack.num_outcomes, attack.guess)
    x64 = dtype == "float64"
    with jax.enable_x64(x64):
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(
            jnp.arange(num_inputs, dtype=jnp.uint32)
        )
        # every input is replicated on every device of the mesh (on every host)
        constants = _replicate(
            mesh,
            (
                keys,
                jnp.asarray(xs_host, dtype=dtype),
                _device_params(params, dtype),
                jnp.uint32(full_blocks),
                jnp.uint32(remainder),
                _device_params(aux, dtype),
            ),
        )
    while block < total_blocks:
        remaining_chunks = -(-(total_blocks - block) // chunk_blocks)
        chunks = min(call_chunks, -(-remaining_chunks // num_devices))  # per device
        keys_d, xs_d, params_d, full_d, remainder_d, aux_d = constants
        with jax.enable_x64(x64):  # only around device work: the caller's code
            counts = _count_impl(  # between yields keeps its own setting
                keys_d,
                xs_d,
                params_d,
                *_replicate(mesh, (jnp.uint32(block), jnp.int32(chunks))),
                full_d,
                remainder_d,
                aux_d,
                sample=mechanism.sample,
                attack=kernel,
                chunk_blocks=chunk_blocks,
                mesh=mesh,
            )
            # replicated: this host's first copy is the sum over all devices
            totals += np.asarray(counts.addressable_data(0), dtype=np.int64)
        block += chunks * num_devices * chunk_blocks
        yield Progress(min(block * BLOCK_DRAWS, num_draws), totals.copy())


def _iter_host_counts(key, mechanism, attack, xs, num_draws, dtype, aux, resume):
    from mcdp.host import iter_host_counts  # it imports this module

    totals = np.zeros((len(xs), attack.num_outcomes), dtype=np.int64)
    block = 0
    if resume is not None:
        block, totals = _resume(resume, num_draws, totals.shape)
    return iter_host_counts(
        key, mechanism, attack, xs.astype(np.float64), num_draws, dtype=dtype,
        aux=aux, first_draw=block * BLOCK_DRAWS, totals=totals,
    )  # fmt: skip


def _resume(
    resume: Progress, num_draws: int, shape: tuple[int, int]
) -> tuple[int, np.ndarray]:
    """The first block and the totals of a run resumed from ``resume``."""
    done = _validate.integer("resume.draws", resume.draws, low=0, high=num_draws)
    if done % BLOCK_DRAWS:
        raise ValueError(
            f"Expected resume.draws to be a multiple of {BLOCK_DRAWS}, got {done}: "
            "only whole blocks can be resumed."
        )
    counts = np.asarray(resume.counts)
    if counts.shape != shape or counts.dtype.kind not in "iu" or (counts < 0).any():
        raise ValueError(
            f"Expected resume.counts of shape {shape} with non-negative integers, "
            f"got {counts.dtype} of shape {counts.shape}."
        )
    if (counts.sum(axis=1) != done).any():
        raise ValueError(
            f"Expected every row of resume.counts to sum to resume.draws = {done}, "
            f"got {counts.sum(axis=1).tolist()}."
        )
    return done // BLOCK_DRAWS, counts.astype(np.int64)


def count_outcomes(
    key: PRNGKey,
    mechanism: Mechanism,
    attack: Attack,
    xs: Array | np.ndarray,
    params: Any,
    num_draws: int,
    **kwargs,
) -> np.ndarray:
    """The final counts of :func:`iter_counts`: ``(num_inputs, num_outcomes)`` int64."""
    *_, last = iter_counts(key, mechanism, attack, xs, params, num_draws, **kwargs)
    return last.counts


# --- raw outputs, for attacks that learn ---------------------------------------


@partial(jax.jit, static_argnames=("sample", "transform", "num_blocks"))
def _draw_impl(keys, xs, params, first_block, aux, *, sample, transform, num_blocks):
    """``transform(sample(...), aux)`` of ``num_blocks`` blocks per input from
    ``first_block``: shape ``(num_inputs, num_blocks * BLOCK_DRAWS, ...)``."""
    dim = xs.shape[-1]
    blocks = first_block + jnp.arange(num_blocks, dtype=jnp.uint32)

    def block(key, x, b):
        batch = jnp.broadcast_to(x, (BLOCK_DRAWS, dim))
        return transform(sample(jax.random.fold_in(key, b), batch, params), aux)

    def per_input(key, x):
        out = jax.vmap(lambda b: block(key, x, b))(blocks)
        return out.reshape((num_blocks * BLOCK_DRAWS,) + out.shape[2:])

    return jax.vmap(per_input)(keys, xs)


def _identity(y, aux):
    del aux
    return y


def draw(
    key: PRNGKey,
    mechanism: Mechanism,
    xs: Array | np.ndarray,
    params: Any,
    num_draws: int,
    *,
    dtype: str = "float64",
    transform=_identity,
    aux: Any = None,
) -> np.ndarray:
    """``num_draws`` outputs of ``mechanism`` on every row of ``xs``, to the host.

    The draws of input ``i`` come from the blocks of ``fold_in(key, i)``, as in
    :func:`iter_counts`: with the same key, they are the draws that the engine would
    count, so an attack that learns from them must use a key of its own (see
    :data:`mcdp.auditing.ATTACK_KEY_TAG`). ``transform(y, aux)`` maps each block of
    outputs on the device (a score, say), so only what it returns reaches the host;
    it must be a module-level function (it is a static argument).

    Returns:
      An array of shape ``(num_inputs, num_draws, ...)``.
    """
    num_draws = _validate.integer(
        "num_draws", num_draws, low=1, high=_validate.MAX_DRAWS
    )
    dtype = _validate.one_of("dtype", dtype, DTYPES)
    xs_host = np.asarray(xs)
    num_inputs, dim = xs_host.shape
    if mechanism.host_sample is not None:  # a Python callable: mcdp.host
        from mcdp.host import host_draw

        return host_draw(
            key, mechanism, xs_host.astype(np.float64), num_draws, dtype=dtype,
            transform=transform, aux=aux, identity=_identity,
        )  # fmt: skip
    total_blocks = -(-num_draws // BLOCK_DRAWS)
    per_call = max(1, CHUNK_SCALARS // (BLOCK_DRAWS * dim))  # blocks per call
    parts = []
    with jax.enable_x64(dtype == "float64"):
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(
            jnp.arange(num_inputs, dtype=jnp.uint32)
        )
        xs_d = jnp.asarray(xs_host, dtype=dtype)
        params_d, aux_d = _device_params(params, dtype), _device_params(aux, dtype)
        # every call draws the same number of blocks (one compile), the last one
        # past the end where it must: blocks are keyed by index, so the extra
        # ones change none of the others, and they are cut off below
        count = min(per_call, total_blocks)
        for first in range(0, total_blocks, count):
            out = _draw_impl(
                keys, xs_d, params_d, jnp.uint32(first), aux_d,
                sample=mechanism.sample, transform=transform, num_blocks=count,
            )  # fmt: skip
            parts.append(np.asarray(out))
    return np.concatenate(parts, axis=1)[:, :num_draws]
