"""Issue 40: one damaged row must not take the history down.

``update runs set summary=substr(summary,1,100) where id=3`` made ``runs list`` and
``--json`` end in a JSONDecodeError traceback (and four dashboard pages show an error)
while ``runs check`` said ok; four flipped bytes did the same (sqlite3 raised for the
whole query on text that is not UTF-8). Now every row becomes a record at one boundary
(``store.rows``): a damaged run is listed as damaged, with its id, its status if
readable and what cannot be read; the others as usual; ``runs check`` names it and
exits 1. Each case below damages one part of a real history made by the CLI."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import pytest

from tests.conftest import cli, two_at_a_time
from tests.faults.test_cli_errors import one_line_error
from tests.faults.test_damaged_store import LEAN, _dataset


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A sweep of two real runs (lean path, a second each), as the CLI records them; a
    pristine copy of its home and each run's listing."""
    home = str(tmp_path_factory.mktemp("rows") / "home")
    os.makedirs(home)
    proc = cli("sweep", f"--dataset={_dataset(home)}", *LEAN, "--grid", "seed=0,1", "--json", home=home, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    listed = {r["id"]: r for r in json.loads(cli("runs", "list", "--json", home=home, check=0).stdout)}
    assert sorted(listed) == [1, 2] and all(r["status"] == "completed" for r in listed.values()), listed
    return home, listed


def _copy(made, tmp_path) -> str:
    home = str(tmp_path / "home")
    shutil.copytree(made[0], home)
    return home


def _sql(home: str, statement: str) -> None:
    db = sqlite3.connect(os.path.join(home, "runs.sqlite"))
    try:
        db.execute(statement)
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()


def _flip_bytes(home: str, n: int = 4) -> None:
    """Flip ``n`` bytes in the middle of run 2's summary as it lies in the file (a disk's
    damage, not an edit: SQLite's own checks still pass)."""
    path = os.path.join(home, "runs.sqlite")
    _sql(home, "SELECT 1")  # checkpointed: the summary's bytes are in the main file
    db = sqlite3.connect(path)
    [summary] = db.execute("SELECT summary FROM runs WHERE id=2").fetchone()
    db.close()
    data = bytearray(open(path, "rb").read())
    # a stretch of its middle as it lies in the file: a record longer than SQLite keeps on its page goes on
    # in overflow pages, so the summary's bytes are contiguous only page by page
    text = summary.encode()
    at = next(at for k in range(len(text) // 2, len(text), 64) for piece in [text[k:k + 40]]
              for at in [data.find(piece)] if at > 0 and data.find(piece, at + 1) < 0)
    middle = at + 20
    for i in range(middle, middle + n):
        data[i] ^= 0xFF
    open(path, "wb").write(bytes(data))


# each: how run 2 (or sweep 1) is damaged, and what the product says about it
DAMAGE = {
    "summary cut short (the issue's)": ("UPDATE runs SET summary=substr(summary,1,100) WHERE id=2",
                                        "summary: not JSON ("),  # the JSON reader's words on where it stopped
    "4 flipped bytes in the summary": (_flip_bytes, "summary: not UTF-8 text"),
    "summary an array": ("UPDATE runs SET summary='[1,2]' WHERE id=2", "summary: a JSON array, not a JSON object"),
    "summary 100k nested [": ("UPDATE runs SET summary=printf('%.100000c', '[') WHERE id=2",
                              "summary: JSON nested too deeply to read"),
    "a peak that is text": ("UPDATE runs SET summary=json_set(summary, '$.peak_rss_mb', 'abc') WHERE id=2",
                            "summary: peak_rss_mb is the text 'abc'"),
    "config cut short": ("UPDATE runs SET config=substr(config,1,50) WHERE id=2", "config: not JSON"),
    "status unknown": ("UPDATE runs SET status='complxted' WHERE id=2",
                       "status: the text 'complxted', not a run status"),
    "start time text": ("UPDATE runs SET created_at='yesterday' WHERE id=2", "created_at: the text 'yesterday'"),
    "name not UTF-8": ("UPDATE runs SET name=CAST(x'41ff42' AS TEXT) WHERE id=2", "name: not UTF-8 text"),
    "an event cut short": ("UPDATE events SET data=substr(data,1,5) WHERE run_id=2 AND seq=1",
                           "events: 1 unreadable (event 1: not JSON"),
    "a phase end without its peak": ("UPDATE events SET data='{\"phase\": \"load\"}' WHERE run_id=2 AND "
                                     "kind='phase_end' AND seq=(SELECT min(seq) FROM events WHERE run_id=2 AND "
                                     "kind='phase_end')", "a phase_end event without peak_rss_bytes, wall_s"),
    "samples that are text": ("UPDATE samples SET rss_bytes='x' WHERE rowid IN "
                              "(SELECT rowid FROM samples WHERE run_id=2 LIMIT 3)", "samples: 3 unreadable"),
}
IN_ROW = {k for k in DAMAGE if not k.startswith(("an event", "a phase end", "samples"))}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_run_is_listed_as_damaged_and_the_others_as_usual(made, tmp_path, case):
    home = _copy(made, tmp_path)
    how, said = DAMAGE[case]
    how(home) if callable(how) else _sql(home, how)

    text, listed, check, shown, exported = two_at_a_time(lambda *args: cli(*args, home=home), [
        ("runs", "list"), ("runs", "list", "--json"), ("runs", "check"), ("runs", "show", "2"), ("runs", "export", "2")])
    for proc in (text, listed, shown, exported):
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (proc.args, proc.stderr[-2000:])
    lines = {int(line.split()[0]): line for line in text.stdout.splitlines()[1:]}
    assert sorted(lines) == [1, 2], text.stdout  # never dropped, never taking the other down
    assert "DAMAGED" not in lines[1] and f"{made[1][1]['peak_rss_mb']:.1f}" in lines[1], lines[1]
    if case in IN_ROW:
        assert "DAMAGED: " in lines[2] and said in lines[2], lines[2]
        assert lines[2].split()[1] == ("unreadable" if case == "status unknown" else "completed"), lines[2]

    rows = {r["id"]: r for r in json.loads(listed.stdout)}
    assert rows[1] == made[1][1]
    assert bool(rows[2]["damage"]) == (case in IN_ROW) and all(said in d for d in rows[2]["damage"]), rows[2]

    assert check.returncode == 1, (check.stdout, check.stderr)
    assert f"run 2 ({'unreadable' if case == 'status unknown' else 'completed'}) is damaged: " in check.stdout
    assert said in check.stdout and "run 1 " not in check.stdout, check.stdout

    assert "DAMAGED: " in shown.stdout and said in shown.stdout, shown.stdout
    assert any(said in d for d in json.loads(exported.stdout)["damage"]), exported.stdout[-2000:]


@pytest.mark.parametrize("case", ["summary cut short (the issue's)", "status unknown", "config cut short"])
def test_what_needs_a_damaged_row_whole_refuses_it_in_one_line(made, tmp_path, case):
    """doctor read an empty summary as 'completed at 0 MiB'; predict would serve a model
    that cannot be checked against its run."""
    home = _copy(made, tmp_path)
    _sql(home, DAMAGE[case][0])
    for command in (("doctor", "2"), ("predict", "--model", "2", "--data", os.path.join(os.path.dirname(home),
                                                                                          "tiny.svm"))):
        one_line_error(cli(*command, home=home), "run 2's record in the store is damaged", DAMAGE[case][1],
                       "'svmcore runs check' lists the damage")
    assert cli("doctor", "1", home=home, check=0).stdout.startswith("run 1 completed at ")


def test_a_damaged_sweep_is_named_by_runs_check(made, tmp_path):
    home = _copy(made, tmp_path)
    _sql(home, "UPDATE sweeps SET spec=substr(spec,1,10)")
    check = cli("runs", "check", home=home, check=1)
    assert "sweep 1 is damaged: spec: not JSON" in check.stdout, check.stdout
    assert cli("runs", "list", home=home, check=0).stdout.count("DAMAGED") == 0


def test_a_sound_history_is_ok_and_check_names_damage_in_json(made, tmp_path):
    """Every row a real run wrote reads as sound: nothing is called damaged that is not."""
    home = _copy(made, tmp_path)
    check = cli("runs", "check", home=home, check=0)
    assert "every run's row, events and samples read: ok" in check.stdout, check.stdout
    assert json.loads(cli("runs", "check", "--json", home=home, check=0).stdout)["ok"] is True
    assert json.loads(cli("runs", "export", "1", home=home, check=0).stdout)["damage"] == []
    _sql(home, DAMAGE["summary cut short (the issue's)"][0])
    found = json.loads(cli("runs", "check", "--json", home=home, check=1).stdout)
    assert not found["ok"] and found["damaged_runs"] == [
        {"id": 2, "status": "completed", "damage": [found["damaged_runs"][0]["damage"][0]]}], found
    assert found["damaged_runs"][0]["damage"][0].startswith("summary: not JSON (")
