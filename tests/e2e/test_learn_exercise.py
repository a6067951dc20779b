"""Issue #22, Learn's class exercise in a real browser against a real server whose
runs are real worker processes: the learner picks a remedy and guesses, the product
runs the pair, and the reveal puts the guess beside the measured exact peaks (read back
from the store) and the memory model's forecast; the page never reloads meanwhile."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from svmcore.app.exercise import change_pct, pct_text
from tests.e2e.test_browser import no_exception, open_app, set_number, settle
from tests.e2e.test_learn_sweep import choose

pytestmark = pytest.mark.e2e


def test_predict_before_you_measure(fresh_server, page):
    server = fresh_server()
    open_app(page, server, "Learn", heading="Learn the remedies")
    settle(page)
    page.evaluate("window.__learn_no_reload = true")
    page.get_by_text("quick: a tenth of the rows (savings differ)").click()
    settle(page)
    expect(page.get_by_text(re.compile(r"The setup: sparse-text, 10,000 rows"))).to_be_visible()
    choose(page, "Your pick", "Streaming from disk: mode stream")
    set_number(page, "Your guess: change of the exact peak (%)", -40)
    page.get_by_role("button", name="Measure it").click()
    expect(page.get_by_text("Your pick: Streaming from disk: mode stream; your guess: \u221240% of the exact peak.")
           ).to_be_visible(timeout=30_000)
    verdict = page.get_by_test_id("stAlert").filter(has_text=re.compile(r"(Well judged|Too hopeful|Too cautious)"))
    expect(verdict).to_be_visible(timeout=180_000)
    before, after = sorted(server.runs(), key=lambda r: r.id)
    assert (before.status.value, after.status.value, before.config["mode"], after.config["mode"]) == (
        "completed", "completed", "memory", "stream")
    measured = pct_text(change_pct(before.result.peak_rss_mb, after.result.peak_rss_mb))
    expect(verdict).to_contain_text(f"you said \u221240%, the exact peak changed {measured}")
    expect(page.get_by_text(re.compile(r"The memory model's lower bounds \(this machine is not calibrated\)"))
           ).to_be_visible()
    assert page.evaluate("window.__learn_no_reload === true"), "the page was reloaded"
    no_exception(page)
    page.get_by_role("button", name="Try another guess").click()
    expect(page.get_by_role("button", name="Measure it")).to_be_visible()
