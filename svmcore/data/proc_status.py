"""A process's own figures from /proc/self/status: the worker's phase marks, pass ends and thread
count, the scoring process's peak (standard library only: read before the imports phase ends)."""

from __future__ import annotations


def status_kib(*names: bytes) -> list[int]:
    """Fields of /proc/self/status (``b"VmRSS:"``: kB, or a count), in the order asked, 0 if absent."""
    found = dict.fromkeys(names, 0)
    with open("/proc/self/status", "rb") as f:
        for line in f:
            key = line.split(maxsplit=1)[0]
            if key in found:
                found[key] = int(line.split()[1])
    return [found[n] for n in names]
