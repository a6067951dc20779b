"""Reading a process's memory from the kernel (/proc), and identifying it safely."""

from __future__ import annotations

import os
from dataclasses import dataclass

_FIELDS = {b"VmRSS:": "rss_bytes", b"VmHWM:": "hwm_bytes", b"RssAnon:": "anon_bytes",
           b"RssFile:": "file_bytes", b"RssShmem:": "shmem_bytes", b"Threads:": "threads"}


@dataclass(frozen=True)
class MemoryReading:
    """One reading of /proc/PID/status. ``hwm_bytes`` is the kernel's exact peak
    (since start or the last clear_refs reset); the rest are instantaneous."""

    rss_bytes: int
    anon_bytes: int
    file_bytes: int
    hwm_bytes: int
    threads: int


def read_status(pid: int | str = "self") -> MemoryReading | None:
    """Memory figures of ``pid``, or None when it has exited (or is a zombie)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            raw = f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    values: dict[str, int] = {}
    for line in raw.splitlines():
        parts = line.split()
        name = _FIELDS.get(parts[0]) if parts else None
        if name is not None:
            values[name] = int(parts[1]) * (1 if name == "threads" else 1024)
    if "rss_bytes" not in values:
        return None  # zombie: no memory left to read
    shmem = values.pop("shmem_bytes", 0)
    return MemoryReading(
        rss_bytes=values["rss_bytes"], anon_bytes=values.get("anon_bytes", 0),
        file_bytes=values.get("file_bytes", 0) + shmem, hwm_bytes=values.get("hwm_bytes", 0),
        threads=values.get("threads", 0),
    )


def _stat_fields(pid: int) -> list[bytes] | None:
    """Fields of /proc/PID/stat after the command name (state first)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    # the command name may hold spaces and parentheses: split after the last ')'
    return raw[raw.rindex(b")") + 2:].split()


def create_time(pid: int) -> float | None:
    """Start time of ``pid`` in clock ticks since boot: with the pid it identifies a
    process even after the pid is reused."""
    fields = _stat_fields(pid)
    return None if fields is None else float(fields[19])


def is_same_process(pid: int, created: float | None) -> bool:
    """True if ``pid`` is still the process that started at ``created`` and has not
    exited (a zombie, waiting for a parent that may never reap it, counts as exited)."""
    fields = _stat_fields(pid) if created is not None else None
    return fields is not None and fields[0] not in (b"Z", b"X") and float(fields[19]) == created


def session_members(sid: int) -> list[int]:
    """Every live pid whose session id is ``sid`` (descendants that kept the session)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.getsid(int(name)) == sid:
                out.append(int(name))
        except OSError:
            continue
    return out
