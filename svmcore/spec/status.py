"""How a run stands: ``RunStatus``, written by the worker into its outcome event, decided by
the engine, kept by the store and read by every front end."""

from __future__ import annotations

from enum import Enum


class RunStatus(str, Enum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    OOM = "oom"
    CANCELLED = "cancelled"
    LOST = "lost"
    UNREADABLE = "unreadable"  # the store's row holds no status it can read (``RunRecord.damage`` says how)

    def is_finished(self) -> bool:
        return self not in (RunStatus.QUEUED, RunStatus.RUNNING)
