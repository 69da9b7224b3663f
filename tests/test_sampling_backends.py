"""A seed's counts are a contract, on every backend.

The counts below were recorded on a CPU (jax 0.10.2, x86-64). On a CPU this test
guards the streams against any change; on a GPU or TPU it checks that the backend
draws exactly what the CPU draws: the streams are integer-only, and the samplers'
floating-point steps round the same way there.
"""

import jax
import pytest

import mcdp

RECORDED = [
    ("adept", 32, "threefry4x32", "float64", [[99415, 585], [1505, 98495]]),
    ("adept", 32, "threefry4x32", "float32", [[99434, 566], [1530, 98470]]),
    ("adept", 32, "splitmix64", "float64", [[99410, 590], [1569, 98431]]),
    ("adept", 32, "splitmix64", "float32", [[99410, 590], [1569, 98431]]),
    ("laplace", 1, "threefry4x32", "float64", [[69594, 30406], [30567, 69433]]),
    ("laplace", 1, "threefry4x32", "float32", [[69785, 30215], [30446, 69554]]),
    ("laplace", 1, "splitmix64", "float64", [[69678, 30322], [30217, 69783]]),
    ("laplace", 1, "splitmix64", "float32", [[69678, 30322], [30217, 69783]]),
    ("dptext", 8, "threefry4x32", "float64", [[69959, 30041], [0, 100000]]),
    ("dptext", 8, "threefry4x32", "float32", [[70105, 29895], [0, 100000]]),
]


def test_the_backend_is_reported():
    assert mcdp.audit("laplace", 1.0, 1, 1024).backend == jax.default_backend()


@pytest.mark.parametrize("mechanism,dim,prng,dtype,counts", RECORDED)
def test_counts_recorded_on_a_cpu(mechanism, dim, prng, dtype, counts):
    result = mcdp.audit(mechanism, 1.0, dim, 100_000, seed=0, prng=prng, dtype=dtype)
    assert result.counts == counts


def test_support_test_counts_recorded_on_a_cpu():
    result = mcdp.audit_delta(
        "trlaplace", 1.0, 1 / 1200, 300, 20_000, pair="axis", attack="support"
    )
    assert result.counts == [[0, 726, 19274], [19255, 745, 0]]
