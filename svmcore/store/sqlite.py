"""Durable run history in one SQLite file (WAL mode).

Contract:
- ``create_run`` returns a new run id; the row exists (status ``running``) before
  the worker starts, so a crash at any later point leaves a trace. It records this
  machine as the run's host, unless the run is ``remote`` (a Dask worker runs it):
  then ``set_started_on`` records its host when it starts.
- ``complete_imported`` fills a remote run's row from the record its worker sent
  back (host, samples, events, outcome) in one transaction; like ``finish_run``,
  only once.
- ``add_samples`` / ``add_events`` append; each call is one transaction, so what a
  kill -9 interrupts is at most the last batch, never earlier rows.
- ``finish_run`` sets the terminal status and summary once; later calls for a
  finished run are ignored, so two observers cannot overwrite an outcome.
- Writes are serialised across threads and processes by a lock file (the bundled
  SQLite has a WAL bug with several processes writing at once); reads never block.
- Opening a damaged file (SQLite says it is not a database or is malformed, or
  ``PRAGMA quick_check`` fails) moves it aside, with its -wal and -shm, to
  ``runs.sqlite.damaged-<UTC time>`` (never deletes it), starts a fresh store, logs a
  warning and sets ``damaged_moved_to``; ``import_rows`` copies back what
  ``salvage.salvage`` could read from it.
- New run ids never reuse the name of a run folder left in ``runs/`` (a store started
  afresh next to an old history would otherwise append to an old run's event file).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import sqlite3
import threading
import time
import urllib.parse
from typing import Any, Iterable, Iterator

from svmcore.spec.errors import SvmcoreError
from svmcore.spec.names import check_name, check_tag
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.records import RunRecord, in_rowid_range
from svmcore.store.rows import (event_row, json_column, run_record, text_factory, unreadable_events,
                                unreadable_samples)

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    finished_at REAL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    summary TEXT,
    run_dir TEXT,
    worker_pid INTEGER,
    worker_ctime REAL,
    runner_pid INTEGER,
    runner_ctime REAL,
    host TEXT,
    sweep_id INTEGER,
    label TEXT,
    host_cpus INTEGER,
    host_memory_bytes INTEGER,
    name TEXT,
    colour TEXT
);
CREATE TABLE IF NOT EXISTS samples (
    run_id INTEGER NOT NULL,
    t_s REAL NOT NULL,
    rss_bytes INTEGER NOT NULL,
    anon_bytes INTEGER NOT NULL,
    file_bytes INTEGER NOT NULL,
    hwm_bytes INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id, t_s);
CREATE TABLE IF NOT EXISTS events (
    run_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    t_s REAL NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS sweeps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    spec TEXT NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS run_tags (
    run_id INTEGER NOT NULL,
    tag TEXT NOT NULL,
    PRIMARY KEY (run_id, tag)
);
"""
# Columns added since the first schema: a store file made before them gets them on open.
# ``name`` is the user's (``label`` is the product's: a sweep's grid point, Learn's remedy);
# ``colour`` is one the user picked for the run's lines ('#RRGGBB').
ADDED_COLUMNS = (("runs", "host_cpus", "INTEGER"), ("runs", "host_memory_bytes", "INTEGER"),
                 ("runs", "name", "TEXT"), ("runs", "colour", "TEXT"),
                 # ``fit``: the attempt this run follows, and the change it made to that attempt's knobs (JSON)
                 ("runs", "parent_run_id", "INTEGER"), ("runs", "change", "TEXT"),
                 # a cgroup-capped run's samples: what its cgroup is charged (the quantity its cap limits)
                 # and the page cache within that charge (NULL for other runs and older samples)
                 ("samples", "cgroup_bytes", "INTEGER"), ("samples", "cgroup_cache_bytes", "INTEGER"))
# A sample as ``add_samples`` takes it and ``samples`` returns it, in this order.
SAMPLE_COLUMNS = ("t_s", "rss_bytes", "anon_bytes", "file_bytes", "hwm_bytes", "cgroup_bytes", "cgroup_cache_bytes")
_INSERT_SAMPLES = (f"INSERT INTO samples (run_id, {', '.join(SAMPLE_COLUMNS)}) "
                   f"VALUES ({', '.join('?' * (len(SAMPLE_COLUMNS) + 1))})")
_INSERT_EVENTS = "INSERT OR IGNORE INTO events (run_id, seq, t_s, kind, data) VALUES (?,?,?,?,?)"


def _sample_row(run_id: int, row: tuple) -> tuple:
    """A sample's row; one of five figures (made before samples carried a cgroup's charge) has none."""
    return (run_id, *row, None, None) if len(row) == 5 else (run_id, *row)


def _add_missing_columns(db: sqlite3.Connection) -> None:
    for table, column, kind in ADDED_COLUMNS:
        if column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


class StoreError(SvmcoreError):
    """The store cannot be written (disk full, read-only folder) or read."""


class StoreDamagedError(StoreError):
    """The store file is damaged and could not be moved aside."""


_DAMAGE_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB (extended codes share the low byte)


def _is_damage(error: sqlite3.DatabaseError) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _DAMAGE_CODES
    text = str(error)
    return "malformed" in text or "not a database" in text


def damage(path: str) -> str | None:
    """What is wrong with the SQLite file at ``path`` (SQLite's words), or None if it is
    sound, absent, or cannot be judged now (locked, unreadable: opening reports those)."""
    if not os.path.isfile(path):
        return None
    try:  # read-only: a read-write connection would checkpoint the -wal into the damaged file on close
        db = sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro", uri=True, timeout=30,
                             isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        db.execute("PRAGMA busy_timeout=30000")
        found = [row[0] for row in db.execute("PRAGMA quick_check(5)")]
    except sqlite3.DatabaseError as e:
        return str(e) if _is_damage(e) else None
    finally:
        db.close()
    return None if found == ["ok"] else "; ".join(found)


def _to_copy(db: sqlite3.Connection, table: str, key: str, rows: list[dict]) -> tuple[dict[int, int], list[dict]]:
    """(old id -> id here of the rows already in ``table``: same creation time and ``key`` column; the
    others with the id each gets: its own where free, else None for a new one above every kept id)."""
    have = {(r[1], r[2]): r[0] for r in db.execute(f"SELECT id, created_at, {key} FROM {table}")}
    present = {r["id"]: have[(r["created_at"], r[key])] for r in rows if (r["created_at"], r[key]) in have}
    new = sorted((r for r in rows if r["id"] not in present), key=lambda r: r["id"])
    taken = {r["id"] for r in new if db.execute(f"SELECT 1 FROM {table} WHERE id=?", (r["id"],)).fetchone()}
    return present, ([dict(r, new_id=r["id"]) for r in new if r["id"] not in taken]
                     + [dict(r, new_id=None) for r in new if r["id"] in taken])


# what a data home keeps in its folders (run folders, parsed-data cache, uploads,
# generated data, the calibration runs' own store)
HOME_FOLDERS = {"runs": "run folders", "cache": "cached copies of datasets", "uploads": "uploaded files",
                "datasets": "generated datasets", "calibration": "calibration runs"}


def check_home_entries(home: str) -> None:
    """Each folder the data home needs is a folder (or absent) and its run store is not a
    folder: a file named ``runs`` made every run fail with 'Not a directory'."""
    for name, what in HOME_FOLDERS.items():
        path = os.path.join(home, name)
        if os.path.lexists(path) and not os.path.isdir(path):
            raise StoreError(f"the data home {home} cannot be used: {path} is a file, not a folder (the home keeps "
                             f"its {what} there); move it away or set SVMCORE_HOME to another folder")
    path = os.path.join(home, "runs.sqlite")
    if os.path.isdir(path):
        raise StoreError(f"the data home {home} cannot be used: {path} is a folder, not the run store file; "
                         "move it away or set SVMCORE_HOME to another folder")


def _top_run_folder(home: str) -> int:
    try:
        names = os.listdir(os.path.join(home, "runs"))
    except OSError:
        return 0
    return max((int(n) for n in names if n.isdigit()), default=0)


class Store:
    def __init__(self, home: str):
        self.home = os.path.abspath(home)
        try:
            os.makedirs(self.home, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the data folder {self.home}: {e.strerror}") from None
        check_home_entries(self.home)
        self.path = os.path.join(self.home, "runs.sqlite")
        self._local = threading.local()
        self._thread_lock = threading.RLock()
        self._lock_path = os.path.join(self.home, "runs.sqlite.writelock")
        self.read_only = False
        self.damaged_moved_to: str | None = None  # where a damaged store file was moved on open
        self.damage: str | None = None  # what SQLite found wrong with it
        self._warned: set[tuple] = set()  # damaged rows already logged
        try:
            with self._writing(transaction=False, on_lock=self._set_aside_if_damaged) as db:
                db.executescript(SCHEMA)
                _add_missing_columns(db)
                self._skip_old_run_folders(db)
        except StoreDamagedError:
            raise
        except StoreError:
            if not os.path.isfile(self.path):
                raise
            self.read_only = True  # history stays readable on a read-only or full disk
            self._local.db = None
            try:
                db = self._db()
                try:
                    found = [row[0] for row in db.execute("PRAGMA quick_check(5)")]
                except sqlite3.DatabaseError as e:
                    if not _is_damage(e):
                        raise
                    found = [str(e)]
                if found != ["ok"]:
                    raise StoreDamagedError(f"the run store {self.path} is damaged ({'; '.join(found)}) and could "
                                            "not be moved aside (the data folder is read-only); move it away by hand")
                db.execute("SELECT count(*) FROM runs").fetchone()
            except sqlite3.Error as e:
                raise StoreError(f"cannot read the run store {self.path}: {e}") from None

    def _set_aside_if_damaged(self) -> None:
        """Under the write lock: move a damaged store file (and its -wal, -shm) aside."""
        problem = damage(self.path)
        if problem is None:
            return
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        target, n = f"{self.path}.damaged-{stamp}", 1
        while any(os.path.lexists(target + suffix) for suffix in ("", "-wal", "-shm")):
            target, n = f"{self.path}.damaged-{stamp}-{n}", n + 1
        self.close()
        try:  # the main file last: a fresh store must never meet the old -wal
            for suffix in ("-wal", "-shm", ""):
                if os.path.lexists(self.path + suffix):
                    os.rename(self.path + suffix, target + suffix)
        except OSError as e:
            raise StoreDamagedError(f"the run store {self.path} is damaged ({problem}) and could not be moved "
                                    f"aside ({e.strerror}); move it away by hand") from None
        self.damaged_moved_to, self.damage = target, problem
        log.warning("the run store %s was damaged (%s); it was moved to %s and a new, empty store started; "
                    "'python -m svmcore runs recover %s' copies back every readable run",
                    self.path, problem, target, target)

    def _skip_old_run_folders(self, db: sqlite3.Connection) -> None:
        """A store with no run yet starts its ids above any run folder already in runs/."""
        if db.execute("SELECT 1 FROM sqlite_sequence WHERE name='runs'").fetchone():
            return
        top = _top_run_folder(self.home)
        if top and not db.execute("SELECT 1 FROM runs LIMIT 1").fetchone():
            db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('runs', ?)", (top,))

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is not None and not self.read_only:
            try:  # the file was moved aside (another process found it damaged): follow the path
                moved = os.stat(self.path).st_ino != getattr(self._local, "ino", None)
            except OSError:
                moved = False
            if moved:
                db.close()
                db = self._local.db = None
        if db is None:
            try:
                if self.read_only:
                    db = sqlite3.connect(f"file:{urllib.parse.quote(self.path)}?immutable=1", uri=True,
                                         isolation_level=None, check_same_thread=False)
                else:
                    db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
                    db.execute("PRAGMA busy_timeout=30000")
                    db.execute("PRAGMA journal_mode=WAL")
                    db.execute("PRAGMA synchronous=NORMAL")
                    self._local.ino = os.stat(self.path).st_ino
                db.row_factory = sqlite3.Row
                db.text_factory = text_factory
            except sqlite3.Error as e:
                raise StoreError(f"cannot open the run store {self.path}: {e}") from None
            except OSError as e:
                raise StoreError(f"cannot open the run store {self.path}: {e.strerror}") from None
            self._local.db = db
        return db

    @contextlib.contextmanager
    def _writing(self, transaction: bool = True, on_lock=None) -> Iterator[sqlite3.Connection]:
        with self._thread_lock:
            try:
                lock = open(self._lock_path, "a")
            except OSError as e:
                raise StoreError(f"cannot write to the data folder {self.home}: {e.strerror}") from None
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if on_lock is not None:
                    on_lock()
                db = self._db()
                try:
                    if transaction:
                        db.execute("BEGIN IMMEDIATE")
                    yield db
                    if transaction:
                        db.execute("COMMIT")
                except sqlite3.Error as e:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                    raise StoreError(f"the run store could not be written ({e}); "
                                     "is the disk full or read-only?") from None
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                    raise
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
                lock.close()

    # ------------------------------------------------------------- writes
    def create_run(self, config: dict, status: RunStatus = RunStatus.RUNNING, sweep_id: int | None = None,
                   label: str | None = None, host: dict | None = None,
                   runner_ctime: float | None = None) -> int:
        """A new run's row. ``host`` (as from ``engine.hostinfo.this_host``; none for a run
        whose host is not known yet) and ``runner_ctime`` (this process's start time, which
        with its pid identifies the runner after a restart) come from the caller."""
        host = host or {}
        with self._writing() as db:
            cur = db.execute(
                "INSERT INTO runs (created_at, status, config, host, host_cpus, host_memory_bytes, sweep_id, label, "
                "runner_pid, runner_ctime) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (time.time(), status.value, json.dumps(config, sort_keys=True), host.get("host"), host.get("cpus"),
                 host.get("memory_bytes"), sweep_id, label, os.getpid(), runner_ctime))
            return int(cur.lastrowid)

    def set_started_on(self, run_id: int, host: dict) -> bool:
        """A queued remote run started on ``host`` (as from ``hostinfo.this_host``)."""
        with self._writing() as db:
            cur = db.execute("UPDATE runs SET status=?, host=?, host_cpus=?, host_memory_bytes=? "
                             "WHERE id=? AND status=?",
                             (RunStatus.RUNNING.value, host.get("host"), host.get("cpus"), host.get("memory_bytes"),
                              run_id, RunStatus.QUEUED.value))
            return cur.rowcount == 1

    def complete_imported(self, run_id: int, record: dict) -> bool:
        """Fill a queued or running row from a record made elsewhere: ``status``,
        ``summary``, ``samples`` (tuples as from ``samples``), ``events`` (dicts as from
        ``events``) and ``host``. All or nothing; False if the run had already finished."""
        status = RunStatus(record["status"])
        summary = RunSummary.from_dict(dict(record.get("summary") or {}, run_id=run_id, status=status))
        host = record.get("host") or {}
        events = [(e["seq"], e["t_s"], e["kind"], {k: v for k, v in e.items() if k not in ("seq", "t_s", "kind")})
                  for e in record.get("events") or []]
        with self._writing() as db:
            cur = db.execute(
                "UPDATE runs SET status=?, summary=?, finished_at=?, host=coalesce(?, host), "
                "host_cpus=coalesce(?, host_cpus), host_memory_bytes=coalesce(?, host_memory_bytes) "
                "WHERE id=? AND status IN (?, ?)",
                (status.value, json.dumps(summary.to_dict()), time.time(), host.get("host"), host.get("cpus"),
                 host.get("memory_bytes"), run_id, RunStatus.RUNNING.value, RunStatus.QUEUED.value))
            if cur.rowcount != 1:
                return False
            db.executemany(_INSERT_SAMPLES, [_sample_row(run_id, s) for s in record.get("samples") or []])
            db.executemany(_INSERT_EVENTS, [(run_id, seq, t, kind, json.dumps(data)) for seq, t, kind, data in events])
            return True

    def set_process(self, run_id: int, run_dir: str, worker_pid: int, worker_ctime: float | None,
                    runner_pid: int, runner_ctime: float | None) -> None:
        with self._writing() as db:
            db.execute("UPDATE runs SET run_dir=?, worker_pid=?, worker_ctime=?, runner_pid=?, runner_ctime=?, "
                       "status=? WHERE id=?", (run_dir, worker_pid, worker_ctime, runner_pid, runner_ctime,
                                               RunStatus.RUNNING.value, run_id))

    def set_name(self, run_id: int, name: str | None) -> bool:
        """Name a run (``None`` or blank: no name). False if there is no such run;
        ConfigError for a name that ``spec.names.check_name`` refuses."""
        name = check_name(name)
        with self._writing() as db:
            return db.execute("UPDATE runs SET name=? WHERE id=?", (name, run_id)).rowcount == 1

    def set_colour(self, run_id: int, colour: str | None) -> bool:
        """The colour picked for a run ('#RRGGBB'; ``None``: its own again)."""
        if colour is not None and not re.fullmatch(r"#[0-9A-Fa-f]{6}", colour):
            raise ValueError(f"a colour is '#RRGGBB', not {colour!r}")
        with self._writing() as db:
            return db.execute("UPDATE runs SET colour=? WHERE id=?", (colour and colour.upper(), run_id)).rowcount == 1

    def set_lineage(self, run_id: int, parent_run_id: int | None, change: dict) -> None:
        """Record that ``run_id`` is an attempt of ``fit`` following ``parent_run_id`` (None for
        the first), with ``change``: the knobs it changed and why (JSON-able)."""
        with self._writing() as db:
            db.execute("UPDATE runs SET parent_run_id=?, change=? WHERE id=?",
                       (parent_run_id, json.dumps(change, sort_keys=True), run_id))

    def add_samples(self, run_id: int, rows: Iterable[tuple]) -> None:
        rows = list(rows)
        if not rows:
            return
        with self._writing() as db:
            db.executemany(_INSERT_SAMPLES, [_sample_row(run_id, r) for r in rows])

    def add_events(self, run_id: int, events: Iterable[tuple[int, float, str, dict]]) -> None:
        events = list(events)
        if not events:
            return
        with self._writing() as db:
            db.executemany(_INSERT_EVENTS, [(run_id, seq, t, kind, json.dumps(data)) for seq, t, kind, data in events])

    def finish_run(self, run_id: int, status: RunStatus, summary: RunSummary) -> bool:
        """Set the outcome once. Returns False if the run had already finished."""
        with self._writing() as db:
            cur = db.execute("UPDATE runs SET status=?, summary=?, finished_at=? WHERE id=? AND status IN (?, ?)",
                             (status.value, json.dumps(summary.to_dict()), time.time(), run_id,
                              RunStatus.RUNNING.value, RunStatus.QUEUED.value))
            return cur.rowcount == 1

    def delete_run(self, run_id: int) -> bool:
        if not in_rowid_range(run_id):
            return False
        with self._writing() as db:
            db.execute("DELETE FROM samples WHERE run_id=?", (run_id,))
            db.execute("DELETE FROM events WHERE run_id=?", (run_id,))
            db.execute("DELETE FROM run_tags WHERE run_id=?", (run_id,))
            return db.execute("DELETE FROM runs WHERE id=?", (run_id,)).rowcount == 1

    def tag_run(self, run_id: int, tag: str, remove: bool = False) -> bool:
        """Add (or remove) one tag of a run; False when there was nothing to change.
        ConfigError for a tag ``spec.names.check_tag`` refuses (one stored before the rule
        can still be removed)."""
        if not remove:
            tag = check_tag(tag)
        with self._writing() as db:
            if remove:
                return db.execute("DELETE FROM run_tags WHERE run_id=? AND tag=?", (run_id, tag)).rowcount == 1
            return db.execute("INSERT OR IGNORE INTO run_tags (run_id, tag) VALUES (?,?)",
                              (run_id, tag)).rowcount == 1

    def create_sweep(self, spec: dict) -> int:
        with self._writing() as db:
            cur = db.execute("INSERT INTO sweeps (created_at, spec, status) VALUES (?,?,?)",
                             (time.time(), json.dumps(spec), "running"))
            return int(cur.lastrowid)

    def set_sweep_status(self, sweep_id: int, status: str) -> None:
        with self._writing() as db:
            db.execute("UPDATE sweeps SET status=? WHERE id=?", (status, sweep_id))

    # ------------------------------------------------------------- reads
    def get_run(self, run_id: int) -> RunRecord | None:
        """The run's record (``damage`` names what in its row cannot be read), or None."""
        if not in_rowid_range(run_id):
            return None
        row = self._db().execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        return run_record(row) if row else None

    def list_runs(self, status: Iterable[RunStatus] | None = None, sweep_id: int | None = None,
                  limit: int | None = None, damaged: bool = True) -> list[RunRecord]:
        """Runs, newest first. A run whose row is damaged is listed with its ``damage``;
        ``damaged=False`` leaves such runs out (for readers that compute from the knobs
        and figures, which a damaged row no longer has)."""
        sql, args = "SELECT * FROM runs", []
        where = []
        if status is not None:
            st = [s.value for s in status]
            where.append(f"status IN ({','.join('?' * len(st))})")
            args += st
        if sweep_id is not None:
            where.append("sweep_id=?")
            args.append(sweep_id)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        records = [run_record(r) for r in self._db().execute(sql, args)]
        return records if damaged else [r for r in records if not r.damaged]

    def samples(self, run_id: int) -> list[tuple]:
        """The run's memory samples in time order, each as ``SAMPLE_COLUMNS``, without those
        that cannot be read (logged; ``read_samples`` says which)."""
        rows, damage = self.read_samples(run_id)
        if damage:
            self._warn_once(("samples", run_id, *damage), "run %s: %s; left out ('svmcore runs check' lists the "
                            "damage)", run_id, damage[0])
        return rows

    def read_samples(self, run_id: int) -> tuple[list[tuple], list[str]]:
        """(the run's readable samples in time order, what could not be read): a row that
        holds other than numbers (SQLite keeps whatever a row was given; the cgroup columns
        may be NULL: an uncapped run's) is left out."""
        if not in_rowid_range(run_id):
            return [], []
        rows = [tuple(r) for r in self._db().execute(
            f"SELECT {', '.join(SAMPLE_COLUMNS)} FROM samples WHERE run_id=? ORDER BY t_s", (run_id,))]
        good = [r for r in rows if all(isinstance(v, (int, float)) for v in r[:5])
                and all(v is None or isinstance(v, (int, float)) for v in r[5:])]
        return good, [unreadable_samples(len(rows) - len(good))] if len(good) < len(rows) else []

    def events(self, run_id: int) -> list[dict[str, Any]]:
        """The run's events in order, without those that cannot be read (logged;
        ``read_events`` says which)."""
        events, damage = self.read_events(run_id)
        if damage:
            self._warn_once(("events", run_id, *damage), "run %s: %s; left out ('svmcore runs check' lists the "
                            "damage)", run_id, damage[0])
        return events

    def read_events(self, run_id: int) -> tuple[list[dict[str, Any]], list[str]]:
        """(the run's readable events in order, what could not be read: one line naming
        the first few)."""
        out: list[dict[str, Any]] = []
        if not in_rowid_range(run_id):
            return out, []
        bad = []
        for seq, t, kind, data in self._db().execute(
                "SELECT seq, t_s, kind, data FROM events WHERE run_id=? ORDER BY seq", (run_id,)):
            event, problem = event_row(seq, t, kind, data)
            if problem:
                bad.append(f"event {seq}: {problem}")
            else:
                out.append(event)
        return out, [unreadable_events(bad)] if bad else []

    def query(self, sql: str, args: tuple = ()) -> sqlite3.Cursor:
        """A read of the store's tables for the store's own readers (``damage``)."""
        return self._db().execute(sql, args)

    def _warn_once(self, key: tuple, message: str, *args) -> None:
        """Log a warning about damage once per store object, not on every read of a page."""
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *args)

    def tags(self) -> dict[int, list[str]]:
        """Every tagged run's tags, sorted."""
        out: dict[int, list[str]] = {}
        for run_id, tag in self._db().execute("SELECT run_id, tag FROM run_tags ORDER BY run_id, tag"):
            out.setdefault(run_id, []).append(tag)
        return out

    def sweeps(self) -> list[dict]:
        """Every sweep, newest first: its row, ``spec`` decoded (``{}`` if unreadable) and
        ``damage`` (what cannot be read, if anything)."""
        out = []
        for r in self._db().execute("SELECT * FROM sweeps ORDER BY id DESC"):
            spec, problem = json_column(r["spec"])
            out.append(dict(r) | {"spec": spec or {}, "damage": [f"spec: {problem}"] if problem else []})
        return out

    def integrity_problems(self, limit: int = 20) -> list[str]:
        """What ``PRAGMA integrity_check`` finds wrong with the store file (at most
        ``limit`` lines); empty if it is intact."""
        try:
            found = [row[0] for row in self._db().execute(f"PRAGMA integrity_check({int(limit)})")]
        except sqlite3.DatabaseError as e:
            return [str(e)]
        return [] if found == ["ok"] else found

    # ------------------------------------------------------------- recovery
    def import_rows(self, runs: list[dict], samples: list[dict], events: list[dict], sweeps: list[dict]) -> dict:
        """Copy rows read from another store file (``salvage.salvage``) into this one, in
        one transaction. A run or sweep keeps its id unless this store already uses it,
        then it gets a new one (``run_ids``/``sweep_ids`` map old to new); one already
        here (same creation time and config or spec) is not copied again. Samples and
        events are copied for the runs copied. A run that was still running or queued is
        recorded as lost. Returns the counts."""
        result: dict[str, Any] = {"runs": 0, "samples": 0, "events": 0, "sweeps": 0,
                                  "already_present": {"runs": 0, "sweeps": 0, "samples": 0, "events": 0},
                                  "without_run": {"samples": 0, "events": 0}, "run_ids": {}, "sweep_ids": {}}
        with self._writing() as db:
            run_cols = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
            sweep_ids, new_sweeps = _to_copy(db, "sweeps", "spec", sweeps)
            result["already_present"]["sweeps"] = len(sweep_ids)
            for row in new_sweeps:
                cur = db.execute("INSERT INTO sweeps (id, created_at, spec, status) VALUES (?,?,?,?)",
                                 (row["new_id"], row["created_at"], row["spec"], row["status"]))
                sweep_ids[row["id"]] = int(cur.lastrowid)
            result["sweeps"] = len(new_sweeps)
            result["sweep_ids"] = {r["id"]: sweep_ids[r["id"]] for r in new_sweeps if sweep_ids[r["id"]] != r["id"]}
            present, new_runs = _to_copy(db, "runs", "config", runs)  # present: their samples and events are here
            result["already_present"]["runs"] = len(present)
            run_ids: dict[int, int] = {}
            dirs = {r[0] for r in db.execute("SELECT run_dir FROM runs WHERE run_dir IS NOT NULL")}
            for row in new_runs:
                old = row["id"]
                values = {c: row.get(c) for c in run_cols}
                values["id"] = row["new_id"]
                values["sweep_id"] = sweep_ids.get(row.get("sweep_id"))
                if values["run_dir"] in dirs:
                    values["run_dir"] = None  # that folder is another run's now
                unfinished = values["status"] in (RunStatus.RUNNING.value, RunStatus.QUEUED.value)
                if unfinished:
                    values["status"], values["finished_at"] = RunStatus.LOST.value, time.time()
                cur = db.execute(f"INSERT INTO runs ({', '.join(run_cols)}) VALUES ({', '.join('?' * len(run_cols))})",
                                 [values[c] for c in run_cols])
                new = run_ids[old] = int(cur.lastrowid)
                summary, problem = json_column(values["summary"])  # a damaged one stays as it is: listed so
                summary = summary or {}
                if unfinished:
                    summary.update(status=RunStatus.LOST.value, error={
                        "type": "Lost", "message": "recovered from a damaged store; its outcome was never recorded"})
                if summary and not problem:
                    summary["run_id"] = new
                    db.execute("UPDATE runs SET summary=? WHERE id=?", (json.dumps(summary), new))
            result["runs"] = len(new_runs)
            result["run_ids"] = {old: new for old, new in run_ids.items() if new != old}
            copied = [(run_ids[r["run_id"]], *(r.get(c) for c in SAMPLE_COLUMNS))
                      for r in samples if r["run_id"] in run_ids]
            db.executemany(_INSERT_SAMPLES, copied)
            result["samples"] = len(copied)
            result["already_present"]["samples"] = sum(r["run_id"] in present for r in samples)
            result["without_run"]["samples"] = len(samples) - len(copied) - result["already_present"]["samples"]
            copied = [(run_ids[e["run_id"]], e["seq"], e["t_s"], e["kind"], e["data"])
                      for e in events if e["run_id"] in run_ids]
            db.executemany(_INSERT_EVENTS, copied)
            result["events"] = len(copied)
            result["already_present"]["events"] = sum(e["run_id"] in present for e in events)
            result["without_run"]["events"] = len(events) - len(copied) - result["already_present"]["events"]
        return result

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
