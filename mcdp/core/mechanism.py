"""The mechanism record: what a mechanism is and what it declares about itself.

A mechanism is a pure function ``sample(key, x, params) -> y`` that draws one output
for every row of the batch ``x`` (shape ``(n, d)``) from a single key, plus host-side
metadata: what it claims, how the ACL 2022 sanity check (README, "The estimate")
parametrises it, and the closed forms from which :mod:`mcdp.exact` computes exact
references. Every exact reference comes from a field of the record, never from its
name, so a user's mechanism gets exactly the references it declares.

A black box (:func:`from_callable`) is any Python code ``fn(rng, x, n)``; the host
engine (:mod:`mcdp.engines.host`) runs it. This module is part of the core layer:
it imports nothing of mcdp but the argument checks and the domains.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from importlib import metadata
from typing import Any, NamedTuple

import jax
import numpy as np

from mcdp import _validate
from mcdp._types import Array, PRNGKey
from mcdp.core.datasets import DatasetDomain
from mcdp.core.domains import InputDomain
from mcdp.core.releases import PerCall, ReleaseCall

MAX_WORKERS = 256
HostSample = Callable[[np.random.Generator, np.ndarray, int], Any]

LogProbs = tuple[np.ndarray, np.ndarray]


class NoiseApart(NamedTuple):
    """A sampler in two parts: ``noise(key, x, params)`` draws the noise (any pytree
    of arrays), ``from_noise(x, noise, params)`` makes the outputs from it; calling
    the record samples, ``from_noise(x, noise(key, x, params), params)``, which must
    be the mechanism's ``sample`` to the bit. On a CPU the engine draws the noise of
    the blocks it draws once in a program of its own and makes the outputs in another
    (:func:`mcdp.engines.device._drawn`, :func:`~mcdp.engines.device._drawn_batched`).
    Leave any product that a sum reads in ``from_noise`` (a scale times the noise,
    added to ``x``): XLA's CPU code fuses the two into one rounding, and a product
    drawn with the noise would be rounded apart."""

    noise: Callable[[PRNGKey, Array, Any], Any]
    from_noise: Callable[[Array, Any, Any], Array]

    def __call__(self, key: PRNGKey, x: Array, params: Any) -> Array:
        return self.from_noise(x, self.noise(key, x, params), params)


class _MechanismFields(NamedTuple):
    """The fields of :class:`Mechanism`, in their positional order, and its methods
    (a NamedTuple cannot define ``__new__``, so :class:`Mechanism` subclasses it)."""

    name: str
    sample: Callable[[PRNGKey, Array, Any], Array]
    calibrate_sanity_check: Callable[..., Any] | None = None
    log_round_one: Callable[[np.ndarray, Any], LogProbs] | None = None
    claim: str | None = None
    flaw: str | None = None
    nan_policies: tuple[str, ...] = ()
    calibrate: Callable[[float, float, int, float], Any] | None = None
    transform: Callable[[Any, Any], Any] | None = None
    privacy_loss: Callable[[Array, Array, Array, Any], Array] | None = None
    noise_bound: Callable[[Any], Any] | None = None
    exact_delta: Callable[[Any, np.ndarray, float], float | None] | None = None
    exact_epsilon: Callable[[Any, np.ndarray], float | None] | None = None
    host_sample: Callable[[np.random.Generator, np.ndarray, int], Any] | None = None
    reproducible: bool = True
    library: str | None = None
    workers: int = 1
    domain: InputDomain | None = None
    threads: bool = False
    pathwise: bool = True
    loss_by_block: bool = False
    noise_apart: NoiseApart | None = None
    draws_by_block: bool = False
    loss_tables: Callable[[Array, Array, Any], Any] | None = None

    def sanity_check_params(self, epsilon: float, dim: int, **options) -> Any:
        """``calibrate_sanity_check(epsilon, dim, **options)``, or a one-line error
        naming the missing field where the mechanism has none."""
        if self.calibrate_sanity_check is None:
            raise ValueError(
                f"mechanism {self.name!r} has no calibrate_sanity_check, so the sanity "
                "check cannot calibrate it: pass params= explicitly."
            )
        return self.calibrate_sanity_check(epsilon, dim, **options)

    def transformed(self, xs: np.ndarray, params: Any) -> np.ndarray:
        """The inputs after the deterministic part (``transform``), on the host in
        float64: what the noise is added to."""
        xs = np.asarray(xs, dtype=np.float64)
        if self.transform is None:
            return xs
        return np.asarray(self.transform(xs, jax.tree.map(np.asarray, params)))


# the position of the field, for the check that it is not given twice
_CALIBRATE_SANITY_CHECK = _MechanismFields._fields.index("calibrate_sanity_check")


def _renamed_sanity_check(
    kwargs: dict[str, Any], e2_params: Any, positional: bool
) -> dict[str, Any]:
    """``kwargs`` with the earlier keyword ``e2_params`` given as
    ``calibrate_sanity_check``; a one-line error where both are given."""
    if e2_params is None:
        return kwargs
    if positional or "calibrate_sanity_check" in kwargs:
        raise ValueError(
            "Expected one of calibrate_sanity_check and e2_params (its earlier "
            "name), got both."
        )
    return kwargs | {"calibrate_sanity_check": e2_params}


class Mechanism(_MechanismFields):
    r"""A registered (or user-defined) mechanism.

    Only ``name`` and ``sample`` are required; every other field is optional and
    says what the mechanism declares about itself. An audit that needs a field the
    mechanism lacks says so in a one-line :class:`ValueError`.

    Attributes:
      name: registry name; never changes meaning.
      sample: ``sample(key, x, params) -> y`` with ``x`` of shape ``(n, d)``; pure JAX,
        not jitted (the engine owns the jit boundary).
      calibrate_sanity_check: ``calibrate_sanity_check(epsilon, dim, **options) ->
        params``, the parameters the ACL 2022 sanity check (inputs :math:`0^d` and
        :math:`1^d`) uses for this mechanism; ``None`` where the mechanism is not
        meant for it (then the sanity check needs explicit ``params``). Earlier
        versions named it ``e2_params``: the keyword ``e2_params=`` of the
        constructor and of ``_replace``, and the read-only property ``e2_params``,
        still work.
      log_round_one: host function ``(x, params) -> (log_p1, log_p0)`` giving, per
        coordinate of the 1-D input ``x``, ``log P[y_i >= 1/2 or y_i is NaN]`` and
        its complement in log space; the exact loss of the majority vote follows
        (:func:`mcdp.exact.exact_e2`). ``None`` where no closed form is known.
      claim: the privacy claim, e.g. ``"epsilon-DP"``; ``None`` where none is stated
        (the sanity check then gives no verdict).
      flaw: one line on why the claim fails, or ``None`` for a correct mechanism.
      nan_policies: the values ``calibrate_sanity_check`` accepts for ``nan_policy``
        (DPText only).
      calibrate: ``calibrate(epsilon, delta, dim, clip) -> params``, the mechanism's
        own calibration for embeddings clipped at radius ``clip`` (used by the
        (epsilon, delta) audits); ``None`` if it has none.
      transform: ``transform(x, params) -> x``, the deterministic part applied before
        the noise (clipping); ``None`` for the identity.
      privacy_loss: ``privacy_loss(y, tx, tx_prime, params)``, the exact
        :math:`\ln p(y \mid x) - \ln p(y \mid x')` of an output row, given the
        transformed inputs; ``None`` where no density is known.
      noise_bound: ``noise_bound(params) -> A``: every noise coordinate lies in
        :math:`[-A, A]`; ``None`` for unbounded noise.
      exact_delta: host function ``exact_delta(params, tx, epsilon) -> delta | None``:
        the exact privacy profile :math:`\delta(\varepsilon)` on the transformed
        pair ``tx`` (shape ``(2, d)``), or ``None`` for pairs without a closed form;
        the field is ``None`` where no pair has one.
      exact_epsilon: host function ``exact_epsilon(params, tx) -> epsilon | None``:
        the exact pure-epsilon privacy loss on the transformed pair ``tx``, the
        largest :math:`|\ln p(y \mid x) - \ln p(y \mid x')|` over outputs (``inf``
        where one input reaches outputs the other cannot), or ``None`` for pairs
        without a closed form; the field is ``None`` where no pair has one.
      host_sample: ``fn(rng, x, n) -> y`` for a black-box mechanism in any Python
        code (:meth:`from_callable`): ``n`` outputs (first axis ``n``) for one
        1-D float64 input row ``x``, drawn from the ``numpy.random.Generator``
        ``rng``. The engine calls it on the host (:mod:`mcdp.engines.host`); ``sample``
        then only raises. ``None`` for a JAX mechanism.
      reproducible: whether the outputs depend on ``rng`` alone (a library that
        draws from its own or the operating system's randomness is not: its
        records say ``reproducible: false``).
      library: ``"name==version"`` of the library under audit, for the records.
      workers: processes (threads where ``fn`` cannot be pickled) that call
        ``host_sample``; the counts do not depend on it.
      threads: whether the workers are threads of this process rather than
        processes.
      pathwise: whether ``sample``'s outputs move continuously with the input for
        fixed noise, so that the gradient search
        (:func:`mcdp.searching.gradient_pairs`) may differentiate through it with
        ``privacy_loss``. ``False`` where comparisons with the noise give the
        outputs a discrete part (the Sparse Vector variants): a pathwise gradient
        does not see how the input moves their probabilities.
      loss_by_block: whether the counting loop on a CPU scores ``privacy_loss``
        one block of draws after another rather than batched over a chunk (see
        :class:`mcdp.core.attack.Attack`): for a loss with large intermediates
        per output, such as a quadrature. The counts are the same either way.
        Where the outputs are discrete, the default attack also computes such a
        loss once at each distinct output of its training draws and looks it up
        (:class:`mcdp.attacks.ValueMemo`).
      noise_apart: ``sample`` in two parts, its noise and the outputs made from it
        (:class:`NoiseApart`), where drawing them in one program is slow on a CPU:
        there the engine draws the noise apart wherever it draws blocks once (the
        counting loop, the selection draws). ``None``: ``sample`` whole. The counts
        are the same either way.
      draws_by_block: whether the counting loop on a CPU draws and guesses one block
        of draws after another whatever the attack, rather than batched over a
        chunk: for a sampler that counts faster so, as the Sparse Vector variants
        with a cutoff (each output's answers above counted along its queries, by a
        running sum or Alg. 2's loop) did for every guess measured. The counts are
        the same either way.
      loss_tables: ``loss_tables(tx, tx_prime, params) -> params'``: the params
        with what ``privacy_loss`` reads for every output of the pair computed
        once (``svt3``'s tables of whole pieces), which ``privacy_loss`` takes in
        their place. The pair and the params come as the engine passes them:
        JAX arrays of the run's dtype (integers int32). The default attack's
        exact loss reads them so: computed in the engine's program, they cost as
        if made for each block of draws. ``None``: ``privacy_loss`` takes the
        params alone.
    """

    __slots__ = ()

    def __new__(cls, *args: Any, e2_params: Callable[..., Any] | None = None, **kwargs):
        positional = len(args) > _CALIBRATE_SANITY_CHECK
        kwargs = _renamed_sanity_check(kwargs, e2_params, positional)
        return super().__new__(cls, *args, **kwargs)

    @property
    def e2_params(self) -> Callable[..., Any] | None:
        """The earlier name of :attr:`calibrate_sanity_check` (read-only)."""
        return self.calibrate_sanity_check

    def _replace(self, /, *, e2_params: Callable[..., Any] | None = None, **kwargs):
        """A copy with the given fields replaced (``e2_params`` is accepted for
        ``calibrate_sanity_check``)."""
        kwargs = _renamed_sanity_check(kwargs, e2_params, False)
        return super()._replace(**kwargs)

    @classmethod
    def from_callable(cls, name: str, fn: HostSample, **options: Any) -> Mechanism:
        """A black-box mechanism: ``fn(rng, x, n)`` returns ``n`` outputs for the
        input row ``x``, in any Python code. The keyword options (``claim``,
        ``flaw``, ``reproducible``, ``library``, ``workers``, ``domain``,
        ``threads``) and their checks are those of :func:`from_callable`."""
        return from_callable(name, fn, **options)


def _host_only(key, x, params):
    """The ``sample`` of a black-box mechanism: it cannot run under JAX."""
    raise ValueError(
        "a mechanism made by Mechanism.from_callable runs on the host: pass it to "
        "an audit or to mcdp.sampling (iter_counts, draw), not to JAX code."
    )


def library_version(library: str) -> str:
    """``"name==version"``: ``library`` as given where it has ``==``, else the
    version of the installed distribution ``library``."""
    if not isinstance(library, str) or not library.strip():
        raise ValueError(
            f"Expected library to be a distribution name such as 'opendp' or "
            f"'name==version', got {library!r}."
        )
    if "==" in library:
        return library.strip()
    try:
        return f"{library}=={metadata.version(library)}"
    except metadata.PackageNotFoundError:
        raise ValueError(
            f"Expected library to name an installed distribution (or to be "
            f"'name==version'), got {library!r}."
        ) from None


def callable_name(fn: Any) -> str:
    """``module:qualname`` of ``fn`` (its type's, for other callables)."""
    while isinstance(fn, ReleaseCall | PerCall):  # the user's function inside
        fn = fn.fn if isinstance(fn, ReleaseCall) else fn.f
    target = fn.func if isinstance(fn, partial) else fn
    module = getattr(target, "__module__", None) or type(target).__module__
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{module}:{name}"


def from_callable(
    name: str,
    fn: HostSample,
    *,
    claim: str | None = None,
    flaw: str | None = None,
    reproducible: bool = True,
    library: str | None = None,
    workers: int = 1,
    domain: InputDomain | None = None,
    threads: bool = False,
) -> Mechanism:
    """A black-box :class:`~mcdp.mechanisms.Mechanism` from a Python callable.

    Args:
      name: the mechanism's name in results (a non-empty string).
      fn: ``fn(rng, x, n)``: ``n`` outputs for the input row ``x`` (1-D float64 of
        length d) as an array whose first axis is ``n`` (further axes are
        flattened into the output's coordinates), drawn from the
        ``numpy.random.Generator`` ``rng``. Real numbers (integers are
        converted to the run's dtype). A function called on datasets
        (``domain`` a :class:`~mcdp.core.datasets.DatasetDomain`, or audited on
        :class:`~mcdp.core.datasets.Datasets`) is ``fn(rng, data, n)`` with an
        ``(m, k)`` dataset, and may return its ``n`` releases as a sequence of
        any structure (:mod:`mcdp.core.releases`; :class:`PerCall` wraps a
        function of one release per call).
      claim: the privacy claim, e.g. ``"epsilon-DP"`` (for the records).
      flaw: why the claim fails, for a known-broken control.
      reproducible: ``False`` for a library that draws from its own or the
        operating system's randomness and ignores ``rng``: its counts change from
        run to run, and its records say so.
      library: the library under audit, ``"name"`` (its installed version is
        looked up) or ``"name==version"``.
      workers: processes that call ``fn`` (threads where ``fn`` cannot be
        pickled), 1 to 256; 1 (default) calls it in one thread of this process,
        beside the counting.
      domain: where its inputs live and which pairs are neighbours
        (:class:`mcdp.core.domains.InputDomain`, or for datasets
        :class:`mcdp.core.datasets.DatasetDomain`), for :func:`mcdp.search`.
      threads: ``True`` to run the ``workers`` as threads of this process: a
        callable that releases the interpreter lock while it draws (NumPy's
        generators and array operations do) then draws in parallel without its
        outputs crossing processes; ``False`` (default) for processes.

    Raises:
      ValueError: an argument is not as described; the message names it.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"Expected name to be a non-empty string, got {name!r}.")
    if not callable(fn):
        raise ValueError(
            f"Expected fn to be callable as fn(rng, x, n), got {type(fn).__name__}."
        )
    for label, flag in (("reproducible", reproducible), ("threads", threads)):
        if not isinstance(flag, bool):
            raise ValueError(f"Expected {label} to be True or False, got {flag!r}.")
    for label, value in (("claim", claim), ("flaw", flaw)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"Expected {label} to be a string or None, got {value!r}.")
    workers = _validate.integer("workers", workers, low=1, high=MAX_WORKERS)
    if domain is not None and not isinstance(domain, InputDomain | DatasetDomain):
        raise ValueError(
            f"Expected domain to be an mcdp.domains.InputDomain, an "
            f"mcdp.DatasetDomain or None, got {domain!r}."
        )
    return Mechanism(
        name=name,
        sample=_host_only,
        claim=claim,
        flaw=flaw,
        host_sample=fn,
        reproducible=reproducible,
        library=None if library is None else library_version(library),
        workers=workers,
        domain=domain,
        threads=threads,
    )
