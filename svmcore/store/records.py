"""Frozen records of the store: a run's status and its row."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from enum import Enum

MAX_ROWID = 2**63 - 1


def in_rowid_range(row_id: int) -> bool:
    """SQLite integers are 64-bit: a larger id cannot name a row (and would raise OverflowError)."""
    return -MAX_ROWID - 1 <= row_id <= MAX_ROWID


class RunStatus(str, Enum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    OOM = "oom"
    CANCELLED = "cancelled"
    LOST = "lost"

    def is_finished(self) -> bool:
        return self not in (RunStatus.QUEUED, RunStatus.RUNNING)


@dataclass(frozen=True)
class RunRecord:
    """A frozen view of one run's row."""

    id: int
    created_at: float
    finished_at: float | None
    status: RunStatus
    config: dict
    summary: dict
    run_dir: str | None
    worker_pid: int | None
    worker_ctime: float | None
    runner_pid: int | None
    runner_ctime: float | None
    host: str | None
    sweep_id: int | None
    label: str | None
    host_cpus: int | None = None
    host_memory_bytes: int | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "RunRecord":
        d = dict(row)
        d["status"] = RunStatus(d["status"])
        d["config"] = json.loads(d["config"])
        d["summary"] = json.loads(d["summary"]) if d["summary"] else {}
        return cls(**d)
