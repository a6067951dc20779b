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


SIZES = [(1400, 900), (1024, 768)]


def test_story_clicked_through_then_exported_after_exit(history_server, page, browser, tmp_path):
    """One pick of the story's runs (it takes a rerun per pick), the full-screen story, then
    Exit and the HTML export (downloaded here, opened offline last). Issue 43: Exit cleared the
    picked remedies, so they had to be picked again before exporting; the exported trade-off
    PNG cut its accuracy ticks and ran its axis title into them; the trade-off recoloured the
    runs by speed, unlike every other page; and the story ended without saying what to do.

    The story is told full screen at each size, one after the other on the same pick (at
    1400x900, Exit, then at 1024x768: the picks kept through an Exit are what lets the second
    telling start with no new pick), every slide in view at each; the pick, Compare's colours,
    the export and its offline walk, which do not depend on the window, are made once (they
    were made once for each size before, ~10 s more)."""
    ids, slides = _expected(history_server)
    assert slides[-1].kind == "advice" and slides[-1].title == "What to do"
    compare = _compare_colours(page, history_server, ids)
    page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})
    open_app(page, history_server, "Story", heading="Tell a story")
    _choose(page, ids, slides)
    for size in SIZES:
        page.set_viewport_size({"width": size[0], "height": size[1]})
        _click_through_full_screen(page, ids, slides, size[1])
        # back at the choice, the same runs still picked: the next telling and the export are the story just told
        expect(page.get_by_text(" → ".join(s.title for s in slides), exact=True)).to_be_visible()
    path = _export(page, ids, tmp_path)
    _open_offline(browser, path, slides, compare)


def _compare_colours(page, server, ids: list[int]) -> dict[int, str]:
    """Each run's colour on Compare's chart of the same runs."""
    open_app(page, server, "Compare?runs=" + ",".join(map(str, ids)), heading="Compare runs")
    settle(page)
    colours = page.wait_for_function("""(n) => {
        const el = document.querySelector('.st-key-cmp_chart .js-plotly-plot');
        const runs = el && el.data && el.data.filter(d => (d.yaxis || 'y') === 'y' && (d.name || '').startsWith('run '));
        return runs && runs.length >= n
            && Object.fromEntries(runs.map(d => [d.name.match(/^run (\\d+)/)[1], d.line.color.toUpperCase()]));
    }""", arg=len(ids), timeout=60_000).json_value()
    assert sorted(map(int, colours)) == sorted(ids), colours
    return {int(k): v for k, v in colours.items()}


def _export(page, ids: list[int], tmp_path) -> str:
    """The story downloaded as HTML: no script from elsewhere, titled with its runs."""
    path = str(tmp_path / "story.html")
    text = download_text(page, "Story (HTML)", path)
    assert not re.search(r"<script[^>]*\bsrc=", text, re.I), "the story loads a script from elsewhere"
    title = re.search(r"<title>(.*?)</title>", text).group(1)
    assert title.endswith("runs " + ", ".join(map(str, ids))), f"exported {title!r}: not the story of runs {ids}"
    return path


def _click_through_full_screen(page, ids: list[int], slides, height: int = 768) -> None:
    """Started: the sidebar and the controls are gone, each slide in view."""
    page.get_by_role("button", name="Start the story").click()
    settle(page)
    expect(page.get_by_test_id("stSidebar")).to_be_hidden()
    expect(page.get_by_role("button", name="Launch run")).to_have_count(0)
    for i, slide in enumerate(slides):
        expect(page.get_by_test_id("storyTitle")).to_have_text(slide.title)
        expect(page.get_by_text(f"{i + 1} / {len(slides)}")).to_be_visible()
        if slide.kind in ("question", "advice"):
            expect(page.get_by_test_id("storyHeadline")).to_have_text(slide.headline)
        else:
            wait_for_plot(page, lambda found, h=slide.headline: [html.unescape(p["title"]) for p in found] == [h],
                          f"slide {i + 1}'s chart titled with its headline")
        if slide.kind == "remedy" and slide.runs[1] == ids[1]:
            save(page, "story")
        no_exception(page)
        box = page.get_by_role("button", name="Next ›").bounding_box()
        assert box and box["y"] + box["height"] <= height, f"slide {i + 1}: the steps are below the fold"
        if i < len(slides) - 1:
            page.get_by_role("button", name="Next ›").click()
            settle(page)
    expect(page.get_by_role("button", name="Next ›")).to_be_disabled()
    page.get_by_role("button", name="Exit").click()
    expect(page.get_by_role("heading", name="Tell a story")).to_be_visible()


# the trade-off chart as its PNG is drawn: plotly.js renders the figure at the PNG's size to an SVG and
# rasterises it; that SVG is measured here. Each accuracy tick label must lie whole inside the image, and
# the axis title clear of every tick label.
PNG_SVG_JS = """async () => {
    const chart = document.querySelector('section.slide.on .js-plotly-plot');
    const url = await Plotly.toImage(chart, {format: 'svg', width: 1400, height: 800});
    const holder = document.createElement('div');
    holder.style.cssText = 'position:absolute;left:0;top:0;width:1400px;height:800px';
    holder.innerHTML = decodeURIComponent(url.slice(url.indexOf(',') + 1));
    document.body.appendChild(holder);
    const svg = holder.querySelector('svg').getBoundingClientRect();
    const box = e => { const r = e.getBoundingClientRect(); return {text: e.textContent, l: r.left - svg.left,
                                                                    r: r.right - svg.left, t: r.top, b: r.bottom}; };
    const ticks = Array.from(holder.querySelectorAll('.ytick text')).map(box);
    const title = box(holder.querySelector('.g-ytitle text'));
    const colours = Array.from(chart.data.find(d => d.name === 'completed runs').marker.color);
    const ids = Array.from(chart.data.find(d => d.name === 'completed runs').text).map(t => +t.split(' ')[1]);
    holder.remove();
    return {ticks, title, colours: Object.fromEntries(ids.map((id, i) => [id, String(colours[i]).toUpperCase()]))};
}"""


def _open_offline(browser, path: str, slides, compare: dict[int, str] | None = None) -> None:
    """The export opened from disk with no network: every headline, clicked through, a
    slide saved as a PNG that is a real PNG of the export size; the trade-off's PNG keeps
    its tick labels whole and each run in its colour on Compare."""
    offline = browser.new_context(viewport={"width": 1280, "height": 800}, offline=True, accept_downloads=True)
    try:
        requests = []
        offline.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:", "blob:"))
                   else None)
        view = offline.new_page()
        view.goto(f"file://{path}")
        charts = sum(s.kind not in ("question", "advice") for s in slides)
        expect(view.locator(".js-plotly-plot")).to_have_count(charts, timeout=30_000)
        shown = view.locator("section.slide.on")
        for i, slide in enumerate(slides):
            expect(shown.locator("h1")).to_have_text(slide.title)
            expect(shown.locator(".headline" if slide.kind in ("question", "advice") else ".gtitle")).to_have_text(
                slide.headline)
            expect(view.locator("#count")).to_have_text(f"{i + 1} / {len(slides)}")
            save = view.get_by_role("button", name="Save this slide as PNG")
            if slide.kind in ("question", "advice"):  # text only: the walk pressed it there and nothing happened
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
            if slide.kind == "tradeoff":
                drawn = view.evaluate(PNG_SVG_JS)
                assert drawn["ticks"], drawn
                for tick in drawn["ticks"]:
                    assert tick["l"] >= 0 and re.fullmatch(r"0\.\d{3}", tick["text"]), drawn["ticks"]
                    assert drawn["title"]["r"] <= tick["l"], (drawn["title"], tick)  # the title clear of it
                if compare is not None:
                    assert {int(k): v for k, v in drawn["colours"].items()} == compare, (drawn["colours"], compare)
            view.keyboard.press("ArrowRight")
        view.keyboard.press("ArrowLeft")
        expect(view.locator("#count")).to_have_text(f"{len(slides) - 1} / {len(slides)}")
        assert requests == [], f"the export reached out to the network: {requests}"
    finally:
        offline.close()
