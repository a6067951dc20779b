"""Stream mode's compact binary copy of the training rows, written during the first
pass and read back, a batch at a time, in later passes.

Parsing text is most of the cost of a pass. The first pass parses and trains and
writes each batch's CSR arrays (values in the storage precision, int32 column ids,
per-row nonzero counts, int32 class codes) to four append-only files; later passes
read those files sequentially with plain reads into fresh arrays, so memory stays
one batch (the kernel's page cache serves the reads; nothing is mapped). The files
live in the run's own folder and are deleted when the stream ends. If the disk
fills up, the spill is dropped and later passes parse the text again.

For shuffled passes, the spill keeps where each block of written rows starts (one
entry per batch written, at least ``MIN_BLOCK_ROWS`` rows apart: a few KiB), so a pass
can read blocks in a permuted order and shuffle a window of them in memory.
"""

from __future__ import annotations

import os
import shutil
from typing import Iterator

import numpy as np

from svmcore.data.lazy_sparse import sp
from svmcore.data.rows import Parts, Rows, as_parts, concat

_FILES = ("data", "indices", "lengths", "codes")
MIN_BLOCK_ROWS = 256


class Spill:
    def __init__(self, folder: str, dtype, classes, n_features: int):
        self.folder = folder
        self.dtype = np.dtype(dtype)
        self.classes = np.asarray(classes)
        self.n_features = n_features
        self.complete = False
        self.rows = 0
        self.failed: str | None = None
        self._blocks: list[tuple[int, int]] = []  # (first row, first nonzero) of each block
        self.nnz = 0

    def _path(self, name: str) -> str:
        return os.path.join(self.folder, f"{name}.bin")

    def write_through(self, batches: Iterator) -> Iterator:
        """Yield ``batches`` unchanged, writing each one to disk as it passes."""
        os.makedirs(self.folder, exist_ok=True)
        files = {n: open(self._path(n), "wb") for n in _FILES}
        try:
            for Xb, yb in batches:
                if files:
                    try:
                        self._write(files, Xb, yb)
                    except OSError as e:  # a full disk: give up the spill, keep training
                        self.failed = (f"could not write the spill in {self.folder} ({e}); "
                                       "later passes parse the text again")
                        self._close(files)
                        files = {}
                        self.discard()
                yield Xb, yb
            if files:
                self._close(files)
                files = {}
                self.complete = True
        finally:
            self._close(files)

    def _write(self, files, Xb, yb) -> None:
        if isinstance(Xb, tuple):  # Rows: CSR parts and class codes
            data, indices, indptr = as_parts(Xb)
            codes = yb
        else:
            X = Xb if sp.issparse(Xb) else sp.csr_matrix(Xb)
            X = X.tocsr()
            data, indices, indptr = X.data, X.indices, X.indptr
            codes = np.searchsorted(self.classes, yb)
        if not self._blocks or self.rows - self._blocks[-1][0] >= MIN_BLOCK_ROWS:
            self._blocks.append((self.rows, self.nnz))
        data.astype(self.dtype, copy=False).tofile(files["data"])
        indices.astype(np.int32, copy=False).tofile(files["indices"])
        np.diff(indptr).astype(np.int32).tofile(files["lengths"])
        codes.astype(np.int32, copy=False).tofile(files["codes"])
        self.rows += indptr.shape[0] - 1
        self.nnz += int(indptr[-1] - indptr[0])

    @staticmethod
    def _close(files) -> None:
        for f in files.values():
            f.close()

    def read(self, batch_size: int, parts: bool = False) -> Iterator[tuple[sp.csr_matrix, np.ndarray]]:
        """Batches in written order: (CSR, labels), or with ``parts`` ((data, indices,
        indptr), class codes) without scipy."""
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
                if parts:
                    yield Rows(Parts(data, indices, indptr), codes)
                    continue
                yield sp.csr_matrix((data, indices, indptr), shape=(n, self.n_features)), self.classes[codes]

    def read_windows(self, batch_size: int, window_rows: int, rng, gather=None
                     ) -> Iterator[tuple[sp.csr_matrix, np.ndarray]]:
        """The rows shuffled: blocks in a permuted order, ``window_rows`` rows of whole
        blocks read into memory at a time and shuffled together, cut into batches. With
        ``gather`` (``gather(list of CSR parts)`` -> an object whose ``.gather(rows)`` gives the
        window's rows as parts, without stacking the blocks: the lean path) batches are CSR
        parts and class codes, and scipy is never used; the order is the same."""
        bounds = self._blocks + [(self.rows, self.nnz)]
        n_blocks = len(self._blocks)
        avg_rows = max(1, self.rows // max(1, n_blocks))
        per_window = max(1, window_rows // avg_rows)
        order = rng.permutation(n_blocks)
        want_parts = gather is not None or self.dtype == np.float16
        with open(self._path("data"), "rb") as fd, open(self._path("indices"), "rb") as fi, \
                open(self._path("lengths"), "rb") as fl, open(self._path("codes"), "rb") as fc:
            for w in range(0, n_blocks, per_window):
                parts = [self._read_block(fd, fi, fl, fc, bounds[b], bounds[b + 1], want_parts)
                         for b in order[w:w + per_window]]
                codes = np.concatenate([p[1] for p in parts])
                cut = self._cutter([p[0] for p in parts], codes, gather)
                del parts
                ids = rng.permutation(codes.shape[0])
                for s in range(0, ids.shape[0], batch_size):
                    yield cut(ids[s:s + batch_size])
                del cut

    def _cutter(self, blocks: list, codes: np.ndarray, gather):
        """take -> one batch of a window's rows: CSR parts and class codes with ``gather``,
        else a CSR matrix and labels."""
        if gather is not None:
            pool = gather(blocks)
            return lambda take: Rows(pool.gather(take), codes[take])
        if self.dtype == np.float16:  # scipy cannot index float16 rows (csr_row_index)
            parts = concat(blocks)
            return lambda take: (parts.take(take).csr(self.n_features), self.classes[codes[take]])
        X = sp.vstack(blocks, format="csr")
        return lambda take: (X[take], self.classes[codes[take]])

    def _read_block(self, fd, fi, fl, fc, lo, hi, parts: bool = False):
        (r0, z0), (r1, z1) = lo, hi
        fl.seek(r0 * 4)
        lengths = np.fromfile(fl, np.int32, r1 - r0)
        fd.seek(z0 * self.dtype.itemsize)
        data = np.fromfile(fd, self.dtype, z1 - z0)
        fi.seek(z0 * 4)
        indices = np.fromfile(fi, np.int32, z1 - z0)
        fc.seek(r0 * 4)
        codes = np.fromfile(fc, np.int32, r1 - r0)
        if lengths.shape[0] != r1 - r0 or data.shape[0] != z1 - z0 or codes.shape[0] != r1 - r0:
            raise OSError(f"the spill file in {self.folder} is shorter than written")
        indptr = np.zeros(r1 - r0 + 1, np.int64)
        np.cumsum(lengths, out=indptr[1:])
        if parts:
            return Parts(data, indices, indptr), codes
        return sp.csr_matrix((data, indices, indptr), shape=(r1 - r0, self.n_features)), codes

    def discard(self) -> None:
        self.complete = False
        shutil.rmtree(self.folder, ignore_errors=True)
