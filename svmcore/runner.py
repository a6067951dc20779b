"""Parent side of a run: spawn the worker, sample its memory, tail its events,
enforce the cap, cancel, and classify how it ended.

The monitor thread only fills buffers and writes the store; readers (the CLI's
progress bar, the dashboard's live fragment) take snapshots and never block it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from . import limits, procfs
from .config import RunConfig
from .store import RunRecord, RunStatus, Store, StoreError

log = logging.getLogger(__name__)

SAMPLE_HZ = 50
# OpenBLAS retries a failed allocation at import time forever: under a cap just above
# the interpreter's own needs, a worker can spin in its imports phase. Past this, it is oom.
IMPORTS_LIMIT_S = 30.0
EVENTS_EVERY_S = 0.1
FLUSH_EVERY_S = 0.5
MiB = 2**20
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_ACTIVE: dict[int, "Run"] = {}
_ACTIVE_LOCK = threading.Lock()
# (store home, run id) of runs that this process watches while a Dask worker runs them
_REMOTE: set[tuple[str, int]] = set()


@dataclass(frozen=True)
class MemorySample:
    """One 50 Hz reading: instantaneous RSS split into anonymous and file-backed pages,
    and the kernel's high-water mark (exact, but reset by the worker at each phase)."""

    t_s: float
    rss_bytes: int
    anon_bytes: int
    file_bytes: int
    hwm_bytes: int


@dataclass
class RunSnapshot:
    run_id: int
    status: RunStatus
    samples: list[MemorySample]
    events: list[dict]
    summary: dict
    phase: str | None
    elapsed_s: float


def active_runs() -> dict[int, "Run"]:
    with _ACTIVE_LOCK:
        return dict(_ACTIVE)


def get_active(run_id: int) -> "Run | None":
    with _ACTIVE_LOCK:
        return _ACTIVE.get(run_id)


def watch_remote(home: str, run_id: int, watching: bool = True) -> None:
    """Mark a run as owned by this process though no local worker runs it (``recover``
    leaves it alone), or unmark it once its outcome is stored."""
    with _ACTIVE_LOCK:
        (_REMOTE.add if watching else _REMOTE.discard)((home, run_id))


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
    def _forecast(self) -> None:
        if self.prediction is None:
            from .estimate import forecast
            self.prediction = forecast(self.config, self.home)

    def enqueue(self) -> int:
        """Record the run as queued (it exists in the store from now on) without starting it."""
        self._forecast()
        self.run_id = self.store.create_run(self.config.to_dict(), status=RunStatus.QUEUED,
                                            sweep_id=self.sweep_id, label=self.label)
        with _ACTIVE_LOCK:
            _ACTIVE[self.run_id] = self
        return self.run_id

    def start(self) -> "Run":
        if self.run_id is None:
            self._forecast()
            self.run_id = self.store.create_run(self.config.to_dict(), sweep_id=self.sweep_id, label=self.label)
            with _ACTIVE_LOCK:
                _ACTIVE[self.run_id] = self
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
        with _ACTIVE_LOCK:
            _ACTIVE.pop(self.run_id, None)
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
        with _ACTIVE_LOCK:
            _ACTIVE[run.run_id] = run
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
        phases = _phases(events)
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
            stderr = _tail(os.path.join(self.run_dir, "stderr.txt"))
            oom_kills = limits.cgroup_oom_kills(self._cgroup) if self._cgroup else 0
            capped = self.cap_kind != "none" and bool(self.cap_bytes)
            if oom_kills or limits.refused_memory(stderr, capped, last_phase):
                status = RunStatus.OOM
                last = stderr.strip().splitlines()[-1][:200] if stderr.strip() else ""
                if oom_kills:
                    error = {"type": "OutOfMemory", "message": "killed by the kernel's OOM killer at the cgroup cap"}
                elif capped:
                    error = {"type": "OutOfMemory", "cause": last,
                             "message": limits.cap_message(self.cap_kind, self.cap_bytes, self.config.threads,
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


def _tail(path: str, n: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _phases(events: list[dict]) -> list[dict]:
    """Phase spans with their exact peaks; a phase the worker never ended (killed in it)
    keeps its start and gets the end of the run, peak unknown (None)."""
    out: list[dict] = []
    for e in events:
        if e["kind"] == "phase_start":
            out.append({"name": e["phase"], "start_s": e["t_s"], "end_s": None, "wall_s": None,
                        "peak_rss_mb": None})
        elif e["kind"] == "phase_end" and out and out[-1]["name"] == e["phase"]:
            out[-1].update(end_s=e["t_s"], wall_s=e["wall_s"], peak_rss_mb=e["peak_rss_bytes"] / MiB)
    return out


def build_summary(run_id, status, cfg, events, samples, phases, outcome, error, last_phase,
                  cap_kind, cap_bytes, exit_info, wall_s, sample_hz) -> dict:
    worker = (outcome or {}).get("summary") or {}
    # wait4's ru_maxrss is not used: Linux seeds it at exec with the RSS of the process
    # that forked the worker (a 700 MiB dashboard would show in every run). The worker's
    # own VmHWM, read at every phase end and at 50 Hz, is the exact figure.
    phase_peaks = [p["peak_rss_mb"] for p in phases if p["peak_rss_mb"] is not None]
    hwm_max = max((s.hwm_bytes for s in samples), default=0)
    exact_bytes = max([hwm_max, (outcome or {}).get("peak_rss_bytes") or 0]
                      + [int(p * MiB) for p in phase_peaks])
    end_t = samples[-1].t_s if samples else wall_s
    for p in phases:
        if p["end_s"] is None:
            p["end_s"] = end_t
            p["wall_s"] = end_t - p["start_s"]
            # killed inside this phase: the kernel's high-water mark since the phase's
            # reset, as last read (exact up to the last 50 Hz reading)
            inside = [s.hwm_bytes for s in samples if s.t_s >= p["start_s"]]
            if inside:
                p["peak_rss_mb"] = max(inside) / MiB
    owner = max((p for p in phases if p["peak_rss_mb"] is not None), key=lambda p: p["peak_rss_mb"], default=None)
    floor = next((p["peak_rss_mb"] for p in phases if p["name"] == "imports"), None)
    final_eval = next((e for e in reversed(events) if e["kind"] == "eval" and e.get("final")), None)
    last_eval = next((e for e in reversed(events) if e["kind"] == "eval"), None)
    progress = next((e for e in reversed(events) if e["kind"] == "progress"), None)
    data_ev = next((e for e in events if e["kind"] == "data"), None)
    train_s = worker.get("train_s") or next((p["wall_s"] for p in phases if p["name"] == "train"), None)
    samples_seen = worker.get("samples") or (progress or {}).get("samples")
    summary = {
        "run_id": run_id,
        "status": status.value,
        "peak_rss_mb": exact_bytes / MiB if exact_bytes else None,
        "peak_rss_source": "the worker's kernel high-water mark (VmHWM at each phase end and at 50 Hz): exact",
        "peak_sampled_mb": max((s.rss_bytes for s in samples), default=0) / MiB if samples else None,
        "sample_hz": sample_hz,
        "n_samples": len(samples),
        "wall_s": wall_s,
        "train_s": train_s,
        "samples_per_s": (samples_seen / train_s) if samples_seen and train_s else None,
        "samples_seen": samples_seen,
        "accuracy": (final_eval or {}).get("accuracy"),
        "balanced_accuracy": (final_eval or {}).get("balanced_accuracy"),
        "last_accuracy": (last_eval or {}).get("accuracy"),
        "phases": phases,
        "peak_phase": owner["name"] if owner else None,
        "floor_mb": floor,
        "cap": cap_kind,
        "cap_mb": cap_bytes / MiB if cap_bytes else None,
        "phase": last_phase if status != RunStatus.COMPLETED else None,
        "error": error,
        "exit": exit_info,
    }
    for key in ("train_rows", "test_rows", "features", "train_data_bytes", "model_bytes", "threads", "batches",
                "epoch_samples_per_s", "spill", "f1", "f1_of", "baseline_accuracy", "per_class_recall", "confusion",
                "shuffle"):
        if key in worker:
            summary[key] = worker[key]
    if data_ev:
        summary["data"] = data_ev.get("info")
    return summary


def recover(store: Store) -> list[int]:
    """After a restart: runs still marked running whose runner is gone are re-attached if
    their worker lives (same pid *and* start time), else finished from their event file
    (its outcome if written, else ``lost``). Returns the ids it touched."""
    touched = []
    for rec in store.list_runs(status=[RunStatus.RUNNING, RunStatus.QUEUED]):
        if get_active(rec.id) is not None:
            continue
        with _ACTIVE_LOCK:
            if (store.home, rec.id) in _REMOTE:
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
        outcome = next((e for e in reversed(events) if e["kind"] == "outcome"), None)
        status = RunStatus(outcome["status"]) if outcome else RunStatus.LOST
        error = (outcome or {}).get("error") or (None if outcome else {
            "type": "Lost", "message": "the runner stopped and the worker ended without reporting an outcome"})
        samples = [MemorySample(*row) for row in store.samples(rec.id)]
        cfg = RunConfig(**rec.config)
        summary = build_summary(rec.id, status, cfg, events, samples, _phases(events), outcome, error,
                                (outcome or {}).get("phase"), "none", None, {"code": None},
                                (samples[-1].t_s if samples else 0.0), SAMPLE_HZ)
        store.add_events(rec.id, [(e["seq"], e["t_s"], e["kind"],
                                   {k: v for k, v in e.items() if k not in ("seq", "t_s", "kind")}) for e in events])
        store.finish_run(rec.id, status, summary)
        release_leftovers(rec.run_dir)
        touched.append(rec.id)
    return touched


def _run_cgroup(run_dir: str) -> str | None:
    try:
        with open(os.path.join(run_dir, "job.json")) as f:
            return json.load(f).get("cgroup")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, AttributeError) as e:
        log.warning("could not read %s to find the run's cgroup: %s", os.path.join(run_dir, "job.json"), e)
        return None


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path != folder and os.path.commonpath([path, folder]) == folder


def release_leftovers(run_dir: str | None, home: str | None = None, *, cgroup: str | None = None,
                      delete_folder: bool = False) -> None:
    """Release what an ended run leaves behind: the processes still in its cgroup and the
    cgroup itself (``cgroup``, else the one named in RUN_DIR/job.json), and a stream run's
    binary spill. With ``delete_folder`` (the run is being deleted), the whole run folder
    too, but only when it is inside ``home``'s runs folder. The one cleanup used by
    ``Run._finish``, ``recover``, ``Lab.delete`` and the CLI's ``runs delete``; what it
    cannot remove is logged, never raised."""
    if cgroup is None and run_dir:
        cgroup = _run_cgroup(run_dir)
    if cgroup and os.path.isdir(cgroup):
        if limits.is_run_cgroup(cgroup):
            for pid in limits.cgroup_pids(cgroup):  # descendants must not outlive the run
                if pid != os.getpid():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
            limits.remove_cgroup(cgroup)
        else:
            log.warning("left %s alone: it is not a run's cgroup (svmcore/run-*)", cgroup)
    if not run_dir:
        return

    def report(_func, path, exc_info):
        log.warning("could not remove %s: %s", path, exc_info[1])

    if delete_folder:
        if home and _inside(run_dir, os.path.join(home, "runs")):
            if os.path.isdir(run_dir):
                shutil.rmtree(run_dir, onerror=report)
            return
        log.info("kept the run folder %s: it is outside %s", run_dir, os.path.join(home or "", "runs"))
    spill = os.path.join(run_dir, "spill")
    if os.path.isdir(spill):  # a killed stream run leaves its binary spill behind
        shutil.rmtree(spill, onerror=report)


def _read_events_file(rec: RunRecord) -> list[dict]:
    out = []
    if not rec.run_dir:
        return out
    try:
        with open(os.path.join(rec.run_dir, "events.jsonl"), "rb") as f:
            for line in f:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                ev["t_s"] = ev.pop("ts", rec.created_at) - rec.created_at
                ev["seq"] = len(out)
                out.append(ev)
    except OSError:
        pass
    return out


def run_and_wait(store: Store, config: RunConfig, **kwargs) -> Run:
    run = Run(store, config, **kwargs).start()
    run.wait()
    return run
