"""Issue #22, the story view, in a real browser (Debian chromium via Playwright)
against a real ``streamlit run app.py`` whose runs are real worker processes:

- pick a baseline and three remedies, start: the sidebar and the controls are gone,
  the slides are clicked through (question, baseline, each remedy with its headline,
  the trade-off), each chart titled with its slide's headline, all in view at 1024x768;
- the story exported as HTML opens from disk with no network, with every headline,
  is clicked through, and saves a slide as a PNG that is a real PNG of the export size.
"""

from __future__ import annotations

import html
import re
import struct

import pytest
from playwright.sync_api import expect

from svmcore.app.runs import Runs
from svmcore.store.sqlite import Store
from tests.e2e.test_browser import download_text, no_exception, open_app, rerun, settle, wait_for_plot
from tests.e2e.test_train_compare import save

pytestmark = pytest.mark.e2e


def _expected(server) -> tuple[list[int], list]:
    """The runs of the history (oldest first) and the slides the Lab says they make."""
    ids = sorted(r.id for r in server.runs())
    store = Store(server.home)  # read only: no queue, no recovery next to the server's own
    try:
        return ids, Runs(store, None, None, None).story(ids[0], ids[1:])[1]
    finally:
        store.close()


def _choose(page, ids: list[int], slides) -> None:
    """The first run as the baseline, the others as remedies, through the widgets; returns
    when the page shows that story's slides (each pick's rerun done: a download or a start
    clicked before then is the story of the runs picked so far)."""
    page.locator(".st-key-story_base input").click()
    page.get_by_role("option", name=re.compile(rf"^run {ids[0]} ")).click()  # often already the baseline: no rerun
    settle(page)
    for rid in ids[1:]:
        box = page.locator(".st-key-story_remedies input")
        box.click()
        with rerun(page):
            page.get_by_role("option", name=re.compile(rf"^run {rid} ")).click()
    page.keyboard.press("Escape")
    expect(page.get_by_text(" → ".join(s.title for s in slides), exact=True)).to_be_visible()


def test_story_exported_and_clicked_through(history_server, page, browser, tmp_path):
    """One pick of the story's runs (it takes a rerun per pick), then both ways to tell it:
    the HTML export (downloaded here, opened offline last) and the full-screen story.
    (These were test_story_exported_as_html_opens_offline_and_saves_pngs and
    test_story_is_clicked_through_full_screen, which each picked the runs.)"""
    ids, slides = _expected(history_server)
    page.set_viewport_size({"width": 1024, "height": 768})
    open_app(page, history_server, "Story", heading="Tell a story")
    _choose(page, ids, slides)
    path = _export(page, ids, tmp_path)
    _click_through_full_screen(page, ids, slides)
    _open_offline(browser, path, slides)


def _export(page, ids: list[int], tmp_path) -> str:
    """The story downloaded as HTML: no script from elsewhere, titled with its runs."""
    path = str(tmp_path / "story.html")
    text = download_text(page, "Story (HTML)", path)
    assert not re.search(r"<script[^>]*\bsrc=", text, re.I), "the story loads a script from elsewhere"
    title = re.search(r"<title>(.*?)</title>", text).group(1)
    assert title.endswith("runs " + ", ".join(map(str, ids))), f"exported {title!r}: not the story of runs {ids}"
    return path


def _click_through_full_screen(page, ids: list[int], slides) -> None:
    """Started: the sidebar and the controls are gone, each slide in view at 1024x768."""
    page.get_by_role("button", name="Start the story").click()
    settle(page)
    expect(page.get_by_test_id("stSidebar")).to_be_hidden()
    expect(page.get_by_role("button", name="Launch run")).to_have_count(0)
    for i, slide in enumerate(slides):
        expect(page.get_by_test_id("storyTitle")).to_have_text(slide.title)
        expect(page.get_by_text(f"{i + 1} / {len(slides)}")).to_be_visible()
        if slide.kind == "question":
            expect(page.get_by_test_id("storyHeadline")).to_have_text(slide.headline)
        else:
            wait_for_plot(page, lambda found, h=slide.headline: [html.unescape(p["title"]) for p in found] == [h],
                          f"slide {i + 1}'s chart titled with its headline")
        if slide.kind == "remedy" and slide.runs[1] == ids[1]:
            save(page, "story")
        no_exception(page)
        box = page.get_by_role("button", name="Next ›").bounding_box()
        assert box and box["y"] + box["height"] <= 768, f"slide {i + 1}: the steps are below the fold at 1024x768"
        if i < len(slides) - 1:
            page.get_by_role("button", name="Next ›").click()
            settle(page)
    expect(page.get_by_role("button", name="Next ›")).to_be_disabled()
    page.get_by_role("button", name="Exit").click()
    expect(page.get_by_role("heading", name="Tell a story")).to_be_visible()


def _open_offline(browser, path: str, slides) -> None:
    """The export opened from disk with no network: every headline, clicked through, and
    a slide saved as a PNG that is a real PNG of the export size."""
    offline = browser.new_context(viewport={"width": 1280, "height": 800}, offline=True, accept_downloads=True)
    try:
        requests = []
        offline.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:", "blob:"))
                   else None)
        view = offline.new_page()
        view.goto(f"file://{path}")
        charts = sum(s.kind != "question" for s in slides)
        expect(view.locator(".js-plotly-plot")).to_have_count(charts, timeout=30_000)
        shown = view.locator("section.slide.on")
        for i, slide in enumerate(slides):
            expect(shown.locator("h1")).to_have_text(slide.title)
            expect(shown.locator(".headline" if slide.kind == "question" else ".gtitle")).to_have_text(slide.headline)
            expect(view.locator("#count")).to_have_text(f"{i + 1} / {len(slides)}")
            save = view.get_by_role("button", name="Save this slide as PNG")
            if slide.kind == "question":  # text only: the walk pressed it there and nothing happened
                expect(save).to_be_disabled()
            else:
                expect(save).to_be_enabled()
            if slide.kind == "remedy":
                with view.expect_download(timeout=30_000) as png:
                    view.get_by_role("button", name="Save this slide as PNG").click()
                data = open(png.value.path(), "rb").read()
                assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
                assert struct.unpack(">II", data[16:24]) == (1400, 800)
                assert png.value.suggested_filename == f"story-{i + 1}.png"
            view.keyboard.press("ArrowRight")
        view.keyboard.press("ArrowLeft")
        expect(view.locator("#count")).to_have_text(f"{len(slides) - 1} / {len(slides)}")
        assert requests == [], f"the export reached out to the network: {requests}"
    finally:
        offline.close()
