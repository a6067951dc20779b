"""A run's summary from its events and memory samples: phases with their exact peaks,
the phase that owns the peak, the floor, throughput and the scores."""

from __future__ import annotations

import os
from dataclasses import dataclass

from svmcore.spec.events import DATA, EVAL, PHASE_END, PHASE_START, PROGRESS, Event
from svmcore.spec.scores import quality_warnings
from svmcore.spec.units import MiB
from svmcore.store.records import parallel_peaks
from svmcore.store.sqlite import RunStatus
from svmcore.spec.result import TrainResult


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


def phase_spans(events: list[Event]) -> list[dict]:
    """Phase spans with their exact peaks; a phase the worker never ended (killed in it)
    keeps its start and gets the end of the run, peak unknown (None)."""
    out: list[dict] = []
    for e in events:
        if e["kind"] == PHASE_START:
            out.append({"name": e["phase"], "start_s": e["t_s"], "end_s": None, "wall_s": None,
                        "peak_rss_mb": None})
        elif e["kind"] == PHASE_END and out and out[-1]["name"] == e["phase"]:
            out[-1].update(end_s=e["t_s"], wall_s=e["wall_s"], peak_rss_mb=e["peak_rss_bytes"] / MiB)
            if e.get("cpu_s") is not None:
                out[-1]["cpu_s"] = e["cpu_s"]
    return out


@dataclass(frozen=True)
class RunEnd:
    """What the parent knows of a run that has ended: its events and memory samples, the
    worker's outcome event (with the worker's ``TrainResult`` as its ``summary``) and how
    the run was classified."""

    run_id: int
    status: RunStatus
    events: list[dict]
    samples: list[MemorySample]
    phases: list[dict]  # phase_spans(events)
    outcome: dict | None
    error: dict | None
    last_phase: str | None
    cap_kind: str | None
    cap_bytes: int | None
    exit_info: dict | None
    wall_s: float
    sample_hz: float


def build_summary(end: RunEnd) -> dict:
    run_id, status, events, samples, phases = end.run_id, end.status, end.events, end.samples, end.phases
    outcome, cap_bytes = end.outcome, end.cap_bytes
    worker = (outcome or {}).get("summary") or {}
    # wait4's ru_maxrss is not used: Linux seeds it at exec with the RSS of the process
    # that forked the worker (a 700 MiB dashboard would show in every run). The worker's
    # own VmHWM, read at every phase end and at 50 Hz, is the exact figure.
    phase_peaks = [p["peak_rss_mb"] for p in phases if p["peak_rss_mb"] is not None]
    hwm_max = max((s.hwm_bytes for s in samples), default=0)
    exact_bytes = max([hwm_max, (outcome or {}).get("peak_rss_bytes") or 0]
                      + [int(p * MiB) for p in phase_peaks])
    end_t = samples[-1].t_s if samples else end.wall_s
    for p in phases:
        if p["end_s"] is None:
            p["end_s"] = max(end_t, p["start_s"])  # killed before the next sample: it ended as it began
            p["wall_s"] = p["end_s"] - p["start_s"]
            # killed inside this phase: the kernel's high-water mark since the phase's
            # reset, as last read (exact up to the last 50 Hz reading)
            inside = [s.hwm_bytes for s in samples if s.t_s >= p["start_s"]]
            if inside:
                p["peak_rss_mb"] = max(inside) / MiB
    owner = max((p for p in phases if p["peak_rss_mb"] is not None), key=lambda p: p["peak_rss_mb"], default=None)
    floor = next((p["peak_rss_mb"] for p in phases if p["name"] == "imports"), None)
    final_eval = next((e for e in reversed(events) if e["kind"] == EVAL and e.get("final")), None)
    last_eval = next((e for e in reversed(events) if e["kind"] == EVAL), None)
    progress = next((e for e in reversed(events) if e["kind"] == PROGRESS), None)
    data_ev = next((e for e in events if e["kind"] == DATA), None)
    train_s = worker.get("train_s") or next((p["wall_s"] for p in phases if p["name"] == "train"), None)
    samples_seen = worker.get("samples") or (progress or {}).get("samples")
    summary = {
        "run_id": run_id,
        "status": status.value,
        "peak_rss_mb": exact_bytes / MiB if exact_bytes else None,
        "peak_rss_source": "the worker's kernel high-water mark (VmHWM at each phase end and at 50 Hz): exact",
        "peak_sampled_mb": max((s.rss_bytes for s in samples), default=0) / MiB if samples else None,
        "sample_hz": end.sample_hz,
        "n_samples": len(samples),
        "wall_s": end.wall_s,
        "train_s": train_s,
        "samples_per_s": (samples_seen / train_s) if samples_seen and train_s else None,
        "samples_seen": samples_seen,
        "accuracy": (final_eval or {}).get("accuracy"),
        "balanced_accuracy": (final_eval or {}).get("balanced_accuracy"),
        "last_accuracy": (last_eval or {}).get("accuracy"),
        "phases": phases,
        "peak_phase": owner["name"] if owner else None,
        "floor_mb": floor,
        "cap": end.cap_kind,
        "cap_mb": cap_bytes / MiB if cap_bytes else None,
        "phase": end.last_phase if status != RunStatus.COMPLETED else None,
        "error": end.error,
        "exit": end.exit_info,
    }
    summary.update(TrainResult.reported(worker))
    if data_ev:
        summary["data"] = data_ev.get("info")
        if data_ev.get("prepared_once"):  # copies of the data its prepare phase built, later runs reuse
            summary["prepared_once"] = data_ev["prepared_once"]
    held = [s.held_bytes for s in samples if s.held_bytes is not None]
    if held:  # a cgroup-capped run: the highest sampled charge less its page cache, and what RSS has besides
        summary["cgroup_held_peak_mb"] = max(held) / MiB
        summary["rss_file_mb"] = max(samples, key=lambda s: s.rss_bytes).file_bytes / MiB
    peaks = parallel_peaks(summary.get("parallel"), summary["peak_rss_mb"])
    if peaks:  # a data-parallel run's headline: all its processes, beside its largest worker and coordinator
        summary.update(peak_all_processes_mb=peaks.all_processes_mb,
                       peak_all_processes_source="every process of the run sampled at 50 Hz, summed: sampled",
                       peak_largest_worker_mb=peaks.largest_worker_mb, peak_largest_worker=peaks.largest_worker,
                       peak_largest_worker_source="exact (VmHWM)" if peaks.largest_worker_exact else "sampled",
                       peak_coordinator_mb=peaks.coordinator_mb)
    summary["warnings"] = quality_warnings(summary["accuracy"], summary["balanced_accuracy"],
                                           summary.get("baseline_accuracy"), len(summary.get("per_class_recall") or {}),
                                           summary.get("shuffle"))
    return summary
