"""The Learn and Sweep pages in a real browser (Debian chromium via Playwright) against
real ``streamlit run app.py`` servers: Learn teaches on first open (the reference
measurement) and replaces it with this machine's numbers when its runs end, without a
reload; the claims table lists every remedy of the advice; Learn's class exercise (guess, measure,
reveal beside the measured peaks and the forecast); nothing is cut at 1024 px; the
trade-off chart's axes are clamped to the data.

The product screenshots (assets/screenshots/learn.png and sweep.png) are written to
test-artifacts/screenshots, and copied to assets/ when SVMCORE_UPDATE_ASSETS=1.
"""

from __future__ import annotations

import os
import re
import shutil
import time

import pytest
from playwright.sync_api import Page, expect

from svmcore.app.exercise import change_pct, pct_text
from svmcore.app.remedies import ADVICE
from tests.e2e.test_browser import navigate, no_exception, open_app, screenshot, set_number, settle

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ASSETS = os.path.join(ROOT, "assets", "screenshots")

pytestmark = pytest.mark.e2e

OUT_OF_VIEW_JS = """(width) => {
    const out = [];
    const main = document.querySelector('[data-testid="stMain"]');
    for (const el of main.querySelectorAll('[data-testid="stElementContainer"], [data-testid="stVerticalBlock"],'
                                           + ' [data-testid="stHorizontalBlock"], table, button, .js-plotly-plot')) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 && r.height === 0) continue;
        if (r.left < -0.5 || r.right > width + 0.5) out.push(['box', el.tagName, el.getAttribute('data-testid'),
                                                             Math.round(r.left), Math.round(r.right),
                                                             (el.innerText || '').slice(0, 60)]);
    }
    // text cut with an ellipsis: a button or label whose text is wider than its box
    const labels = 'button p, [data-testid="stWidgetLabel"] p, [data-testid="stMetricLabel"] p';
    for (const el of main.querySelectorAll(labels)) {
        if (el.scrollWidth > el.clientWidth + 1) out.push(['text', el.tagName, '', el.scrollWidth, el.clientWidth,
                                                          el.innerText.slice(0, 60)]);
    }
    if (document.documentElement.scrollWidth > width + 0.5) out.push(['page', document.documentElement.scrollWidth]);
    if (main.scrollWidth > main.clientWidth + 0.5) out.push(['main', main.scrollWidth, main.clientWidth]);
    return out;
}"""

TRADEOFF_JS = """() => {
    const p = Array.from(document.querySelectorAll('.js-plotly-plot'))
        .find(p => p.data && p.data.some(d => d.name === 'completed runs'));
    if (!p) return null;
    const pts = p.data.filter(d => d.name === 'completed runs' || d.name === 'out of memory').flatMap(d => d.x);
    const acc = p.data.filter(d => d.name === 'completed runs').flatMap(d => d.y);
    return {x: p.layout.xaxis.range, y: p.layout.yaxis.range, autorange: p.layout.xaxis.autorange,
            peaks: pts, acc: acc};
}"""


def product_screenshot(page: Page, name: str) -> None:
    """The page as a user sees it, for the README: test-artifacts, and assets/ on request."""
    path = screenshot(page, name)
    if os.environ.get("SVMCORE_UPDATE_ASSETS") == "1":
        shutil.copyfile(path, os.path.join(ASSETS, f"{name}.png"))


def claims_table(page: Page):
    table = page.locator("table.claims")
    expect(table).to_be_visible()
    return table


def choose(page: Page, label: str, option: str) -> None:
    """Pick ``option`` in the Streamlit selectbox labelled ``label`` (its list can close
    again when a rerun lands just after the click: open it until the option shows). The box
    is scrolled into view first: a list opened by the click that scrolled to it closed again
    at once, and each such try cost the 3 s wait."""
    box = page.get_by_test_id("stSelectbox").filter(has_text=label)
    item = page.get_by_role("option", name=option, exact=True)
    for _ in range(5):
        settle(page)
        box.scroll_into_view_if_needed()
        box.click()
        try:
            expect(item).to_be_visible(timeout=3_000)
            break
        except AssertionError:
            page.keyboard.press("Escape")
    item.click()
    settle(page)


def test_learn_teaches_on_first_open_and_replaces_the_reference_with_this_machine(fresh_server, page):
    """Learn on a fresh server: the reference numbers at once, one remedy measured here
    replacing them without a reload, then the class exercise (predict, measure, reveal)."""
    server = fresh_server()
    open_app(page, server, "Learn", heading="Learn the remedies")
    settle(page)
    table = claims_table(page)
    # numbers at once, and said to be the reference machine's
    expect(page.get_by_text(re.compile(r"Rows marked reference machine were measured there, not on yours"))
           ).to_be_visible()
    expect(table.get_by_text("reference machine").first).to_be_visible()
    assert table.get_by_text(re.compile(r"^\d[\d,]* → \d[\d,]* \([−+]?[\d.]+%\)$")).count() >= 15
    for r in ADVICE:  # every remedy of the advice, with the saving it claims
        row = table.locator("tr").filter(has=page.locator("b", has_text=re.compile(f"^{re.escape(r.title)}$")))
        expect(row.first).to_be_visible()
        expect(row.first.locator("td").nth(1)).to_have_text(r.claim)
    assert not server.runs(), "opening the page must not start runs"

    # measure one remedy here, at the quick size, and watch the page replace the reference by itself
    page.evaluate("window.__learn_no_reload = true")
    page.get_by_text("quick: a tenth of the rows (savings differ)").click()
    settle(page)
    choose(page, "Remedy", "Periodic gc.collect()")
    page.get_by_role("button", name="Measure periodic gc.collect() on this machine").click()
    expect(page.get_by_text(re.compile(r"Measuring on this machine: runs 1, 2")).first).to_be_visible(timeout=30_000)
    expect(page.get_by_text("Measured on this machine (runs 1 and 2)")).to_be_visible(timeout=180_000)
    gc_row = claims_table(page).locator("tr").filter(has=page.locator("b", has_text="Periodic gc.collect()"))
    expect(gc_row.get_by_text("this machine", exact=True)).to_be_visible()
    expect(gc_row).to_contain_text("(measured with rows=10,000)")
    expect(page.get_by_text(re.compile(r"Measuring on this machine: runs"))).to_have_count(0)
    assert page.evaluate("window.__learn_no_reload === true"), "the page was reloaded"
    no_exception(page)
    assert [(r.id, r.status.value) for r in sorted(server.runs(), key=lambda r: r.id)] == [(1, "completed"),
                                                                                           (2, "completed")]

    # Issue #22, the class exercise, on the same page (this was test_learn_exercise.py's
    # test_predict_before_you_measure, with its own server): the learner picks a remedy and
    # guesses, the product runs the pair, and the reveal puts the guess beside the measured
    # exact peaks (read back from the store) and the memory model's forecast; no reload meanwhile
    expect(page.get_by_text(re.compile(r"The setup: sparse-text, 10,000 rows"))).to_be_visible()
    choose(page, "Your pick", "Streaming from disk: memory → stream")
    set_number(page, "Your guess: change of the exact peak (%)", -40)
    page.get_by_role("button", name="Measure it").click()
    expect(page.get_by_text("Your pick: Streaming from disk: memory → stream; your guess: \u221240% of the exact peak.")
           ).to_be_visible(timeout=30_000)
    verdict = page.get_by_test_id("stAlert").filter(has_text=re.compile(r"(Well judged|Too hopeful|Too cautious)"))
    expect(verdict).to_be_visible(timeout=180_000)
    runs = sorted(server.runs(), key=lambda r: r.id)
    assert [r.id for r in runs] == [1, 2, 3, 4], [(r.id, r.label) for r in runs]
    before, after = runs[2:]
    assert (before.status.value, after.status.value, before.config["mode"], after.config["mode"]) == (
        "completed", "completed", "memory", "stream")
    measured = pct_text(change_pct(before.summary.peak_rss_mb, after.summary.peak_rss_mb))
    expect(verdict).to_contain_text(f"you said \u221240%, the exact peak changed {measured}")
    expect(page.get_by_text(re.compile(r"The memory model's lower bounds \(this machine is not calibrated\)"))
           ).to_be_visible()
    assert page.evaluate("window.__learn_no_reload === true"), "the page was reloaded"
    no_exception(page)
    page.get_by_role("button", name="Try another guess").click()
    expect(page.get_by_role("button", name="Measure it")).to_be_visible()


def _fits(page: Page, width: int) -> list:
    page.set_viewport_size({"width": width, "height": 900})
    settle(page)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0)
    deadline = time.monotonic() + 10
    while True:  # plotly charts resize to the new width a moment after it changes
        bad = page.evaluate(OUT_OF_VIEW_JS, width)
        if not bad or time.monotonic() > deadline:
            return bad
        time.sleep(0.25)


def test_learn_and_sweep_cut_nothing_at_1024_px_and_the_frontier_axes_are_clamped(history_server, page):
    open_app(page, history_server, "Learn", heading="Learn the remedies")
    for link, heading in (("Learn", "Learn the remedies"), ("Sweep", "Sweep a grid of settings")):
        if link != "Learn":
            navigate(page, link, heading)
        settle(page)
        if link == "Sweep":
            expect(page.get_by_text(re.compile(r"Best under \d+ MiB by accuracy"))).to_be_visible()
        else:
            claims_table(page)
        assert _fits(page, 1024) == [], f"{link}: cut at 1024 px"
        no_exception(page)
        page.set_viewport_size({"width": 1400, "height": 1000})
        settle(page)
        product_screenshot(page, link.lower())
    # on the same Sweep page (this was test_sweep_frontier_axes_are_clamped_to_the_data)
    sweep_frontier_axes_are_clamped_to_the_data(page)


def sweep_frontier_axes_are_clamped_to_the_data(page):
    """On the Sweep page of the prepared history: the trade-off chart's axes hug the data."""
    settle(page)
    expect(page.get_by_text(re.compile(r"Best under \d+ MiB by accuracy"))).to_be_visible()
    expect(page.get_by_text(re.compile(r"^(Speed cost: |Speed: )"))).to_be_visible()
    deadline, axes = time.monotonic() + 30, None
    while time.monotonic() < deadline and not axes:
        axes = page.evaluate(TRADEOFF_JS)
        time.sleep(0.2 if not axes else 0)
    assert axes and axes["x"] and axes["autorange"] is False, axes
    lo, hi, peaks = axes["x"][0], axes["x"][1], axes["peaks"]
    span = max(peaks) - min(peaks)
    slack = 0.1 * span + 0.05 * max(peaks)
    assert min(peaks) - slack <= lo < min(peaks) and max(peaks) < hi <= max(peaks) + slack, axes
    ylo, yhi = axes["y"]
    assert ylo < min(axes["acc"]) and yhi > max(axes["acc"]) and yhi - ylo < 0.2, axes
    no_exception(page)
