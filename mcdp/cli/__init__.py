"""The ``mcdp`` command line: the top-level parser and :func:`main`.

Each subcommand is a module of this package (``audit``, ``search``, ``violations``,
``sensitivity``, ``grid``, ``figures``) with ``add_parser(subparsers)`` and
``run(args) -> int``; the option types are in :mod:`mcdp.cli._options` and what the
subcommands share in :mod:`mcdp.cli._common`.

Errors in the arguments print one line, ``mcdp: error: ...``, naming the argument,
and exit with status 2 before anything is computed or written.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from mcdp import _compilation_cache
from mcdp.cli import audit, figures, grid, search, sensitivity, violations
from mcdp.cli._common import Parser, interrupted, join_distributed

__all__ = ["build_parser", "main"]

SUBCOMMANDS = (
    audit,
    search,
    violations,
    sensitivity,
    grid,
    figures,
)  # in --help's order


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="mcdp",
        description="Monte-Carlo privacy-loss estimation with confidence bounds.",
    )
    subparsers = parser.add_subparsers(
        dest="command", required=True, parser_class=Parser
    )
    for module in SUBCOMMANDS:
        module.add_parser(subparsers)  # each sets the default handler=module.run
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; Ctrl-C anywhere ends it with one line and status 130
    (the subcommands keep what they counted first)."""
    try:
        args = build_parser().parse_args(argv)
        join_distributed(args)
        _compilation_cache.enable()  # a command is a run: its programs are kept
        return args.handler(args)
    except KeyboardInterrupt:
        return interrupted()
