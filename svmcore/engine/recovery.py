"""After a restart: re-attach live workers, finish dead ones from their event files,
and release what a run leaves behind (its cgroup, its spill, its folder)."""

from __future__ import annotations

import logging
import os

from svmcore.engine import procfs, registry
from svmcore.engine.leftovers import release_leftovers
from svmcore.engine.runner import SAMPLE_HZ, Run
from svmcore.engine.summary import MemorySample, RunEnd, build_summary, phase_spans
from svmcore.spec.events import OUTCOME, Event, parse_lines
from svmcore.store.sqlite import RunRecord, RunStatus, Store

log = logging.getLogger(__name__)


def recover(store: Store) -> list[int]:
    """After a restart: runs still marked running whose runner is gone are re-attached if
    their worker lives (same pid *and* start time), else finished from their event file
    (its outcome if written, else ``lost``). Returns the ids it touched."""
    touched = []
    if store.read_only:  # the history stays readable; nothing can be finished until it is writable
        log.info("the run store is read-only: unfinished runs are left as they are")
        return touched
    for rec in store.list_runs(status=[RunStatus.RUNNING, RunStatus.QUEUED]):
        if registry.is_watched(store.home, rec.id):
            continue
        if rec.damaged:  # its config, folder or start time may be what cannot be read
            log.warning("run %s is still marked %s but its row is damaged (%s); it is left as it is",
                        rec.id, rec.status.value, "; ".join(rec.damage))
            continue
        if rec.runner_pid and procfs.is_same_process(rec.runner_pid, rec.runner_ctime):
            if rec.runner_pid != os.getpid():
                continue  # another live runner (a CLI, another app) owns it
        if rec.status == RunStatus.QUEUED and not rec.worker_pid:
            store.finish_run(rec.id, RunStatus.LOST, {"run_id": rec.id, "status": "lost", "error": {
                "type": "Lost", "message": "queued when its runner stopped; never started"}})
            touched.append(rec.id)
            continue
        if rec.worker_pid and procfs.is_same_process(rec.worker_pid, rec.worker_ctime):
            Run.attach(store, rec)
            touched.append(rec.id)
            continue
        events = _read_events_file(rec)
        outcome = next((e for e in reversed(events) if e["kind"] == OUTCOME), None)
        status = RunStatus(outcome["status"]) if outcome else RunStatus.LOST
        error = (outcome or {}).get("error") or (None if outcome else {
            "type": "Lost", "message": "the runner stopped and the worker ended without reporting an outcome"})
        samples = [MemorySample(*row) for row in store.samples(rec.id)]
        summary = build_summary(RunEnd(rec.id, status, events, samples, phase_spans(events), outcome, error,
                                       (outcome or {}).get("phase"), "none", None, {"code": None},
                                       (samples[-1].t_s if samples else 0.0), SAMPLE_HZ))
        store.add_events(rec.id, [(e["seq"], e["t_s"], e["kind"],
                                   {k: v for k, v in e.items() if k not in ("seq", "t_s", "kind")}) for e in events])
        store.finish_run(rec.id, status, summary)
        release_leftovers(rec.run_dir)
        touched.append(rec.id)
    return touched








def _read_events_file(rec: RunRecord) -> list[Event]:
    if not rec.run_dir:
        return []
    path = os.path.join(rec.run_dir, "events.jsonl")
    try:
        with open(path, "rb") as f:
            out = parse_lines(f, rec.created_at, rec.created_at, path)
    except FileNotFoundError:
        return []  # the worker never started writing: the run is finished from its row alone
    except OSError as e:
        log.warning("run %s: its event file could not be read (%s); finished without it", rec.id, e)
        return []
    for i, ev in enumerate(out):
        ev["seq"] = i
    return out
