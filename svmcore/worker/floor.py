"""The allocator settings of a run: a fixed mmap threshold for every run, and for a run that
loads numpy and the native library only (``RunConfig.lean``) the rest that keeps its floor and
peak near what is live; the MiB each one saves were measured (docs/lean.md)."""

from __future__ import annotations

import ctypes
import logging
import sys

log = logging.getLogger(__name__)

# Arrays from this size up are mapped on their own and unmapped when freed: glibc's own rising threshold
# held 18-30 MiB more; 256 KiB was 5-10% slower for the same peak (docs/lean.md).
MMAP_THRESHOLD = 512 * 1024
# Heap top freed above this goes back: at 1 MiB later passes gave back and faulted in 55-80 MiB a pass.
TRIM_THRESHOLD = 4 << 20


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8  # glibc's mallopt parameters


def _mallopt(*settings: tuple[int, int]) -> None:
    try:
        libc = ctypes.CDLL(None)
        for param, value in settings:
            libc.mallopt(param, value)
    except (OSError, AttributeError):  # not glibc: the default allocator's behaviour
        log.info("no glibc mallopt: the allocator keeps its own thresholds")


def every_run() -> None:
    """A fixed mmap threshold for every run. glibc's own rises to the size of each large block
    freed, and from then on blocks of that size come from the heap: a first run that writes its
    text copy (10,000-row chunks formatted on a second thread) kept 25 MiB of such heap through
    training, 30 MiB of its exact peak (60,000 rows in stream mode: 199.6 MiB against 169.4, the
    same CPU time; memory and memmap mode 2-5 MiB lower)."""
    _mallopt((M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def lean() -> None:
    """glibc's malloc told to keep the peak near what is live (with ``every_run``'s mmap
    threshold, a low trim threshold and one arena: the reader thread would otherwise get its
    own, with its own free space); numpy's huge-page advice off; OpenSSL's libcrypto kept out."""
    _mallopt((M_TRIM_THRESHOLD, TRIM_THRESHOLD), (M_ARENA_MAX, 1))
    _small_pages()
    # hashlib (svmcore's cache keys) then uses CPython's own SHA code, the same digests, without OpenSSL's
    # libcrypto (3.3 MiB of resident library pages); a None in sys.modules fails that import as hashlib expects
    sys.modules.setdefault("_hashlib", None)


def _small_pages() -> None:
    """Turn off numpy's huge-page advice on arrays of 4 MiB or more: the parser's arrays, sized
    for the densest block and a tenth written, held a 2 MiB page each (3.4 MiB of the peak)."""
    import numpy as np  # here: a traced run's tracker, started after every_run, sees numpy's import

    setter = getattr(np._core.multiarray, "_set_madvise_hugepage", None)
    if setter is None:
        log.warning("numpy %s has no _set_madvise_hugepage: arrays of 4 MiB or more may use huge pages",
                    np.__version__)
        return
    setter(False)


def trim() -> None:
    """Return the heap's free pages to the kernel (glibc's malloc_trim)."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
