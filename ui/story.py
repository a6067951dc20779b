"""A story's slides drawn: one figure per chart slide (its headline as the figure's
title, so a PNG saved from it carries it), the full-screen view, and the one-file HTML
export that opens offline and saves each slide as a PNG in the browser."""

from __future__ import annotations

import html
import json
import time
from collections.abc import Sequence

import plotly.graph_objects as go
import streamlit as st

from svmcore.app.headlines import Comparison, run_tag
from svmcore.app.headlines import Slide
from ui import charts as plots
from ui.offline import chart_divs

PNG = {"format": "png", "width": 1400, "height": 800, "scale": 1}  # every legend entry fits at this size
CHART_HEIGHT = 520  # title, chart and the steps fit a 1024x768 window
TEXT_SLIDES = ("question", "advice")  # slides of words in big type, no chart


def _titled(fig: go.Figure, slide: Slide, height: int = CHART_HEIGHT) -> go.Figure:
    top = fig.layout.margin.t or 40
    fig.update_layout(title=dict(text=plots.chart_text(slide.headline), x=0.01, xanchor="left", y=0.98, yref="container",
                                 font=dict(size=21)),
                      height=height, margin=dict(t=top + 44))
    return fig


def slide_figures(lab, cmp: Comparison, slides: Sequence[Slide], height: int = CHART_HEIGHT
                  ) -> list[go.Figure | None]:
    """One figure per slide (None for the question): the memory panel of the baseline,
    of each remedy over it (the baseline's phases shaded), and the trade-off chart."""
    names = {r.id: run_tag(r.label, r.name) for r in cmp.runs}
    ids = [r.id for r in cmp.runs]
    # the runs' colours as on every other page (a picked one kept), no two alike
    colours = plots.chart_colours(ids, {r["id"]: r.get("colour") for r in lab.runs.history() if r["id"] in ids})
    views = {v.id: v for v in lab.runs.views(ids)}
    out: list[go.Figure | None] = []
    for slide in slides:
        if slide.kind in TEXT_SLIDES:
            out.append(None)
        elif slide.kind == "tradeoff":
            titles = {r.id: r.title for r in cmp.runs}
            points = [p.__class__(**{**p.__dict__, "label": titles.get(p.run_id, p.label), "name": ""})
                      for p in lab.runs.tradeoff(list(slide.runs))]
            out.append(_titled(plots.tradeoff_figure(plots.tradeoff_info(points), labelled=True, colours=colours),
                               slide, height))
        else:
            series = [plots.view_series(views[i], "time", names.get(i, ""), colour=colours[i]) for i in slide.runs if i in views]
            info = plots.stacked_info(series, phases_of=cmp.baseline)
            if info.panels:
                info = info._replace(panels=["memory"], domains=plots.panel_domains(["memory"]))
            out.append(_titled(plots.stacked_figure(info, height), slide, height))
    return out


# the full-screen view: no sidebar, no header, no toolbar; only the slide and its steps
FULL_SCREEN = """<style>
section[data-testid="stSidebar"], div[data-testid="stSidebarCollapsedControl"], header[data-testid="stHeader"],
div[data-testid="stToolbar"], div[data-testid="stDecoration"] { display: none !important; }
div[data-testid="stMainBlockContainer"] { padding-top: 1.2rem; max-width: 1300px; }
.story-title { font-size: 2.1rem; font-weight: 700; line-height: 1.2; margin: 0 0 .3rem 0; }
.story-headline { font-size: 1.35rem; margin: 0 0 .4rem 0; }
.story-question { font-size: 2.6rem; font-weight: 700; line-height: 1.25; margin: 18vh 0 1.5rem 0; }
.story-advice { font-size: 1.9rem; line-height: 1.35; margin: 8vh 0 2rem 0; }
</style>"""


def show(slides: Sequence[Slide], figures: Sequence[go.Figure | None], step: int) -> None:
    """One slide, full screen: its title, then its chart titled with its headline (the
    question slide: the question and who is compared, in big type)."""
    st.markdown(FULL_SCREEN, unsafe_allow_html=True)
    slide, fig = slides[step], figures[step]
    esc = html.escape
    if slide.kind == "advice":
        st.markdown(f'<div class="story-title" data-testid="storyTitle">{esc(slide.title)}</div>'
                    f'<div class="story-advice" data-testid="storyHeadline">{esc(slide.headline)}</div>',
                    unsafe_allow_html=True)
        return
    if slide.kind == "question":
        st.markdown(f'<div class="story-question" data-testid="storyTitle">{esc(slide.title)}</div>'
                    f'<p class="story-headline" data-testid="storyHeadline">{esc(slide.headline)}</p>',
                    unsafe_allow_html=True)
        return
    st.markdown(f'<div class="story-title" data-testid="storyTitle">{esc(slide.title)}</div>', unsafe_allow_html=True)
    if fig is not None and fig.data:
        st.plotly_chart(fig, key=f"story_chart_{step}",
                        config={"displaylogo": False, "toImageButtonOptions": dict(PNG, filename=f"story-{step + 1}")})
    else:
        st.markdown(f'<p class="story-headline" data-testid="storyHeadline">{esc(slide.headline)}</p>',
                    unsafe_allow_html=True)
        st.caption("These runs have no memory samples to draw.")


CSS = """html,body{margin:0;height:100%;font-family:system-ui,-apple-system,'Segoe UI',sans-serif;color:#222;
background:#fff}.slide{position:absolute;inset:0;padding:2rem 3rem 4.5rem;visibility:hidden;box-sizing:border-box;
overflow:auto}.slide.on{visibility:visible}h1{font-size:2.1rem;margin:0 0 .4rem}.question h1{font-size:2.8rem;
margin-top:18vh}.advice .headline{font-size:1.9rem;line-height:1.35;margin-top:10vh}.headline{font-size:1.35rem;margin:0 0 .6rem}.note{color:#555;font-size:.9rem}
nav{position:fixed;bottom:0;left:0;right:0;display:flex;gap:.6rem;align-items:center;padding:.6rem 3rem;
background:rgba(255,255,255,.92);border-top:1px solid #ddd}nav button{font-size:1rem;padding:.3rem .9rem}
nav .count{color:#555;margin-right:auto}"""

SCRIPT = """<script>
(function(){
  const slides = Array.from(document.querySelectorAll('.slide'));
  const count = document.getElementById('count');
  let at = 0;
  function go(i){
    at = Math.max(0, Math.min(slides.length - 1, i));
    slides.forEach((s, k) => s.classList.toggle('on', k === at));
    count.textContent = (at + 1) + ' / ' + slides.length;
    const chart = slides[at].querySelector('.js-plotly-plot');
    if (chart) Plotly.Plots.resize(chart);
    const button = document.getElementById('png');  // the question slide is text: nothing to save
    button.disabled = !chart;
    button.title = chart ? '' : 'This slide has no chart';
  }
  function png(slide){
    const chart = slide.querySelector('.js-plotly-plot');
    if (!chart) return Promise.resolve(false);
    return Plotly.downloadImage(chart, Object.assign({}, PNG, {filename: 'story-' + slide.dataset.step}))
      .then(() => true);
  }
  document.getElementById('back').onclick = () => go(at - 1);
  document.getElementById('next').onclick = () => go(at + 1);
  document.getElementById('png').onclick = () => png(slides[at]);
  document.getElementById('pngs').onclick = () =>
    slides.reduce((p, s) => p.then(() => png(s)), Promise.resolve());
  slides.forEach(s => s.addEventListener('click', e => {
    if (!e.target.closest('.js-plotly-plot, button, a')) go(at + 1);
  }));
  document.addEventListener('keydown', e => {
    if (['ArrowRight', 'PageDown', ' '].includes(e.key)) { go(at + 1); e.preventDefault(); }
    if (['ArrowLeft', 'PageUp', 'Backspace'].includes(e.key)) { go(at - 1); e.preventDefault(); }
  });
  go(0);
})();
</script>"""


def story_html(cmp: Comparison, slides: Sequence[Slide], figures: Sequence[go.Figure | None],
               when: float | None = None) -> str:
    """The story as one self-contained HTML file: a slide at a time (click, or the arrow
    keys), plotly.js inlined (it opens offline), each chart titled with its headline and
    saved as a PNG that carries it."""
    esc = html.escape
    charted = [(i, f) for i, f in enumerate(figures) if f is not None]
    divs = dict(zip((i for i, _ in charted), chart_divs([f for _, f in charted],
                                                        [f"story-chart-{i + 1}" for i, _ in charted])))
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(when if when is not None else time.time()))
    note = ("Exact peaks are the kernel's high-water mark of each run's worker; memory curves are sampled 50 times "
            f"a second; throughput is training samples per second; accuracy is on every held-out row. "
            f"Exported {esc(stamp)}.")
    sections = "".join(
        f'<section class="slide {esc(s.kind)}" data-step="{i + 1}"><h1>{esc(s.title)}</h1>'
        + divs.get(i, f'<p class="headline">{esc(s.headline)}</p><p class="note">{note}</p>') + "</section>"
        for i, s in enumerate(slides))
    ids = ", ".join(str(r.id) for r in cmp.runs)
    png = f"<script>const PNG = {json.dumps(PNG)};</script>"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>SVM Memory Lab story: runs {esc(ids)}'
            f"</title><style>{CSS}</style></head><body>{png}{sections}"
            '<nav><span class="count" id="count"></span><button id="back">‹ Back</button>'
            '<button id="next">Next ›</button><button id="png">Save this slide as PNG</button>'
            f'<button id="pngs">Save every chart as PNG</button></nav>{SCRIPT}</body></html>')
