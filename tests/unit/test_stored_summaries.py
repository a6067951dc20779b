"""Runs stored before the summary became one typed shape (issue 41) read back the same:
``summaries_before_41.json`` holds the ``--json`` summaries of real runs made by the code
before it (float16 storage, mlp-numpy with checkpointing, a distilled kernel-approx, an
oom under an rlimit cap, a lean stream run with its spill, a cgroup-capped run, a
data-parallel run on two Dask workers), with what ``runs show`` printed of each and its
run peak. Written into a store as that code wrote them, each reads back undamaged, with
every key and figure it had, and is described in the same words."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from svmcore.cli.run import describe
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.export import run_export
from svmcore.store.sqlite import Store

with open(os.path.join(os.path.dirname(__file__), "summaries_before_41.json")) as f:
    BEFORE = json.load(f)


def has_all_of(new, old, where="summary") -> list[str]:
    """Where ``new`` lacks a key of ``old`` or holds another value (it may hold more keys)."""
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return [f"{where} is no longer an object"]
        return [p for k, v in old.items() for p in (has_all_of(new[k], v, f"{where}.{k}") if k in new
                                                    else [f"{where}.{k} is gone"])]
    if isinstance(old, list):
        if not isinstance(new, list) or len(new) != len(old):
            return [f"{where} is not the same list"]
        return [p for i, (n, o) in enumerate(zip(new, old)) for p in has_all_of(n, o, f"{where}[{i}]")]
    return [] if new == old else [f"{where}: {new!r} is not {old!r}"]


@pytest.fixture
def stored(tmp_path):
    """A store holding each run's summary as the code before issue 41 wrote it (its JSON text)."""
    store = Store(str(tmp_path))
    ids = {}
    for name, before in BEFORE.items():
        ids[name] = store.create_run({"dataset": "sparse-text"}, status=RunStatus.QUEUED)
    store.close()
    db = sqlite3.connect(os.path.join(str(tmp_path), "runs.sqlite"))
    with db:
        for name, before in BEFORE.items():
            db.execute("UPDATE runs SET status=?, summary=? WHERE id=?",
                       (before["summary"]["status"], json.dumps(before["summary"]), ids[name]))
    db.close()
    store = Store(str(tmp_path))
    yield store, ids
    store.close()


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_a_summary_stored_before_reads_back_whole_and_undamaged(stored, name):
    store, ids = stored
    rec = store.get_run(ids[name])
    old = BEFORE[name]["summary"]
    assert rec.damage == () and rec.summary.extra == {}  # every key it holds has a field
    assert has_all_of(rec.summary.to_dict(), old) == []
    assert has_all_of(run_export(store, rec.id)["summary"], old) == []  # `runs show --json`, `runs export`


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_a_summary_stored_before_is_described_and_weighed_as_before(stored, name):
    store, ids = stored
    summary = store.get_run(ids[name]).summary
    assert describe(summary, "old") == BEFORE[name]["describe"]
    assert [summary.run_peak.mb, summary.run_peak.exact] == BEFORE[name]["run_peak"]


def test_the_stored_runs_cover_every_part_of_a_summary():
    summaries = [RunSummary.from_dict(b["summary"]) for b in BEFORE.values()]
    parts = ("spill", "upcast", "threads", "parallel", "distillation", "model_export", "regularisation", "data",
             "error", "exit", "confusion", "recomputed_layers", "cgroup_peak_mb", "cgroup_held_peak_mb", "phases")
    assert [p for p in parts if all(getattr(s, p) in (None, ()) for s in summaries)] == []
