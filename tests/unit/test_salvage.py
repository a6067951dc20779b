"""Salvaging a damaged run store (svmcore.salvage) and copying what it read into the
current store (Store.import_rows), on real SQLite files.

The oracle for "readable" is SQLite itself: on a truncated file, a row can be read by
its id exactly when the pages on its path survive (and, on a torn last page, its cell
survives whole: SQLite returns a row the cut went through, its missing end read as zeros)."""

from __future__ import annotations

import os
import shutil
import sqlite3

import pytest

from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.salvage import SalvageError, salvage
from svmcore.store.sqlite import Store
from tests.unit.test_store import progress

PAGE = 4096


def sample(i: int) -> tuple:
    return (i * 0.02, 1000 + i, 600 + i, 400, 2000 + i, 900 + i, 30)  # with a cgroup's charge and cache


def make_store(home, runs=30, samples_each=300, events_each=40, delete=(3,)):
    s = Store(str(home))
    sweep = s.create_sweep({"grid": {"seed": [1, 2]}})
    for r in range(runs):
        rid = s.create_run({"r": r, "payload": "x" * 500}, sweep_id=sweep if r < 2 else None)
        s.add_samples(rid, [sample(i) for i in range(samples_each)])
        s.add_events(rid, [(i, i * 0.1, "progress", progress(i)) for i in range(events_each)])
        s.finish_run(rid, RunStatus.COMPLETED, RunSummary(rid, accuracy=0.5, extra={"big": "q" * 5000}))
    for rid in delete:
        s.delete_run(rid)
    s.close()
    return os.path.join(str(home), "runs.sqlite")


def readable_by_sqlite(path, table, intact):
    """The rows SQLite itself can still read, probing one id at a time (the ids of
    ``intact``, the rows as they were written: id -> values). (writable_schema lets it
    open a file shorter than its header says; the connection only reads.) SQLite reads
    a torn last page's missing end as zeros, so a row whose cell the cut went through
    comes back with its last values zero: only a row read as it was written counts."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.execute("PRAGMA writable_schema=ON")
    out = {}
    try:
        for i in intact:
            try:
                row = db.execute(f"SELECT * FROM {table} WHERE rowid=?", (i,)).fetchone()
            except sqlite3.DatabaseError:
                continue
            if row is not None and tuple(row) == tuple(intact[i]):
                out[i] = row
    finally:
        db.close()
    return out


def all_rows(path, table):
    db = sqlite3.connect(path)
    try:
        return {r[0]: r[1:] for r in db.execute(f"SELECT rowid, * FROM {table}")}
    finally:
        db.close()


@pytest.fixture
def intact(tmp_path):
    path = make_store(tmp_path / "home")
    copy = str(tmp_path / "intact.sqlite")
    shutil.copyfile(path, copy)
    return copy


def values(row, columns):
    return tuple(row[c] for c in columns)


def test_an_intact_file_is_read_whole(intact):
    got = salvage(intact)
    for table in ("runs", "samples", "events", "sweeps"):
        expected = all_rows(intact, table)
        t = got[table]
        assert {k: values(r, t.columns) for k, r in t.rows.items()} == expected
        assert t.unreadable == 0 and t.lost_pages == 0 and not t.unbounded
    assert 3 not in got["runs"].rows  # a deleted run stays deleted


def test_a_file_truncated_to_half_gives_exactly_what_sqlite_can_still_read(intact, tmp_path):
    whole = {t: all_rows(intact, t) for t in ("runs", "samples", "events")}
    half = str(tmp_path / "half.sqlite")
    shutil.copyfile(intact, half)
    os.truncate(half, os.path.getsize(half) // 2)
    got = salvage(half)
    for table, rows in whole.items():
        oracle = readable_by_sqlite(half, table, rows)
        t = got[table]
        assert {k: values(r, t.columns) for k, r in t.rows.items()} == {k: tuple(v) for k, v in oracle.items()}
        assert 0 < len(t.rows) < len(rows)
    runs = got["runs"]
    assert runs.unreadable == len(whole["runs"]) - len(runs.rows)  # ids are bounded by sqlite_sequence
    assert got["samples"].unbounded  # its last page is gone: how many rows it held is unknown


def test_rows_below_a_lost_interior_page_are_found_on_their_own(tmp_path):
    path = make_store(tmp_path / "home", runs=12, samples_each=6000, delete=())
    whole = all_rows(path, "samples")
    db = sqlite3.connect(path)
    pages = [p for (p,) in db.execute("SELECT pageno FROM dbstat WHERE name='samples' AND pagetype='internal' "
                                      "AND path != '/'")]
    db.close()
    assert pages, "the samples table is expected to be three levels deep"
    raw = bytearray(open(path, "rb").read())
    raw[(pages[0] - 1) * PAGE:pages[0] * PAGE] = b"\0" * PAGE  # zero an interior page: its leaves are orphaned
    open(path, "wb").write(bytes(raw))
    got = salvage(path)["samples"]
    assert {k: values(r, got.columns) for k, r in got.rows.items()} == {k: tuple(v) for k, v in whole.items()}


def test_rows_still_in_the_wal_are_read(tmp_path):
    home = tmp_path / "home"
    path = make_store(home, runs=3, delete=())
    holder = Store(str(home))  # an open store keeps its last writes in runs.sqlite-wal
    rid = holder.create_run({"late": True})
    holder.add_samples(rid, [sample(i) for i in range(10)])
    aside = str(tmp_path / "aside.sqlite")
    for suffix in ("", "-wal"):
        shutil.copyfile(path + suffix, aside + suffix)
    holder.close()
    before = open(aside, "rb").read(), open(aside + "-wal", "rb").read()
    got = salvage(aside)
    assert rid in got["runs"].rows
    assert sum(r["run_id"] == rid for r in got["samples"].rows.values()) == 10
    assert (open(aside, "rb").read(), open(aside + "-wal", "rb").read()) == before  # never written


def test_a_file_that_is_not_sqlite_or_a_tiny_one_is_an_error(tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"this is not sqlite" * 1000)
    with pytest.raises(SalvageError, match="is not a run store: it is not an SQLite file"):
        salvage(str(junk))  # issue 18: it gave nothing, and `runs recover` said "0 recovered" and exit 0
    tiny = tmp_path / "tiny"
    tiny.write_bytes(b"x" * 10)
    with pytest.raises(SalvageError):
        salvage(str(tiny))
    with pytest.raises(SalvageError):
        salvage(str(tmp_path / "missing"))


# ---------------------------------------------------------------- copying into the current store

def rows_of(tables):
    return {name: [t.rows[k] for k in sorted(t.rows)] for name, t in tables.items()}


def test_import_keeps_free_ids_renumbers_taken_ones_and_never_copies_twice(intact, tmp_path):
    got = rows_of(salvage(intact))
    s = Store(str(tmp_path / "new"))
    try:
        mine = s.create_run({"mine": True})  # takes id 1
        result = s.import_rows(got["runs"], got["samples"], got["events"], got["sweeps"])
        assert result["runs"] == 29 and result["sweeps"] == 1
        assert result["run_ids"] == {1: 31}  # id 1 was taken; the others kept theirs
        assert s.get_run(mine).config == {"mine": True}
        moved = s.get_run(31)
        assert moved.config["r"] == 0 and moved.summary.run_id == 31
        assert s.samples(31) == [sample(i) for i in range(300)]
        assert [e["samples"] for e in s.events(31)] == list(range(40))
        assert s.get_run(2).sweep_id == moved.sweep_id is not None
        assert s.samples(2) == [sample(i) for i in range(300)]
        again = s.import_rows(got["runs"], got["samples"], got["events"], got["sweeps"])
        assert again["runs"] == 0 and again["already_present"]["runs"] == 29
        assert again["samples"] == 0 and again["already_present"]["samples"] == 29 * 300
        assert len(s.list_runs()) == 30 and not s.integrity_problems()
    finally:
        s.close()


def test_imported_runs_that_never_finished_are_lost(tmp_path):
    old = Store(str(tmp_path / "old"))
    rid = old.create_run({"unfinished": True})
    old.add_samples(rid, [sample(0)])
    old.close()
    got = rows_of(salvage(os.path.join(str(tmp_path / "old"), "runs.sqlite")))
    s = Store(str(tmp_path / "new"))
    try:
        s.import_rows(got["runs"], got["samples"], got["events"], got["sweeps"])
        rec = s.get_run(rid)
        assert rec.status == RunStatus.LOST and "damaged store" in rec.summary.error_message
        assert s.samples(rid) == [sample(0)]
    finally:
        s.close()


@pytest.mark.parametrize("torn_bytes", [0, 1000, 2048, PAGE - 1])
def test_a_torn_last_page_gives_what_sqlite_still_reads_from_it(intact, tmp_path, torn_bytes):
    """A file cut inside a page: SQLite reads the page's missing end as zeros and still
    returns the rows whose cells survive; salvage must not drop the whole page."""
    whole = all_rows(intact, "samples")
    cut = str(tmp_path / "cut.sqlite")
    shutil.copyfile(intact, cut)
    os.truncate(cut, (os.path.getsize(cut) // 2) // PAGE * PAGE + torn_bytes)
    t = salvage(cut)["samples"]
    oracle = readable_by_sqlite(cut, "samples", whole)
    assert {k: values(r, t.columns) for k, r in t.rows.items()} == {k: tuple(v) for k, v in oracle.items()}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = 0
    for i in range(9):
        b = buf[pos + i]
        if i == 8:
            return (value << 8) | b, pos + 9
        value = (value << 7) | (b & 0x7F)
        if b < 0x80:
            return value, pos + i + 1


def test_a_row_the_cut_of_a_torn_page_went_through_is_not_read_with_zeros_for_its_lost_end(tmp_path):
    """The faults test truncated a store to half inside a samples page, and `runs recover`
    brought back a sample (1.719, 0, 0, 0, 0) the run never had: the cell the cut went
    through kept its record header and its first values, and salvage read the page's
    missing end as zeros for the rest. Such a row is unreadable, wherever the cut falls."""
    path = make_store(tmp_path / "home", runs=4, samples_each=300, events_each=0, delete=())
    whole = all_rows(path, "samples")
    db = sqlite3.connect(path)
    leaves = [p for (p,) in db.execute("SELECT pageno FROM dbstat WHERE name='samples' AND pagetype='leaf' "
                                       "ORDER BY pageno")]
    db.close()
    pgno = leaves[len(leaves) // 2]
    raw = open(path, "rb").read()
    page = raw[(pgno - 1) * PAGE:pgno * PAGE]
    n = int.from_bytes(page[3:5], "big")
    offset = int.from_bytes(page[8 + 2 * (n // 2):10 + 2 * (n // 2)], "big")  # a cell in the page's middle
    size, pos = _varint(page, offset)
    rowid, pos = _varint(page, pos)
    assert rowid in whole and pos + size < PAGE
    cut = str(tmp_path / "cut.sqlite")
    for end in range(offset + 1, pos + size):  # every cut inside the cell
        with open(cut, "wb") as f:
            f.write(raw[:(pgno - 1) * PAGE + end])
        t = salvage(cut)["samples"]
        assert rowid not in t.rows, (end - offset, values(t.rows[rowid], t.columns), whole[rowid])
        assert all(values(r, t.columns) == whole[k] for k, r in t.rows.items())
        assert t.unbounded  # the rows past the cut are lost, and cannot be counted
    with open(cut, "wb") as f:  # cut just past the cell: its row is read whole
        f.write(raw[:(pgno - 1) * PAGE + pos + size])
    t = salvage(cut)["samples"]
    assert values(t.rows[rowid], t.columns) == whole[rowid]
