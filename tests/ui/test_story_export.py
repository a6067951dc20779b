"""The story's one-file HTML export, without a browser, from a history made by the real
engine (a completed baseline, an out-of-memory run and a two-point sweep as remedies):
one chart per chart slide, each a Plotly call whose data and layout are valid JSON with
data to draw, titled with its slide's headline; plotly.js inlined once; no script from
elsewhere. The browser side is tests/e2e/test_story.py."""

from __future__ import annotations

import html
import json
import math
import re

from svmcore.app.lab import Lab
from ui import charts as plots
from ui import story

CALL = re.compile(r'Plotly\.newPlot\(\s*"(story-chart-\d+)",\s*')


def _plotly_calls(text: str) -> dict[str, tuple[list, dict]]:
    """Each chart's div id -> its (data, layout), decoded as plotly.js receives them."""
    decoder, out = json.JSONDecoder(), {}
    for m in CALL.finditer(text):
        data, end = decoder.raw_decode(text, m.end())
        layout, _ = decoder.raw_decode(text, text.index("{", end))
        out[m.group(1)] = (data, layout)
    return out


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def test_every_chart_of_the_exported_story_has_data_and_valid_json(history):
    lab = Lab(history["home"])
    remedies = [history["oom"], *history["sweep_runs"]]
    cmp, slides = lab.runs.story(history["completed"], remedies)
    text = story.story_html(cmp, slides, story.slide_figures(lab, cmp, slides))

    charted = [i for i, s in enumerate(slides) if s.kind not in ("question", "advice")]  # the two slides of words
    assert len(charted) == 5
    calls = _plotly_calls(text)
    assert list(calls) == [f"story-chart-{i + 1}" for i in charted]
    for i in charted:
        data, layout = calls[f"story-chart-{i + 1}"]
        assert data and any(len(t.get("x") or t.get("dimensions") or []) for t in data), f"slide {i + 1}: no data"
        assert _finite(data) and _finite(layout), f"slide {i + 1}: a value plotly.js cannot take"
        assert layout["title"]["text"] == plots.chart_text(slides[i].headline)
        assert html.unescape(layout["title"]["text"]) == slides[i].headline
    assert text.count("plotly.js v") == 1, "plotly.js inlined once"
    assert not re.search(r"<script[^>]*\bsrc=", text, re.I)
    ids = ", ".join(str(r.id) for r in cmp.runs)
    assert f"<title>SVM Memory Lab story: runs {ids}</title>" in text
