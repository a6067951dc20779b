"""Read every row that is still readable out of a damaged run store, page by page.

Python's sqlite3 has no ``.recover``, and SQL on a damaged file stops at the first bad
page. This module reads the file itself (the SQLite file format: fixed-size pages,
table b-trees whose leaves hold the rows as records), so one lost page costs only the
rows on it:

- the file (and its -wal, folded in by SQLite on a private copy when it can) is read
  page by page; a page past the end of a truncated file, or one of an unknown kind, is
  *lost*;
- each table's b-tree is walked from its root page (found in the schema on page 1);
  an interior page's keys bound the ids a lost child held, which gives the count of
  unreadable rows;
- leaf pages no walk reached (their parent was lost) and that are not on the free
  list are read too, and their rows are assigned to the table whose shape they fit;
- a row is kept only if it decodes and looks like a row of its table (types, JSON
  text, a known status); anything else is counted as unreadable.

The damaged file itself is never written.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import struct
import tempfile
from dataclasses import dataclass, field

from svmcore.spec.errors import SvmcoreError
from svmcore.spec.status import RunStatus

TABLES = ("runs", "samples", "events", "sweeps")
STATUSES = tuple(s.value for s in RunStatus if s is not RunStatus.UNREADABLE)  # what a row can hold
_HEADER = b"SQLite format 3\x00"
_LEAF, _INTERIOR = 0x0D, 0x05


class SalvageError(SvmcoreError):
    """The file cannot be salvaged at all (missing, unreadable, not SQLite)."""


@dataclass
class TableSalvage:
    """The readable rows of one table (dicts by column name, ``rowid`` included) and how
    many rows were lost: those on pages that are gone (bounded by the parent page's keys;
    ``unbounded`` if the last page of the table is gone, whose rows cannot be counted)
    and those whose record did not decode."""

    name: str
    columns: list[str]
    rows: dict[int, dict] = field(default_factory=dict)
    unreadable: int = 0
    unbounded: bool = False
    lost_pages: int = 0
    _lost_ranges: list[tuple[int, int]] = field(default_factory=list)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = 0
    for i in range(8):
        b = buf[pos + i]
        value = (value << 7) | (b & 0x7F)
        if b < 0x80:
            return value, pos + i + 1
    value = (value << 8) | buf[pos + 8]
    return value, pos + 9


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


class _File:
    def __init__(self, data: bytes):
        self.data = data
        if data[:16] == _HEADER:
            size = struct.unpack(">H", data[16:18])[0]
            self.page_size = 65536 if size == 1 else size
            self.usable = self.page_size - data[20]
            self.encoding = {1: "utf-8", 2: "utf-16-le", 3: "utf-16-be"}.get(struct.unpack(">I", data[56:60])[0],
                                                                           "utf-8")
            self.freelist_trunk, self.freelist_count = struct.unpack(">II", data[32:40])
        else:  # page 1's header is gone: assume the defaults this project's stores use
            self.page_size, self.usable, self.encoding = 4096, 4096, "utf-8"
            self.freelist_trunk = self.freelist_count = 0
        if self.page_size < 512 or self.page_size & (self.page_size - 1):
            raise SalvageError("the file's page size is not valid; it is not an SQLite database")
        self.size = len(data)  # the bytes the file really has: the padding below is none of them
        if len(data) % self.page_size:  # a torn last page: its cells that survive whole are read
            self.data = data = data + bytes(self.page_size - len(data) % self.page_size)
        self.pages = len(data) // self.page_size

    def page(self, pgno: int) -> bytes | None:
        if not 1 <= pgno <= self.pages:
            return None
        return self.data[(pgno - 1) * self.page_size: pgno * self.page_size]

    def in_file(self, pgno: int, end: int) -> bool:
        """Whether the first ``end`` bytes of page ``pgno`` are all in the file (not past
        the cut of a torn last page, whose missing end reads as zeros: a cell that reaches
        into it would decode as a row that never was, its last values zero)."""
        return (pgno - 1) * self.page_size + end <= self.size

    def header_offset(self, pgno: int) -> int:
        return 100 if pgno == 1 else 0

    def kind(self, pgno: int) -> int | None:
        page = self.page(pgno)
        return None if page is None else page[self.header_offset(pgno)]

    def cells(self, pgno: int) -> list[int]:
        page = self.page(pgno)
        h = self.header_offset(pgno)
        n = struct.unpack(">H", page[h + 3:h + 5])[0]
        start = h + (12 if page[h] in (0x02, 0x05) else 8)
        return [struct.unpack(">H", page[start + 2 * i:start + 2 * i + 2])[0] for i in range(n)
                if self.in_file(pgno, start + 2 * i + 2)]

    def freelist(self) -> tuple[set[int], bool]:
        """Pages on the free list, and whether the whole list could be read."""
        free: set[int] = set()
        trunk, seen = self.freelist_trunk, set()
        while trunk:
            page = self.page(trunk)
            if page is None or trunk in seen:
                return free, False
            seen.add(trunk)
            free.add(trunk)
            nxt, count = struct.unpack(">II", page[:8])
            if count > (self.usable - 8) // 4:
                return free, False
            free.update(struct.unpack(f">{count}I", page[8:8 + 4 * count]))
            trunk = nxt
        return free, len(free) >= self.freelist_count

    def leaf_cell(self, pgno: int, offset: int, overflow_pages: set[int]) -> tuple[int, bytes]:
        """(rowid, record payload) of a table leaf cell; follows overflow pages."""
        page = self.page(pgno)
        size, pos = _varint(page, offset)
        rowid, pos = _varint(page, pos)
        u = self.usable
        x = u - 35
        if size <= x:
            if not self.in_file(pgno, pos + size):
                raise ValueError("the row's cell runs past the end of the file")
            return _signed(rowid), page[pos:pos + size]
        m = ((u - 12) * 32 // 255) - 23
        k = m + ((size - m) % (u - 4))
        local = k if k <= x else m
        if not self.in_file(pgno, pos + local + 4):
            raise ValueError("the row's cell runs past the end of the file")
        payload = bytearray(page[pos:pos + local])
        nxt = struct.unpack(">I", page[pos + local:pos + local + 4])[0]
        chain: list[int] = []
        while len(payload) < size:
            over = self.page(nxt)
            if over is None or nxt in chain or not self.in_file(nxt, 4 + min(u - 4, size - len(payload))):
                raise ValueError("an overflow page of the row is lost")
            chain.append(nxt)
            payload += over[4:u][:size - len(payload)]
            nxt = struct.unpack(">I", over[:4])[0]
        overflow_pages.update(chain)
        return _signed(rowid), bytes(payload)

    def record(self, payload: bytes) -> list:
        header_size, pos = _varint(payload, 0)
        types = []
        while pos < header_size:
            t, pos = _varint(payload, pos)
            types.append(t)
        if pos != header_size:
            raise ValueError("bad record header")
        out, pos = [], header_size
        for t in types:
            if t == 0:
                out.append(None)
            elif 1 <= t <= 6:
                n = (1, 2, 3, 4, 6, 8)[t - 1]
                out.append(int.from_bytes(payload[pos:pos + n], "big", signed=True))
                pos += n
            elif t == 7:
                out.append(struct.unpack(">d", payload[pos:pos + 8])[0])
                pos += 8
            elif t in (8, 9):
                out.append(t - 8)
            elif t >= 12:
                n = (t - 12) // 2
                raw = payload[pos:pos + n]
                out.append(raw.decode(self.encoding) if t % 2 else bytes(raw))
                pos += n
            else:
                raise ValueError(f"reserved serial type {t}")
            if pos > len(payload):
                raise ValueError("record runs past its payload")
        return out


def _json_text(value) -> bool:
    if not isinstance(value, str):
        return False
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _valid(table: str, row: dict) -> bool:
    """Whether a decoded record looks like a row of ``table`` (not garbage from a bad page)."""
    if table == "runs":
        return (_number(row.get("created_at")) and row.get("status") in STATUSES and _json_text(row.get("config"))
                and (row.get("summary") is None or _json_text(row.get("summary"))))
    if table == "samples":
        return (isinstance(row.get("run_id"), int) and _number(row.get("t_s"))
                and all(isinstance(row.get(c), int) for c in ("rss_bytes", "anon_bytes", "file_bytes", "hwm_bytes")))
    if table == "events":
        return (isinstance(row.get("run_id"), int) and isinstance(row.get("seq"), int) and _number(row.get("t_s"))
                and isinstance(row.get("kind"), str) and _json_text(row.get("data")))
    if table == "sweeps":
        return _number(row.get("created_at")) and _json_text(row.get("spec")) and isinstance(row.get("status"), str)
    return False


# the columns of the current schema, for a file whose own schema cannot be read
def _known_columns() -> dict[str, list[str]]:
    from svmcore.store.sqlite import SCHEMA, _add_missing_columns
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(SCHEMA)
        _add_missing_columns(db)
        return {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in TABLES}
    finally:
        db.close()


def _columns_of(sql: str, table: str) -> list[str] | None:
    db = sqlite3.connect(":memory:")
    try:
        db.execute(sql)
        return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
    except sqlite3.Error:
        return None
    finally:
        db.close()


class _Reader:
    def __init__(self, f: _File):
        self.f = f
        self.visited: set[int] = set()
        self.overflow: set[int] = set()

    def walk(self, root: int, on_row, lo: int = -(1 << 63), hi: int | None = None, depth: int = 0,
             on_lost=None) -> None:
        """Every row of the table b-tree under ``root``; rows hold ids in (lo, hi]."""
        f = self.f
        kind = f.kind(root)
        if kind not in (_LEAF, _INTERIOR) or root in self.visited or depth > 20:
            if on_lost:
                on_lost(lo, hi)
            return
        self.visited.add(root)
        try:
            offsets = f.cells(root)
        except struct.error:
            if on_lost:
                on_lost(lo, hi)
            return
        if kind == _LEAF:
            for off in offsets:
                on_row(root, off)
            return
        page = f.page(root)
        h = f.header_offset(root)
        prev = lo
        for off in offsets:
            try:
                child = struct.unpack(">I", page[off:off + 4])[0]
                key, _ = _varint(page, off + 4)
                key = _signed(key)
            except (struct.error, IndexError):
                continue
            self.walk(child, on_row, prev, key, depth + 1, on_lost)
            prev = key
        right = struct.unpack(">I", page[h + 8:h + 12])[0]
        self.walk(right, on_row, prev, hi, depth + 1, on_lost)


def _load(path: str) -> bytes:
    """The file's bytes with its -wal folded in (by SQLite, on a private copy), so the
    damaged original is never written. Without a readable -wal: the file alone."""
    if not os.path.isfile(path):
        raise SalvageError(f"there is no file {path}")
    with tempfile.TemporaryDirectory(prefix="svmcore-salvage-") as tmp:
        copy = os.path.join(tmp, "copy.sqlite")
        try:
            shutil.copyfile(path, copy)
            if os.path.isfile(path + "-wal"):
                shutil.copyfile(path + "-wal", copy + "-wal")
                try:
                    db = sqlite3.connect(copy, isolation_level=None)
                    try:
                        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    finally:
                        db.close()
                except sqlite3.Error:
                    pass  # the -wal could not be applied: salvage the main file as it is
            with open(copy, "rb") as fh:
                return fh.read()
        except OSError as e:
            raise SalvageError(f"cannot read {path}: {e.strerror}") from None


def salvage(path: str) -> dict[str, TableSalvage]:
    """Every readable row of the run store file at ``path``, per table."""
    data = _load(path)
    if len(data) < 512:
        raise SalvageError(f"{path} is too short to hold any run ({len(data)} bytes)")
    f = _File(data)
    reader = _Reader(f)
    roots, roots_seq, columns = _schema(f, reader)
    out = {t: TableSalvage(t, columns[t]) for t in TABLES}
    for table, root in roots.items():
        _walk_table(f, reader, out[table], root)
    last_ids = _last_ids(f, reader, roots_seq)  # before the orphans: its walk marks sqlite_sequence's pages
    _read_orphan_leaves(f, reader, out)
    _count_lost_rows(out, last_ids)
    if not roots and not any(t.rows or t.unreadable for t in out.values()):
        if data[:16] == _HEADER:
            raise SalvageError(f"{path} is an SQLite database but not a run store: it has no runs, samples, events "
                               "or sweeps table")
        raise SalvageError(f"{path} is not a run store: it is not an SQLite file and no run could be read from it")
    return out


def _schema(f: _File, reader: _Reader) -> tuple[dict[str, int], list[int], dict[str, list[str]]]:
    """From the schema on page 1: the root page of each run-store table, those of
    sqlite_sequence, and each table's columns (the known ones where the schema is lost)."""
    roots: dict[str, int] = {}
    roots_seq: list[int] = []
    columns = dict(_known_columns())

    def schema_row(pgno, off):
        values = (_read_cell(f, reader, pgno, off) or (None, []))[1]  # a cell that does not decode: no values
        kind, name, _tbl, root, sql = (values + [None] * 5)[:5]
        if kind == "table" and name == "sqlite_sequence" and isinstance(root, int):
            roots_seq.append(root)
        if kind == "table" and name in TABLES and isinstance(root, int):
            roots[name] = root
            cols = _columns_of(sql, name) if isinstance(sql, str) else None
            if cols:
                columns[name] = cols

    if f.data[:16] == _HEADER:
        reader.walk(1, schema_row)
    return roots, roots_seq, columns


def _read_cell(f: _File, reader: _Reader, pgno: int, off: int) -> tuple[int, list] | None:
    try:
        rowid, payload = f.leaf_cell(pgno, off, reader.overflow)
        return rowid, f.record(payload)
    except (ValueError, IndexError, struct.error, UnicodeDecodeError):
        return None


def _as_row(t: TableSalvage, cell: tuple[int, list] | None) -> dict | None:
    """The cell as a row of table ``t``, or None if it does not decode or fit."""
    if cell is None:
        return None
    rowid, values = cell
    cols = t.columns
    if len(values) > len(cols):
        return None
    row = dict(zip(cols, values + [None] * (len(cols) - len(values))))
    if t.name in ("runs", "sweeps") and row.get("id") is None:
        row["id"] = rowid  # INTEGER PRIMARY KEY: the record stores NULL, the id is the rowid
    row["rowid"] = rowid
    return row if _valid(t.name, row) else None


def _walk_table(f: _File, reader: _Reader, t: TableSalvage, root: int) -> None:
    def on_row(pgno, off):
        row = _as_row(t, _read_cell(f, reader, pgno, off))
        if row is None:
            t.unreadable += 1
        else:
            t.rows[row["rowid"]] = row

    def on_lost(lo, hi):
        t.lost_pages += 1
        t._lost_ranges.append((lo, hi))

    reader.walk(root, on_row, on_lost=on_lost)


def _last_ids(f: _File, reader: _Reader, roots_seq: list[int]) -> dict[str, int]:
    """The last id each AUTOINCREMENT table handed out: it bounds what its lost last page held."""
    last_ids: dict[str, int] = {}

    def seq_row(pgno, off):
        values = (_read_cell(f, reader, pgno, off) or (None, []))[1]
        name, seq = (values + [None] * 2)[:2]
        if name in TABLES and isinstance(seq, int):
            last_ids[name] = seq

    for root in roots_seq:
        reader.walk(root, seq_row)
    return last_ids


def _read_orphan_leaves(f: _File, reader: _Reader, out: dict[str, TableSalvage]) -> None:
    """Leaves whose parent page was lost (neither reached by a walk nor on the free
    list): each row goes to the first table whose shape it fits."""
    free, _ = f.freelist()
    for pgno in range(1, f.pages + 1):
        if pgno in reader.visited or pgno in free or pgno in reader.overflow or f.kind(pgno) != _LEAF:
            continue
        try:
            offsets = f.cells(pgno)
        except struct.error:
            continue
        for off in offsets:
            cell = _read_cell(f, reader, pgno, off)
            for table in ("samples", "events", "runs", "sweeps"):
                row = _as_row(out[table], cell)
                if row is not None:
                    out[table].rows.setdefault(row["rowid"], row)
                    break


def _count_lost_rows(out: dict[str, TableSalvage], last_ids: dict[str, int]) -> None:
    """Add to each table's unreadable count the ids its lost pages held but no read found."""
    for t in out.values():
        for lo, hi in t._lost_ranges:
            if hi is None and t.name in last_ids:
                hi = max(last_ids[t.name], lo)
            if hi is None:
                t.unbounded = True
                continue
            found = sum(1 for r in t.rows if lo < r <= hi)
            t.unreadable += max(0, (hi - max(lo, 0)) - found)
