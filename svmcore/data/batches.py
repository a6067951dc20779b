"""Minibatches for training, from memory, from a memory map, or streamed from a file.

Storage precision and compute precision differ only for float16: scipy.sparse and
scikit-learn cannot compute in float16, so each float16 batch is upcast to float32
as it is cut. Everything else is cut straight from the stored arrays.

Shuffling (``Shuffle``): every epoch visits the training rows in a new random order,
drawn from (seed, epoch) only, so the same seed gives the same order. What it holds
depends on where the rows are:
- in memory: a permutation of the row ids (8 bytes a row), each batch gathered from it;
- memory-mapped: a window of ``window_rows`` rows at a time, drawn from small blocks
  picked at random across the whole file (``shuffle_order``) and shuffled in memory, so
  only the window's rows are held and a label block of the file reaches every window;
- streamed from text: a pool of about ``window_rows`` rows (a data loader's shuffle
  buffer), which can only mix rows that lie within its reach of each other; later
  passes read the spill in windows drawn like memory-mapped data.
"""

from __future__ import annotations

import ctypes
import mmap
import queue
import threading
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from svmcore.data.lazy_sparse import sp
from svmcore.data.rows import as_parts
from svmcore.data.shuffle_order import buffer_rounds, piece_rows, window_pieces
from svmcore.data.sources import Source, is_test_row, last_test_row
from svmcore.data.upcast import to_compute
from svmcore.spec.errors import DataChangedError

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
    Xb = sp.csr_matrix((to_compute(data[lo:hi], cdtype), np.asarray(indices[lo:hi]),
                        np.asarray(indptr[start:stop + 1]) - lo), shape=(stop - start, n_features))
    return Xb.toarray() if dense else Xb


def gather_rows(parts, rows: np.ndarray, n_features: int, precision: str, dense: bool):
    """The given rows (any order) of CSR parts (data, indices, indptr) as a compute-ready batch."""
    data, indices, indptr = as_parts(parts).take(rows)
    Xb = sp.csr_matrix((to_compute(data, COMPUTE_DTYPES[precision]), indices, indptr),
                       shape=(rows.shape[0], n_features))
    return Xb.toarray() if dense else Xb


@dataclass(frozen=True)
class Shuffle:
    """How training rows are shuffled: seeded by ``seed`` and the epoch; ``window_rows``
    bounds what a memory-mapped or streamed source holds to shuffle."""

    seed: int
    window_rows: int
    # None: np.random.default_rng; or a twin with the same draws (the lean path's binding.Generator, so that
    # numpy.random is never imported there: named here, np.random would be loaded with this module)
    generator: Callable | None = None

    def rng(self, epoch: int, stage: int = 0):
        """The pass's generator, seeded by (seed, epoch, stage)."""
        return (self.generator or np.random.default_rng)([self.seed, epoch, stage])


def block_windows(n_rows: int, block_rows: int, window_rows: int, rng: np.random.Generator):
    """Blocks of ``block_rows`` consecutive rows in one random order over all rows, grouped
    into windows of ``window_rows // block_rows`` blocks (at least one). Yields each
    window's blocks as [(start, stop), ...], in file order within the window."""
    n_blocks = -(-n_rows // block_rows)
    for blocks in window_pieces(n_blocks, window_rows // block_rows, rng):
        yield [(int(b) * block_rows, min(n_rows, (int(b) + 1) * block_rows)) for b in np.sort(blocks)]


class ArrayData:
    """Training rows held as arrays: in RAM (memory mode) or memory-mapped (memmap mode).
    ``X`` is a dense matrix, a scipy CSR matrix, or CSR parts (data, indices, indptr)."""

    def __init__(self, X, y: np.ndarray, n_features: int, precision: str, dense_batches: bool,
                 shuffle: Shuffle | None = None):
        self.X, self.y = X, y
        self.n_features = n_features
        self.precision = precision
        self.dense_batches = dense_batches
        self.shuffle = shuffle
        self.n_rows = int(y.shape[0])

    def gather(self, rows: np.ndarray):
        """Rows in the given order, compute-ready."""
        X = self.X
        if isinstance(X, tuple):
            Xb = gather_rows(X, rows, self.n_features, self.precision, self.dense_batches)
        elif sp.issparse(X):
            Xb = X[rows]
            Xb = Xb.toarray() if self.dense_batches else Xb
        else:
            Xb = to_compute(X[rows], COMPUTE_DTYPES[self.precision])
        return Xb, np.asarray(self.y[rows])

    def batch(self, start: int, stop: int):
        X, cdtype = self.X, COMPUTE_DTYPES[self.precision]
        if isinstance(X, tuple):
            Xb = cut_rows(X, start, stop, self.n_features, self.precision, self.dense_batches)
        elif sp.issparse(X):
            Xb = X[start:stop]
            Xb = Xb.toarray() if self.dense_batches else Xb
        else:
            Xb = to_compute(X[start:stop], cdtype)
        return Xb, np.asarray(self.y[start:stop])

    def batches(self, batch_size: int, epoch: int = 0) -> Iterator[tuple[object, np.ndarray]]:
        mapped = _mapped_arrays(self.X, self.y)
        if self.shuffle is not None and mapped:
            yield from self._window_batches(batch_size, epoch)
            return
        if self.shuffle is not None:
            order = self.shuffle.rng(epoch).permutation(self.n_rows)
            for start in range(0, self.n_rows, batch_size):
                yield self.gather(order[start:start + batch_size])
            return
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

    def _window_batches(self, batch_size: int, epoch: int) -> Iterator[tuple[object, np.ndarray]]:
        """Memory-mapped rows shuffled window by window: each window is drawn from small
        blocks (``shuffle_order.piece_rows``) picked at random across the whole map; each
        block is copied out of the map and its pages released at once, then the window's
        rows are shuffled in memory and cut into batches. What it holds is the window's
        rows in storage form, plus one block's pages while it is copied."""
        rng = self.shuffle.rng(epoch)
        window = self.shuffle.window_rows
        for spans in block_windows(self.n_rows, piece_rows(window), window, rng):
            Xs, ys = [], []
            for a, b in spans:
                Xs.append(_copy_rows(self.X, a, b))
                ys.append(np.asarray(self.y[a:b]))
                _release_rows(self.X, self.y, a, b, pad_bytes=FAULT_AROUND_BYTES)
            window = ArrayData(_stack_stored(Xs), np.concatenate(ys), self.n_features, self.precision,
                               self.dense_batches)
            del Xs, ys
            order = rng.permutation(window.n_rows)
            for start in range(0, window.n_rows, batch_size):
                yield window.gather(order[start:start + batch_size])


def _copy_rows(X, start: int, stop: int):
    """Rows [start, stop) of stored X, copied out of any memory map."""
    if isinstance(X, tuple):
        data, indices, indptr = X[:3]
        lo, hi = int(indptr[start]), int(indptr[stop])
        return (np.array(data[lo:hi]), np.array(indices[lo:hi]), np.array(indptr[start:stop + 1]) - lo)
    return np.array(X[start:stop])


def _stack_stored(parts: list):
    """Copied row ranges (from ``_copy_rows``) as one stored array."""
    if not isinstance(parts[0], tuple):
        return np.concatenate(parts) if len(parts) > 1 else parts[0]
    offsets = np.cumsum([0] + [p[2][-1] for p in parts[:-1]])
    indptr = np.concatenate([np.zeros(1, np.int64)] + [p[2][1:] + off for p, off in zip(parts, offsets)])
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), indptr)


RELEASE_EVERY_BYTES = 16 * 2**20  # mapped bytes passed before they are released
FAULT_AROUND_BYTES = 2 * 2**20  # file pages are mapped in large folios (up to 2 MiB here)
_MADV_DONTNEED = 4
_PAGE = mmap.PAGESIZE


def _mapped_arrays(X, y) -> list:
    parts = list(X) if isinstance(X, tuple) else [X]
    parts.append(getattr(y, "yi", y))
    return [a for a in parts if isinstance(a, np.memmap)]


def _release_rows(X, y, start: int, stop: int, pad_bytes: int = 0) -> None:
    """Drop the pages of rows [start, stop) from this process's memory map. They stay
    in the kernel's page cache (the next epoch re-maps them from there without disk
    reads), but they no longer count in the worker's RSS, so a memory-mapped pass
    holds about one batch, not the whole file.

    Whole pages only, unless ``pad_bytes``: then the range is widened by that much on
    each side (for callers whose batches are copies, never views of the map): the
    kernel maps cached neighbours on each fault (64 KiB of "fault-around", and whole
    large folios of the page cache, 2 MiB on ext4 here), so blocks read out of order
    leave their neighbours mapped."""
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
        base, size = arr.ctypes.data, arr.nbytes
        begin = base + a * row_bytes
        end = base + b * row_bytes
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


def split_chunks(chunks, want_test: bool, rows: int, select=None) -> Iterator[tuple[object, np.ndarray]]:
    """Keep the train (or test) rows of row-ordered chunks of a dataset of ``rows`` rows.
    A test pass stops reading after the last test row. ``select(X, y, keep)`` cuts the
    kept rows of a chunk (default: indexing by the mask; ``Rows`` gather them)."""
    row0 = 0
    last_test = last_test_row(rows)
    for X, y in chunks:
        n = y.shape[0]
        if want_test and row0 > last_test:
            return
        mask = is_test_row(np.arange(row0, row0 + n), rows)
        row0 += n
        keep = mask if want_test else ~mask
        if keep.all():
            out = [(X, y)]
        elif keep.any():
            out = [(X[keep], y[keep]) if select is None else select(X, y, keep)]
        else:
            continue
        X = y = None  # handed on, not held here while the consumer works on it (a parsed block: ~0.5 MiB)
        yield out.pop()


def split_both(chunks, test_parts: list, rows: int) -> Iterator[tuple[object, np.ndarray]]:
    """One pass that yields the train rows and appends the test rows to ``test_parts``,
    for loaders that read everything anyway."""
    row0 = 0
    for X, y in chunks:
        mask = is_test_row(np.arange(row0, row0 + X.shape[0]), rows)
        row0 += X.shape[0]
        if mask.any():
            test_parts.append((X[mask], y[mask]))
        if mask.all():
            continue
        yield (X, y) if not mask.any() else (X[~mask], y[~mask])


class _Stacked:
    """The classic shuffle buffer: row chunks held as they came, stacked into one pool when
    rows are first taken from it; the kept rows are copied out of it and the pool let go."""

    def __init__(self):
        self.pend: list = []
        self.pool = None
        self.rows = 0

    def add(self, X, y) -> None:
        self.pend.append((X, y))
        self.rows += y.shape[0]

    def take(self, rows: np.ndarray):
        if self.pool is None:
            self.pool = (_stack([X for X, _ in self.pend]), np.concatenate([y for _, y in self.pend]))
            self.pend = []
        P, Py = self.pool
        return P[rows], Py[rows]

    def keep(self, rows: np.ndarray) -> None:
        kept = self.take(rows) if rows.shape[0] else None
        self.pool = None
        self.pend, self.rows = ([kept], rows.shape[0]) if kept is not None else ([], 0)


def pool_shuffle(chunks, pool_rows: int, rng: np.random.Generator) -> Iterator[tuple[object, np.ndarray]]:
    """Row chunks in, the same rows out in a random order, holding at most about
    ``pool_rows`` rows (plus one chunk): when the pool is over ``pool_rows`` it is
    shuffled and all but half a pool leave, so a row stays for a random number of
    rounds, as in a data loader's shuffle buffer, and is copied about twice."""
    buffer = _Stacked()
    for out in buffer_rounds(chunks, pool_rows, rng, buffer):
        yield buffer.take(out)


class StreamData:
    """Training rows read from a file on disk every epoch, a batch at a time; the whole
    file is never in memory. With ``reader_thread`` a thread parses ahead into a queue
    of two batches, so reading overlaps training. With ``spill`` the first epoch also
    writes the parsed rows to a compact binary file that later epochs read instead of
    parsing the text again."""

    def __init__(self, source: Source, n_rows: int, n_features: int, precision: str,
                 dense_batches: bool, reader_thread: bool, hold_out: bool = True, spill=None,
                 shuffle: Shuffle | None = None, total_rows: int | None = None):
        self.source = source
        self.shuffle = shuffle
        self.total_rows = total_rows if total_rows is not None else n_rows
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
            chunks = split_chunks(chunks, want_test=False, rows=self.total_rows)
        return rebatch(chunks, batch_size)

    def _produce(self, batch_size: int, epoch: int = 0) -> Iterator[tuple[object, np.ndarray]]:
        if epoch > 0 and self.spill is not None and self.spill.complete:
            if self.shuffle is not None:
                raw = self.spill.read_windows(batch_size, self.shuffle.window_rows, self.shuffle.rng(epoch))
            else:
                raw = self.spill.read(batch_size)
        else:
            raw = self._parsed(batch_size)
            if self.shuffle is not None:
                raw = rebatch(pool_shuffle(raw, self.shuffle.window_rows, self.shuffle.rng(epoch)), batch_size)
            if self.spill is not None and epoch == 0:  # in the order trained: shuffled, see spill.py
                raw = self.spill.write_through(raw)
        rows = 0
        for Xb, yb in raw:
            rows += yb.shape[0]
            if rows > self.n_rows:  # more rows than the scan counted: never train on them
                self._changed(rows, epoch)
            yield self._ready(Xb), yb
        if rows != self.n_rows:
            self._changed(rows, epoch)

    def _ready(self, Xb):
        """A parsed or spilled batch, compute-ready."""
        cdtype, sdtype = COMPUTE_DTYPES[self.precision], STORE_DTYPES[self.precision]
        if self.dense_batches and not sp.issparse(Xb):
            return to_compute(Xb.astype(sdtype, copy=False), cdtype)
        # values rounded to the storage precision, upcast, then densified if asked (scipy cannot densify float16)
        Xb = sp.csr_matrix(Xb) if not sp.issparse(Xb) else Xb
        Xb.data = to_compute(Xb.data.astype(sdtype, copy=False), cdtype)
        return Xb.toarray() if self.dense_batches else Xb

    def sample(self, rows: int) -> tuple[object, np.ndarray]:
        """The first ``rows`` training rows, compute-ready, parsed from the file without
        touching the spill: a transform is fitted on them before the first pass, which then
        writes the spill from its start (a half-written spill from this read made the
        later passes fail with 'the spill file is shorter than written')."""
        parsed = self._parsed(rows)
        try:
            Xb, yb = next(parsed)
        finally:
            parsed.close()
        return self._ready(Xb), yb

    def _changed(self, rows: int, epoch: int) -> None:
        """A pass found another number of training rows than the scan: the data changed."""
        self.source.check_unchanged()  # names what changed in the file, when it did
        more = "at least " if rows > self.n_rows else ""
        raise DataChangedError(f"{self.source.name} changed while {self.source.during}: {self.n_rows:,} training "
                               f"rows at the start, {more}{rows:,} in pass {epoch + 1}; re-run on a stable copy",
                               self.source.path)

    def batches(self, batch_size: int, epoch: int = 0) -> Iterator[tuple[object, np.ndarray]]:
        items = self._produce(batch_size, epoch)
        return read_ahead(items) if self.reader_thread else items


def read_ahead(items: Iterator, depth: int = 3) -> Iterator:
    """``items`` produced by a thread (the parsers release the GIL, so reading overlaps
    training). At most ``depth`` items exist ahead of the consumer's: the thread waits for
    a free place before it makes the next item, and drops its reference once the item is
    handed over, so no item is held while blocked on a full queue or after the consumer
    has let it go. An exception in the thread is raised here; closing the generator stops
    the thread."""
    q: queue.SimpleQueue = queue.SimpleQueue()
    room = threading.Semaphore(depth)
    stop = threading.Event()
    done = object()

    def work():
        try:
            it = iter(items)
            while True:
                while not room.acquire(timeout=0.1):
                    if stop.is_set():
                        return
                if stop.is_set():
                    return
                out = [next(it, done)]
                if out[0] is done:
                    q.put(done)
                    return
                q.put(out.pop())  # not held here once queued
        except BaseException as e:  # handed to the training thread
            q.put(e)

    t = threading.Thread(target=work, name="svmcore-reader", daemon=True)
    t.start()
    try:
        while True:
            box = [q.get()]
            room.release()
            if box[0] is done:
                return
            if isinstance(box[0], BaseException):
                raise box[0]
            yield box.pop()  # handed on, not held here while the consumer works on it
    finally:
        stop.set()
        t.join(timeout=5)
