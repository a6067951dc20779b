"""Training rows held as one block: in RAM (memory mode) or memory-mapped (memmap mode: the
binary copy's arrays as ``np.memmap``, their class codes too).

A pass visits the rows in order, or shuffled in a new order drawn from (seed, epoch): in
memory a permutation of the row ids (8 bytes a row), each batch gathered from it; mapped, a
window of ``window_rows`` rows at a time, drawn from small pieces picked at random across
the whole map (``shuffle_order``) and shuffled in memory, so only the window's rows are held
and a label block of the file reaches every window. A mapped pass drops the pages it read
from the process (they stay in the page cache), so it holds about a batch, not the file.
"""

from __future__ import annotations

import ctypes
import mmap
from typing import Iterator

import numpy as np

from svmcore.data.rows import Dense, Rows, concat
from svmcore.data.shuffle_order import Shuffle, block_windows, piece_rows

RELEASE_EVERY_BYTES = 16 * 2**20  # mapped bytes passed before they are released
FAULT_AROUND_BYTES = 2 * 2**20  # file pages are mapped in large folios (up to 2 MiB here)
_MADV_DONTNEED = 4
_PAGE = mmap.PAGESIZE


class InMemory:
    """``X`` (a block: ``rows.Parts`` or ``rows.Dense``, in the storage precision) and the rows'
    class ``codes``, cut into compute-ready batches (values as ``cdtype``)."""

    spill = None
    reader_thread = False

    def __init__(self, X, codes: np.ndarray, cdtype, shuffle: Shuffle | None = None):
        self.X, self.codes = X, codes
        self.cdtype = cdtype
        self.shuffle = shuffle
        self.n_rows = int(codes.shape[0])
        self.mapped = [a for a in (*X.spans(0, 0), (codes, 0, 0)) if isinstance(a[0], np.memmap)]

    @classmethod
    def load(cls, blocks, sdtype, cdtype, dense_width: int | None, shuffle: Shuffle | None) -> "InMemory":
        """Memory mode: every ``(block, codes)`` in storage form (values in ``sdtype``; dense,
        ``dense_width`` wide, for the dense representation), stacked into one block."""
        Xs, codes = [], []
        for X, c in blocks:
            Xs.append((Dense(X.dense(dense_width)) if dense_width else X.sparse().from_zero()).stored(sdtype))
            codes.append(c)
            X = None
        if not Xs:
            raise ValueError("no training rows")
        X_all = concat(Xs)
        del Xs
        return cls(X_all, np.concatenate(codes), cdtype, shuffle)

    @property
    def nbytes(self) -> int:
        """Bytes of rows held in memory (none for a map)."""
        return 0 if self.mapped else self.X.nbytes

    def head(self, n: int) -> Rows:
        """The first ``n`` rows, compute-ready (a transform is fitted on them)."""
        return self._cut(0, n)

    def _cut(self, a: int, b: int) -> Rows:
        return Rows(self.X.slice(a, b).compute(self.cdtype), np.asarray(self.codes[a:b], np.int64))

    def _gathered(self, X, codes: np.ndarray, rows: np.ndarray) -> Rows:
        return Rows(X.gather(rows).compute(self.cdtype), np.asarray(codes[rows], np.int64))

    def batches(self, batch_size: int, epoch: int = 0) -> Iterator[Rows]:
        if self.shuffle is not None and self.mapped:
            yield from self._windows(batch_size, epoch)
            return
        if self.shuffle is not None:
            order = self.shuffle.rng(epoch).permutation(self.n_rows)
            for start in range(0, self.n_rows, batch_size):
                yield self._gathered(self.X, self.codes, order[start:start + batch_size])
            return
        released = 0
        row_bytes = sum(a[0].nbytes for a in self.mapped) / max(1, self.n_rows)
        every = max(1, int(RELEASE_EVERY_BYTES / max(1.0, row_bytes)))
        for start in range(0, self.n_rows, batch_size):
            stop = min(start + batch_size, self.n_rows)
            yield self._cut(start, stop)
            if self.mapped and stop - released >= every:
                self._release(released, stop)
                released = stop
        if self.mapped:
            self._release(0, self.n_rows)

    def _windows(self, batch_size: int, epoch: int) -> Iterator[Rows]:
        """Mapped rows shuffled window by window: each window is drawn from small pieces
        (``shuffle_order.piece_rows``) picked at random across the whole map; each piece is
        copied out of the map and its pages released at once, then the window's rows are
        shuffled in memory and cut into batches. What it holds is the window's rows in storage
        form, plus one piece's pages while it is copied."""
        rng = self.shuffle.rng(epoch)
        window = self.shuffle.window_rows
        for spans in block_windows(self.n_rows, piece_rows(window), window, rng):
            Xs, cs = [], []
            for a, b in spans:
                Xs.append(self.X.slice(a, b).copy())
                cs.append(np.array(self.codes[a:b]))
                self._release(a, b, pad_bytes=FAULT_AROUND_BYTES)
            X, codes = concat(Xs), np.concatenate(cs)
            del Xs, cs
            order = rng.permutation(codes.shape[0])
            for start in range(0, codes.shape[0], batch_size):
                yield self._gathered(X, codes, order[start:start + batch_size])

    def _release(self, start: int, stop: int, pad_bytes: int = 0) -> None:
        """Drop the pages of rows [start, stop) from this process's memory map (they stay in
        the page cache, out of the worker's RSS). Whole pages only, unless ``pad_bytes`` widens
        the range on each side (for callers whose batches are copies): the kernel maps cached
        neighbours on each fault (fault-around, large folios), which pieces read out of order
        would leave mapped."""
        for arr, a, b in (*self.X.spans(start, stop), (self.codes, start, stop)):
            if not isinstance(arr, np.memmap) or b <= a:
                continue
            row_bytes = arr.itemsize * (int(np.prod(arr.shape[1:])) if arr.ndim > 1 else 1)
            base, size = arr.ctypes.data, arr.nbytes
            begin, end = base + a * row_bytes, base + b * row_bytes
            if pad_bytes:
                begin = max(base // _PAGE * _PAGE, (begin - pad_bytes) // _PAGE * _PAGE)
                end = min(-(-(base + size) // _PAGE) * _PAGE, -(-(end + pad_bytes) // _PAGE) * _PAGE)
            else:
                begin = -(-begin // _PAGE) * _PAGE  # whole pages only: neighbours may still be in use
                end = end // _PAGE * _PAGE
            if end > begin:
                _libc().madvise(ctypes.c_void_p(begin), ctypes.c_size_t(end - begin), _MADV_DONTNEED)


_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
        _LIBC.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    return _LIBC
