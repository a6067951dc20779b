"""The held-out rows on disk: extracted once per dataset into a cache folder of CSR files
(they are spread over the whole file, so finding them costs a full read that later runs
skip), and read back a slice at a time when they are scored, so training holds none of the
test set. The live evaluation's sample waits in the run's folder in the same form."""

from __future__ import annotations

import logging
import os

import numpy as np

from svmcore.data.copies import HOLD_OUT_RULE, _cached_folder, remove_tree
from svmcore.data.feeds.source_rows import SourceRows
from svmcore.data.rows import Parts, concat
from svmcore.spec.errors import DataError

log = logging.getLogger(__name__)

SCORE_SLICE_ROWS = 8192  # rows scored at once, so a dense or transformed test set never exists whole
SAMPLE_SLICE_ROWS = 256  # the live sample's slices: ~140 KiB at 46 nonzeros a row
# The held-out rows are extracted in 8 MiB blocks: what 1 MiB blocks' parsing left behind stayed resident
# through training (1.1-1.8 MiB of the exact peak, docs/lean.md).
HELD_OUT_BLOCK_BYTES = 8 << 20


def held_out(rows: SourceRows, cache_dir: str) -> "OnDisk":
    """The held-out rows of ``rows``' source, from the cache folder (built now if missing)."""
    folder = os.path.join(cache_dir, f"heldout-{rows.source.key()}-h{HOLD_OUT_RULE}")

    def build(tmp: str) -> dict:
        blocks = ((X, rows.classes[c]) for X, c in rows.rows(want_test=True, block_bytes=HELD_OUT_BLOCK_BYTES))
        return {"rows": write(tmp, blocks), "features": int(rows.n_features)}

    _cached_folder(folder, build, "the held-out rows")
    return OnDisk(folder)


def write(folder: str, blocks) -> int:
    """The cache's files in ``folder``, from ``(block, labels)`` in file order, each appended as
    it comes, so the rows are never all in memory. Returns the rows written."""
    labels, nnz = [], 0
    with open(os.path.join(folder, "data.f64"), "wb") as fd, open(os.path.join(folder, "indices.i32"), "wb") as fi, \
            open(os.path.join(folder, "indptr.i64"), "wb") as fp:
        np.zeros(1, np.int64).tofile(fp)
        for X, y in blocks:
            data, indices, indptr = X.sparse()
            lo, hi = int(indptr[0]), int(indptr[-1])
            np.asarray(data[lo:hi], np.float64).tofile(fd)
            np.asarray(indices[lo:hi], np.int32).tofile(fi)
            (np.asarray(indptr[1:], np.int64) - lo + nnz).tofile(fp)
            nnz += hi - lo
            labels.append(np.asarray(y))
    y = np.concatenate(labels) if labels else np.zeros(0)
    np.save(os.path.join(folder, "y.npy"), y, allow_pickle=False)
    return int(y.shape[0])


class OnDisk:
    """Rows left on disk (a folder of ``write``'s files), read a slice at a time (``slice_rows``
    rows when scored). Their row index is read when rows are (``release`` lets it go while
    training: 8 bytes a held-out row, 0.15 MiB at the 20,000-row cap)."""

    nbytes = 0  # held in memory: none

    def __init__(self, folder: str, slice_rows: int = SCORE_SLICE_ROWS):
        self.folder = folder
        self.slice_rows = slice_rows
        self._indptr: np.ndarray | None = None
        self.n_rows = os.path.getsize(os.path.join(folder, "indptr.i64")) // 8 - 1

    @property
    def indptr(self) -> np.ndarray:
        if self._indptr is None:
            self._indptr = np.fromfile(os.path.join(self.folder, "indptr.i64"), dtype=np.int64)
            if self._indptr.shape[0] != self.n_rows + 1:
                raise DataError("the cached held-out rows changed while training; delete the cache folder",
                                self.folder)
        return self._indptr

    def release(self) -> None:
        self._indptr = None

    def labels(self) -> np.ndarray:
        y = np.load(os.path.join(self.folder, "y.npy"), allow_pickle=False)
        if y.shape[0] != self.n_rows:
            raise DataError(f"the cached held-out rows have {y.shape[0]:,} labels for {self.n_rows:,} rows; "
                            "delete the cache folder", self.folder)
        return y

    def slice(self, a: int, b: int) -> Parts:
        lo, hi = int(self.indptr[a]), int(self.indptr[b])
        data = np.fromfile(os.path.join(self.folder, "data.f64"), dtype=np.float64, count=hi - lo, offset=8 * lo)
        indices = np.fromfile(os.path.join(self.folder, "indices.i32"), dtype=np.int32, count=hi - lo, offset=4 * lo)
        if data.shape[0] != hi - lo or indices.shape[0] != hi - lo:
            raise DataError("the cached held-out rows are shorter than written; delete the cache folder", self.folder)
        return Parts(data, indices, self.indptr[a:b + 1] - lo)

    def gather(self, rows: np.ndarray) -> Parts:
        """Rows ``rows`` (sorted), read slice by slice."""
        out = []
        for s in range(0, self.n_rows, SCORE_SLICE_ROWS):
            e = min(self.n_rows, s + SCORE_SLICE_ROWS)
            sel = rows[(rows >= s) & (rows < e)]
            if sel.shape[0]:
                out.append(self.slice(s, e).gather(sel - s))
        return concat(out)


def sample_on_disk(folder: str, X, codes: np.ndarray):
    """The live evaluation's sample written to ``folder`` (in the run's folder), read back
    ``SAMPLE_SLICE_ROWS`` rows at a time each time it is scored (once a second): held in memory
    it was 1.1 MiB of the lean path's peak at 46 nonzeros a row. Where it cannot be written (a
    full disk), it stays in memory, and the log says so. ``drop_sample`` deletes it."""
    try:
        os.makedirs(folder, exist_ok=True)
        write(folder, [(X, codes)])
    except OSError as e:
        log.warning("kept the live-evaluation sample in memory: could not write it to %s (%s)", folder, e)
        remove_tree(folder)
        return X
    return OnDisk(folder, SAMPLE_SLICE_ROWS)


def drop_sample(X) -> None:
    """Delete the live sample's folder, when it is on disk."""
    if isinstance(X, OnDisk):
        remove_tree(X.folder)
