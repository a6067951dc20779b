"""Issue 43 in a real browser (Debian chromium via Playwright) against a real
``streamlit run app.py`` server whose runs are real worker processes: "Make it fit" ends
with its result card in view (at 1400x900 and 1024x768), the run that did not fit beside
the one that fits, and "Use these knobs" fills the sidebar with the fitting knobs; a
remedy of the diagnosis under a run that did not fit is one "Apply" away from the sidebar.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from svmcore.engine import limits
from tests.e2e.test_browser import check_box, click_to_rerun, no_exception, open_app, screenshot, set_number, settle

pytestmark = [pytest.mark.e2e,
              # the attempts run under the budget as a cgroup cap; under rlimit a memmap copy's mapping counts too
              pytest.mark.skipif(not limits.cgroup_available(), reason="no writable cgroup v1 memory controller")]

# 60,000 rows in memory: an exact peak of about 180 MiB, owned by load (200 before the one run); mode
# memmap or stream brings it well below the budget
KNOBS = {"features (columns)": 65_536, "rows": 60_000, "epochs (passes)": 1}
BUDGET = 170
# 200,000 rows: their load holds more than the budget charges even when the libraries' pages are charged
# to the run too: out of memory in load under a cgroup cap of BUDGET (a run that completes under its cap
# met it, though its RSS, which counts library pages charged elsewhere, may stand above the cap line)
BIG = {**KNOBS, "rows": 200_000}


def launch_small(page: Page, server, size: tuple[int, int], cap_mb: int | None = None, knobs: dict = KNOBS) -> None:
    """Train at ``size``: the knobs of ``knobs`` (and a memory cap) set, and Launch pressed."""
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_app(page, server)
    settle(page)
    check_box(page, "set features (columns)")
    for label, value in knobs.items():
        set_number(page, label, value)
    if cap_mb is not None:
        check_box(page, "set memory cap (MB)")
        set_number(page, "memory cap (MB)", cap_mb)
    page.get_by_role("button", name="Launch run").click()


def test_make_it_fits_card_is_in_view_when_it_ends_and_fills_the_sidebar(fresh_server, page: Page):
    """Issue 43: when the loop ended the page re-laid out, the path sat in a collapsed
    expander and only the last run's panel showed; the result was set beside an
    intermediate attempt instead of the run that did not fit. At the smaller screen, where
    the card has the least room to be in view (the larger one cost another 22 s on CI)."""
    size = (1024, 768)
    server = fresh_server()
    launch_small(page, server, size)
    expect(page.get_by_test_id("stAlert").filter(has_text="Run 1 completed")).to_be_visible(timeout=180_000)
    settle(page)
    [first] = server.runs()
    assert first.summary.peak_rss_mb > BUDGET + 5, first.summary.peak_rss_mb  # it does not fit the budget

    panel = page.get_by_text("Fit a memory budget", exact=True)
    panel.scroll_into_view_if_needed()
    if not page.get_by_label("budget (MiB)").is_visible():
        panel.click()
    set_number(page, "budget (MiB)", BUDGET)
    go = page.get_by_role("button", name="Make it fit")
    go.scroll_into_view_if_needed()
    go.click()
    card = page.locator(".st-key-fit_card")
    expect(card).to_be_visible(timeout=300_000)
    settle(page)
    expect(card.get_by_text(re.compile(rf"Make it fit {BUDGET} MiB: it fits"))).to_be_in_viewport()
    expect(card).to_contain_text("Did not fit: run 1")  # the run that did not fit, not an attempt of the loop
    runs = {r.id: r for r in server.runs()}
    fitting = max(runs)
    expect(card).to_contain_text(f"Fits: run {fitting}")
    assert runs[fitting].status.value == "completed" and runs[fitting].summary.peak_rss_mb <= BUDGET
    expect(card).to_contain_text("Knobs changed, and why")
    screenshot(page, f"fit-card-{size[0]}x{size[1]}")

    # the fitting knobs, not the budget's cap, go to the sidebar; the rest of the setting stays
    use = card.get_by_role("button", name=re.compile(r"^Use these knobs: "))
    changed = use.inner_text().removeprefix("Use these knobs: ")
    click_to_rerun(page, use, "Use these knobs")
    fitted = runs[fitting].config
    for knob in ("mode", "precision", "representation"):
        expect(page.get_by_role("combobox", name=knob, exact=True)).to_have_value(fitted[knob])
    assert fitted["mode"] != "memory" or fitted["precision"] != "float64", (changed, fitted)
    expect(page.get_by_label("rows", exact=True)).to_have_value(str(KNOBS["rows"]))
    expect(page.get_by_label("set memory cap (MB)", exact=True)).not_to_be_checked()
    no_exception(page)


def test_a_remedy_of_the_diagnosis_is_applied_to_the_sidebar(fresh_server, page: Page):
    """Doctor's remedies get the same button as the fit's card: the run's knobs with the
    remedy's change, in the sidebar, ready to launch."""
    server = fresh_server()
    launch_small(page, server, (1024, 768), cap_mb=BUDGET, knobs=BIG)
    expect(page.get_by_text("Why it did not fit.")).to_be_visible(timeout=180_000)
    settle(page)
    expect(page.get_by_label("budget (MiB)")).to_have_value(str(BUDGET))  # it started at 256
    apply = page.get_by_role("button", name="Apply").first
    apply.scroll_into_view_if_needed()
    click_to_rerun(page, apply, "Apply")
    from svmcore.app.doctor import diagnose
    from svmcore.app.folders import DataFolders
    from svmcore.app.reference import remedies_reference
    from svmcore.predict.calibration import load_calibration
    from svmcore.store.sqlite import Store

    store = Store(server.home)
    try:  # the first remedy, as the page ranked it
        change = diagnose(store.get_run(1), BUDGET, load_calibration(server.home), remedies_reference(),
                          DataFolders(server.home).cache_dir)["remedies"][0]["change"]
    finally:
        store.close()
    for knob, value in change.items():
        expect(page.get_by_role("combobox", name=knob.replace("_", " "), exact=True)).to_have_value(str(value))
    expect(page.get_by_label("rows", exact=True)).to_have_value(str(BIG["rows"]))
    no_exception(page)
