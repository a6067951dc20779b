"""Brushing the parallel-coordinates chart, as Optuna's dashboard filters its trials: a
small Streamlit component (components v2, trusted inline JavaScript, no markup of its own)
that listens to the Plotly chart with the given key and hands back, for each axis dragged
on, the ranges kept (``{axis index: [lo, hi]}``, or a list of such ranges)."""

from __future__ import annotations

import streamlit as st

# plotly.js restyles a parcoords trace when an axis is brushed; the ranges it keeps are its
# dimensions' constraintrange. The chart's element is replaced when the page redraws it: the
# listener is attached to whichever element is there (checked twice a second).
_JS = """
export default function (component) {
  const { data, setStateValue } = component;
  let hooked = null;
  const hook = () => {
    const gd = document.querySelector(`.st-key-${data.chart} .js-plotly-plot`);
    if (!gd || gd === hooked || typeof gd.on !== 'function') return;
    hooked = gd;
    gd.on('plotly_restyle', () => {
      const dims = (gd.data && gd.data[0] && gd.data[0].dimensions) || [];
      const ranges = {};
      dims.forEach((d, i) => {
        if (d.constraintrange && d.constraintrange.length) ranges[i] = d.constraintrange;
      });
      setStateValue('ranges', ranges);
    });
  };
  hook();
  const timer = setInterval(hook, 500);
  return () => clearInterval(timer);
}
"""

_BRUSH = st.components.v2.component("svmcore_parallel_brush", js=_JS, isolate_styles=False)


def parallel_brush(chart_key: str, key: str) -> dict[int, list]:
    """The ranges brushed on the Plotly chart whose key is ``chart_key`` (a rerun follows
    each brush); ``key``: this listener's own (one per sweep, so another sweep starts clear)."""
    if not chart_key.replace("_", "").isalnum():
        raise ValueError(f"not a widget key: {chart_key!r}")
    result = _BRUSH(key=key, data={"chart": chart_key}, default={"ranges": {}}, on_ranges_change=lambda: None)
    return {int(k): v for k, v in (getattr(result, "ranges", None) or {}).items()}
