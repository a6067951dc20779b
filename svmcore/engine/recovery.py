"""After a restart: re-attach live workers, finish dead ones from their event files
(``Run.finish_unwatched``), and release what a run leaves behind (its cgroup, its spill,
its folder)."""

from __future__ import annotations

import logging
import os

from svmcore.engine import procfs, registry
from svmcore.engine.leftovers import release_leftovers
from svmcore.engine.runner import Run
from svmcore.spec.result import RunError, RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store

log = logging.getLogger(__name__)


def recover(store: Store) -> list[int]:
    """After a restart: runs still marked running whose runner is gone are re-attached if
    their worker lives (same pid *and* start time), else finished from their event file
    (its outcome if written, else as its cgroup and stderr tell, else ``lost``), with the cap
    and start its job file recorded. Returns the ids it touched."""
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
        if not rec.worker_pid or not rec.run_dir:
            why = ("queued when its runner stopped; never started" if rec.status == RunStatus.QUEUED else
                   "its runner stopped before the worker was recorded")
            store.finish_run(rec.id, RunStatus.LOST, RunSummary(rec.id, RunStatus.LOST, error=RunError("Lost", why)))
            release_leftovers(rec.run_dir)
        elif procfs.is_same_process(rec.worker_pid, rec.worker_ctime):
            Run.attach(store, rec)
        else:
            Run.finish_unwatched(store, rec)
        touched.append(rec.id)
    return touched
