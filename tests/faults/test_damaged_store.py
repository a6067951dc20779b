"""A run store damaged on disk (here: truncated to half, as a full disk or a bad copy
leaves it): every command works again at once, the damaged file is kept aside under a
name that says so, and ``runs recover`` brings back the runs that can still be read."""

import glob
import json
import os
import re
import sqlite3

import pytest

from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store
from tests.conftest import cli, two_at_a_time

# the lean path (a svmlight file, native parser and solver, stream mode): a worker with numpy only,
# ~0.3 s of imports instead of ~3 s; what is tested here is the store, not the training
LEAN = ["--solver=native", "--parser=native", "--mode=stream", "--epochs=1", "--batch-size=100"]


def _dataset(home):
    """3,000 rows of 1,024 features (20 nonzeros each) as a svmlight file beside the home."""
    import random

    rng = random.Random(0)
    path = os.path.join(os.path.dirname(home), "tiny.svm")
    with open(path, "w") as f:
        for i in range(3000):
            cols = sorted(rng.sample(range(1, 1025), 20))
            f.write(("+1" if i % 2 else "-1") + "".join(f" {c}:{rng.random():.4f}" for c in cols) + "\n")
    return path


def _history(home):
    """Eight finished runs and a sweep, made by the CLI; returns each run's export."""
    # each run sleeps a second in its train phase: memory samples (50 a second) that fill pages
    # of the store as a built-in run's longer imports did, idle time rather than imports
    proc = cli("sweep", f"--dataset={_dataset(home)}", *LEAN, "--grid", "seed=0,1,2,3,4,5,6,7", "--json", home=home,
               env={"SVMCORE_FAULT": "sleep:1@train"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    store = Store(home)
    try:
        runs = store.list_runs()
        assert len(runs) == 8 and all(r.status.value == "completed" for r in runs)
        return {r.id: {"config": r.config, "summary": r.summary, "status": r.status.value,
                       "samples": store.samples(r.id), "events": len(store.events(r.id))} for r in runs}
    finally:
        store.close()


def _cut(path):
    """Half the file, or up to the end of the samples table's first leaf page if that lies
    beyond: which pages fall in the first half depends on when the samples table's first page
    filled and moved (as the runs' events and rows grow, it drifts past the middle), and a cut
    that keeps no page of samples could not show that recovery brings a run back whole. The
    pages are SQLite's own account of the file (dbstat), not the salvage code's."""
    db = sqlite3.connect(path)
    try:
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        [first] = db.execute("SELECT min(pageno) FROM dbstat WHERE name='samples' AND pagetype='leaf'").fetchone()
    finally:
        db.close()
    return max(os.path.getsize(path) // 2, first * page_size)


@pytest.mark.slow
def test_truncated_store_is_set_aside_every_command_works_and_recover_brings_runs_back(home):
    before = _history(home)
    path = os.path.join(home, "runs.sqlite")
    assert not os.path.exists(path + "-wal") or os.path.getsize(path + "-wal") == 0
    os.truncate(path, _cut(path))
    with open(path, "rb") as f:
        damaged = f.read()

    first = cli("runs", "list", "--json", home=home)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == []
    [warning] = first.stderr.strip().splitlines()  # one line, no traceback
    [aside] = [p for p in glob.glob(path + ".damaged-*") if not p.endswith(("-wal", "-shm"))]
    assert re.fullmatch(re.escape(path) + r"\.damaged-\d{8}T\d{6}Z", aside)
    assert aside in warning and "runs recover" in warning and warning.startswith("svmcore: warning:")
    with open(aside, "rb") as f:
        assert f.read() == damaged  # kept as it was, for recovery or a post-mortem

    # every command works again, and says nothing more about it
    commands = [(("runs", "list"), 0), (("runs", "show", "1"), 2), (("runs", "export", "1"), 2),
                (("runs", "delete", "1"), 2), (("runs", "check"), 0)]
    procs = two_at_a_time(lambda args: cli(*args, home=home), [(args,) for args, _ in commands])
    for (args, code), proc in zip(commands, procs):
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr and "warning" not in proc.stderr, (args, proc.stderr)
    check = procs[-1]  # runs check
    assert "ok" in check.stdout and aside in check.stdout, check.stdout
    run = cli("run", f"--dataset={os.path.join(os.path.dirname(home), 'tiny.svm')}", *LEAN, "--json", home=home)
    assert run.returncode == 0, run.stderr[-2000:]
    new_id = json.loads(run.stdout.strip().splitlines()[-1])["run_id"]
    assert new_id > max(before)  # never an old run's folder (and events file) again
    assert cli("runs", "export", str(new_id), home=home).returncode == 0

    recovered = cli("runs", "recover", aside, "--json", home=home)
    assert recovered.returncode == 0, recovered.stderr[-2000:]
    result = json.loads(recovered.stdout)
    assert result["runs"] >= 1 and result["samples"] > 0 and result["sweeps"] == 1, result
    assert result["read"]["runs"]["unreadable"] == len(before) - result["runs"]
    text = cli("runs", "recover", aside, home=home)  # again: nothing is copied twice
    assert text.returncode == 0 and re.search(r"runs\s+0 recovered", text.stdout), text.stdout

    store = Store(home)
    try:
        back = [r for r in store.list_runs() if r.id != new_id]
        assert len(back) == result["runs"]
        with_all_samples = 0
        for rec in back:
            old = before[rec.id]  # ids were free: each run keeps its own
            assert (rec.config, rec.summary, rec.status.value) == (old["config"], old["summary"], old["status"])
            samples = store.samples(rec.id)
            assert set(samples) <= set(old["samples"])
            with_all_samples += samples == old["samples"]
        assert with_all_samples >= 1
        assert not store.integrity_problems()
    finally:
        store.close()
    shown = cli("runs", "show", str(back[0].id), home=home)
    assert shown.returncode == 0 and "memory samples" in shown.stdout


def test_a_store_open_elsewhere_follows_the_file_set_aside_by_another_process(home):
    app = Store(home)  # a long-lived process (the dashboard) with its connection open
    try:
        for i in range(40):
            app.finish_run(app.create_run({"i": i, "payload": "x" * 2000}), RunStatus.COMPLETED, RunSummary(extra={"i": i}))
        path = os.path.join(home, "runs.sqlite")
        app._db().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        os.truncate(path, os.path.getsize(path) // 2)
        with open(path, "rb") as f:
            damaged = f.read()
        proc = cli("runs", "list", home=home)  # another process finds it damaged and sets it aside
        assert proc.returncode == 0 and "warning" in proc.stderr
        [aside] = [p for p in glob.glob(path + ".damaged-*") if not p.endswith(("-wal", "-shm"))]
        rid = app.create_run({"after": True})  # lands in the new store, not the file set aside
        assert [r.config for r in app.list_runs()] == [{"after": True}]
    finally:
        app.close()
    fresh = Store(home)
    try:
        assert fresh.get_run(rid).config == {"after": True} and fresh.damaged_moved_to is None
    finally:
        fresh.close()
    with open(aside, "rb") as f:
        assert f.read() == damaged  # closing the old connection did not write into it
