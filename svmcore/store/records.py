"""Frozen records of the store: a run's status and its row."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from enum import Enum

from svmcore.spec.scores import quality_warnings

MAX_ROWID = 2**63 - 1


def in_rowid_range(row_id: int) -> bool:
    """SQLite integers are 64-bit: a larger id cannot name a row (and would raise OverflowError)."""
    return -MAX_ROWID - 1 <= row_id <= MAX_ROWID


class RunStatus(str, Enum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    OOM = "oom"
    CANCELLED = "cancelled"
    LOST = "lost"

    def is_finished(self) -> bool:
        return self not in (RunStatus.QUEUED, RunStatus.RUNNING)


@dataclass(frozen=True)
class RunRecord:
    """A frozen view of one run's row."""

    id: int
    created_at: float
    finished_at: float | None
    status: RunStatus
    config: dict
    summary: dict
    run_dir: str | None
    worker_pid: int | None
    worker_ctime: float | None
    runner_pid: int | None
    runner_ctime: float | None
    host: str | None
    sweep_id: int | None
    label: str | None
    host_cpus: int | None = None
    host_memory_bytes: int | None = None
    name: str | None = None
    colour: str | None = None
    parent_run_id: int | None = None  # fit: the attempt this run follows
    change: dict | None = None  # fit: the knobs this attempt changed and why

    @property
    def result(self) -> "RunSummary":
        """The stored summary, typed."""
        return RunSummary.from_dict(self.summary)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "RunRecord":
        d = dict(row)
        d["status"] = RunStatus(d["status"])
        d["config"] = json.loads(d["config"])
        d["summary"] = json.loads(d["summary"]) if d["summary"] else {}
        if d.get("change"):
            d["change"] = json.loads(d["change"])
        return cls(**d)


@dataclass(frozen=True)
class PhaseSpan:
    """One phase of a run: when it ran and the kernel's exact peak inside it (None if the
    worker was killed before it could be read)."""

    name: str
    start_s: float
    end_s: float | None
    wall_s: float | None
    peak_rss_mb: float | None
    cpu_s: float | None = None  # the worker's CPU time in it, every thread (runs before issue 40: None)


@dataclass(frozen=True)
class RunSummary:
    """What a finished (or ending) run measured, as every renderer reads it. The store
    keeps it as JSON (``RunRecord.summary``); ``from_dict`` reads that, tolerating keys
    that older runs lack and keeping the ones it does not name in ``extra``."""

    run_id: int | None = None
    status: str | None = None
    peak_rss_mb: float | None = None  # exact: the kernel's high-water mark
    peak_sampled_mb: float | None = None  # highest 50 Hz sample: can miss short spikes
    sample_hz: int | None = None
    n_samples: int = 0
    floor_mb: float | None = None  # peak of the imports phase: interpreter and libraries
    peak_phase: str | None = None  # the phase that owns the exact peak
    phases: tuple[PhaseSpan, ...] = ()
    wall_s: float | None = None
    train_s: float | None = None
    samples_per_s: float | None = None
    samples_seen: int | None = None
    epoch_samples_per_s: tuple = ()
    accuracy: float | None = None
    balanced_accuracy: float | None = None
    f1: float | None = None
    f1_of: str | None = None
    baseline_accuracy: float | None = None
    per_class_recall: dict = field(default_factory=dict)
    confusion: dict | None = None
    last_accuracy: float | None = None
    train_rows: int | None = None
    test_rows: int | None = None
    features: int | None = None
    shuffle: bool | None = None
    nonzero_weights: int | None = None  # a linear model's weights that are not zero (exact)
    weights: int | None = None  # all its weights
    sparse_model_bytes: int | None = None  # exact bytes of a sparse copy (indices, float64 values)
    upcast: dict | None = None  # float16 runs: the float32 copy of each batch, bytes exact, time measured
    regularisation: dict | None = None  # what regularised the model: name, value, source (set/auto/default), why
    warnings: list | None = None  # the scores' warnings, each {"kind", "text"}; None in runs stored before them
    cap: str | None = None
    cap_mb: float | None = None
    cgroup_peak_mb: float | None = None  # cgroup-capped runs only: the group's peak, page cache included
    phase: str | None = None  # where a run that did not complete ended
    error: dict | None = None
    exit: dict | None = None
    spill: dict | None = None
    prediction: dict | None = None
    data: dict | None = None
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict | None) -> "RunSummary":
        d = dict(d or {})
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        values = {k: d.pop(k) for k in list(d) if k in known}
        values["phases"] = tuple(PhaseSpan(p["name"], p.get("start_s", 0.0), p.get("end_s"), p.get("wall_s"),
                                           p.get("peak_rss_mb"), p.get("cpu_s")) for p in values.get("phases") or ())
        values["epoch_samples_per_s"] = tuple(values.get("epoch_samples_per_s") or ())
        values["per_class_recall"] = values.get("per_class_recall") or {}
        if values.get("n_samples") is None:
            values["n_samples"] = 0
        return cls(**values, extra=d)

    def score_warnings(self) -> list[dict]:
        """The scores' warnings (``spec.scores.quality_warnings``), worked out again for runs
        stored before summaries listed them."""
        if self.warnings is not None:
            return list(self.warnings)
        return quality_warnings(self.accuracy, self.balanced_accuracy, self.baseline_accuracy,
                                len(self.per_class_recall), self.shuffle)

    def phase_peak(self, name: str) -> float | None:
        return next((p.peak_rss_mb for p in self.phases if p.name == name), None)

    @property
    def error_message(self) -> str | None:
        return (self.error or {}).get("message")

    @property
    def parallel_peaks(self) -> "ParallelPeaks | None":
        return parallel_peaks(self.extra.get("parallel"), self.peak_rss_mb)


@dataclass(frozen=True)
class ParallelPeaks:
    """A data-parallel run's memory as every summary heads it: all its processes together
    (their 50 Hz samples summed at each instant: sampled), its largest Dask worker (exact on
    a LocalCluster started for the run, else sampled) and the coordinator (exact)."""

    all_processes_mb: float | None
    largest_worker: int | None  # 1-based
    largest_worker_mb: float | None
    largest_worker_exact: bool
    coordinator_mb: float | None

    def text(self) -> str:
        """'all processes 680 MiB (sampled sum) · largest Dask worker (2) 256 MiB (exact) · coordinator 168 MiB (exact)'"""
        def mib(v):
            return "–" if v is None else f"{v:,.0f} MiB"

        worker = f" ({self.largest_worker})" if self.largest_worker else ""
        return (f"all processes {mib(self.all_processes_mb)} (sampled sum) · largest Dask worker{worker} "
                f"{mib(self.largest_worker_mb)} ({'exact' if self.largest_worker_exact else 'sampled'}) · "
                f"coordinator {mib(self.coordinator_mb)} (exact)")


def parallel_peaks(par: dict | None, coordinator_mb: float | None) -> ParallelPeaks | None:
    """The headline peaks of a run's ``parallel`` summary (None for a single-process run)."""
    if not par:
        return None
    read = [w for w in par.get("per_worker") or () if w.get("peak_rss_mb") is not None]  # a failed run's may lack it
    largest = max(read, key=lambda w: w["peak_rss_mb"], default=None)
    return ParallelPeaks(par.get("total_peak_sampled_mb"), (largest or {}).get("worker"),
                         (largest or {}).get("peak_rss_mb"), bool((largest or {}).get("peak_exact")), coordinator_mb)
