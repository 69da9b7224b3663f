"""Every result record: its provenance, and to_dict / to_json / from_dict / str."""

import dataclasses
import json
import math

import jax
import pytest

import mcdp
from mcdp.cli._text import render, summary
from mcdp.core.records import (
    PROVENANCE_FIELDS,
    AuditResult,
    DeltaAuditResult,
    ProfilePoint,
    Provenance,
    Record,
)
from mcdp.sensitivity import SensitivityRecord, sensitivity_records
from mcdp.violations import ViolationResult, count_violations


def _records():
    return {
        "audit": mcdp.audit("none", 1.0, 2, 2048),  # an infinite loss
        "delta": mcdp.audit_delta("gaussian", 1.0, 1e-5, 4, 2048, attack="lr"),
        "violation": count_violations(mcdp.sampling.key(0), "uniform", [3], 1000)[0],
        "sensitivity": sensitivity_records(
            mcdp.sampling.key(0), [2], restarts=2, steps=5
        )[0],
    }


RECORDS = _records()
TYPES = {
    "audit": AuditResult,
    "delta": DeltaAuditResult,
    "violation": ViolationResult,
    "sensitivity": SensitivityRecord,
}


def test_every_record_type_shares_the_one_provenance():
    assert PROVENANCE_FIELDS == (
        "mcdp_version",
        "jax_version",
        "backend",
        "x64",
        "prng_impl",
    )
    for cls in TYPES.values():
        assert issubclass(cls, Record) and issubclass(cls, Provenance)


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_to_dict_ends_with_the_provenance_and_round_trips(name):
    record = RECORDS[name]
    assert isinstance(record, TYPES[name])
    d = record.to_dict()
    assert tuple(d)[-len(PROVENANCE_FIELDS) :] == PROVENANCE_FIELDS
    assert d["jax_version"] == jax.__version__
    assert d["backend"] == jax.default_backend()
    assert d["prng_impl"] == "threefry4x32"
    back = TYPES[name].from_dict(json.loads(record.to_json()))
    assert back == record
    assert render(record)


def test_json_writes_infinity_and_a_profile_of_points():
    audit = RECORDS["audit"]
    assert math.isinf(audit.loss)
    assert '"loss": Infinity' in audit.to_json()
    delta = RECORDS["delta"]
    assert all(isinstance(p, ProfilePoint) for p in delta.profile)
    points = json.loads(delta.to_json())["profile"]
    assert points[0] == dataclasses.asdict(delta.profile[0])
    assert {p["epsilon"] for p in points} >= {0.0, 1.0, 30.0}


def test_records_print_what_the_command_line_shows():
    assert "privacy loss inf" in render(RECORDS["audit"])
    assert "claim" not in render(RECORDS["audit"])  # 'none' claims no pure epsilon
    assert "claimed (epsilon, delta) = (1, 1e-05)" in render(RECORDS["delta"])
    assert render(RECORDS["violation"]).startswith("uniform n=3 (l2)")
    assert summary(RECORDS["audit"]).startswith("    none eps=1")
    assert summary(RECORDS["delta"]).startswith(" gaussian eps=1")


def test_target_width_record_flattens_its_audit():
    result = mcdp.audit_to_width("adept", 1.0, 2, 0.5, first_draws=4096)
    d = result.to_dict()
    assert d["counts"] == result.audit.counts and "audit" not in d
    assert d["target_width"] == 0.5 and d["prng_impl"] == "threefry4x32"
    assert json.loads(result.to_json())["rounds"] == result.rounds
    assert render(result).endswith(result.outcome)
