"""The run table's filters, grouping and tags, like an experiment tracker's: rows of
``Runs.history`` in, rows out.

Pure: plain values in, plain values out, so every answer is tested with ==.
"""

from __future__ import annotations

import statistics

FILTERS = ("dataset", "model", "mode", "sweep_id", "status", "tags")  # what a table can be filtered and grouped by
FILTER_LABELS = {"dataset": "dataset", "model": "model", "mode": "mode", "sweep_id": "sweep", "status": "status",
                 "tags": "tag"}
NO_SWEEP = "no sweep"


def first_shown(rows: list[dict]) -> dict | None:
    """The run a page opened fresh shows: the one running (a queued run behind it has
    nothing to draw yet), else the newest. ``rows``: newest first."""
    return next((r for r in rows if r["status"] == "running"), rows[0] if rows else None)

def cell(row: dict, key: str) -> list[str]:
    """The values of one filterable column of a row, as text (a run has several tags)."""
    if key == "tags":
        return list(row.get("tags") or [])
    if key == "sweep_id":
        return [NO_SWEEP if row.get("sweep_id") is None else f"sweep {row['sweep_id']}"]
    value = row.get(key)
    return ["–" if value in (None, "") else str(value)]


def choices(rows: list[dict], key: str) -> list[str]:
    """Every value of a column among the rows, sorted (sweeps by number)."""
    values = {v for r in rows for v in cell(r, key)}
    return sorted(values, key=lambda v: (v == NO_SWEEP, len(v) if v.startswith("sweep ") else 0, v))


def filter_rows(rows: list[dict], picked: dict[str, list[str]]) -> list[dict]:
    """The rows that match every column's picks (a column with none picked matches all;
    within a column any picked value matches)."""
    return [r for r in rows if all(not want or set(want) & set(cell(r, k)) for k, want in picked.items())]


def group_rows(rows: list[dict], by: str) -> list[dict]:
    """One row per value of ``by``: how many runs, how many completed, their exact peaks
    (lowest and median) and best accuracy; a run with two tags counts in both groups."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        for v in cell(r, by) or ["no tag"]:
            groups.setdefault(v, []).append(r)
    order = choices(rows, by) + ["no tag"]
    out = []
    for value in sorted(groups, key=order.index):
        members = groups[value]
        done = [r for r in members if r["status"] == "completed"]
        peaks = [r["peak_mb"] for r in done if r.get("peak_mb") is not None]
        accs = [r["accuracy"] for r in done if r.get("accuracy") is not None]
        out.append({FILTER_LABELS[by]: value, "runs": len(members), "completed": len(done),
                    "lowest exact peak MiB": min(peaks) if peaks else None,
                    "median exact peak MiB": statistics.median(peaks) if peaks else None,
                    "best accuracy": max(accs) if accs else None,
                    "run ids": ", ".join(str(i) for i in sorted(r["id"] for r in members))})
    return out
