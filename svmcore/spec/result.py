"""A run's result, one typed shape from the worker to every reader: ``RunSummary``.

The worker reports what it measured as a ``RunSummary`` (into its outcome event, with
``to_dict``); the engine completes it (``engine.summary``: how it ended, the cap, the wall
time, the exact peaks); the store keeps its JSON and gives it back typed (``from_dict``).
Every part is a frozen ``Record``: a dict handed to one (the worker builds its parts as
JSON) or read back becomes that part's record and a list a tuple; a key it does not name
(an older or newer run's) is kept in ``extra`` and written back, so nothing stored is lost.
Standard library and spec only: the lean worker imports it."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from svmcore.spec.json_values import fits, kind_of
from svmcore.spec.outcomes import rss_over_cap_note, size_text
from svmcore.spec.scores import quality_warnings
from svmcore.spec.status import RunStatus

if TYPE_CHECKING:
    from svmcore.spec.growth import Growth

VERSION = 2  # the shape to_dict writes; summaries without a version were written before it (1)


@dataclass(frozen=True)
class Record:
    """A frozen record of JSON the product wrote (see the module's docstring)."""

    extra: dict = field(default_factory=dict, kw_only=True)  # keys this record does not name

    def __post_init__(self):
        for name, hint in _hints(type(self)).items():
            object.__setattr__(self, name, _typed(getattr(self, name), _inner(hint)))

    @classmethod
    def from_dict(cls, d: dict | None):
        """The record of ``d``: a null reads as the field's default (older runs wrote some)."""
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        d = {k: v for k, v in (d or {}).items() if k != "version"}
        return cls(**{k: v for k, v in d.items() if k in names and v is not None},
                   extra={k: v for k, v in d.items() if k not in names})

    def to_dict(self) -> dict:
        """The record as JSON: every field it names (nulls too), then ``extra``."""
        return {**{f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "extra"},
                **self.extra}

    @classmethod
    def problems(cls, d: dict, at: str = "") -> list[str]:
        """What in ``d`` (decoded JSON) does not have the type this record reads it as
        ('peak_rss_mb is the text 'abc'', 'phases[0].name is missing')."""
        out = [f"{at}{f.name} is missing" for f in dataclasses.fields(cls)
               if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and f.name not in d]
        return out + [p for name, hint in _hints(cls).items() if name in d for p in _problems(d[name], hint, at + name)]


@functools.cache
def _hints(cls) -> dict[str, Any]:
    return {k: v for k, v in typing.get_type_hints(cls).items() if k != "extra"}


def _inner(hint):
    """``X`` of ``X | None``."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1 else hint


def _is(hint, base: type) -> bool:
    return isinstance(hint, type) and issubclass(hint, base)


def _typed(v, h):
    """``v`` handed to a field of type ``h`` as the field holds it: a record, a member, a tuple."""
    if isinstance(v, dict) and _is(h, Record):
        return h.from_dict(v)
    if isinstance(v, str) and _is(h, Enum) and v in h._value2member_map_:
        return h(v)
    if isinstance(v, (list, tuple)) and typing.get_origin(h) is tuple:
        return tuple(_typed(x, typing.get_args(h)[0]) for x in v)
    return v


def _problems(value, hint, where: str) -> list[str]:
    h = _inner(hint)
    if not fits(value, hint):
        return [f"{where} is {kind_of(value)}"]
    if isinstance(value, dict) and _is(h, Record):
        return h.problems(value, where + ".")
    if isinstance(value, list) and typing.get_origin(h) is tuple:
        return [p for i, x in enumerate(value) for p in _problems(x, typing.get_args(h)[0], f"{where}[{i}]")]
    if isinstance(value, str) and _is(h, Enum) and value not in h._value2member_map_:
        return [f"{where} is {kind_of(value)}, not a {h.__name__}"]
    return []


def _plain(v):
    if isinstance(v, Record):
        return v.to_dict()
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    return v.value if isinstance(v, Enum) else v


# ---------------------------------------------------------------- the parts


@dataclass(frozen=True)
class PhaseSpan(Record):
    """One phase of a run: when it ran and the kernel's exact peak inside it (None if the
    worker was killed before it could be read)."""

    name: str
    start_s: float = 0.0
    end_s: float | None = None
    wall_s: float | None = None
    peak_rss_mb: float | None = None
    cpu_s: float | None = None  # the worker's CPU time in it, every thread (runs before issue 40: None)


@dataclass(frozen=True)
class RunError(Record):
    """Why a run did not complete; ``bad_input``: its input or a full disk caused it (exit 2)."""

    type: str | None = None
    message: str | None = None
    bad_input: bool | None = None
    cause: str | None = None  # under a cap: the exception the cap raised
    signal: str | None = None  # the signal that killed the worker
    worker: str | None = None  # a data-parallel run: the Dask worker that died, and what it was doing
    doing: str | None = None


@dataclass(frozen=True)
class ExitInfo(Record):
    code: int | None = None  # None: a process that was not the runner's child
    signal: str | None = None


@dataclass(frozen=True)
class ScoreWarning(Record):
    text: str
    kind: str | None = None  # 'near-chance'


@dataclass(frozen=True)
class Confusion(Record):
    classes: tuple[str, ...] = ()
    matrix: tuple[tuple[int, ...], ...] = ()  # rows true, columns predicted


@dataclass(frozen=True)
class DataInfo(Record):
    """What a dataset holds, before any precision or representation choice."""

    name: str | None = None
    format: str | None = None  # synthetic, shipped, svmlight, csv, npz, text
    rows: int | None = None
    features: int | None = None
    nnz: int | None = None
    classes: list | None = None
    class_counts: list | None = None
    dense_source: bool | None = None
    exact: bool = True  # False: synthetic figures from the knobs, not counted
    label_runs: int | None = None  # runs of one label in file order (a file sorted by label: one per class)

    @property
    def density(self) -> float:
        return self.nnz / max(1, self.rows * self.features)

    @property
    def labels_in_long_runs(self) -> bool:
        """The file's labels come in runs far longer than a file in random order has (sorted by
        label, as many public libsvm files are): fewer than a quarter of the runs such a file's
        class shares would give, 1 + (1 - sum of squared shares) x (rows - 1) on average."""
        if self.label_runs is None or not self.rows or not self.class_counts:
            return False
        shares = [n / self.rows for n in self.class_counts]
        return self.label_runs < (1 + (1 - sum(p * p for p in shares)) * (self.rows - 1)) / 4


@dataclass(frozen=True)
class Regularisation(Record):
    name: str | None = None  # alpha (SGD) or l2 (FTRL)
    value: float | None = None
    source: str | None = None  # set, auto or default
    why: str | None = None


@dataclass(frozen=True)
class SpillReport(Record):
    """What stream mode's spill did: later passes read ``rows`` back from it, or parse again."""

    rows: int | None = None
    read_back: bool | None = None
    failed: str | None = None  # why it could not be written
    filled_first: bool | None = None  # written in the load phase, so the first pass read it too


@dataclass(frozen=True)
class Kept(Record):
    """What the accumulation knobs kept while training (bytes exact: their arrays' own): the cache of
    transformed rows (``transform_cache``), the history of batch arrays (``history``)."""

    cache: str | None = None  # memory or disk
    cache_rows: int | None = None
    cache_bytes: int | None = None
    cache_failed: str | None = None  # why the disk cache could not be written
    history: str | None = None  # refs or cycles
    history_batches: int | None = None
    history_bytes: int | None = None  # every batch's copy together
    history_most_held_batches: int | None = None  # alive at once, at most (cycles: until the collector ran)
    history_most_held_bytes: int | None = None

    def lines(self) -> list[str]:
        """What was kept, in words (``runs show``, the run panel)."""
        out = []
        if self.cache:
            where = ("held in memory to the end of training" if self.cache == "memory"
                     else "written to disk, read back a batch at a time, deleted when training ended")
            out.append(f"cache of transformed rows ({self.cache}): {self.cache_rows or 0:,} rows, "
                       f"{size_text(self.cache_bytes or 0)}, {where} (its arrays, exact)"
                       + (f"; {self.cache_failed}" if self.cache_failed else ""))
        if self.history:
            out.append(f"history of batch copies ({self.history}): {self.history_batches or 0:,} batches, "
                       f"{size_text(self.history_bytes or 0)} in all; at most {self.history_most_held_batches or 0:,} "
                       f"({size_text(self.history_most_held_bytes or 0)}) alive at once (its arrays, exact)")
        return out


@dataclass(frozen=True)
class Upcast(Record):
    """float16 storage: each batch's float32 copy to compute with, bytes exact, time measured."""

    batches: int | None = None
    float16_bytes_per_batch: float | None = None
    float32_bytes_per_batch: float | None = None
    float32_bytes_max: int | None = None
    float32_bytes_total: int | None = None
    seconds_per_batch: float | None = None
    seconds_max: float | None = None
    seconds_total: float | None = None
    source: str | None = None


@dataclass(frozen=True)
class Threads(Record):
    requested: int | None = None
    blas: list | None = None  # each BLAS or OpenMP pool: {api, num_threads}
    os_threads: int | None = None
    reader_thread: bool | None = None


@dataclass(frozen=True)
class ParallelWorker(Record):
    worker: int | None = None  # 1-based
    address: str | None = None
    pid: int | None = None
    rows: int | None = None
    peak_rss_mb: float | None = None  # None: a failed run's worker that finished no task
    peak_exact: bool | None = None  # its VmHWM (a LocalCluster started for the run), else its sampled maximum
    peak_sampled_mb: float | None = None


@dataclass(frozen=True)
class Parallel(Record):
    """A data-parallel run's Dask workers and their memory (``worker.parallel``)."""

    workers: int | None = None
    scheduler: str | None = None
    cluster_start_s: float | None = None
    per_worker: tuple[ParallelWorker, ...] = ()
    worker_peak_source: str | None = None
    coordinator_peak_sampled_mb: float | None = None
    total_peak_sampled_mb: float | None = None  # every process sampled at 50 Hz, summed at each instant
    total_source: str | None = None
    ended_early: bool | None = None  # the run failed: what was read until then

    def peaks(self, coordinator_mb: float | None) -> ParallelPeaks:
        read = [w for w in self.per_worker if w.peak_rss_mb is not None]
        largest = max(read, key=lambda w: w.peak_rss_mb, default=ParallelWorker())
        return ParallelPeaks(self.total_peak_sampled_mb, largest.worker, largest.peak_rss_mb,
                             bool(largest.peak_exact), coordinator_mb)


@dataclass(frozen=True)
class ModelScores(Record):
    model: str | None = None
    solver: str | None = None
    accuracy: float | None = None
    balanced_accuracy: float | None = None
    model_bytes: int | None = None


@dataclass(frozen=True)
class Distillation(Record):
    """A distilled run's teacher and student: their scores, how often they agree, their sizes."""

    teacher: ModelScores = ModelScores()
    student: ModelScores = ModelScores()
    agreement: float | None = None
    labels: str | None = None  # what the student was trained on

    def lines(self) -> list[str]:
        t, s = self.teacher, self.student
        agree = "" if self.agreement is None else f"; they agree on {self.agreement:.1%} of the test rows"
        return [f"distilled: the accuracy above is the student's, a linear-svm ({s.solver} solver) trained on "
                f"{self.labels}: the model this run exports. Teacher {t.model}: accuracy {t.accuracy:.4f}, balanced "
                f"{t.balanced_accuracy:.4f}{agree}",
                f"models in memory: teacher {size_text(t.model_bytes)}, student {size_text(s.model_bytes)} "
                "(their arrays, exact)"]


@dataclass(frozen=True)
class ModelExport(Record):
    """What ``worker.model_export`` wrote for serving, or why it did not."""

    exported: bool | None = None
    reason: str | None = None
    folder: str | None = None
    files: dict | None = None  # each file's size and SHA-256: binds the model to its run
    storage: str | None = None
    dtype: str | None = None
    model_bytes: int | None = None
    sizes: dict | None = None
    nonzero_weights: int | None = None
    check: dict | None = None


@dataclass(frozen=True)
class ParallelForecast(Record):
    """A data-parallel run's memory: each Dask worker, the run's own process (which
    coordinates) and every process at once."""

    workers: int
    per_worker_mb: float
    per_worker_parts_mb: dict
    coordinator_mb: float
    total_mb: float
    basis: str


@dataclass(frozen=True)
class Forecast(Record):
    """The memory model's word on one run before it is launched, in one shape for everyone
    who reads it (the launch warnings, the Train page, ``svmcore estimate``, recommend) and
    kept beside the run's measurement: exact peaks (MiB) calibrated on this machine, or a
    ``lower_bound`` (no calibration yet: the parts' sizes alone, without the floor or any
    overhead, and the train time at the reference machine's rates)."""

    predicted_peak_mb: float  # the run's own process (a data-parallel run's coordinator)
    peak_phase: str = ""
    parts: dict = field(default_factory=dict)  # the peak phase's parts (MiB); calibrated, the floor among them
    phases_mb: dict = field(default_factory=dict)  # each phase's peak
    phase_parts: dict = field(default_factory=dict)  # each phase's parts above the floor
    predicted_train_s: float | None = None  # CPU seconds of the train phase
    lower_bound: bool = False
    floor_mb: float | None = None  # what the libraries hold before any data
    floor_basis: str = ""
    width: int | None = None  # input columns, after hashing
    cap_kind: str = "none"  # the cap the run will have: none, rlimit or cgroup
    capped_mb: float | None = None  # the quantity its cap limits: a cgroup's charge leaves out library files others hold
    parallel: ParallelForecast | None = None
    narrower_mb: float | None = None  # an MLP on a wide input: the peak on ``NARROWER_BITS`` hashed columns

    @classmethod
    def from_dict(cls, d: dict | None) -> Forecast | None:
        """A stored forecast, or None for none (runs stored before 12-06 may hold the
        forecast's error in its place: it was a lower bound, or it failed)."""
        return super().from_dict(d) if d and d.get("predicted_peak_mb") is not None else None

    @classmethod
    def problems(cls, d: dict, at: str = "") -> list[str]:
        return super().problems(d, at) if d.get("predicted_peak_mb") is not None else []


@dataclass(frozen=True)
class PassMemory(Record):
    """The memory a run retained at the end of one training pass, read from /proc/self/status at
    that moment (exact readings, not peaks): its worker's RSS and the anonymous part of it
    (RssAnon: what the process allocated, without file-backed pages such as the libraries'
    code or a memory-mapped dataset); the heap its allocation tracker saw, for a traced run (else
    None); a data-parallel run's Dask workers' RSS and anonymous memory at the end of their
    shard's pass, one each."""

    epoch: int  # the pass, 1-based
    rss_mb: float | None = None
    anon_mb: float | None = None
    heap_mb: float | None = None
    workers_rss_mb: tuple[float, ...] = ()
    workers_anon_mb: tuple[float, ...] = ()

    @property
    def all_rss_mb(self) -> float | None:
        """Every process of the run: the worker's RSS and its Dask workers'."""
        return None if self.rss_mb is None else self.rss_mb + sum(self.workers_rss_mb)

    @property
    def all_anon_mb(self) -> float | None:
        return None if self.anon_mb is None else self.anon_mb + sum(self.workers_anon_mb)


@dataclass(frozen=True)
class DaskPlacement(Record):
    """Where a run of a sweep on a Dask scheduler ran."""

    worker: str | None = None
    started_at: float | None = None
    ended_at: float | None = None


# ---------------------------------------------------------------- the run's peak


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
        worker = f" ({self.largest_worker})" if self.largest_worker else ""
        return (f"all processes {mib_text(self.all_processes_mb)} (sampled sum) · largest Dask worker{worker} "
                f"{mib_text(self.largest_worker_mb)} ({'exact' if self.largest_worker_exact else 'sampled'}) · "
                f"coordinator {mib_text(self.coordinator_mb)} (exact)")


def mib_text(v: float | None) -> str:
    return "–" if v is None else f"{v:,.0f} MiB"


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
        par = self.parallel
        if par is None:
            return mib_text(self.mb)
        if self.exact:  # its workers were never read: the coordinator is all that is known
            return f"{mib_text(self.mb)} (its coordinator's alone: its Dask workers' memory was not read)"
        worker = f" ({par.largest_worker})" if par.largest_worker else ""
        return (f"{mib_text(self.mb)} in all its processes (sampled sum; largest Dask worker{worker} "
                f"{mib_text(par.largest_worker_mb)}, {'exact' if par.largest_worker_exact else 'sampled'}; "
                f"coordinator {mib_text(par.coordinator_mb)}, exact)")


TRACE_FILE = "trace.bin"  # memray's file of a traced run (the trace knob), in the run's folder


@dataclass(frozen=True)
class Site(Record):
    """One allocation site of a traced run at a peak: the bytes its allocations still held there,
    its Python line (the innermost frame), the nearest line of svmcore's beneath a library's
    (``ours``), the native function the line called that allocated (``native``: numpy's, scipy's,
    scikit-learn's, our C library's) and its Python call path, outermost first (``stack``)."""

    bytes: int = 0
    allocations: int = 0
    function: str = ""
    file: str = ""
    line: int = 0
    ours: str | None = None
    native: str | None = None
    stack: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        """'svmcore/data/feeds/memory.py:88 in load'."""
        return f"{self.file}:{self.line} in {self.function}" if self.file else self.function or "(no Python frame)"

    def text(self) -> str:
        """'8.0 MiB  sklearn/…/_stochastic_gradient.py:268 in _allocate_parameter_mem [array_zeros] ←
        svmcore/worker/sklearn_sgd.py:48 in partial_fit'."""
        return (f"{self.bytes / 2**20:7,.1f} MiB  {self.where}" + (f" [{self.native}]" if self.native else "")
                + (f" <- {self.ours}" if self.ours else ""))


@dataclass(frozen=True)
class PeakSites(Record):
    """The top sites at one peak of the tracked heap: the run's (``phase`` None) or a phase's; ``t_s``
    the end of the 10 ms interval of memray's that held it, ``traced_bytes`` the heap there."""

    phase: str | None = None
    t_s: float | None = None
    traced_bytes: int = 0
    sites: tuple[Site, ...] = ()


@dataclass(frozen=True)
class Trace(Record):
    """What memray's tracker saw of a traced run: the top sites at the run's peak and at each
    phase's, and the 50 Hz sample nearest the traced peak (resident, anonymous and file-backed
    bytes) that reconciles it with the exact peak; ``error`` if the file could not be read."""

    file: str | None = None
    allocations: int | None = None  # allocations the tracker recorded
    peaks: tuple[PeakSites, ...] = ()
    sample_t_s: float | None = None
    rss_bytes: int | None = None
    anon_bytes: int | None = None
    file_backed_bytes: int | None = None
    error: str | None = None
    # the lines whose bytes held grew most from the end of one pass to the end of another (bytes: the growth)
    grew: tuple[Site, ...] = ()
    grew_passes: tuple[int, ...] | None = None  # (first, last): the passes whose ends they are measured at

    def at(self, phase: str | None = None) -> PeakSites | None:
        """The sites at the run's peak (None) or at that phase's."""
        return next((p for p in self.peaks if p.phase == phase), None)

    def lines(self, exact_peak_mb: float | None, top: int = 3) -> list[str]:
        """What ``runs show`` and ``svmcore run`` print: the reconciliation, the top lines at the run's
        peak and at each phase's."""
        out = [f"allocation sites (memray; {self.allocations or 0:,} allocations traced): "
               + self.reconciliation(exact_peak_mb)]
        for p in self.peaks:
            out.append(f"  at {'the run' if p.phase is None else p.phase}'s traced peak, "
                       f"{p.traced_bytes / 2**20:,.1f} MiB held:")
            out += [f"    {site.text()}" for site in p.sites[:top]]
        return out + self.grew_lines(top)

    def grew_lines(self, top: int = 3) -> list[str]:
        """The lines that grew between two pass ends, in words ([] when none did or it was not measured)."""
        if not self.grew or not self.grew_passes:
            return []
        first, last = self.grew_passes
        return ([f"  grew from the end of pass {first} to the end of pass {last}:"]
                + [f"    {site.text()}" for site in self.grew[:top]])

    def reconciliation(self, exact_peak_mb: float | None) -> str:
        """The traced heap and the exact peak in one line, every figure a part of the one before."""
        top = self.at(None)
        if self.error or top is None:
            return f"no allocation sites: {self.error or 'the trace recorded no peak'}"
        heap = round(top.traced_bytes / 2**20)
        if self.rss_bytes is None:
            return f"traced heap at its peak {heap:,} MiB; no 50 Hz memory sample near it to set beside the exact peak"
        rss, anon = round(self.rss_bytes / 2**20), round(self.anon_bytes / 2**20)
        peak = round(exact_peak_mb) if exact_peak_mb is not None else None
        line = (f"at the traced peak ({self.sample_t_s:.2f} s, the nearest 50 Hz sample) {rss:,} MiB resident = "
                f"{rss - anon:,} MiB file-backed (library code, mapped files: pages, which the tracker does not see) + "
                f"{anon:,} MiB anonymous")
        if heap <= anon:
            line += (f", of which {heap:,} MiB the tracker saw allocated and {anon - heap:,} MiB it did not "
                     "(allocator slack, the interpreter's and the tracker's own memory)")
        else:
            line += (f"; the tracker saw {heap:,} MiB allocated, {heap - anon:,} MiB more than is resident "
                     "(allocated pages never written are not resident)")
        if peak is not None:
            line = f"exact peak {peak:,} MiB (VmHWM); {line}" + (
                f"; the other {peak - rss:,} MiB of the exact peak were held at another moment" if peak > rss else "")
        return line


# ---------------------------------------------------------------- the run


@dataclass(frozen=True)
class RunSummary(Record):
    """What a run measured, as every reader reads it (see the module's docstring)."""

    run_id: int | None = None
    status: RunStatus | None = None
    # memory; the exact peak is the worker's kernel high-water mark (VmHWM at each phase end and at 50 Hz)
    peak_rss_mb: float | None = None
    peak_sampled_mb: float | None = None  # the highest 50 Hz sample: can miss short spikes
    sample_hz: int | None = None
    n_samples: int = 0
    floor_mb: float | None = None  # the imports phase's peak: interpreter and libraries
    peak_phase: str | None = None  # the phase that owns the exact peak
    phases: tuple[PhaseSpan, ...] = ()
    cap: str | None = None  # none, rlimit or cgroup
    cap_mb: float | None = None
    cgroup_peak_mb: float | None = None  # cgroup-capped runs only: the group's exact peak charge, page cache included
    cgroup_held_peak_mb: float | None = None  # cgroup-capped runs only: the charge less its page cache, sampled
    rss_file_mb: float | None = None  # cgroup-capped runs only: file-backed pages of the highest RSS sample
    # how it ended
    phase: str | None = None  # where a run that did not complete ended
    error: RunError | None = None
    exit: ExitInfo | None = None
    # time and throughput
    wall_s: float | None = None
    train_s: float | None = None
    samples_seen: int | None = None
    samples_per_s: float | None = None
    epoch_samples_per_s: tuple[float, ...] = ()  # each pass's: the first parses
    batches: int | None = None
    monitor: str | None = None
    lean: bool | None = None  # True: the lean configuration ran it (numpy and the native library only)
    # scores (spec.scores): accuracy and balanced accuracy on every test row, last_accuracy the last evaluation's
    accuracy: float | None = None
    balanced_accuracy: float | None = None
    last_accuracy: float | None = None
    f1: float | None = None
    f1_of: str | None = None
    baseline_accuracy: float | None = None
    per_class_recall: dict = field(default_factory=dict)
    confusion: Confusion | None = None
    warnings: tuple[ScoreWarning, ...] | None = None  # None: stored before summaries listed them
    # the data and the model
    data: DataInfo | None = None
    prepared_once: tuple[str, ...] = ()  # copies of the data its prepare phase built, later runs reuse
    train_rows: int | None = None
    test_rows: int | None = None
    features: int | None = None
    shuffle: bool | None = None
    train_data_bytes: int | None = None
    model_bytes: int | None = None
    nonzero_weights: int | None = None  # a linear model's weights that are not zero (exact)
    weights: int | None = None  # all its weights
    sparse_model_bytes: int | None = None  # exact bytes of a sparse copy (indices, float64 values)
    recomputed_layers: int | None = None  # mlp-numpy: hidden layers computed twice over all steps (checkpointing)
    regularisation: Regularisation | None = None
    spill: SpillReport | None = None
    upcast: Upcast | None = None
    threads: Threads | None = None
    parallel: Parallel | None = None
    distillation: Distillation | None = None
    model_export: ModelExport | None = None
    prediction: Forecast | None = None
    dask: DaskPlacement | None = None
    store_error: str | None = None  # a run of a Dask sweep whose outcome the store refused
    passes: tuple[PassMemory, ...] | None = None  # retained at the end of each training pass; None: not recorded
    kept: Kept | None = None  # what the accumulation knobs kept while training
    trace: Trace | None = None  # a traced run's allocation sites (the trace knob)

    def to_dict(self) -> dict:
        """The summary's JSON (what the store keeps, ``--json`` prints) with its ``version``, and
        a data-parallel run's headline peaks (``parallel_peaks``) under the keys scripts read."""
        out = dict(super().to_dict(), version=VERSION, peak_rss_source=PEAK_SOURCE)
        if self.growth is not None:
            out[_GROWTH_KEY] = self.growth.to_dict()
        par = self.parallel_peaks
        if par is not None:
            out.update(zip(_PARALLEL_KEYS, (par.all_processes_mb, ALL_PROCESSES_SOURCE, par.largest_worker_mb,
                                            par.largest_worker,
                                            "exact (VmHWM)" if par.largest_worker_exact else "sampled",
                                            par.coordinator_mb)))
        return out

    @classmethod
    def from_dict(cls, d: dict | None) -> RunSummary:
        return super().from_dict({k: v for k, v in (d or {}).items()
                                  if k not in _PARALLEL_KEYS + ("peak_rss_source", _GROWTH_KEY)})

    def score_warnings(self) -> list[ScoreWarning]:
        """The scores' warnings (``spec.scores.quality_warnings``), worked out again for runs
        stored before summaries listed them."""
        if self.warnings is not None:
            return list(self.warnings)
        return [ScoreWarning(**w) for w in quality_warnings(self.accuracy, self.balanced_accuracy,
                                                            self.baseline_accuracy, len(self.per_class_recall),
                                                            self.shuffle)]

    def phase_peak(self, name: str) -> float | None:
        return next((p.peak_rss_mb for p in self.phases if p.name == name), None)

    @property
    def error_message(self) -> str | None:
        return self.error.message if self.error else None

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
    def parallel_peaks(self) -> ParallelPeaks | None:
        """A data-parallel run's headline peaks (None for a single-process run)."""
        return self.parallel.peaks(self.peak_rss_mb) if self.parallel else None

    @property
    def growth(self) -> Growth | None:
        """Growth per pass from the memory retained after each (``spec.growth``); None when not recorded."""
        if self.passes is None:
            return None
        from svmcore.spec.growth import growth_of  # here: the worker, which loads this module, never reads it

        every = any(p.workers_anon_mb for p in self.passes)
        heaps = tuple(p.heap_mb for p in self.passes)
        return growth_of([p.all_anon_mb for p in self.passes],
                         "anonymous memory of all its processes, summed" if every else "anonymous memory",
                         heaps if None not in heaps else ())

    @property
    def run_peak(self) -> RunPeak:
        """The run's peak, as every consumer judges and names it (``RunPeak``)."""
        par = self.parallel_peaks
        if par is not None and par.all_processes_mb is not None:
            return RunPeak(par.all_processes_mb, False, par)
        return RunPeak(self.peak_rss_mb, True, par)


PEAK_SOURCE = "the worker's kernel high-water mark (VmHWM at each phase end and at 50 Hz): exact"
ALL_PROCESSES_SOURCE = "every process of the run sampled at 50 Hz, summed: sampled"
# what to_dict writes of a data-parallel run's peaks for scripts (docs/dask.md); read back, they are worked out again
_PARALLEL_KEYS = ("peak_all_processes_mb", "peak_all_processes_source", "peak_largest_worker_mb", "peak_largest_worker",
                  "peak_largest_worker_source", "peak_coordinator_mb")
_GROWTH_KEY = "growth_per_pass"  # what to_dict writes of ``growth`` for scripts; read back, it is worked out again
