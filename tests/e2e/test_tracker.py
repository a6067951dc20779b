"""Issue #22, "sweep like Optuna and W&B", in a real browser against a real server
whose runs are real worker processes: the sweep's parallel coordinates (read from the
Plotly figure in the page), and the run table's filters, grouping and tags on Compare
(tags checked in the real store)."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from svmcore.store.sqlite import Store
from tests.e2e.test_browser import no_exception, open_app, rerun, settle
from tests.e2e.test_compare_delete import tick_row

pytestmark = pytest.mark.e2e

PARCOORDS_JS = """() => {
    const el = document.querySelector('.st-key-parallel .js-plotly-plot');
    if (!el || !el.data || !el.data.length) return null;
    return el.data[0].dimensions.map(d => ({label: d.label, n: d.values.length}));
}"""


def _tags(home: str) -> dict:
    store = Store(home)
    try:
        return store.tags()
    finally:
        store.close()


def _pick(page, key: str, option: str) -> None:
    page.locator(f".st-key-{key} input").click()
    with rerun(page):
        page.get_by_role("option", name=option, exact=True).click()
    page.keyboard.press("Escape")


def test_sweep_parallel_coordinates(history_server, page):
    open_app(page, history_server, "Sweep", heading="Sweep a grid of settings")
    deadline, dims = time.monotonic() + 30, None
    while time.monotonic() < deadline and not dims:
        dims = page.evaluate(PARCOORDS_JS)
        time.sleep(0.25)
    assert dims == [{"label": "batch_size", "n": 2}, {"label": "exact peak (MiB)", "n": 2},
                    {"label": "samples/s", "n": 2}, {"label": "accuracy", "n": 2}], dims
    no_exception(page)


def test_compare_filters_groups_and_tags(history_server, page):
    sweep_runs = sorted(history_server.prepared["sweep_runs"])
    total = len(history_server.runs())
    open_app(page, history_server, "Compare", heading="Compare runs")
    settle(page)
    _pick(page, "runs_filter_sweep_id", f"sweep {history_server.prepared['sweep']}")
    expect(page.get_by_text(f"Showing {len(sweep_runs)} of {total} runs.")).to_be_visible()
    tables = page.get_by_test_id("stDataFrame").count()
    _pick(page, "runs_filter_group", "mode")
    expect(page.get_by_test_id("stDataFrame")).to_have_count(tables + 1)  # the groups, above the runs

    expect(page.locator(".st-key-tags_text input")).to_have_count(0)  # a tag acts on ticked rows only
    for row in range(len(sweep_runs)):
        tick_row(page, row, len(sweep_runs))
    page.locator(".st-key-tags_text input").fill("demo")
    page.get_by_role("button", name="Add tag").click()
    settle(page)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _tags(history_server.home) != {i: ["demo"] for i in sweep_runs}:
        time.sleep(0.2)
    assert _tags(history_server.home) == {i: ["demo"] for i in sweep_runs}
    expect(page.locator(".st-key-tags_text input")).to_have_value("")  # issue 43: the box kept "demo"
    page.locator(".st-key-tags_text input").fill("<b>")
    page.get_by_role("button", name="Add tag").click()
    expect(page.get_by_test_id("stAlert").filter(has_text=re.compile("use letters, digits"))).to_be_visible()
    no_exception(page)

    page.locator(".st-key-tags_text input").fill("demo")
    page.get_by_role("button", name="Remove tag").click()
    settle(page)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _tags(history_server.home):
        time.sleep(0.2)
    assert _tags(history_server.home) == {}, "the tags of the shared history are removed again"
