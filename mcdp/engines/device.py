r"""The device engine: draw, attack and count a JAX mechanism inside one compiled loop.

The draws of input ``i`` in block ``b`` come from ``fold_in(fold_in(key, i), b)``. A
*chunk* is a number of consecutive blocks drawn at once (vmapped), and one compiled
call runs a ``fori_loop`` over chunks that carries only the outcome counts. So:

* memory is one chunk, however many draws (nothing but counts leaves the loop);
* the counts of a key do not depend on the chunk size or the call size, because
  every block has its own key and blocks past the requested number of draws are
  masked out;
* counts stay exact: each call counts fewer than :math:`2^{31}` draws in int32, and
  the loop adds the per-call totals as int64.

The blocks of a call are spread over every device of a one-axis mesh (on every host
of a ``jax.distributed`` run) and the counts summed across them (``psum``).
Mechanisms and attacks are plain functions, passed as static arguments; parameters
are pytrees of arrays, so new keys, parameters or numbers of draws do not re-trace.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from mcdp import _validate
from mcdp._types import Array, PRNGKey
from mcdp.core.attack import Attack
from mcdp.core.mechanism import Mechanism, NoiseApart
from mcdp.engines.base import BLOCK_DRAWS, CountJob, device_tree, outcome_counts

CHUNK_SCALARS = 1 << 20  # CPU: scalars per chunk (per input): ~1e6 fits the caches
CALL_SCALARS = 1 << 27  # CPU: scalars per device per compiled call (per input)
# Accelerators: (largest d, scalars per chunk) rows, and scalars per call. Set from
# one H100 sweep of laplace at d = 1, 8, 32, 128 (threefry4x32, both dtypes): chunks
# of 2^24 scalars and calls of ~2^30 ran 3-4x the CPU sizes' 2.7-3.5e10 draws/s,
# except at d = 8, where 2^24 fell to 3.5e10 and 2^22 gave 9.3e10 (float32). Which
# d between 2 and 16 share that cliff is not measured: they take 2^22 too.
ACCELERATOR_CHUNKS = ((1, 1 << 24), (16, 1 << 22), (_validate.MAX_DIM, 1 << 24))
ACCELERATOR_CALL_SCALARS = 1 << 30
# How DeviceEngine.draw applies a transform to the blocks of a call: one block
# after another (True), batched over them (False), or by block on a CPU only
# (None). The values are the same up to rounding; on a CPU, XLA's code for the
# scorers' products over a batch of blocks is several times slower (the portfolio's
# selection draws, benchmarks/bench_selection.py); an accelerator keeps the batch
# (by block is not measured there).
TRANSFORM_BY_BLOCK: bool | None = None
# How the counting loop draws and guesses the blocks of a chunk: one after another
# (True), batched (False), or, on a CPU, as the attack or the mechanism asks and
# batched elsewhere (None). The attack asks by `Attack.by_block`, which the MLP
# scorer sets: 3.4x faster counting on the 2-core CPU with its sums by block,
# 1.3-1.7x with its product since 3c59640; the other guesses ran 0.5-1.0x as fast
# by block (benchmarks/bench_guess.py, before DRAW_ONCE; drawn once, some ran
# faster by block, others slower: benchmarks/RESULTS.md, "Drawn once"; batched and
# drawn once, BATCH_ONCE, as fast as by block or faster on nine attacks of ten:
# benchmarks/bench_batch_once.py). The mechanism asks by
# `Mechanism.draws_by_block`, which the Sparse Vector variants with a cutoff set:
# svt2's candidates counted 1.4-1.6x as fast by block, the others' guesses 1.06-1.4x
# (bench_guess.py; RESULTS.md, "svt2's threshold draws made noise where read, and
# counted by block"). The counts are integer sums either way, of the guesses of the
# same scores up to rounding.
GUESS_BY_BLOCK: bool | None = None
# Whether DeviceEngine.draw's host arrays (the portfolio's training outputs, and the
# values of its selection draws, written once, call by call, then sorted and
# counted) are mapped in pages of the system's base size (True), allocated by NumPy
# (False: on Linux NumPy advises the kernel to back every array of 4 MB and more with
# transparent huge pages), or the first on a CPU only (None). The same values either
# way. On the 2-core CPU, in each fresh process's first audit at 1e8 (as a command's
# audit is), the selection draws took 1.76-1.92 s in base pages against 3.02-3.24 s
# (truncated-geometric), 3.09-3.22 against 4.00-4.10 (svt1) and 7.24-8.11 against
# 7.53-8.78 (prefix-sum): the kernel's huge-page faults took longer than the copies
# into them. The choice, which sorts them, took about as long
# (benchmarks/bench_host_pages.py; benchmarks/RESULTS.md, "The selection draws'
# host arrays in base pages"). An accelerator's host arrays stay NumPy's: not
# measured there.
HOST_PAGES_SMALL: bool | None = None
SMALL_PAGES_FROM = 1 << 22  # bytes: smaller arrays as NumPy allocates them
SMALL_CHUNK_BLOCKS = 16  # the chunk of runs of at most this many blocks per device
MESH_AXIS = "blocks"  # the device axis that the blocks of a run are spread over
# CPU: the most blocks per call of DeviceEngine.draw, for any d. The training and
# selection draws of audits from 1e5 draws (1e5 per input: 98 blocks, one call of
# 128) then run the programs of audits at 1e7 and 1e8, where for d < 8 a chunk's
# call (1024 blocks of one scalar, 204 of five) compiled others in the first audit
# of that size: snapping at 1e8 after one at 1e5 took 1.80-1.86 s against 2.38-2.40
# s, its preparation 0.61-0.66 s against 1.18-1.21 s (benchmarks/RESULTS.md, "The
# draws' calls of one size from 1e5 draws"). An accelerator's calls are not capped.
DRAW_CALL_BLOCKS = 128


def draw_call_blocks(dim: int, platform: str = "cpu") -> int:
    """The most blocks per call of :meth:`DeviceEngine.draw` for ``dim`` scalars per
    draw on ``platform``: a CPU chunk's (:func:`chunk_blocks_for`) on every
    platform, on a CPU at most :data:`DRAW_CALL_BLOCKS`. The draws do not depend on
    it: blocks are keyed by their index."""
    blocks = chunk_blocks_for(dim, "cpu")
    return min(blocks, DRAW_CALL_BLOCKS) if platform == "cpu" else blocks


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


# Whether the blocks drawn one after another (by block) are drawn inside a cond
# (see _drawn), so that XLA computes them once; the same outputs either way.
# Benchmarks switch it off to compare (benchmarks/bench_draw_once.py).
DRAW_ONCE = True
# Whether, on a CPU, the blocks that the engine draws batched (``vmap``) are drawn in
# one cond per chunk and input (see _drawn_batched), so that XLA computes them
# once; the same outputs either way. Counting at 1e7 draws on the 2-core CPU, the
# default's attack on ten suite cases: 2.2-2.6x as fast where the sampler is dear
# (numerical-svt, svt3, laplace-parallel, noisy-hist1), 1.3-1.9x for the learned
# scorers, 0.69-0.84x where the outputs are cheap or already a reduction's
# (report-noisy-max1 and 3, prefix-sum, rappor): 104 s in all, against 206 s
# batched and 118 s by block (benchmarks/bench_batch_once.py). A transform (the
# selection draws) stays by block: its scorers' products are faster so (svt1:
# 8.0 s by block, 38.7 s batched once, 73.1 s batched).
BATCH_ONCE = True
# Whether the blocks drawn once on a CPU (batched or by block) draw a sampler in two
# parts (Mechanism.noise_apart) part by part, and whether that noise is written
# flat in its cond (see _once_flat); benchmarks switch them off to compare.
NOISE_APART = True
FLAT_NOISE = True
# A block index that no run reaches (a run has at most 2^40 / BLOCK_DRAWS blocks).
_NO_BLOCK = 0xFFFFFFFF


def _once(drawn, index):
    """``drawn()`` inside a ``cond`` on ``index`` (a block's, never
    :data:`_NO_BLOCK`) whose two branches both call it, so that XLA computes its
    outputs once, whatever reads them. On a CPU it fuses an elementwise producer
    into each reduction that reads it, and the default stream's Threefry rounds
    with it: a guess or transform that reads the outputs in several reductions drew
    them several times (``optimization_barrier`` is expanded away there). Never
    under ``vmap``, where a cond runs both branches."""
    return jax.lax.cond(index != jnp.uint32(_NO_BLOCK), drawn, drawn)


def _once_flat(drawn, index):
    """``drawn()`` computed once (:func:`_once`), each of its arrays in one dimension
    inside the ``cond`` and in its own shape outside it: the same values. XLA's CPU
    code for an elementwise loop runs along the last axis of what it writes, and
    the noise of a block of outputs has a few coordinates there (``svt1``'s query
    noise of 2^20 outputs, written ``(2^20, 10)``, took 1.9x as long as written
    flat)."""
    if not FLAT_NOISE:
        return _once(drawn, index)
    shapes = jax.eval_shape(drawn)
    flat = _once(lambda: [a.reshape(-1) for a in jax.tree.leaves(drawn())], index)
    return jax.tree.unflatten(
        jax.tree.structure(shapes),
        [
            a.reshape(s.shape)
            for a, s in zip(flat, jax.tree.leaves(shapes), strict=True)
        ],
    )


def _drawn(sample, key, batch, params, block, once: bool):
    """``sample(fold_in(key, block), batch, params)``, drawn once where ``once``
    (the blocks go one after another; :func:`_once`). A sampler in two parts
    (:class:`~mcdp.core.mechanism.NoiseApart`) has its noise drawn once so
    (:func:`_once_flat`), and its outputs made from it outside the ``cond``. Either
    way the same outputs."""
    if once and isinstance(sample, NoiseApart):
        noise = _once_flat(
            lambda: sample.noise(jax.random.fold_in(key, block), batch, params), block
        )
        return sample.from_noise(batch, noise, params)

    def drawn():
        return sample(jax.random.fold_in(key, block), batch, params)

    return _once(drawn, block) if once else drawn()


def _drawn_batched(sample, key, batch, params, blocks):
    """The outputs of ``blocks`` (shape ``(len(blocks), BLOCK_DRAWS, ...)``), drawn
    batched (``vmap``) and once (:func:`_once`): what reads them reads memory. A
    sampler in two parts (:class:`~mcdp.core.mechanism.NoiseApart`) has its noise
    drawn once so (:func:`_once_flat`), and its outputs made from it outside the
    ``cond``."""
    apart = isinstance(sample, NoiseApart)
    draw = sample.noise if apart else sample

    def drawn():
        return jax.vmap(lambda b: _drawn(draw, key, batch, params, b, False))(blocks)

    if not apart:
        return _once(drawn, blocks[0])
    noise = _once_flat(drawn, blocks[0])
    return jax.vmap(lambda n: sample.from_noise(batch, n, params))(noise)


def _per_block(f, sample, key, x, params, blocks, by_block: bool, once: bool):
    """``f(outputs of block b, b)`` for each of ``blocks`` of one input ``x``,
    stacked: batched (``vmap``), one after another where ``by_block``, and each
    block (by block) or all of them (batched) drawn once where ``once``."""
    batch = jnp.broadcast_to(x, (BLOCK_DRAWS, x.shape[-1]))
    if once and not by_block:
        return jax.vmap(f)(_drawn_batched(sample, key, batch, params, blocks), blocks)

    def one(b):
        return f(_drawn(sample, key, batch, params, b, once), b)

    return _over(one, blocks, by_block)


def _sampler(mechanism: Mechanism, by_block: bool, platform: str) -> Any:
    """What the engine draws with: the mechanism's sampler in two parts
    (``noise_apart``) where it draws blocks once on a CPU, batched
    (:func:`_drawn_batched`) or by block (:func:`_drawn`), else its ``sample``. The
    same outputs either way. Drawn in one program, the Sparse Vector variants'
    Threefry rounds ran in the loop of their comparisons (``svt6``: 1.5x as long)
    and in each fusion that reads the noise's sign, and a histogram's noise was
    written along its few coordinates (benchmarks/RESULTS.md, "The Sparse Vector
    noise drawn apart" and "The noise drawn apart, flat")."""
    apart = mechanism.noise_apart
    drawn_apart = NOISE_APART and platform == "cpu" and _once_on(platform, by_block)
    return apart if apart is not None and drawn_apart else mechanism.sample


def _once_on(platform: str, by_block: bool) -> bool:
    """Whether blocks are drawn once: by block where :data:`DRAW_ONCE`, batched on
    a CPU where :data:`BATCH_ONCE`."""
    return DRAW_ONCE if by_block else BATCH_ONCE and platform == "cpu"


def _over(f, leaves, by_block: bool):
    """``f`` over the leading axis of ``leaves``: one after another (``lax.map``)
    where ``by_block``, else batched (``vmap``)."""
    return jax.lax.map(f, leaves) if by_block else jax.vmap(f)(leaves)


@partial(
    jax.jit,
    static_argnames=("sample", "attack", "chunk_blocks", "mesh", "by_block", "once"),
)
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
    by_block: bool = False,
    once: bool = False,
) -> Array:
    """Counts the outcomes of ``num_chunks`` chunks per device from ``first_block``.

    Device ``j`` of the ``D`` devices in ``mesh`` draws the chunks ``j, j + D, j +
    2D, ...`` after ``first_block``; the per-device counts are summed across devices
    (``psum``), so every block is counted once whatever ``D`` is. Rows with global
    index ``>= num_draws`` (``num_draws_blocks`` full blocks plus ``remainder`` rows)
    are masked out. Returns int32 counts of shape ``(num_inputs, num_outcomes)``,
    replicated on every device. The blocks are drawn and guessed batched, or one
    after another where ``by_block``, each block (by block) or each chunk's blocks
    of an input (batched, the inputs then one after another) drawn once where
    ``once`` (:func:`_per_block`).
    """
    num_devices = mesh.size

    def per_device(keys, xs, params, first_block, num_chunks, full, remainder, aux):
        device = jax.lax.axis_index(MESH_AXIS).astype(jnp.uint32)
        row = jnp.arange(BLOCK_DRAWS, dtype=jnp.uint32)
        offsets = jnp.arange(chunk_blocks, dtype=jnp.uint32)

        def guessed_counts(y, block):
            valid = (block < full) | ((block == full) & (row < remainder))
            return outcome_counts(attack.guess(y, aux), valid, attack.num_outcomes)

        def chunk_counts(c, counts):
            chunk = c.astype(jnp.uint32) * num_devices + device
            blocks = first_block + chunk * chunk_blocks + offsets

            def per_input(key_x):
                key, x = key_x
                per_block = _per_block(
                    guessed_counts, sample, key, x, params, blocks, by_block, once
                )
                return jnp.sum(per_block, axis=0, dtype=jnp.int32)

            # inputs one after another where a cond draws: never under vmap
            return counts + _over(per_input, (keys, xs), by_block or once)

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


def _input_keys(key: PRNGKey, num_inputs: int) -> PRNGKey:
    """``fold_in(key, i)`` for every input ``i``."""
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(
        jnp.arange(num_inputs, dtype=jnp.uint32)
    )


@dataclass(frozen=True)
class DeviceEngine:
    """Runs a JAX mechanism on devices (:class:`mcdp.engines.base.Engine`).

    Attributes:
      devices: the devices that share the blocks (default: ``jax.devices()``, every
        device of the default backend, on every host of a ``jax.distributed`` run);
        the counts are the same for any number of devices.
      chunk_blocks: blocks per chunk (default: :func:`default_sizes` of the
        devices' platform, about 1e6 scalars on a CPU); any value gives the same
        counts.
      call_chunks: chunks per device per compiled call (default: about 1.3e8
        scalars per device per call on a CPU, 1e9 on an accelerator). A run's first
        call draws one chunk per device and each next call twice as many, up to
        ``call_chunks``: the first counts come soon after the compile (a progress
        bar moves, Ctrl-C keeps them), for a few calls more in all.
    """

    devices: Sequence[jax.Device] | None = None
    chunk_blocks: int | None = None
    call_chunks: int | None = None

    def count(
        self, job: CountJob, first_block: int
    ) -> Iterator[tuple[int, np.ndarray]]:
        mesh = _mesh(self.devices)
        platform = mesh.devices.flat[0].platform
        num_devices = mesh.size
        num_inputs, dim = job.xs.shape
        full_blocks, remainder = divmod(job.num_draws, BLOCK_DRAWS)
        total_blocks = full_blocks + (remainder > 0)
        chunk_blocks = self.chunk_blocks
        if not chunk_blocks:
            chunk_blocks = chunk_blocks_for(dim, platform)
            if -(-total_blocks // num_devices) <= SMALL_CHUNK_BLOCKS:
                # a small run (a test, a screening) need not draw a whole chunk; one
                # small size, so that new numbers of draws still do not re-trace
                chunk_blocks = min(chunk_blocks, SMALL_CHUNK_BLOCKS)
        call_chunks = self.call_chunks or max(
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
        # the compiled program depends on what the attack computes, not on what it
        # says about itself: equal guesses share one compile whatever their events
        attack = job.attack
        kernel = Attack(attack.name, attack.num_outcomes, attack.guess)
        by_block = GUESS_BY_BLOCK
        if by_block is None:
            asked = attack.by_block or job.mechanism.draws_by_block
            by_block = asked and platform == "cpu"
        x64 = job.dtype == "float64"
        with jax.enable_x64(x64):
            # every input is replicated on every device of the mesh (on every host)
            constants = _replicate(
                mesh,
                (
                    _input_keys(job.key, num_inputs),
                    jnp.asarray(job.xs, dtype=job.dtype),
                    device_tree(job.params, job.dtype),
                    jnp.uint32(full_blocks),
                    jnp.uint32(remainder),
                    device_tree(job.aux, job.dtype),
                ),
            )
        keys_d, xs_d, params_d, full_d, remainder_d, aux_d = constants
        block = first_block
        ramp = 1  # the first call draws one chunk per device, each next one twice
        while block < total_blocks:  # as many, up to call_chunks: early progress
            remaining_chunks = -(-(total_blocks - block) // chunk_blocks)
            chunks = min(call_chunks, ramp, -(-remaining_chunks // num_devices))
            ramp *= 2
            with jax.enable_x64(x64):  # only around device work: the caller's code
                counts = _count_impl(  # between yields keeps its own setting
                    keys_d,
                    xs_d,
                    params_d,
                    *_replicate(mesh, (jnp.uint32(block), jnp.int32(chunks))),
                    full_d,
                    remainder_d,
                    aux_d,
                    sample=_sampler(job.mechanism, by_block, platform),
                    attack=kernel,
                    chunk_blocks=chunk_blocks,
                    mesh=mesh,
                    by_block=by_block,
                    once=_once_on(platform, by_block),
                )
                # replicated: this host's first copy is the sum over all devices
                added = np.asarray(counts.addressable_data(0), dtype=np.int64)
            block += chunks * num_devices * chunk_blocks
            yield min(block * BLOCK_DRAWS, job.num_draws), added

    def draw(
        self,
        job: CountJob,
        transform: Callable[[Array, Any], Any] | None,
        first_draw: int = 0,
        out: Any = None,
    ) -> Any:
        num_inputs, dim = job.xs.shape
        # the blocks that hold draws first_draw .. first_draw + num_draws - 1, the
        # first `skip` draws of the first one cut off below
        start_block, skip = divmod(first_draw, BLOCK_DRAWS)
        total_blocks = -(-(skip + job.num_draws) // BLOCK_DRAWS)
        per_call = draw_call_blocks(dim, jax.default_backend())
        with jax.enable_x64(job.dtype == "float64"):
            keys = _input_keys(job.key, num_inputs)
            xs_d = jnp.asarray(job.xs, dtype=job.dtype)
            params_d = device_tree(job.params, job.dtype)
            aux_d = device_tree(job.aux, job.dtype)
            # every call draws the same number of blocks (one compile), the last one
            # past the end where it must: blocks are keyed by index, so the extra
            # ones change none of the others, and they are cut off below
            count = call_blocks(total_blocks, per_call)
            by_block = _on_cpu_unless_set(TRANSFORM_BY_BLOCK) and transform is not None
            once = _once_on(jax.default_backend(), by_block) and transform is not None
            sample = job.mechanism.sample
            if once:
                sample = _sampler(job.mechanism, by_block, jax.default_backend())
            whole = out  # each array of all the draws, filled call by call
            pending = None  # the last call's outputs, on their way to the host
            for first in range(start_block, start_block + total_blocks, count):
                called = _draw_impl(
                    keys, xs_d, params_d, jnp.uint32(first), aux_d,
                    sample=sample, transform=transform or _identity,
                    num_blocks=count, by_block=by_block, once=once,
                )  # fmt: skip
                jax.tree.map(lambda v: v.copy_to_host_async(), called)
                if whole is None:
                    whole = jax.tree.map(
                        lambda v: host_array(
                            (num_inputs, job.num_draws) + v.shape[2:], v.dtype
                        ),
                        called,
                    )
                if pending is not None:  # read while the device draws this call
                    _fill(whole, *pending, job.num_draws)
                pending = called, (first - start_block) * BLOCK_DRAWS - skip
            _fill(whole, *pending, job.num_draws)
        return whole


def host_array(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised host array (``np.empty``), in pages of the system's base
    size where :data:`HOST_PAGES_SMALL` says so: an anonymous ``mmap``, which NumPy
    does not advise the kernel to back with transparent huge pages."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if not _on_cpu_unless_set(HOST_PAGES_SMALL) or nbytes < SMALL_PAGES_FROM:
        return np.empty(shape, dtype)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype).reshape(shape)


def _on_cpu_unless_set(setting: bool | None) -> bool:
    """A switch of this module: ``setting``, or where it is None, whether JAX runs
    on a CPU."""
    return jax.default_backend() == "cpu" if setting is None else setting


def _fill(whole: Any, out: Any, start: int, num_draws: int) -> None:
    """Copies the rows of ``out`` (a call's arrays, from row ``start``) into
    ``whole`` on the host, those before row 0 and past ``num_draws`` cut off.
    Each call's transfer is started as soon as the call is dispatched, read while
    the next one runs, and freed once copied, so that the host reuses its memory,
    where keeping the parts to concatenate them at the end wrote every value to
    fresh memory twice.
    On an H200 the seven arrays of ``truncated-geometric``'s selection draws (2 x
    1e7 values each) came to the host in 0.71-0.87 s, against 1.24-1.29 s with
    the parts concatenated (benchmarks/RESULTS.md, "GPU: the three misses of
    target 5 again, and the selection draws on the host")."""

    def one(w, v):
        low, stop = max(start, 0), min(start + v.shape[1], num_draws)
        w[:, low:stop] = np.asarray(v)[:, low - start : stop - start]

    jax.tree.map(one, whole, out)


def call_blocks(total_blocks: int, per_call: int) -> int:
    """Blocks per call of :meth:`DeviceEngine.draw`: ``per_call``, or for fewer
    blocks in all the least power of two that holds them. So the number, which
    each compiled program is for, does not follow the draws: on a CPU the
    selection draws of audits at 1e5 (98 blocks on one call's 128,
    :func:`draw_call_blocks`), 1e7 (977) and 1e8 (8192) run one program, where
    ``min(per_call, total_blocks)`` compiled another for each."""
    return min(per_call, 1 << max(0, total_blocks - 1).bit_length())


def _identity(y, aux):
    del aux
    return y


@partial(
    jax.jit,
    static_argnames=("sample", "transform", "num_blocks", "by_block", "once"),
)
def _draw_impl(
    keys, xs, params, first_block, aux, *, sample, transform, num_blocks,
    by_block=False, once=False,
):  # fmt: skip
    """``transform(sample(...), aux)`` of ``num_blocks`` blocks per input from
    ``first_block``: shape ``(num_inputs, num_blocks * BLOCK_DRAWS, ...)`` (each
    array's, where ``transform`` returns a tuple or other pytree of arrays); the
    blocks batched (``vmap``), or one after another where ``by_block``, drawn once
    where ``once``, by block or all of an input's at once (:func:`_per_block`)."""
    blocks = first_block + jnp.arange(num_blocks, dtype=jnp.uint32)

    def transformed(y, b):
        del b
        return transform(y, aux)

    def per_input(key_x):
        key, x = key_x
        out = _per_block(
            transformed, sample, key, x, params, blocks, by_block, once
        )  # fmt: skip
        return jax.tree.map(
            lambda v: v.reshape((num_blocks * BLOCK_DRAWS,) + v.shape[2:]), out
        )

    return _over(per_input, (keys, xs), by_block or once)
