"""What the worker does between its imports and its outcome: prepare, load,
transform, train, evaluate. Runs inside the child process only."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

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
from svmcore.data.sources import CHUNK_ROWS, Source, n_test_rows
from svmcore.data.spill import Spill
from svmcore.data.upcast import METER as UPCASTS
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.events import DATA, LOADED, TRANSFORMED
from svmcore.spec.monitor import live_evaluation
from svmcore.spec.scores import confusion, scores
from svmcore.worker import loop
from svmcore.worker.model_export import save_model
from svmcore.worker.models import KERNEL_SAMPLE_ROWS, Trainer
from svmcore.spec.result import RunSummary
from svmcore.spec.choices import Model, Monitor, Parser, Solver
from svmcore.spec.registry import import_all, imports

log = logging.getLogger(__name__)

SCORE_SLICE_ROWS = 2048  # rows scored at once, so a dense or transformed test set never exists whole


def import_libraries(model: str, parser: str = "sklearn", solver: str = "sklearn", distill: bool = False) -> None:
    """Import what training needs (its registry entries': ``registry.imports``), so that the
    imports phase is the floor."""
    import_all(imports(Model(model), Parser(parser), Solver(solver), distill))


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


@dataclass
class _Prepared:
    """What the prepare phase found and built: the scanned sources and the data's copies."""

    scanned: loop.Scanned
    stream_src: Source | None = None
    held_out: object = None
    bin_data: object = None

    @property
    def source(self) -> Source:
        return self.scanned.source

    @property
    def info(self):
        return self.scanned.info

    @property
    def n_features(self) -> int:
        return self.scanned.n_features

    @property
    def classes(self) -> list:
        return list(self.scanned.info.classes)


def _prepare(cfg: RunConfig, cache_dir: str, events) -> _Prepared:
    prep = _Prepared(loop.scan_sources(cfg, cache_dir))
    source, info = prep.source, prep.info
    text_path = None
    before = cache.cache_entries(cache_dir)  # what this run builds here, later runs of the data reuse
    if cfg.mode_entry.parses_text and cfg.workers == 1:
        text_path = cache.text_copy(source, cache_dir, prep.classes, info.rows)
        ours = text_path != source.path  # a copy this product wrote
        prep.stream_src = _cached_copy(text_path, cfg, source, info.rows) if ours else source
        if not cfg.test_file:
            prep.held_out = cache.held_out_copy(
                prep.stream_src, cache_dir, prep.n_features, info.rows,
                reader=(lambda: _copy_reader(text_path, cfg, source, info.rows)) if ours else None)
    elif cfg.mode_entry.maps_copy:
        prep.bin_data = cache.binary_copy(source, cache_dir, prep.classes, prep.n_features, cfg.precision,
                                          "dense" if cfg.dense else "csr", info.rows,
                                          hold_out=not cfg.test_file, nnz=info.nnz, nnz_exact=info.exact,
                                          mixed=cfg.shuffle)
    events.emit(DATA, info=info.to_dict(), n_features=prep.n_features, text_path=text_path,
                binary_path=prep.bin_data.folder if prep.bin_data else None,
                prepared_once=sorted(cache.cache_entries(cache_dir) - before))
    return prep


def _load_train(cfg: RunConfig, job: dict, prep: _Prepared, test_parts: list):
    """The training rows as the mode holds them, and the bytes they take in memory."""
    source, info, n_features, dense = prep.source, prep.info, prep.n_features, cfg.dense
    shuffle = Shuffle(cfg.seed, cfg.shuffle_buffer) if cfg.shuffle else None
    if cfg.workers > 1:  # data-parallel: one pass writes the shards (and collects the held-out rows)
        from svmcore.worker import parallel
        chunks = source.iter_chunks(CHUNK_ROWS, n_features)
        return parallel.Shards(parallel.write_shards(
            chunks if cfg.test_file else split_both(chunks, test_parts, info.rows), cfg.workers,
            os.path.join(job.get("run_dir") or job["cache_dir"], "shards"), cfg.precision, prep.classes, n_features,
            # on disk: each value and its int32 column id, and each row's int32 length and class code
            need_bytes=info.nnz * (np.dtype(STORE_DTYPES[cfg.precision]).itemsize + 4) + info.rows * 8)), 0
    if cfg.mode_entry.holds_rows:
        chunks = source.iter_chunks(CHUNK_ROWS, n_features)
        X_train, y_train = _gather(chunks if cfg.test_file else split_both(chunks, test_parts, info.rows),
                                   cfg.precision, dense, n_features)
        return ArrayData(X_train, y_train, n_features, cfg.precision, dense, shuffle), _nbytes(X_train)
    if cfg.mode_entry.maps_copy:
        Xp, yi = prep.bin_data.part("train")
        return ArrayData(Xp, _LazyLabels(yi, prep.classes), n_features, cfg.precision, dense, shuffle), 0
    n_train = info.rows - n_test_rows(info.rows) if not cfg.test_file else info.rows
    spill = None
    if cfg.epochs > 1 and cfg.model_entry.incremental and job.get("run_dir"):
        spill = Spill(os.path.join(job["run_dir"], "spill"), STORE_DTYPES[cfg.precision], prep.classes, n_features)
    return StreamData(prep.stream_src, n_train, n_features, cfg.precision, dense, cfg.threads > 1,
                      hold_out=not cfg.test_file, spill=spill, shuffle=shuffle, total_rows=info.rows), 0


def _load_test(cfg: RunConfig, prep: _Prepared, test_parts: list):
    """The held-out (or test file's) rows, in compute form."""
    n_features, classes = prep.n_features, prep.classes
    if cfg.test_file:
        X_test, y_test = _gather(prep.scanned.test_source.iter_chunks(CHUNK_ROWS, n_features), cfg.precision, False,
                                 n_features)
    elif cfg.mode_entry.maps_copy:
        Xp, yi = prep.bin_data.part("test")
        X_test = tuple(np.array(a) for a in Xp) if isinstance(Xp, tuple) else np.array(Xp)
        y_test = np.asarray(classes)[np.asarray(yi)]
    elif cfg.mode_entry.holds_rows or cfg.workers > 1:
        X_test, y_test = _gather(iter(test_parts), cfg.precision, False, n_features)
        test_parts.clear()
    else:
        X_test, y_test = _gather(iter([prep.held_out.load()]), cfg.precision, False, n_features)
    if y_test.shape[0] == 0:
        from svmcore.spec.errors import DataError
        raise DataError("no rows are left for testing; give a test file or more rows")
    return _as_compute(X_test, cfg.precision, False, n_features), y_test


def _fit_transform(cfg: RunConfig, trainer: Trainer, train, X_test, events):
    """kernel-approx: the transform fitted on a sample of training rows; in memory mode all
    rows transformed up front (then the batches are fitted as they are). Returns (train, transformed)."""
    sample_X, _ = train.batch(0, min(KERNEL_SAMPLE_ROWS, train.n_rows)) if isinstance(train, ArrayData) \
        else train.sample(min(KERNEL_SAMPLE_ROWS, train.n_rows))
    trainer.fit_transform_on(sample_X)
    del sample_X
    pre_transformed = False
    # the in-memory pipeline transforms all rows up front (not when a student needs them as they are)
    if isinstance(train, ArrayData) and cfg.mode_entry.holds_rows and not cfg.distill:
        X_all = train.X if not isinstance(train.X, tuple) else train.batch(0, train.n_rows)[0]
        train = ArrayData(trainer.transform(X_all), train.y, trainer.cfg.n_components,
                          "float64" if cfg.precision == "float64" else "float32", False, train.shuffle)
        del X_all
        pre_transformed = True
    events.emit(TRANSFORMED, components=int(trainer.transform(X_test[:1]).shape[1]))
    return train, pre_transformed


def _train(cfg: RunConfig, trainer: Trainer, train, progress: loop.Progress, phases, pre_transformed: bool):
    """Every pass of training (or the one fit of a model that needs all rows); a
    data-parallel run's report, or None."""
    if not trainer.incremental:
        X_all, y_all = train.batch(0, train.n_rows)
        trainer.fit_all(X_all, y_all)
        del X_all
        progress.samples = progress.batches = train.n_rows
        if progress.every_s is not None:
            progress.emit(0)
        if progress.evaluate is not None:
            progress.evaluate()
        return None
    if cfg.workers > 1:
        from svmcore.worker import parallel

        def on_epoch(epoch: int, rows: int, seconds: float) -> None:
            progress.samples += rows
            progress.batches += sum(-(-s.rows // cfg.batch_size) for s in train.shards)
            progress.epoch_rates.append(rows / seconds if seconds > 0 else None)
            if progress.every_s is not None:
                progress.emit(epoch, epoch_samples_per_s=progress.epoch_rates[-1])

        try:
            return parallel.train(cfg, trainer, train, progress.events, progress.evaluate or (lambda: None),
                                  on_epoch, os.environ.get("SVMCORE_FAULT"))
        finally:
            train.discard()
    if pre_transformed:
        fit, classes = trainer.model.partial_fit, trainer.classes
        step = lambda Xb, yb: fit(Xb, yb, classes=classes)  # noqa: E731
    else:
        step = trainer.partial_fit
    loop.train_passes(progress, lambda epoch: train.batches(cfg.batch_size, epoch), step, cfg.gc_every,
                 getattr(phases, "faults", None))
    return None


def run(job: dict, events, phases) -> RunSummary:
    # checked by the parent already; here only re-read (never probe cgroups from inside the run's own)
    cfg: RunConfig = validate(job["config"])
    from threadpoolctl import threadpool_info, threadpool_limits

    limiter = threadpool_limits(limits=cfg.threads)  # noqa: F841 (held for the whole run)
    np.random.seed(cfg.seed % 2**32)
    dense = cfg.dense

    phases.start("prepare")
    prep = _prepare(cfg, job["cache_dir"], events)

    phases.start("load")
    test_parts: list = []  # memory mode and data-parallel runs collect the held-out rows in their one pass
    train, train_bytes = _load_train(cfg, job, prep, test_parts)
    X_test, y_test = _load_test(cfg, prep, test_parts)
    events.emit(LOADED, train_rows=train.n_rows, test_rows=int(y_test.shape[0]),
                train_data_bytes=train_bytes, test_data_bytes=_nbytes(X_test))

    trainer = Trainer(cfg, prep.classes, prep.n_features, train.n_rows, prep.info.class_counts)
    score_classes = _score_classes(prep.classes, y_test)

    def score(X, y) -> dict:
        return scores(_confusions([trainer], X, y, dense, score_classes)[0][0], score_classes)

    X_eval = y_eval = None
    if live_evaluation(cfg.monitor):  # the held-out sample exists only to be scored live
        eval_rows = loop.eval_sample_rows(cfg.seed, y_test.shape[0])
        X_eval, y_eval = X_test[eval_rows], y_test[eval_rows]
    pre_transformed = False
    if trainer.needs_transform_fit:
        phases.start("transform")
        train, pre_transformed = _fit_transform(cfg, trainer, train, X_test, events)

    phases.start("train")
    UPCASTS.reset()  # the train phase's batches only (the load and a transform sample are not batches)
    progress = loop.Progress(events, cfg.epochs if trainer.incremental else 1,
                             train.n_rows * (1 if not trainer.incremental else cfg.epochs), cfg.monitor)
    if y_eval is not None:
        progress.evaluate = loop.live_evaluator(progress, score, X_eval, y_eval)
    parallel_info = _train(cfg, trainer, train, progress, phases, pre_transformed)
    train_s = progress.train_s
    upcast = UPCASTS.summary()
    student = None
    if cfg.distill:
        phases.start("distill")
        student = _distill(cfg, trainer, train, prep, events, getattr(phases, "faults", None))
    prep.scanned.check_unchanged()
    spill = loop.spill_report(getattr(train, "spill", None))
    threads_info = [{"api": d.get("internal_api"), "num_threads": d.get("num_threads")}
                    for d in threadpool_info()]

    phases.start("evaluate")
    served = student or trainer  # a distilled run's model is its student: scored, reported and exported
    final, distillation = (_distilled_scores(trainer, student, X_test, y_test, dense, score_classes) if student
                           else (score(X_test, y_test), None))
    return loop.final_result(
        progress, train_s, final, int(y_test.shape[0]), events,
        shuffle=cfg.shuffle, recomputed_layers=getattr(trainer.model, "recomputed_layers", None), spill=spill,
        train_rows=train.n_rows, features=prep.n_features, regularisation=served.regularisation,
        train_data_bytes=train_bytes, model_bytes=trainer.model_bytes() + (student.model_bytes() if student else 0),
        **served.sparse_model(), upcast=upcast, distillation=distillation,
        threads={"requested": cfg.threads, "blas": threads_info, "os_threads": loop.os_threads(),
                 "reader_thread": isinstance(train, StreamData) and train.reader_thread},
        data=prep.info.to_dict(), parallel=parallel_info,
        **save_model(job.get("run_dir"), served.model, cfg, served.classes, X_test))


def _distill(cfg: RunConfig, teacher: Trainer, train, prep: _Prepared, events, faults) -> Trainer:
    """The distill stage: a linear-svm student (the run's solver, epochs and batches, its own
    alpha for the rows) trained on the teacher's predictions for each training batch. Its
    passes draw their own shuffles (epochs after the teacher's) and emit no progress events:
    the live charts stay the teacher's."""
    student = Trainer(validate(cfg.to_dict(), model="linear-svm", distill=False), prep.classes, prep.n_features,
                      train.n_rows, prep.info.class_counts)
    progress = loop.Progress(events, cfg.epochs, train.n_rows * cfg.epochs, Monitor.OFF)

    def step(Xb, yb) -> None:
        student.partial_fit(Xb, teacher.model.predict(teacher.transform(Xb)))

    loop.train_passes(progress, lambda epoch: train.batches(cfg.batch_size, cfg.epochs + epoch), step, cfg.gc_every,
                      faults)
    return student


def _distilled_scores(teacher: Trainer, student: Trainer, X_test, y_test, dense: bool,
                      classes: np.ndarray) -> tuple[dict, dict]:
    """The student's scores on the test rows (the run's), and the distillation: the teacher's scores
    beside them, how often the two agree, their sizes. One pass: each model predicts each row once."""
    (mt, ms), agree = _confusions([teacher, student], X_test, y_test, dense, classes)
    t, s = scores(mt, classes), scores(ms, classes)
    return s, {"teacher": {"model": teacher.cfg.model, "accuracy": t["accuracy"],
                           "balanced_accuracy": t["balanced_accuracy"], "model_bytes": teacher.model_bytes()},
               "student": {"model": "linear-svm", "solver": student.cfg.solver, "accuracy": s["accuracy"],
                           "balanced_accuracy": s["balanced_accuracy"], "model_bytes": student.model_bytes()},
               "agreement": agree / y_test.shape[0] if y_test.shape[0] else None,
               "labels": "the teacher's predicted classes (hard targets)"}


def _cached_copy(text_path: str, cfg: RunConfig, source: Source, rows: int) -> Source:
    """The stream source over a cached text copy of ``source``, pinned as it is now, and
    named after the dataset in messages."""
    copy = Source(validate(cfg.to_dict(), dataset=text_path))
    copy.pin(rows=rows)
    copy.name, copy.during = source.name, source.during
    return copy


def _copy_reader(text_path: str, cfg: RunConfig, source: Source, rows: int) -> Source:
    """The source that reads the held-out rows out of a text copy this product wrote. The copy
    is valid svmlight by construction, so the C parser reads it, whatever the run's parser:
    its rows are scikit-learn's to the bit, in a tenth of the time (a 50,000-row copy: 3 s
    with scikit-learn's parser, the full read a first stream run spends before training)."""
    if cfg.parser != Parser.NATIVE:
        try:
            from svmcore.data import native
            native.lib()
        except Exception as e:  # no gcc: the run's own parser reads it, slower, the same rows
            log.warning("native parser unavailable (%s); the held-out rows are read with the %s parser", e,
                        cfg.parser)
        else:
            cfg = validate(cfg.to_dict(), parser=Parser.NATIVE.value)
    return _cached_copy(text_path, cfg, source, rows)


def _score_classes(classes: list, y_test: np.ndarray) -> np.ndarray:
    """The training classes and any label only the test set has (never predicted, but
    its rows count as errors)."""
    return np.unique(np.concatenate([np.asarray(classes), np.asarray(y_test)]))


def _confusions(models: list[Trainer], X, y, dense: bool, classes: np.ndarray) -> tuple[list[np.ndarray], int]:
    """Each model's confusion matrix over ``classes``, scored in slices so that a dense or
    transformed test set never exists whole; and on how many rows the first two models agree."""
    k = classes.shape[0]
    matrices = [np.zeros((k, k), np.int64) for _ in models]
    agree = 0
    for s in range(0, y.shape[0], SCORE_SLICE_ROWS):
        Xs = X[s:s + SCORE_SLICE_ROWS]
        if dense and sp.issparse(Xs):
            Xs = Xs.toarray()
        truth = np.searchsorted(classes, y[s:s + SCORE_SLICE_ROWS])
        preds = [m.model.predict(m.transform(Xs)) for m in models]
        for matrix, pred in zip(matrices, preds):
            matrix += confusion(truth, np.searchsorted(classes, pred), k)
        agree += int((preds[0] == preds[1]).sum()) if len(preds) > 1 else 0
    return matrices, agree


class _LazyLabels:
    """Class labels over a memory-mapped array of class indices, decoded per batch."""

    def __init__(self, yi, classes):
        self.yi = yi
        self.classes = np.asarray(classes)
        self.shape = yi.shape

    def __getitem__(self, s):
        return self.classes[np.asarray(self.yi[s])]
