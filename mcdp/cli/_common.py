"""What the subcommands of the command line share: the exit statuses, the one-line
errors, the parser class, following an audit's partial results, joining a run on
several hosts, and the private helpers of other mcdp modules that the CLI uses.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

from mcdp.cli._text import render
from mcdp.engines.base import EngineLost

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def fail(message: str) -> NoReturn:
    """Prints ``mcdp: error: message`` (one line) and exits with status 2."""
    print(f"mcdp: error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, without the usage block."""

    def error(self, message: str) -> NoReturn:
        fail(f"{self.prog}: {message}")


def interrupted(what: str = "") -> int:
    """Prints the one line of a run stopped by Ctrl-C, ``mcdp: interrupted`` and
    ``what`` was kept, and returns the exit status 130."""
    print(f"mcdp: interrupted{'; ' + what if what else ''}", file=sys.stderr)
    return EXIT_INTERRUPTED


def follow(runs, show, as_json: bool, resume: str | None = None) -> int:
    """Show each partial result of ``runs``, then print the last one.

    Bad input found at the first step exits with its message. An interrupt stops
    the run (its workers too), and so does a lost cluster: one line on stderr says
    what is kept (the last result, printed, and the counts in the ``resume`` file
    where there is one), and the exit status is 130 (1 for a lost cluster).
    """
    result, status = None, 0
    try:
        for result in runs:
            show(result)
    except ValueError as err:
        if result is not None:
            raise
        fail(str(err))
    except KeyboardInterrupt:
        runs.close()
        status = interrupted(_kept(result, resume))
    except EngineLost as err:
        runs.close()
        print(f"mcdp: {err}; {_kept(result, resume)}", file=sys.stderr)
        status = 1
    if result is not None:
        print(result.to_json() if as_json else render(result))
    return status


def _kept(result, resume: str | None) -> str:
    """What a stopped run keeps, in words."""
    kept = "no draws were counted"
    if result is not None:
        draws = getattr(result, "audit", result).draws
        kept = f"the result of the first {draws:,} draws per input follows"
    if resume is not None and result is not None:
        kept += f"; its counts are kept in {resume}: rerun to go on"
    return kept


def join_distributed(args: argparse.Namespace) -> None:
    """Joins the run if ``--coordinator`` was given; other processes stay silent.

    The options are those of :func:`mcdp.cli._options.add_host_options`; a
    subcommand without them never joins.
    """
    given = [
        getattr(args, name, None) is not None
        for name in ("coordinator", "num_processes", "process_id")
    ]
    if not any(given):
        return
    if not all(given):
        fail("--coordinator, --num-processes and --process-id go together.")
    from mcdp import distributed

    try:
        distributed.initialize(args.coordinator, args.num_processes, args.process_id)
    except ValueError as err:
        message = str(err)
        for name, flag in [
            ("coordinator_address", "--coordinator"),
            ("num_processes", "--num-processes"),
            ("process_id", "--process-id"),
        ]:
            message = message.replace(f"Expected {name} ", f"Expected {flag} ", 1)
        fail(message)
    # the collectives' native libraries log to file descriptor 1: send that to
    # stderr and keep the real stdout for mcdp's own output (process 0 only)
    sys.stdout.flush()
    real_stdout = os.dup(1)
    os.dup2(2, 1)
    if distributed.is_main_process():
        sys.stdout = os.fdopen(real_stdout, "w")
    else:
        os.close(real_stdout)
        sys.stdout = open(os.devnull, "w")  # for the rest of the process
