"""The lean worker path: linear-svm in stream mode on a svmlight file with the native
parser and solver (``RunConfig.lean``). Only numpy and the native C library are loaded
(no scipy, scikit-learn, numba or threadpoolctl), so the worker's floor is Python +
numpy; batches are CSR parts ``(data, indices, indptr)`` with class codes.

Same rows, same order, same semantics as the classic stream path
(``training.run`` with ``StreamData``): the held-out rule, the shuffle buffer over the
text in the first pass (``batches.pool_shuffle``'s rule with the same random draws),
the spill written in the first pass and read back in shuffled windows later, the live
evaluation on a 2,000-row sample of the held-out rows and the final scores; with
``threads`` > 1 a reader thread parses ahead (the C parser releases the GIL) into a
queue of two batches.
"""

from __future__ import annotations

import os
import queue
import threading
import time

import numpy as np

from svmcore.data import native, nativesvm
from svmcore.data.batches import STORE_DTYPES, Shuffle
from svmcore.data.copies import HOLD_OUT_RULE, HeldOut, _cached_folder, cache_entries
from svmcore.data.sources import Source, check_trainable, is_test_row, last_test_row, n_test_rows, scan
from svmcore.data.spill import Spill, concat_parts
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.errors import DataChangedError, DataError
from svmcore.spec.monitor import EVAL_EVERY_S, EVAL_SAMPLE_ROWS, PROGRESS_EVERY_S, live_evaluation
from svmcore.spec.regularisation import alpha_for, regularisation
from svmcore.spec.events import DATA, EVAL, LOADED, PROGRESS
from svmcore.spec.knobs import MAX_FEATURES
from svmcore.spec.scores import confusion, scores
from svmcore.worker.model_size import sparse_model_size
from svmcore.worker.native_sgd import NativeSGD

SCORE_SLICE_ROWS = 8192


def import_libraries() -> None:
    """numpy and the native library (built now if missing): the whole floor."""
    _steady_malloc()
    native.lib()


def _trim() -> None:
    """Return the heap's free pages to the kernel (glibc's malloc_trim)."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


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
        libc.mallopt(M_MMAP_THRESHOLD, 256 * 1024)  # batches (~0.5 MiB) and blocks go back at once
        libc.mallopt(M_TRIM_THRESHOLD, 1 << 20)
        libc.mallopt(M_ARENA_MAX, 1)
    except (OSError, AttributeError):  # not glibc: the default allocator's behaviour
        pass


# ---------------------------------------------------------------- CSR parts

def gather(parts, rows: np.ndarray):
    """Rows ``rows`` of CSR parts, in that order."""
    data, indices, indptr = parts
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    lengths = indptr[rows + 1] - indptr[rows]
    out_data = np.empty(int(lengths.sum()), data.dtype)
    out_indices = np.empty(out_data.shape[0], np.int32)
    out_indptr = np.empty(rows.shape[0] + 1, np.int64)
    native.lib().csr_gather(data.ctypes.data, indices.ctypes.data, indptr.ctypes.data, data.dtype.itemsize,
                            rows.ctypes.data, rows.shape[0], out_data.ctypes.data, out_indices.ctypes.data,
                            out_indptr.ctypes.data)
    return out_data, out_indices, out_indptr


class _Pool:
    """CSR parts held side by side, read by global row number without stacking them."""

    def __init__(self, parts: list):
        self.parts = parts  # (data, indices, indptr from 0) each
        self.lengths = np.array([p[2].shape[0] - 1 for p in parts], np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)])
        self.ptrs = [np.array([p[k].ctypes.data for p in parts], np.int64) for k in range(3)]
        self.dtype = parts[0][0].dtype

    def gather(self, rows: np.ndarray):
        rows = np.asarray(rows, np.int64)
        part = np.searchsorted(self.starts, rows, side="right") - 1
        local = np.ascontiguousarray(rows - self.starts[part])
        part = np.ascontiguousarray(part)
        lib = native.lib()
        out_indptr = np.empty(rows.shape[0] + 1, np.int64)
        nnz = lib.csr_parts_indptr(self.ptrs[2].ctypes.data, part.ctypes.data, local.ctypes.data, rows.shape[0],
                                   out_indptr.ctypes.data)
        out_data = np.empty(nnz, self.dtype)
        out_indices = np.empty(nnz, np.int32)
        lib.csr_gather_parts(self.ptrs[0].ctypes.data, self.ptrs[1].ctypes.data, self.ptrs[2].ctypes.data,
                             self.dtype.itemsize, part.ctypes.data, local.ctypes.data, rows.shape[0],
                             out_data.ctypes.data, out_indices.ctypes.data, out_indptr.ctypes.data)
        return out_data, out_indices, out_indptr


def _slice(parts, a: int, b: int):
    data, indices, indptr = parts
    lo, hi = int(indptr[a]), int(indptr[b])
    return data[lo:hi], indices[lo:hi], indptr[a:b + 1] - lo


def _from_zero(parts):
    """Parts whose indptr starts at 0 (a slice of a bigger block may not)."""
    data, indices, indptr = parts
    if indptr[0] == 0:
        return parts
    lo = int(indptr[0])
    return data[lo:int(indptr[-1])], indices[lo:int(indptr[-1])], indptr - lo


def _rebatch(items, batch_size: int):
    """(parts, codes) of any sizes in, batches of exactly ``batch_size`` rows out (the last may be short).
    Every batch owns compact arrays (gathered from the pieces): a batch that were a view of a
    bigger stacked array would keep all of it alive, e.g. in the shuffle buffer."""
    pend_X: list = []
    pend_c: list = []
    have = 0
    for X, c in items:
        if c.shape[0] == 0:
            continue
        if not pend_X and c.shape[0] == batch_size:
            yield X, c
            continue
        pend_X.append(_from_zero(X))
        pend_c.append(c)
        have += c.shape[0]
        if have >= batch_size:
            pool, Pc = _Pool(pend_X), np.concatenate(pend_c)
            pend_X = pend_c = None  # type: ignore[assignment]
            s = 0
            while have - s >= batch_size:
                yield pool.gather(np.arange(s, s + batch_size)), Pc[s:s + batch_size].copy()
                s += batch_size
            rest = (pool.gather(np.arange(s, have)), Pc[s:].copy()) if s < have else None
            del pool, Pc
            pend_X, pend_c = ([rest[0]], [rest[1]]) if rest else ([], [])
            have -= s
    if have:
        yield (_Pool(pend_X).gather(np.arange(have)) if len(pend_X) > 1 else pend_X[0]), np.concatenate(pend_c)


def _pool_shuffle(items, pool_rows: int, rng: np.random.Generator, batch_size: int):
    """``batches.pool_shuffle`` on CSR parts: the same rule and the same random draws."""
    pend_X: list = []
    pend_c: list = []
    have = 0
    for X, c in items:
        if c.shape[0] == 0:
            continue
        pend_X.append(X)
        pend_c.append(c)
        have += c.shape[0]
        if have > pool_rows:
            PX, Pc = _Pool([_from_zero(x) for x in pend_X]), np.concatenate(pend_c)
            pend_X = pend_c = None  # type: ignore[assignment]  # PX holds the pieces
            order = rng.permutation(have)
            keep = pool_rows // 2
            out = order[:have - keep]
            rest = order[have - keep:]
            kept = (PX.gather(rest), Pc[rest]) if keep else None
            # the leaving rows a batch at a time: never a second copy of them all
            for s in range(0, out.shape[0], batch_size):
                take = out[s:s + batch_size]
                yield PX.gather(take), Pc[take]
            del PX, Pc
            pend_X, pend_c, have = ([kept[0]], [kept[1]], keep) if keep else ([], [], 0)
    if have:
        PX, Pc = concat_parts(pend_X), np.concatenate(pend_c)
        order = rng.permutation(have)
        yield gather(PX, order), Pc[order]


def _codes(classes: np.ndarray, y: np.ndarray, path: str) -> np.ndarray:
    codes = np.searchsorted(classes, y)
    codes[codes >= classes.shape[0]] = 0
    bad = classes[codes] != y
    if bad.any():
        raise DataError(f"has label {y[bad][0]:g}, which the scan did not see; the file changed", path)
    return codes.astype(np.int64)


# ---------------------------------------------------------------- reading the text

def _text_rows(source: Source, n_features: int, classes: np.ndarray, total_rows: int, want_test: bool | None):
    """(parts, codes) of the file's rows in order: train rows (``want_test`` False),
    held-out rows (True, stopping after the last one) or all rows (None)."""
    path = source.path
    row0 = 0
    last_test = last_test_row(total_rows)
    try:
        for b in nativesvm.iter_parsed_blocks(path, MAX_FEATURES):
            if source.stamp is not None:
                source.check_unchanged()
            if b.max_id > n_features:
                row = int(np.searchsorted(b.indptr, int(np.argmax(b.indices)), side="right") - 1)
                from svmcore.data.readers import _line_of_row
                raise DataError(f"uses feature {b.max_id:,}, more than the {n_features:,} features seen when "
                                "the file was scanned", path, _line_of_row(path, b.first_row_line, row))
            parts = (b.data, b.indices, b.indptr)
            codes = _codes(classes, b.y, path)
            n = b.n_rows
            if want_test is None:
                yield parts, codes
                row0 += n
                continue
            if want_test and row0 > last_test:
                return
            mask = is_test_row(np.arange(row0, row0 + n), total_rows)
            row0 += n
            keep = mask if want_test else ~mask
            if keep.all():
                yield parts, codes
            elif keep.any():
                rows = np.flatnonzero(keep)
                yield gather(parts, rows), codes[rows]
    except nativesvm.BlockError as e:
        from svmcore.data.readers import explain_svmlight_line
        why = explain_svmlight_line(e.line) or f"is not valid svmlight ({e.reason})"
        if source.stamp is not None:
            source.check_unchanged()  # a line torn by a writer: say so, not "bad line"
        raise DataError(why, path, e.line_number) from None


def _held_out(source: Source, cache_dir: str, n_features: int, rows: int, classes: np.ndarray):
    """The held-out rows as parts and labels: ``copies.held_out_copy``'s cache folder
    (same name and files, so both paths share it), built here without scipy."""
    folder = os.path.join(cache_dir, f"heldout-{source.key()}-h{HOLD_OUT_RULE}")

    def build(tmp: str) -> dict:
        got = list(_text_rows(source, n_features, classes, rows, want_test=True))
        X = concat_parts([g[0] for g in got]) if got else (np.zeros(0), np.zeros(0, np.int32), np.zeros(1, np.int64))
        y = classes[np.concatenate([g[1] for g in got])] if got else np.zeros(0)
        X[0].astype(np.float64).tofile(os.path.join(tmp, "data.f64"))
        X[1].astype(np.int32).tofile(os.path.join(tmp, "indices.i32"))
        X[2].astype(np.int64).tofile(os.path.join(tmp, "indptr.i64"))
        np.save(os.path.join(tmp, "y.npy"), y, allow_pickle=False)
        return {"rows": int(y.shape[0]), "features": int(n_features)}

    held = HeldOut(folder, _cached_folder(folder, build))
    return _OnDisk(held.folder), np.load(os.path.join(held.folder, "y.npy"), allow_pickle=False)


class _OnDisk:
    """The held-out rows left on disk (the cache folder's CSR files), read a slice at a
    time: training holds only the 2,000-row evaluation sample, not the whole test set."""

    def __init__(self, folder: str):
        self.folder = folder
        self.indptr = np.fromfile(os.path.join(folder, "indptr.i64"), dtype=np.int64)
        self.n_rows = self.indptr.shape[0] - 1

    def slice(self, a: int, b: int):
        lo, hi = int(self.indptr[a]), int(self.indptr[b])
        data = np.fromfile(os.path.join(self.folder, "data.f64"), dtype=np.float64, count=hi - lo, offset=8 * lo)
        indices = np.fromfile(os.path.join(self.folder, "indices.i32"), dtype=np.int32, count=hi - lo, offset=4 * lo)
        if data.shape[0] != hi - lo or indices.shape[0] != hi - lo:
            raise DataError("the cached held-out rows are shorter than written; delete the cache folder", self.folder)
        return data, indices, self.indptr[a:b + 1] - lo

    def rows(self, rows: np.ndarray):
        """Rows ``rows`` (sorted), read slice by slice."""
        out = []
        for s in range(0, self.n_rows, SCORE_SLICE_ROWS):
            e = min(self.n_rows, s + SCORE_SLICE_ROWS)
            sel = rows[(rows >= s) & (rows < e)]
            if sel.shape[0]:
                out.append(gather(self.slice(s, e), sel - s))
        return concat_parts(out)

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
        self.shuffle = Shuffle(cfg.seed, cfg.shuffle_buffer) if cfg.shuffle else None
        self.sdtype = np.dtype(STORE_DTYPES[cfg.precision])
        self.cdtype = np.float64 if cfg.precision == "float64" else np.float32
        self.reader_thread = cfg.threads > 1

    def _produce(self, batch_size: int, epoch: int):
        if epoch > 0 and self.spill is not None and self.spill.complete:
            if self.shuffle is not None:
                raw = self.spill.read_windows(batch_size, self.shuffle.window_rows, self.shuffle.rng(epoch), _Pool)
            else:
                raw = self.spill.read(batch_size, parts=True)
        else:
            raw = _rebatch(_text_rows(self.source, self.n_features, self.classes, self.total_rows,
                                      False if self.hold_out else None), batch_size)
            if self.spill is not None and epoch == 0:
                raw = self.spill.write_through(raw)
            if self.shuffle is not None:
                raw = _rebatch(_pool_shuffle(raw, self.shuffle.window_rows, self.shuffle.rng(epoch), batch_size),
                               batch_size)
        rows = 0
        for (data, indices, indptr), codes in raw:
            rows += codes.shape[0]
            if rows > self.n_rows:
                self._changed(rows, epoch)
            if data.dtype != self.cdtype or self.sdtype != data.dtype:
                data = data.astype(self.sdtype, copy=False).astype(self.cdtype, copy=False)
            yield (data, indices, indptr), codes
        if rows != self.n_rows:
            self._changed(rows, epoch)
        if self.source.stamp is not None and not (epoch > 0 and self.spill is not None and self.spill.complete):
            self.source.check_unchanged()

    def _changed(self, rows: int, epoch: int) -> None:
        self.source.check_unchanged()
        more = "at least " if rows > self.n_rows else ""
        raise DataChangedError(f"{self.source.name} changed while {self.source.during}: {self.n_rows:,} training "
                               f"rows at the start, {more}{rows:,} in pass {epoch + 1}; re-run on a stable copy",
                               self.source.path)

    def batches(self, batch_size: int, epoch: int = 0):
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


def _confusion(model: NativeSGD, X, codes: np.ndarray, k: int) -> np.ndarray:
    matrix = np.zeros((k, k), np.int64)
    n = codes.shape[0]
    for s in range(0, n, SCORE_SLICE_ROWS):
        e = min(n, s + SCORE_SLICE_ROWS)
        pred = model.predict_codes(X.slice(s, e) if isinstance(X, _OnDisk) else _slice(X, s, e))
        matrix += confusion(codes[s:e], pred, k)
    return matrix


def run(job: dict, events, phases) -> dict:
    cfg: RunConfig = validate(job["config"])
    cache_dir = job["cache_dir"]
    np.random.seed(cfg.seed % 2**32)

    phases.start("prepare")
    source = Source(cfg)
    source.during = "training"
    info = scan(source, cache_dir)
    read_sources = [source]
    n_features = info.features
    test_source = test_info = None
    if cfg.test_file:
        test_source = Source(validate(cfg.to_dict(), dataset=cfg.test_file, test_file=None))
        test_source.during = "training"
        test_info = scan(test_source, cache_dir)
        read_sources.append(test_source)
        n_features = max(n_features, test_info.features)
    check_trainable(info, cfg)
    classes = np.asarray(info.classes)
    all_classes = np.unique(np.concatenate([classes, np.asarray(test_info.classes if test_info else [])]))
    held = None
    before = cache_entries(cache_dir)
    if not cfg.test_file:
        held = _held_out(source, cache_dir, n_features, info.rows, classes)
    events.emit(DATA, info=info.to_dict(), n_features=n_features, text_path=source.path, binary_path=None,
                prepared_once=sorted(cache_entries(cache_dir) - before))
    _trim()  # a first run scans the file and extracts the held-out rows: give that memory back

    phases.start("load")
    spill = None
    if cfg.epochs > 1 and job.get("run_dir"):
        spill = Spill(os.path.join(job["run_dir"], "spill"), STORE_DTYPES[cfg.precision], classes, n_features)
    n_train = info.rows - n_test_rows(info.rows) if not cfg.test_file else info.rows
    train = LeanStream(source, n_train, n_features, cfg, classes, info.rows, not cfg.test_file, spill)
    if cfg.test_file:
        got = list(_text_rows(test_source, n_features, all_classes, test_info.rows, None))
        X_test = concat_parts([g[0] for g in got])
        test_codes = np.concatenate([g[1] for g in got])
    else:
        X_test, y_test = held
        test_codes = _codes(all_classes, y_test, source.path)
    if test_codes.shape[0] == 0:
        raise DataError("no rows are left for testing; give a test file or more rows")
    test_bytes = 0 if isinstance(X_test, _OnDisk) else sum(a.nbytes for a in X_test)
    events.emit(LOADED, train_rows=n_train, test_rows=int(test_codes.shape[0]), train_data_bytes=0,
                test_data_bytes=test_bytes)

    model = NativeSGD(alpha_for(cfg, n_train), cfg.average, n_features, classes)
    k = all_classes.shape[0]
    # the model predicts codes over the training classes; map them onto all_classes
    train_to_all = np.searchsorted(all_classes, classes)
    live_eval = live_evaluation(cfg.monitor)
    progress_every = PROGRESS_EVERY_S.get(cfg.monitor)  # None: no progress events while training
    X_eval = c_eval = None
    if live_eval:  # the held-out sample exists only to be scored live
        eval_rows = np.sort(np.random.default_rng([cfg.seed, 7]).permutation(test_codes.shape[0])[:EVAL_SAMPLE_ROWS])
        X_eval = X_test.rows(eval_rows) if isinstance(X_test, _OnDisk) else gather(X_test, eval_rows)
        c_eval = test_codes[eval_rows]

    class _Mapped:  # predictions as codes over all_classes
        @staticmethod
        def predict_codes(X):
            return train_to_all[model.predict_codes(X)]

    phases.start("train")
    t_train = time.monotonic()
    samples = batches = 0
    total = n_train * cfg.epochs
    last_progress = last_eval = 0.0
    epoch_rates: list = []

    def evaluate_now() -> None:
        nonlocal last_eval
        sc = scores(_confusion(_Mapped, X_eval, c_eval, k), all_classes)
        last_eval = time.monotonic()
        events.emit(EVAL, samples=samples, accuracy=sc["accuracy"], balanced_accuracy=sc["balanced_accuracy"],
                    rows=int(c_eval.shape[0]), train_elapsed_s=last_eval - t_train)

    faults = getattr(phases, "faults", None)
    for epoch in range(cfg.epochs):
        if faults is not None:
            faults.fire(f"epoch{epoch + 1}")
        t_epoch, samples_epoch = time.monotonic(), samples
        for Xb, cb in train.batches(cfg.batch_size, epoch):
            model.fit_codes(Xb, cb)
            samples += cb.shape[0]
            batches += 1
            if progress_every is None:
                continue
            now = time.monotonic()
            if now - last_progress >= progress_every:
                events.emit(PROGRESS, samples=samples, batches=batches, epoch=epoch + 1,
                            epochs=cfg.epochs, total=total, train_elapsed_s=now - t_train)
                last_progress = now
            if live_eval and now - last_eval >= EVAL_EVERY_S:
                evaluate_now()
        epoch_s = time.monotonic() - t_epoch
        epoch_rates.append((samples - samples_epoch) / epoch_s if epoch_s > 0 else None)
        if progress_every is not None:
            events.emit(PROGRESS, samples=samples, batches=batches, epoch=epoch + 1, epochs=cfg.epochs,
                        total=total, train_elapsed_s=time.monotonic() - t_train, epoch_samples_per_s=epoch_rates[-1])
        if live_eval:
            evaluate_now()
    train_s = time.monotonic() - t_train
    for src in read_sources:
        src.check_unchanged()
    spill_info = None
    if spill is not None:
        spill_info = {"rows": spill.rows, "read_back": spill.complete, "failed": spill.failed}
        spill.discard()
    with open("/proc/self/status") as f:
        os_threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))

    phases.start("evaluate")
    final = scores(_confusion(_Mapped, X_test, test_codes, k), all_classes)
    events.emit(EVAL, samples=samples, accuracy=final["accuracy"], balanced_accuracy=final["balanced_accuracy"],
                rows=int(test_codes.shape[0]), final=True, train_elapsed_s=train_s)
    model_bytes = model.w.nbytes + model.aw.nbytes + model.state.nbytes
    size = sparse_model_size(model.nonzero_weights(), model.w.shape[0], model.n_features)  # no copy of the weights
    from svmcore.worker.model_export import save_model  # issue 21: export the model for serving
    exported = save_model(job.get("run_dir"), model, cfg, classes, X_test)  # issue 21
    return {
        **final, **size, **exported, "samples": samples, "shuffle": cfg.shuffle, "monitor": cfg.monitor,
        "batches": batches, "train_s": train_s,
        "samples_per_s": samples / train_s if train_s > 0 else None,
        "epoch_samples_per_s": epoch_rates,
        "spill": spill_info,
        "train_rows": n_train, "test_rows": int(test_codes.shape[0]), "features": n_features,
        "regularisation": regularisation(cfg, n_train),
        "train_data_bytes": 0, "model_bytes": model_bytes,
        "threads": {"requested": cfg.threads, "blas": [], "os_threads": os_threads,
                    "reader_thread": train.reader_thread},
        "data": info.to_dict(), "pid": os.getpid(), "lean": True,
    }
