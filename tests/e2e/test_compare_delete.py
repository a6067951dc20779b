"""Compare's Delete in a real browser (issue 18): with nothing selected it deletes
nothing; with a row ticked it names that run, asks once, and deletes only it.
The AppTest side is tests/ui/test_compare_delete.py."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store
from tests.e2e.test_browser import no_exception, open_app, rerun, settle

pytestmark = pytest.mark.e2e

SUMMARY = {"peak_phase": "load", "accuracy": 0.8, "balanced_accuracy": 0.79, "samples_per_s": 5e4}


def finished_runs(home: str, batch_sizes) -> list[int]:
    """Finished run records straight in the store (no worker: only the history matters)."""
    s = Store(home)
    try:
        made = []
        for b in batch_sizes:
            rid = s.create_run({"dataset": "sparse-text", "mode": "memory", "model": "linear-svm", "batch_size": b},
                               status=RunStatus.RUNNING)
            assert s.complete_imported(rid, {"status": "completed", "summary": dict(SUMMARY, peak_rss_mb=100.0 + b)})
            made.append(rid)
        return made
    finally:
        s.close()


def tick_row(page: Page, row: int, runs: int) -> None:
    """Click the row marker (the tick box left of the row) of the history table's ``row``
    (0 = the first row shown); the grid is a canvas, so by position: the header and
    each row are equally high."""
    expect(page.locator(".st-key-history [role=row]")).to_have_count(runs + 1)
    grid = page.locator(".st-key-history [data-testid='stDataFrameResizable']")
    height = grid.bounding_box()["height"] / (runs + 1)
    with rerun(page):
        grid.click(position={"x": 18, "y": height * (row + 1.5)})


def test_sorted_keep_deletes_nothing_then_delete_needs_a_selection_names_it_asks_once_and_deletes_only_it(
        fresh_server, page):
    """One server, three finished runs (peaks 356, 612, 1124 MiB). First: sorting the table
    in the browser reorders its rows: the run asked about is the one in the ticked row, not
    the one that was at that position before; "Keep it" deletes nothing. Then, in a new
    session: with nothing selected Delete deletes nothing; with a row ticked it names that
    run, asks once, and deletes only it. (These were two tests, each with its own server:
    test_after_sorting_the_ticked_row_is_the_run_named_and_keep_deletes_nothing and
    test_delete_needs_a_selection_names_it_asks_once_and_deletes_only_it.)"""
    server = fresh_server()
    made = finished_runs(server.home, (256, 512, 1024))  # peaks 356, 612, 1124 MiB
    open_app(page, server, "Compare", heading="Compare runs")
    settle(page)
    expect(page.locator(".st-key-history [role=row]")).to_have_count(len(made) + 1)
    grid = page.locator(".st-key-history [data-testid='stDataFrameResizable']")
    height = grid.bounding_box()["height"] / (len(made) + 1)
    grid.click(position={"x": 110, "y": height / 2})  # the "exact peak MiB" header: lowest first
    settle(page)
    tick_row(page, 0, len(made))  # the lowest peak: the oldest run, last before sorting
    page.get_by_role("button", name="Delete 1 selected…").click()
    settle(page)
    question = page.locator(".st-key-delete_confirmation")
    expect(question).to_contain_text(f"Delete run: run {made[0]}?")
    page.get_by_role("button", name="Keep it").click()
    settle(page)
    expect(page.locator(".st-key-delete_confirmation")).to_have_count(0)
    assert sorted(r.id for r in server.runs()) == made

    open_app(page, server, "Compare", heading="Compare runs")  # a new session: nothing sorted, nothing ticked
    settle(page)
    expect(page.get_by_text("Nothing selected: showing the latest 2 run(s)")).to_be_visible()
    delete = page.get_by_role("button", name=re.compile("^Delete"))
    expect(delete).to_have_count(1)
    expect(delete).to_be_disabled()  # before the fix: "Delete 2 selected", one click deleted both
    assert sorted(r.id for r in server.runs()) == made

    newest_first = sorted(made, reverse=True)
    tick_row(page, 1, len(made))
    target = newest_first[1]
    expect(delete).to_have_text(re.compile(r"Delete 1 selected"))
    delete.click()
    settle(page)
    question = page.locator(".st-key-delete_confirmation")
    expect(question).to_contain_text(f"Delete run: run {target}")
    expect(question).to_contain_text("cannot be undone")
    for other in set(made) - {target}:
        expect(question).not_to_contain_text(f"run {other}")
    assert sorted(r.id for r in server.runs()) == made, "the first click must only ask"

    page.get_by_role("button", name="Yes, delete run").click()
    settle(page)
    no_exception(page)
    expect(page.get_by_text(f"Deleted run {target}")).to_be_visible()
    assert sorted(r.id for r in server.runs()) == sorted(set(made) - {target})
    expect(page.get_by_role("button", name=re.compile("^Delete"))).to_be_disabled()  # the selection was emptied


