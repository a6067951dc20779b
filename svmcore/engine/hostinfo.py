"""What a run's figures depend on besides its knobs: the machine it ran on."""

from __future__ import annotations

import os
import socket

import psutil


def this_host() -> dict:
    """Name, CPU count and memory of this machine, as stored with each run."""
    return {"host": socket.gethostname(), "cpus": os.cpu_count(), "memory_bytes": psutil.virtual_memory().total}


def available_memory_bytes() -> int:
    """Memory the kernel could give a new process now without swapping (psutil's
    ``available``: free memory plus reclaimable cache)."""
    return int(psutil.virtual_memory().available)
