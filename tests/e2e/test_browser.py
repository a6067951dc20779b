"""End-to-end tests in a real browser (Debian chromium via Playwright) against real
``streamlit run app.py`` servers whose runs are real worker processes.

Waiting is done with Playwright's ``expect`` (auto-retrying, with timeouts); chart
data is read from the Plotly graph divs in polling loops with a deadline.
"""

from __future__ import annotations

import logging
import os
import re
import time
from contextlib import contextmanager

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCREENSHOTS = os.path.join(ROOT, "test-artifacts", "screenshots")  # made by the artifacts_dir fixture
log = logging.getLogger(__name__)
SMALL = {"rows": 20_000, "features": 65_536, "epochs": 1}

pytestmark = pytest.mark.e2e

PLOTS_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(p => ({
    title: (p.layout && p.layout.title && (p.layout.title.text || p.layout.title)) || '',
    traces: (p.data || []).map(d => ({name: d.name || '', n: (d.x && d.x.length) || 0})),
}))"""


# ---------------------------------------------------------------- helpers

def settle(page: Page, timeout: float = 30_000) -> None:
    """No script run is going. It can pass before the run an action asked for has begun (a
    widget's change reaches the server, and the page says "running", only a moment later):
    to wait for that run, do the action inside ``rerun``."""
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning",
                                                            timeout=timeout)


# counts the script runs that begin after it is armed (a MutationObserver on the app's run state).
# A short run's "running" and "notRunning" can reach the observer in one batch, when the attribute
# already reads "notRunning" again: a record whose old value is "running" counts it too.
ARM_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (window.__runWatch) window.__runWatch.disconnect();
    window.__runsBegun = 0;
    window.__runWatch = new MutationObserver((records) => {
        if (records.some(r => r.oldValue === 'running')
            || app.getAttribute('data-test-script-state') === 'running') window.__runsBegun += 1;
    });
    window.__runWatch.observe(app, {attributes: true, attributeFilter: ['data-test-script-state'],
                                    attributeOldValue: true});
}"""
RAN_JS = """() => window.__runsBegun > 0
    && document.querySelector('[data-testid="stApp"]').getAttribute('data-test-script-state') === 'notRunning'"""


def _ran(page: Page, what: str, seen_ms: float = 30_000) -> None:
    """Wait for the script run an action asked for, as ``rerun`` describes. Under a full test
    run the browser, busy, can take a short run's "running" and "notRunning" in one render: the
    attribute never changes and no run is counted, though the run happened (seen: a filter
    applied, the page idle). So if no run is counted in ``seen_ms``, the page is saved, that is
    logged, and the wait is for the app to be idle; the assertions after it check the effect."""
    try:
        page.wait_for_function(RAN_JS, timeout=seen_ms, polling=100)
    except PlaywrightTimeout:
        log.warning("no script run counted %d s after %s; waiting for the app to be idle",
                    seen_ms // 1000, what)
        screenshot(page, f"no-run-seen-{re.sub(r'[^a-z]+', '-', what.lower())}")
        settle(page, timeout=60_000)


@contextmanager
def rerun(page: Page, what: str = "the action"):
    """``with rerun(page): <an action that reruns the script>``: returns once a script run
    has begun after the action and none is going, i.e. the page shows what the action led
    to, its stale elements gone (on a loaded machine the server can take seconds to begin)."""
    page.evaluate(ARM_JS)
    yield
    _ran(page, what)


def click_to_rerun(page: Page, target, what: str, done=None) -> None:
    """Click ``target`` (a button or link whose click reruns the script) and return once that
    run is done, as ``rerun``. If no run is counted in 30 s and ``target`` is still there and
    enabled (the click may have missed: an element moving under Playwright's computed point
    after a viewport resize), it is clicked once more, logged; if it is gone, the run happened
    unseen (``_ran``). A click whose second would not be harmless (it launches runs) passes
    ``done``, which says whether the first click took effect: then it is not clicked again
    (seen on CI: a repeat's runs launched, no script run counted, a second click launched
    two more)."""
    page.evaluate(ARM_JS)
    target.click()
    try:
        page.wait_for_function(RAN_JS, timeout=30_000, polling=100)
        return
    except PlaywrightTimeout:
        pass
    if done is not None and done():
        log.warning("no script run counted 30 s after clicking %s, which took effect", what)
    elif target.count() and target.first.is_visible() and target.first.is_enabled():
        log.warning("no script run counted 30 s after clicking %s, which is still there; clicking again", what)
        screenshot(page, f"no-rerun-{re.sub(r'[^a-z]+', '-', what.lower())}")
        page.evaluate(ARM_JS)
        target.click()
    _ran(page, f"clicking {what}")


def download_text(page: Page, button: str, path: str, wait_s: float = 150) -> str:
    """Click the download button named ``button``; the file it gives, saved at ``path``, as text.
    The file is made on the server when the button is clicked (Streamlit's deferred download;
    the button shows a spinner, disabled, while it is made: under a full test run that took
    over a minute). Once, a click's request got no answer at all (the button enabled again, no
    download, nothing in the server's log): if no download has come in 30 s and the button is
    enabled, it is clicked once more, logged. Fails after ``wait_s``."""
    settle(page)
    target = page.get_by_role("button", name=button)
    downloads: list = []

    def collect(download) -> None:
        downloads.append(download)

    page.on("download", collect)
    try:
        target.click()
        start = time.monotonic()
        again = False
        while not downloads and time.monotonic() - start < wait_s:
            if not again and time.monotonic() - start > 30 and target.is_enabled():
                log.warning("no download 30 s after clicking %r, and the button is enabled; clicking again", button)
                screenshot(page, f"no-download-{re.sub(r'[^a-z]+', '-', button.lower())}")
                target.click()
                again = True
            page.wait_for_timeout(250)
    finally:
        page.remove_listener("download", collect)
    assert downloads, f"no download {wait_s:.0f} s after clicking {button!r}"
    downloads[0].save_as(path)
    with open(path, encoding="utf-8") as f:
        return f.read()


def open_app(page: Page, server, path: str = "", heading: str = "SVM Memory Lab") -> None:
    page.goto(f"{server.url}/{path}")
    expect(page.get_by_role("heading", name=heading, level=1)).to_be_visible(timeout=30_000)
    no_exception(page)


def navigate(page: Page, link: str, heading: str) -> None:
    """Go to another page the way a user does, through its link in the sidebar (the same
    session: quicker than loading the app again with ``open_app``); returns when that
    page's script run is done."""
    click_to_rerun(page, page.get_by_test_id("stSidebar").get_by_role("link", name=link, exact=True),
                   f"the {link} link")
    expect(page.get_by_role("heading", name=heading, level=1)).to_be_visible(timeout=30_000)
    settle(page)
    no_exception(page)


def no_exception(page: Page) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)


def plots(page: Page) -> list[dict]:
    """Every Plotly chart on the page: its title (tags stripped) and its traces' sizes."""
    try:
        found = page.evaluate(PLOTS_JS)
    except Exception:  # the graph div was being replaced by a re-render
        return []
    for p in found:
        p["title"] = re.sub(r"<[^>]+>", "", str(p["title"]))
    return found


def rss_points(page: Page) -> int | None:
    """Number of points of the 'total RSS' trace of the memory chart (None if not drawn)."""
    for p in plots(page):
        for t in p["traces"]:
            if t["name"] == "total RSS":
                return t["n"]
    return None


def wait_for_plot(page: Page, predicate, what: str, timeout: float = 30) -> list[dict]:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        seen = plots(page)
        if predicate(seen):
            return seen
        time.sleep(0.25)
    raise AssertionError(f"{what}: not seen within {timeout:.0f} s; charts were {seen}")


def screenshot(page: Page, name: str) -> str:
    """Full-page PNG in test-artifacts/screenshots. Streamlit scrolls inside its main
    container, so the viewport is grown to the content height first."""
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0)
    height = page.evaluate("""() => Math.max(
        document.body.scrollHeight,
        ...Array.from(document.querySelectorAll('[data-testid="stMain"], [data-testid="stSidebarContent"],'
                                                + ' [data-testid="stAppViewContainer"]')).map(e => e.scrollHeight))""")
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], min(int(height) + 40, 12_000))})
    path = os.path.join(SCREENSHOTS, f"{name}.png")
    page.screenshot(path=path, full_page=True)
    page.set_viewport_size(size)
    assert os.path.getsize(path) > 10_000, f"screenshot {path} looks empty"
    return path


def set_number(page: Page, label: str, value: int) -> None:
    box = page.get_by_label(label, exact=True)
    expect(box).to_be_visible()
    box.fill(str(value))
    box.press("Enter")
    expect(box).to_have_value(str(value))
    settle(page)


def check_box(page: Page, label: str) -> None:
    box = page.get_by_label(label, exact=True)
    if not box.is_checked():
        page.get_by_text(label, exact=True).click()
    expect(box).to_be_checked()
    settle(page)


# ---------------------------------------------------------------- (a), (b) live run, cancel

# The live memory chart growing during a launch, and a cancel of a long run, are checked in
# test_train_compare.py (test_launched_run_stays_shown_through_completion_and_oom and
# test_cancelled_run_stays_shown_and_says_so), which watch the same launches on the Train page.


# ---------------------------------------------------------------- (c) compare

# Compare overlaying the latest two runs of the prepared history and listing the knobs that
# differ is checked on test_every_page_renders_and_is_screenshotted's visit to Compare.


# ---------------------------------------------------------------- (d) sweep

def test_sweep_shows_frontier_and_best_under_budget(fresh_server, page):
    server = fresh_server()
    open_app(page, server, "Sweep", heading="Sweep a grid of settings")
    settle(page)
    check_box(page, "set features (columns)")
    set_number(page, "features (columns)", SMALL["features"])
    set_number(page, "rows", SMALL["rows"])
    set_number(page, "epochs (passes)", SMALL["epochs"])
    page.get_by_role("button", name="Remove precision").click()
    settle(page)
    expect(page.get_by_label("batch_size values", exact=True)).to_have_value("256,4096")
    expect(page.get_by_label("precision values", exact=True)).to_have_count(0)
    expect(page.get_by_text("2 combinations, 2 valid")).to_be_visible()

    page.get_by_role("button", name="Start sweep").click()

    def frontier_of_both_runs(ps):
        for p in ps:
            names = {t["name"]: t["n"] for t in p["traces"]}
            if "Pareto frontier" in names and names.get("completed runs") == 2:
                return True
        return False

    wait_for_plot(page, frontier_of_both_runs, "trade-off chart of both runs with a Pareto frontier", timeout=120)
    expect(page.get_by_text(re.compile(r"\d of 2 runs finished"))).to_have_count(0, timeout=30_000)
    settle(page)  # the rerun that replaces the live fragment's answer
    expect(page.get_by_text(re.compile(r"Best under \d+ MiB by accuracy: run \d"))).to_be_visible(timeout=30_000)
    no_exception(page)
    runs = server.runs()
    assert sorted(r.config["batch_size"] for r in runs) == [256, 4096]
    assert all(r.status.value == "completed" and r.sweep_id == 1 for r in runs)
    assert all((r.config["rows"], r.config["features"], r.config["epochs"])
               == (SMALL["rows"], SMALL["features"], SMALL["epochs"]) for r in runs)
    screenshot(page, "sweep-results")


# ---------------------------------------------------------------- (e) every page

PAGES = [("Train", "SVM Memory Lab"), ("Compare", "Compare runs"), ("Sweep", "Sweep a grid of settings"),
         ("Learn", "Learn the remedies"), ("Data", "Datasets")]


def compare_overlays_two_runs_and_lists_differing_knobs(page: Page, history_server) -> None:
    """On Compare with nothing selected: the latest two runs of the prepared history (they
    differ in batch_size and epochs), their knobs that differ listed, one memory curve each."""
    latest = [r.id for r in history_server.runs()[:2]]
    assert sorted(latest) == sorted(history_server.prepared["runs"])
    expect(page.get_by_text("Nothing selected: showing the latest 2 run(s).")).to_be_visible()
    expect(page.get_by_role("heading", name="Knobs that differ")).to_be_visible()
    expect(page.get_by_text("identical knobs")).to_have_count(0)

    def memory_curves(p):  # the stacked chart's memory curves: one per run, named after it
        return [t for t in p["traces"] if t["name"].startswith("run ") and t["n"] > 10]

    ps = wait_for_plot(page, lambda ps: any(len(memory_curves(p)) >= 2 for p in ps), "memory chart with two runs")
    names = {t["name"].split(" · ")[0] for p in ps for t in memory_curves(p)}
    assert names == {f"run {i}" for i in latest}, names
    no_exception(page)


def test_every_page_renders_and_is_screenshotted(history_server, page):
    """Every page, reached through the sidebar; on Compare, the overlay of the latest two
    runs (this was test_compare_overlays_two_runs_and_lists_differing_knobs)."""
    open_app(page, history_server)
    expect(page.get_by_test_id("stAlert").filter(has_text=re.compile(r"Run \d+ completed"))).to_be_visible()
    for link, heading in PAGES:
        # navigate the way a user does: the page links in the sidebar
        page.get_by_test_id("stSidebar").get_by_role("link", name=link, exact=True).click()
        expect(page.get_by_role("heading", name=heading, level=1)).to_be_visible(timeout=30_000)
        settle(page)
        no_exception(page)
        expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
        if link == "Train":
            wait_for_plot(page, lambda ps: (rss_points(page) or 0) > 5, "Train memory chart")
        if link == "Sweep":  # the prepared sweep: its trade-off chart and the answer under the budget
            wait_for_plot(page, lambda ps: any(t["name"] == "Pareto frontier" for p in ps for t in p["traces"]),
                          "prepared sweep's trade-off chart")
            peaks = [(r.id, r.sweep_id, r.status.value, r.summary.peak_rss_mb) for r in history_server.runs()]
            assert page.get_by_text(re.compile(r"Best under \d+ MiB")).count() == 1, (peaks, plots(page))
        if link == "Compare":
            compare_overlays_two_runs_and_lists_differing_knobs(page, history_server)
        screenshot(page, link.lower())
    for link, _ in PAGES:
        assert os.path.exists(os.path.join(SCREENSHOTS, f"{link.lower()}.png"))
