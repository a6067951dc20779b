"""Stream mode's compact binary copy of the training rows, written during the first
pass and read back, a batch at a time, in later passes. The rows are written in the order
the first pass trains them: shuffled, as they leave the shuffle buffer, so a piece of 64
rows read back (below) holds rows from across the buffer's reach, not 64 neighbours of the
file, which in many files are alike (``shuffle_order``).

Parsing text is most of the cost of a pass. The first pass parses and trains and
writes each batch's CSR arrays (values in the storage precision, int32 column ids,
per-row nonzero counts, int32 class codes) to four append-only files; later passes
read those files sequentially with plain reads into fresh arrays, so memory stays
one batch (the kernel's page cache serves the reads; nothing is mapped). The files
live in the run's own folder and are deleted when the stream ends. If the disk
fills up, the spill is dropped and later passes parse the text again.

For shuffled passes, a fifth file indexes where every ``MIN_PIECE_ROWS``-th row's
nonzeros start (int64), so a pass can read small pieces of rows from anywhere in the file
and shuffle a window of them in memory (``shuffle_order``: each window drawn from pieces
across the whole file). The index, like the pieces' order, stays on disk and is read a
window at a time: what a shuffled pass holds does not grow with the rows.
"""

from __future__ import annotations

import os
from typing import Iterator, NamedTuple

import numpy as np

from svmcore.data.copies import remove_tree
from svmcore.data.native import binding
from svmcore.data.rows import Parts, Pool, Recycled, Rows, as_parts, native, reused
from svmcore.data.shuffle_order import MIN_PIECE_ROWS, permutation32, piece_rows, window_pieces


_FILES = ("data", "indices", "lengths", "codes")
_INDEX = "starts"  # the first nonzero of rows 0, MIN_PIECE_ROWS, 2 * MIN_PIECE_ROWS, ... (int64)


class Spill:
    def __init__(self, folder: str, dtype):
        self.folder = folder
        self.dtype = np.dtype(dtype)
        self.complete = False
        self.rows = 0
        self.failed: str | None = None
        self.filled_first = False
        self.nnz = 0

    def _path(self, name: str) -> str:
        return os.path.join(self.folder, f"{name}.bin")

    def write_through(self, batches: Iterator[Rows]) -> Iterator[Rows]:
        """Yield ``batches`` unchanged, writing each one to disk as it passes; the spill is
        complete when they end (not when the pass is left early). A full disk gives the spill
        up and training goes on (``failed`` says why)."""
        files = self._open()
        try:
            for rows in batches:
                if files:
                    try:
                        self._write(files, *rows)
                    except OSError as e:  # a full disk: give up the spill, keep training
                        self.failed = (f"could not write the spill in {self.folder} ({e}); "
                                       "later passes parse the text again")
                        Spill._close(files)
                        files = {}
                        self.discard()
                yield rows
            if files:
                Spill._close(files)
                files = {}
                self.complete = True
        finally:
            Spill._close(files)

    def _write(self, files, X, codes) -> None:
        """A batch's CSR parts and class codes appended to the files."""
        data, indices, indptr = as_parts(X)
        n = indptr.shape[0] - 1
        first = -(-self.rows // MIN_PIECE_ROWS) * MIN_PIECE_ROWS - self.rows  # this batch's first indexed row
        at = np.arange(first, n, MIN_PIECE_ROWS)
        if at.shape[0]:
            (self.nnz + (np.asarray(indptr[at], np.int64) - int(indptr[0]))).tofile(files[_INDEX])
        data.astype(self.dtype, copy=False).tofile(files["data"])
        indices.astype(np.int32, copy=False).tofile(files["indices"])
        np.diff(indptr).astype(np.int32).tofile(files["lengths"])
        codes.astype(np.int32, copy=False).tofile(files["codes"])
        self.rows += indptr.shape[0] - 1
        self.nnz += int(indptr[-1] - indptr[0])

    def _open(self) -> dict:
        """The spill's files, opened for writing (``_write`` takes them)."""
        os.makedirs(self.folder, exist_ok=True)
        files: dict = {}
        try:
            for n in _FILES + (_INDEX,):
                files[n] = open(self._path(n), "wb")
        except OSError:
            Spill._close(files)
            raise
        return files

    @staticmethod
    def _close(files) -> None:
        for f in files.values():
            f.close()

    def read(self, batch_size: int) -> Iterator[Rows]:
        """Batches in written order."""
        with open(self._path("data"), "rb") as fd, open(self._path("indices"), "rb") as fi, \
                open(self._path("lengths"), "rb") as fl, open(self._path("codes"), "rb") as fc:
            left = self.rows
            while left > 0:
                n = min(batch_size, left)
                lengths = np.fromfile(fl, np.int32, n)
                indptr = np.zeros(n + 1, np.int64)
                np.cumsum(lengths, out=indptr[1:])
                nnz = int(indptr[-1])
                data = np.fromfile(fd, self.dtype, nnz)
                indices = np.fromfile(fi, np.int32, nnz)
                codes = np.fromfile(fc, np.int32, n)
                if data.shape[0] != nnz or indices.shape[0] != nnz or codes.shape[0] != n:
                    raise OSError(f"the spill file in {self.folder} is shorter than written")
                left -= n
                yield Rows(Parts(data, indices, indptr), codes)

    def read_windows(self, batch_size: int, window_rows: int, rng, into: Recycled | None = None) -> Iterator[Rows]:
        """The rows shuffled: ``window_rows`` rows at a time read into memory, drawn from
        pieces (``shuffle_order.piece_rows``) picked at random across the whole spill,
        shuffled together and cut into batches; with ``into``, each batch is gathered into its
        next set of buffers (``rows.Recycled``). The next window is planned (bounds, lengths,
        codes, order; the same draws in the same order) halfway through this one, so that at a
        window's boundary, where training waits, only its values and column ids are read."""
        prow = piece_rows(window_rows)
        n_pieces = -(-self.rows // prow)
        fds = [os.open(self._path(n), os.O_RDONLY) for n in _FILES + (_INDEX,)]
        buffers: dict = {}  # one window's values, column ids and indptr, refilled by every window of the pass
        plans = (self._plan(fds, np.sort(pieces), prow, rng)
                 for pieces in window_pieces(n_pieces, window_rows // prow, rng, self.folder))
        try:
            plan = next(plans, None)
            while plan is not None:
                pool = Pool([self._read_values(fds, plan, buffers)])
                ids, planned = plan.ids, False
                for s in range(0, ids.shape[0], batch_size):
                    yield pool.take(ids[s:s + batch_size], plan.codes, into)
                    if not planned and s >= ids.shape[0] // 2:
                        following, planned = next(plans, None), True
                del pool
                plan = following if planned else next(plans, None)
        finally:
            plans.close()
            for fd in fds:
                os.close(fd)

    def _plan(self, fds: list[int], pieces: np.ndarray, prow: int, rng) -> "_Plan":
        """A window of the given pieces (sorted) before its values are read: where each piece
        lies, its rows' lengths and class codes, and the order its rows are trained in."""
        r0, r1, z0, z1 = self._pieces(fds[4], np.asarray(pieces, np.int64), prow)
        rows = int((r1 - r0).sum())
        lengths, codes = np.empty(rows, np.int32), np.empty(rows, np.int32)
        if not _read_ranges(fds[2:4], r0, r1, lengths, codes):
            raise OSError(f"the spill file in {self.folder} is shorter than written")
        if int(lengths.sum(dtype=np.int64)) != int((z1 - z0).sum()):
            raise OSError(f"the spill file in {self.folder} does not match its index (rewritten while read?)")
        return _Plan(z0, z1, lengths, codes, permutation32(rows, rng))

    def _pieces(self, index_fd: int, pieces: np.ndarray, prow: int) -> tuple[np.ndarray, ...]:
        """(first rows, end rows, first nonzeros, end nonzeros) of pieces ``pieces`` (sorted) of
        ``prow`` rows, their nonzeros read from the index file: each piece's first entry and the
        next piece's, side by side (one read a piece, fewer where pieces are neighbours)."""
        step = prow // MIN_PIECE_ROWS
        r0 = pieces * prow
        r1 = np.minimum(self.rows, r0 + prow)
        inner = r1 < self.rows  # the others end at the last row, so at the last nonzero
        entries = np.stack([pieces * step, np.where(inner, (pieces + 1) * step, pieces * step)], axis=1).ravel()
        bounds = _read_entries(index_fd, entries)
        if bounds is None:
            raise OSError(f"the spill's index in {self.folder} is shorter than written")
        z0, z1 = bounds[0::2].copy(), np.where(inner, bounds[1::2], self.nnz)
        return r0, r1, z0, z1

    def _read_values(self, fds: list[int], plan: "_Plan", buffers: dict) -> Parts:
        """The planned window's rows as CSR parts, each piece's values and column ids read
        straight into place by the native library (one call a window). The arrays are views of
        ``buffers``, refilled by the next window (its batches are gathered copies), so the pass
        does not fault in a fresh window several hundred times."""
        take = reused(buffers)
        rows = plan.lengths.shape[0]
        indptr = take("indptr", rows + 1, np.int64)
        indptr[0] = 0
        np.cumsum(plan.lengths, out=indptr[1:])
        nnz = int(indptr[-1])
        data, indices = take("data", nnz, self.dtype), take("indices", nnz, np.int32)
        if not _read_ranges(fds[:2], plan.z0, plan.z1, data, indices):
            raise OSError(f"the spill file in {self.folder} is shorter than written")
        return Parts(data, indices, indptr)

    def discard(self) -> None:
        self.complete = False
        remove_tree(self.folder)


class _Plan(NamedTuple):
    """A shuffled window before its values are read: its pieces' nonzero ranges, its rows'
    lengths and class codes, and the order of its rows."""
    z0: np.ndarray
    z1: np.ndarray
    lengths: np.ndarray
    codes: np.ndarray
    ids: np.ndarray


def _read_ranges(fds: list[int], first: np.ndarray, end: np.ndarray, out_a: np.ndarray, out_b: np.ndarray) -> bool:
    """binding.read_ranges; where the native library cannot be built, the same reads from Python."""
    if native():
        return binding.read_ranges(fds, first, end, out_a, out_b)
    at = 0
    for lo, hi in zip(first.tolist(), end.tolist()):
        for fd, a in zip(fds, (out_a, out_b)):
            view = memoryview(a[at:at + hi - lo].view(np.uint8))
            done = 0
            while done < view.nbytes:
                got = os.preadv(fd, [view[done:]], lo * a.itemsize + done)
                if got == 0:
                    return False
                done += got
        at += hi - lo
    return True


def _read_entries(fd: int, entries: np.ndarray) -> np.ndarray | None:
    """binding.read_entries, or the same reads from Python where the library cannot be built."""
    if native():
        return binding.read_entries(fd, entries)
    out = np.empty(entries.shape[0], np.int64)
    for i, e in enumerate(entries.tolist()):
        got = os.pread(fd, 8, e * 8)
        if len(got) < 8:
            return None
        out[i] = np.frombuffer(got, np.int64)[0]
    return out
