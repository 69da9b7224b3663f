"""The counts of a seed are the same on 1, 2, 3 or 4 devices and on two hosts.

XLA exposes CPU cores as several devices with
``--xla_force_host_platform_device_count``, which must be set before JAX starts: each
check runs in a fresh Python process and compares with the counts of this process on
its one CPU device. Every process here is pinned to the CPU backend
(``JAX_PLATFORMS=cpu``, ``jax.devices("cpu")``), so the tests mean the same on a
machine with a GPU, where several processes cannot share the one GPU.
"""

import json
import os
import socket
import subprocess
import sys

import jax
import numpy as np
import pytest

from mcdp.attacks import MAJORITY_VOTE
from mcdp.mechanisms import get_mechanism
from mcdp.sampling import BLOCK_DRAWS, cell_key, count_outcomes, key

from conftest import SEED

# (mechanism, dtype, d, draws, chunk_blocks, call_chunks, prng): many chunks per call
# and several calls, so the devices share the chunks unevenly; a partial last block
CASES = [
    ("adept", "float64", 8, 41 * BLOCK_DRAWS + 123, 2, 3, "threefry4x32"),
    ("laplace", "float32", 3, 17 * BLOCK_DRAWS + 1, 1, 2, "threefry4x32"),
    ("laplace", "float64", 5, 23 * BLOCK_DRAWS + 7, 1, 3, "splitmix64"),
]

COUNTS_ON_DEVICES = """
import json, sys
import jax, numpy as np
from mcdp.attacks import MAJORITY_VOTE
from mcdp.mechanisms import get_mechanism
from mcdp.sampling import count_outcomes, key
seed, cases = json.loads(sys.argv[1])
{setup}
out = []
for name, dtype, d, draws, chunk_blocks, call_chunks, prng in cases:
    m = get_mechanism(name)
    xs = np.stack([np.zeros(d), np.ones(d)])
    out.append({{
        str(k): count_outcomes(
            key(seed, prng), m, MAJORITY_VOTE, xs, m.calibrate_sanity_check(1.0, d),
            draws,
            dtype=dtype, chunk_blocks=chunk_blocks, call_chunks=call_chunks,
            devices=jax.devices()[:k],
        ).tolist()
        for k in {device_counts}
    }})
print(json.dumps([jax.process_index(), jax.device_count(), out]))
"""


def _one_device_counts():
    runs = []
    for name, dtype, d, draws, chunk_blocks, call_chunks, prng in CASES:
        m = get_mechanism(name)
        xs = np.stack([np.zeros(d), np.ones(d)])
        runs.append(
            count_outcomes(
                key(SEED, prng), m, MAJORITY_VOTE, xs, m.calibrate_sanity_check(1.0, d),
                draws,
                dtype=dtype, chunk_blocks=chunk_blocks, call_chunks=call_chunks,
                devices=jax.devices("cpu")[:1],
            ).tolist()
        )  # fmt: skip
    return runs


def _python(script: str, devices: int, *args: str) -> subprocess.Popen:
    env = dict(
        os.environ,
        XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
        JAX_PLATFORMS="cpu",
    )
    return subprocess.Popen(
        [sys.executable, "-c", script, json.dumps([SEED, CASES]), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(proc: subprocess.Popen):
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    # three devices split the blocks unevenly; each count compiles its own programs
    # (38 s for all four on a cold compilation cache, 2 cores): the slow target
    "counts",
    [[3], pytest.param([1, 2, 3, 4], marks=pytest.mark.slow)],
)
def test_same_counts_on_devices(counts):
    assert len(jax.devices("cpu")) == 1  # this process: the reference
    script = COUNTS_ON_DEVICES.format(setup="", device_counts=repr(counts))
    process, devices, out = _result(_python(script, 4))
    assert (process, devices) == (0, 4)
    for case, expected in zip(out, _one_device_counts(), strict=True):
        assert case == {str(k): expected for k in counts}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(sys.platform != "linux", reason="Gloo collectives: Linux only")
def test_same_counts_on_two_processes():
    """Two processes with two CPU devices each, joined by jax.distributed: every
    process gets the totals of one process."""
    setup = (
        "from mcdp import distributed\n"
        "distributed.initialize(sys.argv[2], 2, int(sys.argv[3]))"
    )
    script = COUNTS_ON_DEVICES.format(setup=setup, device_counts="[4]")
    address = f"localhost:{_free_port()}"
    procs = [_python(script, 2, address, str(i)) for i in range(2)]
    results = [_result(p) for p in procs]
    expected = [{"4": counts} for counts in _one_device_counts()]
    assert results == [[0, 4, expected], [1, 4, expected]]


@pytest.mark.parametrize(
    "args,match",
    [
        (("localhost", 2, 0), "host:port"),
        (("localhost:99999", 2, 0), "host:port"),
        (("localhost:1234", 0, 0), "num_processes"),
        (("localhost:1234", 2, 2), r"process_id to be an integer in \[0, 1\]"),
    ],
)
def test_bad_distributed_settings_are_refused(args, match):
    from mcdp import distributed

    with pytest.raises(ValueError, match=match):
        distributed.initialize(*args)


@pytest.mark.skipif(sys.platform != "linux", reason="Gloo collectives: Linux only")
def test_cli_audit_on_two_processes():
    """``mcdp audit`` with --coordinator: process 0 prints the one-process result,
    process 1 prints nothing."""
    import mcdp

    args = ["audit", "--mechanism", "adept", "--epsilon", "1", "--dim", "8"]
    args += ["--draws", "20000", "--seed", str(SEED), "--json"]
    address = f"localhost:{_free_port()}"
    env = dict(
        os.environ,
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        JAX_PLATFORMS="cpu",
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "mcdp.cli", *args, "--coordinator", address]
            + ["--num-processes", "2", "--process-id", str(i)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    outputs = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr[-3000:]
        outputs.append(stdout)
    m = mcdp.get_mechanism("adept")
    expected = count_outcomes(  # the audit's counts on this process's CPU
        cell_key(SEED, "acl2022/adept/1.0/8/"), m, MAJORITY_VOTE,
        np.stack([np.zeros(8), np.ones(8)]), m.calibrate_sanity_check(1.0, 8), 20000,
        devices=jax.devices("cpu")[:1],
    )  # fmt: skip
    assert json.loads(outputs[0])["counts"] == expected.tolist()
    assert outputs[1] == ""


@pytest.mark.parametrize(
    "extra,fragments",
    [
        (["--coordinator", "localhost:1234"], ["go together"]),
        (
            ["--coordinator", "localhost", "--num-processes", "2", "--process-id", "0"],
            ["--coordinator", "host:port"],
        ),
        (
            ["--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"],
            ["--process-id", "[0, 1]"],
        ),
        (["--num-processes", "0"], ["--num-processes"]),
    ],
)
def test_cli_refuses_bad_distributed_options(capsys, extra, fragments):
    from conftest import assert_one_line_error

    args = ["audit", "--mechanism", "laplace", "--epsilon", "1", "--dim", "1"]
    assert_one_line_error(capsys, args + ["--draws", "1000", *extra], *fragments)
