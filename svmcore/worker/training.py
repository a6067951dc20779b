"""The one training run of the worker: imports, prepare, load, transform (when the model fits
one), train, distill (with ``distill``), evaluate, and the model's export at its end. Runs
inside the child process only.

What differs between runs is chosen from the config, here once: the feed that reads the
training rows (``data.feeds``: in memory, memory-mapped, streamed from the text, data-parallel
shards), the model and solver (``models.Trainer``), and the libraries the imports phase loads:
a run whose feed and solver need only numpy and the native library (``RunConfig.lean``) loads
nothing else, with the process settings of ``floor``. The test rows are the held-out rows left
on disk (or a test file's, or the memory-mapped copy's, in memory), scored a slice at a time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from svmcore.data import copies
from svmcore.data.feeds.held_out import OnDisk, drop_sample, held_out, sample_on_disk
from svmcore.data.feeds.memory import InMemory
from svmcore.data.feeds.source_rows import SourceRows
from svmcore.data.feeds.stream import Streamed
from svmcore.data.rows import COMPUTE_DTYPES, STORE_DTYPES, Dense, class_codes, concat, native
from svmcore.data.proc_status import status_kib
from svmcore.data.shuffle_order import Shuffle, generator
from svmcore.data.sources import Source, n_test_rows, row_index
from svmcore.data.spill import Spill
from svmcore.data.upcast import METER as UPCASTS
from svmcore.spec.choices import Model, Monitor, Parser, Representation
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.errors import DataError
from svmcore.spec.events import DATA, LOADED, TRANSFORMED
from svmcore.spec.monitor import EVAL_SAMPLE_ROWS, live_evaluation
from svmcore.spec.scores import scores
from svmcore.worker import floor, loop
from svmcore.worker.model_export import save_model
from svmcore.worker.models import KERNEL_SAMPLE_ROWS, Trainer
from svmcore.spec.result import RunSummary
from svmcore.spec.registry import import_all, imports


@dataclass
class _Data:
    """What the prepare phase found and built: the scanned sources, the rows the run trains on
    (``rows``: the source's, or its text copy's), the held-out rows on disk, the binary copy."""

    scanned: loop.Scanned
    rows: SourceRows
    held: OnDisk | None = None
    bin_data: copies.BinaryData | None = None
    index: str | None = None  # the text's row index, for a shuffled first pass in pieces

    @property
    def info(self):
        return self.scanned.info

    @property
    def classes(self) -> np.ndarray:
        return np.asarray(self.scanned.info.classes)


def _prepare(cfg: RunConfig, job: dict, events) -> _Data:
    cache_dir = job["cache_dir"]
    scanned = loop.scan_sources(cfg, cache_dir, job.get("scan"))
    source, info, n_features = scanned.source, scanned.info, scanned.n_features
    classes = np.asarray(info.classes)
    before = copies.cache_entries(cache_dir)  # what this run builds here, later runs of the data reuse
    data = _Data(scanned, SourceRows(source, n_features, classes, info.rows))
    reader, text_path = source, None
    if cfg.mode_entry.parses_text and cfg.workers == 1:
        text_path = copies.text_copy(source, cache_dir, list(classes), info.rows)
        copy = source
        if text_path != source.path:  # a copy this product wrote: valid svmlight, read by the C parser if it can
            copy = _cached_copy(text_path, cfg, source, info.rows)
            reader = _cached_copy(text_path, validate(cfg.to_dict(), parser=Parser.NATIVE.value), source, info.rows) \
                if native() else copy
        data.rows = SourceRows(copy, n_features, classes, info.rows, cfg.batch_size)
        if cfg.shuffle:
            data.index = row_index(data.rows.source, cache_dir)
    if cfg.mode_entry.maps_copy:
        data.bin_data = copies.binary_copy(source, cache_dir, list(classes), n_features, cfg.precision,
                                           "dense" if cfg.representation == Representation.DENSE else "csr",
                                           info.rows, hold_out=not cfg.test_file, nnz=info.nnz, nnz_exact=info.exact,
                                           mixed=cfg.shuffle)
    elif not cfg.test_file:
        data.held = held_out(SourceRows(reader, n_features, classes, info.rows), cache_dir)
    events.emit(DATA, info=info.to_dict(), n_features=n_features, text_path=text_path,
                binary_path=data.bin_data.folder if data.bin_data else None,
                prepared_once=sorted(copies.cache_entries(cache_dir) - before))
    return data


def _cached_copy(text_path: str, cfg: RunConfig, source: Source, rows: int) -> Source:
    """The source over a cached text copy of ``source``, pinned as it is now, and named after
    the dataset in messages."""
    copy = Source(validate(cfg.to_dict(), dataset=text_path))
    copy.pin(rows=rows)
    copy.name, copy.during = source.name, source.during
    return copy


def _feed(cfg: RunConfig, job: dict, data: _Data):
    """The training rows as the mode holds them."""
    shuffle = Shuffle(cfg.seed, cfg.shuffle_buffer) if cfg.shuffle else None
    sdtype, cdtype = np.dtype(STORE_DTYPES[cfg.precision]), np.dtype(COMPUTE_DTYPES[cfg.precision])
    info, hold_out = data.info, not cfg.test_file
    n_train = info.rows - n_test_rows(info.rows) if hold_out else info.rows
    if cfg.workers > 1:  # data-parallel: one pass writes the shards
        from svmcore.worker import parallel
        return parallel.Shards(parallel.write_shards(
            data.rows.rows(False if hold_out else None), cfg.workers,
            os.path.join(job.get("run_dir") or job["cache_dir"], "shards"), sdtype,
            # on disk: each value and its int32 column id, and each row's int32 length and class code
            need_bytes=info.nnz * (sdtype.itemsize + 4) + info.rows * 8), cdtype)
    if cfg.mode_entry.maps_copy:
        return InMemory(*data.bin_data.part("train"), cdtype, shuffle)
    if cfg.mode_entry.holds_rows:
        dense = data.scanned.n_features if cfg.representation == Representation.DENSE else None
        feed = InMemory.load(data.rows.rows(False if hold_out else None), sdtype, cdtype, dense, shuffle)
        data.rows.source.check_unchanged()  # the whole file read as it was scanned
        if feed.n_rows != n_train:
            data.scanned.check_unchanged()
            source = data.rows.source
            raise source.changed(f"{n_train:,} training rows at the start, {feed.n_rows:,} read")
        return feed
    spill = None
    if cfg.epochs > 1 and cfg.model_entry.incremental and job.get("run_dir") and not cfg.accumulates.cache:
        spill = Spill(os.path.join(job["run_dir"], "spill"), sdtype)
    feed = Streamed(data.rows, n_train, sdtype, cdtype, shuffle, spill, cfg.threads > 1, hold_out, data.index)
    if spill is not None and shuffle is not None and info.labels_in_long_runs:
        feed.fill_spill(cfg.batch_size)
    return feed


class _Test:
    """The test rows: the held-out rows on disk (their codes and row index let go while
    training), or a test file's or a memory-mapped copy's in memory; class codes over
    ``all_classes`` (the training classes and any label only a test file has)."""

    def __init__(self, cfg: RunConfig, data: _Data):
        self.data = data
        test_info = data.scanned.test_info
        self.all_classes = np.unique(np.concatenate([data.classes, np.asarray(test_info.classes if test_info else [])]))
        if cfg.test_file:
            rows = SourceRows(data.scanned.test_source, data.scanned.n_features, self.all_classes, test_info.rows)
            blocks = list(rows.rows(None))
            self.X = concat([X.sparse() for X, _ in blocks])
            self._codes = np.concatenate([c for _, c in blocks])
        elif cfg.mode_entry.maps_copy:
            X, codes = data.bin_data.part("test")
            self.X, self._codes = X.copy(), np.searchsorted(self.all_classes, data.classes)[np.asarray(codes)]
        else:
            self.X, self._codes = data.held, None
        self.n_rows = self.X.n_rows
        if self.n_rows == 0:
            raise DataError("no rows are left for testing; give a test file or more rows")

    def codes(self) -> np.ndarray:
        if self._codes is not None:
            return self._codes
        codes, bad = class_codes(self.all_classes, self.X.labels())
        if bad.shape[0]:
            raise DataError("the cached held-out rows have a label the scan did not see; delete the cache folder",
                            self.X.folder)
        return codes

    def release(self) -> None:
        """Let the rows on disk's index go while training (0.46 MiB at the 20,000-row cap)."""
        if isinstance(self.X, OnDisk):
            self.X.release()


def run(job: dict, events, phases) -> RunSummary:
    # checked by the parent already; here only re-read (never probe cgroups from inside the run's own)
    cfg: RunConfig = validate(job["config"])
    # what the run's feed, solver and model need (their registry entries'), so that the imports
    # phase is the floor: the native library always (a lean run needs nothing else)
    native()
    blas = None
    if not cfg.lean:
        import_all(imports(cfg.model, cfg.parser, cfg.solver, cfg.distill))
        from threadpoolctl import threadpool_info, threadpool_limits

        limiter = threadpool_limits(limits=cfg.threads)  # noqa: F841 (held for the whole run)
        blas = threadpool_info

    phases.start("prepare")
    data = _prepare(cfg, job, events)
    floor.trim()  # a first run scans the file and extracts the held-out rows: give that memory back

    phases.start("load")
    feed = _feed(cfg, job, data)
    test = _Test(cfg, data)
    events.emit(LOADED, train_rows=feed.n_rows, test_rows=test.n_rows, train_data_bytes=feed.nbytes,
                test_data_bytes=test.X.nbytes)
    trainer = Trainer(cfg, data.classes, data.scanned.n_features, feed.n_rows, data.info.class_counts)
    k = test.all_classes.shape[0]
    sdtype, cdtype = STORE_DTYPES[cfg.precision], COMPUTE_DTYPES[cfg.precision]
    to_all = np.searchsorted(test.all_classes, data.classes)  # a model's class codes as codes of all_classes

    def predicts(*models: Trainer):
        # in the storage precision, then the compute one (not metered: these are not training batches)
        return [lambda X, m=m: to_all[m.predict_codes(X.stored(sdtype).stored(cdtype))] for m in models]

    def score(X, codes) -> dict:
        return scores(loop.confusions(predicts(trainer), X, codes, k)[0][0], test.all_classes)

    X_eval = c_eval = None
    if live_evaluation(cfg.monitor):  # the held-out sample exists only to be scored live
        eval_rows = np.sort(generator([cfg.seed, 7]).permutation(test.n_rows)[:EVAL_SAMPLE_ROWS])
        X_eval, c_eval = test.X.gather(eval_rows), test.codes()[eval_rows]
        if job.get("run_dir"):
            X_eval = sample_on_disk(os.path.join(job["run_dir"], "eval-sample"), X_eval, c_eval)
    test.release()
    transformed = False
    if trainer.needs_transform_fit:
        phases.start("transform")
        feed, transformed = _fit_transform(cfg, trainer, feed)
        events.emit(TRANSFORMED, components=int(trainer.transform(test.X.slice(0, 1)).shape[1]))

    phases.start("train")
    UPCASTS.reset()  # the train phase's batches only (the load and a transform sample are not batches)
    progress = loop.Progress(events, cfg.epochs if trainer.incremental else 1,
                             feed.n_rows * (cfg.epochs if trainer.incremental else 1), cfg.monitor)
    if c_eval is not None:
        progress.evaluate = loop.live_evaluator(progress, score, X_eval, c_eval)
    parallel_info, kept = _train(cfg, trainer, feed, progress, phases, transformed,
                                 os.path.join(job.get("run_dir") or job["cache_dir"], "spill"))
    train_s = progress.train_s
    upcast = UPCASTS.summary()
    drop_sample(X_eval)
    student = None
    if cfg.distill:
        phases.start("distill")
        student = _distill(cfg, trainer, feed, data, events, phases.faults)
    data.scanned.check_unchanged()
    spill = loop.spill_report(feed.spill)
    threads = {"requested": cfg.threads, "os_threads": status_kib(b"Threads:")[0], "reader_thread": feed.reader_thread,
               "blas": [{"api": d.get("internal_api"), "num_threads": d.get("num_threads")} for d in blas()]
               if blas else []}

    phases.start("evaluate")
    served = student or trainer  # a distilled run's model is its student: scored, reported and exported
    codes = test.codes()
    if student is None:
        final, distillation = score(test.X, codes), None
    else:
        final, distillation = _distilled_scores(trainer, student, loop.confusions(
            predicts(trainer, student), test.X, codes, k), test.all_classes, test.n_rows)
    return loop.final_result(
        progress, train_s, final, test.n_rows, events,
        shuffle=cfg.shuffle, recomputed_layers=getattr(trainer.model, "recomputed_layers", None), spill=spill,
        train_rows=feed.n_rows, features=data.scanned.n_features, regularisation=served.regularisation,
        train_data_bytes=feed.nbytes, model_bytes=trainer.model_bytes() + (student.model_bytes() if student else 0),
        **served.sparse_model(), upcast=upcast, distillation=distillation, threads=threads,
        data=data.info.to_dict(), parallel=parallel_info, lean=cfg.lean, kept=kept,
        **save_model(job.get("run_dir"), served.model, cfg, served.classes, test.X))


def _fit_transform(cfg: RunConfig, trainer: Trainer, feed):
    """kernel-approx: the transform fitted on the first training rows; in memory mode all rows
    transformed up front (not when a student needs them as they are). Returns (feed, whether
    its rows are transformed)."""
    trainer.fit_transform_on(feed.head(min(KERNEL_SAMPLE_ROWS, feed.n_rows)).X)
    if not cfg.mode_entry.holds_rows or cfg.distill or cfg.workers > 1:
        return feed, False
    rows = feed.head(feed.n_rows)
    Z = trainer.transform(rows.X)
    return InMemory(Dense(Z), rows.codes, Z.dtype, feed.shuffle), True


def _train(cfg: RunConfig, trainer: Trainer, feed, progress: loop.Progress, phases, transformed: bool,
           cache_folder: str):
    """Every pass of training (or the one fit of a model that needs all rows); a data-parallel
    run's report, or None, and what the accumulation knobs kept (``accumulation``), or None."""
    if not trainer.incremental:
        rows = feed.head(feed.n_rows)
        trainer.fit_all(rows.X, rows.codes)
        del rows
        progress.samples = progress.batches = feed.n_rows
        progress.pass_end(0)
        if progress.every_s is not None:
            progress.emit(0)
        if progress.evaluate is not None:
            progress.evaluate()
        return None, None
    if cfg.workers > 1:
        from svmcore.worker import parallel
        try:
            return parallel.train(cfg, trainer, feed, progress, phases.faults), None
        finally:
            feed.discard()
    fit = (lambda X, codes: trainer.fit(X, codes, transformed=True)) if transformed else trainer.fit
    batches_of = lambda epoch: feed.batches(cfg.batch_size, epoch)  # noqa: E731
    if not cfg.accumulates:
        loop.train_passes(progress, batches_of, fit, cfg.gc_every, phases.faults)
        return None, None
    from svmcore.worker import accumulation  # only when a knob asks: the floor does not grow
    batches_of, fit, release = accumulation.wrap(cfg, trainer, batches_of, fit, cache_folder)
    try:
        loop.train_passes(progress, batches_of, fit, cfg.gc_every, phases.faults)
    finally:
        kept = release()
    return None, kept


def _distill(cfg: RunConfig, teacher: Trainer, feed, data: _Data, events, faults) -> Trainer:
    """The distill stage: a linear-svm student (the run's solver, epochs and batches, its own
    alpha for the rows) trained on the teacher's predictions for each training batch. Its
    passes draw their own shuffles (epochs after the teacher's) and emit no progress events:
    the live charts stay the teacher's."""
    student = Trainer(validate(cfg.to_dict(), model=Model.LINEAR_SVM.value, distill=False), data.classes,
                      data.scanned.n_features, feed.n_rows, data.info.class_counts)
    progress = loop.Progress(events, cfg.epochs, feed.n_rows * cfg.epochs, Monitor.OFF)

    def step(X, codes) -> None:
        student.fit(X, teacher.predict_codes(X))

    loop.train_passes(progress, lambda epoch: feed.batches(cfg.batch_size, cfg.epochs + epoch), step, cfg.gc_every,
                      faults)
    return student


def _distilled_scores(teacher: Trainer, student: Trainer, scored, classes: np.ndarray, n_test: int
                      ) -> tuple[dict, dict]:
    """The student's scores on the test rows (the run's), and the distillation: the teacher's scores
    beside them, how often the two agree, their sizes (``scored``: both models' confusions in one pass)."""
    (mt, ms), agree = scored
    t, s = scores(mt, classes), scores(ms, classes)
    return s, {"teacher": {"model": teacher.cfg.model, "accuracy": t["accuracy"],
                           "balanced_accuracy": t["balanced_accuracy"], "model_bytes": teacher.model_bytes()},
               "student": {"model": Model.LINEAR_SVM.value, "solver": student.cfg.solver, "accuracy": s["accuracy"],
                           "balanced_accuracy": s["balanced_accuracy"], "model_bytes": student.model_bytes()},
               "agreement": agree / n_test if n_test else None,
               "labels": "the teacher's predicted classes (hard targets)"}
