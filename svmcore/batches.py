"""Minibatches for training, from memory, from a memory map, or streamed from a file.

Storage precision and compute precision differ only for float16: scipy.sparse and
scikit-learn cannot compute in float16, so each float16 batch is upcast to float32
as it is cut. Everything else is cut straight from the stored arrays.
"""

from __future__ import annotations

import ctypes
import mmap
import queue
import threading
from typing import Iterator

import numpy as np
import scipy.sparse as sp

from .datasets import MAX_TEST_ROWS, TEST_EVERY, Source, is_test_row
from .errors import DataChangedError

STORE_DTYPES = {"float64": np.float64, "float32": np.float32, "float16": np.float16}
COMPUTE_DTYPES = {"float64": np.float64, "float32": np.float32, "float16": np.float32}


def to_storage(X, precision: str, dense: bool):
    """A chunk in its storage form: CSR or dense, in the storage precision."""
    dtype = STORE_DTYPES[precision]
    if dense:
        X = X.toarray() if sp.issparse(X) else X
        return np.ascontiguousarray(X, dtype=dtype)
    if not sp.issparse(X):
        X = sp.csr_matrix(X)
    if precision == "float16":
        return (X.data.astype(np.float16), X.indices.astype(np.int32, copy=False),
                X.indptr.astype(np.int64, copy=False), X.shape[1])
    return sp.csr_matrix((X.data.astype(dtype, copy=False), X.indices, X.indptr), shape=X.shape)


def cut_rows(parts, start: int, stop: int, n_features: int, precision: str, dense: bool):
    """Rows [start, stop) of CSR parts (data, indices, indptr) as a compute-ready batch."""
    data, indices, indptr = parts
    lo, hi = int(indptr[start]), int(indptr[stop])
    cdtype = COMPUTE_DTYPES[precision]
    Xb = sp.csr_matrix((np.asarray(data[lo:hi], dtype=cdtype), np.asarray(indices[lo:hi]),
                        np.asarray(indptr[start:stop + 1]) - lo), shape=(stop - start, n_features))
    return Xb.toarray() if dense else Xb


class ArrayData:
    """Training rows held as arrays: in RAM (memory mode) or memory-mapped (memmap mode).
    ``X`` is a dense matrix, a scipy CSR matrix, or CSR parts (data, indices, indptr)."""

    def __init__(self, X, y: np.ndarray, n_features: int, precision: str, dense_batches: bool):
        self.X, self.y = X, y
        self.n_features = n_features
        self.precision = precision
        self.dense_batches = dense_batches
        self.n_rows = int(y.shape[0])

    def batch(self, start: int, stop: int):
        X, cdtype = self.X, COMPUTE_DTYPES[self.precision]
        if isinstance(X, tuple):
            Xb = cut_rows(X, start, stop, self.n_features, self.precision, self.dense_batches)
        elif sp.issparse(X):
            Xb = X[start:stop]
            Xb = Xb.toarray() if self.dense_batches else Xb
        else:
            Xb = np.asarray(X[start:stop], dtype=cdtype)
        return Xb, np.asarray(self.y[start:stop])

    def batches(self, batch_size: int, epoch: int = 0) -> Iterator[tuple[object, np.ndarray]]:
        mapped = _mapped_arrays(self.X, self.y)
        released = 0
        row_bytes = sum(a.nbytes for a in mapped) / max(1, self.n_rows)
        every = max(1, int(RELEASE_EVERY_BYTES / max(1.0, row_bytes)))
        for start in range(0, self.n_rows, batch_size):
            stop = min(start + batch_size, self.n_rows)
            yield self.batch(start, stop)
            if mapped and stop - released >= every:
                _release_rows(self.X, self.y, released, stop)
                released = stop
        if mapped:
            _release_rows(self.X, self.y, 0, self.n_rows)


RELEASE_EVERY_BYTES = 16 * 2**20  # mapped bytes passed before they are released
_MADV_DONTNEED = 4
_PAGE = mmap.PAGESIZE


def _mapped_arrays(X, y) -> list:
    parts = list(X) if isinstance(X, tuple) else [X]
    parts.append(getattr(y, "yi", y))
    return [a for a in parts if isinstance(a, np.memmap)]


def _release_rows(X, y, start: int, stop: int) -> None:
    """Drop the pages of rows [start, stop) from this process's memory map. They stay
    in the kernel's page cache (the next epoch re-maps them from there without disk
    reads), but they no longer count in the worker's RSS, so a memory-mapped pass
    holds about one batch, not the whole file."""
    if isinstance(X, tuple):
        data, indices, indptr = X[:3]
        lo, hi = int(indptr[start]), int(indptr[stop])
        ranges = [(data, lo, hi), (indices, lo, hi), (indptr, start, stop)]
    else:
        ranges = [(X, start, stop)]
    yi = getattr(y, "yi", y)
    ranges.append((yi, start, stop))
    for arr, a, b in ranges:
        if not isinstance(arr, np.memmap) or b <= a:
            continue
        row_bytes = arr.itemsize * (int(np.prod(arr.shape[1:])) if arr.ndim > 1 else 1)
        begin = arr.ctypes.data + a * row_bytes
        end = arr.ctypes.data + b * row_bytes
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


def rebatch(chunks: Iterator[tuple[object, np.ndarray]], batch_size: int) -> Iterator[tuple[object, np.ndarray]]:
    """Chunks of any size in, batches of exactly ``batch_size`` rows out (the last may be short)."""
    pend_X: list = []
    pend_y: list = []
    have = 0
    for X, y in chunks:
        start = 0
        while start < X.shape[0]:
            take = min(batch_size - have, X.shape[0] - start)
            pend_X.append(X[start:start + take])
            pend_y.append(y[start:start + take])
            have += take
            start += take
            if have == batch_size:
                yield _stack(pend_X), np.concatenate(pend_y)
                pend_X, pend_y, have = [], [], 0
    if have:
        yield _stack(pend_X), np.concatenate(pend_y)


def _stack(parts):
    if len(parts) == 1:
        return parts[0]
    return sp.vstack(parts, format="csr") if sp.issparse(parts[0]) else np.vstack(parts)


def split_chunks(chunks, want_test: bool) -> Iterator[tuple[object, np.ndarray]]:
    """Keep the train (or test) rows of row-ordered chunks. Test rows all lie in the
    first TEST_EVERY * MAX_TEST_ROWS rows, so a test pass stops reading there."""
    row0 = 0
    for X, y in chunks:
        n = X.shape[0]
        if want_test and row0 >= TEST_EVERY * MAX_TEST_ROWS:
            return
        mask = is_test_row(np.arange(row0, row0 + n))
        row0 += n
        keep = mask if want_test else ~mask
        if keep.all():
            yield X, y
        elif keep.any():
            yield X[keep], y[keep]


def split_both(chunks, test_parts: list) -> Iterator[tuple[object, np.ndarray]]:
    """One pass that yields the train rows and appends the test rows to ``test_parts``,
    for loaders that read everything anyway."""
    row0 = 0
    for X, y in chunks:
        mask = is_test_row(np.arange(row0, row0 + X.shape[0]))
        row0 += X.shape[0]
        if mask.any():
            test_parts.append((X[mask], y[mask]))
        if mask.all():
            continue
        yield (X, y) if not mask.any() else (X[~mask], y[~mask])


class StreamData:
    """Training rows read from a file on disk every epoch, a batch at a time; the whole
    file is never in memory. With ``reader_thread`` a thread parses ahead into a queue
    of two batches, so reading overlaps training. With ``spill`` the first epoch also
    writes the parsed rows to a compact binary file that later epochs read instead of
    parsing the text again."""

    def __init__(self, source: Source, n_rows: int, n_features: int, precision: str,
                 dense_batches: bool, reader_thread: bool, hold_out: bool = True, spill=None):
        self.source = source
        self.n_rows = n_rows
        self.n_features = n_features
        self.precision = precision
        self.dense_batches = dense_batches
        self.reader_thread = reader_thread
        self.hold_out = hold_out  # False with a separate test file: every row trains
        self.spill = spill

    def _parsed(self, batch_size: int) -> Iterator[tuple[object, np.ndarray]]:
        chunks = self.source.iter_chunks(batch_size, self.n_features)
        if self.hold_out:
            chunks = split_chunks(chunks, want_test=False)
        return rebatch(chunks, batch_size)

    def _produce(self, batch_size: int, epoch: int = 0) -> Iterator[tuple[object, np.ndarray]]:
        if epoch > 0 and self.spill is not None and self.spill.complete:
            raw = self.spill.read(batch_size)
        else:
            raw = self._parsed(batch_size)
            if self.spill is not None and epoch == 0:
                raw = self.spill.write_through(raw)
        cdtype = COMPUTE_DTYPES[self.precision]
        sdtype = STORE_DTYPES[self.precision]
        rows = 0
        for Xb, yb in raw:
            rows += yb.shape[0]
            if rows > self.n_rows:  # more rows than the scan counted: never train on them
                self._changed(rows, epoch)
            if self.dense_batches:
                Xb = Xb.toarray() if sp.issparse(Xb) else Xb
                Xb = Xb.astype(sdtype, copy=False).astype(cdtype, copy=False)
            else:
                Xb = sp.csr_matrix(Xb) if not sp.issparse(Xb) else Xb
                Xb.data = Xb.data.astype(sdtype, copy=False).astype(cdtype, copy=False)
            yield Xb, yb
        if rows != self.n_rows:
            self._changed(rows, epoch)

    def _changed(self, rows: int, epoch: int) -> None:
        """A pass found another number of training rows than the scan: the data changed."""
        self.source.check_unchanged()  # names what changed in the file, when it did
        more = "at least " if rows > self.n_rows else ""
        raise DataChangedError(f"{self.source.name} changed while {self.source.during}: {self.n_rows:,} training "
                               f"rows at the start, {more}{rows:,} in pass {epoch + 1}; re-run on a stable copy",
                               self.source.path)

    def batches(self, batch_size: int, epoch: int = 0) -> Iterator[tuple[object, np.ndarray]]:
        if not self.reader_thread:
            yield from self._produce(batch_size, epoch)
            return
        q: queue.Queue = queue.Queue(maxsize=2)
        stop = threading.Event()
        done = object()

        def work():
            try:
                for item in self._produce(batch_size, epoch):
                    while not stop.is_set():
                        try:
                            q.put(item, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                q.put(done)
            except BaseException as e:  # handed to the training thread
                q.put(e)

        t = threading.Thread(target=work, name="svmcore-reader", daemon=True)
        t.start()
        try:
            while True:
                item = q.get()
                if item is done:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            t.join(timeout=5)
