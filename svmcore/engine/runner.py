"""Parent side of a run: spawn the worker, sample its memory, tail its events,
enforce the cap, cancel, and classify how it ended.

The monitor thread only fills buffers and writes the store; readers (the CLI's
progress bar, the dashboard's live fragment) take snapshots and never block it.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from svmcore.engine import limits, procfs, registry
from svmcore.engine.hostinfo import this_host
from svmcore.engine.leftovers import release_leftovers
from svmcore.engine.summary import MemorySample, build_summary, phase_spans, tail_text
from svmcore.spec import outcomes
from svmcore.spec.config import RunConfig
from svmcore.spec.units import MiB
from svmcore.store.sqlite import RunRecord, RunStatus, Store, StoreError

log = logging.getLogger(__name__)

SAMPLE_HZ = 50
# OpenBLAS retries a failed allocation at import time forever: under a cap just above
# the interpreter's own needs, a worker can spin in its imports phase. Past this, it is oom.
IMPORTS_LIMIT_S = 30.0
EVENTS_EVERY_S = 0.1
FLUSH_EVERY_S = 0.5
# the folder holding the svmcore package: the worker imports it from there
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class RunSnapshot:
    run_id: int
    status: RunStatus
    samples: list[MemorySample]
    events: list[dict]
    summary: dict
    phase: str | None
    elapsed_s: float


def _runner_identity() -> dict:
    """This machine and this process, as a new run's row records them."""
    return {"host": this_host(), "runner_ctime": procfs.create_time(os.getpid())}


def resolve_cap(cfg: RunConfig) -> tuple[str, int | None]:
    """('none' | 'rlimit' | 'cgroup', cap in bytes)."""
    if cfg.memory_cap_mb is None:
        return "none", None
    kind = cfg.cap_kind
    if kind == "auto":
        kind = "cgroup" if limits.cgroup_available() else "rlimit"
    return kind, cfg.memory_cap_mb * MiB


class Run:
    """A live run. ``start()`` spawns the worker; ``wait()`` blocks until it ended and
    its outcome is in the store; ``cancel()`` kills it and every descendant."""

    def __init__(self, store: Store, config: RunConfig, sweep_id: int | None = None,
                 extra_env: dict[str, str | None] | None = None, sample_hz: int = SAMPLE_HZ, label: str | None = None,
                 prediction: dict | None = None):
        self.store = store
        self.prediction = prediction  # the memory model's forecast, kept beside the measurement
        self.home = store.home
        self.config = config
        self.sweep_id = sweep_id
        self.extra_env = extra_env or {}
        self.sample_hz = sample_hz
        self.label = label
        self.run_id: int | None = None
        self.status = RunStatus.QUEUED
        self.summary: dict = {}
        self.cap_kind, self.cap_bytes = resolve_cap(config)
        self._samples: list[MemorySample] = []
        self._events: list[dict] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._cancel = threading.Event()
        self._phase: str | None = None
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen | None = None
        self._cgroup: str | None = None
        self._t0 = 0.0
        self._is_child = True
        self.pid: int | None = None
        self.run_dir: str | None = None
        self.store_error: str | None = None

    # ------------------------------------------------------------- public
    def enqueue(self) -> int:
        """Record the run as queued (it exists in the store from now on) without starting it."""
        self.run_id = self.store.create_run(self.config.to_dict(), status=RunStatus.QUEUED, sweep_id=self.sweep_id,
                                            label=self.label, **_runner_identity())
        registry.register(self)
        return self.run_id

    def start(self) -> "Run":
        if self.run_id is None:
            self.run_id = self.store.create_run(self.config.to_dict(), sweep_id=self.sweep_id, label=self.label,
                                                **_runner_identity())
            registry.register(self)
        if self._cancel.is_set():  # cancelled while queued
            self.status = RunStatus.CANCELLED
            self.summary = {"run_id": self.run_id, "status": "cancelled",
                            "error": {"type": "Cancelled", "message": "cancelled before it started"}}
            self._finish()
            return self
        try:
            self.run_dir = os.path.join(self.home, "runs", str(self.run_id))
            os.makedirs(self.run_dir, exist_ok=True)
            self._cgroup = limits.create_cgroup(f"run-{self.run_id}-{uuid.uuid4().hex[:6]}",
                                                self.cap_bytes if self.cap_kind == "cgroup" else None)
            if self.cap_kind == "cgroup" and self._cgroup is None:
                self.cap_kind = "rlimit"  # the machine refused the cgroup: still cap the worker
            job = {"config": self.config.to_dict(), "cache_dir": os.path.join(self.home, "cache"),
                   "cgroup": self._cgroup, "cap_kind": None if self.cap_kind == "none" else self.cap_kind,
                   "cap_bytes": self.cap_bytes}
            with open(os.path.join(self.run_dir, "job.json"), "w") as f:
                json.dump(job, f)
            env = dict(os.environ)
            env["PYTHONPATH"] = _PACKAGE_PARENT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
            for k, v in self.extra_env.items():  # None: leave the variable out
                if v is None:
                    env.pop(k, None)
                else:
                    env[k] = v
            with open(os.path.join(self.run_dir, "stdout.txt"), "wb") as out, \
                    open(os.path.join(self.run_dir, "stderr.txt"), "wb") as err:
                self._t0 = time.time()
                self._proc = subprocess.Popen([sys.executable, "-m", "svmcore.worker", self.run_dir],
                                              stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                              start_new_session=True, cwd=self.run_dir, env=env)
            self.pid = self._proc.pid
            self.status = RunStatus.RUNNING
            try:
                self.store.set_process(self.run_id, self.run_dir, self.pid, procfs.create_time(self.pid),
                                       os.getpid(), procfs.create_time(os.getpid()))
            except StoreError as e:  # the worker runs anyway; the monitor keeps retrying the store
                self.store_error = str(e)
        except OSError as e:  # could not write the run folder or spawn the worker
            self._fail_to_start(f"the run could not start: {e.strerror or e}")
            return self
        self._thread = threading.Thread(target=self._monitor, name=f"svmcore-run-{self.run_id}", daemon=True)
        self._thread.start()
        return self

    def _fail_to_start(self, message: str) -> None:
        self.status = RunStatus.FAILED
        self.summary = {"run_id": self.run_id, "status": "failed", "error": {"type": "StartError", "message": message}}
        self._finish()

    def _finish(self) -> None:
        """Record the outcome once (keeping one that another observer recorded first),
        release the cgroup, and wake every waiter."""
        try:
            if not self.store.finish_run(self.run_id, self.status, self.summary):
                rec = self.store.get_run(self.run_id)
                if rec is not None and rec.status.is_finished():
                    self.status, self.summary = rec.status, rec.summary
        except StoreError as e:
            self.store_error = str(e)
        release_leftovers(self.run_dir, cgroup=self._cgroup)
        registry.unregister(self.run_id)
        self._done.set()

    @classmethod
    def attach(cls, store: Store, record: RunRecord) -> "Run":
        """Monitor a worker started by a runner that has since died (found after a restart)."""
        run = cls(store, RunConfig(**record.config), sweep_id=record.sweep_id)
        run.run_id, run.run_dir, run.pid = record.id, record.run_dir, record.worker_pid
        run._is_child = False
        run.status = RunStatus.RUNNING
        run._t0 = record.created_at
        try:
            with open(os.path.join(run.run_dir, "job.json")) as f:
                job = json.load(f)
            run._cgroup = job.get("cgroup")
            run.cap_kind = job.get("cap_kind") or "none"
        except (OSError, ValueError):
            pass
        registry.register(run)
        run._thread = threading.Thread(target=run._monitor, name=f"svmcore-run-{run.run_id}", daemon=True)
        run._thread.start()
        return run

    def cancel(self) -> None:
        self._cancel.set()
        if getattr(self, "pid", None) and not self._done.is_set():
            self._kill_tree()

    def wait(self, timeout: float | None = None) -> RunStatus:
        self._done.wait(timeout)
        return self.status

    def is_finished(self) -> bool:
        return self._done.is_set()

    def snapshot(self, since_sample: int = 0, since_event: int = 0) -> RunSnapshot:
        with self._lock:
            return RunSnapshot(self.run_id, self.status, self._samples[since_sample:],
                               self._events[since_event:], dict(self.summary), self._phase,
                               time.time() - self._t0)

    # ------------------------------------------------------------- monitor
    def _monitor(self) -> None:
        period = 1.0 / self.sample_hz
        events_path = os.path.join(self.run_dir, "events.jsonl")
        offset = 0
        flushed_samples = flushed_events = 0
        next_events = next_flush = time.monotonic()
        exit_info: dict[str, Any] = {}
        killed = False
        try:
            while True:
                tick = time.monotonic()
                reading = procfs.read_status(self.pid)
                if reading is not None:
                    s = MemorySample(time.time() - self._t0, reading.rss_bytes, reading.anon_bytes,
                                     reading.file_bytes, reading.hwm_bytes)
                    with self._lock:
                        self._samples.append(s)
                if self._cancel.is_set() and not killed:
                    self._kill_tree()
                    killed = True
                if (not killed and self.cap_kind != "none" and self._phase in (None, "imports")
                        and time.time() - self._t0 > IMPORTS_LIMIT_S):
                    self._stuck_in_imports = True
                    self._kill_tree()
                    killed = True
                if tick >= next_events:
                    offset = self._tail_events(events_path, offset)
                    next_events = tick + EVENTS_EVERY_S
                if tick >= next_flush:
                    flushed_samples, flushed_events = self._flush(flushed_samples, flushed_events)
                    next_flush = tick + FLUSH_EVERY_S
                ended, exit_info = self._poll_exit()
                if ended:
                    break
                time.sleep(max(0.0, period - (time.monotonic() - tick)))
            self._tail_events(events_path, offset)
            self._kill_tree()  # descendants must not outlive the run
            self._classify(exit_info)
            self._flush(flushed_samples, flushed_events)
        except BaseException as e:  # never leave a run without an outcome
            self.summary.setdefault("error", {"type": type(e).__name__, "message": str(e)})
            self.status = RunStatus.FAILED
        finally:
            self._finish()

    def _poll_exit(self) -> tuple[bool, dict]:
        if self._is_child:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return True, {"code": None}
            if pid == 0:
                return False, {}
            if self._proc is not None:
                self._proc.returncode = os.waitstatus_to_exitcode(status)
            if os.WIFSIGNALED(status):
                info = {"signal": signal.Signals(os.WTERMSIG(status)).name}
            else:
                info = {"code": os.WEXITSTATUS(status)}
            return True, info
        alive = procfs.is_same_process(self.pid, self._created_time())
        return (not alive), {"code": None}

    def _created_time(self) -> float | None:
        if not hasattr(self, "_ctime"):
            rec = self.store.get_run(self.run_id)
            self._ctime = rec.worker_ctime if rec else None
        return self._ctime

    def _tail_events(self, path: str, offset: int) -> int:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            return offset
        end = data.rfind(b"\n")
        if end < 0:
            return offset
        new = []
        for line in data[:end].splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            ev["t_s"] = ev.pop("ts", time.time()) - self._t0
            new.append(ev)
        with self._lock:
            for ev in new:
                ev["seq"] = len(self._events)
                self._events.append(ev)
                if ev["kind"] == "phase_start":
                    self._phase = ev["phase"]
                elif ev["kind"] == "phase_end" and self._phase == ev["phase"]:
                    self._phase = None
        return offset + end + 1

    def _flush(self, n_samples: int, n_events: int) -> tuple[int, int]:
        with self._lock:
            samples = self._samples[n_samples:]
            events = self._events[n_events:]
        try:
            self.store.add_samples(self.run_id, [(s.t_s, s.rss_bytes, s.anon_bytes, s.file_bytes, s.hwm_bytes)
                                                 for s in samples])
            self.store.add_events(self.run_id, [(e["seq"], e["t_s"], e["kind"],
                                                 {k: v for k, v in e.items() if k not in ("seq", "t_s", "kind")})
                                                for e in events])
        except StoreError as e:  # keep monitoring; retry at the next flush
            self.store_error = str(e)
            return n_samples, n_events
        return n_samples + len(samples), n_events + len(events)

    def _kill_tree(self) -> None:
        pids = set()
        if self._cgroup:
            pids.update(limits.cgroup_pids(self._cgroup))
        if self.pid and (self._is_child or procfs.is_same_process(self.pid, self._created_time())):
            pids.add(self.pid)
            try:
                import psutil
                pids.update(c.pid for c in psutil.Process(self.pid).children(recursive=True))
            except Exception:
                pass
            pids.update(procfs.session_members(self.pid))
        pids.discard(os.getpid())
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    # ------------------------------------------------------------- outcome
    def _classify(self, exit_info: dict) -> None:
        with self._lock:
            events = list(self._events)
            samples = list(self._samples)
        outcome = next((e for e in reversed(events) if e["kind"] == "outcome"), None)
        phases = phase_spans(events)
        last_phase = next((e["phase"] for e in reversed(events) if e["kind"] == "phase_start"), None)
        error = None
        if outcome is not None and outcome["status"] == "completed":
            status = RunStatus.COMPLETED
        elif self._cancel.is_set():
            status, error = RunStatus.CANCELLED, {"type": "Cancelled", "message": "cancelled by the user"}
        elif getattr(self, "_stuck_in_imports", False):
            status = RunStatus.OOM
            error = {"type": "OutOfMemory", "message": f"the libraries could not start under the cap "
                     f"(still importing after {IMPORTS_LIMIT_S:.0f} s: OpenBLAS retries a failed allocation "
                     "forever); the cap is below what Python, numpy and scikit-learn need"}
        elif outcome is not None:
            status = RunStatus(outcome["status"])
            error = outcome.get("error")
            last_phase = outcome.get("phase") or last_phase
        else:
            stderr = tail_text(os.path.join(self.run_dir, "stderr.txt"))
            oom_kills = limits.cgroup_oom_kills(self._cgroup) if self._cgroup else 0
            capped = self.cap_kind != "none" and bool(self.cap_bytes)
            if oom_kills or outcomes.refused_memory(stderr, capped, last_phase):
                status = RunStatus.OOM
                last = stderr.strip().splitlines()[-1][:200] if stderr.strip() else ""
                if oom_kills:
                    error = {"type": "OutOfMemory", "message": "killed by the kernel's OOM killer at the cgroup cap"}
                elif capped:
                    error = {"type": "OutOfMemory", "cause": last,
                             "message": outcomes.cap_message(self.cap_kind, self.cap_bytes, self.config.threads,
                                                           last_phase, f"the worker's last words: {last}")}
                else:
                    error = {"type": "OutOfMemory", "message": f"out of memory (the worker's last words: {last})"}
            elif "signal" in exit_info:
                status = RunStatus.FAILED
                error = {"type": "Signal", "message": f"the worker was killed by {exit_info['signal']}",
                         "signal": exit_info["signal"]}
            elif exit_info.get("code") is None:
                status = RunStatus.LOST
                error = {"type": "Lost", "message": "the worker ended without reporting an outcome"}
            else:
                status = RunStatus.FAILED
                last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
                error = {"type": "Exit", "message": f"the worker exited with code {exit_info['code']}"
                         + (f": {last}" if last else "")}
        if status == RunStatus.OOM and error is None:
            error = {"type": "MemoryError", "message": "out of memory"}
        self.status = status
        self.summary = build_summary(self.run_id, status, self.config, events, samples, phases,
                                     outcome, error, last_phase, self.cap_kind, self.cap_bytes, exit_info,
                                     time.time() - self._t0, self.sample_hz)
        if self._cgroup:
            peak = limits.cgroup_peak_bytes(self._cgroup)
            if peak:
                self.summary["cgroup_peak_mb"] = peak / MiB
        if self.prediction:
            self.summary["prediction"] = self.prediction


















def run_and_wait(store: Store, config: RunConfig, **kwargs) -> Run:
    run = Run(store, config, **kwargs).start()
    run.wait()
    return run
