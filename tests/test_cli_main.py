"""The top level of the command line: each subcommand runs its own module, errors
before any subcommand is chosen are one line, and ``python -m mcdp.cli`` works."""

import subprocess
import sys

import pytest

from mcdp.cli import build_parser

from conftest import assert_one_line_error


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "--mechanism", "laplace", "--epsilon", "1", "--dim", "1"],
        ["violations"],
        ["sensitivity"],
        ["grid", "acl2022", "--draws", "10", "--out", "g.json"],
        ["figures"],
    ],
)
def test_each_subcommand_runs_its_module(argv):
    args = build_parser().parse_args(argv)
    assert args.command == argv[0]
    assert args.handler.__module__ == f"mcdp.cli.{argv[0]}"


def test_a_missing_or_unknown_subcommand_is_one_line(capsys):
    assert_one_line_error(capsys, [], "required", "command")
    assert_one_line_error(capsys, ["nope"], "'nope'", "'audit'", "'figures'")


def test_python_m_mcdp_cli():
    run = subprocess.run(
        [sys.executable, "-m", "mcdp.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "{audit,search,violations,sensitivity,grid,figures}" in run.stdout
