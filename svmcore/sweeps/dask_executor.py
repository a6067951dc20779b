"""The ``dask`` sweep executor: each run is one task on a dask.distributed cluster.

The app creates each run's row (queued) up front, submits one task per run
(``remote_run.run_on_worker``) needing one unit of the ``svmcore_run`` resource, so
a Dask worker runs one at a time, and writes what comes back into its store: the
start (host) from the task's ``started`` message, then the whole record.

A run whose Dask worker dies ends ``lost``; a cancelled one ``cancelled`` (with what it
measured, if it started: it kills its training worker within ``remote_run.POLL_S``); one
whose task raises (e.g. svmcore is not installed on the worker) ``failed``, with the error.
"""

from __future__ import annotations

import gc
import logging
import os
import queue as queue_mod
import threading
import time
import uuid

from svmcore.engine import procfs
from svmcore.engine.registry import watch_remote
from svmcore.engine.admission import Admitted
from svmcore.spec.config import RunConfig
from svmcore.spec.errors import SvmcoreError, first_line
from svmcore.spec.result import RunSummary
from svmcore.spec.scheduler import unreachable_reason
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store, StoreError
from svmcore.sweeps import remote_run
from svmcore.sweeps.remote_run import RESOURCE

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
WATCH_EVERY_S = 0.2
WORKER_HINT = f"start workers with: dask worker ADDRESS --nthreads 1 --resources {RESOURCE}=1"


class SchedulerUnreachable(SvmcoreError):
    """No usable Dask scheduler at the given address."""


class RemoteRun:
    """The app's handle on a run that a Dask worker runs: the same surface a sweep
    uses of a local ``runner.Run`` (run_id, status, summary, wait, is_finished)."""

    def __init__(self, run_id: int, config: RunConfig, label: str | None, future):
        self.run_id = run_id
        self.config = config
        self.label = label
        self.future = future
        self.status = RunStatus.QUEUED
        self.summary = RunSummary()
        self.host: str | None = None
        self.cancel_requested = False
        self._done = threading.Event()

    def wait(self, timeout: float | None = None) -> RunStatus:
        self._done.wait(timeout)
        return self.status

    def is_finished(self) -> bool:
        return self._done.is_set()


class DaskExecutor:
    """One sweep's runs on a Dask cluster: the one at ``scheduler``, or a LocalCluster
    of worker processes (one thread each) on this machine when no address is given."""

    kind = "dask"

    def __init__(self, store: Store, scheduler: str | None = None, n_workers: int | None = None):
        self.store = store
        self.scheduler = scheduler
        self.prefix = uuid.uuid4().hex[:12]
        self.runs: list[RemoteRun] = []
        self._cluster = None
        self._lock = threading.Lock()
        self._started: queue_mod.SimpleQueue = queue_mod.SimpleQueue()
        self._closed = False
        self._cancel_all = False
        if scheduler is None:
            self._cluster = _local_cluster(n_workers)
            address = self._cluster.scheduler_address
        else:
            address = scheduler.strip()
            if not address:
                raise SchedulerUnreachable("the Dask scheduler address is empty (e.g. tcp://HOST:8786)")
        try:
            self.client = _connect(address)
        except SchedulerUnreachable:
            self._close_cluster()
            raise
        try:
            self._check_workers(address)
        except SchedulerUnreachable:
            self.close()
            raise
        self.client.subscribe_topic(remote_run.topic(self.prefix), self._on_started)
        self._watch = threading.Thread(target=self._watch_loop, name=f"svmcore-dask-{self.prefix}", daemon=True)
        self._watch.start()

    def describe(self) -> dict:
        return {"executor": self.kind, "scheduler": self.scheduler or "a local cluster on this machine"}

    # ------------------------------------------------------------- runs
    def submit(self, launch: Admitted, sweep_id: int | None = None, label: str | None = None,
               extra_env: dict | None = None) -> RemoteRun:
        """Queue a run; it is in the store (status queued) when this returns. A Dask worker runs
        its config (its data, scans and forecast are that machine's)."""
        config = launch.config
        run_id = self.store.create_run(config.to_dict(), status=RunStatus.QUEUED, sweep_id=sweep_id, label=label,
                                       runner_ctime=procfs.create_time(os.getpid()))  # its host: when it starts
        watch_remote(self.store.home, run_id)
        future = self.client.submit(remote_run.run_on_worker, config.to_dict(), dict(extra_env or {}), self.prefix,
                                    run_id, key=f"svmcore-run-{self.prefix}-{run_id}", resources={RESOURCE: 1},
                                    retries=0, pure=False)
        run = RemoteRun(run_id, config, label, future)
        with self._lock:
            self.runs.append(run)
        return run

    def cancel(self, run_id: int) -> bool:
        run = next((r for r in self.runs if r.run_id == run_id), None)
        if run is None or run.is_finished():
            return False
        run.cancel_requested = True
        # the flag first: a task that starts after this check sees it before spawning
        self._set_event(remote_run.cancel_event(self.prefix, run_id))
        if run.status == RunStatus.QUEUED:
            run.future.cancel()
        return True

    def cancel_all(self) -> None:
        self._cancel_all = True
        self._set_event(remote_run.cancel_event(self.prefix))
        for run in list(self.runs):
            if not run.is_finished():
                run.cancel_requested = True
                if run.status == RunStatus.QUEUED:
                    run.future.cancel()

    def close(self) -> None:
        """Let go of the cluster: the scheduler's events of this sweep, the client, and
        the LocalCluster if this executor started one. Runs not finished are cancelled."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if any(not r.is_finished() for r in self.runs):
            self.cancel_all()
        try:
            from distributed import Event  # heavy, optional: Dask sweeps only

            names = [remote_run.cancel_event(self.prefix)] + [
                n for r in self.runs for n in (remote_run.started_event(self.prefix, r.run_id),
                                               remote_run.cancel_event(self.prefix, r.run_id))]
            for name in names:
                Event(name, client=self.client).clear()
            self.client.unsubscribe_topic(remote_run.topic(self.prefix))
        except Exception as e:  # the scheduler may be gone already; nothing of ours is left to clean there then
            log.warning("could not clear this sweep's events on the Dask scheduler: %s", first_line(e))
        try:
            self.client.close(timeout=5)
        except Exception as e:
            log.warning("could not close the Dask client: %s", first_line(e))
        self._close_cluster()

    # ------------------------------------------------------------- inside
    def _check_workers(self, address: str) -> None:
        if self._cluster is not None:
            self.client.wait_for_workers(1, timeout=60)
        workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
        if not workers:
            raise SchedulerUnreachable(f"the Dask scheduler at {address} has no workers; {WORKER_HINT}")
        if not any((w.get("resources") or {}).get(RESOURCE, 0) >= 1 for w in workers.values()):
            raise SchedulerUnreachable(f"no worker of the Dask scheduler at {address} offers the {RESOURCE} "
                                       f"resource (one run per worker at a time); {WORKER_HINT}")

    def _set_event(self, name: str) -> None:
        from distributed import Event  # heavy, optional: Dask sweeps only

        try:
            Event(name, client=self.client).set()
        except Exception as e:  # scheduler gone: its tasks are gone with it and end as lost
            log.warning("could not set the Dask event %s: %s", name, first_line(e))

    def _on_started(self, event) -> None:
        # called on the client's event loop: hand over, never touch the store here
        self._started.put(event[1])

    def _watch_loop(self) -> None:
        early: list[dict] = []  # started messages that came before submit() had recorded their run
        while True:
            while not self._started.empty():
                early.append(self._started.get())
            with self._lock:
                runs = {r.run_id: r for r in self.runs}
            for msg in list(early):
                run = runs.get(msg.get("run_id"))
                if run is None:
                    continue
                early.remove(msg)
                if not run.is_finished():
                    run.status = RunStatus.RUNNING
                    run.host = (msg.get("host") or {}).get("host")
                    try:
                        self.store.set_started_on(run.run_id, msg.get("host") or {})
                    except StoreError:
                        pass  # the outcome write records the host again
            for run in runs.values():
                if not run.is_finished() and run.future.done():
                    self._settle(run)
            if self._closed and all(r.is_finished() for r in runs.values()):
                return
            time.sleep(WATCH_EVERY_S)

    def _settle(self, run: RemoteRun) -> None:
        """Store the outcome of a run whose future is done."""
        record = _outcome(run, self._cancel_all)
        try:
            if not self.store.complete_imported(run.run_id, record):
                rec = self.store.get_run(run.run_id)  # someone recorded it first: keep theirs
                record = {"status": rec.status.value, "summary": rec.summary.to_dict()}
        except StoreError as e:
            record = dict(record, summary=dict(record.get("summary") or {}, store_error=str(e)))
        run.status = RunStatus(record["status"])
        run.summary = RunSummary.from_dict(dict(record.get("summary") or {}, run_id=run.run_id, status=run.status))
        run.host = (record.get("host") or {}).get("host") or run.host
        watch_remote(self.store.home, run.run_id, watching=False)
        run._done.set()

    def _close_cluster(self) -> None:
        if self._cluster is not None:
            try:
                self._cluster.close(timeout=10)
            except Exception as e:
                log.warning("could not close the local Dask cluster: %s", first_line(e))
            self._cluster = None


def _outcome(run: RemoteRun, cancel_all: bool) -> dict:
    """What a done future means for its run, as a record for ``Store.complete_imported``."""
    from distributed import KilledWorker  # heavy, optional: Dask sweeps only
    from distributed.comm.core import CommClosedError  # heavy, optional: Dask sweeps only

    future = run.future
    if future.status == "finished":
        try:
            return future.result()
        except Exception as e:  # the result could not be fetched: its worker went away
            return _record(RunStatus.LOST, "Lost",
                           f"its result could not be fetched from the Dask worker: {first_line(e)}")
    if future.status == "cancelled":
        if run.cancel_requested or cancel_all:
            return _record(RunStatus.CANCELLED, "Cancelled", "cancelled before it started")
        return _record(RunStatus.LOST, "Lost", "the Dask scheduler dropped it (the connection to it was lost)")
    if future.status == "error":
        try:
            exc = future.exception()
        except Exception as e:
            exc = e
        if isinstance(exc, (KilledWorker, CommClosedError)):
            return _record(RunStatus.LOST, "Lost", f"the Dask worker running it died ({type(exc).__name__})")
        return _record(RunStatus.FAILED, type(exc).__name__, f"the task failed on the Dask worker: {first_line(exc)}")
    return _record(RunStatus.LOST, "Lost", f"its Dask task ended as {future.status!r}")


def _record(status: RunStatus, kind: str, message: str) -> dict:
    return {"status": status.value, "samples": [], "events": [], "host": None,
            "summary": {"status": status.value, "error": {"type": kind, "message": message}}}


def _connect(address: str):
    """A Client of the scheduler at ``address``, or SchedulerUnreachable saying why not."""
    from distributed import Client  # heavy, optional: Dask sweeps only

    _probe(address)
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except Exception as e:  # timed out, not a scheduler, unknown scheme: all "cannot reach"
        reason = first_line(e)
    # A Client that failed to start closes itself when collected; if that happens while
    # another Client starts, distributed deadlocks on its loop lock. Collect it now.
    gc.collect()
    raise SchedulerUnreachable(f"cannot reach the Dask scheduler at {address}: {reason}")


def _probe(address: str) -> None:
    """One TCP connection to the scheduler's port, for a plain reason when there is
    none (distributed retries until its timeout and then only says it timed out)."""
    from distributed.comm import parse_address, parse_host_port  # heavy, optional: Dask sweeps only

    try:
        scheme, loc = parse_address(address)
        if scheme not in ("tcp", "tls"):
            return
        host, port = parse_host_port(loc)
    except ValueError as e:
        raise SchedulerUnreachable(f"cannot reach the Dask scheduler at {address}: {first_line(e)}") from None
    reason = unreachable_reason(host, port, CONNECT_TIMEOUT_S)
    if reason:
        raise SchedulerUnreachable(f"cannot reach the Dask scheduler at {address}: {reason}")


def _local_cluster(n_workers: int | None):
    """Worker processes (not threads: each run's worker is a child of one) with one
    thread and one run slot each."""
    import dask  # heavy, optional: Dask sweeps only
    from distributed import LocalCluster  # heavy, optional: Dask sweeps only

    try:
        # this scheduler is ours: a dead worker's task ends at once (KilledWorker)
        # instead of being run again only to report itself lost
        with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
            return LocalCluster(n_workers=n_workers or max(1, os.cpu_count() or 1), processes=True,
                                threads_per_worker=1, resources={RESOURCE: 1}, dashboard_address=None)
    except Exception as e:
        raise SchedulerUnreachable(f"could not start a local Dask cluster: {first_line(e)}") from None
