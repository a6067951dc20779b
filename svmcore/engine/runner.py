"""Parent side of a run: ``Run`` spawns the worker (``process``), samples its memory at
50 Hz and tails its events (``monitor``), enforces the cap, cancels, and records how it
ended (``outcome``, ``summary``) in the store.

The monitor thread only fills buffers and writes the store; readers take snapshots.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass, replace

from svmcore.data import disk
from svmcore.engine import interrupts, limits, procfs, registry, traces
from svmcore.engine.admission import Admitted
from svmcore.engine.hostinfo import this_host
from svmcore.engine.leftovers import hold_reserve, read_job, release_leftovers
from svmcore.engine.monitor import Monitor
from svmcore.engine.outcome import IMPORTS_LIMIT_S, Ending, classify
from svmcore.engine.process import WorkerProcess
from svmcore.engine.summary import MemorySample, RunEnd, build_summary, tail_text, train_pass_ends
from svmcore.spec import events
from svmcore.spec.config import RunConfig
from svmcore.spec.events import OUTCOME, Event
from svmcore.spec.monitor import SAMPLE_HZ
from svmcore.spec.result import RunError, RunSummary
from svmcore.spec.status import RunStatus
from svmcore.spec.units import MiB
from svmcore.store.records import RunRecord
from svmcore.store.sqlite import Store, StoreError

log = logging.getLogger(__name__)

EVENTS_EVERY_S = 0.1
FLUSH_EVERY_S = 0.5


@dataclass(frozen=True)
class RunSnapshot:
    run_id: int
    status: RunStatus
    samples: list[MemorySample]
    events: list[Event]
    summary: RunSummary
    phase: str | None
    elapsed_s: float


def resolve_cap(cfg: RunConfig) -> tuple[str, int | None]:
    """('none' | 'rlimit' | 'cgroup', cap in bytes)."""
    if cfg.memory_cap_mb is None:
        return "none", None
    kind = cfg.cap_kind
    if kind == "auto":
        kind = "cgroup" if limits.cgroup_available() else "rlimit"
    return kind, cfg.memory_cap_mb * MiB


class Run:
    """A live run. ``start()`` spawns the worker; ``wait()`` blocks until it ended and its
    outcome is in the store; ``cancel()`` kills it and every descendant. ``launch`` is the
    admitted launch (``admission.Admitted``: the worker receives its scans, and its forecast,
    made by the caller, is kept beside the measurement), or a bare config."""

    def __init__(self, store: Store, launch: Admitted | RunConfig, sweep_id: int | None = None,
                 extra_env: dict[str, str | None] | None = None, sample_hz: int = SAMPLE_HZ, label: str | None = None):
        self.store = store
        self.home = store.home
        self.launch = launch if isinstance(launch, Admitted) else Admitted(launch)
        self.config = self.launch.config
        self.prediction = self.launch.prediction
        self.sweep_id = sweep_id
        self.extra_env = extra_env or {}
        self.sample_hz = sample_hz
        self.label = label
        self.run_id: int | None = None
        self.run_dir: str | None = None
        self.status = RunStatus.QUEUED
        self.summary = RunSummary()
        self.cap_kind, self.cap_bytes = resolve_cap(self.config)
        self.worker: WorkerProcess | None = None
        self.monitor: Monitor | None = None
        self.store_error: str | None = None  # the last store write that failed (the run goes on)
        self.recorded = False  # its outcome is in the store
        self._t0 = 0.0
        self._done = threading.Event()
        self._cancel = threading.Event()
        self._stuck_in_imports = False
        self._thread: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return self.worker.pid if self.worker else None

    @property
    def started_at(self) -> float:
        return self._t0

    # ------------------------------------------------------------- public
    def enqueue(self, status: RunStatus = RunStatus.QUEUED) -> int:
        """Record the run (it exists in the store from now on), with this machine and this process as its
        runner; queued: without starting it."""
        self.run_id = self.store.create_run(self.config.to_dict(), status=status, sweep_id=self.sweep_id,
                                            label=self.label, host=this_host(),
                                            runner_ctime=procfs.create_time(os.getpid()))
        registry.register(self)
        return self.run_id

    def start(self) -> "Run":
        with interrupts.shielded():  # a signal never leaves a row without its worker, or a worker unwatched
            return self._start()

    def _start(self) -> "Run":
        if self.run_id is None:
            self.enqueue(RunStatus.RUNNING)
        if self._cancel.is_set():  # cancelled while queued
            self.status = RunStatus.CANCELLED
            self.summary = RunSummary(self.run_id, RunStatus.CANCELLED,
                                      error=RunError("Cancelled", "cancelled before it started"))
            self._finish()
            return self
        try:
            self.run_dir = os.path.join(self.home, "runs", str(self.run_id))
            os.makedirs(self.run_dir, exist_ok=True)
            hold_reserve(self.run_dir)
            cgroup = limits.create_cgroup(f"run-{self.run_id}-{uuid.uuid4().hex[:6]}",
                                          self.cap_bytes if self.cap_kind == "cgroup" else None)
            if self.cap_kind == "cgroup" and cgroup is None:
                self.cap_kind = "rlimit"  # the machine refused the cgroup: still cap the worker
            self._t0 = time.time()
            job = {"config": self.config.to_dict(), "cache_dir": os.path.join(self.home, "cache"), "cgroup": cgroup,
                   "cap_kind": None if self.cap_kind == "none" else self.cap_kind, "cap_bytes": self.cap_bytes,
                   "started_at": self._t0,  # whoever finishes the run after a restart times it from here
                   **self.launch.job_scans()}
            self.worker = WorkerProcess.spawn(self.run_dir, job, self.extra_env)
            self.status = RunStatus.RUNNING
            try:
                self.store.set_process(self.run_id, self.run_dir, self.worker.pid, self.worker.created,
                                       os.getpid(), procfs.create_time(os.getpid()))
            except StoreError as e:  # the worker runs anyway; the monitor keeps retrying the store
                self.store_error = str(e)
        except OSError as e:  # could not write the run folder or spawn the worker
            if disk.is_disk_full(e):
                self._fail_to_start(disk.full_text(self.run_dir, "the run could not start: no room for its files",
                                                   disk.free_bytes(self.run_dir)), bad_input=True)
            else:
                self._fail_to_start(f"the run could not start: {e.strerror or e}")
            return self
        self._watch()
        return self

    @classmethod
    def attach(cls, store: Store, record: RunRecord) -> "Run":
        """Monitor a worker started by a runner that has since died (found after a restart)."""
        run = cls._resume(store, record)
        registry.register(run)
        run._watch()
        return run

    @classmethod
    def finish_unwatched(cls, store: Store, record: RunRecord) -> "Run":
        """Record how a run ended whose worker ended while no runner watched it (found after a
        restart): from its event file, the samples stored until its runner died, its job file
        (the cap, the cgroup's OOM kills and peak) and its stderr, as a watched run's end is."""
        run = cls._resume(store, record)
        run.monitor.tail_events()
        b = run.monitor.buffers()
        # the worker's end is its last word (the outcome event comes last), else its last sample
        ended_s = max([e["t_s"] for e in b.events] + [s.t_s for s in b.samples] + [0.0])
        run._record_outcome({"code": None}, wall_s=ended_s)
        run.store_error = run.monitor.flush(store, run.run_id)
        run._finish()
        return run

    @classmethod
    def _resume(cls, store: Store, record: RunRecord) -> "Run":
        """A run of an earlier runner as its job file and the store describe it: its cap (kind and
        size), its cgroup, the worker's start (the clock of its samples and events) and the samples
        its runner stored, so that its summary covers the whole run."""
        run = cls(store, RunConfig(**record.config), sweep_id=record.sweep_id, label=record.label)
        run.run_id, run.run_dir = record.id, record.run_dir
        run.status = RunStatus.RUNNING
        job = read_job(run.run_dir, run.run_id)
        run.cap_kind = job.get("cap_kind") or "none"
        run.cap_bytes = job.get("cap_bytes") if run.cap_kind != "none" else None
        run._t0 = job.get("started_at") or record.created_at
        run.worker = WorkerProcess(record.worker_pid, record.worker_ctime, child=False, cgroup=job.get("cgroup"))
        run.monitor = run._new_monitor()
        run.monitor.preload([MemorySample(*row) for row in store.samples(run.run_id)])
        return run

    def cancel(self) -> None:
        self._cancel.set()
        if self.worker is not None and not self._done.is_set():
            self.worker.kill_tree()

    def wait(self, timeout: float | None = None) -> RunStatus:
        self._done.wait(timeout)
        return self.status

    def is_finished(self) -> bool:
        return self._done.is_set()

    def snapshot(self) -> RunSnapshot:
        b = self.monitor.buffers() if self.monitor else None
        return RunSnapshot(self.run_id, self.status, b.samples if b else [], b.events if b else [],
                           self.summary, b.phase if b else None, time.time() - self._t0)

    # ------------------------------------------------------------- monitor
    def _watch(self) -> None:
        if self.monitor is None:
            self.monitor = self._new_monitor()
        self._thread = threading.Thread(target=self._monitor, name=f"svmcore-run-{self.run_id}", daemon=True)
        self._thread.start()

    def _new_monitor(self) -> Monitor:
        """The run's buffers; under a cgroup cap each sample reads the charge the cap limits too."""
        capped = self.worker.cgroup if self.worker and self.cap_kind == "cgroup" else None
        return Monitor(os.path.join(self.run_dir or "", "events.jsonl"), self._t0, cgroup=capped)

    def _monitor(self) -> None:
        period = 1.0 / self.sample_hz
        next_events = next_flush = time.monotonic()
        exit_info: dict = {}
        killed = False
        try:
            while True:
                tick = time.monotonic()
                self.monitor.sample(self.worker.pid)
                if self._cancel.is_set() and not killed:
                    self.worker.kill_tree()
                    killed = True
                # (between phases, or after the last one, the phase is None too: past the imports it is not stuck)
                if (not killed and self.cap_kind != "none" and self.monitor.phase in (None, "imports")
                        and not self.monitor.imported and time.time() - self._t0 > IMPORTS_LIMIT_S):
                    self._stuck_in_imports = True
                    self.worker.kill_tree()
                    killed = True
                if tick >= next_events:
                    self.monitor.tail_events()
                    next_events = tick + EVENTS_EVERY_S
                if tick >= next_flush:
                    self.store_error = self.monitor.flush(self.store, self.run_id) or self.store_error
                    next_flush = tick + FLUSH_EVERY_S
                ended, exit_info = self.worker.poll_exit()
                if ended:
                    break
                time.sleep(max(0.0, period - (time.monotonic() - tick)))
            self.monitor.tail_events()
            self.worker.kill_tree()  # descendants must not outlive the run
            self._record_outcome(exit_info)
            # before the store's last writes: a full disk gets back the room the run's reserve and copies held
            release_leftovers(self.run_dir, cgroup=self.worker.cgroup)
            self.store_error = self.monitor.flush(self.store, self.run_id) or self.store_error
        except BaseException as e:  # never leave a run without an outcome
            log.exception("run %s: monitoring failed", self.run_id)
            self.summary = replace(self.summary, error=self.summary.error or RunError(type(e).__name__, str(e)))
            self.status = RunStatus.FAILED
        finally:
            self._finish()

    def _record_outcome(self, exit_info: dict, wall_s: float | None = None) -> None:
        b = self.monitor.buffers()
        cgroup = self.worker.cgroup
        ending = Ending(exit_info, cancelled=self._cancel.is_set(), stuck_in_imports=self._stuck_in_imports,
                        stderr_tail=tail_text(os.path.join(self.run_dir, "stderr.txt")),
                        oom_kills=limits.cgroup_oom_kills(cgroup) if cgroup else 0,
                        cap_kind=self.cap_kind, cap_bytes=self.cap_bytes, threads=self.config.threads,
                        run_dir=self.run_dir, disk_free_bytes=disk.free_bytes(self.run_dir))
        status, error, last_phase = classify(b.events, ending)
        outcome = events.last(b.events, OUTCOME)
        self.status = status
        # only a cgroup cap makes the group's peak a figure to compare: it counts the page cache
        # the run's reads brought in (1,177 MiB for an uncapped lean run whose exact peak was 108)
        self.summary = build_summary(RunEnd(self.run_id, status, b.events, b.samples, outcome, error, last_phase,
                                            self.cap_kind, self.cap_bytes, exit_info,
                                            time.time() - self._t0 if wall_s is None else wall_s, self.sample_hz,
                                            limits.cgroup_peak_bytes(cgroup) if cgroup and self.cap_kind == "cgroup"
                                            else None, self.prediction))
        if self.config.trace and self.run_dir:  # read once, here: the summary keeps the sites
            got = traces.read(self.run_dir, self._t0, self.summary.phases, b.samples,
                              [e["t_s"] for e in train_pass_ends(b.events)])
            self.summary = replace(self.summary, trace=got.trace,
                                   passes=tuple(replace(p, heap_mb=h) for p, h in
                                                zip(self.summary.passes or (), got.pass_heaps_mb)) or self.summary.passes)

    def _fail_to_start(self, message: str, bad_input: bool = False) -> None:
        self.status = RunStatus.FAILED
        self.summary = RunSummary(self.run_id, RunStatus.FAILED,
                                  error=RunError("StartError", message, bad_input=bad_input or None))
        self._finish()

    def _finish(self) -> None:
        """Record the outcome once (keeping one that another observer recorded first),
        release what the run leaves behind, and wake every waiter."""
        try:
            if not self.store.finish_run(self.run_id, self.status, self.summary):
                rec = self.store.get_run(self.run_id)
                if rec is not None and rec.status.is_finished():
                    self.status, self.summary = rec.status, rec.summary
            self.recorded = True
        except StoreError as e:
            self.store_error = str(e)
        release_leftovers(self.run_dir, cgroup=self.worker.cgroup if self.worker else None)
        registry.unregister(self)
        self._done.set()

