"""The data's copies on disk: temporary names that say which process writes them, so
that what a killed one left is found and removed.

Standard library only: the worker imports it before anything else.
"""

from __future__ import annotations

import logging
import os
import re

log = logging.getLogger(__name__)

_TEMPORARY = re.compile(r"\.(\d+)-[0-9a-f]+\.tmp$")


def temporary(path: str) -> str:
    """``PATH.PID-RANDOM.tmp``: a name beside ``path`` to build it under and rename into
    place, naming the process that writes it."""
    return f"{path}.{os.getpid()}-{os.urandom(4).hex()}.tmp"


def _alive(pid: int) -> bool:
    """A process that can still write: not gone, not a zombie nobody has reaped yet."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    except (OSError, IndexError):  # cannot tell: keep its files
        return True
    return state not in (b"Z", b"X")


def remove_orphaned_temporaries(folder: str) -> list[str]:
    """Remove the temporaries (``temporary``'s names) in ``folder`` whose process is gone:
    what a run killed while it built a copy left (a cancel, kill -9, the OOM killer). A
    live writer's are kept. Returns the names removed; what cannot be removed is logged."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    for name in names:
        m = _TEMPORARY.search(name)
        if not m or _alive(int(m.group(1))):
            continue
        path = os.path.join(folder, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                import shutil  # here: shutil loads bz2, lzma and zlib (a lean run's floor)

                shutil.rmtree(path)
            else:
                os.remove(path)
            removed.append(name)
        except FileNotFoundError:
            pass
        except OSError as e:
            log.warning("could not remove %s, a partial copy a stopped run left: %s", path, e)
    return removed
