"""Ctrl-C stops every long run the same way: SIGINT to ``mcdp`` in a subprocess.

Each run is interrupted once it is counting: for a JAX mechanism, once its first
compiled program lands in the (fresh) persistent compilation cache; for a black box,
once its function has been called (it touches a marker file). Then the process must
exit with status 130, print one line on stderr and no traceback, keep what it
counted (the partial result, or the grid's resume file), and leave no process of
its session behind (worker processes included).
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

STARTUP = 180  # s: imports and the first compile on a loaded 2-core machine
EXIT = 60  # s: from SIGINT to exit (a chunk under way finishes first)

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads process groups from /proc"
)

BOX = textwrap.dedent(
    """
    import os
    import time


    def fn(rng, x, n):
        open(os.environ["MCDP_TEST_MARKER"], "a").close()
        return x[0] + rng.laplace(size=n)


    def slow(rng, x, n):
        time.sleep(0.01)
        return fn(rng, x, n)
    """
)


def _group(pgid: int) -> list[int]:
    """The processes still alive in process group ``pgid``."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    return alive


@contextlib.contextmanager
def _sigint_inherited_as_default():
    """While a child starts: SIGINT handled by Python here if it was ignored, so
    that the child starts with it at its default and Python there installs its
    KeyboardInterrupt handler, as under a terminal's Ctrl-C. Where the tests run
    with SIGINT ignored (a background job of a non-interactive shell), a child
    would inherit the ignored signal and count to the end; a handler is not
    inherited across exec. (Resetting it in the child with ``preexec_fn`` would
    fork a process that runs JAX's threads.)"""
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _interrupt(args, tmp_path: Path, *, started) -> subprocess.CompletedProcess:
    """Runs ``mcdp ARGS`` in a session of its own, sends SIGINT once
    ``started()`` holds, and returns the finished process; asserts that nothing of
    its session is left."""
    env = os.environ | {
        "MCDP_CACHE_DIR": str(tmp_path / "cache"),
        "MCDP_COMPILATION_CACHE": "1",
        "MCDP_TEST_MARKER": str(tmp_path / "called"),
    }
    with _sigint_inherited_as_default():
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcdp", *args],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + STARTUP
        while not started() and proc.poll() is None:
            assert time.monotonic() < deadline, "the run never started counting"
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=EXIT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _group(proc.pid) == [], "processes left behind"
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def _compiled(tmp_path: Path):
    """Whether the engine's compiled loop is in the cache: the run is counting."""
    return lambda: any((tmp_path / "cache").glob("jit__count_impl-*"))


def _called(tmp_path: Path):
    return lambda: (tmp_path / "called").exists()


def _assert_one_line(done: subprocess.CompletedProcess) -> str:
    """Exit status 130, no traceback, and one line on the interrupt, the last one
    on stderr (a run to a target width logs its plan and rounds there before)."""
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    said = [line for line in lines if "interrupt" in line]
    assert said == lines[-1:] and said[0].startswith("mcdp: interrupted"), lines
    return said[0]


AUDITS = {
    "sanity-check": ["--mechanism", "laplace", "--dim", "8", "--draws", "1e12"],
    "target-width": ["--mechanism", "laplace", "--dim", "8", "--target-width", "1e-6"],
    "delta-audit": [
        "--mechanism",
        "gaussian",
        "--dim",
        "8",
        "--delta",
        "1e-5",
        "--draws",
        "1e12",
        "--attack",
        "lr",  # the counting is interrupted, not a preparation
    ],  # fmt: skip
}


@pytest.mark.parametrize("kind", sorted(AUDITS))
def test_an_interrupted_audit_prints_what_it_counted(kind, tmp_path):
    args = ["audit", "--epsilon", "1", *AUDITS[kind], "--json"]
    done = _interrupt(args, tmp_path, started=_compiled(tmp_path))
    assert "draws per input follows" in _assert_one_line(done)
    record = json.loads(done.stdout)
    assert record["interrupted"] and record["draws"] > 0
    assert all(sum(row) == record["draws"] for row in record["counts"])


@pytest.mark.parametrize("threads", [False, True], ids=["processes", "threads"])
def test_an_interrupted_black_box_stops_its_workers(threads, tmp_path):
    (tmp_path / "box.py").write_text(BOX)
    args = [
        "audit", "--callable", "box:fn", "--epsilon", "1", "--dim", "1",
        "--attack", "majority", "--draws", "1e12", "--workers", "2", "--json",
    ] + (["--threads"] if threads else [])  # fmt: skip
    done = _interrupt(args, tmp_path, started=_called(tmp_path))
    line = _assert_one_line(done)
    if "draws per input follows" in line:  # else it stopped before any chunk's counts
        assert json.loads(done.stdout)["interrupted"]


def test_an_interrupted_search_says_it_keeps_nothing(tmp_path):
    args = [
        "search", "--mechanism", "laplace", "--epsilon", "1", "--dim", "2",
        "--attack", "lr", "--screen-draws", "1e12", "--json",
    ]  # fmt: skip
    done = _interrupt(args, tmp_path, started=_compiled(tmp_path))
    assert "no partial result" in _assert_one_line(done)


def test_an_interrupted_grid_keeps_its_resume_file(tmp_path):
    out = tmp_path / "grid.json"
    args = [
        "grid", "acl2022", "--draws", "1e12", "--mechanisms", "laplace",
        "--epsilons", "1", "--dims", "8", "--out", str(out),
    ]  # fmt: skip
    done = _interrupt(args, tmp_path, started=_compiled(tmp_path))
    assert "rerun to resume" in _assert_one_line(done)
    assert out.exists() and '"interrupted": true' in out.read_text()


@pytest.mark.slow  # a local cluster in a subprocess: the default run resumes a
# cluster's file in tests/test_cluster.py (a lost scheduler) and interrupts the CLI
# on one machine above
def test_an_interrupted_cluster_run_resumes_to_the_same_counts(tmp_path):
    pytest.importorskip("distributed")
    (tmp_path / "box.py").write_text(BOX)
    audit = [
        "audit", "--callable", "box:slow", "--epsilon", "1", "--dim", "1",
        "--attack", "majority", "--draws", "1e7", "--json",
    ]  # fmt: skip
    resume = ["--resume", str(tmp_path / "run.json")]
    args = audit + resume + ["--scheduler", "local:2"]
    done = _interrupt(args, tmp_path, started=(tmp_path / "run.json").exists)
    line = _assert_one_line(done)
    assert "rerun to go on" in line, line
    kept = json.loads((tmp_path / "run.json").read_text())["draws"]
    assert 0 < kept < 10**7

    def counts(extra):
        out = subprocess.run(
            [sys.executable, "-m", "mcdp", *audit, *extra], cwd=tmp_path,
            capture_output=True, text=True, check=True,
            env=os.environ | {"MCDP_TEST_MARKER": str(tmp_path / "called")},
        ).stdout  # fmt: skip
        return json.loads(out)["counts"]

    assert counts(resume) == counts([])  # resumed here, without the cluster
