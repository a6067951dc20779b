"""What the worker does between its imports and its outcome: prepare, load,
transform, train, evaluate. Runs inside the child process only."""

from __future__ import annotations

import gc
import os
import time

import numpy as np
import scipy.sparse as sp

from svmcore.data import copies as cache
from svmcore.data.batches import (
    COMPUTE_DTYPES,
    STORE_DTYPES,
    ArrayData,
    Shuffle,
    StreamData,
    split_both,
    to_storage,
)
from svmcore.data.sources import CHUNK_ROWS, Source, check_trainable, n_test_rows, scan
from svmcore.data.spill import Spill
from svmcore.data.upcast import METER as UPCASTS
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.monitor import EVAL_EVERY_S, EVAL_SAMPLE_ROWS, PROGRESS_EVERY_S, live_evaluation
from svmcore.spec.events import DATA, EVAL, LOADED, PROGRESS, TRANSFORMED
from svmcore.spec.scores import confusion, scores
from svmcore.worker.models import KERNEL_SAMPLE_ROWS, Trainer

SCORE_SLICE_ROWS = 2048  # rows scored at once, so a dense or transformed test set never exists whole


def import_libraries(model: str, parser: str = "sklearn", solver: str = "sklearn") -> None:
    """Import what training needs, so that the imports phase is the floor."""
    if parser == "numba":
        from svmcore.data import fastsvm
        fastsvm.warm_up()  # compile (or load the cached code) now: it belongs to the floor
    if solver == "numba" and model in ("linear-svm", "kernel-approx"):
        from svmcore.worker import sgd
        sgd.warm_up()
    if solver == "ftrl" and model in ("linear-svm", "kernel-approx"):
        from svmcore.worker import ftrl
        ftrl.warm_up()
    if "native" in (parser, solver):
        from svmcore.data import native
        native.lib()
    import sklearn.linear_model  # noqa: F401
    import threadpoolctl  # noqa: F401
    if model == "mlp":
        import sklearn.neural_network  # noqa: F401
    if model == "mlp-numpy":
        from svmcore.worker import mlp_numpy  # noqa: F401
    if model == "kernel-svm":
        import sklearn.svm  # noqa: F401
    if model == "kernel-approx":
        import sklearn.kernel_approximation  # noqa: F401


def _nbytes(X) -> int:
    if isinstance(X, tuple):
        return sum(a.nbytes for a in X if hasattr(a, "nbytes"))
    if sp.issparse(X):
        return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return int(X.nbytes)


def _gather(chunks, precision: str, dense: bool, n_features: int):
    """All chunks in one storage array (the memory-mode load)."""
    Xs, ys = [], []
    for X, y in chunks:
        Xs.append(to_storage(X, precision, dense))
        ys.append(y)
    if not ys:
        return None, np.zeros(0)
    y = np.concatenate(ys)
    if dense:
        X = np.vstack(Xs) if len(Xs) > 1 else Xs[0]
    elif isinstance(Xs[0], tuple):  # float16 parts
        data = np.concatenate([p[0] for p in Xs])
        indices = np.concatenate([p[1] for p in Xs])
        offsets = np.cumsum([0] + [p[2][-1] for p in Xs[:-1]])
        indptr = np.concatenate([np.zeros(1, np.int64)] + [p[2][1:] + off for p, off in zip(Xs, offsets)])
        X = (data, indices, indptr)
    else:
        X = sp.vstack(Xs, format="csr") if len(Xs) > 1 else Xs[0]
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
    del Xs
    return X, y


def _as_compute(X, precision: str, dense: bool, n_features: int):
    """A stored test set in compute form."""
    cdtype = COMPUTE_DTYPES[precision]
    if isinstance(X, tuple):
        data, indices, indptr = X
        X = sp.csr_matrix((np.asarray(data, dtype=cdtype), np.asarray(indices), np.asarray(indptr)),
                          shape=(len(indptr) - 1, n_features))
    elif sp.issparse(X):
        X = X.astype(cdtype, copy=False)
    else:
        X = np.asarray(X, dtype=cdtype)
    if dense and sp.issparse(X):
        X = X.toarray()
    return X


def run(job: dict, events, phases) -> dict:
    # checked by the parent already; here only re-read (never probe cgroups from inside the run's own)
    cfg: RunConfig = validate(job["config"])
    cache_dir = job["cache_dir"]
    from threadpoolctl import threadpool_info, threadpool_limits

    limiter = threadpool_limits(limits=cfg.threads)  # noqa: F841 (held for the whole run)
    np.random.seed(cfg.seed % 2**32)
    dense = cfg.representation == "dense"

    phases.start("prepare")
    source = Source(cfg)
    source.during = "training"
    info = scan(source, cache_dir)  # pins the file: every later read checks it is unchanged
    read_sources = [source]  # file sources this run reads: checked again when training ends
    n_features = info.features
    test_info = None
    if cfg.test_file:
        test_source = Source(validate(cfg.to_dict(), dataset=cfg.test_file, test_file=None))
        test_source.during = "training"
        test_info = scan(test_source, cache_dir)
        read_sources.append(test_source)
        n_features = max(n_features, test_info.features)
    check_trainable(info, cfg)
    classes = list(info.classes)
    text_path = bin_data = None
    held_out = None
    before = cache.cache_entries(cache_dir)  # what this run builds here, later runs of the data reuse
    if cfg.mode == "stream" and cfg.workers == 1:
        text_path = cache.text_copy(source, cache_dir, classes)
        stream_src = source if text_path == source.path else _cached_copy(text_path, cfg, source, info.rows)
        if not cfg.test_file:
            held_out = cache.held_out_copy(stream_src, cache_dir, n_features, info.rows)
    elif cfg.mode == "memmap":
        bin_data = cache.binary_copy(source, cache_dir, classes, n_features, cfg.precision,
                                     "dense" if dense else "csr", info.rows, hold_out=not cfg.test_file)
    events.emit(DATA, info=info.to_dict(), n_features=n_features, text_path=text_path,
                binary_path=bin_data.folder if bin_data else None,
                prepared_once=sorted(cache.cache_entries(cache_dir) - before))

    phases.start("load")
    shuffle = Shuffle(cfg.seed, cfg.shuffle_buffer) if cfg.shuffle else None
    test_parts: list = []  # memory mode collects the held-out rows in its one pass
    if cfg.workers > 1:  # data-parallel: one pass writes the shards (and collects the held-out rows)
        from svmcore.worker import parallel
        chunks = source.iter_chunks(CHUNK_ROWS, n_features)
        train = parallel.Shards(parallel.write_shards(
            chunks if cfg.test_file else split_both(chunks, test_parts, info.rows), cfg.workers,
            os.path.join(job.get("run_dir") or cache_dir, "shards"), cfg.precision, classes, n_features,
            # on disk: each value and its int32 column id, and each row's int32 length and class code
            need_bytes=info.nnz * (np.dtype(STORE_DTYPES[cfg.precision]).itemsize + 4) + info.rows * 8))
        train_bytes = 0
    elif cfg.mode == "memory":
        chunks = source.iter_chunks(CHUNK_ROWS, n_features)
        X_train, y_train = _gather(chunks if cfg.test_file else split_both(chunks, test_parts, info.rows),
                                   cfg.precision, dense, n_features)
        train = ArrayData(X_train, y_train, n_features, cfg.precision, dense, shuffle)
        train_bytes = _nbytes(X_train)
    elif cfg.mode == "memmap":
        Xp, yi = bin_data.part("train")
        train = ArrayData(Xp, _LazyLabels(yi, classes), n_features, cfg.precision, dense, shuffle)
        train_bytes = 0
    else:
        n_train = info.rows - n_test_rows(info.rows) if not cfg.test_file else info.rows
        spill = None
        if cfg.epochs > 1 and cfg.model != "kernel-svm" and job.get("run_dir"):
            spill = Spill(os.path.join(job["run_dir"], "spill"), STORE_DTYPES[cfg.precision], classes, n_features)
        train = StreamData(stream_src, n_train, n_features, cfg.precision, dense, cfg.threads > 1,
                           hold_out=not cfg.test_file, spill=spill, shuffle=shuffle, total_rows=info.rows)
        train_bytes = 0
    if cfg.test_file:
        X_test, y_test = _gather(test_source.iter_chunks(CHUNK_ROWS, n_features), cfg.precision, False, n_features)
    elif cfg.mode == "memmap":
        Xp, yi = bin_data.part("test")
        X_test = tuple(np.array(a) for a in Xp) if isinstance(Xp, tuple) else np.array(Xp)
        y_test = np.asarray(classes)[np.asarray(yi)]
    elif cfg.mode == "memory" or cfg.workers > 1:
        X_test, y_test = _gather(iter(test_parts), cfg.precision, False, n_features)
        test_parts.clear()
    else:
        X_test, y_test = _gather(iter([held_out.load()]), cfg.precision, False, n_features)
    if y_test.shape[0] == 0:
        from svmcore.spec.errors import DataError
        raise DataError("no rows are left for testing; give a test file or more rows")
    X_test = _as_compute(X_test, cfg.precision, False, n_features)
    events.emit(LOADED, train_rows=train.n_rows, test_rows=int(y_test.shape[0]),
                train_data_bytes=train_bytes, test_data_bytes=_nbytes(X_test))

    trainer = Trainer(cfg, classes, n_features, train.n_rows)
    score_classes = _score_classes(classes, y_test)
    live_eval = live_evaluation(cfg.monitor)
    progress_every = PROGRESS_EVERY_S.get(cfg.monitor)  # None: no progress events while training
    X_eval = y_eval = None
    if live_eval:  # the held-out sample exists only to be scored live
        eval_rows = np.sort(np.random.default_rng([cfg.seed, 7]).permutation(y_test.shape[0])[:EVAL_SAMPLE_ROWS])
        X_eval, y_eval = X_test[eval_rows], y_test[eval_rows]
    pre_transformed = False
    if trainer.needs_transform_fit:
        phases.start("transform")
        sample_X, _ = train.batch(0, min(KERNEL_SAMPLE_ROWS, train.n_rows)) if isinstance(train, ArrayData) \
            else train.sample(min(KERNEL_SAMPLE_ROWS, train.n_rows))
        trainer.fit_transform_on(sample_X)
        del sample_X
        if isinstance(train, ArrayData) and cfg.mode == "memory":  # the in-memory pipeline transforms all rows up front
            X_all = train.X if not isinstance(train.X, tuple) else train.batch(0, train.n_rows)[0]
            train = ArrayData(trainer.transform(X_all), train.y, trainer.cfg.n_components,
                              "float64" if cfg.precision == "float64" else "float32", False, shuffle)
            del X_all
            pre_transformed = True
        events.emit(TRANSFORMED, components=int(trainer.transform(X_test[:1]).shape[1]))

    phases.start("train")
    UPCASTS.reset()  # the train phase's batches only (the load and a transform sample are not batches)
    t_train = time.monotonic()
    samples = batches = 0
    total = train.n_rows * (1 if not trainer.incremental else cfg.epochs)
    last_progress = last_eval = 0.0
    epoch_rates: list = []  # samples/s of each pass: the first parses, later ones may not
    parallel_info = None

    def evaluate_now() -> None:
        nonlocal last_eval
        sc = scores(_confusion(trainer, X_eval, y_eval, dense, score_classes), score_classes)
        last_eval = time.monotonic()
        events.emit(EVAL, samples=samples, accuracy=sc["accuracy"], balanced_accuracy=sc["balanced_accuracy"],
                    rows=int(y_eval.shape[0]), train_elapsed_s=last_eval - t_train)

    if not trainer.incremental:
        X_all, y_all = train.batch(0, train.n_rows)
        trainer.fit_all(X_all, y_all)
        del X_all
        samples = batches = train.n_rows
        if progress_every is not None:
            events.emit(PROGRESS, samples=samples, batches=1, epoch=1, epochs=1, total=total,
                        train_elapsed_s=time.monotonic() - t_train)
        if live_eval:
            evaluate_now()
    elif cfg.workers > 1:
        def on_epoch(epoch: int, rows: int, seconds: float) -> None:
            nonlocal samples, batches
            samples += rows
            batches += sum(-(-s.rows // cfg.batch_size) for s in train.shards)
            epoch_rates.append(rows / seconds if seconds > 0 else None)
            if progress_every is not None:
                events.emit(PROGRESS, samples=samples, batches=batches, epoch=epoch + 1, epochs=cfg.epochs,
                            total=total, train_elapsed_s=time.monotonic() - t_train,
                            epoch_samples_per_s=epoch_rates[-1])

        try:
            parallel_info = parallel.train(cfg, trainer, train, events, evaluate_now if live_eval else lambda: None,
                                           on_epoch, os.environ.get("SVMCORE_FAULT"))
        finally:
            train.discard()
    else:
        fit = trainer.model.partial_fit
        faults = getattr(phases, "faults", None)
        for epoch in range(cfg.epochs):
            if faults is not None:  # test-only fault injection: 'sleep:60@epoch2' waits before pass 2
                faults.fire(f"epoch{epoch + 1}")
            t_epoch, samples_epoch = time.monotonic(), samples
            for Xb, yb in train.batches(cfg.batch_size, epoch):
                if pre_transformed:
                    fit(Xb, yb, classes=trainer.classes)
                else:
                    trainer.partial_fit(Xb, yb)
                samples += yb.shape[0]
                batches += 1
                del Xb, yb
                if cfg.gc_every and batches % cfg.gc_every == 0:
                    gc.collect()
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
                            total=total, train_elapsed_s=time.monotonic() - t_train,
                            epoch_samples_per_s=epoch_rates[-1])
            if live_eval:
                evaluate_now()
    train_s = time.monotonic() - t_train
    upcast = UPCASTS.summary()
    for src in read_sources:  # trained on the file as scanned, to the end (no line torn by a writer since)
        src.check_unchanged()
    spill = getattr(train, "spill", None)
    spill_info = None
    if spill is not None:
        spill_info = {"rows": spill.rows, "read_back": spill.complete, "failed": spill.failed}
        spill.discard()

    threads_info = [{"api": d.get("internal_api"), "num_threads": d.get("num_threads")}
                    for d in threadpool_info()]
    with open("/proc/self/status") as f:
        os_threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))

    phases.start("evaluate")
    final = scores(_confusion(trainer, X_test, y_test, dense, score_classes), score_classes)
    events.emit(EVAL, samples=samples, accuracy=final["accuracy"], balanced_accuracy=final["balanced_accuracy"],
                rows=int(y_test.shape[0]), final=True, train_elapsed_s=train_s)
    from svmcore.worker.model_export import save_model  # issue 21: export the model for serving
    exported = save_model(job.get("run_dir"), trainer.model, cfg, trainer.classes, X_test)  # issue 21
    return {
        **final, **exported, "samples": samples, "shuffle": cfg.shuffle, "batches": batches, "train_s": train_s,
        "samples_per_s": samples / train_s if train_s > 0 else None, "monitor": cfg.monitor,
        "recomputed_layers": getattr(trainer.model, "recomputed_layers", None),
        "epoch_samples_per_s": epoch_rates,
        "spill": spill_info,
        "train_rows": train.n_rows, "test_rows": int(y_test.shape[0]), "features": n_features,
        "regularisation": trainer.regularisation, "train_data_bytes": train_bytes, "model_bytes": trainer.model_bytes(),
        **trainer.sparse_model(), "upcast": upcast,
        "threads": {"requested": cfg.threads, "blas": threads_info, "os_threads": os_threads,
                    "reader_thread": isinstance(train, StreamData) and train.reader_thread},
        "data": info.to_dict(), "pid": os.getpid(),
        **({"parallel": parallel_info} if parallel_info else {}),
    }


def _cached_copy(text_path: str, cfg: RunConfig, source: Source, rows: int) -> Source:
    """The stream source over a cached text copy of ``source``, pinned as it is now, and
    named after the dataset in messages."""
    copy = Source(validate(cfg.to_dict(), dataset=text_path))
    copy.pin(rows=rows)
    copy.name, copy.during = source.name, source.during
    return copy


def _score_classes(classes: list, y_test: np.ndarray) -> np.ndarray:
    """The training classes and any label only the test set has (never predicted, but
    its rows count as errors)."""
    return np.unique(np.concatenate([np.asarray(classes), np.asarray(y_test)]))


def _confusion(trainer: Trainer, X, y, dense: bool, classes: np.ndarray) -> np.ndarray:
    """The confusion matrix over ``classes``, scored in slices so that a dense or
    transformed test set never exists whole."""
    k = classes.shape[0]
    matrix = np.zeros((k, k), np.int64)
    for s in range(0, y.shape[0], SCORE_SLICE_ROWS):
        Xs = X[s:s + SCORE_SLICE_ROWS]
        if dense and sp.issparse(Xs):
            Xs = Xs.toarray()
        pred = trainer.model.predict(trainer.transform(Xs))
        matrix += confusion(np.searchsorted(classes, y[s:s + SCORE_SLICE_ROWS]), np.searchsorted(classes, pred), k)
    return matrix


class _LazyLabels:
    """Class labels over a memory-mapped array of class indices, decoded per batch."""

    def __init__(self, yi, classes):
        self.yi = yi
        self.classes = np.asarray(classes)
        self.shape = yi.shape

    def __getitem__(self, s):
        return self.classes[np.asarray(self.yi[s])]
