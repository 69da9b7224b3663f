"""Power on the benchmark suite: the learned attack at its defaults flags every case
whose claim is wrong, on the case's worst named pair (chosen from the exact losses,
before anything is drawn), and never bounds a case above its exact loss."""

import pytest

import mcdp
from mcdp.mechanisms.suite import SUITE, worst_pair

from conftest import SEED

DRAWS = 1_000_000  # per input: the test default of this check (~1 min per case)
BROKEN = [name for name in SUITE if mcdp.get_mechanism(name).flaw is not None]


def test_the_suite_has_broken_and_correct_cases():
    assert len(BROKEN) == 9
    assert "svt3" in BROKEN and "noisy-hist1" not in BROKEN


@pytest.mark.slow
@pytest.mark.parametrize("name", BROKEN)
def test_learned_flags_every_broken_case(name):
    case = SUITE[name]
    pair, exact = worst_pair(name)
    result = mcdp.audit_delta(
        name, case.epsilon, 0.0, case.dim, DRAWS, pair=pair, attack="learned",
        seed=SEED,
    )  # fmt: skip
    assert result.violated, (pair, result.epsilon_lower)
    assert case.epsilon < result.epsilon_lower <= exact
