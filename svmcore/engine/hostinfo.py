"""What a run's figures depend on besides its knobs: the machine it ran on."""

from __future__ import annotations

import os
import socket

import psutil


def this_host() -> dict:
    """Name, CPU count and memory of this machine, as stored with each run."""
    return {"host": socket.gethostname(), "cpus": os.cpu_count(), "memory_bytes": psutil.virtual_memory().total}


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity; a container may allow fewer than the host has)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def available_memory_bytes() -> int:
    """Memory the kernel could give a new process now without swapping (psutil's
    ``available``: free memory plus reclaimable cache)."""
    return int(psutil.virtual_memory().available)
