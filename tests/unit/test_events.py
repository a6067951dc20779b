"""The worker's event records (svmcore.spec.events): the one parser the engine reads the
event file with, and the worker's writers checked against the records' required fields."""

from __future__ import annotations

import ast
import json
import logging
import pathlib

import pytest

from svmcore.engine.monitor import Monitor
from svmcore.spec import events
from svmcore.spec.events import EVAL, PHASE_END, REQUIRED, EventError, parse, parse_lines

ROOT = pathlib.Path(__file__).resolve().parents[2]


def line(kind, **fields):
    return json.dumps({"kind": kind, **fields}).encode()


def test_parse_puts_seconds_after_the_start_in_place_of_the_wall_clock():
    ev = parse(line(PHASE_END, phase="load", wall_s=1.5, peak_rss_bytes=10, ts=105.0), t0=100.0, fallback_ts=0)
    assert ev == {"kind": PHASE_END, "phase": "load", "wall_s": 1.5, "peak_rss_bytes": 10, "t_s": 5.0}
    assert parse(line("phase_start", phase="load", rss_bytes=1), t0=100.0, fallback_ts=107.0)["t_s"] == 7.0


def test_a_known_kind_without_a_required_field_is_refused_naming_it():
    with pytest.raises(EventError, match="a phase_end event without peak_rss_bytes, wall_s"):
        parse(line(PHASE_END, phase="load", ts=1.0), 0, 0)


def test_optional_fields_may_be_left_out_and_extra_fields_pass():
    ev = parse(line(EVAL, samples=1, accuracy=0.5, balanced_accuracy=0.5, rows=3, train_elapsed_s=0.1, extra=1), 0, 0)
    assert "final" not in ev and ev["extra"] == 1


@pytest.mark.parametrize("bad", [b'{"kind": "eval", "samp', b"[1, 2]", b'{"no": "kind"}', b'{"kind": 3}'])
def test_a_line_that_is_no_event_is_refused(bad):
    with pytest.raises(EventError):
        parse(bad, 0, 0)


def test_an_unknown_kind_passes_as_it_is():
    assert parse(line("newer_kind", anything=1, ts=3.0), 1.0, 0) == {"kind": "newer_kind", "anything": 1, "t_s": 2.0}


def test_the_lines_parse_refuses_are_skipped_and_logged(caplog):
    lines = [line("phase_start", phase="load", rss_bytes=1, ts=1.0), b'{"kind": "progr', b"",
             line(PHASE_END, phase="load", ts=2.0)]
    with caplog.at_level(logging.WARNING, logger="svmcore.spec.events"):
        out = parse_lines(lines, 0, 0, "events.jsonl")
    assert [e["kind"] for e in out] == ["phase_start"]
    assert len(caplog.records) == 2 and "events.jsonl: skipped an event line" in caplog.records[0].message


def test_the_monitor_reads_complete_lines_through_the_parser(tmp_path, caplog):
    path = tmp_path / "events.jsonl"
    path.write_bytes(line("phase_start", phase="load", rss_bytes=1, ts=11.0) + b"\n" + b"{not json}\n"
                     + line(PHASE_END, phase="load", wall_s=1.0, peak_rss_bytes=5, ts=12.0) + b"\n"
                     + b'{"kind": "eval", "sam')  # still being written: left for the next read
    mon = Monitor(str(path), t0=10.0)
    with caplog.at_level(logging.WARNING, logger="svmcore.spec.events"):
        mon.tail_events()
    b = mon.buffers()
    assert [(e["kind"], e["t_s"], e["seq"]) for e in b.events] == [("phase_start", 1.0, 0), (PHASE_END, 2.0, 1)]
    assert mon.imported is False and b.phase is None
    assert any("not JSON" in r.message for r in caplog.records)


def _emits(path: pathlib.Path):
    """(kind constant, keyword names, has **kwargs, line) of every ``*.emit(KIND, ...)`` call."""
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "emit"
                and node.args and isinstance(node.args[0], ast.Name)):
            names = {k.arg for k in node.keywords if k.arg}
            yield node.args[0].id, names, any(k.arg is None for k in node.keywords), node.lineno


def test_every_event_the_worker_writes_has_its_records_required_fields():
    """The wire contract from the writer's side: each emit call names the fields its kind requires."""
    checked = 0
    for path in sorted((ROOT / "svmcore" / "worker").rglob("*.py")):
        for const, names, spread, lineno in _emits(path):
            kind = getattr(events, const, None)
            if kind not in REQUIRED or spread:
                continue
            assert REQUIRED[kind] <= names, f"{path.name}:{lineno}: {kind} lacks {sorted(REQUIRED[kind] - names)}"
            checked += 1
    assert checked >= 10  # the worker writes every kind; fewer calls found means this check went blind
