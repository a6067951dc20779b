"""Memory caps: RLIMIT_DATA on the worker, and a cgroup (v1 memory controller)
that holds the worker's whole process tree where this machine allows it.

The cgroup also serves without a cap: it lists every descendant, so cancel can
kill processes that double-forked away from the session.
"""

from __future__ import annotations

import functools
import os
import resource
import time
import uuid

_MEMORY_ROOT = "/sys/fs/cgroup/memory"


def set_data_limit(limit_bytes: int) -> None:
    """RLIMIT_DATA: numpy/scipy then raise a clean MemoryError above the cap.
    (RLIMIT_AS is unusable: OpenBLAS/OpenMP reserve large virtual regions.)"""
    resource.setrlimit(resource.RLIMIT_DATA, (limit_bytes, limit_bytes))


def _own_memory_cgroup() -> str | None:
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "memory" in controllers.split(","):
                    return os.path.join(_MEMORY_ROOT, path.lstrip("/"))
    except OSError:
        return None
    return None


@functools.lru_cache(maxsize=1)
def cgroup_parent() -> str | None:
    """A writable cgroup v1 memory folder for our runs, or None."""
    base = _own_memory_cgroup()
    if not base or not os.path.isdir(base):
        return None
    parent = os.path.join(base, "svmcore")
    try:
        os.makedirs(parent, exist_ok=True)
        probe = os.path.join(parent, f"probe-{uuid.uuid4().hex[:8]}")
        os.mkdir(probe)
        ok = os.path.exists(os.path.join(probe, "memory.limit_in_bytes"))
        os.rmdir(probe)
        return parent if ok else None
    except OSError:
        return None


def cgroup_available() -> bool:
    return cgroup_parent() is not None


def create_cgroup(name: str, limit_bytes: int | None) -> str | None:
    parent = cgroup_parent()
    if parent is None:
        return None
    path = os.path.join(parent, name)
    try:
        os.makedirs(path, exist_ok=True)
        if limit_bytes is not None:
            _write(path, "memory.limit_in_bytes", str(limit_bytes))
            try:  # no swap on these machines, but make the cap hold if there is some
                _write(path, "memory.memsw.limit_in_bytes", str(limit_bytes))
            except OSError:
                pass
        return path
    except OSError:
        return None


def join_cgroup(path: str, pid: int | None = None) -> None:
    _write(path, "cgroup.procs", str(pid or os.getpid()))


def cgroup_pids(path: str) -> list[int]:
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def cgroup_oom_kills(path: str) -> int:
    """How many times the kernel's OOM killer acted in this cgroup (or its failcnt)."""
    try:
        with open(os.path.join(path, "memory.oom_control")) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except OSError:
        return 0
    return 0


def cgroup_peak_bytes(path: str) -> int | None:
    try:
        with open(os.path.join(path, "memory.max_usage_in_bytes")) as f:
            return int(f.read())
    except OSError:
        return None


def remove_cgroup(path: str, timeout_s: float = 2.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)


def _write(path: str, name: str, value: str) -> None:
    with open(os.path.join(path, name), "w") as f:
        f.write(value)
