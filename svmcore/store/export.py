"""One run as plain data (config, summary, samples, events), and its samples as CSV."""

from __future__ import annotations

import csv
import io

from svmcore.store.damage import run_damage
from svmcore.store.sqlite import SAMPLE_COLUMNS, Store


def run_export(store: Store, run_id: int) -> dict:
    """Everything about one run as plain data: config, summary, samples, events, and
    ``damage``: what of it could not be read (left out or empty)."""
    rec = store.get_run(run_id)
    return {"id": rec.id, "status": rec.status.value, "created_at": rec.created_at, "finished_at": rec.finished_at,
            "host": rec.host, "host_cpus": rec.host_cpus, "host_memory_bytes": rec.host_memory_bytes,
            "parent_run_id": rec.parent_run_id, "change": rec.change,
            "config": rec.config, "summary": rec.summary.to_dict(),
            "samples": [dict(zip(SAMPLE_COLUMNS, s)) for s in store.samples(run_id)],
            "events": store.events(run_id), "damage": run_damage(store, run_id)}


def samples_csv(record: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["run_id", *SAMPLE_COLUMNS])  # a cgroup's charge and cache are empty for a run without a cgroup cap
    for s in record["samples"]:
        w.writerow([record["id"], f"{s['t_s']:.4f}", *(s.get(c) for c in SAMPLE_COLUMNS[1:])])
    return buf.getvalue()
