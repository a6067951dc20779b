"""A run's summary: the worker's result (``spec.result.RunSummary``) completed from its
events and memory samples: phases with their exact peaks, the phase that owns the peak,
the floor, the memory retained after each pass, the cap, throughput and the scores."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass

from svmcore.spec.events import DATA, EVAL, PASS_END, PHASE_END, PHASE_START, PROGRESS, Event
from svmcore.spec.result import PassMemory, PhaseSpan, Forecast, RunSummary
from svmcore.spec.scores import quality_warnings
from svmcore.spec.status import RunStatus
from svmcore.spec.units import MiB


@dataclass(frozen=True)
class MemorySample:
    """One 50 Hz reading: instantaneous RSS split into anonymous and file-backed pages,
    and the kernel's high-water mark (exact, but reset by the worker at each phase); for a
    cgroup-capped run, what its cgroup is charged (what the cap limits) and the page cache
    within that charge (None otherwise)."""

    t_s: float
    rss_bytes: int
    anon_bytes: int
    file_bytes: int
    hwm_bytes: int
    cgroup_bytes: int | None = None
    cgroup_cache_bytes: int | None = None

    @property
    def held_bytes(self) -> int | None:
        """The cgroup's charge the kernel cannot reclaim (less its page cache): what decides an OOM kill."""
        return None if self.cgroup_bytes is None else self.cgroup_bytes - (self.cgroup_cache_bytes or 0)


def tail_text(path: str, n: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def phase_spans(events: list[Event], samples: Sequence[MemorySample] = (), end_s: float | None = None) -> list[PhaseSpan]:
    """Phase spans with their exact peaks. A phase the worker never ended (killed in it) ends
    at ``end_s`` (None: its end unknown, peak unknown) and its peak is the kernel's high-water
    mark since the phase's reset as last read (exact up to the last 50 Hz reading)."""
    out: list[dict] = []
    for e in events:
        if e["kind"] == PHASE_START:
            out.append({"name": e["phase"], "start_s": e["t_s"]})
        elif e["kind"] == PHASE_END and out and out[-1]["name"] == e["phase"]:
            out[-1].update(end_s=e["t_s"], wall_s=e["wall_s"], peak_rss_mb=e["peak_rss_bytes"] / MiB,
                           cpu_s=e.get("cpu_s"))
    for p in out:
        if "end_s" not in p and end_s is not None:
            p["end_s"] = max(end_s, p["start_s"])  # killed before the next sample: it ended as it began
            p["wall_s"] = p["end_s"] - p["start_s"]
            inside = [s.hwm_bytes for s in samples if s.t_s >= p["start_s"]]
            p["peak_rss_mb"] = max(inside) / MiB if inside else None
    return [PhaseSpan(**p) for p in out]


def train_pass_ends(events: list[Event]) -> list[Event]:
    """The pass_end events of the train phase (a distilled run's student trains in a phase of its own, after it)."""
    out, in_train = [], False
    for e in events:
        if e["kind"] == PHASE_START:
            in_train = e["phase"] == "train"
        elif e["kind"] == PASS_END and in_train:
            out.append(e)
    return out


def pass_memory(events: list[Event]) -> tuple[PassMemory, ...]:
    """The memory retained at the end of each pass of the train phase."""
    return tuple(PassMemory(e["epoch"], e["rss_bytes"] / MiB, e["anon_bytes"] / MiB,
                            workers_rss_mb=tuple(b / MiB for b in e.get("workers_rss_bytes", ())),
                            workers_anon_mb=tuple(b / MiB for b in e.get("workers_anon_bytes", ())))
                 for e in train_pass_ends(events))


@dataclass(frozen=True)
class RunEnd:
    """What the parent knows of a run that has ended: its events and memory samples, the
    worker's outcome event (with the worker's ``RunSummary`` as its ``summary``), how the
    run was classified, its cap and what the cap's cgroup was charged at its peak, and the
    forecast made before it started."""

    run_id: int
    status: RunStatus
    events: list[dict]
    samples: list[MemorySample]
    outcome: dict | None
    error: dict | None
    last_phase: str | None
    cap_kind: str | None
    cap_bytes: int | None
    exit_info: dict | None
    wall_s: float
    sample_hz: float
    cgroup_peak_bytes: int | None = None  # a cgroup cap's only: it counts the page cache the run's reads brought in
    prediction: Forecast | None = None


def build_summary(end: RunEnd) -> RunSummary:
    """The worker's result completed: how the run ended, its cap, wall time, phases and exact
    peaks from the events and samples, throughput and the final scores from the events."""
    events, samples, outcome = end.events, end.samples, end.outcome or {}
    worker = RunSummary.from_dict(outcome.get("summary"))
    phases = phase_spans(events, samples, samples[-1].t_s if samples else end.wall_s)
    # wait4's ru_maxrss is not used: Linux seeds it at exec with the RSS of the process
    # that forked the worker (a 700 MiB dashboard would show in every run). The worker's
    # own VmHWM, read at every phase end and at 50 Hz, is the exact figure.
    exact_bytes = max([s.hwm_bytes for s in samples] + [outcome.get("peak_rss_bytes") or 0]
                      + [int(p.peak_rss_mb * MiB) for p in phases if p.peak_rss_mb is not None])
    owner = max((p for p in phases if p.peak_rss_mb is not None), key=lambda p: p.peak_rss_mb, default=None)
    final_eval = next((e for e in reversed(events) if e["kind"] == EVAL and e.get("final")), {})
    last_eval = next((e for e in reversed(events) if e["kind"] == EVAL), {})
    progress = next((e for e in reversed(events) if e["kind"] == PROGRESS), {})
    data_ev = next((e for e in events if e["kind"] == DATA), {})
    train_s = worker.train_s or next((p.wall_s for p in phases if p.name == "train"), None)
    samples_seen = worker.samples_seen or progress.get("samples")
    held = [s.held_bytes for s in samples if s.held_bytes is not None]  # a cgroup-capped run's
    accuracy, balanced = final_eval.get("accuracy"), final_eval.get("balanced_accuracy")
    return dataclasses.replace(
        worker, run_id=end.run_id, status=end.status, peak_rss_mb=exact_bytes / MiB if exact_bytes else None,
        peak_sampled_mb=max(s.rss_bytes for s in samples) / MiB if samples else None, sample_hz=end.sample_hz,
        n_samples=len(samples), floor_mb=next((p.peak_rss_mb for p in phases if p.name == "imports"), None),
        peak_phase=owner.name if owner else None, phases=phases, cap=end.cap_kind,
        cap_mb=end.cap_bytes / MiB if end.cap_bytes else None,
        cgroup_peak_mb=end.cgroup_peak_bytes / MiB if end.cgroup_peak_bytes else None,
        # the highest sampled charge less its page cache, and what RSS has besides
        cgroup_held_peak_mb=max(held) / MiB if held else None,
        rss_file_mb=max(samples, key=lambda s: s.rss_bytes).file_bytes / MiB if held else None,
        phase=end.last_phase if end.status != RunStatus.COMPLETED else None, error=end.error, exit=end.exit_info,
        wall_s=end.wall_s, train_s=train_s, samples_seen=samples_seen,
        samples_per_s=samples_seen / train_s if samples_seen and train_s else None,
        accuracy=accuracy, balanced_accuracy=balanced, last_accuracy=last_eval.get("accuracy"),
        warnings=quality_warnings(accuracy, balanced, worker.baseline_accuracy, len(worker.per_class_recall),
                                  worker.shuffle),
        data=data_ev.get("info"), prepared_once=data_ev.get("prepared_once") or (), prediction=end.prediction,
        passes=pass_memory(events))
