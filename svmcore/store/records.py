"""Frozen records of the store: a run's status and its row."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from svmcore.spec.errors import SvmcoreError
from svmcore.spec.names import shown
from svmcore.spec.outcomes import rss_over_cap_note
from svmcore.spec.scores import quality_warnings

MAX_ROWID = 2**63 - 1


def in_rowid_range(row_id: int) -> bool:
    """SQLite integers are 64-bit: a larger id cannot name a row (and would raise OverflowError)."""
    return -MAX_ROWID - 1 <= row_id <= MAX_ROWID


class DamagedRunError(SvmcoreError):
    """A run whose row in the store is damaged, asked for what needs all of it."""


class RunStatus(str, Enum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    OOM = "oom"
    CANCELLED = "cancelled"
    LOST = "lost"
    UNREADABLE = "unreadable"  # the row's status is damaged (``RunRecord.damage`` says how)

    def is_finished(self) -> bool:
        return self not in (RunStatus.QUEUED, RunStatus.RUNNING)


# columns only shown, never computed from
_SHOWN_ONLY = ("name", "label", "colour", "host", "host_cpus", "host_memory_bytes", "created_at", "finished_at")


@dataclass(frozen=True)
class RunRecord:
    """A frozen view of one run's row, made by ``store.rows.run_record``: a column that
    could not be read is empty and named in ``damage``."""

    id: int
    created_at: float | None
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
    damage: tuple[str, ...] = ()  # each unreadable column and why ('summary: not JSON (...)')

    @property
    def shown_name(self) -> str:
        """The name as it may be displayed ('' for none): one stored before the names rule
        has its control and direction characters escaped (``spec.names.shown``)."""
        return shown(self.name)

    @property
    def damaged(self) -> bool:
        return bool(self.damage)

    def readable(self, purpose: str) -> "RunRecord":
        """This record, or DamagedRunError if a part of its row that diagnosing or serving
        reads could not be read (an empty summary would read as a peak of 0 MiB); a damaged
        name, label, colour, host or time does not stop them."""
        needed = [d for d in self.damage if d.split(":", 1)[0] not in _SHOWN_ONLY]
        if needed:
            raise DamagedRunError(f"run {self.id}'s record in the store is damaged ({'; '.join(needed)}), so it "
                                  f"cannot be {purpose}; 'svmcore runs check' lists the damage")
        return self

    @property
    def result(self) -> "RunSummary":
        """The stored summary, typed."""
        return RunSummary.from_dict(self.summary)

    @property
    def run_peak(self) -> "RunPeak":
        """The run's peak (``RunSummary.run_peak``)."""
        return self.result.run_peak


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
    cgroup_peak_mb: float | None = None  # cgroup-capped runs only: the group's exact peak charge, page cache included
    cgroup_held_peak_mb: float | None = None  # cgroup-capped runs only: the charge less its page cache, sampled
    rss_file_mb: float | None = None  # cgroup-capped runs only: file-backed pages of the highest RSS sample
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
    def cap_text(self) -> str:
        """'cgroup 150 MiB', 'rlimit 500 MiB' or 'none'."""
        return f"{self.cap} {self.cap_mb:,.0f} MiB" if self.cap and self.cap != "none" and self.cap_mb else "none"

    @property
    def cap_note(self) -> str | None:
        """What a cgroup cap limits and why the run's RSS differs (``spec.outcomes.rss_over_cap_note``)."""
        return rss_over_cap_note(self.peak_rss_mb, self.cap_mb, self.cap, self.cgroup_peak_mb,
                                 self.cgroup_held_peak_mb, self.rss_file_mb)

    @property
    def parallel_peaks(self) -> "ParallelPeaks | None":
        return parallel_peaks(self.extra.get("parallel"), self.peak_rss_mb)

    @property
    def run_peak(self) -> "RunPeak":
        """The run's peak, as every consumer judges and names it (``RunPeak``)."""
        par = self.parallel_peaks
        if par is not None and par.all_processes_mb is not None:
            return RunPeak(par.all_processes_mb, False, par)
        return RunPeak(self.peak_rss_mb, True, par)


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


@dataclass(frozen=True)
class RunPeak:
    """A run's peak: its worker's exact peak (the kernel's high-water mark); for a data-parallel
    run, all its processes together (their 50 Hz samples summed: sampled), its largest Dask
    worker and its coordinator named beside it (``parallel``). The machine holds every process
    of a run at once, so a budget, a fit or a comparison judges this figure."""

    mb: float | None
    exact: bool
    parallel: ParallelPeaks | None = None

    @property
    def label(self) -> str:
        """What the figure is: 'exact peak', or 'peak of all processes (sampled sum)'."""
        return "exact peak" if self.exact else "peak of all processes (sampled sum)"

    def text(self) -> str:
        """'252 MiB'; a data-parallel run: '620 MiB in all its processes (sampled sum; largest Dask
        worker (2) 230 MiB, exact; coordinator 161 MiB, exact)'."""
        mb = "–" if self.mb is None else f"{self.mb:,.0f} MiB"
        par = self.parallel
        if par is None:
            return mb
        if self.exact:  # its workers were never read: the coordinator is all that is known
            return f"{mb} (its coordinator's alone: its Dask workers' memory was not read)"
        worker = "–" if par.largest_worker_mb is None else f"{par.largest_worker_mb:,.0f} MiB"
        coordinator = "–" if par.coordinator_mb is None else f"{par.coordinator_mb:,.0f} MiB"
        return (f"{mb} in all its processes (sampled sum; largest Dask worker"
                f"{f' ({par.largest_worker})' if par.largest_worker else ''} {worker}, "
                f"{'exact' if par.largest_worker_exact else 'sampled'}; coordinator {coordinator}, exact)")


def parallel_peaks(par: dict | None, coordinator_mb: float | None) -> ParallelPeaks | None:
    """The headline peaks of a run's ``parallel`` summary (None for a single-process run)."""
    if not par:
        return None
    read = [w for w in par.get("per_worker") or () if w.get("peak_rss_mb") is not None]  # a failed run's may lack it
    largest = max(read, key=lambda w: w["peak_rss_mb"], default=None)
    return ParallelPeaks(par.get("total_peak_sampled_mb"), (largest or {}).get("worker"),
                         (largest or {}).get("peak_rss_mb"), bool((largest or {}).get("peak_exact")), coordinator_mb)
