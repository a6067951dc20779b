"""The one batch type of the training loop, without scipy: ``Rows``, CSR parts
(``Parts``: data, indices int32, indptr int64 from 0) and the rows' class codes (int64
indices into the run's sorted classes). The native parser's blocks, the spill, the
shuffle buffer and the native solver all speak it; a scipy ``csr_matrix`` is built
only where a scikit-learn estimator needs one (``Parts.csr``).

Both are NamedTuples, so ``(data, indices, indptr), codes = rows`` and ``parts[:3]``
keep working wherever a plain tuple did.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

import numpy as np

from svmcore.data.native import binding
from svmcore.data.shuffle_order import buffer_rounds


class Parts(NamedTuple):
    """CSR parts of some rows."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray

    @property
    def n_rows(self) -> int:
        return self.indptr.shape[0] - 1

    @property
    def nbytes(self) -> int:
        return self.data.nbytes + self.indices.nbytes + self.indptr.nbytes

    def slice(self, a: int, b: int) -> "Parts":
        """Rows [a, b), as views."""
        lo, hi = int(self.indptr[a]), int(self.indptr[b])
        return Parts(self.data[lo:hi], self.indices[lo:hi], self.indptr[a:b + 1] - lo)

    def from_zero(self) -> "Parts":
        """These parts with an indptr that starts at 0 (a slice of a bigger block may not)."""
        if self.indptr[0] == 0:
            return self
        lo, hi = int(self.indptr[0]), int(self.indptr[-1])
        return Parts(self.data[lo:hi], self.indices[lo:hi], self.indptr - lo)

    def gather(self, rows: np.ndarray) -> "Parts":
        """Rows ``rows`` (any order), copied into compact arrays by the native library."""
        return Parts(*binding.gather_rows(*self, rows))

    def take(self, rows: np.ndarray) -> "Parts":
        """Rows ``rows`` (any order) in the parts' own dtype, numpy only (float16 too, which
        scipy cannot index, and memory-mapped parts)."""
        data, indices, indptr = self
        starts = np.asarray(indptr[rows], dtype=np.int64)
        lengths = np.asarray(indptr[rows + 1], dtype=np.int64) - starts
        out_ptr = np.zeros(rows.shape[0] + 1, np.int64)
        np.cumsum(lengths, out=out_ptr[1:])
        pos = np.repeat(starts - out_ptr[:-1], lengths) + np.arange(out_ptr[-1])
        return Parts(data[pos], np.asarray(indices[pos]), out_ptr)

    def csr(self, n_features: int, dtype=None):
        """A scipy CSR matrix over these arrays (the scikit-learn boundary: imports scipy)."""
        import scipy.sparse as sp

        data = self.data if dtype is None else self.data.astype(dtype, copy=False)
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.n_rows, n_features))


class Rows(NamedTuple):
    """A batch: CSR parts and one class code a row."""

    X: Parts
    codes: np.ndarray


def as_parts(parts) -> Parts:
    """Any (data, indices, indptr[, ...]) tuple as ``Parts``."""
    return parts if isinstance(parts, Parts) else Parts(*parts[:3])


def concat(parts: list) -> Parts:
    """CSR parts (data, indices, indptr from 0) stacked by rows, as one set of parts."""
    if len(parts) == 1:
        return as_parts(parts[0])
    data = np.concatenate([p[0] for p in parts])
    indices = np.concatenate([p[1] for p in parts])
    n = sum(p[2].shape[0] - 1 for p in parts)
    indptr = np.empty(n + 1, np.int64)
    indptr[0] = 0
    r = z = 0
    for p in parts:
        k = p[2].shape[0] - 1
        indptr[r + 1:r + k + 1] = p[2][1:] - p[2][0] + z
        r += k
        z += int(p[2][-1] - p[2][0])
    return Parts(data, indices, indptr)


EMPTY = Parts(np.zeros(0), np.zeros(0, np.int32), np.zeros(1, np.int64))


class Pool:
    """CSR parts held side by side, read by global row number without stacking them."""

    def __init__(self, parts: list):
        self.parts = binding.PartsGather(parts)  # (data, indices, indptr from 0) each
        self.starts = np.concatenate([[0], np.cumsum(self.parts.rows)])
        self.dtype = self.parts.dtype

    def gather(self, rows: np.ndarray) -> Parts:
        rows = np.asarray(rows, np.int64)
        part = np.searchsorted(self.starts, rows, side="right") - 1
        return Parts(*self.parts.gather(part, rows - self.starts[part]))


def rebatch(items, batch_size: int) -> Iterator[Rows]:
    """Rows of any sizes in, batches of exactly ``batch_size`` rows out (the last may be short).
    Every batch owns compact arrays (gathered from the pieces): a batch that were a view of a
    bigger stacked array would keep all of it alive, e.g. in the shuffle buffer."""
    pend_X: list = []
    pend_c: list = []
    have = 0
    for X, c in items:
        if c.shape[0] == 0:
            continue
        if not pend_X and c.shape[0] == batch_size:
            yield Rows(as_parts(X), c)
            continue
        pend_X.append(as_parts(X).from_zero())
        pend_c.append(c)
        have += c.shape[0]
        if have >= batch_size:
            pool, Pc = Pool(pend_X), np.concatenate(pend_c)
            pend_X = pend_c = None  # type: ignore[assignment]
            s = 0
            while have - s >= batch_size:
                yield Rows(pool.gather(np.arange(s, s + batch_size)), Pc[s:s + batch_size].copy())
                s += batch_size
            rest = (pool.gather(np.arange(s, have)), Pc[s:].copy()) if s < have else None
            del pool, Pc
            pend_X, pend_c = ([rest[0]], [rest[1]]) if rest else ([], [])
            have -= s
    if have:
        yield Rows(Pool(pend_X).gather(np.arange(have)) if len(pend_X) > 1 else pend_X[0], np.concatenate(pend_c))


def pool_shuffle(items, pool_rows: int, rng: np.random.Generator, batch_size: int) -> Iterator[Rows]:
    """``batches.pool_shuffle`` on ``Rows`` (``buffer_rounds``: the same rule and the same
    random draws), the leaving rows handed out a batch at a time (never a second copy of
    them all)."""
    def stack(pieces):
        return Pool([as_parts(X).from_zero() for X, _ in pieces]), np.concatenate([c for _, c in pieces])

    for PX, Pc, out in buffer_rounds(items, pool_rows, rng, stack, lambda PX, Pc, rows: (PX.gather(rows), Pc[rows])):
        yield from _hand_out(PX, Pc, out, batch_size)
        del PX, Pc  # the pool goes once its kept half is taken, not at the next round


def _hand_out(PX: Pool, Pc: np.ndarray, order: np.ndarray, batch_size: int) -> Iterator[Rows]:
    """The pool's rows ``order`` a batch at a time, each gathered when it is handed out."""
    for s in range(0, order.shape[0], batch_size):
        take = order[s:s + batch_size]
        yield Rows(PX.gather(take), Pc[take])


def class_codes(classes: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes int64, the rows whose label is not one of ``classes``) of labels ``y``."""
    codes = np.searchsorted(classes, y)
    codes[codes >= classes.shape[0]] = 0
    return codes.astype(np.int64), np.flatnonzero(classes[codes] != y)
