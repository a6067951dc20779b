"""The data's copies on disk: temporary names that say which process writes them (so
the leftovers of a killed one are found), the space a copy needs against the space its
folder's disk has, and a full disk said in one line that names the folder (never
numpy's "N requested and M written").

Standard library only: the worker imports it before anything else.
"""

from __future__ import annotations

import errno
import logging
import os
import re

from svmcore.spec.errors import DiskFull

log = logging.getLogger(__name__)

MiB = 2**20
_TEMPORARY = re.compile(r"\.(\d+)-[0-9a-f]+\.tmp$")
ADVICE = "free some space or put the data folder on a larger disk"
_ADVICE_SENTENCE = ADVICE[0].upper() + ADVICE[1:]
# a worker that ended without its outcome while its disk had less than this free could not write it
NEARLY_FULL_BYTES = MiB


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


def is_inside(path: str, *folders: str) -> bool:
    """Whether ``path`` lies in one of ``folders`` (never one of them itself), symlinks followed."""
    real = os.path.realpath(path)
    return any(real.startswith(os.path.join(os.path.realpath(f), "")) for f in folders)


def free_bytes(folder: str) -> int:
    """Bytes this process can still write on the disk that holds ``folder`` (or, if it
    does not exist yet, its nearest existing parent)."""
    path = os.path.abspath(folder)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def is_disk_full(e: BaseException) -> bool:
    """A write refused for want of space: ENOSPC, EDQUOT, or numpy's short write, which
    has no errno ("21734 requested and 20480 written")."""
    if not isinstance(e, OSError):
        return False
    return e.errno in (errno.ENOSPC, errno.EDQUOT) or (e.errno is None and "requested and" in str(e))


def mib(n: float) -> str:
    return f"{n / MiB:,.1f} MiB"


def check_room(what: str, folder: str, need_bytes: int, written_bytes: int = 0, upper_bound: bool = False) -> None:
    """Refuse a copy that would not fit (``written_bytes`` of it are on disk already):
    DiskFull naming ``what``, the folder, the space it needs (``upper_bound``: at most)
    and the space there is."""
    free = free_bytes(folder)
    if need_bytes - written_bytes > free:
        raise DiskFull(f"not enough disk space: {what} needs {'up to' if upper_bound else 'about'} {mib(need_bytes)} "
                       f"in {folder}, and {mib(free)} are free; {ADVICE}")


def full_text(folder: str, cause: str, free: int) -> str:
    """``disk full: CAUSE in FOLDER; N MiB are free. Free some space ...``: one line."""
    return f"disk full: {cause} in {folder}; {mib(free)} are free. {_ADVICE_SENTENCE}"


def disk_full(what: str, folder: str, need_bytes: int | None = None, written_bytes: int | None = None,
              removed: str = "the partial copy was removed", plural: bool = False) -> DiskFull:
    """The disk filled up while ``what`` was written in ``folder`` (the partial copy
    already removed, as ``removed`` says): one line with the space it needs, what was
    written and what is free."""
    verb = "need" if plural else "needs"
    needs = f"{verb} about {mib(need_bytes)} " if need_bytes else f"{verb} more space "
    written = f"{mib(written_bytes)} were written before the disk filled up and " if written_bytes is not None else ""
    return DiskFull(f"disk full: {what} {needs}in {folder}; {written}{mib(free_bytes(folder))} are free. "
                    f"{_ADVICE_SENTENCE}; {removed}")


def tree_bytes(path: str) -> int:
    """Bytes in the files at or under ``path`` (0 if it is gone)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total
