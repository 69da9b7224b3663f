"""Black-box mechanisms (Mechanism.from_callable) in the engine: the counts of a seed
do not depend on the chunk size, the number of workers or where a run resumed;
draw and iter_counts see the same outputs; bad callables give one-line errors.
"""

import concurrent.futures
import threading

import jax.numpy as jnp
import numpy as np
import pytest

import mcdp
from mcdp import sampling
from mcdp.attacks import Attack
from mcdp.cli._text import render
from mcdp.engines import host

from conftest import SEED, assert_one_line_error

PAIR = np.array([[0.0, 0.5], [1.0, 0.5]])
DRAWS = 3 * host.HOST_BLOCK_DRAWS + 5 * sampling.BLOCK_DRAWS + 17  # ragged


def laplace_rows(rng, x, n):
    """Module level, so worker processes can unpickle it."""
    return x[None, :] + rng.laplace(0.0, 1.0, size=(n, x.shape[0]))


def _first_coordinate(y, aux):
    """Three outcomes: how many of the thresholds in aux the first coordinate
    reaches."""
    return jnp.searchsorted(aux, y[:, 0], side="right").astype(jnp.int32)


THREE = Attack("first", 3, _first_coordinate)
AUX = np.array([0.0, 1.0])
MECH = mcdp.Mechanism.from_callable("laplace-rows", laplace_rows)


def _counts(mechanism, draws=DRAWS, **kwargs):
    return sampling.count_outcomes(
        sampling.key(SEED), mechanism, THREE, PAIR, None, draws, aux=AUX, **kwargs
    )


def test_counts_do_not_depend_on_the_chunk_size(monkeypatch):
    default = _counts(MECH)
    assert default.sum(axis=1).tolist() == [DRAWS, DRAWS]
    monkeypatch.setattr(
        host.HostEngine, "task_scalars", host.HOST_BLOCK_DRAWS
    )  # 1 per task
    progress = list(
        sampling.iter_counts(
            sampling.key(SEED), MECH, THREE, PAIR, None, DRAWS, aux=AUX
        )
    )
    assert len(progress) == 4  # one host block per chunk
    assert all(p.draws % sampling.BLOCK_DRAWS == 0 for p in progress[:-1])
    np.testing.assert_array_equal(progress[-1].counts, default)


def test_counts_do_not_depend_on_the_workers():
    default = _counts(MECH)
    processes = _counts(MECH._replace(workers=2))  # picklable: processes
    np.testing.assert_array_equal(processes, default)
    closure = mcdp.Mechanism.from_callable(
        "closure", lambda rng, x, n: laplace_rows(rng, x, n), workers=2
    )  # a lambda cannot be pickled: threads
    np.testing.assert_array_equal(_counts(closure), default)
    threads = mcdp.Mechanism.from_callable(
        "threads", laplace_rows, workers=3, threads=True
    )  # picklable, but threads asked for
    assert isinstance(host._pool(threads), concurrent.futures.ThreadPoolExecutor)
    np.testing.assert_array_equal(_counts(threads), default)


def test_arrays_filled_again_give_the_counts_of_the_outputs(monkeypatch):
    """A chunk's arrays are filled again once its counts are in; the counts stay
    those of the drawn outputs (nothing is overwritten while counted)."""
    monkeypatch.setattr(
        host.HostEngine, "task_scalars", host.HOST_BLOCK_DRAWS
    )  # 1 per task
    taken, seen = [], []  # seen keeps every array alive: ids are not reused
    take = host.Spare.take

    def recorded(self, shape, dtype):
        array = take(self, shape, dtype)
        taken.append(any(array is a for a in seen))
        seen.append(array)
        return array

    monkeypatch.setattr(host.Spare, "take", recorded)
    draws = 24 * host.HOST_BLOCK_DRAWS - 5
    key = sampling.key(SEED)
    counts = _counts(MECH, draws=draws)
    assert sum(taken) >= 10  # most of the 48 arrays were filled again
    outputs = sampling.draw(key, MECH, PAIR, None, draws)
    expected = [np.bincount(np.searchsorted(AUX, y[:, 0], "right"), minlength=3)
                for y in outputs]  # fmt: skip
    np.testing.assert_array_equal(counts, expected)


def test_a_run_stopped_early_stops_calling_fn(monkeypatch):
    """With one worker fn runs in a thread kept for it, a chunk ahead; a caller
    that stops early (an interrupt, a sequential test's stop) cancels the rest."""
    monkeypatch.setattr(
        host.HostEngine, "task_scalars", host.HOST_BLOCK_DRAWS
    )  # 1 per task
    calls = []

    def counted(rng, x, n):
        calls.append(threading.current_thread().name)
        return laplace_rows(rng, x, n)

    mech = mcdp.Mechanism.from_callable("counted", counted)
    blocks = 20
    runs = sampling.iter_counts(
        sampling.key(SEED), mech, THREE, PAIR, None, blocks * host.HOST_BLOCK_DRAWS,
        aux=AUX,
    )  # fmt: skip
    first = next(runs)
    runs.close()
    host._caller()[0].submit(int).result()  # what was left in its queue is done
    assert first.counts.sum(axis=1).tolist() == [first.draws] * 2
    # the first Progress comes once chunk 1 is drawn (counts are collected a chunk
    # late), chunks 2 and 3 under way: at most 2 inputs x 4 chunks, of 2 x 20
    assert len(calls) <= 8
    assert all(name.startswith("mcdp-fn") for name in calls)


def _nested(rng, x, n):
    """A callable that runs a black-box audit itself before it draws."""
    sampling.count_outcomes(sampling.key(1), MECH, THREE, PAIR, None, 10, aux=AUX)
    return laplace_rows(rng, x, n)


def test_a_run_inside_fn_does_not_wait_for_itself():
    done = []
    outer = threading.Thread(
        target=lambda: done.append(
            _counts(mcdp.Mechanism.from_callable("nested", _nested), draws=10)
        ),
        daemon=True,
    )
    outer.start()
    outer.join(timeout=60)
    assert not outer.is_alive(), "a run inside fn waited for itself"
    np.testing.assert_array_equal(done[0], _counts(MECH, draws=10))


def test_a_resumed_run_gives_the_counts_of_one_run():
    whole = _counts(MECH)
    # a resume point inside a host block: the block is drawn again, its first
    # rows skipped
    part = 2 * host.HOST_BLOCK_DRAWS + 3 * sampling.BLOCK_DRAWS
    first = _counts(MECH, draws=part)
    resumed = _counts(MECH, resume=sampling.Progress(part, first))
    np.testing.assert_array_equal(resumed, whole)


def test_the_counts_are_those_of_the_drawn_outputs():
    """draw and iter_counts use the same host blocks of a key; another key gives
    other outputs (so the learned attack's samples are not the counted one)."""
    key = sampling.key(SEED)
    outputs = sampling.draw(key, MECH, PAIR, None, DRAWS)
    assert outputs.shape == (2, DRAWS, 2) and outputs.dtype == np.float64
    expected = [np.bincount(np.searchsorted(AUX, y[:, 0], "right"), minlength=3)
                for y in outputs]  # fmt: skip
    np.testing.assert_array_equal(_counts(MECH), expected)
    other = sampling.draw(sampling.key(SEED + 1), MECH, PAIR, None, 1000)
    assert not np.any(other[:, :, 0] == outputs[:, :1000, 0])


def _columns(y, aux):
    """A tuple transform: each coordinate plus ``aux``, an array of its own."""
    return y[:, 0] + aux, y[:, 1] + aux


@pytest.mark.parametrize(
    "mechanism", [MECH, mcdp.get_mechanism("laplace")], ids=["host", "device"]
)
def test_a_tuple_transform_gives_each_array_whole_and_contiguous(mechanism):
    """A transform that returns a tuple (the portfolio's candidates' values) gives
    a tuple of arrays, each of every draw of both inputs, contiguous: the
    columns of the untransformed draws, on the host engine (ragged blocks) and on
    the device engine alike."""
    key = sampling.key(SEED)
    params = None if mechanism is MECH else mechanism.calibrate_sanity_check(1.0, 2)
    outputs = sampling.draw(key, mechanism, PAIR, params, DRAWS)
    both = sampling.draw(
        key, mechanism, PAIR, params, DRAWS, transform=_columns, aux=np.float64(2.0)
    )
    assert isinstance(both, tuple) and len(both) == 2
    for j, values in enumerate(both):
        assert values.shape == (2, DRAWS) and values.flags.c_contiguous
        np.testing.assert_array_equal(values, outputs[:, :, j] + 2.0)


@pytest.mark.parametrize(
    "mechanism", [MECH, mcdp.get_mechanism("laplace")], ids=["host", "device"]
)
@pytest.mark.parametrize(
    "first",
    [host.HOST_BLOCK_DRAWS, 2 * sampling.BLOCK_DRAWS + 5, DRAWS - 3],
    ids=["host-block", "ragged", "near-end"],
)
def test_draws_in_parts_are_the_draws_at_once(mechanism, first):
    """``first_draw`` gives the draws that one draw from 0 gives there, transformed
    alike (the portfolio screens its candidates on the first selection draws and
    draws the rest for those it keeps), into ``out`` where given: from a host
    block's start, from inside a device block, and a few draws before the end, on
    either engine."""
    key = sampling.key(SEED)
    params = None if mechanism is MECH else mechanism.calibrate_sanity_check(1.0, 2)
    whole = sampling.draw(
        key, mechanism, PAIR, params, DRAWS, transform=_columns, aux=np.float64(2.0)
    )
    head = sampling.draw(
        key, mechanism, PAIR, params, first, transform=_columns, aux=np.float64(2.0)
    )
    rest = sampling.draw(
        key, mechanism, PAIR, params, DRAWS - first, transform=_columns,
        aux=np.float64(2.0), first_draw=first,
    )  # fmt: skip
    for j in range(2):
        assert rest[j].shape == (2, DRAWS - first) and rest[j].flags.c_contiguous
        np.testing.assert_array_equal(head[j], whole[j][:, :first])
        np.testing.assert_array_equal(rest[j], whole[j][:, first:])
    # the rest drawn into the arrays that will hold all of them, views of them
    into = tuple(np.zeros((2, DRAWS)) for _ in range(2))
    filled = sampling.draw(
        key, mechanism, PAIR, params, DRAWS - first, transform=_columns,
        aux=np.float64(2.0), first_draw=first, out=tuple(a[:, first:] for a in into),
    )  # fmt: skip
    for j in range(2):
        assert filled[j].base is into[j]
        np.testing.assert_array_equal(into[j][:, first:], whole[j][:, first:])
        assert not into[j][:, :first].any()  # the head left as it was


@pytest.mark.parametrize("first", [-1, 1.5])
def test_a_bad_first_draw_is_refused(first):
    with pytest.raises(ValueError, match="first_draw"):
        sampling.draw(sampling.key(SEED), MECH, PAIR, None, 10, first_draw=first)


def test_outputs_follow_the_callable():
    """The first host block of input i is fn(generator of (i, 0), x_i, n)."""
    key = sampling.key(SEED)
    outputs = sampling.draw(key, MECH, PAIR, None, 10)
    for i, x in enumerate(PAIR):
        rng = host.block_generator(host.entropy(key), i, 0)
        np.testing.assert_array_equal(
            outputs[i], laplace_rows(rng, x, host.HOST_BLOCK_DRAWS)[:10]
        )


def test_audit_records_the_black_box():
    mech = mcdp.Mechanism.from_callable(
        "rows", laplace_rows, claim="epsilon-DP", library="numpy"
    )
    r = mcdp.audit_delta(mech, 1.0, 0.0, 1, 2000, pair="scalar-0-1", attack="majority")
    assert r.callable == "test_host:laplace_rows"
    assert r.library == f"numpy=={np.__version__}" and r.reproducible
    assert "black box test_host:laplace_rows" in render(r)
    record = r.to_dict()
    assert record["callable"] == r.callable and record["reproducible"] is True
    blind = mech._replace(reproducible=False)
    r = mcdp.audit_delta(blind, 1.0, 0.0, 1, 2000, pair="scalar-0-1", attack="majority")
    assert r.reproducible is False and "not reproducible" in render(r)
    jax_record = mcdp.audit_delta(
        "laplace", 1.0, 0.0, 1, 1000, pair="scalar-0-1", attack="lr"
    )
    assert jax_record.callable is None and jax_record.reproducible


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"name": "", "fn": laplace_rows}, "name"),
        ({"name": "m", "fn": 3}, "fn"),
        ({"name": "m", "fn": laplace_rows, "workers": 0}, "workers"),
        ({"name": "m", "fn": laplace_rows, "reproducible": "no"}, "reproducible"),
        ({"name": "m", "fn": laplace_rows, "threads": 1}, "threads"),
        ({"name": "m", "fn": laplace_rows, "library": "no-such-lib-xyz"}, "library"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment) as info:
        mcdp.Mechanism.from_callable(**kwargs)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "fn, fragment",
    [
        (lambda rng, x, n: rng.normal(size=n - 1), "first axis n = 16384"),
        (lambda rng, x, n: np.float64(1.0), "first axis"),
        (lambda rng, x, n: np.zeros(n, dtype=complex), "real numbers"),
        (lambda rng, x, n: np.array(["a"] * n), "real numbers"),
    ],
)
def test_a_callable_with_bad_outputs_fails_with_one_line(fn, fragment):
    mech = mcdp.Mechanism.from_callable("bad", fn)
    with pytest.raises(ValueError, match=fragment) as info:
        mcdp.audit_delta(mech, 1.0, 0.0, 1, 100, pair="scalar-0-1", attack="majority")
    assert "'bad'" in str(info.value) and "\n" not in str(info.value)


def test_a_black_box_does_not_run_under_jax():
    with pytest.raises(ValueError, match="on the host"):
        MECH.sample(sampling.key(0), jnp.zeros((1, 1)), None)


def test_cli_audits_a_callable(tmp_path, capsys, monkeypatch):
    from mcdp.cli import main

    np.save(tmp_path / "pair.npy", np.array([[0.0], [1.0]]))
    (tmp_path / "shipped.py").write_text(
        "def sample(rng, x, n):\n"
        "    return x[None, :] + rng.laplace(0.0, 1.0, size=(n, x.shape[0]))\n"
    )
    monkeypatch.chdir(tmp_path)
    args = ["audit", "--callable", "shipped:sample", "--epsilon", "1", "--pair",
            "pair.npy", "--attack", "majority", "--draws", "2000", "--library",
            "numpy", "--json"]  # fmt: skip
    assert main(args) == 0
    import json

    record = json.loads(capsys.readouterr().out)
    assert record["callable"] == "shipped:sample" and record["dim"] == 1
    assert record["library"] == f"numpy=={np.__version__}"
    assert record["mechanism"] == "sample" and record["draws"] == 2000
    assert main([*args, "--workers", "2", "--threads"]) == 0  # same counts
    threaded = json.loads(capsys.readouterr().out)
    assert threaded["counts"] == record["counts"]


@pytest.mark.parametrize(
    "extra, fragments",
    [
        (["--callable", "nocolon", "--dim", "1"], ["--callable", "MODULE:NAME"]),
        (["--callable", "no_such_mod_xyz:f", "--dim", "1"], ["cannot import"]),
        (["--callable", "json:nope", "--dim", "1"], ["--callable", "no attribute"]),
        (["--callable", "json:__name__", "--dim", "1"], ["fn(rng, x, n)"]),
        (["--callable", "json:dumps", "--pair", "axis"], ["--dim"]),
        (["--mechanism", "laplace", "--workers", "2", "--dim", "1"], ["--workers"]),
        (["--mechanism", "laplace", "--threads", "--dim", "1"], ["--threads"]),
    ],
)
def test_cli_bad_callables_give_one_line(capsys, extra, fragments):
    args = ["audit", "--epsilon", "1", "--draws", "100", *extra]
    assert_one_line_error(capsys, args, *fragments)
