"""Runs on several hosts: every process counts its share of the blocks.

The engine (:mod:`mcdp.sampling`) spreads the blocks of a run over ``jax.devices()``,
which after :func:`initialize` holds the devices of every process, and sums the
counts across them; each process gets the totals, the same counts as one process
would. Start the same command on every host with its own ``process_id``::

    # host 0 (also the coordinator)          # host 1
    mcdp audit ... --coordinator h0:1234 \\    mcdp audit ... --coordinator h0:1234 \\
      --num-processes 2 --process-id 0         --num-processes 2 --process-id 1

Only process 0 prints and writes files (:func:`is_main_process`).
"""

from __future__ import annotations

import jax

from mcdp import _validate


def initialize(coordinator_address: str, num_processes: int, process_id: int) -> None:
    """Joins a ``jax.distributed`` run of ``num_processes`` processes.

    Must be called before anything runs on a device. On CPU the cross-process sums
    use Gloo (``jax_cpu_collectives_implementation``); on GPU and TPU, JAX's own.

    Args:
      coordinator_address: ``host:port`` of process 0, reachable from every host.
      num_processes: how many processes take part, ``>= 1``.
      process_id: this process, ``0 <= process_id < num_processes``.
    """
    host, sep, port = str(coordinator_address).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            "Expected coordinator_address of the form host:port (port in [1, "
            f"65535]), got {coordinator_address!r}."
        )
    num_processes = _validate.integer("num_processes", num_processes, low=1)
    process_id = _validate.integer(
        "process_id", process_id, low=0, high=num_processes - 1
    )
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=coordinator_address,
        num_processes=num_processes,
        process_id=process_id,
    )


def is_main_process() -> bool:
    """True in process 0 of a distributed run, and in a run of one process."""
    return jax.process_index() == 0
