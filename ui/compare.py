"""The Compare page's parts: the history table (key columns first and pinned), the
headline against a baseline, big numbers for a presentation, and a one-file HTML
export that opens offline (plotly.js inlined)."""

from __future__ import annotations

import html
import textwrap
import time
from collections.abc import Sequence
from typing import NamedTuple

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from svmcore.app.headlines import Comparison, RunFacts, short_headline
from svmcore.app.noise import DEFAULT_NOISE, Noise, within
from ui.charts import chart_colours, chart_text
from ui.messages import html_text, plain
from ui.offline import chart_divs

# what a person compares first, then what a run was
KEY_COLUMNS = ("id", "peak_mb", "accuracy", "balanced_accuracy", "samples_per_s")
PARALLEL_COLUMNS = ("largest_worker_mb", "coordinator_mb")
COLUMNS = KEY_COLUMNS + ("name", *PARALLEL_COLUMNS, "status", "damage", "label", "tags", "dataset", "mode", "model", "precision", "representation", "batch_size",
                         "threads", "peak_phase", "wall_s", "baseline_accuracy", "solver", "nonzero_weights",
                         "sparse_model_mb", "cap", "cap_held_mb", "sweep_id", "host", "started")


def history_frame(rows: Sequence[dict]) -> pd.DataFrame:
    """The history as a table, key columns first, start times readable."""
    df = pd.DataFrame(list(rows), columns=list(COLUMNS))
    # numeric even when no row has a speed (a list filtered to oom runs: a column of None, which
    # pandas keeps as objects that cannot be rounded; the walk's page crashed on it)
    df["samples_per_s"] = pd.to_numeric(df["samples_per_s"]).round(0)
    df["tags"] = [", ".join(t) if isinstance(t, list) else "" for t in df["tags"]]
    df["started"] = pd.to_datetime(df["started"], unit="s").dt.strftime("%Y-%m-%d %H:%M")
    # data-parallel runs' columns only when one is listed (else two columns of "None" on every row);
    # what of a run's record could not be read, only when a run's could not
    return df.drop(columns=[c for c in PARALLEL_COLUMNS if df[c].isna().all()]
                   + (["damage"] if not df["damage"].fillna("").astype(bool).any() else []))


def knob_text(value) -> str:
    """A knob's value as the run was given it: a whole number stays whole, a knob the run
    did not have is a dash (in a table of numbers and None, pandas made 30000 "30000.0")."""
    return "–" if value is None else str(value)


def knob_frame(diff: dict[str, list], run_ids: Sequence[int]) -> pd.DataFrame:
    """The knobs that differ, a row per knob and a column per run, as text."""
    return pd.DataFrame({f"run {i}": [knob_text(v) for v in column] for i, column in zip(run_ids, zip(*diff.values()))},
                        index=list(diff))


def history_columns() -> dict:
    """Column headers and rounding for people; the run and its key numbers stay pinned
    on the left when the table scrolls sideways."""
    num = st.column_config.NumberColumn
    return {
        "id": num("run", format="%d", pinned=True),
        "name": st.column_config.TextColumn("name", width="medium",  # a name was cut to "memm"
                                            help="the name given to the run (Train: rename it there)"),
        "damage": st.column_config.TextColumn("damaged", help="what of the run's record in the store could not be "
                                                                 "read: its figures are shown without it"),
        "label": st.column_config.TextColumn("made by", help="the sweep point or Learn experiment that made the run"),
        "peak_mb": num("peak MiB", format="%.0f", pinned=True,
                       help="The run's peak: the kernel's high-water mark of the worker, exact, not sampled. A "
                            "data-parallel run: all its processes, the coordinator's and every Dask worker's RSS "
                            "sampled at 50 Hz and summed at each instant (sampled; largest worker and coordinator "
                            "beside it)"),
        "coordinator_mb": num("coordinator MiB (exact)", format="%.0f",
                              help="a data-parallel run: its own process's exact peak (the kernel's high-water mark)"),
        "largest_worker_mb": num("largest worker MiB", format="%.0f",
                                 help="a data-parallel run: its largest Dask worker's peak (exact on a cluster "
                                      "started for the run, else sampled)"),
        "accuracy": num("accuracy", format="%.3f", pinned=True, help="on every held-out row"),
        "balanced_accuracy": num("balanced", format="%.3f", pinned=True,
                                 help="balanced accuracy: the mean of the per-class recalls"),
        "samples_per_s": num("samples/s", format="localized", pinned=True,
                             help="training samples per second of the train phase"),
        "peak_phase": st.column_config.TextColumn("peak in", help="the phase that owns the exact peak"),
        "wall_s": num("wall s", format="%.1f"),
        "baseline_accuracy": num("majority baseline", format="%.3f",
                                 help="accuracy of always predicting the majority class"),
        "batch_size": num("batch", format="localized"),
        "nonzero_weights": num("nonzero weights", format="localized",
                               help="a linear model's weights that are not zero (exact)"),
        "sparse_model_mb": num("sparse model MiB", format="%.2f",
                               help="exact bytes of a sparse copy of the model: int32 index + float64 value per "
                                    "nonzero weight"),
        "cap": st.column_config.TextColumn("cap", help="the memory cap the run had: cgroup or rlimit, and its size"),
        "cap_held_mb": num("held under cap MiB", format="%.0f",
                           help="a cgroup cap: the highest 50 Hz sample of what the kernel charged to the run's "
                                "cgroup less its page cache (which it reclaims before any kill): the figure the cap "
                                "limits, and what decides whether the run is killed at it"),
        "sweep_id": num("sweep", format="%d"),
    }


def colours_of(cmp: Comparison, picked: dict[int, str | None] | None = None) -> dict[int, str]:
    """Each compared run's colour on this page's charts: unique among them."""
    return chart_colours([r.id for r in cmp.runs], picked)


def _swatch(colour: str) -> str:
    return f'<span style="color:{html.escape(colour)};font-size:1.1em">&#9632;</span>'


def headline_items(cmp: Comparison) -> list[tuple[int, str]]:
    """(run id, line) of each headline: one per compared run, or one about the baseline
    when it has nothing to compare against."""
    others = [r.id for r in cmp.runs if r.id != cmp.baseline]
    if len(cmp.headlines) != len(others):
        return [(cmp.baseline, line) for line in cmp.headlines]
    return list(zip(others, cmp.headlines, strict=True))


def headline(cmp: Comparison, colours: dict[int, str], big: bool = False) -> None:
    """One line per compared run against the baseline, each with its run's colour, and
    a warning when the runs did not use the same data."""
    size = "1.3rem" if big else "1.05rem"
    lines = "".join(f'<li style="font-size:{size};margin:0.25rem 0">{_swatch(colours[rid])} {html_text(text)}</li>'
                    for rid, text in headline_items(cmp))
    st.markdown(f'<ul style="list-style:none;padding-left:0" data-testid="compareHeadline">{lines}</ul>',
                unsafe_allow_html=True)
    if len(cmp.runs) > 1:
        st.caption(f"A change marked (within noise) is {cmp.noise.text()}; the others exceed it.")
    if cmp.warning:
        st.warning(plain(cmp.warning), icon=":material/dataset:")  # file names as written, not Markdown


HEADLINE_LINES = 12  # on a chart: the baseline and eleven runs (twelve compared), one short line each
HEADLINE_CHARS = 85  # a line at 12 px that fits the plot of a 1024 px window


def headline_title_lines(cmp: Comparison) -> list[str]:
    """The headline as a chart's title, so that a PNG saved from it says what it shows:
    one run against the baseline, its line wrapped to fit; several, a line naming the
    baseline and one short line per run ('run 6 · stream: −71% peak, 1.4× slower, −0.1 pt
    accuracy'), at most ``HEADLINE_LINES`` (more runs than that: how many are left out)."""
    base = next((r for r in cmp.runs if r.id == cmp.baseline), None)
    others = [r for r in cmp.runs if r.id != cmp.baseline]
    if base is None or len(others) < 2 or base.status != "completed":
        texts = [t for _, t in headline_items(cmp)]
    else:
        texts = [f"Against the baseline, {base.title} (\u2248: within run-to-run noise):"] + [
            short_headline(base, r, cmp.noise, compact=True) for r in others]
    texts += [cmp.warning] if cmp.warning else []
    lines = []
    for text in texts:
        lines += textwrap.wrap(text, HEADLINE_CHARS, subsequent_indent="   ")
    if len(lines) > HEADLINE_LINES:
        lines = lines[:HEADLINE_LINES - 1] + [f"… and {len(lines) - HEADLINE_LINES + 1} more lines on the page"]
    return lines


def with_headline(fig: go.Figure, cmp: Comparison) -> go.Figure:
    """The chart with the headline on top, so that a PNG saved from its toolbar says
    what it shows."""
    lines = [chart_text(t) for t in headline_title_lines(cmp)]
    if not lines:
        return fig
    top = (fig.layout.margin.t or 40) + 17 * len(lines) + 16
    fig.update_layout(title=dict(text="<br>".join(lines), x=0, xanchor="left", xref="paper", y=1, yref="container",
                                 yanchor="top", pad=dict(t=16), font=dict(size=12)), margin=dict(t=top),
                      height=(fig.layout.height or 450) + 17 * len(lines))
    return fig


def chart_config(name: str, fig: go.Figure) -> dict:
    """Plotly's toolbar: a PNG wide enough for the whole legend, named for what it shows."""
    return {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": name, "width": 1600,
                                                            "height": fig.layout.height or 600, "scale": 1}}


def _num(v, spec: str, unit: str = "") -> str:
    return "–" if v is None else f"{v:{spec}}{unit}"


class BigNumber(NamedTuple):
    label: str
    value: str
    delta: str | None  # against the baseline
    colour: str  # the delta's, as st.metric takes it


def numbers(r: RunFacts, d: dict | None, noise: Noise = DEFAULT_NOISE) -> list[BigNumber]:
    """One run's big numbers, each with its change against the baseline.
    A delta that rounds to nothing reads "±0%" in grey, as the headline says it
    (Streamlit takes a leading "-" for down, so the others keep the ASCII sign); one within
    the run-to-run noise says so, in grey."""
    d = d or {}
    quiet = within(d, noise) if d else {}

    def delta(key, text, colour):
        if d.get(key) is None:
            return None, colour
        shown = text(d[key])
        if not any(c in "123456789" for c in shown):
            return "\u00b1" + shown.lstrip("+-"), "off"
        if quiet.get(key):
            return shown + " (within noise)", "off"
        return shown, colour

    return [
        BigNumber(("exact peak" if r.peak.exact else "peak of all processes (sampled)")
                  + (", one-time preparation left out" if r.one_time[0] is not None else ""),
                  _num(r.compared_peak_mb, ",.0f", " MiB"), *delta("peak_pct", lambda v: f"{v:+.0f}%", "inverse")),
        BigNumber("samples/s", _num(r.summary.samples_per_s, ",.0f"),
                  *delta("speed_ratio", lambda v: f"{(v - 1) * 100:+.0f}%", "normal")),
        BigNumber("accuracy", _num(r.summary.accuracy, ".3f"), *delta("accuracy", lambda v: f"{v:+.3f}", "normal")),
        BigNumber("balanced accuracy", _num(r.summary.balanced_accuracy, ".3f"),
                  *delta("balanced_accuracy", lambda v: f"{v:+.3f}", "normal")),
    ]


def big_numbers(cmp: Comparison, colours: dict[int, str]) -> None:
    """Each run's exact peak, speed and accuracies in big type, with the change against
    the baseline; one bordered row per run."""
    with st.container(key="bignumbers"):
        for r in cmp.runs:
            with st.container(border=True):
                st.markdown(f"{_swatch(colours[r.id])} **{html_text(r.title)}** · {html_text(r.status)}",
                            unsafe_allow_html=True)
                with st.container(horizontal=True, gap="large"):
                    for label, value, delta, colour in numbers(r, cmp.deltas.get(r.id), cmp.noise):
                        st.metric(label, value, delta, delta_color=colour, width="content")


CSS = """body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1100px;
color:#222;padding:0 1rem}h1{font-size:1.8rem}ul.headline{list-style:none;padding:0;font-size:1.2rem}
ul.headline li{margin:.3rem 0}table{border-collapse:collapse;margin:1rem 0}td,th{padding:.35rem .8rem;
border-bottom:1px solid #ddd;text-align:right}th:first-child,td:first-child{text-align:left}
.big td{font-size:1.3rem}.note{color:#555;font-size:.9rem}"""


def presentation_html(cmp: Comparison, figures: Sequence[go.Figure], knobs: dict[str, list],
                      hosts: dict[int, str | None], when: float | None = None,
                      colours: dict[int, str] | None = None) -> str:
    """One self-contained HTML file: the headline, the big numbers, the interactive
    charts with plotly.js inlined (it opens offline) and the knobs that differ."""
    esc = html.escape
    colours = colours or colours_of(cmp)
    ids = ", ".join(str(r.id) for r in cmp.runs)
    base = next((r for r in cmp.runs if r.id == cmp.baseline), None)
    head = "".join(f"<li>{_swatch(colours[rid])} {esc(t)}</li>" for rid, t in headline_items(cmp))
    if cmp.warning:
        head += f'<li class="warn">{esc(cmp.warning)}</li>'
    rows = "".join(
        f"<tr><td>{_swatch(colours[r.id])} {esc(r.title)}</td>"
        + "".join(f"<td>{esc(v)}{'' if delta is None else f' <small>({esc(delta)})</small>'}</td>"
                  for _, v, delta, _ in numbers(r, cmp.deltas.get(r.id), cmp.noise))
        + f"<td>{esc(r.status)}</td><td>{esc(hosts.get(r.id) or '–')}</td></tr>" for r in cmp.runs)
    charts = "".join(f'<div class="chart">{div}</div>' for div in chart_divs(figures))
    knob_rows = "".join(f"<tr><th>{esc(k)}</th>" + "".join(f"<td>{esc(knob_text(v))}</td>" for v in vals) + "</tr>"
                        for k, vals in knobs.items())
    knob_table = ("<h2>Knobs that differ</h2><table><tr><th></th>"
                  + "".join(f"<th>run {r.id}</th>" for r in cmp.runs) + f"</tr>{knob_rows}</table>") if knobs else ""
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(when if when is not None else time.time()))
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>SVM Memory Lab: runs {esc(ids)}'
            f"</title><style>{CSS}</style></head><body><h1>SVM Memory Lab: runs {esc(ids)}</h1>"
            f'<p class="note">Against the baseline {esc(base.title if base else "–")}. Exact peaks are the '
            "kernel's high-water mark of each run's worker"
            + ("; a data-parallel run's peak is all its processes, their samples summed" if any(
                not r.peak.exact for r in cmp.runs) else "") + "; memory curves are sampled 50 times a second; "
            "throughput is training samples per second; accuracy is on every held-out row. Measured on the "
            f"machines named below; exported {esc(stamp)}. A change marked (within noise) is "
            f"{esc(cmp.noise.text())}.</p>"
            f'<ul class="headline">{head}</ul>'
            f'<table class="big"><tr><th>run</th><th>{"exact peak" if all(r.peak.exact for r in cmp.runs) else "peak"}'
            '</th><th>samples/s</th><th>accuracy</th>'
            f"<th>balanced accuracy</th><th>outcome</th><th>machine</th></tr>{rows}</table>"
            f"{charts}{knob_table}</body></html>")
