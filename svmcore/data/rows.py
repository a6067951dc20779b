"""The one batch type: ``Rows``, a block of rows and one class code a row (int64 indices
into the run's sorted classes). Every feed yields it; the spill, the shuffle buffer and every
solver take it.

A block is ``Parts``, CSR (data, indices int32, indptr int64 from 0), or ``Dense``, a 2-D
array (in memory or mapped: the dense representation's storage); both answer the same
questions and give an estimator what it takes (``csr``, ``dense``: a scipy matrix is built
only there; ``block_of`` is the way back from a parser's). Values are kept in the storage
precision (``stored``) and upcast a batch at a time (``compute``). Rows are gathered by the
native library, or where it cannot be built, with numpy, slower (``native``).
"""

from __future__ import annotations

import logging
from typing import Iterator, NamedTuple

import numpy as np

from svmcore.data.native import NativeBuildError, binding
from svmcore.data.upcast import to_compute

log = logging.getLogger(__name__)

STORE_DTYPES = {"float64": np.float64, "float32": np.float32, "float16": np.float16}
COMPUTE_DTYPES = {"float64": np.float64, "float32": np.float32, "float16": np.float32}

_native: bool | None = None


def native() -> bool:
    """Whether the native library loads (built on demand); where it cannot be built, rows are
    gathered, moved and read with numpy instead, and the log says so once."""
    global _native
    if _native is None:
        try:
            binding.library()
            _native = True
        except NativeBuildError as e:
            log.warning("the native library cannot be built (%s): rows are gathered with numpy, slower", e)
            _native = False
    return _native


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

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1] - self.indptr[0])

    def slice(self, a: int, b: int) -> "Parts":
        """Rows [a, b), as views."""
        lo, hi = int(self.indptr[a]), int(self.indptr[b])
        return Parts(self.data[lo:hi], self.indices[lo:hi], self.indptr[a:b + 1] - lo)

    def spans(self, a: int, b: int) -> list[tuple[np.ndarray, int, int]]:
        """The ranges of the arrays that hold rows [a, b): (array, first item, end item)."""
        lo, hi = int(self.indptr[a]), int(self.indptr[b])
        return [(self.data, lo, hi), (self.indices, lo, hi), (self.indptr, a, b)]

    def copy(self) -> "Parts":
        """The rows in arrays of their own (out of a memory map), indptr from 0."""
        lo = int(self.indptr[0])
        return Parts(np.array(self.data), np.array(self.indices), np.array(self.indptr) - lo)

    def from_zero(self) -> "Parts":
        """These parts with an indptr that starts at 0 (a slice of a bigger block may not)."""
        if self.indptr[0] == 0:
            return self
        lo, hi = int(self.indptr[0]), int(self.indptr[-1])
        return Parts(self.data[lo:hi], self.indices[lo:hi], self.indptr - lo)

    def gather(self, rows: np.ndarray) -> "Parts":
        """Rows ``rows`` (any order), copied into compact arrays by the native library."""
        return Parts(*binding.gather_rows(*self, rows)) if native() else self.take(rows)

    def take(self, rows: np.ndarray) -> "Parts":
        """Rows ``rows`` (any order) in the parts' own dtype, numpy only (float16 too, which
        scipy cannot index, and memory-mapped parts)."""
        data, indices, indptr = self
        rows = np.asarray(rows, np.int64)
        starts = np.asarray(indptr[rows], dtype=np.int64)
        lengths = np.asarray(indptr[rows + 1], dtype=np.int64) - starts
        out_ptr = np.zeros(rows.shape[0] + 1, np.int64)
        np.cumsum(lengths, out=out_ptr[1:])
        pos = np.repeat(starts - out_ptr[:-1], lengths) + np.arange(out_ptr[-1])
        return Parts(data[pos], np.asarray(indices[pos]), out_ptr)

    def stored(self, dtype) -> "Parts":
        """The values in the storage precision ``dtype`` (rounded once, as the spill keeps them)."""
        return self if self.data.dtype == dtype else Parts(self.data.astype(dtype), self.indices, self.indptr)

    def compute(self, dtype) -> "Parts":
        """The values in the compute precision ``dtype`` (a float16 upcast is measured: ``upcast``)."""
        return self if self.data.dtype == dtype else Parts(to_compute(self.data, dtype), self.indices, self.indptr)

    def sparse(self) -> "Parts":
        return self

    def csr(self, n_features: int, dtype=None):
        """A scipy CSR matrix over these arrays (the scikit-learn boundary: imports scipy); float16
        values as float32, which scipy takes."""
        import scipy.sparse as sp

        dtype = dtype or (np.float32 if self.data.dtype == np.float16 else None)
        data = self.data if dtype is None else self.data.astype(dtype, copy=False)
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.n_rows, n_features))

    def dense(self, n_features: int, dtype=None) -> np.ndarray:
        """The rows as a dense array (an estimator's dense input; duplicate columns summed)."""
        return self.csr(n_features, dtype).toarray()


class Dense:
    """Rows as a 2-D array, in memory or memory-mapped: the dense representation's storage."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray):
        self.array = array

    @property
    def n_rows(self) -> int:
        return self.array.shape[0]

    @property
    def nbytes(self) -> int:
        return self.array.nbytes

    @property
    def nnz(self) -> int:
        return int(np.count_nonzero(self.array))

    def slice(self, a: int, b: int) -> "Dense":
        return Dense(self.array[a:b])

    def spans(self, a: int, b: int) -> list[tuple[np.ndarray, int, int]]:
        return [(self.array, a, b)]

    def copy(self) -> "Dense":
        return Dense(np.array(self.array))

    def from_zero(self) -> "Dense":
        return self

    def gather(self, rows: np.ndarray) -> "Dense":
        return Dense(np.asarray(self.array[np.asarray(rows, np.int64)]))

    take = gather

    def stored(self, dtype) -> "Dense":
        return self if self.array.dtype == dtype else Dense(self.array.astype(dtype))

    def compute(self, dtype) -> "Dense":
        return self if self.array.dtype == dtype else Dense(to_compute(self.array, dtype))

    def sparse(self) -> Parts:
        """The rows' nonzeros as CSR parts."""
        X = np.asarray(self.array)
        nz = X != 0
        indptr = np.zeros(X.shape[0] + 1, np.int64)
        np.cumsum(nz.sum(axis=1), out=indptr[1:])
        return Parts(np.ascontiguousarray(X[nz]), np.nonzero(nz)[1].astype(np.int32), indptr)

    def csr(self, n_features: int, dtype=None):
        return self.sparse().csr(n_features, dtype)

    def dense(self, n_features: int | None = None, dtype=None) -> np.ndarray:
        return np.asarray(self.array, dtype)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.asarray(self.array, dtype)


def block_of(X) -> "Parts | Dense":
    """A parsed chunk as a block: a scipy CSR matrix (the parsers that go through scikit-learn
    or scipy) as its parts, without a copy; anything else as a dense array."""
    if hasattr(X, "indptr"):
        return Parts(X.data, X.indices.astype(np.int32, copy=False), X.indptr.astype(np.int64, copy=False)).from_zero()
    return Dense(np.asarray(X))


class Rows(NamedTuple):
    """A batch: CSR parts and one class code a row."""

    X: Parts
    codes: np.ndarray


def as_parts(parts) -> Parts:
    """Any (data, indices, indptr[, ...]) tuple as ``Parts``."""
    return parts if isinstance(parts, Parts) else Parts(*parts[:3])


def concat(parts: list) -> "Parts | Dense":
    """Blocks stacked by rows, as one block: dense arrays, or CSR parts (indptr from 0)."""
    if isinstance(parts[0], Dense):
        return parts[0] if len(parts) == 1 else Dense(np.concatenate([p.array for p in parts]))
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


def reused(buffers: dict):
    """take(name, n, dtype) -> the first ``n`` items of buffer ``name`` kept in ``buffers``,
    grown (to 1/8 more than asked, so slightly bigger requests do not regrow it) when too
    small: arrays refilled again and again instead of made and freed each time."""
    def take(name: str, n: int, dtype) -> np.ndarray:
        buf = buffers.get(name)
        if buf is None or buf.shape[0] < n or buf.dtype != dtype:
            buffers[name] = None  # the old buffer goes before the new one is made
            buf = buffers[name] = np.empty(n + n // 8, dtype)
        return buf[:n]
    return take


class Recycled:
    """Batches gathered into ``sets`` sets of buffers used in turn: a batch's arrays are
    overwritten ``sets`` batches later, so it must be let go by then (a training loop that
    takes a batch only once it is done with the one before, with ``sets`` counting every batch
    made and not yet done). Batches made fresh and freed, interleaved with the reader thread's
    parsed blocks, grew the heap by 1.5-2.5 MiB in one run in ten (docs/lean.md)."""

    def __init__(self, sets: int):
        self._sets = [{} for _ in range(sets)]
        self._turn = 0

    def take(self):
        """The next set's ``take(name, n, dtype)``."""
        buffers = self._sets[self._turn]
        self._turn = (self._turn + 1) % len(self._sets)
        return reused(buffers)

    def gather(self, parts: Parts, rows: np.ndarray, codes: np.ndarray) -> Rows:
        """Rows ``rows`` of ``parts``, into the next set, with theirs of ``codes`` (a fresh
        array: a few KiB, and a caller may keep the codes of every batch)."""
        X = Parts(*binding.gather_rows(*parts, rows, self.take())) if native() else parts.take(rows)
        return Rows(X, codes[rows])


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
        if len(pieces) == 1 and not isinstance(pieces[0], Picked):  # one CSR block (a spill's window): its rows
            self.whole = parts[0]  # are the pool's, gathered as one matrix's
            return
        if not native():  # numpy: the pieces' rows copied into one block
            self.whole = concat([p.take(q.rows) if isinstance(q, Picked) else p for p, q in zip(parts, pieces)])
            return
        self.whole = None
        self.parts = binding.PartsGather(parts)  # (data, indices, indptr from 0) each
        counts = [p.n_rows for p in pieces]
        self.part = np.repeat(np.arange(len(parts), dtype=np.int64), counts)  # each global row's part
        self.local = np.concatenate([p.rows if isinstance(p, Picked) else np.arange(n, dtype=np.int64)
                                     for p, n in zip(pieces, counts)])  # and its row there

    def gather(self, rows: np.ndarray) -> Parts:
        rows = np.asarray(rows, np.int64)
        if self.whole is not None:
            return self.whole.gather(rows)
        return Parts(*self.parts.gather(self.part[rows], self.local[rows]))

    def take(self, rows: np.ndarray, codes: np.ndarray, into: Recycled | None = None) -> Rows:
        """Rows ``rows`` with theirs of ``codes`` (the pool's rows' codes): in fresh arrays, or
        in ``into``'s next set when the pool is one block."""
        if into is not None and self.whole is not None:
            return into.gather(self.whole, np.asarray(rows, np.int64), codes)
        return Rows(self.gather(rows), codes[rows])


def batch_pieces(items, batch_size: int) -> Iterator[tuple[list, np.ndarray]]:
    """Rows of any sizes (``Rows`` or ``Picked`` rows with their codes) in; each batch of
    exactly ``batch_size`` rows (the last may be short) out as the pieces it is made of, not
    copied: ``Picked`` rows of the items it spans, or one whole item that is a batch as it
    is, and its codes."""
    pend: list = []
    pend_c: list = []
    have = 0
    for X, c in items:
        n = c.shape[0]
        if n == 0:
            continue
        if not pend and n == batch_size and not isinstance(X, Picked):
            yield [as_parts(X)], c
            continue
        picked = X if isinstance(X, Picked) else Picked(as_parts(X), np.arange(n, dtype=np.int64))
        s = 0
        while s < n:
            k = min(n - s, batch_size - have)
            pend.append(Picked(picked.parts, picked.rows[s:s + k]))
            pend_c.append(c[s:s + k])
            have, s = have + k, s + k
            if have == batch_size:
                yield pend, np.concatenate(pend_c)
                pend, pend_c, have = [], [], 0
    if have:
        yield pend, np.concatenate(pend_c)


def staged_batches(items, batch_size: int, arena: "ShuffleArena") -> Iterator[tuple[None, np.ndarray]]:
    """``batch_pieces``'s batches for ``arena``: every item's rows copied in (``stage``) as soon
    as it comes, so no item is held while the next is fetched or while a round is trained;
    each batch comes out as ``(None, its codes)``."""
    pend_c: list = []
    have = 0
    for X, c in items:
        if c.shape[0] == 0:
            continue
        arena.stage(X if isinstance(X, Picked) else as_parts(X))
        X = None  # the item is copied in: not held while its batches go through a round
        pend_c.append(c)
        have += c.shape[0]
        while have >= batch_size:
            codes = np.concatenate(pend_c) if len(pend_c) > 1 else pend_c[0]
            yield None, codes[:batch_size]
            pend_c, have = [codes[batch_size:]], have - batch_size
    if have:
        yield None, np.concatenate(pend_c)


def rebatch(items, batch_size: int) -> Iterator[Rows]:
    """``batch_pieces`` gathered: every batch owns compact arrays (a batch that were a view
    of a bigger stacked array would keep all of it alive, e.g. in the shuffle buffer), but for
    an item that is a batch as it is. Rows left over after a batch stay in their blocks until
    the next one is gathered."""
    for pieces, codes in batch_pieces(items, batch_size):
        if isinstance(pieces[0], Parts):
            yield Rows(pieces[0], codes)
        else:
            yield Rows(Pool(pieces).gather(np.arange(codes.shape[0])), codes)


class ShuffleArena:
    """The shuffle buffer: its rows in one set of CSR arrays, each row copied in
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
        self.staged = 0  # rows copied in after the pool's, waiting for their batch's codes (``stage``)
        self.order = np.empty(0, np.int64)

    def _room(self, rows: int, nnz: int) -> None:
        """Arrays for ``rows`` rows and ``nnz`` nonzeros in all, grown (their contents, staged
        rows too, kept)."""
        def grown(a: np.ndarray, n: int, used: int) -> np.ndarray:
            if a.shape[0] >= n:
                return a
            b = np.empty(n + n // self.SLACK, a.dtype)
            b[:used] = a[:used]
            return b
        end = self.rows + self.staged
        used = int(self.indptr[end])
        self.data, self.indices = grown(self.data, nnz, used), grown(self.indices, nnz, used)
        self.indptr = grown(self.indptr, rows + 1, end + 1)
        self.codes = grown(self.codes, rows, self.rows)

    def stage(self, piece) -> None:
        """Rows (CSR parts or ``Picked`` rows) copied in after the pool, not yet part of it:
        ``add(None, codes)`` takes every staged row in."""
        data, indices, indptr = piece.parts if isinstance(piece, Picked) else piece
        if self.rows == 0 and self.staged == 0 and self.data.dtype != data.dtype:
            self.data = np.empty(0, data.dtype)
        r = self.rows + self.staged
        z = int(self.indptr[r])
        if isinstance(piece, Picked):
            m = piece.rows.shape[0]
            self._room(r + m, z + _nnz(piece))
            _gather_into(Parts(data, indices, indptr), piece.rows, self.data[z:], self.indices[z:],
                         self.indptr[r:r + m + 1])
            self.indptr[r:r + m + 1] += z
        else:  # whole parts: copied as they are
            m, lo = indptr.shape[0] - 1, int(indptr[0])
            k = int(indptr[-1]) - lo
            self._room(r + m, z + k)
            self.data[z:z + k] = data[lo:lo + k]
            self.indices[z:z + k] = indices[lo:lo + k]
            self.indptr[r + 1:r + m + 1] = indptr[1:] - lo + z
        self.staged += m

    def add(self, codes: np.ndarray) -> None:
        """The first ``len(codes)`` rows staged (``stage``) into the pool; ``codes`` are theirs."""
        n, r = codes.shape[0], self.rows
        if n > self.staged:
            raise ValueError(f"{n} codes for {self.staged} staged rows")
        self._room(r + self.staged, int(self.indptr[r + self.staged]))
        self.codes[r:r + n] = codes
        self.rows, self.staged = r + n, self.staged - n

    def _parts(self) -> Parts:
        z = int(self.indptr[self.rows])
        return Parts(self.data[:z], self.indices[:z], self.indptr[:self.rows + 1])

    def _placed(self, rows: np.ndarray) -> np.ndarray:
        k = self.order.shape[0]
        if not k:
            return rows
        head = rows < k
        return np.where(head, self.order[np.where(head, rows, 0)], rows)

    def take(self, rows: np.ndarray, into: Recycled | None = None) -> Rows:
        """Rows ``rows`` gathered: into fresh arrays, or into ``into``'s next set."""
        placed = self._placed(np.asarray(rows, np.int64))
        if into is not None:
            return into.gather(self._parts(), placed, self.codes)
        return Rows(self._parts().gather(placed), self.codes[placed])

    def keep(self, rows: np.ndarray) -> None:
        """Keep rows ``rows`` (they become rows 0, 1, ... in that order), moved to the front in
        place in the order they sit (``binding.move_front``): the j-th row moved sits at j or
        after it, so it only overwrites rows already moved or let go."""
        placed = self._placed(np.asarray(rows, np.int64))
        slot = np.full(self.rows, -1, np.int64)  # the kept rows in place order, in one pass (argsort: 2% of a pass)
        slot[placed] = np.arange(placed.shape[0])
        by_place = slot[slot >= 0]
        src = placed[by_place]
        codes = self.codes[src]
        staged = np.arange(self.rows, self.rows + self.staged)  # after the pool: they follow the kept rows
        _move_front(self.data, self.indices, self.indptr[:self.rows + self.staged + 1],
                    np.concatenate([src, staged]) if self.staged else src)
        self.codes[:src.shape[0]] = codes
        self.rows = src.shape[0]
        self.order = np.empty(src.shape[0], np.int64)
        self.order[by_place] = np.arange(src.shape[0])  # kept row i now sits at order[i]


def _gather_into(parts: Parts, rows: np.ndarray, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray) -> None:
    """Rows ``rows`` of ``parts`` written to the front of ``data``, ``indices`` and ``indptr``."""
    if native():
        binding.gather_rows_into(*parts, rows, data, indices, indptr)
        return
    got = parts.take(rows)
    data[:got.nnz], indices[:got.nnz], indptr[:] = got.data, got.indices, got.indptr


def _move_front(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, rows: np.ndarray) -> None:
    """Rows ``rows`` (increasing) of the parts moved, in that order, to rows 0, 1, ... in place."""
    if native():
        binding.move_front(data, indices, indptr, rows)
        return
    got = Parts(data, indices, indptr).take(rows)
    data[:got.nnz], indices[:got.nnz], indptr[:rows.shape[0] + 1] = got.data, got.indices, got.indptr


def _nnz(p) -> int:
    """Nonzeros of ``Picked`` rows or of whole parts."""
    if not isinstance(p, Picked):
        return int(p.indptr[-1] - p.indptr[0])
    indptr = p.parts.indptr
    return int((indptr[p.rows + 1] - indptr[p.rows]).sum())


def buffer_round(have: int, pool_rows: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """The shuffle buffer's rule (``buffer_rounds``), for a buffer of ``have`` rows that went over
    ``pool_rows``: (the rows that leave now, in the order they leave; the half pool kept)."""
    order = rng.permutation(have)
    keep = pool_rows // 2
    return order[:have - keep], order[have - keep:]


def buffer_rounds(items, pool_rows: int, rng, buffer):
    """The shuffle buffer over ``(None, codes)`` items of staged rows: each goes into ``buffer``
    (``buffer.add(codes)``; ``buffer.rows`` counts them); once it holds more than
    ``pool_rows`` rows, yields the order in which its leaving rows leave (read with the buffer's
    own ``take``), then keeps the other half pool (``buffer.keep(rows)``: those rows, in that
    order, become its first rows), so a row stays for a random number of rounds, as in a data
    loader's shuffle buffer. The last rows leave together."""
    for _, codes in items:
        if codes.shape[0] == 0:
            continue
        buffer.add(codes)
        if buffer.rows > pool_rows:
            out, rest = buffer_round(buffer.rows, pool_rows, rng)
            yield out
            buffer.keep(rest)
    if buffer.rows:
        yield rng.permutation(buffer.rows)


def pool_shuffle(items, pool_rows: int, rng: np.random.Generator, batch_size: int,
                 recycled: bool = False) -> Iterator[Rows]:
    """The shuffle buffer (``buffer_rounds``) over rows of any sizes (``Rows`` or ``Picked``
    rows with their codes), each item's rows copied into a ``ShuffleArena`` as it comes
    (``staged_batches``), the leaving rows handed out a batch at a time: the same rows out in a
    random order, holding at most about ``pool_rows`` rows. ``recycled``: each full batch is
    gathered into one of two sets of buffers used in turn (``Recycled``), so it is overwritten
    two full batches later: enough for ``rebatch``, whose pieces span at most one full batch,
    and for a loop that lets each batch go before it takes the next."""
    arena = ShuffleArena()
    ring = Recycled(2) if recycled else None
    for out in buffer_rounds(staged_batches(items, batch_size, arena), pool_rows, rng, arena):
        for s in range(0, out.shape[0], batch_size):
            take = out[s:s + batch_size]
            yield arena.take(take, ring if take.shape[0] == batch_size else None)


def class_codes(classes: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes int64, the rows whose label is not one of ``classes``) of labels ``y``."""
    codes = np.searchsorted(classes, y)
    codes[codes >= classes.shape[0]] = 0
    return codes.astype(np.int64), np.flatnonzero(classes[codes] != y)
