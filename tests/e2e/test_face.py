"""Issue 22 in a real browser (Debian chromium via Playwright) against real
``streamlit run app.py`` servers whose runs are real worker processes:

- twelve runs on one Compare chart: twelve different colours (read from the Plotly
  figure in the page), the same as each run's swatch in the headline;
- a run name typed on Train is the run's name on Compare (its baseline picker, its
  curve on the chart);
- a refused launch (batch size above a 300-row file's 240 training rows) says why under
  the Launch button, in view at 1024x768, and its "Set batch size to 240" button fixes it.
"""

from __future__ import annotations

import os
import re
import time

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import Server
from tests.e2e.test_browser import click_to_rerun, navigate, no_exception, open_app, screenshot, settle
from tests.e2e.test_train_compare import wait_chart
from tests.helpers import TINY_HISTORY, make_history

pytestmark = pytest.mark.e2e

SMALL = 1024, 768
LEAN = {"mode": "stream", "parser": "native", "solver": "native", "epochs": 1}

# the lean path (native parser and solver, streamed from a svmlight file): about a second a run
TWELVE_SCRIPT = TINY_HISTORY + r"""
ids = [lab.runs.launch(dict(args, dataset=path, batch_size=16 * (i + 1))) for i in range(12)]
deadline = time.monotonic() + 170
# the store, not the view: a view shows a run's outcome just before the store records it, and this
# process exits next (a run left 'running' in the store was seen under load)
while time.monotonic() < deadline and any(not lab.store.get_run(i).status.is_finished() for i in ids):
    time.sleep(0.1)
print(json.dumps({"runs": ids, "statuses": [lab.runs.view(i).status.value for i in ids]}))
"""

# every run's memory curve on the stacked chart (the memory axis's only traces named after a run): a lean run
# on the tiny file lasts about 0.2 s, and one sampled under a full test run's load had only two readings
COLOURS_JS = """(key) => {
    const el = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    if (!el || !el.data) return null;
    return el.data.filter(d => (d.yaxis || 'y') === 'y' && (d.name || '').startsWith('run ') && d.x.length > 0)
                  .map(d => ({name: d.name, colour: d.line.color}));
}"""

# the most batch-size fields on the page at any moment from now on
MOST_FIELDS_JS = """() => {
    const count = () => document.querySelectorAll('input[aria-label="batch size (rows)"]').length;
    window.__mostFields = count();
    new MutationObserver(() => { window.__mostFields = Math.max(window.__mostFields, count()); })
        .observe(document.body, {childList: true, subtree: true});
}"""


def memory_curves(page: Page, key: str = "cmp_chart") -> list[dict]:
    try:
        return page.evaluate(COLOURS_JS, key) or []
    except Exception:  # the graph div was being replaced by a re-render
        return []


@pytest.fixture(scope="module")
def twelve_server(tmp_path_factory, artifacts_dir):
    home = str(tmp_path_factory.mktemp("e2e-twelve") / "home")
    os.makedirs(home)
    made = make_history(TWELVE_SCRIPT, home, LEAN)
    assert made["statuses"] == ["completed"] * 12, made
    server = Server(home, os.path.join(artifacts_dir, "streamlit-twelve.log"))
    server.prepared = made
    yield server
    server.stop()


def test_twelve_runs_on_one_chart_have_twelve_colours_and_a_picked_colour_is_the_runs(twelve_server, page):
    """Twelve runs on one Compare chart, then (same server, same page) a colour picked for
    one of them: see ``picked_colour_is_the_runs_on_train_and_compare``."""
    ids = twelve_server.prepared["runs"]
    open_app(page, twelve_server, "Compare?runs=" + ",".join(map(str, ids)), heading="Compare runs")
    settle(page)
    expect(page.get_by_text("Showing the 12 run(s) named in the page's address")).to_be_visible()
    wait_chart(page, "cmp_chart", lambda f: len([t for t in f["traces"] if t["name"].startswith("run ")]) >= 12,
               "twelve runs on the stacked chart", timeout=60)
    curves = memory_curves(page)
    assert sorted(int(re.match(r"run (\d+)", c["name"]).group(1)) for c in curves) == sorted(ids), curves
    colours = [c["colour"].upper() for c in curves]
    assert len(set(colours)) == 12, curves
    # each run's swatch in the headline has its curve's colour
    swatches = page.locator("[data-testid='compareHeadline'] li")
    expect(swatches).to_have_count(11)
    for i in range(11):
        li = swatches.nth(i)
        text = li.inner_text()
        rid = int(re.search(r"run (\d+)", text).group(1))
        colour = li.locator("span").first.evaluate("e => e.style.color")
        curve = next(c for c in curves if c["name"].startswith(f"run {rid} "))
        r, g, b = (int(curve["colour"][k:k + 2], 16) for k in (1, 3, 5))
        assert colour == f"rgb({r}, {g}, {b})", (text, colour, curve)
    # each is named by what it changed against the baseline (the earliest: all are as far apart): its batch size
    assert len({c["name"] for c in curves}) == 12, curves
    assert all("batch size" in c["name"] for c in curves if not c["name"].endswith("· baseline")), curves
    no_exception(page)
    screenshot(page, "compare-twelve")

    picked_colour_is_the_runs_on_train_and_compare(twelve_server, page)


LINE_COLOURS_JS = """(key) => {
    const el = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    if (!el || !el.data) return null;
    return el.data.filter(d => (d.yaxis || 'y') === 'y' && d.line && d.line.color).map(d => d.line.color.toUpperCase());
}"""

PHASE_CHART_JS = """() => {
    const el = document.querySelector('.st-key-cmp_phases .js-plotly-plot');
    if (!el || !el._fullLayout) return null;
    return {legend: el._fullLayout.legend.orientation, plot_px: el._fullLayout._size.h, bars: el.data.length};
}"""


def picked_colour_is_the_runs_on_train_and_compare(twelve_server, page):
    """The walk picked #00AA00 for a run: Train's chart drew the run in its own colour, and
    on Compare it was run 3's green (#2CA02C). With 12 runs the phase-peak chart was 25 px
    high. Train's picker listed runs that differ in a knob alike. (It was its own test,
    test_a_picked_colour_is_the_runs_on_train_and_compare_and_no_other_run_looks_like_it.)"""
    from svmcore.store.sqlite import Store
    from ui.charts import _lookalike

    ids = twelve_server.prepared["runs"]
    newest, green = ids[-1], ids[2]
    store = Store(twelve_server.home)
    try:
        assert store.set_colour(newest, "#00AA00")
    finally:
        store.close()
    open_app(page, twelve_server, "Compare?runs=" + ",".join(map(str, ids)), heading="Compare runs")
    settle(page)
    wait_chart(page, "cmp_chart", lambda f: len([t for t in f["traces"] if t["name"].startswith("run ")]) >= 12,
               "twelve runs on the stacked chart", timeout=60)
    curves = {int(re.match(r"run (\d+)", c["name"]).group(1)): c["colour"].upper() for c in memory_curves(page)}
    assert curves[newest] == "#00AA00", curves
    assert not _lookalike(curves[green], "#00AA00"), curves  # run 3's own green moved
    # the phase-peak chart is drawn after the memory chart: on a loaded machine seconds later
    phases = page.wait_for_function(PHASE_CHART_JS, timeout=30_000).json_value()
    assert phases and phases["legend"] == "h" and phases["plot_px"] >= 150, phases
    no_exception(page)
    navigate(page, "Train", "SVM Memory Lab")  # Train shows the newest run
    expect(page.get_by_role("combobox", name="Showing")).to_have_value(
        re.compile(rf"run {newest} · completed · tiny\.svm · stream · linear-svm · .*batch size {16 * len(ids)}"),
        timeout=30_000)
    deadline = time.monotonic() + 30
    seen = None
    while time.monotonic() < deadline and not (seen and "#00AA00" in seen):
        seen = page.evaluate(LINE_COLOURS_JS, "train_chart")
        time.sleep(0.2)
    assert seen and "#00AA00" in seen, seen
    no_exception(page)


def test_a_refused_launch_says_why_at_the_launch_button_in_view_and_a_typed_name_is_the_runs(fresh_server, page):
    """A refused launch says why at the Launch button (in view at 1024x768) and its fix
    works; the fixed launch, named on Train, bears that name (and a rename) on Compare."""
    server = fresh_server()
    os.makedirs(os.path.join(server.home, "datasets"))
    with open(os.path.join(server.home, "datasets", "small.svm"), "w") as f:
        for i in range(300):
            f.write(f"{1 if i % 2 else -1} 1:{i % 7 + 1} 3:{(i * 13) % 5 + 0.5}\n")
    page.set_viewport_size({"width": SMALL[0], "height": SMALL[1]})
    open_app(page, server)
    settle(page)
    box = page.get_by_role("combobox", name="dataset")
    box.click()
    page.get_by_role("option", name="small.svm", exact=True).click()
    settle(page)
    page.get_by_role("button", name="Launch run").click()
    settle(page)
    reason = page.get_by_test_id("stSidebar").get_by_test_id("stAlert").filter(
        has_text="Not launched. batch_size: 1,024 is larger than the training data (240 rows)").first
    expect(reason).to_be_visible()
    expect(reason).to_be_in_viewport()
    fix = page.get_by_role("button", name="Set batch size to 240")
    expect(fix).to_be_in_viewport()
    screenshot(page, "refused-launch-1024x768")
    assert server.runs() == []
    page.evaluate(MOST_FIELDS_JS)
    click_to_rerun(page, fix, "the fix")  # the fix's rerun done: the page as the user is left with it
    field = page.get_by_label("batch size (rows)", exact=True)
    expect(field).to_have_count(1)
    # and never two during the rerun (the old knobs left stale beside the new ones, as when the
    # refusal's lines went and every knob below them moved up)
    assert page.evaluate("window.__mostFields") == 1
    expect(field).to_have_value("240")
    expect(page.get_by_text("Not launched.")).to_have_count(0)  # the field no longer holds the refused value

    # the fixed launch, named on Train: its name is the run's name on Compare (this was
    # test_a_name_typed_on_train_is_the_runs_name_on_compare, with its own server and run)
    page.set_viewport_size({"width": 1400, "height": 1000})
    name = page.get_by_label("run name (optional)", exact=True)
    name.fill("tiny demo run")
    name.press("Enter")
    settle(page)
    page.get_by_role("button", name="Launch run").click()
    expect(page.get_by_role("combobox", name="Showing")).to_have_value(re.compile(r"run 1 · tiny demo run · "),
                                                                        timeout=30_000)
    expect(page.get_by_test_id("stAlert").filter(has_text="Run 1 completed")).to_be_visible(timeout=90_000)
    no_exception(page)
    assert [(r.name, r.config["batch_size"]) for r in server.runs()] == [("tiny demo run", 240)]
    expect(name).to_have_value("")  # the next launch is not named the same by mistake
    rename = page.get_by_label("name of run 1", exact=True)
    expect(rename).to_have_value("tiny demo run")
    navigate(page, "Compare", "Compare runs")
    expect(page.get_by_role("combobox", name="Baseline")).to_have_value("run 1 · tiny demo run")
    # renamed on Train, it is renamed on Compare
    navigate(page, "Train", "SVM Memory Lab")
    rename = page.get_by_label("name of run 1", exact=True)
    rename.fill("renamed run")
    rename.press("Enter")
    settle(page)
    expect(page.get_by_role("combobox", name="Showing")).to_have_value(re.compile(r"run 1 · renamed run · "))
    navigate(page, "Compare", "Compare runs")
    expect(page.get_by_role("combobox", name="Baseline")).to_have_value("run 1 · renamed run")
    # and in a new session (the page loaded again), the name read back from the store
    open_app(page, server, "Compare", heading="Compare runs")
    settle(page)
    expect(page.get_by_role("combobox", name="Baseline")).to_have_value("run 1 · renamed run")
    assert [r.name for r in server.runs()] == ["renamed run"]
    no_exception(page)


def test_data_inspect_names_the_file_it_shows_after_an_upload(twelve_server, page, tmp_path):
    """Issue 22: after an upload, Inspect showed the file's numbers under the name sparse-text.
    On the twelve runs' server (it needs no run; its home already holds another file, tiny.svm),
    after the tests that count its runs and files."""
    server = twelve_server
    up = tmp_path / "up300.svm"
    up.write_text("".join(f"{1 if i % 2 else -1} 1:{i % 7 + 1} 3:{(i * 13) % 5 + 0.5}\n" for i in range(300)))
    open_app(page, server, "Data", heading="Datasets")
    settle(page)
    page.locator("input[type=file]").set_input_files(str(up))
    expect(page.get_by_text(re.compile(r"Saved as up300-\w+\.svm"))).to_be_visible()
    settle(page)
    expect(page.get_by_role("combobox", name="Dataset")).to_have_value(re.compile(r"^up300-\w+\.svm$"))
    expect(page.get_by_test_id("stMetricValue").first).to_have_text("300")
    no_exception(page)
