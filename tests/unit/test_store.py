"""The Store contract (svmcore.store), on a real SQLite file in tmp_path."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import sqlite3
import stat
import threading
import time

import pytest

from svmcore.engine.hostinfo import this_host
from svmcore.spec.result import PhaseSpan, RunError, RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import RunRecord, Store, StoreError

THREADS = 4
PER_THREAD = 200


@pytest.fixture
def run_store(tmp_path):
    s = Store(str(tmp_path / "home"))
    yield s
    s.close()


def sample(i: int) -> tuple:
    """t_s, rss, anon, file, hwm and, for a cgroup-capped run, the group's charge and its page cache."""
    return (i * 0.02, 1000 + i, 600 + i, 400, 2000 + i, 700 + i, 50)


def progress(i: int) -> dict:
    """A progress event's fields, as a worker writes them."""
    return {"samples": i, "batches": i, "epoch": 1, "epochs": 1, "total": 100, "train_elapsed_s": i * 0.1}


# ---------------------------------------------------------------- create / get / list

def test_new_store_creates_its_folder_and_file(tmp_path):
    home = tmp_path / "a" / "b"
    s = Store(str(home))
    try:
        assert os.path.isfile(home / "runs.sqlite")
        assert s.list_runs() == []
        assert not s.integrity_problems()
    finally:
        s.close()


def test_create_and_get_run(run_store):
    before = time.time()
    config = {"model": "linear-svm", "rows": 1000, "nested": {"a": [1, 2]}}
    rid = run_store.create_run(config, label="first", sweep_id=None, host=this_host())
    rec = run_store.get_run(rid)
    assert isinstance(rec, RunRecord)
    assert rec.id == rid
    assert rec.status is RunStatus.RUNNING
    assert rec.config == config
    assert rec.summary == RunSummary()
    assert rec.finished_at is None
    assert rec.label == "first"
    assert rec.host == socket.gethostname()
    assert before - 1 <= rec.created_at <= time.time() + 1


def test_run_ids_are_new_each_time(run_store):
    ids = [run_store.create_run({"i": i}) for i in range(5)]
    assert len(set(ids)) == 5
    assert ids == sorted(ids)


def test_create_run_with_status_and_sweep(run_store):
    sweep = run_store.create_sweep({"grid": {"epochs": [1, 2]}})
    rid = run_store.create_run({}, status=RunStatus.QUEUED, sweep_id=sweep)
    rec = run_store.get_run(rid)
    assert rec.status is RunStatus.QUEUED and rec.sweep_id == sweep
    assert run_store.sweeps()[0]["spec"] == {"grid": {"epochs": [1, 2]}}


def test_get_missing_run_is_none(run_store):
    assert run_store.get_run(12345) is None


def test_list_runs_order_filters_and_limit(run_store):
    sweep = run_store.create_sweep({})
    a = run_store.create_run({"n": "a"})
    b = run_store.create_run({"n": "b"}, sweep_id=sweep)
    c = run_store.create_run({"n": "c"}, status=RunStatus.QUEUED, sweep_id=sweep)
    assert run_store.finish_run(a, RunStatus.COMPLETED, RunSummary(accuracy=0.9))
    assert [r.id for r in run_store.list_runs()] == [c, b, a]
    assert [r.id for r in run_store.list_runs(limit=2)] == [c, b]
    assert [r.id for r in run_store.list_runs(status=[RunStatus.COMPLETED])] == [a]
    assert [r.id for r in run_store.list_runs(status=[RunStatus.RUNNING, RunStatus.QUEUED])] == [c, b]
    assert [r.id for r in run_store.list_runs(sweep_id=sweep)] == [c, b]
    assert [r.id for r in run_store.list_runs(status=[RunStatus.QUEUED], sweep_id=sweep)] == [c]
    assert run_store.list_runs(status=[RunStatus.OOM]) == []


def test_runs_survive_reopening(tmp_path):
    home = str(tmp_path / "home")
    s = Store(home)
    rid = s.create_run({"k": 1})
    s.add_samples(rid, [sample(0)])
    s.finish_run(rid, RunStatus.FAILED, RunSummary(error=RunError("RuntimeError", "boom")))
    s.close()
    s2 = Store(home)
    try:
        rec = s2.get_run(rid)
        assert rec.status is RunStatus.FAILED and rec.summary == RunSummary(error=RunError("RuntimeError", "boom"))
        assert s2.samples(rid) == [sample(0)]
        assert not s2.integrity_problems()
    finally:
        s2.close()


# ---------------------------------------------------------------- samples and events

def test_samples_round_trip_in_time_order(run_store):
    rid = run_store.create_run({})
    other = run_store.create_run({})
    rows = [sample(i) for i in range(50)]
    run_store.add_samples(rid, rows[25:])
    run_store.add_samples(rid, iter(rows[:25]))  # any iterable
    run_store.add_samples(other, [sample(99)])
    run_store.add_samples(rid, [])  # nothing to add is fine
    got = run_store.samples(rid)
    assert got == rows
    assert all(isinstance(v, int) for r in got for v in r[1:])
    assert run_store.samples(other) == [sample(99)]
    assert run_store.samples(424242) == []


def test_large_byte_counts_round_trip(run_store):
    rid = run_store.create_run({})
    row = (1.5, 2**40, 2**39, 2**38, 2**41, 2**40 - 1, 2**37)
    run_store.add_samples(rid, [row])
    assert run_store.samples(rid) == [row]


def test_events_round_trip_in_seq_order(run_store):
    rid = run_store.create_run({})
    events = [(2, 0.5, "phase", {"name": "load", "peak": 123}),
              (1, 0.1, "scan", {"info": {"rows": 10}, "classes": ["a", "b"]}),
              (3, 0.9, "done", {})]
    run_store.add_events(rid, events)
    got = run_store.events(rid)
    assert [e["seq"] for e in got] == [1, 2, 3]
    assert got[0] == {"info": {"rows": 10}, "classes": ["a", "b"], "seq": 1, "t_s": 0.1, "kind": "scan"}
    assert got[1] == {"name": "load", "peak": 123, "seq": 2, "t_s": 0.5, "kind": "phase"}
    assert got[2] == {"seq": 3, "t_s": 0.9, "kind": "done"}


def test_events_with_a_seen_seq_are_ignored(run_store):
    rid = run_store.create_run({})
    run_store.add_events(rid, [(1, 0.1, "a", {"v": 1})])
    run_store.add_events(rid, [(1, 0.2, "b", {"v": 2}), (2, 0.3, "c", {"v": 3})])
    got = run_store.events(rid)
    assert [(e["seq"], e["kind"], e["v"]) for e in got] == [(1, "a", 1), (2, "c", 3)]


def test_events_of_runs_are_separate(run_store):
    a, b = run_store.create_run({}), run_store.create_run({})
    run_store.add_events(a, [(1, 0.0, "x", {})])
    run_store.add_events(b, [(1, 0.0, "y", {})])
    assert [e["kind"] for e in run_store.events(a)] == ["x"]
    assert [e["kind"] for e in run_store.events(b)] == ["y"]


# ---------------------------------------------------------------- finish once

@pytest.mark.parametrize("first", [s for s in RunStatus if s.is_finished()])
def test_finish_run_only_once(run_store, first):
    rid = run_store.create_run({})
    assert run_store.finish_run(rid, first, RunSummary(extra={"why": "first"})) is True
    rec = run_store.get_run(rid)
    assert rec.status is first and rec.summary == RunSummary(extra={"why": "first"}) and rec.finished_at is not None
    for later in (RunStatus.COMPLETED, RunStatus.LOST, RunStatus.OOM):
        assert run_store.finish_run(rid, later, RunSummary(extra={"why": "later"})) is False
    again = run_store.get_run(rid)
    assert again.status is first
    assert again.summary == RunSummary(extra={"why": "first"})
    assert again.finished_at == rec.finished_at


def test_finish_queued_run(run_store):
    rid = run_store.create_run({}, status=RunStatus.QUEUED)
    assert run_store.finish_run(rid, RunStatus.CANCELLED, RunSummary())
    assert run_store.get_run(rid).status is RunStatus.CANCELLED


def test_finish_missing_run_is_false(run_store):
    assert run_store.finish_run(999, RunStatus.COMPLETED, RunSummary()) is False


def test_racing_finishers_have_exactly_one_winner(run_store):
    rid = run_store.create_run({})
    statuses = [RunStatus.COMPLETED, RunStatus.OOM, RunStatus.LOST, RunStatus.CANCELLED] * 2
    results: dict[int, bool] = {}
    barrier = threading.Barrier(len(statuses))

    def finish(i):
        barrier.wait()
        results[i] = run_store.finish_run(rid, statuses[i], RunSummary(extra={"by": i}))

    threads = [threading.Thread(target=finish, args=(i,)) for i in range(len(statuses))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, ok in results.items() if ok]
    assert len(results) == len(statuses) and len(winners) == 1
    rec = run_store.get_run(rid)
    assert rec.summary == RunSummary(extra={"by": winners[0]}) and rec.status is statuses[winners[0]]


def test_run_status_is_finished():
    assert not RunStatus.QUEUED.is_finished() and not RunStatus.RUNNING.is_finished()
    assert all(s.is_finished() for s in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.OOM,
                                         RunStatus.CANCELLED, RunStatus.LOST))


# ---------------------------------------------------------------- delete

def test_delete_run_removes_its_samples_and_events(run_store):
    keep = run_store.create_run({"keep": True})
    gone = run_store.create_run({"keep": False})
    for rid in (keep, gone):
        run_store.add_samples(rid, [sample(1), sample(2)])
        run_store.add_events(rid, [(1, 0.0, "k", {})])
    assert run_store.delete_run(gone) is True
    assert run_store.get_run(gone) is None
    assert run_store.samples(gone) == [] and run_store.events(gone) == []
    assert [r.id for r in run_store.list_runs()] == [keep]
    assert len(run_store.samples(keep)) == 2 and len(run_store.events(keep)) == 1
    assert run_store.delete_run(gone) is False
    assert not run_store.integrity_problems()


# ---------------------------------------------------------------- integrity and concurrency

def test_integrity_ok_after_many_writes(run_store):
    for i in range(20):
        rid = run_store.create_run({"i": i})
        run_store.add_samples(rid, [sample(j) for j in range(10)])
        run_store.finish_run(rid, RunStatus.COMPLETED, RunSummary())
        if i % 3 == 0:
            run_store.delete_run(rid)
    assert not run_store.integrity_problems()


def test_integrity_check_sees_a_damaged_file(tmp_path):
    home = tmp_path / "home"
    s = Store(str(home))
    for i in range(300):
        s.create_run({"payload": "x" * 200, "i": i})
    s.close()
    # checkpoint the WAL into the main file, then damage a b-tree page in place
    db = sqlite3.connect(home / "runs.sqlite")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    s2 = Store(str(home))  # opened while sound; damaged afterwards, under its feet
    s2.close()
    path = home / "runs.sqlite"
    raw = bytearray(path.read_bytes())
    page = 4096
    assert len(raw) > 4 * page
    raw[2 * page:2 * page + 64] = b"\xff" * 64
    path.write_bytes(bytes(raw))
    try:
        # integrity_problems names the damage of a damaged file (a StoreError would do too),
        # not a raw sqlite3.DatabaseError escaping the store.
        try:
            ok = not s2.integrity_problems()
        except StoreError:
            ok = False
        assert ok is False
    finally:
        s2.close()


def test_concurrent_writers_share_one_store_and_lose_nothing(run_store):
    run_ids = [run_store.create_run({"thread": t}) for t in range(THREADS)]
    errors: list[BaseException] = []
    created: list[list[int]] = [[] for _ in range(THREADS)]
    barrier = threading.Barrier(THREADS)

    def work(t):
        try:
            barrier.wait()
            for i in range(PER_THREAD):
                run_store.add_samples(run_ids[t], [sample(i)])
                run_store.add_events(run_ids[t], [(i, i * 0.1, "tick", {"i": i})])
                if i % 20 == 0:
                    created[t].append(run_store.create_run({"thread": t, "i": i}))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for t, rid in enumerate(run_ids):
        assert run_store.samples(rid) == [sample(i) for i in range(PER_THREAD)]
        assert [e["i"] for e in run_store.events(rid)] == list(range(PER_THREAD))
    all_created = [rid for ids in created for rid in ids]
    assert len(set(all_created)) == THREADS * PER_THREAD // 20
    assert len(run_store.list_runs()) == THREADS + len(all_created)
    assert not run_store.integrity_problems()


def test_concurrent_writers_with_their_own_store_objects_lose_nothing(tmp_path):
    home = str(tmp_path / "home")
    Store(home).close()
    errors: list[BaseException] = []
    ids: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(THREADS)

    def work(t):
        s = Store(home)
        try:
            barrier.wait()
            mine = []
            for i in range(PER_THREAD):
                mine.append(s.create_run({"thread": t, "i": i}))
            s.add_samples(mine[0], [sample(i) for i in range(PER_THREAD)])
            with lock:
                ids.extend(mine)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            s.close()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    s = Store(home)
    try:
        runs = s.list_runs()
        assert len(ids) == len(set(ids)) == THREADS * PER_THREAD
        assert sorted(r.id for r in runs) == sorted(ids)
        assert sorted((r.config["thread"], r.config["i"]) for r in runs) == \
            sorted((t, i) for t in range(THREADS) for i in range(PER_THREAD))
        assert not s.integrity_problems()
    finally:
        s.close()


# ---------------------------------------------------------------- unwritable data folders

def test_home_under_a_regular_file_gives_store_error(tmp_path):
    # As root a chmod'ed folder is still writable, so make the folder impossible instead.
    (tmp_path / "file").write_text("not a folder")
    home = tmp_path / "file" / "home"
    with pytest.raises(StoreError) as info:
        Store(str(home))
    assert str(home) in str(info.value)
    assert "data folder" in str(info.value)
    assert not isinstance(info.value, (OSError, sqlite3.Error))


def test_home_that_is_a_regular_file_gives_store_error(tmp_path):
    home = tmp_path / "home"
    home.write_text("oops")
    with pytest.raises(StoreError, match="home"):
        Store(str(home))


@pytest.mark.parametrize("blocker,needle", [
    ("runs.sqlite", "run store"),              # the database path is a folder
    ("runs.sqlite.writelock", "data folder"),  # the lock file path is a folder
])
def test_unusable_paths_inside_home_give_store_error(tmp_path, blocker, needle):
    home = tmp_path / "home"
    (home / blocker).mkdir(parents=True)
    with pytest.raises(StoreError, match=needle):
        Store(str(home))


def test_a_file_that_is_not_a_database_is_moved_aside_with_its_wal_and_shm(tmp_path, caplog):
    home = tmp_path / "home"
    home.mkdir()
    junk = {"runs.sqlite": b"this is not sqlite" * 300, "runs.sqlite-wal": b"w" * 100, "runs.sqlite-shm": b"s" * 10}
    for name, data in junk.items():
        (home / name).write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="svmcore"):
        s = Store(str(home))
    try:
        moved = s.damaged_moved_to
        assert moved and re.fullmatch(re.escape(str(home / "runs.sqlite")) + r"\.damaged-\d{8}T\d{6}Z", moved)
        for name, data in junk.items():  # kept, never deleted; the file and its -wal byte for byte
            kept = moved + name[len("runs.sqlite"):]
            assert name.endswith("-shm") or open(kept, "rb").read() == data  # -shm: SQLite's index of the -wal
            assert os.path.isfile(kept)
        assert "not a database" in s.damage
        assert s.list_runs() == [] and not s.integrity_problems()
        assert s.get_run(s.create_run({"a": 1})).config == {"a": 1}
        [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert moved in warning and "runs recover" in warning and "\n" not in warning
    finally:
        s.close()


def _store_with_runs(home, n=12, samples_each=400):
    s = Store(str(home))
    for r in range(n):
        rid = s.create_run({"r": r, "payload": "x" * 400})
        s.add_samples(rid, [sample(i) for i in range(samples_each)])
        s.add_events(rid, [(i, i * 0.1, "progress", progress(i)) for i in range(30)])
        s.finish_run(rid, RunStatus.COMPLETED, RunSummary(accuracy=0.5, phases=[PhaseSpan("x" * 1500)]))
        os.makedirs(home / "runs" / str(rid), exist_ok=True)
    s.close()
    return home / "runs.sqlite"


def test_a_truncated_store_is_moved_aside_and_a_fresh_one_started(tmp_path):
    home = tmp_path / "home"
    path = _store_with_runs(home)
    os.truncate(path, path.stat().st_size // 2)
    damaged = path.read_bytes()
    s = Store(str(home))
    try:
        assert s.damaged_moved_to and "malformed" in s.damage
        assert open(s.damaged_moved_to, "rb").read() == damaged
        assert s.list_runs() == [] and not s.integrity_problems()
        # new ids never reuse an old run's folder (its events file would be appended to)
        assert s.create_run({"new": True}) == 13
    finally:
        s.close()
    again = Store(str(home))  # sound now: nothing more is moved
    try:
        assert again.damaged_moved_to is None and len(again.list_runs()) == 1
    finally:
        again.close()


def test_a_store_with_a_failing_quick_check_is_moved_aside(tmp_path):
    home = tmp_path / "home"
    path = _store_with_runs(home)
    db = sqlite3.connect(path)
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name='samples_run'").fetchone()[0]
    db.close()
    raw = bytearray(path.read_bytes())
    raw[(root - 1) * 4096 + 8:(root - 1) * 4096 + 12] = (10**6).to_bytes(4, "big")  # a child pointer off the end
    path.write_bytes(bytes(raw))
    s = Store(str(home))
    try:
        assert s.damaged_moved_to is not None and s.list_runs() == []
    finally:
        s.close()


def test_a_damaged_store_that_cannot_be_moved_is_one_clear_store_error(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "runs.sqlite").write_bytes(b"this is not sqlite" * 300)

    def refuse(src, dst):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(os, "rename", refuse)
    with pytest.raises(StoreError) as info:
        Store(str(home))
    message = str(info.value)
    assert "damaged" in message and "could not be moved aside" in message and "\n" not in message
    assert (home / "runs.sqlite").read_bytes() == b"this is not sqlite" * 300


def test_a_healthy_store_is_not_moved(tmp_path):
    home = tmp_path / "home"
    _store_with_runs(home, n=3)
    s = Store(str(home))
    try:
        assert s.damaged_moved_to is None and len(s.list_runs()) == 3
    finally:
        s.close()
    assert sorted(os.listdir(home)) == ["runs", "runs.sqlite", "runs.sqlite.writelock"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root bypasses file permissions; see the regular-file tests")
def test_read_only_home_gives_store_error(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(StoreError):
            Store(str(home))
    finally:
        home.chmod(stat.S_IRWXU)


# ---------------------------------------------------------------- hosts and imported runs

OLD_SCHEMA = """
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL NOT NULL, finished_at REAL,
    status TEXT NOT NULL, config TEXT NOT NULL, summary TEXT, run_dir TEXT, worker_pid INTEGER,
    worker_ctime REAL, runner_pid INTEGER, runner_ctime REAL, host TEXT, sweep_id INTEGER, label TEXT);
"""


def test_local_run_records_its_host(run_store):
    rec = run_store.get_run(run_store.create_run({"a": 1}, host=this_host()))
    assert rec.host == socket.gethostname()
    assert rec.host_cpus == os.cpu_count()
    assert rec.host_memory_bytes > 2**28


def test_a_run_is_named_renamed_and_coloured(run_store):
    rid = run_store.create_run({"a": 1}, label="batch_size=256")
    assert run_store.set_name(rid, "  big batch ")
    assert (run_store.get_run(rid).name, run_store.get_run(rid).label) == ("big batch", "batch_size=256")
    assert run_store.set_name(rid, "smaller") and run_store.get_run(rid).name == "smaller"
    assert run_store.set_name(rid, " ") and run_store.get_run(rid).name is None
    assert run_store.set_colour(rid, "#ab12cd") and run_store.get_run(rid).colour == "#AB12CD"
    assert run_store.set_colour(rid, None) and run_store.get_run(rid).colour is None
    with pytest.raises(ValueError, match="#RRGGBB"):
        run_store.set_colour(rid, "red")
    assert not run_store.set_name(rid + 1, "no such run")


def test_store_made_before_the_host_columns_gets_them(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    db = sqlite3.connect(home / "runs.sqlite")
    db.executescript(OLD_SCHEMA)
    db.execute("INSERT INTO runs (created_at, status, config, host) VALUES (1.0, 'completed', '{}', 'old-box')")
    db.commit()
    db.close()
    s = Store(str(home))
    try:
        old = s.list_runs()[0]
        assert (old.host, old.host_cpus, old.host_memory_bytes) == ("old-box", None, None)
        assert (old.name, old.colour) == (None, None)
        assert s.get_run(s.create_run({"b": 2}, host=this_host())).host_cpus == os.cpu_count()
        assert s.set_name(old.id, "from before") and s.get_run(old.id).name == "from before"
        assert not s.integrity_problems()
    finally:
        s.close()
    Store(str(home)).close()  # opening again does not add them twice


def _record(status="completed"):
    return {"status": status, "summary": {"run_id": 1, "status": status, "peak_rss_mb": 150.0},
            "samples": [sample(i) for i in range(5)],
            "events": [{"seq": 0, "t_s": 0.1, "kind": "started", "pid": 42, "cap_kind": None, "cap_bytes": None},
                       {"seq": 1, "t_s": 0.2, "kind": "outcome", "status": status, "phase": None, "error": None,
                        "summary": {}, "peak_rss_bytes": 2**27}],
            "host": {"host": "worker-7", "cpus": 16, "memory_bytes": 64 * 2**30}}


def test_remote_run_has_no_host_until_it_starts(run_store):
    rid = run_store.create_run({"a": 1}, status=RunStatus.QUEUED)
    assert run_store.get_run(rid).host is None
    assert run_store.set_started_on(rid, {"host": "worker-7", "cpus": 16, "memory_bytes": 2**36})
    rec = run_store.get_run(rid)
    assert (rec.status, rec.host, rec.host_cpus, rec.host_memory_bytes) == (RunStatus.RUNNING, "worker-7", 16, 2**36)
    assert not run_store.set_started_on(rid, {"host": "other"})  # only a queued run starts
    assert run_store.get_run(rid).host == "worker-7"


def test_complete_imported_fills_the_row_once(run_store):
    rid = run_store.create_run({"a": 1}, status=RunStatus.QUEUED)
    assert run_store.complete_imported(rid, _record())
    rec = run_store.get_run(rid)
    assert rec.status == RunStatus.COMPLETED and rec.finished_at is not None
    assert rec.summary == RunSummary(rid, RunStatus.COMPLETED, 150.0)  # the app's id, not the worker's
    assert (rec.host, rec.host_cpus) == ("worker-7", 16)
    assert run_store.samples(rid) == [sample(i) for i in range(5)]
    assert [(e["seq"], e["kind"]) for e in run_store.events(rid)] == [(0, "started"), (1, "outcome")]
    assert run_store.events(rid)[0]["pid"] == 42
    assert not run_store.complete_imported(rid, _record("failed"))
    assert run_store.get_run(rid).status == RunStatus.COMPLETED
    assert len(run_store.samples(rid)) == 5


def test_complete_imported_without_host_keeps_the_started_one(run_store):
    rid = run_store.create_run({}, status=RunStatus.QUEUED)
    run_store.set_started_on(rid, {"host": "worker-7", "cpus": 16, "memory_bytes": 1})
    assert run_store.complete_imported(rid, {"status": "lost", "summary": {"error": {"type": "Lost"}}})
    rec = run_store.get_run(rid)
    assert (rec.status, rec.host, rec.summary.status) == (RunStatus.LOST, "worker-7", RunStatus.LOST)


def test_complete_imported_is_all_or_nothing(run_store):
    rid = run_store.create_run({}, status=RunStatus.QUEUED)
    bad = _record()
    bad["samples"].append((1.0, "not", "a", "row"))  # wrong width: the insert fails
    with pytest.raises(StoreError):
        run_store.complete_imported(rid, bad)
    assert run_store.get_run(rid).status == RunStatus.QUEUED
    assert run_store.samples(rid) == [] and run_store.events(rid) == []


@pytest.mark.parametrize("run_id", [2**63, 10**23, -(2**63) - 1])
def test_run_ids_beyond_sqlite_range_are_simply_not_there(run_store, run_id):
    assert run_store.get_run(run_id) is None
    assert run_store.delete_run(run_id) is False
    assert run_store.samples(run_id) == [] and run_store.events(run_id) == []


def test_runs_check_reports_what_integrity_check_finds(tmp_path, capsys):
    from svmcore.cli.runs import cmd_runs_check

    home = tmp_path / "home"
    path = _store_with_runs(home, n=6)
    s = Store(str(home))
    try:
        assert cmd_runs_check(s, as_json=True) == 0
        assert json.loads(capsys.readouterr().out)["ok"] is True
        s.close()  # damaged under the open store's feet, after its check on open
        raw = bytearray(path.read_bytes())
        raw[2 * 4096:2 * 4096 + 64] = b"\xff" * 64
        path.write_bytes(bytes(raw))
        assert cmd_runs_check(s, as_json=True) == 1
        report = json.loads(capsys.readouterr().out)
        assert report["ok"] is False and report["problems"]
    finally:
        s.close()


def test_a_store_made_before_the_cgroup_columns_keeps_its_samples_and_gains_them(tmp_path):
    """Samples of a store made before they carried the cgroup's charge read back with None there;
    new ones keep it; a sample of five figures (a remote worker of that time) is still taken."""
    home = tmp_path / "home"
    home.mkdir()
    db = sqlite3.connect(home / "runs.sqlite")
    db.executescript(OLD_SCHEMA + "CREATE TABLE samples (run_id INTEGER NOT NULL, t_s REAL NOT NULL, "
                     "rss_bytes INTEGER NOT NULL, anon_bytes INTEGER NOT NULL, file_bytes INTEGER NOT NULL, "
                     "hwm_bytes INTEGER NOT NULL);")
    db.execute("INSERT INTO runs (created_at, status, config) VALUES (1.0, 'completed', '{}')")
    db.execute("INSERT INTO samples VALUES (1, 0.5, 10, 6, 4, 12)")
    db.commit()
    db.close()
    s = Store(str(home))
    try:
        assert s.samples(1) == [(0.5, 10, 6, 4, 12, None, None)]
        rid = s.create_run({})
        s.add_samples(rid, [sample(1), sample(2)[:5]])
        assert s.samples(rid) == [sample(1), sample(2)[:5] + (None, None)]
        assert not s.integrity_problems()
    finally:
        s.close()
