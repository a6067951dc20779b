"""What in the store cannot be read, run by run: damaged rows that SQLite's own
``PRAGMA integrity_check`` passes (a JSON column cut short, text that is not UTF-8, a
number that is text), found by reading every row through ``store.rows``.

``runs check`` lists it; ``runs show`` and ``runs export`` name a run's own.
"""

from __future__ import annotations

from dataclasses import dataclass

from svmcore.store.rows import event_row, unreadable_events, unreadable_samples, value_problem
from svmcore.store.sqlite import SAMPLE_COLUMNS, Store

# a sample row that holds other than numbers (SQLite keeps whatever a row was given); the cgroup
# columns are NULL in an uncapped run's samples
_BAD_SAMPLE = " OR ".join([f"typeof({c}) NOT IN ('integer', 'real')" for c in SAMPLE_COLUMNS[:5]]
                          + [f"typeof({c}) NOT IN ('integer', 'real', 'null')" for c in SAMPLE_COLUMNS[5:]])


@dataclass(frozen=True)
class DamagedRun:
    id: int
    status: str  # 'unreadable' when the status itself is damaged
    damage: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"id": self.id, "status": self.status, "damage": list(self.damage)}


def _events_damage(store: Store) -> dict[int, list[str]]:
    bad: dict[int, list[str]] = {}
    for rid, seq, t_s, kind, data in store.query("SELECT run_id, seq, t_s, kind, data FROM events "
                                                 "ORDER BY run_id, seq"):
        problem = event_row(seq, t_s, kind, data)[1]
        if problem:
            bad.setdefault(rid, []).append(f"event {seq}: {problem}")
    return {rid: [unreadable_events(found)] for rid, found in bad.items()}


def _samples_damage(store: Store) -> dict[int, list[str]]:
    return {rid: [unreadable_samples(n)]
            for rid, n in store.query(f"SELECT run_id, count(*) FROM samples WHERE {_BAD_SAMPLE} GROUP BY run_id")}


def _tags_damage(store: Store) -> dict[int, list[str]]:
    bad: dict[int, list[str]] = {}
    for rid, tag in store.query("SELECT run_id, tag FROM run_tags"):
        problem = value_problem(tag, str)
        if problem:
            bad.setdefault(rid, []).append(f"tag: {problem}")
    return bad


def damaged_runs(store: Store) -> list[DamagedRun]:
    """Every run with something unreadable (its row, its events, its samples, its tags),
    newest first."""
    found: dict[int, list[str]] = {}
    status: dict[int, str] = {}
    for rec in store.list_runs():
        status[rec.id] = rec.status.value
        if rec.damage:
            found.setdefault(rec.id, []).extend(rec.damage)
    for part in (_events_damage(store), _samples_damage(store), _tags_damage(store)):
        for rid, lines in part.items():
            found.setdefault(rid, []).extend(lines)
    return [DamagedRun(rid, status.get(rid, "no run row"), tuple(found[rid])) for rid in sorted(found, reverse=True)]


def run_damage(store: Store, run_id: int) -> list[str]:
    """What cannot be read of one run: its row, its events, its samples."""
    rec = store.get_run(run_id)
    return [*(rec.damage if rec else ()), *store.read_events(run_id)[1], *store.read_samples(run_id)[1]]


def damaged_sweeps(store: Store) -> list[dict]:
    """Every sweep whose spec cannot be read: ``{"id", "damage"}``."""
    return [{"id": s["id"], "damage": s["damage"]} for s in store.sweeps() if s["damage"]]
