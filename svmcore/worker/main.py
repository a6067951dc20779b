"""The child process that trains: ``python -m svmcore.worker RUN_DIR``.

It reads RUN_DIR/job.json, sets its threads and memory cap *before* importing
numpy, then trains, writing JSON-lines events to RUN_DIR/events.jsonl: phase start
and end (with the kernel's exact peak of each phase), progress, held-out accuracy,
and finally its own outcome, so a parent that restarts can still learn how it ended.

Only the standard library (and svmcore's own light modules) is imported at module
level: the worker's floor is measured as the imports phase.
"""

from __future__ import annotations

import json
import os
import sys
import time

# Light (standard library only) and imported now: under a tight cap, an import inside
# the failure handler can itself fail with MemoryError and lose the outcome.
from svmcore.data import disk
from svmcore.spec.errors import SvmcoreError
from svmcore.spec.events import OUTCOME, PHASE_END, PHASE_START, STARTED
from svmcore.spec.outcomes import cap_message, exception_refused_memory
from svmcore.spec.status import RunStatus
from svmcore.worker.faults import Faults
from svmcore.data.proc_status import status_kib

THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS")


class Events:
    def __init__(self, path: str):
        self.f = open(path, "a", buffering=1)

    def emit(self, kind: str, **data) -> None:
        data["kind"] = kind
        data["ts"] = time.time()
        self.f.write(json.dumps(data) + "\n")
        self.f.flush()


def reset_peak() -> bool:
    """Reset this process's VmHWM to its current RSS (kernel clear_refs '5'); False where the
    kernel does not allow it (the phase's peak is then the process's peak so far)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class Phases:
    """Phase bookkeeping: the exact peak of each phase from VmHWM, reset between phases."""

    def __init__(self, events: Events, faults: Faults):
        self.events = events
        self.faults = faults
        self.current: str | None = None
        self.started = 0.0
        self.cpu_started = 0.0
        self.walls: dict[str, float] = {}
        self.peak_kib = 0

    def start(self, name: str) -> None:
        if self.current:
            self.end()
        reset_peak()
        self.current = name
        self.started = time.monotonic()
        self.cpu_started = time.process_time()
        self.events.emit(PHASE_START, phase=name, rss_bytes=status_kib(b"VmRSS:")[0] * 1024)
        self.faults.fire(name)

    def end(self) -> None:
        if not self.current:
            return
        [hwm] = status_kib(b"VmHWM:")
        self.peak_kib = max(self.peak_kib, hwm)
        wall = time.monotonic() - self.started
        self.walls[self.current] = wall
        self.events.emit(PHASE_END, phase=self.current, wall_s=wall, peak_rss_bytes=hwm * 1024,
                         rss_bytes=status_kib(b"VmRSS:")[0] * 1024, cpu_s=time.process_time() - self.cpu_started)
        self.current = None


class _NoPandas:
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not loaded in the worker (it would raise the floor by ~60 MiB)")
        return None


def _apply_limits(job: dict) -> None:
    threads = str(job["config"]["threads"])
    for var in THREAD_ENV:
        os.environ[var] = threads
    if job.get("cgroup"):
        with open(os.path.join(job["cgroup"], "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    if job.get("cap_kind") == "rlimit":
        import resource
        cap = int(job["cap_bytes"])
        resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))


def _die_with_parent(parent_pid: int) -> None:
    """Be killed when the process that started this one dies (Linux's parent-death
    signal). Set for runs on a Dask worker: if that worker dies, nobody is left to
    record or cancel this run, so it must not go on using the host."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)  # 9 = SIGKILL
    if os.getppid() != parent_pid:  # it died before the signal was armed
        os._exit(1)


def _run(job: dict, events: Events, phases: Phases):
    from svmcore.worker import training

    return training.run(job, events, phases)


def main(run_dir: str) -> int:
    if os.environ.get("SVMCORE_DIE_WITH_PARENT"):
        _die_with_parent(int(os.environ["SVMCORE_DIE_WITH_PARENT"]))
    with open(os.path.join(run_dir, "job.json")) as f:
        job = json.load(f)
    job.setdefault("run_dir", run_dir)
    _apply_limits(job)
    # scikit-learn imports pandas when it is installed: ~60 MiB of floor that no code
    # path here uses. Refuse the import (scikit-learn treats pandas as optional).
    sys.meta_path.insert(0, _NoPandas())
    events = Events(os.path.join(run_dir, "events.jsonl"))
    faults = Faults(os.environ.get("SVMCORE_FAULT", ""),
                    {"dataset": job["config"].get("dataset"), "test": job["config"].get("test_file")})
    phases = Phases(events, faults)
    events.emit(STARTED, pid=os.getpid(), cap_kind=job.get("cap_kind"), cap_bytes=job.get("cap_bytes"))
    status, error = RunStatus.COMPLETED, None
    summary: dict = {}
    unexpected: BaseException | None = None
    try:
        phases.start("imports")
        from svmcore.spec.config import validate

        cfg = validate(job["config"])
        from svmcore.worker import floor

        floor.every_run()
        if cfg.lean:  # numpy and the native library only: set before anything loads hashlib
            floor.lean()
        run = _run
        if cfg.trace:  # from here: the libraries' imports are traced too
            from svmcore.worker import tracing

            run = tracing.traced(run_dir, _run)
        summary = run(job, events, phases).to_dict()
    except BaseException as e:  # the outcome event must be written whatever happened
        message = str(e) or type(e).__name__
        if getattr(e, "parallel", None):  # a data-parallel run's memory until it failed
            summary = {"parallel": e.parallel}
        capped = bool(job.get("cap_kind")) and bool(job.get("cap_bytes"))
        if exception_refused_memory(e, capped, phases.current):
            status = RunStatus.OOM
            if capped:
                cause = type(e).__name__ + (f": {e}" if str(e) else "")
                error = {"type": "OutOfMemory", "cause": cause,
                         "message": cap_message(job["cap_kind"], int(job["cap_bytes"]),
                                                int(job["config"].get("threads") or 1), phases.current, cause)}
            else:
                error = {"type": type(e).__name__, "message": str(e) or "out of memory"}
        elif disk.is_disk_full(e):  # a write no copy of ours turned into its own DiskFull line
            status = RunStatus.FAILED
            folder = os.path.dirname(os.path.abspath(e.filename)) if e.filename else run_dir
            error = {"type": "DiskFull", "bad_input": True, "message": disk.full_text(
                folder, f"a write was refused ({e.strerror or e})", disk.free_bytes(folder))}
        else:
            status = RunStatus.FAILED
            error = {"type": type(e).__name__, "message": message, "bad_input": isinstance(e, SvmcoreError),
                     **getattr(e, "details", {})}
        if not isinstance(e, (SvmcoreError, MemoryError)) and not disk.is_disk_full(e):
            unexpected = e
    phase = phases.current
    phases.end()
    events.emit(OUTCOME, status=status.value, phase=phase if status != RunStatus.COMPLETED else None, error=error,
                summary=summary, peak_rss_bytes=phases.peak_kib * 1024)
    if unexpected is not None:  # after the outcome: printing can itself run out of memory under a cap
        import traceback
        traceback.print_exception(unexpected)
    # the CLI's codes: 2 for a failure the input caused (``bad_input``), as ``svmcore run`` exits then
    return {RunStatus.COMPLETED: 0, RunStatus.OOM: 3}.get(status, 2 if (error or {}).get("bad_input") else 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
