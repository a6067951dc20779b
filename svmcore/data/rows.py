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


class Picked:
    """Rows ``rows`` (in order) of ``parts``, not copied out: what the lean path's held-out
    split hands to ``rebatch``, which gathers each batch straight from the parsed blocks."""

    __slots__ = ("parts", "rows")

    def __init__(self, parts: Parts, rows: np.ndarray):
        self.parts, self.rows = parts, rows

    @property
    def n_rows(self) -> int:
        return self.rows.shape[0]


class Pool:
    """CSR parts (or ``Picked`` rows of them) held side by side, read by global row number
    without stacking them."""

    def __init__(self, pieces: list):
        parts = [p.parts.from_zero() if isinstance(p, Picked) else as_parts(p).from_zero() for p in pieces]
        self.parts = binding.PartsGather(parts)  # (data, indices, indptr from 0) each
        self.dtype = self.parts.dtype
        counts = [p.n_rows for p in pieces]
        self.part = np.repeat(np.arange(len(parts), dtype=np.int64), counts)  # each global row's part
        self.local = np.concatenate([p.rows if isinstance(p, Picked) else np.arange(n, dtype=np.int64)
                                     for p, n in zip(pieces, counts)])  # and its row there

    def gather(self, rows: np.ndarray) -> Parts:
        rows = np.asarray(rows, np.int64)
        return Parts(*self.parts.gather(self.part[rows], self.local[rows]))

    def rest(self, start: int) -> list:
        """Rows ``start`` onwards as ``Picked`` pieces of their parts: nothing copied."""
        part, local = self.part[start:], self.local[start:]
        cuts = np.flatnonzero(np.diff(part)) + 1
        return [Picked(Parts(*self.parts.parts[int(p[0])]), r)
                for p, r in zip(np.split(part, cuts), np.split(local, cuts))]


def rebatch(items, batch_size: int) -> Iterator[Rows]:
    """Rows of any sizes (``Rows`` or ``Picked`` rows with their codes) in, batches of exactly
    ``batch_size`` rows out (the last may be short). Every batch owns compact arrays (gathered
    from the pieces): a batch that were a view of a bigger stacked array would keep all of it
    alive, e.g. in the shuffle buffer. Rows left over after a batch stay where they are
    (``Pool.rest``) until the next one is gathered."""
    pend_X: list = []
    pend_c: list = []
    have = 0
    for X, c in items:
        if c.shape[0] == 0:
            continue
        if not pend_X and c.shape[0] == batch_size and not isinstance(X, Picked):
            yield Rows(as_parts(X), c)
            continue
        pend_X.append(X)
        pend_c.append(c)
        have += c.shape[0]
        if have >= batch_size:
            pool, Pc = Pool(pend_X), np.concatenate(pend_c)
            s = 0
            while have - s >= batch_size:
                yield Rows(pool.gather(np.arange(s, s + batch_size)), Pc[s:s + batch_size].copy())
                s += batch_size
            pend_X, pend_c = (pool.rest(s), [Pc[s:].copy()]) if s < have else ([], [])
            del pool, Pc
            have -= s
    if have:
        one = len(pend_X) == 1 and not isinstance(pend_X[0], Picked)
        yield Rows(as_parts(pend_X[0]) if one else Pool(pend_X).gather(np.arange(have)), np.concatenate(pend_c))


class ShuffleArena:
    """The lean path's shuffle buffer: its rows in one set of CSR arrays, each row copied in
    as it arrives, batches gathered from it, and the kept half pool moved to its front in
    place (``keep``). A round then holds the pool once (about 9 MiB at the default 16,384
    rows of 46 nonzeros), not the pool and a copy of its kept half in heap pieces.

    Rows ``i < len(order)`` (the kept ones, in the order they were kept) sit at ``order[i]``;
    rows that arrived after them sit in arrival order."""

    SLACK = 8  # arrays grow to 1/8 more than asked, so slightly fuller rounds do not regrow them

    def __init__(self):
        self.data = np.empty(0)  # of the first rows' value type (``add``)
        self.indices = np.empty(0, np.int32)
        self.indptr = np.zeros(1, np.int64)
        self.codes = np.empty(0, np.int64)
        self.rows = 0
        self.order = np.empty(0, np.int64)

    def _room(self, rows: int, nnz: int) -> None:
        """Arrays for ``rows`` rows and ``nnz`` nonzeros in all, grown (their contents kept)."""
        def grown(a: np.ndarray, n: int, used: int) -> np.ndarray:
            if a.shape[0] >= n:
                return a
            b = np.empty(n + n // self.SLACK, a.dtype)
            b[:used] = a[:used]
            return b
        used = int(self.indptr[self.rows])
        self.data, self.indices = grown(self.data, nnz, used), grown(self.indices, nnz, used)
        self.indptr = grown(self.indptr, rows + 1, self.rows + 1)
        self.codes = grown(self.codes, rows, self.rows)

    def add(self, X, codes: np.ndarray) -> None:
        data, indices, indptr = as_parts(X)
        if self.rows == 0 and self.data.dtype != data.dtype:
            self.data = np.empty(0, data.dtype)
        n, lo = codes.shape[0], int(indptr[0])
        k = int(indptr[-1]) - lo
        z = int(self.indptr[self.rows])
        self._room(self.rows + n, z + k)
        self.data[z:z + k] = data[lo:lo + k]
        self.indices[z:z + k] = indices[lo:lo + k]
        self.indptr[self.rows + 1:self.rows + n + 1] = indptr[1:] - lo + z
        self.codes[self.rows:self.rows + n] = codes
        self.rows += n

    def _parts(self) -> Parts:
        z = int(self.indptr[self.rows])
        return Parts(self.data[:z], self.indices[:z], self.indptr[:self.rows + 1])

    def _placed(self, rows: np.ndarray) -> np.ndarray:
        k = self.order.shape[0]
        if not k:
            return rows
        head = rows < k
        return np.where(head, self.order[np.where(head, rows, 0)], rows)

    def take(self, rows: np.ndarray) -> Rows:
        placed = self._placed(np.asarray(rows, np.int64))
        return Rows(self._parts().gather(placed), self.codes[placed])

    def keep(self, rows: np.ndarray) -> None:
        """Keep rows ``rows`` (they become rows 0, 1, ... in that order), moved to the front in
        place in the order they sit (``binding.move_front``): the j-th row moved sits at j or
        after it, so it only overwrites rows already moved or let go."""
        placed = self._placed(np.asarray(rows, np.int64))
        by_place = np.argsort(placed, kind="stable")
        src = placed[by_place]
        codes = self.codes[src]
        binding.move_front(self.data, self.indices, self.indptr[:self.rows + 1], src)
        self.codes[:src.shape[0]] = codes
        self.rows = src.shape[0]
        self.order = np.empty(src.shape[0], np.int64)
        self.order[by_place] = np.arange(src.shape[0])  # kept row i now sits at order[i]


def pool_shuffle(items, pool_rows: int, rng: np.random.Generator, batch_size: int) -> Iterator[Rows]:
    """``batches.pool_shuffle`` on ``Rows`` (``buffer_rounds``: the same rule and the same
    random draws) in a ``ShuffleArena``, the leaving rows handed out a batch at a time."""
    arena = ShuffleArena()
    for out in buffer_rounds(items, pool_rows, rng, arena):
        for s in range(0, out.shape[0], batch_size):
            yield arena.take(out[s:s + batch_size])


def class_codes(classes: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes int64, the rows whose label is not one of ``classes``) of labels ``y``."""
    codes = np.searchsorted(classes, y)
    codes[codes >= classes.shape[0]] = 0
    return codes.astype(np.int64), np.flatnonzero(classes[codes] != y)
