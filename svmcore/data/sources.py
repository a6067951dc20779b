"""Dataset registry: turns a config's ``dataset`` into a source of row chunks.

Every source yields its rows in a fixed order, in chunks, as float64 CSR (or a dense
float64 array for dense sources), with feature hashing already applied. The
held-out split is a rule on the global row number, so memory, stream and memmap
modes hold out exactly the same rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from svmcore.data import disk, nativesvm, text_index
from svmcore.data.hashing import hashed_columns
from svmcore.data.lazy_sparse import sp
from svmcore.data.readers import TEXT_DEFAULT_BITS, iter_file_chunks, sniff_format
from svmcore.data.synthetic import iter_synthetic
from svmcore.spec.choices import Model, Parser
from svmcore.spec.config import RunConfig
from svmcore.spec.errors import ConfigError, DataChangedError, DataError
from svmcore.spec.knobs import MAX_FEATURES
from svmcore.spec.result import DataInfo

CHUNK_ROWS = 10_000  # rows per chunk when a whole dataset is read, converted or written
MAX_TEST_ROWS = 20_000
TEST_EVERY = 5


def n_test_rows(rows: int) -> int:
    """How many of ``rows`` rows ``is_test_row`` holds out."""
    return min(rows // TEST_EVERY, MAX_TEST_ROWS)


def last_test_row(rows: int) -> int:
    """The number of the last held-out row (a test pass may stop reading after it)."""
    if rows <= TEST_EVERY * MAX_TEST_ROWS:
        return n_test_rows(rows) * TEST_EVERY - 1
    return rows - 1


def is_test_row(row: np.ndarray, rows: int) -> np.ndarray:
    """Which of the row numbers ``row`` (0-based, of a dataset of ``rows`` rows) are held
    out: every 5th row, and on more than 100,000 rows 20,000 rows evenly spread over the
    whole data (a file sorted by label must not be tested on its first rows only)."""
    row = np.asarray(row, dtype=np.int64)
    if rows <= TEST_EVERY * MAX_TEST_ROWS:
        return row % TEST_EVERY == TEST_EVERY - 1
    t = MAX_TEST_ROWS
    return ((row + 1) * t // rows > row * t // rows) & (row < rows)


def hash_features(X: sp.csr_matrix | np.ndarray, bits: int) -> sp.csr_matrix:
    """Fold columns into 2^bits hashed columns (signed, so collisions cancel on average)."""
    X = sp.csr_matrix(X) if not sp.issparse(X) else X
    cols, sign = hashed_columns(X.indices, bits)
    out = sp.csr_matrix((X.data * sign, cols, X.indptr.copy()), shape=(X.shape[0], 1 << bits))
    out.sum_duplicates()
    out.indices = out.indices.astype(np.int32, copy=False)
    return out


@dataclass(frozen=True)
class FileStamp:
    """A file's identity: if any of these differ, it is not the file that was scanned."""

    size: int
    mtime_ns: int
    inode: int
    device: int

    @classmethod
    def of(cls, path: str) -> "FileStamp | None":
        """The file's identity now, or None if it is gone."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


def how_changed(before: FileStamp, now: FileStamp | None, rows_before: int | None = None,
                rows_now: int | None = None) -> str | None:
    """How a file changed since ``before`` (or how many rows a pass found against the
    scan's), or None if it did not."""
    if now is None:
        return "it was deleted or moved away"
    if (now.inode, now.device) != (before.inode, before.device):
        return f"it was replaced by another file ({before.size:,} bytes at the start, {now.size:,} now)"
    if now.size != before.size:
        return f"{before.size:,} bytes at the start, {now.size:,} now"
    if now.mtime_ns != before.mtime_ns:
        when = time.strftime("%H:%M:%S", time.localtime(now.mtime_ns / 1e9))
        return f"rewritten at {when} (same size, {now.size:,} bytes)"
    if rows_before is not None and rows_now is not None and rows_now != rows_before:
        return f"{rows_before:,} rows at the start, {rows_now:,} read in this pass"
    return None


class Source:
    """Rows of one dataset as chunks. A file source is pinned by ``scan`` (its identity and
    row count), and every later read checks them after each chunk and at the end of a whole
    pass (``DataChangedError``): a run never trains on a file truncated, appended to or
    replaced while it read it."""

    def __init__(self, cfg: RunConfig, path: str | None = None):
        self.cfg = cfg
        self.path = path or (None if cfg.is_builtin else os.path.abspath(cfg.dataset))
        self.fmt = "synthetic" if cfg.is_synthetic else ("shipped" if cfg.is_builtin else sniff_format(self.path))
        self.text_bits = cfg.hashing_bits or TEXT_DEFAULT_BITS
        self.stamp: FileStamp | None = None  # the file's identity when scanned
        self.expected_rows: int | None = None  # rows the scan counted
        self.name = os.path.basename(self.path) if self.path else cfg.dataset  # as named in messages
        self.during = "being read"  # what a message says was going on ("training" in the worker)

    @property
    def is_file(self) -> bool:
        return self.fmt not in ("synthetic", "shipped")

    def pin(self, stamp: FileStamp | None = None, rows: int | None = None) -> None:
        """Record the identity (now, unless given) and row count that every later read must find."""
        if not self.is_file:
            return
        self.stamp = stamp or FileStamp.of(self.path)
        if self.stamp is None:
            raise DataError("the file no longer exists", self.path)
        self.expected_rows = rows

    def check_unchanged(self, rows_read: int | None = None) -> None:
        """Raise DataChangedError if the pinned file changed (or a full pass read
        ``rows_read`` rows where the scan counted others)."""
        if self.stamp is None:
            return
        how = how_changed(self.stamp, FileStamp.of(self.path), self.expected_rows, rows_read)
        if how:
            raise self.changed(how)

    def changed(self, how: str) -> DataChangedError:
        """The error saying the file changed while read; ``how`` says what was found."""
        return DataChangedError(f"{self.name} changed while {self.during}: {how}; re-run on a stable copy", self.path)

    # identity for caches: the same key means the same rows
    def key(self, hashed: bool = True) -> str:
        c = self.cfg
        if self.fmt == "synthetic":
            ident = [c.dataset, c.rows, c.features, c.nnz_per_row, c.seed]
        elif self.fmt == "shipped":
            ident = [c.dataset]
        else:
            st = self.stamp or FileStamp.of(self.path)
            if st is None:
                raise DataError("the file no longer exists", self.path)
            ident = [self.path, st.size, st.mtime_ns, self.fmt]
        ident += [(c.hashing_bits if hashed else 0) if self.fmt != "text" else self.text_bits]
        return hashlib.sha1(json.dumps(ident).encode()).hexdigest()[:16]

    @property
    def dense_source(self) -> bool:
        return self.cfg.dense_builtin or self.fmt == "csv"

    def _raw_chunks(self, chunk_rows: int, n_features: int | None, span: tuple | None = None
                    ) -> Iterator[tuple[object, np.ndarray]]:
        c = self.cfg
        if self.fmt == "synthetic":
            yield from iter_synthetic(c.dataset, c.rows, c.features, c.nnz_per_row, c.seed)
        elif self.fmt == "shipped":
            X, y = _shipped(c.dataset)
            for s in range(0, X.shape[0], chunk_rows):
                yield X[s:s + chunk_rows], y[s:s + chunk_rows]
        else:
            for ch in iter_file_chunks(self.path, chunk_rows, self.fmt, n_features, self.text_bits,
                                       parser=self.cfg.parser, span=span):
                yield ch.X, ch.y

    def iter_chunks(self, chunk_rows: int, n_features: int | None = None, hashed: bool = True,
                    span: tuple | None = None) -> Iterator[tuple[sp.csr_matrix | np.ndarray, np.ndarray]]:
        """(X, y) chunks in row order, hashed (if the config asks) unless ``hashed`` is
        False. Chunk sizes are the source's own (generation chunks, parse chunks), not
        necessarily ``chunk_rows``. ``span``: a text file's lines in a byte range only
        (``readers.iter_file_chunks``), not counted against the scan's rows."""
        bits = self.cfg.hashing_bits if self.fmt != "text" and hashed else 0
        guarded = self.stamp is not None
        rows = 0
        try:
            for X, y in self._raw_chunks(chunk_rows, None if bits else n_features, span):
                if guarded:
                    self.check_unchanged()  # these rows were read from the file as it was scanned
                rows += X.shape[0]
                if bits:
                    X = hash_features(X, bits)
                elif n_features is not None and sp.issparse(X) and X.shape[1] < n_features:
                    X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
                yield X, y
        except DataError as e:
            if guarded and not isinstance(e, DataChangedError):
                self.check_unchanged()  # a line torn by a writer or a truncation: say so, not "bad line"
            raise
        if guarded:
            self.check_unchanged(None if span else rows)  # a whole pass: same file, same rows as the scan


def _shipped(name: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    if name == "digits":
        d = datasets.load_digits()
        return d.data / 16.0, d.target.astype(np.float64)
    d = datasets.load_breast_cancer()
    X = (d.data - d.data.mean(axis=0)) / d.data.std(axis=0)
    return X, np.where(d.target == 1, 1.0, -1.0)


def scan(source: Source, cache_dir: str | None = None, exact: bool = False) -> DataInfo:
    """One pass over the data: rows, width, nonzeros, classes. Validates every line of
    a file; the result is cached by the file's identity. Synthetic data is described
    from its knobs (nonzeros as an upper bound) unless ``exact``."""
    c = source.cfg
    if source.is_file:
        source.pin()  # every read from here on (this scan's included) checks the file is the same
    cache_file = scan_file(source, cache_dir)
    if cache_file and os.path.exists(cache_file):
        with open(cache_file) as f:
            info = DataInfo(**json.load(f))
        if info.label_runs is not None or source.fmt in ("synthetic", "shipped"):  # else: scanned before runs were counted
            if source.is_file:
                source.expected_rows = info.rows
            return info
    if source.fmt == "synthetic" and not exact:
        features = (1 << c.hashing_bits) if c.hashing_bits else c.features
        nnz = c.rows * (features if c.dense_builtin else c.nnz_per_row)
        return DataInfo(c.dataset, "synthetic", c.rows, features, nnz, [-1.0, 1.0], [],
                        c.dense_builtin, exact=False)
    rows = nnz = 0
    width = 0
    classes: dict = {}
    runs, last = 0, None
    native = source.fmt == "svmlight" and c.parser == Parser.NATIVE and not c.hashing_bits
    for X, y in (_native_counts(source) if native else source.iter_chunks(CHUNK_ROWS)):
        rows += X.shape[0]
        if y.shape[0]:
            runs += int(np.count_nonzero(y[1:] != y[:-1])) + int(last is None or y[0] != last)
            last = y[-1]
        nnz += X.nnz if hasattr(X, "nnz") else int(np.count_nonzero(X))
        width = max(width, X.shape[1])
        vals, counts = np.unique(y, return_counts=True)
        for v, n in zip(vals.tolist(), counts.tolist()):
            classes[v] = classes.get(v, 0) + int(n)
    if rows == 0:
        raise DataError("the file has no data rows", source.path)
    keys = sorted(classes)
    if source.fmt == "synthetic":
        width = (1 << c.hashing_bits) if c.hashing_bits else c.features
    info = DataInfo(os.path.basename(source.path or c.dataset), source.fmt, rows, width, nnz,
                    keys, [classes[k] for k in keys], source.dense_source, label_runs=runs)
    if source.is_file:
        source.expected_rows = rows
    if cache_file and source.fmt not in ("synthetic", "shipped"):
        os.makedirs(cache_dir, exist_ok=True)
        if source.fmt in INDEXED_FORMATS:
            text_index.build(source.path, source.fmt, text_index.path_of(cache_file), rows)
            source.check_unchanged()
        # unique per call: a dashboard's sessions are threads of one process, and two scanning the
        # same file at once wrote one temporary, then the second rename found it gone
        tmp = disk.temporary(cache_file)
        try:
            with open(tmp, "w") as f:
                json.dump(info.to_dict(), f)
            os.replace(tmp, cache_file)
        finally:
            if os.path.exists(tmp):  # a failed write leaves no half file behind
                os.remove(tmp)
    return info


INDEXED_FORMATS = ("svmlight", "csv", "text")  # formats a stream run reads in pieces (``text_index``)


def scan_file(source: Source, cache_dir: str | None) -> str | None:
    """Where the scan of ``source`` is cached (its row index beside it: ``text_index.path_of``)."""
    return os.path.join(cache_dir, f"scan-{source.key()}.json") if cache_dir else None


def row_index(source: Source, cache_dir: str) -> str | None:
    """The row index of a text file ``source`` (pinned by its scan), built now if the cache has
    none (the scan was handed in, or cached before the index existed); None if its lines are
    not the scan's rows (``text_index.build``)."""
    path = text_index.path_of(scan_file(source, cache_dir))
    if not os.path.exists(path):
        os.makedirs(cache_dir, exist_ok=True)
        text_index.build(source.path, source.fmt, path, source.expected_rows)
        source.check_unchanged()
    return path if os.path.exists(path) else None


class _Counts:
    """What ``scan`` needs of a parsed block, without building a matrix (no scipy)."""

    def __init__(self, b):
        self.shape = (b.n_rows, max(1, b.max_id))
        self.nnz = int(b.indptr[-1])


def _native_counts(source: Source) -> Iterator[tuple[_Counts, np.ndarray]]:
    """The native parser's blocks as (counts, labels): the lean worker's scan."""
    rows = 0
    try:
        for b in nativesvm.iter_parsed_blocks(source.path, MAX_FEATURES):
            source.check_unchanged()
            rows += b.n_rows
            yield _Counts(b), b.y
    except DataError:
        source.check_unchanged()  # a line torn by a writer: say so, not "bad line"
        raise
    if rows == 0:
        raise DataError("the file has no data rows", source.path)
    source.check_unchanged(rows)


def check_trainable(info: DataInfo, cfg: RunConfig, what: str = "the data") -> None:
    """Problems only the data can reveal, as clear errors."""
    if len(info.classes) < 2:
        only = info.classes[0] if info.classes else "none"
        raise DataError(f"{what} has only one class (label {only}); a classifier needs at least two")
    n_train = info.rows - n_test_rows(info.rows) if cfg.test_file is None else info.rows
    if cfg.batch_size > n_train:
        raise ConfigError("batch_size", f"{cfg.batch_size:,} is larger than the training data ({n_train:,} rows)",
                          fix={"batch_size": n_train})
    if cfg.model == Model.KERNEL_SVM:
        from svmcore.spec.knobs import MAX_KERNEL_SVM_ROWS
        if n_train > MAX_KERNEL_SVM_ROWS:
            raise ConfigError("model", f"kernel-svm is exact and quadratic in rows; {n_train:,} rows is "
                              f"above its limit of {MAX_KERNEL_SVM_ROWS:,}. Use kernel-approx.",
                              fix={"model": "kernel-approx"})


FORMAT_WORDS = {"svmlight": "svmlight", "text": "raw text ('label<TAB>text' lines)", "csv": "CSV",
                "npz": "an .npz archive"}


def check_lean(cfg: RunConfig) -> None:
    """Refuse the lean path (``RunConfig.lean``: the native parser and solver) for a data or
    test file whose content is not svmlight, whatever its name: that path parses svmlight
    only (a raw text file without an extension used to fail mid-run on its first label)."""
    if not cfg.lean:
        return
    for path in filter(None, (cfg.dataset, cfg.test_file)):
        fmt = sniff_format(path, by_content=True)
        if fmt != "svmlight":
            raise ConfigError("parser", f"{os.path.basename(path)} is {FORMAT_WORDS[fmt]} by its content, and the lean "
                              "path (parser native with solver native) reads svmlight files only; use parser sklearn",
                              fix={"parser": "sklearn"})
