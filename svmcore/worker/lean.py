"""The lean worker path: linear-svm on a svmlight file with the native parser and
solver, in stream or memory mode (``RunConfig.lean``). Only numpy and the native C library are loaded
(no scipy, scikit-learn, numba or threadpoolctl), so the worker's floor is Python +
numpy; batches are CSR parts ``(data, indices, indptr)`` with class codes.

Same rows, same order, same semantics as the classic path: in memory mode
``ArrayData``'s (rows in order, or a permutation drawn from (seed, epoch)); in stream
mode ``StreamData``'s: the held-out rule, the shuffle buffer over the
text in the first pass (``batches.pool_shuffle``'s rule with the same random draws),
the spill written in the first pass and read back in shuffled windows later, the live
evaluation on a 2,000-row sample of the held-out rows and the final scores; with
``threads`` > 1 a reader thread parses the text ahead (the C parser releases the GIL) into a
queue of four parsed blocks (about 1 MiB of text each) and, in later passes, reads the spill's
windows and cuts their batches ahead (``LATER_AHEAD_BYTES``); the rest stays on the training thread.
"""

from __future__ import annotations

import logging
import os

import numpy as np

from svmcore.data import native, nativesvm
from svmcore.data.native import binding
from svmcore.data.batches import STORE_DTYPES, Shuffle, read_ahead, split_chunks
from svmcore.data.copies import HOLD_OUT_RULE, HeldOut, _cached_folder, cache_entries, remove_tree, write_held_out
from svmcore.data.sources import Source, n_test_rows
from svmcore.data.rows import (EMPTY, Parts, Picked, Pool, Recycled, Rows, as_parts, class_codes, concat, pool_shuffle,
                                rebatch)
from svmcore.data.spill import Spill
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.errors import DataChangedError, DataError
from svmcore.spec.monitor import live_evaluation
from svmcore.spec.regularisation import alpha_for, regularisation
from svmcore.spec.events import DATA, LOADED
from svmcore.spec.knobs import MAX_FEATURES
from svmcore.spec.scores import confusion, scores
from svmcore.worker import loop
from svmcore.worker.model_export import save_model
from svmcore.worker.model_size import sparse_model_size
from svmcore.worker import solvers
from svmcore.spec.result import RunSummary

log = logging.getLogger(__name__)

SCORE_SLICE_ROWS = 8192
# The first run on a file extracts its held-out rows from the whole text before it trains. Read in 1 MiB
# blocks (11,000 at 10^7 rows of sparse-text), what the blocks' parsing and picking left behind (heap and
# Python-allocator pages that a few survivors keep) stayed resident through training: 2.4 MiB more than a
# run that found the rows cached after its prepare phase, 1.1-1.8 MiB more at its exact peak. In 8 MiB
# blocks the prepare phase ends 1.25 MiB lower (30.4 vs 31.7 MiB; 29.3 cached), for a prepare-phase peak of
# 42 MiB (34 in 1 MiB blocks, 54 in 16 MiB ones) far under training's.
HELD_OUT_BLOCK_BYTES = 8 << 20
# With threads > 1, the first pass's text is parsed ahead by a thread, this many blocks (~1 MiB of text,
# ~0.4 MiB parsed, each). A shuffle round trains half a pool at once while the parser fills the queue, and
# then waits for the parser: at 10^6 rows, 2 threads, alternating runs: 2 blocks 329-369k rows/s, 4 379-400k
# (exact peak +0.5 to +2 MiB), 8 388-395k (+4 MiB). Those counts were a queue's, and the reader held one more
# block while it waited for room; ``read_ahead`` now counts every block made and not yet taken. At 10^7
# rows (1 pass, alternating, scan cached) 4 such blocks ran 862-945k rows/s at 62.9-63.1 MiB, 3 838-878k at
# 62.3-62.8; at 10^6 (6 runs each) 810-868k at 62.2-62.6, 3 660-789k at 61.6-62.2: 3 is not worth it.
PARSE_AHEAD_BLOCKS = 4
# With threads > 1, a later pass's batches are read ahead by a thread. A shuffled pass reads a window
# (one native call, ~2.5 ms at the default 16,384 rows) before it cuts any batch of it, so the queue must
# last that long or training waits: at 10^6 rows (sparse-text, in one process) 2 batches ran 1.9M rows/s,
# 6 2.0M, 8 (half the window) 2.5M, 16 2.8M; 1.6M without the thread. Half a window, at most 4 MiB (7
# batches of 1,024 rows of 46 nonzeros): once the first pass held less, later passes set the 2-thread peak,
# and in one process, alternating, 7 batches ran as fast as 8 (2.13-2.42M vs 2.15-2.43M rows/s), 6 7% slower.
# (Queue counts again: the 7 now include the batch the reader is cutting, and none is held past them.)
LATER_AHEAD_BYTES = 4 << 20


def import_libraries() -> None:
    """numpy and the native library (built now if missing): the whole floor."""
    _steady_malloc()
    _small_pages()
    native.lib()


def _trim() -> None:
    """Return the heap's free pages to the kernel (glibc's malloc_trim)."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


# Arrays from this size up are mapped on their own and unmapped when freed; smaller ones come from the heap,
# whose freed space is reused. At 256 KiB every batch's values (~370 KiB at 1,024 rows of 46 nonzeros) and
# every parsed block's were mapped, faulted in page by page, zeroed and unmapped (with a TLB shootdown to the
# other thread's core): at 10^6 rows, alternating, 512 KiB ran first passes 5% faster and later passes 3%
# (1 thread) to 10% (2 threads) faster for the same exact peak (69.3-70.2 vs 69.4-69.5 MiB at 1 thread,
# 72.0-72.1 vs 73.1 at 2); 1 MiB was no faster and up to 2.6 MiB higher; glibc's own rising threshold was
# 15-35% faster and 18-30 MiB higher.
MMAP_THRESHOLD = 512 * 1024
# Free space at the top of the heap above this is given back. At 1 MiB a later pass with 2 threads gave back and
# faulted in again 55-80 MiB of pages a pass (14,000-20,000 minor faults, each page zeroed): its ~4 MiB of batches
# ahead are freed and made in turn at the top of the heap. At 4 MiB, as at 8: about 2,300 faults a pass (10^6 rows,
# 2 threads) and the same later-pass speed (4.29M and 4.26M rows/s against 3.96M at 1 MiB, medians of 8 alternating
# runs, peaks the same); the lower of the two keeps less free space resident.
TRIM_THRESHOLD = 4 << 20


def _small_pages() -> None:
    """Turn off numpy's huge-page advice (madvise MADV_HUGEPAGE on every array of 4 MiB or
    more). The parser sizes a block's value, row and label arrays for the densest block it
    could meet (4 MiB each at 1 MiB of text) and writes about a tenth of them; with that advice
    the first write to an aligned 2 MiB range faults in a whole 2 MiB page, so a parsed block
    could hold 2-6 MiB instead of 0.5. At 10^6 rows, alternating: exact peak 67.6-67.8 ->
    64.2-64.4 MiB with 1 thread, 68.8-69.9 -> 66.6-66.7 with 2; first and later passes the same
    within noise (the weights, read at random, are 16 MiB: small pages did not slow them)."""
    setter = getattr(np._core.multiarray, "_set_madvise_hugepage", None)
    if setter is None:
        log.warning("numpy %s has no _set_madvise_hugepage: arrays of 4 MiB or more may use huge pages",
                    np.__version__)
        return
    setter(False)


def _steady_malloc() -> None:
    """glibc's malloc, told to keep the peak near what is live: a fixed mmap threshold
    (by default it rises to the largest block freed, up to 32 MiB, after which the
    parser's and the shuffle buffer's multi-MiB arrays come from the heap and their
    freed space stays resident), a low trim threshold, and one arena (the reader
    thread would otherwise get its own, with its own retained free space)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
        libc.mallopt(M_ARENA_MAX, 1)
    except (OSError, AttributeError):  # not glibc: the default allocator's behaviour
        pass


def _codes(classes: np.ndarray, y: np.ndarray, path: str) -> np.ndarray:
    codes, bad = class_codes(classes, y)
    if bad.shape[0]:
        raise DataError(f"has label {y[bad[0]]:g}, which the scan did not see; the file changed", path)
    return codes


# ---------------------------------------------------------------- reading the text

def _text_rows(source: Source, n_features: int, classes: np.ndarray, total_rows: int, want_test: bool | None,
               parse_ahead: bool = False, picked: bool = False, block_bytes: int = nativesvm.DEFAULT_BLOCK_BYTES):
    """Rows of the file in order: train rows (``want_test`` False), held-out rows (True,
    stopping after the last one) or all rows (None). ``parse_ahead``: a thread parses the
    next blocks (in C, without the GIL) while this one trains; only the parse, since any
    Python work there would take the GIL from the training thread. ``picked``: a block's
    kept rows are handed on as ``Picked`` rows of it, for ``rebatch`` to gather, not copied."""
    blocks = _parsed_rows(source, n_features, classes, scratch=parse_ahead, block_bytes=block_bytes)
    if parse_ahead:
        blocks = read_ahead(blocks, PARSE_AHEAD_BLOCKS)
    if want_test is None:
        return blocks
    return split_chunks(blocks, want_test, total_rows, select=_pick if picked else _select)


def _select(X: Parts, codes: np.ndarray, keep: np.ndarray) -> Rows:
    rows = np.flatnonzero(keep)
    return Rows(X.gather(rows), codes[rows])


def _pick(X: Parts, codes: np.ndarray, keep: np.ndarray) -> tuple[Picked, np.ndarray]:
    rows = np.flatnonzero(keep)
    return Picked(X, rows), codes[rows]


def _parsed_rows(source: Source, n_features: int, classes: np.ndarray, scratch: bool = False,
                 block_bytes: int = nativesvm.DEFAULT_BLOCK_BYTES):
    """The file's rows a parsed block at a time, with class codes; checks that the file
    is the one scanned and names a bad line. ``scratch``: parsed on the reader thread
    (``nativesvm.iter_parsed_blocks``)."""
    path = source.path
    try:
        for b in nativesvm.iter_parsed_blocks(path, MAX_FEATURES, block_bytes, scratch=scratch):
            if source.stamp is not None:
                source.check_unchanged()
            if b.max_id > n_features:
                row = int(np.searchsorted(b.indptr, int(np.argmax(b.indices)), side="right") - 1)
                from svmcore.data.readers import _line_of_row
                raise DataError(f"uses feature {b.max_id:,}, more than the {n_features:,} features seen when "
                                "the file was scanned", path, _line_of_row(path, b.first_row_line, row))
            out = [Rows(Parts(b.data, b.indices, b.indptr), _codes(classes, b.y, path))]
            b = None  # handed on, not held here until the next block is parsed
            yield out.pop()
    except DataError:
        if source.stamp is not None:
            source.check_unchanged()  # a line torn by a writer: say so, not "bad line"
        raise


def _held_out(source: Source, cache_dir: str, n_features: int, rows: int, classes: np.ndarray) -> "_OnDisk":
    """The held-out rows: ``copies.held_out_copy``'s cache folder (same name and files, so
    both paths share it), built here without scipy."""
    folder = os.path.join(cache_dir, f"heldout-{source.key()}-h{HOLD_OUT_RULE}")

    def build(tmp: str) -> dict:
        blocks = ((X, classes[c]) for X, c in _text_rows(source, n_features, classes, rows, want_test=True,
                                                          block_bytes=HELD_OUT_BLOCK_BYTES))
        return {"rows": write_held_out(tmp, blocks), "features": int(n_features)}

    return _OnDisk(HeldOut(folder, _cached_folder(folder, build)).folder)


class _OnDisk:
    """The held-out rows left on disk (the cache folder's CSR files), read a slice at a
    time (``slice_rows`` rows when scored): training holds none of the test set. Its row
    index is read when rows are (``release`` lets it go while training: 8 bytes a held-out
    row, 0.15 MiB at the 20,000-row cap)."""

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

    def rows(self, rows: np.ndarray):
        """Rows ``rows`` (sorted), read slice by slice."""
        out = []
        for s in range(0, self.n_rows, SCORE_SLICE_ROWS):
            e = min(self.n_rows, s + SCORE_SLICE_ROWS)
            sel = rows[(rows >= s) & (rows < e)]
            if sel.shape[0]:
                out.append(self.slice(s, e).gather(sel - s))
        return concat(out)

    @property
    def nbytes(self) -> int:
        return 0


class LeanStream:
    """The training rows of a svmlight file, a batch at a time (``StreamData``'s rules)."""

    def __init__(self, source: Source, n_rows: int, n_features: int, cfg: RunConfig, classes: np.ndarray,
                 total_rows: int, hold_out: bool, spill: Spill | None):
        self.source = source
        self.n_rows = n_rows
        self.n_features = n_features
        self.classes = classes
        self.total_rows = total_rows
        self.hold_out = hold_out
        self.spill = spill
        self.shuffle = Shuffle(cfg.seed, cfg.shuffle_buffer, binding.Generator) if cfg.shuffle else None
        self.sdtype = np.dtype(STORE_DTYPES[cfg.precision])
        self.cdtype = np.float64 if cfg.precision == "float64" else np.float32
        self.reader_thread = cfg.threads > 1

    def _produce(self, batch_size: int, epoch: int):
        if epoch > 0 and self.spill is not None and self.spill.complete:
            ahead = self._later_ahead(batch_size) if self.reader_thread else 0
            if self.shuffle is not None:  # every batch made and not yet trained has its own set of buffers
                raw = self.spill.read_windows(batch_size, self.shuffle.window_rows, self.shuffle.rng(epoch), Pool,
                                              into=Recycled(ahead + 1))
            else:
                raw = self.spill.read(batch_size, parts=True)
            if self.reader_thread:
                raw = read_ahead(raw, ahead)
        else:
            text = _text_rows(self.source, self.n_features, self.classes, self.total_rows,
                              False if self.hold_out else None, parse_ahead=self.reader_thread, picked=True)
            if self.shuffle is not None:  # each block's rows gathered into the shuffle buffer as it comes:
                # one copy of every row fewer than batches gathered first, and no block held on
                raw = rebatch(pool_shuffle(text, self.shuffle.window_rows, self.shuffle.rng(epoch), batch_size,
                                           staged=True, recycled=True),
                              batch_size)
            else:
                raw = rebatch(text, batch_size)
            if self.spill is not None and epoch == 0:  # in the order trained: shuffled, see spill.py
                raw = self.spill.write_through(raw)
        rows = 0
        for (data, indices, indptr), codes in raw:
            rows += codes.shape[0]
            if rows > self.n_rows:
                self._changed(rows, epoch)
            if data.dtype != self.cdtype or self.sdtype != data.dtype:
                data = data.astype(self.sdtype, copy=False).astype(self.cdtype, copy=False)
            yield Rows(Parts(data, indices, indptr), codes)
        if rows != self.n_rows:
            self._changed(rows, epoch)
        if self.source.stamp is not None and not (epoch > 0 and self.spill is not None and self.spill.complete):
            self.source.check_unchanged()

    def _later_ahead(self, batch_size: int) -> int:
        """Batches the reader thread holds ready in a later pass: shuffled, half a window's
        (at most ``LATER_AHEAD_BYTES``), so that training goes on while the next window is
        read; in order, two."""
        if self.shuffle is None:
            return 2
        row_bytes = self.spill.nnz / max(1, self.spill.rows) * (self.spill.dtype.itemsize + 4) + 12
        fits = int(LATER_AHEAD_BYTES // (row_bytes * batch_size))
        return max(2, min(self.shuffle.window_rows // batch_size // 2, fits))

    def _changed(self, rows: int, epoch: int) -> None:
        self.source.check_unchanged()
        more = "at least " if rows > self.n_rows else ""
        raise DataChangedError(f"{self.source.name} changed while {self.source.during}: {self.n_rows:,} training "
                               f"rows at the start, {more}{rows:,} in pass {epoch + 1}; re-run on a stable copy",
                               self.source.path)

    def batches(self, batch_size: int, epoch: int = 0):
        """Pass ``epoch``'s batches. Shuffled, a batch's rows live in buffers that later batches
        reuse (``rows.Recycled``; its codes are its own): they are valid until the next batch is
        taken, as in the training loop."""
        return self._produce(batch_size, epoch)


class LeanArrays:
    """Memory mode: the training rows held as one set of CSR parts in the storage precision,
    cut into batches in order or, shuffled, gathered from a permutation of the rows drawn
    from (seed, epoch): ``ArrayData``'s rules and random draws."""

    def __init__(self, X: Parts, codes: np.ndarray, cfg: RunConfig):
        self.X, self.codes = X, codes
        self.n_rows = int(codes.shape[0])
        self.shuffle = Shuffle(cfg.seed, cfg.shuffle_buffer, binding.Generator) if cfg.shuffle else None
        self.cdtype = np.float64 if cfg.precision == "float64" else np.float32
        self.reader_thread = False
        self.spill = None

    @classmethod
    def load(cls, source: Source, cfg: RunConfig, n_features: int, classes: np.ndarray, total_rows: int,
             hold_out: bool) -> "LeanArrays":
        sdtype = np.dtype(STORE_DTYPES[cfg.precision])
        parts, codes = [], []
        for X, c in _text_rows(source, n_features, classes, total_rows, False if hold_out else None):
            X = as_parts(X).from_zero()
            parts.append(Parts(X.data.astype(sdtype, copy=False), X.indices, X.indptr))
            codes.append(c)
        X_all = concat(parts) if parts else EMPTY
        del parts
        return cls(X_all, np.concatenate(codes) if codes else np.zeros(0, np.int64), cfg)

    def _ready(self, X: Parts) -> Parts:
        return X if X.data.dtype == self.cdtype else Parts(X.data.astype(self.cdtype), X.indices, X.indptr)

    def batches(self, batch_size: int, epoch: int = 0):
        if self.shuffle is not None:
            order = self.shuffle.rng(epoch).permutation(self.n_rows)
            for start in range(0, self.n_rows, batch_size):
                take = order[start:start + batch_size]
                yield Rows(self._ready(self.X.gather(take)), self.codes[take])
            return
        for start in range(0, self.n_rows, batch_size):
            stop = min(start + batch_size, self.n_rows)
            yield Rows(self._ready(self.X.slice(start, stop)), self.codes[start:stop])


# The live sample is scored this many rows at a time, read from its folder: ~140 KiB at 46 nonzeros a row
SAMPLE_SLICE_ROWS = 256


def _sample_on_disk(folder: str, X: Parts, codes: np.ndarray) -> "_OnDisk | Parts":
    """The live-evaluation sample written to the run's folder (the held-out cache's files),
    to be read back ``SAMPLE_SLICE_ROWS`` rows at a time each time it is scored (once a
    second): held in memory it was 1.1 MiB of the peak at 46 nonzeros a row. Deleted at the
    end of training (``_drop_sample``) or with the run's other copies of rows. Where it cannot
    be written (a full disk), it stays in memory, and the log says so."""
    try:
        os.makedirs(folder, exist_ok=True)
        write_held_out(folder, [(X, codes)])
    except OSError as e:
        log.warning("kept the live-evaluation sample in memory: could not write it to %s (%s)", folder, e)
        _drop_sample(None, folder)
        return X
    return _OnDisk(folder, SAMPLE_SLICE_ROWS)


def _drop_sample(X_eval, folder: str | None = None) -> None:
    """Delete the live sample's folder (``folder``, or ``X_eval``'s when it is on disk)."""
    folder = folder or (X_eval.folder if isinstance(X_eval, _OnDisk) else None)
    if folder:
        remove_tree(folder)


def _confusion(predict_codes, X, codes: np.ndarray, k: int) -> np.ndarray:
    matrix = np.zeros((k, k), np.int64)
    n = codes.shape[0]
    step = getattr(X, "slice_rows", SCORE_SLICE_ROWS)
    for s in range(0, n, step):
        e = min(n, s + step)
        matrix += confusion(codes[s:e], predict_codes(X.slice(s, e)), k)
    return matrix


def _load_test(cfg: RunConfig, data: loop.Scanned, held, all_classes: np.ndarray):
    """The test rows (the test file parsed, or the held-out rows left on disk) and their codes."""
    if cfg.test_file:
        got = list(_text_rows(data.test_source, data.n_features, all_classes, data.test_info.rows, None))
        X_test = concat([g[0] for g in got])
        test_codes = np.concatenate([g[1] for g in got])
    else:
        X_test = held
        test_codes = _codes(all_classes, held.labels(), data.source.path)
    if test_codes.shape[0] == 0:
        raise DataError("no rows are left for testing; give a test file or more rows")
    return X_test, test_codes


def run(job: dict, events, phases) -> RunSummary:
    cfg: RunConfig = validate(job["config"])
    cache_dir = job["cache_dir"]

    phases.start("prepare")
    data = loop.scan_sources(cfg, cache_dir)
    info, n_features = data.info, data.n_features
    classes = np.asarray(info.classes)
    all_classes = np.unique(np.concatenate([classes, np.asarray(data.test_info.classes if data.test_info else [])]))
    held = None
    before = cache_entries(cache_dir)
    if not cfg.test_file:
        held = _held_out(data.source, cache_dir, n_features, info.rows, classes)
    events.emit(DATA, info=info.to_dict(), n_features=n_features, text_path=data.source.path, binary_path=None,
                prepared_once=sorted(cache_entries(cache_dir) - before))
    _trim()  # a first run scans the file and extracts the held-out rows: give that memory back

    phases.start("load")
    n_train = info.rows - n_test_rows(info.rows) if not cfg.test_file else info.rows
    if cfg.mode_entry.holds_rows:
        train = LeanArrays.load(data.source, cfg, n_features, classes, info.rows, not cfg.test_file)
        data.source.check_unchanged()  # the whole file read as it was scanned
        if train.n_rows != n_train:
            data.check_unchanged()
            raise DataChangedError(f"{data.source.name} changed while training: {n_train:,} training rows at "
                                   f"the start, {train.n_rows:,} read; re-run on a stable copy", data.source.path)
        train_bytes = train.X.nbytes
    else:
        spill = None
        if cfg.epochs > 1 and job.get("run_dir"):
            spill = Spill(os.path.join(job["run_dir"], "spill"), STORE_DTYPES[cfg.precision], classes, n_features)
        train = LeanStream(data.source, n_train, n_features, cfg, classes, info.rows, not cfg.test_file, spill)
        train_bytes = 0
    X_test, test_codes = _load_test(cfg, data, held, all_classes)
    events.emit(LOADED, train_rows=n_train, test_rows=int(test_codes.shape[0]), train_data_bytes=train_bytes,
                test_data_bytes=X_test.nbytes)

    model = solvers.make(cfg, n_features, classes, alpha_for(cfg, n_train, info.class_counts), None)
    # the model predicts codes over the training classes; map them onto all_classes
    train_to_all = np.searchsorted(all_classes, classes)

    def score(X, codes) -> dict:
        return scores(_confusion(lambda Xs: train_to_all[model.predict_codes(Xs)], X, codes, all_classes.shape[0]),
                      all_classes)

    X_eval = c_eval = None
    if live_evaluation(cfg.monitor):  # the held-out sample exists only to be scored live
        eval_rows = loop.eval_sample_rows(cfg.seed, test_codes.shape[0], binding.Generator)
        X_eval = X_test.rows(eval_rows) if isinstance(X_test, _OnDisk) else X_test.gather(eval_rows)
        c_eval = test_codes[eval_rows]
        if job.get("run_dir"):
            X_eval = _sample_on_disk(os.path.join(job["run_dir"], "eval-sample"), X_eval, c_eval)
    n_test = int(test_codes.shape[0])
    if held is not None:  # the held-out rows' index, labels and codes wait on disk while training (0.46 MiB)
        held.release()
        test_codes = None

    phases.start("train")
    progress = loop.Progress(events, cfg.epochs, n_train * cfg.epochs, cfg.monitor)
    if c_eval is not None:
        progress.evaluate = loop.live_evaluator(progress, score, X_eval, c_eval)
    loop.train_passes(progress, lambda epoch: train.batches(cfg.batch_size, epoch), model.fit_codes, cfg.gc_every,
                 getattr(phases, "faults", None))
    train_s = progress.train_s
    _drop_sample(X_eval)
    data.check_unchanged()
    spill_info = loop.spill_report(train.spill)
    threads = {"requested": cfg.threads, "blas": [], "os_threads": loop.os_threads(),
               "reader_thread": train.reader_thread}

    phases.start("evaluate")
    if test_codes is None:
        test_codes = _load_test(cfg, data, held, all_classes)[1]
    return loop.final_result(
        progress, train_s, score(X_test, test_codes), n_test, events,
        **sparse_model_size(model.nonzero_weights(), model.w.shape[0], model.n_features),  # no copy of the weights
        shuffle=cfg.shuffle, spill=spill_info, train_rows=n_train, features=n_features,
        regularisation=regularisation(cfg, n_train, info.class_counts), train_data_bytes=train_bytes,
        model_bytes=model.w.nbytes + model.aw.nbytes + model.state.nbytes, threads=threads,
        data=info.to_dict(), lean=True, **save_model(job.get("run_dir"), model, cfg, classes, X_test))
