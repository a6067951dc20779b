"""Frozen records of the store: a run's row, its summary typed (``spec.result.RunSummary``)."""

from __future__ import annotations

from dataclasses import dataclass

from svmcore.spec.errors import SvmcoreError
from svmcore.spec.names import shown
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus

MAX_ROWID = 2**63 - 1


def in_rowid_range(row_id: int) -> bool:
    """SQLite integers are 64-bit: a larger id cannot name a row (and would raise OverflowError)."""
    return -MAX_ROWID - 1 <= row_id <= MAX_ROWID


class DamagedRunError(SvmcoreError):
    """A run whose row in the store is damaged, asked for what needs all of it."""


# columns only shown, never computed from
_SHOWN_ONLY = ("name", "label", "colour", "host", "host_cpus", "host_memory_bytes", "created_at", "finished_at")


@dataclass(frozen=True)
class RunRecord:
    """A frozen view of one run's row, made by ``store.rows.run_record``: a column that
    could not be read is empty and named in ``damage``."""

    id: int
    created_at: float | None
    finished_at: float | None
    status: RunStatus
    config: dict
    summary: RunSummary  # the stored JSON read back (an empty or damaged column: ``RunSummary()``)
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
    name: str | None = None
    colour: str | None = None
    parent_run_id: int | None = None  # fit: the attempt this run follows
    change: dict | None = None  # fit: the knobs this attempt changed and why
    damage: tuple[str, ...] = ()  # each unreadable column and why ('summary: not JSON (...)')

    @property
    def shown_name(self) -> str:
        """The name as it may be displayed ('' for none): one stored before the names rule
        has its control and direction characters escaped (``spec.names.shown``)."""
        return shown(self.name)

    @property
    def damaged(self) -> bool:
        return bool(self.damage)

    def readable(self, purpose: str) -> "RunRecord":
        """This record, or DamagedRunError if a part of its row that diagnosing or serving
        reads could not be read (an empty summary would read as a peak of 0 MiB); a damaged
        name, label, colour, host or time does not stop them."""
        needed = [d for d in self.damage if d.split(":", 1)[0] not in _SHOWN_ONLY]
        if needed:
            raise DamagedRunError(f"run {self.id}'s record in the store is damaged ({'; '.join(needed)}), so it "
                                  f"cannot be {purpose}; 'svmcore runs check' lists the damage")
        return self
