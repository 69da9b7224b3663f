r"""Two pure-NumPy versions of the ACL 2022 sanity check, as baselines.

The experiment: the inputs are ``D = 0^d`` and ``D' = 1^d``; each is run through the
mechanism ``num_draws`` times; the attacker rounds every output coordinate
(``< 0.5`` -> 0, otherwise 1, NaN -> 1) and guesses 1 iff more than ``d / 2``
coordinates rounded to 1 (the mean rounded half-to-even, so a tie guesses 0). Both
functions return the ``(2, 2)`` int64 counts ``[[D->0, D->1], [D'->0, D'->1]]``, the
frequency matrix of the sanity check.

Mechanisms (:data:`MECHANISMS`), with their parametrisation in the sanity check:

* ``laplace``: :math:`\eta = -b\,\mathrm{sgn}(u - \tfrac12)\ln(1 - 2|u - \tfrac12|)`,
  :math:`u \sim U(0, 1)`, scale :math:`b = d/\varepsilon`;
* ``adept``: the same noise with :math:`b = 1/\varepsilon` and no clipping;
* ``dptext``: DPText's sampler :math:`\eta = -b\,\mathrm{sgn}(u)\ln(1 - 2|u|)` with
  NaN -> 0 (the NaN policy ``zero``), :math:`b = d/\varepsilon`.

The two implementations:

* :func:`reference_port` follows the reference code of the paper: it materialises
  the whole ``(N, d)`` input, uniform, noise, output and rounded arrays of a dataset
  at once, with the reference's expressions and their temporaries, so every step
  writes and reads arrays of hundreds of MB in fresh memory, on one core.
* :func:`best_numpy` computes the same noise with the same inverse CDF and log (on
  the uniform moved to the middle of its cell, as mcdp does), but chunk by chunk in
  preallocated cache-sized buffers, with in-place ufuncs, one worker thread per
  core and one bit generator per thread (NumPy releases the GIL in its ufunc loops
  and bit generators, so the threads run in parallel).

``python benchmarks/baselines.py`` times the variants of :func:`best_numpy`
(bit generator, source of the uniforms, chunk size); see its ``--help``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

MECHANISMS = ("laplace", "adept", "dptext")
DTYPES = ("float64", "float32")
BIT_GENERATORS = ("SFC64", "PCG64", "PCG64DXSM", "Philox", "MT19937")
UNIFORMS = ("random", "bits")
CHUNK_SCALARS = 1 << 18  # scalars per chunk and thread of best_numpy
# the fastest variant per dtype on this 2-core CPU (see best_numpy's docstring)
DEFAULT_UNIFORMS = {"float32": "bits", "float64": "random"}
DEFAULT_BIT_GENERATOR = "SFC64"
# mantissa bits of NumPy's uniforms: k 2^-m for k = 0 .. 2^m - 1
_UNIFORM_BITS = {"float32": 24, "float64": 53}
_INT = {"float32": np.int32, "float64": np.int64}
_UINT = {"float32": np.uint32, "float64": np.uint64}
_SWAR_MAX_DIM = 255  # per-row byte sums must fit in one byte
_SWAR_ONES = np.uint64(0x0101_0101_0101_0101)


def e2_scale(mechanism: str, epsilon: float, dim: int) -> float:
    """The Laplace scale ``b`` that the reference code uses in the sanity check.

    Args:
      mechanism: one of :data:`MECHANISMS`.
      epsilon: the privacy parameter.
      dim: the dimension ``d``.

    Returns:
      ``d / epsilon`` for ``laplace`` and ``dptext``, ``1 / epsilon`` for ``adept``.

    Raises:
      ValueError: for an unknown mechanism or a non-positive ``epsilon`` or ``dim``.
    """
    if mechanism not in MECHANISMS:
        raise ValueError(
            f"Unknown mechanism {mechanism!r}; expected one of: "
            f"{', '.join(MECHANISMS)}."
        )
    if not epsilon > 0 or not math.isfinite(epsilon):
        raise ValueError(f"Expected epsilon > 0 (finite), got {epsilon!r}.")
    if dim < 1:
        raise ValueError(f"Expected dim >= 1, got {dim!r}.")
    return (1.0 if mechanism == "adept" else float(dim)) / epsilon


def _check(dtype: str, num_draws: int) -> np.dtype:
    if dtype not in DTYPES:
        raise ValueError(f"Expected dtype in {DTYPES}, got {dtype!r}.")
    if num_draws < 1:
        raise ValueError(f"Expected num_draws >= 1, got {num_draws!r}.")
    return np.dtype(dtype)


def reference_port(
    mechanism: str,
    epsilon: float,
    dim: int,
    num_draws: int,
    *,
    dtype: str = "float64",
    seed: int = 0,
) -> np.ndarray:
    """The reference algorithm of ACL 2022, ported line by line to a NumPy Generator.

    For each dataset it builds the ``(N, d)`` input array, draws ``N d`` uniforms at
    once, applies the reference's inverse CDF (the same expression, so the same
    temporaries), scales and adds, rounds every coordinate with
    ``np.where(y < 0.5, 0, 1)``, takes the mean per row and rounds it with
    ``np.round``. Nothing is chunked: peak memory grows with ``N d``, as in the
    reference (in float64, 40 bytes per scalar at d = 128 and 56 at d = 1 above
    the interpreter's, from ``ru_maxrss`` with ``N d = 5e7``).

    Differences from the reference, none of which makes the port slower: the uniforms
    come from ``np.random.default_rng(seed).random`` (PCG64) instead of the legacy
    global ``np.random.uniform`` (MT19937); the rounded guesses are counted directly
    instead of being tiled back to ``(N, d)`` first (which multiplies every count by
    ``d``); every array is released as soon as it is no longer needed (the reference
    keeps a dataset's input and rounded arrays alive longer); the ``N`` draws run in
    one go (the reference splits ``d > 16`` into 10 runs of ``10^6`` rows and keeps
    the counts of the last run only); nothing is printed. The float32 variant runs
    the same code on float32 arrays (``random(dtype=np.float32)``); the reference is
    float64 only.

    Args:
      mechanism: one of :data:`MECHANISMS`.
      epsilon: the privacy parameter; the scale is :func:`e2_scale`.
      dim: the dimension ``d``.
      num_draws: draws ``N`` per dataset.
      dtype: ``"float64"`` (the reference) or ``"float32"``.
      seed: seed of ``np.random.default_rng``.

    Returns:
      ``(2, 2)`` int64 counts ``[[D->0, D->1], [D'->0, D'->1]]``.
    """
    b = e2_scale(mechanism, epsilon, dim)
    np_dtype = _check(dtype, num_draws)
    rng = np.random.default_rng(seed)
    counts = np.zeros((2, 2), dtype=np.int64)
    for i, fill in enumerate((np.zeros, np.ones)):
        data = fill((num_draws, dim), dtype=np_dtype)
        x = rng.random(data.size, dtype=np_dtype)
        # log(0) and, for DPText, the log of a negative number: -inf and NaN, as in
        # the reference (which prints NumPy's warnings); DPText's u = 1/2 gives +inf,
        # which nan_to_num makes the largest float and the scaling makes inf again
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if mechanism == "dptext":
                result = -np.sign(x) * np.log(1 - 2 * np.abs(x))
                np.nan_to_num(result, False, nan=0.0)
            else:
                result = -np.sign(x - 0.5) * np.log(1 - 2 * np.abs(x - 0.5))
            del x
            zero_mean_samples = result.reshape(data.shape)
            privatized = data + b * zero_mean_samples
        del data, result, zero_mean_samples
        truncated = np.where(privatized < 0.5, 0, 1)
        del privatized
        mean_value = np.mean(truncated, axis=1)
        del truncated
        reconstructed = np.round(mean_value).astype(int)
        counts[i, 0] = np.sum(np.where(reconstructed == 0, 1, 0))
        counts[i, 1] = np.sum(np.where(reconstructed == 1, 1, 0))
    return counts


class _Worker:
    """One thread's buffers and bit generator; counts its share of the draws.

    The noise of a chunk is computed in place in one float buffer, plus one integer
    buffer of the same size for sign bits:

    1. uniforms ``u = k 2^-m`` (``k`` uniform on ``0 .. 2^m - 1``, ``m`` = 24 in
       float32 and 53 in float64), either from ``Generator.random(out=...)`` or from
       the raw 64-bit words of the bit generator (``random_raw``; in float32 each
       word gives two 32-bit halves), shifted right and scaled, the same arithmetic
       as ``Generator.random``;
    2. Laplace: ``c = u - (1/2 - 2^-(m+1))``, the uniform moved to the middle of its
       cell (as :func:`mcdp.mechanisms._base.uniform_midpoint`), so ``c`` is exact,
       never 0 or +-1/2, and both tails stop at ``ln 2^m``; then
       ``-sgn(c) ln(1 - 2|c|)``, the sign applied by XOR-ing the sign bit of ``c``
       into ``ln(1 - 2|c|) <= 0`` (exact, and cheaper here than ``np.copysign``);
       DPText: ``-ln(1 - 2u)`` (``sgn(u) = 1`` except at ``u = 0``, where the log is
       0 anyway), with the NaNs of ``u > 1/2`` replaced by 0 through a mask made
       from the sign bit of ``1 - 2u``, so that no log of a negative number is
       taken (NumPy's float64 log is several times slower on those);
    3. ``y = x + b * noise``, ``y < 0.5`` into a bool buffer, and the votes: the
       bools of a row are summed as bytes of 64-bit words (rows padded with zeros
       to a multiple of 8 bytes), then the 8 byte lanes of the sum are added by one
       multiplication by ``0x0101...01``; a row guesses 1 iff fewer than
       ``ceil(d / 2)`` of its coordinates are ``< 0.5``. NaN is not ``< 0.5``.
    """

    def __init__(
        self,
        seed: np.random.SeedSequence,
        bit_generator: str,
        uniforms: str,
        dtype: np.dtype,
        dim: int,
        scale: float,
        dptext: bool,
        chunk_scalars: int,
    ):
        self.bits = getattr(np.random, bit_generator)(seed)
        self.rng = np.random.Generator(self.bits)
        self.uniforms = uniforms
        self.dtype = dtype
        self.dim = dim
        self.dptext = dptext
        self.rows = max(1, chunk_scalars // dim)
        size = self.rows * dim
        name = dtype.name
        mantissa = _UNIFORM_BITS[name]
        self.int = _INT[name]
        self.uint = _UINT[name]
        self.sign_bit = self.int(np.iinfo(self.int).min)
        self.sign_shift = self.int(8 * dtype.itemsize - 1)
        self.shift = self.uint(8 * dtype.itemsize - mantissa)
        self.step = dtype.type(2.0**-mantissa)
        self.centre = dtype.type(0.5 - 2.0 ** -(mantissa + 1))
        self.neg_scale = dtype.type(-scale)
        self.half = dtype.type(0.5)
        self.one = dtype.type(1)
        self.minus_two = dtype.type(-2)
        self.values = np.empty(size, dtype=dtype)
        self.signs = np.empty(size, dtype=self.int)
        self.row_bytes = -(-dim // 8) * 8 if 1 < dim <= _SWAR_MAX_DIM else dim
        self.below = np.zeros((self.rows, self.row_bytes), dtype=np.bool_)
        self.words = np.empty(self.rows, dtype=np.uint64)
        # a row guesses 1 iff (number of coordinates < 0.5) < ceil(d / 2)
        self.max_zeros = np.uint64((dim + 1) // 2)

    def _uniforms(self, out: np.ndarray) -> None:
        if self.uniforms == "random":
            self.rng.random(out=out, dtype=self.dtype)
            return
        words = -(-out.size * out.itemsize // 8)
        raw = self.bits.random_raw(words).view(self.uint)[: out.size]
        np.right_shift(raw, self.shift, out=raw)
        np.multiply(raw, self.step, out=out, dtype=self.dtype)

    def _noise_over_minus_b(self, v: np.ndarray, signs: np.ndarray) -> None:
        """``v`` becomes ``noise / -b`` of fresh uniforms, in place."""
        self._uniforms(v)
        if self.dptext:
            np.multiply(v, self.minus_two, out=v)
            np.add(v, self.one, out=v)  # 1 - 2u: negative (log NaN) for u > 1/2
            # NaN -> 0 by a mask of the sign bit, not by taking the log of negative
            # numbers: NumPy's float64 log is several times slower on those
            np.right_shift(v.view(self.int), self.sign_shift, out=signs)
            np.invert(signs, out=signs)  # 0 where 1 - 2u < 0, all ones elsewhere
            np.abs(v, out=v)
            np.log(v, out=v)  # -inf for u = 1/2
            np.bitwise_and(v.view(self.int), signs, out=v.view(self.int))
            return
        np.subtract(v, self.centre, out=v)
        np.bitwise_and(v.view(self.int), self.sign_bit, out=signs)
        np.abs(v, out=v)
        np.multiply(v, self.minus_two, out=v)
        np.add(v, self.one, out=v)
        np.log(v, out=v)
        # ln(1 - 2|c|) < 0 with the sign bit of c XOR-ed in: -sgn(c) |ln(1 - 2|c|)|,
        # which is noise / -b
        np.bitwise_xor(v.view(self.int), signs, out=v.view(self.int))

    def count(self, value: float, num_draws: int) -> tuple[int, int]:
        """``(guesses 0, guesses 1)`` of ``num_draws`` draws on the input value^d."""
        dim = self.dim
        x = self.dtype.type(value)
        ones = 0
        done = 0
        with np.errstate(divide="ignore", invalid="ignore"):
            while done < num_draws:
                rows = min(self.rows, num_draws - done)
                v = self.values[: rows * dim]
                self._noise_over_minus_b(v, self.signs[: rows * dim])
                np.multiply(v, self.neg_scale, out=v)
                np.add(v, x, out=v)
                ones += self._votes(v.reshape(rows, dim))
                done += rows
        return num_draws - ones, ones

    def _votes(self, y: np.ndarray) -> int:
        """Rows of ``y`` that guess 1."""
        rows, dim = y.shape
        below = self.below[:rows]
        if dim == 1:
            np.less(y, self.half, out=below)
            return rows - int(np.count_nonzero(below))
        if dim > _SWAR_MAX_DIM:
            np.less(y, self.half, out=below)
            zeros = np.count_nonzero(below, axis=1)
            return int(np.count_nonzero(zeros < self.max_zeros))
        np.less(y, self.half, out=below[:, :dim])  # the padding stays False
        words = below.view(np.uint64)
        acc = self.words[:rows]
        if words.shape[1] == 1:
            np.copyto(acc, words[:, 0])
        elif words.shape[1] <= 4:
            np.add(words[:, 0], words[:, 1], out=acc)
            for j in range(2, words.shape[1]):
                np.add(acc, words[:, j], out=acc)
        else:
            np.add.reduce(words, axis=1, out=acc)
        np.multiply(acc, _SWAR_ONES, out=acc)
        np.right_shift(acc, np.uint64(56), out=acc)
        return int(np.count_nonzero(acc < self.max_zeros))


def best_numpy(
    mechanism: str,
    epsilon: float,
    dim: int,
    num_draws: int,
    *,
    dtype: str = "float32",
    seed: int = 0,
    threads: int | None = None,
    chunk_scalars: int = CHUNK_SCALARS,
    bit_generator: str = DEFAULT_BIT_GENERATOR,
    uniforms: str | None = None,
) -> np.ndarray:
    """The fastest NumPy we have for the sanity check: chunked, in place, threaded.

    The draws of each dataset are split evenly over ``threads`` worker threads; each
    has its own bit generator (from ``SeedSequence(seed).spawn(threads)``) and its
    own buffers of ``chunk_scalars`` scalars, and computes the noise with the
    inverse CDF and a log, every value in ``dtype`` (see :class:`_Worker` for the
    exact arithmetic). The counts are exact int64 sums.

    The defaults are the fastest variant of those timed by ``python
    benchmarks/baselines.py --dims 1,32 --scalars 3.2e7 --chunks 14,16,18,20`` on
    this 2-core CPU (AMD EPYC, AVX-512; NumPy 2.4, 2 threads; laplace, scalar draws
    per second, best of 3):

    * float32: ``SFC64`` raw bits, chunks of ``2^18``: 8.7e8 (d = 1) and 8.2e8
      (d = 32); ``PCG64`` raw bits 7.7e8 / 7.2e8; ``Generator.random(dtype=
      np.float32)`` 6.5e8 / 6.4e8 with either bit generator (it calls the bit
      generator once per 32-bit word, ``random_raw`` once per 64 bits).
    * float64: ``SFC64`` with ``Generator.random(out=...)``, chunks of ``2^18``:
      5.1e8 (d = 1) and 4.8e8 (d = 32); ``PCG64`` 4.6e8 / 4.5e8; raw bits converted
      with ufuncs 4.3e8 / 4.3e8.
    * chunks (buffers of 13 or 17 bytes per scalar and thread in float32 or
      float64): ``2^16`` scalars were 4-25 % slower and ``2^14`` 40-65 % slower
      (more hand-overs of the GIL between the ufunc calls: the CPU utilisation fell
      from 1.95 to 1.3-1.7), ``2^20`` 10-17 % slower (presumably because the two
      threads' buffers, 26-34 MB, no longer stay in the 32 MB L3 cache).

    Args:
      mechanism: one of :data:`MECHANISMS`.
      epsilon: the privacy parameter; the scale is :func:`e2_scale`.
      dim: the dimension ``d``.
      num_draws: draws per dataset.
      dtype: ``"float32"`` (default) or ``"float64"``.
      seed: seed of the ``SeedSequence``.
      threads: worker threads (default ``os.cpu_count()``).
      chunk_scalars: scalars per chunk and thread (at least ``d``: one row).
      bit_generator: a NumPy bit generator, one of :data:`BIT_GENERATORS`.
      uniforms: ``"random"`` (``Generator.random``) or ``"bits"`` (``random_raw``
        and a shift); default the faster per dtype, :data:`DEFAULT_UNIFORMS`.

    Returns:
      ``(2, 2)`` int64 counts ``[[D->0, D->1], [D'->0, D'->1]]``.
    """
    b = e2_scale(mechanism, epsilon, dim)
    np_dtype = _check(dtype, num_draws)
    threads = threads or os.cpu_count() or 1
    uniforms = uniforms or DEFAULT_UNIFORMS[dtype]
    dptext = mechanism == "dptext"
    if uniforms not in UNIFORMS:
        raise ValueError(f"Expected uniforms in {UNIFORMS}, got {uniforms!r}.")
    if bit_generator not in BIT_GENERATORS:
        raise ValueError(
            f"Expected bit_generator in {BIT_GENERATORS}, got {bit_generator!r}."
        )
    workers = [
        _Worker(s, bit_generator, uniforms, np_dtype, dim, b, dptext, chunk_scalars)
        for s in np.random.SeedSequence(seed).spawn(threads)
    ]
    shares = [
        num_draws * (k + 1) // threads - num_draws * k // threads
        for k in range(threads)
    ]

    def run(worker: _Worker, share: int) -> np.ndarray:
        counts = np.zeros((2, 2), dtype=np.int64)
        if share:
            for i, value in enumerate((0.0, 1.0)):
                counts[i] = worker.count(value, share)
        return counts

    with ThreadPoolExecutor(max_workers=threads) as pool:
        parts = list(pool.map(run, workers, shares))
    return np.sum(parts, axis=0, dtype=np.int64)


def _time_variant(
    dim: int, dtype: str, draws: int, repeats: int, threads: int | None, **variant
) -> tuple[float, float]:
    """Best wall seconds of ``best_numpy`` on laplace and that run's CPU seconds."""
    best, cpu = math.inf, 0.0
    for _ in range(repeats):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        best_numpy("laplace", 1.0, dim, draws, dtype=dtype, threads=threads, **variant)
        wall = time.perf_counter() - wall0
        if wall < best:
            best, cpu = wall, time.process_time() - cpu0
    return best, cpu


def main(argv: Sequence[str] | None = None) -> int:
    """Times every variant of :func:`best_numpy` and prints one line per variant."""
    parser = argparse.ArgumentParser(
        description="Scalar draws per second of the variants of best_numpy "
        "(laplace, epsilon = 1): every bit generator x source of uniforms x chunk "
        "size; '*' marks the fastest per d and dtype.",
    )
    parser.add_argument("--dims", default="1,32", help="comma-separated d (1,32)")
    parser.add_argument("--dtype", choices=(*DTYPES, "both"), default="both")
    parser.add_argument(
        "--scalars", type=float, default=2**25, help="scalars per dataset (2^25)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="best of (3)")
    parser.add_argument("--threads", type=int, default=None, help="(cpu_count)")
    parser.add_argument(
        "--bit-generators", default="SFC64,PCG64", help="comma-separated (SFC64,PCG64)"
    )
    parser.add_argument(
        "--chunks", default="14,16,18,20", help="log2 of the chunk sizes (14,16,18,20)"
    )
    args = parser.parse_args(argv)
    dims = [int(v) for v in args.dims.split(",")]
    dtypes = DTYPES if args.dtype == "both" else (args.dtype,)
    variants = [
        {"bit_generator": g, "uniforms": u, "chunk_scalars": 1 << int(c)}
        for g in args.bit_generators.split(",")
        for u in UNIFORMS
        for c in args.chunks.split(",")
    ]
    print(
        f"best_numpy variants: laplace, epsilon=1, threads="
        f"{args.threads or os.cpu_count()}, numpy {np.__version__}, best of "
        f"{args.repeats}\nscal/s = 2 datasets x draws x d / s; cpu = CPU s / wall s; "
        "cpu ns = CPU ns per scalar"
    )
    print(
        f"{'d':>4} {'dtype':>7} {'bitgen':>9} {'uniforms':>8} {'chunk':>9} "
        f"{'scal/s':>10} {'cpu':>5} {'cpu ns':>6}"
    )
    for dtype in dtypes:
        for dim in dims:
            draws = max(1, int(args.scalars) // dim)
            scalars = 2 * draws * dim
            lines = []
            for v in variants:
                seconds, cpu = _time_variant(
                    dim, dtype, draws, args.repeats, args.threads, **v
                )
                lines.append(
                    (
                        seconds,
                        f"{dim:>4} {dtype:>7} {v['bit_generator']:>9} "
                        f"{v['uniforms']:>8} {v['chunk_scalars']:>9,} "
                        f"{scalars / seconds:>10.3e} {cpu / seconds:>5.2f} "
                        f"{1e9 * cpu / scalars:>6.2f}",
                    )
                )
            fastest = min(seconds for seconds, _ in lines)
            for seconds, line in lines:
                print(line + (" *" if seconds == fastest else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
