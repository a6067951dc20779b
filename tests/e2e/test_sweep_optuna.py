"""Issue 43, "Sweeps like Optuna's dashboard", in a real browser (Debian chromium via
Playwright) against a real ``streamlit run app.py`` server whose runs are real worker
processes, at 1400x900 and 1024x768: a random search beside the grid (eight combinations
drawn from sixteen), which knob mattered for each objective (a random forest's
importances), and brushing an axis of the parallel coordinates filters the run table.
"""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import Server
from tests.e2e.test_browser import click_to_rerun, no_exception, open_app, screenshot, settle
from tests.helpers import TINY_HISTORY, make_history

pytestmark = pytest.mark.e2e

LEAN = {"mode": "stream", "parser": "native", "solver": "native", "epochs": 1}
GRID = {"batch_size": [16, 64, 256, 1024], "shuffle": [True, False], "seed": [0, 1]}
DRAWS = 8

RANDOM_SCRIPT = TINY_HISTORY + r"""
sweep = lab.sweeps.start(dict(args["base"], dataset=path), args["grid"], draws=args["draws"], seed=3)
deadline = time.monotonic() + 170
while time.monotonic() < deadline and lab.sweeps.status(sweep)["done"] < lab.sweeps.status(sweep)["total"]:
    time.sleep(0.1)
runs = lab.store.list_runs(sweep_id=sweep)
print(json.dumps({"sweep": sweep, "statuses": [r.status.value for r in runs], "labels": [r.label for r in runs]}))
"""

AXES_JS = """() => {
    const axes = Array.from(document.querySelectorAll('.st-key-parallel .axis-brush .background')).map(e => {
        const r = e.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y, h: r.height}; });
    return axes.length ? axes : null;
}"""
RANGES_JS = """() => document.querySelector('.st-key-parallel .js-plotly-plot').data[0].dimensions
    .map(d => d.constraintrange || null)"""


@pytest.fixture(scope="module")
def random_server(tmp_path_factory, artifacts_dir):
    home = str(tmp_path_factory.mktemp("e2e-random") / "home")
    os.makedirs(home)
    made = make_history(RANDOM_SCRIPT, home, {"base": LEAN, "grid": GRID, "draws": DRAWS, "file_rows": 3000})
    assert made["statuses"] == ["completed"] * DRAWS and len(set(made["labels"])) == DRAWS, made
    server = Server(home, os.path.join(artifacts_dir, "streamlit-random.log"))
    server.prepared = made
    yield server
    server.stop()


def _importance(page: Page, label: str) -> dict:
    """The knob-importance chart once it is drawn for the objective labelled ``label``."""
    return page.wait_for_function("""(label) => {
        const el = document.querySelector('.st-key-importance .js-plotly-plot');
        if (!el || !el.data || !el.layout.xaxis.title.text.includes(label)) return null;
        return {knobs: el.data[0].y, sum: el.data[0].x.reduce((a, b) => a + b, 0)};
    }""", arg=label, timeout=60_000).json_value()


def test_a_random_search_its_knob_importance_and_brushing_its_parallel_coordinates(random_server, page: Page):
    """The flow (the three objectives, then a brush) at 1024x768; then the same page at 1400x900, laid
    out again: the last objective's importances, the brushed range and the table it filtered, unchanged.
    Before, the flow ran once at each size (~9 s more); a brush made at the wider size would be the
    same chart's same handler."""
    size = (1024, 768)
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_app(page, random_server, "Sweep", heading="Sweep a grid of settings")
    settle(page)
    expect(page.get_by_role("combobox", name="Sweep")).to_have_value(re.compile(rf"· {DRAWS} drawn at random$"))
    # which knob mattered: a bar for each knob the search varied, for each objective
    expect(page.get_by_role("heading", name="Which knob mattered")).to_be_visible()
    for objective, label in (("exact peak", "exact peak (MiB)"), ("speed", "samples/s"), ("accuracy", "accuracy")):
        if objective != "exact peak":
            click_to_rerun(page, page.get_by_role("radiogroup", name="for").get_by_role("radio", name=objective,
                                                                                       exact=True), objective)
        bars = _importance(page, label)
        assert sorted(bars["knobs"]) == sorted(GRID) and abs(bars["sum"] - 1) < 0.01, (objective, bars)
        expect(page.get_by_text(re.compile(rf"A random forest .* this sweep's {DRAWS} completed runs"))).to_be_visible()
    screenshot(page, f"sweep-importance-{size[0]}x{size[1]}")

    # brushing the batch size axis (the first) over its lowest values keeps only the runs there in the table
    page.locator(".st-key-parallel .js-plotly-plot").scroll_into_view_if_needed()
    batch = page.wait_for_function(AXES_JS, timeout=30_000).json_value()[0]
    page.mouse.move(batch["x"], batch["y"] + batch["h"] * 0.90)
    page.mouse.down()
    page.mouse.move(batch["x"], batch["y"] + batch["h"] * 0.999, steps=8)
    page.mouse.up()
    kept = page.get_by_text(re.compile(rf"Showing the \d+ of {DRAWS} runs inside the ranges dragged"))
    expect(kept).to_be_visible(timeout=30_000)
    lo, hi = page.evaluate(RANGES_JS)[0]  # the range kept, as the chart holds it after the page redrew it
    batches = [int(label.split(",")[0].split("=")[1]) for label in random_server.prepared["labels"]]
    inside = sum(lo <= b <= hi for b in batches)
    assert 0 < inside < DRAWS, (lo, hi, batches)
    expect(kept).to_have_text(re.compile(rf"^Showing the {inside} of {DRAWS} runs"))
    no_exception(page)
    screenshot(page, f"sweep-brushed-{size[0]}x{size[1]}")

    # the same page at the wider size: every part still drawn, the brush and its filter kept
    size = (1400, 900)
    page.set_viewport_size({"width": size[0], "height": size[1]})
    expect(page.get_by_role("heading", name="Which knob mattered")).to_be_visible()
    bars = _importance(page, "accuracy")
    assert sorted(bars["knobs"]) == sorted(GRID) and abs(bars["sum"] - 1) < 0.01, bars
    expect(page.get_by_text(re.compile(rf"A random forest .* this sweep's {DRAWS} completed runs"))).to_be_visible()
    page.locator(".st-key-parallel .js-plotly-plot").scroll_into_view_if_needed()
    assert page.wait_for_function(AXES_JS, timeout=30_000).json_value()  # the axes drawn again, brushable
    assert page.evaluate(RANGES_JS)[0] == [lo, hi]
    expect(kept).to_have_text(re.compile(rf"^Showing the {inside} of {DRAWS} runs"))
    no_exception(page)
    screenshot(page, f"sweep-brushed-{size[0]}x{size[1]}")
