"""The trace knob in a real browser: a traced run's allocation sites under its memory chart (the
table, the icicle, a phase's peak picked), memray's flame graph downloaded, Compare putting two
traced runs' top lines side by side, and Learn showing what tracing costs beside monitoring."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import Server
from tests.e2e.test_browser import download_text, no_exception, open_app, screenshot, settle
from tests.e2e.test_learn_sweep import choose
from tests.helpers import make_history

pytestmark = pytest.mark.e2e

TRACED_SCRIPT = r"""
import json, sys, time
from svmcore.app.lab import Lab

home, small = sys.argv[1], json.loads(sys.argv[2])
lab = Lab(home)
ids = [lab.runs.launch(dict(small, batch_size=b)) for b in (256, 2048)]
deadline = time.monotonic() + 300
while time.monotonic() < deadline and any(not lab.store.get_run(i).status.is_finished() for i in ids):
    time.sleep(0.1)
print(json.dumps({"runs": ids, "statuses": [lab.store.get_run(i).status.value for i in ids]}))
"""


def test_a_traced_runs_sites_are_drawn_downloaded_and_compared(tmp_path, artifacts_dir, page: Page):
    home = str(tmp_path / "home")
    os.makedirs(home)
    made = make_history(TRACED_SCRIPT, home, {"rows": 5000, "features": 4096, "epochs": 1, "monitor": "off",
                                              "trace": True})
    assert made["statuses"] == ["completed", "completed"], made
    server = Server(home, os.path.join(artifacts_dir, "streamlit-sites.log"))
    try:
        open_app(page, server)
        panel = page.locator(f".st-key-sites_{made['runs'][1]}")
        expect(panel.get_by_text("Allocation sites")).to_be_visible(timeout=60_000)
        expect(panel.get_by_text("(VmHWM)", exact=False)).to_be_visible()
        page.wait_for_function("""() => {
            const el = document.querySelector('.st-key-train_sites_icicle .js-plotly-plot');
            return el && el.data && el.data[0].type === 'icicle' && el.data[0].ids.length > 3;
        }""", timeout=30_000)
        expect(panel.locator("[data-testid='stDataFrame']")).to_be_visible()
        panel.get_by_role("radio", name="train's peak").click()
        settle(page)
        expect(panel.get_by_text("train's peak:", exact=False)).to_be_visible()
        screenshot(page, "sites-panel")
        html = download_text(page, "memray's flame graph (HTML)", str(tmp_path / "flame.html"))
        assert "memray" in html.lower() and len(html) > 10_000
        assert "cdn.jsdelivr" not in html  # its scripts inlined: it draws offline
        page.goto(f"{server.url}/Compare?runs={made['runs'][0]},{made['runs'][1]}")
        expect(page.get_by_role("heading", name="Allocation sites at each run's traced peak")).to_be_visible(
            timeout=60_000)
        expect(page.locator(".st-key-cmp_sites [data-testid='stDataFrame']")).to_be_visible()
        no_exception(page)
        page.goto(f"{server.url}/Learn")
        choose(page, "Remedy", "Turning off logging and visualisation callbacks")
        also = page.locator(".st-key-learn_see_also")
        expect(also.get_by_text("Beside it: allocation tracing (the trace knob).")).to_be_visible(timeout=60_000)
        expect(also.get_by_text("the untraced rows per CPU second", exact=False).first).to_be_visible()
        no_exception(page)
    finally:
        server.stop()
