"""The one training loop: passes over a feed's batches with progress events, live
evaluation on a held-out sample, gc and test-only fault injection, the scores of test rows
read a slice at a time, and what a run reports at its end (``RunSummary``). The run uses it,
and so does each shard of a data-parallel run on its Dask worker. numpy and the standard
library only, so the lean floor stays low."""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from svmcore.data.sources import DataInfo, Source, check_trainable, scan
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.events import EVAL, PASS_END, PROGRESS
from svmcore.spec.monitor import EVAL_EVERY_S, PROGRESS_EVERY_S
from svmcore.spec.result import RunSummary, SpillReport
from svmcore.spec.scores import confusion
from svmcore.data.proc_status import status_kib

Score = Callable[[object, np.ndarray], dict]  # (rows, class codes) -> spec.scores.scores
SCORE_SLICE_ROWS = 2048  # test rows scored at once, so a dense or transformed test set never exists whole


@dataclass
class Scanned:
    """A run's data as scanned: the training source and the test file's, pinned."""

    source: Source
    info: DataInfo
    n_features: int  # the wider of the two
    test_source: Source | None = None
    test_info: DataInfo | None = None

    def check_unchanged(self) -> None:
        """Trained on the files as scanned, to the end (no line torn by a writer since)."""
        for src in filter(None, (self.source, self.test_source)):
            src.check_unchanged()


def scan_sources(cfg: RunConfig, cache_dir: str, given: dict | None = None) -> Scanned:
    """Scan (or read the cached scan of) the data and the test file, or take the data's scan the
    parent ``given`` (a ``DataInfo`` dict); refuse data that cannot train. Either way the files
    are pinned: every later read checks that they are unchanged."""
    source = Source(cfg)
    source.during = "training"
    if given is not None:
        info = DataInfo(**given)
        source.pin(rows=info.rows)
    else:
        info = scan(source, cache_dir)
    out = Scanned(source, info, info.features)
    if cfg.test_file:
        out.test_source = Source(validate(cfg.to_dict(), dataset=cfg.test_file, test_file=None))
        out.test_source.during = "training"
        out.test_info = scan(out.test_source, cache_dir)
        out.n_features = max(out.n_features, out.test_info.features)
    check_trainable(info, cfg)
    return out


@dataclass
class Progress:
    """What training has done so far, and how it tells the events."""

    events: object
    epochs: int
    total: int  # samples of all passes
    monitor: str
    samples: int = 0
    batches: int = 0
    epoch_rates: list = field(default_factory=list)  # samples/s of each pass
    t_train: float = field(default_factory=time.monotonic)
    last_progress: float = 0.0
    last_eval: float = 0.0
    evaluate: Callable[[], None] | None = None  # a live evaluation now, or None when not monitored
    retained: dict = field(default_factory=dict)  # the memory held at the end of the last pass (``pass_end``)

    @property
    def every_s(self) -> float | None:
        return PROGRESS_EVERY_S.get(self.monitor)  # None: no progress events while training

    def emit(self, epoch: int, **extra) -> None:
        self.events.emit(PROGRESS, samples=self.samples, batches=self.batches, epoch=epoch + 1, epochs=self.epochs,
                         total=self.total, train_elapsed_s=time.monotonic() - self.t_train, **extra)

    def pass_done(self, epoch: int, rows: int, seconds: float, **workers) -> None:
        """A pass of ``rows`` rows ended after ``seconds``: its rate, the memory it retained
        (``pass_end``), a progress event, a live evaluation."""
        self.epoch_rates.append(rows / seconds if seconds > 0 else None)
        self.pass_end(epoch, **workers)
        if self.every_s is not None:
            self.emit(epoch, epoch_samples_per_s=self.epoch_rates[-1])
        if self.evaluate is not None:
            self.evaluate()

    def pass_end(self, epoch: int, **workers) -> None:
        """The memory this process retained at the end of pass ``epoch`` (0-based), read once
        from /proc/self/status before the live evaluation allocates (a pass_end event when
        there are events; ``workers``: a data-parallel run's Dask workers' readings)."""
        rss_kib, anon_kib = status_kib(b"VmRSS:", b"RssAnon:")
        self.retained = {"rss_bytes": rss_kib * 1024, "anon_bytes": anon_kib * 1024}
        if self.events is not None:
            self.events.emit(PASS_END, epoch=epoch + 1, **self.retained, **workers)

    @property
    def train_s(self) -> float:
        return time.monotonic() - self.t_train


def live_evaluator(progress: Progress, score: Score, X_eval, y_eval) -> Callable[[], None]:
    """A function that scores the live sample and emits an eval event."""
    def evaluate_now() -> None:
        sc = score(X_eval, y_eval)
        progress.last_eval = time.monotonic()
        progress.events.emit(EVAL, samples=progress.samples, accuracy=sc["accuracy"],
                             balanced_accuracy=sc["balanced_accuracy"], rows=int(y_eval.shape[0]),
                             train_elapsed_s=progress.last_eval - progress.t_train)
    return evaluate_now


def confusions(predicts: list[Callable], X, codes: np.ndarray, k: int) -> tuple[list[np.ndarray], int]:
    """Each ``predict``'s confusion matrix over ``k`` classes (``predict(rows)``: the rows'
    predicted class codes), scored a slice at a time (``X.slice_rows`` rows, or
    ``SCORE_SLICE_ROWS``: rows on disk are read a slice at a time); and on how many rows the
    first two agree."""
    matrices = [np.zeros((k, k), np.int64) for _ in predicts]
    agree = 0
    step = getattr(X, "slice_rows", SCORE_SLICE_ROWS)
    for s in range(0, codes.shape[0], step):
        Xs = X.slice(s, min(codes.shape[0], s + step))
        preds = [predict(Xs) for predict in predicts]
        for matrix, pred in zip(matrices, preds):
            matrix += confusion(codes[s:s + step], pred, k)
        agree += int((preds[0] == preds[1]).sum()) if len(preds) > 1 else 0
    return matrices, agree


def train_passes(progress: Progress, batches_of: Callable[[int], Iterator], fit: Callable[[object, np.ndarray], None],
                 gc_every: int, faults=None) -> None:
    """``progress.epochs`` passes, each over ``batches_of(epoch)``, each batch (``rows.Rows``)
    given to ``fit``."""
    every = progress.every_s
    for epoch in range(progress.epochs):
        if faults is not None:  # test-only: 'sleep:60@epoch2' waits before pass 2, 'hog:8@epochs' before each
            faults.fire(f"epoch{epoch + 1}")
            faults.fire("epochs")
        t_epoch, samples_epoch = time.monotonic(), progress.samples
        for Xb, codes in batches_of(epoch):
            fit(Xb, codes)
            progress.samples += codes.shape[0]
            progress.batches += 1
            del Xb, codes
            if gc_every and progress.batches % gc_every == 0:
                gc.collect()
            if every is None:
                continue
            now = time.monotonic()
            if now - progress.last_progress >= every:
                progress.emit(epoch)
                progress.last_progress = now
            if progress.evaluate is not None and now - progress.last_eval >= EVAL_EVERY_S:
                progress.evaluate()
        progress.pass_done(epoch, progress.samples - samples_epoch, time.monotonic() - t_epoch)


def spill_report(spill) -> SpillReport | None:
    """What the spill did (and its files deleted), or None without one."""
    if spill is None:
        return None
    info = SpillReport(spill.rows, spill.complete, spill.failed, spill.filled_first and spill.complete)
    spill.discard()
    return info


def final_result(progress: Progress, train_s: float, final: dict, test_rows: int, events, **fields) -> RunSummary:
    """The final eval event, and the run's result from the loop's counts, the final scores and ``fields``."""
    events.emit(EVAL, samples=progress.samples, accuracy=final["accuracy"],
                balanced_accuracy=final["balanced_accuracy"], rows=test_rows, final=True, train_elapsed_s=train_s)
    return RunSummary(**final, samples_seen=progress.samples, batches=progress.batches, train_s=train_s,
                      samples_per_s=progress.samples / train_s if train_s > 0 else None,
                      epoch_samples_per_s=progress.epoch_rates, monitor=progress.monitor, test_rows=test_rows, **fields)
