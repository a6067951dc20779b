"""svmcore.app.runs (the run table): the run table's filters, grouping and tags (compared with
==), and tags kept in the real SQLite store."""

from __future__ import annotations

from svmcore.app.runs import choices, filter_rows, group_rows
from svmcore.spec.names import check_tag
from svmcore.store.sqlite import Store


def row(rid, status="completed", mode="memory", sweep=None, peak=None, acc=None, tags=(), dataset="sparse-text"):
    return {"id": rid, "status": status, "mode": mode, "model": "linear-svm", "dataset": dataset, "sweep_id": sweep,
            "peak_mb": peak, "accuracy": acc, "tags": list(tags)}


ROWS = [row(1, peak=250.0, acc=0.75, tags=["demo"]), row(2, mode="stream", sweep=10, peak=80.0, acc=0.74),
        row(3, mode="stream", sweep=2, peak=90.0, acc=0.76, tags=["demo", "class"]),
        row(4, status="oom", mode="memory", sweep=2, peak=150.2)]


def test_choices_are_sorted_and_sweeps_by_number():
    assert choices(ROWS, "sweep_id") == ["sweep 2", "sweep 10", "no sweep"]
    assert choices(ROWS, "status") == ["completed", "oom"]
    assert choices(ROWS, "tags") == ["class", "demo"]


def test_filters_match_any_value_within_a_column_and_every_column():
    assert [r["id"] for r in filter_rows(ROWS, {"mode": ["stream"]})] == [2, 3]
    assert [r["id"] for r in filter_rows(ROWS, {"mode": ["stream"], "sweep_id": ["sweep 2"]})] == [3]
    assert [r["id"] for r in filter_rows(ROWS, {"sweep_id": ["sweep 2", "no sweep"]})] == [1, 3, 4]
    assert [r["id"] for r in filter_rows(ROWS, {"tags": ["demo"], "status": []})] == [1, 3]
    assert filter_rows(ROWS, {}) == ROWS


def test_grouping_counts_runs_and_their_exact_peaks():
    assert group_rows(ROWS, "mode") == [
        {"mode": "memory", "runs": 2, "completed": 1, "lowest exact peak MiB": 250.0,
         "median exact peak MiB": 250.0, "best accuracy": 0.75, "run ids": "1, 4"},
        {"mode": "stream", "runs": 2, "completed": 2, "lowest exact peak MiB": 80.0,
         "median exact peak MiB": 85.0, "best accuracy": 0.76, "run ids": "2, 3"}]


def test_a_run_with_two_tags_counts_in_both_and_untagged_runs_in_their_own_group():
    assert [(g["tag"], g["run ids"]) for g in group_rows(ROWS, "tags")] == [
        ("class", "3"), ("demo", "1, 3"), ("no tag", "2, 4")]


def test_tags_live_in_the_store_and_go_with_their_run(tmp_path):
    store = Store(str(tmp_path))
    a, b = store.create_run({"mode": "memory"}), store.create_run({"mode": "stream"})
    assert store.tag_run(a, check_tag(" demo ")) and store.tag_run(a, "class") and store.tag_run(b, "demo")
    assert not store.tag_run(a, "demo"), "a tag a run has already is not added twice"
    assert store.tags() == {a: ["class", "demo"], b: ["demo"]}
    assert store.tag_run(a, "class", remove=True) and not store.tag_run(a, "class", remove=True)
    store.close()
    store = Store(str(tmp_path))  # they survive reopening
    assert store.tags() == {a: ["demo"], b: ["demo"]}
    store.delete_run(a)
    assert store.tags() == {b: ["demo"]}
    store.close()


def test_cli_runs_tag_adds_lists_removes_and_refuses_in_one_line(tmp_path):
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT

    store = Store(str(tmp_path))
    rid = store.create_run({"mode": "memory"})
    store.close()

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "svmcore", "--home", str(tmp_path), "runs", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)

    done = cli("tag", str(rid), "demo", "low memory")
    assert (done.returncode, done.stdout) == (0, f"run {rid} tags: demo, low memory\n"), done.stderr
    assert json.loads(cli("list", "--json").stdout)[0]["tags"] == ["demo", "low memory"]
    bad = cli("tag", str(rid), "ok", "<b>")
    assert (bad.returncode, bad.stderr) == (2, "svmcore: error: tag: '<b>': use letters, digits, spaces and . : + - / _ "
                                               "only\n")
    assert cli("tag", str(rid), "demo", "--remove").stdout == f"run {rid} tags: low memory\n"
    assert cli("tag", "99", "demo").stderr == "svmcore: error: no run with id 99\n"


def test_a_page_opened_fresh_shows_the_run_that_is_running_not_the_one_queued_behind_it():
    """Issue 43: a new tab opened on the newest run, queued ("No memory samples"), while another ran."""
    from svmcore.app.runs import first_shown

    rows = [{"id": 9, "status": "queued"}, {"id": 8, "status": "running"}, {"id": 7, "status": "completed"}]
    assert first_shown(rows)["id"] == 8
    assert first_shown([r for r in rows if r["id"] != 8])["id"] == 9  # nothing running: the newest
    assert first_shown([]) is None
