"""Where rows of the store become typed records: every column is checked here, once.

A row that cannot be read whole (a JSON column cut short, bytes flipped on disk, a value
edited by hand) still becomes a record: what cannot be read is left empty (``{}`` for
config and summary, ``None`` for the rest) and the record's ``damage`` names each
unreadable column and why. So a damaged run is listed as damaged and never takes the
others down, and no reader meets a value of the wrong type.

Text that is not UTF-8 does not stop a query: the connection's ``text_factory`` returns
it as ``Undecoded`` (decoded with replacement characters), which is reported as damage.
"""

from __future__ import annotations

import sqlite3
import typing

from svmcore.spec.events import event_problem
from svmcore.spec.json_values import JSONValueError, accepted, fits_types, kind_of, loads
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.records import RunRecord


class Undecoded(str):
    """A text column's value that is not UTF-8, with replacement characters; ``at`` is
    the offset of its first bad byte."""

    at: int = 0


def text_factory(raw: bytes) -> str:
    """The connections' text factory: UTF-8, else ``Undecoded`` (sqlite3's own raises
    for the whole query: one flipped byte in one run hid every run)."""
    try:
        return raw.decode()
    except UnicodeDecodeError as e:
        text = Undecoded(raw.decode(errors="replace"))
        text.at = e.start
        return text


def value_problem(value, hint) -> str | None:
    """What is wrong with a column's value for a field annotated ``hint``, or None."""
    return _problem(value, accepted(hint))


def _problem(value, types_: tuple[type, ...]) -> str | None:
    if isinstance(value, Undecoded):
        return f"not UTF-8 text (bad byte at {value.at})"
    return None if fits_types(value, types_) else kind_of(value)


def json_column(text, expect: type = dict) -> tuple[typing.Any, str | None]:
    """(value, None) for a JSON column holding a ``expect`` (NULL or empty: None), else
    (None, what is wrong with it)."""
    if text is None or text == "":
        return None, None
    problem = value_problem(text, str)
    if problem:
        return None, problem if isinstance(text, Undecoded) else f"{problem}, not JSON text"
    try:
        return loads(text, expect), None
    except JSONValueError as e:
        return None, str(e)


_SCALARS = [(c, accepted(hint)) for c, hint in typing.get_type_hints(RunRecord).items()
            if c not in ("id", "status", "config", "summary", "change", "damage")]


def run_record(row: sqlite3.Row | dict) -> RunRecord:
    """A row of ``runs`` as a record; what cannot be read is empty and named in ``damage``."""
    d = dict(row)
    damage = []
    for column, types_ in _SCALARS:
        if d.get(column) is None and column == "created_at":
            damage.append("created_at: missing")
        problem = _problem(d.get(column), types_)
        if problem:
            damage.append(f"{column}: {problem}")
            d[column] = None
    try:
        d["status"] = RunStatus(d["status"])
    except ValueError:
        damage.append(f"status: {value_problem(d['status'], RunStatus) or kind_of(d['status'])}, not a run status")
        d["status"] = RunStatus.UNREADABLE
    for column, empty in (("config", {}), ("summary", {}), ("change", None)):
        value, problem = json_column(d.get(column))
        if problem is None and column == "summary" and value:
            problem = "; ".join(RunSummary.problems(value)) or None
        if problem:
            damage.append(f"{column}: {problem}")
        d[column] = empty if problem or value is None else value
    return RunRecord(**dict(d, summary=RunSummary.from_dict(d["summary"])), damage=tuple(damage))


def event_row(seq, t_s, kind, data) -> tuple[dict | None, str | None]:
    """A row of ``events`` as the event readers hold it (its fields with ``seq``, ``t_s``
    and ``kind``), or (None, what is unreadable in it)."""
    value, problem = json_column(data)
    if problem is None and value is None:
        problem = "no data"
    for name, v, hint in (("seq", seq, int), ("t_s", t_s, float), ("kind", kind, str)):
        problem = problem or (f"{name}: {value_problem(v, hint)}" if value_problem(v, hint) else None)
    if problem is None:
        value.update(seq=seq, t_s=t_s, kind=kind)
        problem = event_problem(value)
    return (None, problem) if problem else (value, None)


SHOWN = 3  # unreadable events named in a line; the rest are counted


def unreadable_events(problems: list[str]) -> str:
    """'events: 5 unreadable (event 2: ...; event 4: ...; event 7: ...; 2 more)'."""
    more = f"; {len(problems) - SHOWN:,} more" if len(problems) > SHOWN else ""
    return f"events: {len(problems):,} unreadable ({'; '.join(problems[:SHOWN])}{more})"


def unreadable_samples(n: int) -> str:
    return f"samples: {n:,} unreadable (not numbers)"
