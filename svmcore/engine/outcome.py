"""How a run ended, decided from what is known when its worker is gone: a pure function
of the worker's own outcome event, the exit status, the cancel and watchdog flags, the
tail of its stderr, the cgroup's OOM-kill count and the free space on the run folder's disk
(tested with ==, no process needed)."""

from __future__ import annotations

from dataclasses import dataclass

from svmcore.data import disk
from svmcore.spec import outcomes
from svmcore.spec.events import OUTCOME, PHASE_START, Event
from svmcore.spec.status import RunStatus

IMPORTS_LIMIT_S = 30.0  # see runner: a worker still importing after this under a cap is oom


@dataclass(frozen=True)
class Ending:
    """What the engine knows when the worker is gone."""

    exit_info: dict  # {"code": int | None} or {"signal": "SIGKILL"}
    cancelled: bool = False
    stuck_in_imports: bool = False
    stderr_tail: str = ""
    oom_kills: int = 0
    cap_kind: str = "none"
    cap_bytes: int | None = None
    threads: int = 1
    run_dir: str | None = None
    disk_free_bytes: int | None = None  # on the run folder's disk when the worker was gone, its reserve still held


def classify(events: list[Event], ending: Ending) -> tuple[RunStatus, dict | None, str | None]:
    """(status, error, the phase it ended in)."""
    outcome = next((e for e in reversed(events) if e["kind"] == OUTCOME), None)
    last_phase = next((e["phase"] for e in reversed(events) if e["kind"] == PHASE_START), None)
    error = None
    if outcome is not None and outcome["status"] == RunStatus.COMPLETED:
        return RunStatus.COMPLETED, None, last_phase
    if ending.cancelled:
        return RunStatus.CANCELLED, {"type": "Cancelled", "message": "cancelled by the user"}, last_phase
    if ending.stuck_in_imports:
        return RunStatus.OOM, _stuck_in_imports(ending), last_phase
    if outcome is not None:
        status = RunStatus(outcome["status"])
        error = outcome.get("error")
        last_phase = outcome.get("phase") or last_phase
        if status == RunStatus.FAILED and ending.oom_kills and (error or {}).get("worker"):
            # a data-parallel run's Dask worker, killed by the kernel at the run's cgroup cap
            cap = f"the {ending.cap_bytes / 2**20:,.0f} MiB cgroup cap" if ending.cap_bytes else "the cgroup cap"
            status = RunStatus.OOM
            error = {"type": "OutOfMemory", "worker": error["worker"],
                     "message": f"{error['worker']} was killed by the kernel's OOM killer at {cap} "
                                f"{error.get('doing') or ''}".rstrip() + "; raise the cap or use fewer workers"}
    else:
        stderr = ending.stderr_tail.strip()
        last = stderr.splitlines()[-1] if stderr else ""
        capped = ending.cap_kind != "none" and bool(ending.cap_bytes)
        if ending.oom_kills or outcomes.refused_memory(ending.stderr_tail, capped, last_phase):
            status = RunStatus.OOM
            if ending.oom_kills:
                error = {"type": "OutOfMemory", "message": "killed by the kernel's OOM killer at the cgroup cap"}
            elif capped:
                error = {"type": "OutOfMemory", "cause": last[:200],
                         "message": outcomes.cap_message(ending.cap_kind, ending.cap_bytes, ending.threads,
                                                         last_phase, f"the worker's last words: {last[:200]}")}
            else:
                error = {"type": "OutOfMemory", "message": f"out of memory (the worker's last words: {last[:200]})"}
        elif _disk_was_full(ending) and "signal" not in ending.exit_info:
            # it could not write its outcome (nor, often, its last words): the disk it writes on is full
            status = RunStatus.FAILED
            error = {"type": "DiskFull", "bad_input": True, "message": disk.full_text(
                ending.run_dir, "the worker could not write its files", ending.disk_free_bytes)}
        elif "signal" in ending.exit_info:
            status = RunStatus.FAILED
            error = {"type": "Signal", "message": f"the worker was killed by {ending.exit_info['signal']}",
                     "signal": ending.exit_info["signal"]}
        elif ending.exit_info.get("code") is None:
            status = RunStatus.LOST
            error = {"type": "Lost", "message": "the worker ended without reporting an outcome"}
        else:
            status = RunStatus.FAILED
            error = {"type": "Exit", "message": f"the worker exited with code {ending.exit_info['code']}"
                     + (f": {last}" if last else "")}
    if status == RunStatus.OOM and error is None:
        error = {"type": "MemoryError", "message": "out of memory"}
    return status, error, last_phase


def _disk_was_full(ending: Ending) -> bool:
    return ending.disk_free_bytes is not None and ending.disk_free_bytes < disk.NEARLY_FULL_BYTES


def _stuck_in_imports(ending: Ending) -> dict:
    """OpenBLAS retrying a refused allocation forever at import time: the same cap, the same threads
    as when the kernel's refusal reaches Python (which of the two happens is a matter of timing)."""
    with_threads = f" with {ending.threads} threads" if ending.threads > 1 else ""
    error = {"type": "OutOfMemory", "message": (
        f"the libraries could not start under {outcomes.cap_name(ending.cap_kind, ending.cap_bytes)} (still importing "
        f"after {IMPORTS_LIMIT_S:.0f} s: OpenBLAS retries a failed allocation forever); it is below what Python, numpy "
        f"and scikit-learn need{with_threads}: {outcomes.cap_fix(ending.cap_kind, ending.threads)}")}
    stderr = ending.stderr_tail.strip()
    if stderr:
        error["cause"] = stderr.splitlines()[-1][:200]
    return error
