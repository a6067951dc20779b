"""Memory caps: RLIMIT_DATA on the worker, and a cgroup (v1 memory controller)
that holds the worker's whole process tree where this machine allows it.

The cgroup also serves without a cap: it lists every descendant, so cancel can
kill processes that double-forked away from the session.
"""

from __future__ import annotations

import functools
import logging
import os
import time
import uuid

log = logging.getLogger(__name__)

_MEMORY_ROOT = "/sys/fs/cgroup/memory"
_MEMORY_CONTROLLER = "memory"  # cgroup v1 controller name in /proc/self/cgroup


def _own_memory_cgroup() -> str | None:
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if _MEMORY_CONTROLLER in controllers.split(","):
                    return os.path.join(_MEMORY_ROOT, path.lstrip("/"))
    except OSError:
        return None
    return None


@functools.lru_cache(maxsize=1)
def cgroup_parent() -> str | None:
    """A writable cgroup v1 memory folder for our runs, or None.

    It creates ``svmcore/`` inside this process's own memory cgroup: call it from the
    process that starts runs, never from a worker (which sits in its run's cgroup, where
    the folder would block the run's cgroup from being removed)."""
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


def _groups_bottom_up(path: str) -> list[str]:
    """``path`` and every cgroup below it, deepest first."""
    out = [root for root, _, _ in os.walk(path, topdown=False)]
    return out or [path]


def cgroup_pids(path: str) -> list[int]:
    """Every process in the cgroup ``path`` and in the groups below it (v1 lists a
    process only in the group it sits in)."""
    pids: list[int] = []
    for group in _groups_bottom_up(path):
        try:
            with open(os.path.join(group, "cgroup.procs")) as f:
                pids += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return pids


def is_run_cgroup(path: str | None) -> bool:
    """Whether ``path`` names a run's cgroup as ``create_cgroup`` makes them
    (MEMORY_ROOT/.../svmcore/run-*): the only folders the cleanup may kill in and remove."""
    if not path:
        return False
    real = os.path.realpath(path)
    return (real.startswith(_MEMORY_ROOT + os.sep) and os.path.basename(os.path.dirname(real)) == "svmcore"
            and os.path.basename(real).startswith("run-"))


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


def cgroup_charge(path: str) -> tuple[int, int] | None:
    """What the kernel charges to the cgroup now, the quantity its limit bounds
    (``memory.usage_in_bytes``: the group's anonymous memory, kernel memory and the page cache
    its processes brought in first), and the page cache within it that the kernel reclaims
    before it kills (``memory.stat``: the file pages on its LRU lists). None once it is gone."""
    try:
        with open(os.path.join(path, "memory.usage_in_bytes"), "rb") as f:
            usage = int(f.read())
        with open(os.path.join(path, "memory.stat"), "rb") as f:
            stat = f.read()
    except (OSError, ValueError):
        return None
    cache = 0
    for line in stat.splitlines():
        key, _, value = line.partition(b" ")
        if key in (b"total_active_file", b"total_inactive_file"):
            cache += int(value)
    return usage, min(cache, usage)


def cgroup_peak_bytes(path: str) -> int | None:
    try:
        with open(os.path.join(path, "memory.max_usage_in_bytes")) as f:
            return int(f.read())
    except OSError:
        return None


def remove_cgroup(path: str, timeout_s: float = 2.0) -> bool:
    """Remove the cgroup ``path`` and any group below it, deepest first, once their
    processes are gone (the kernel refuses, EBUSY, while a group holds a process or a
    child group). Waits up to ``timeout_s`` for exiting processes to leave; logs a
    warning and returns False if a group is still there."""
    deadline = time.monotonic() + timeout_s
    for group in _groups_bottom_up(path):
        while True:
            try:
                os.rmdir(group)
                break
            except FileNotFoundError:
                break
            except OSError as e:
                if time.monotonic() > deadline:
                    log.warning("could not remove the cgroup %s (%s; processes in it: %s); remove it with "
                                "rmdir once they have ended", group, e.strerror, cgroup_pids(group) or "none")
                    return False
                time.sleep(0.05)  # a killed process takes a moment to leave its group
    return True


def _write(path: str, name: str, value: str) -> None:
    with open(os.path.join(path, name), "w") as f:
        f.write(value)
