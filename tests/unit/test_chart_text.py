"""Issue 22: file and run names reached Plotly's legends, hovers, titles and tick labels
as they were, and Plotly reads a subset of HTML there: a file named ``<b>x.svm`` showed
bold. Every user-given text in a figure goes through ``ui.charts.chart_text``."""

from __future__ import annotations

import json

import plotly.graph_objects as go

from svmcore.app.parallel import Axis, ParallelInfo
from svmcore.app.headlines import Slide, compare
from ui.charts import (PhasePeaks, PhasePeaksInfo, chart_text, phase_peaks_figure, run_series, stacked_figure,
                       stacked_info, tradeoff_figure, tradeoff_info)
from ui.compare import with_headline
from ui.story import _titled
from ui.sweep_views import parallel_figure
from tests.unit.test_chart_data import EVENTS, SAMPLES, SUMMARY, tp
from tests.helpers import facts

NAME = "<b>x.svm</b> 100%{y}"
SHOWN = "&lt;b&gt;x.svm&lt;/b&gt; 100&#37;{y}"


def strings(fig: go.Figure) -> list[str]:
    out: list[str] = []

    def walk(v):
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)

    walk(json.loads(fig.to_json()))
    return out


def shows_it_literally(fig: go.Figure) -> bool:
    texts = strings(fig)
    return not any("<b>x" in t or "%{y}" in t.replace("%{y:", "") for t in texts) and any(SHOWN in t for t in texts)


def test_chart_text_is_what_plotly_turns_back_into_the_text():
    assert chart_text(NAME) == SHOWN
    assert chart_text('a & "b"') == 'a &amp; "b"'  # Plotly knows no &quot;: quotes stay as they are


def test_run_names_in_a_chart_of_several_runs_are_plain_text():
    series = [run_series(i, SAMPLES, EVENTS, SUMMARY, "time", name=NAME) for i in (1, 2)]
    assert shows_it_literally(stacked_figure(stacked_info(series)))
    info = PhasePeaksInfo(["load"], [PhasePeaks(1, f"run 1 · {NAME}", "#1F77B4", [10.0], "load")])
    assert shows_it_literally(phase_peaks_figure(info))


def test_labels_on_the_tradeoff_chart_are_plain_text():
    done = tp(1, 100.0, 0.9, sps=10.0, front=True)
    oom = tp(2, 300.0, None, status="oom")
    points = [p.__class__(**{**p.__dict__, "label": NAME}) for p in (done, oom)]
    fig = tradeoff_figure(tradeoff_info(points))
    assert shows_it_literally(fig)
    assert all(SHOWN in t for d in fig.data if d.name in ("completed runs", "out of memory")
               for t in (d.hovertext if d.name == "completed runs" else d.customdata))
    labelled = tradeoff_figure(tradeoff_info(points), labelled=True)  # a story's trade-off: ids beside the dots
    assert next(d for d in labelled.data if d.name == "completed runs").text == ("run 1",)


def test_file_names_on_the_parallel_coordinates_are_plain_text():
    info = ParallelInfo([Axis("data", [0, 1], [0, 1], [NAME, "b.svm"])], [1, 2], [1.0, 2.0], [])
    assert shows_it_literally(parallel_figure(info))


def test_headlines_on_compare_and_story_charts_are_plain_text():
    base = facts(1, "completed", NAME, peak_mb=252.0, accuracy=0.75, samples_per_s=280_000.0)
    other = facts(2, "completed", "stream", peak_mb=200.0, accuracy=0.75, samples_per_s=100_000.0)
    fig = with_headline(go.Figure(layout=dict(height=600, margin=dict(t=40))), compare([base, other]))
    assert shows_it_literally(fig)
    slide = Slide("remedy", "stream", f"{NAME}: −20% peak", (1, 2))
    assert shows_it_literally(_titled(go.Figure(), slide))
