"""Experiment-tracker views: a sweep as parallel coordinates, and the run table's
filters, grouping and tags (the widgets; the answers come from svmcore.app)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from svmcore.app.run_table import FILTER_LABELS, FILTERS, choices, filter_rows, group_rows
from svmcore.spec.errors import SvmcoreError
from ui.charts import chart_text
from ui.messages import show_error


def parallel_figure(info: dict, height: int = 440) -> go.Figure:
    """One line per completed run across the knobs and results, coloured by exact peak;
    each axis's ticks are ``parallel_info``'s (labels that tell every tick apart)."""
    dims = [dict(label=chart_text(d["label"]), values=d["values"], tickvals=d["tickvals"],
                 ticktext=[chart_text(t) for t in d["ticktext"]])
            for d in info["dimensions"]]
    fig = go.Figure(go.Parcoords(dimensions=dims, line=dict(color=info["colour"], colorscale="Viridis_r",
                                                            showscale=True, colorbar=dict(title="exact peak MiB"))))
    fig.update_layout(height=height, margin=dict(l=60, r=40, t=100, b=30),
                      title=dict(text="Knobs against exact peak, speed and accuracy (drag along an axis to filter)",
                                 font=dict(size=14), y=0.98, yref="container", yanchor="top"))
    return fig


def filtered(rows: list[dict], key: str = "runs_filter") -> list[dict]:
    """Filter widgets over the run table (dataset, model, mode, sweep, status, tag) and
    an optional grouped summary; returns the rows that pass."""
    with st.container(horizontal=True, gap="small", key=key):
        picked = {k: st.multiselect(FILTER_LABELS[k], choices(rows, k), key=f"{key}_{k}", placeholder="all",
                                    width=150) for k in FILTERS if choices(rows, k)}
        by = st.selectbox("group by", ["", *FILTERS], key=f"{key}_group", width=140,
                          format_func=lambda k: FILTER_LABELS.get(k, "no grouping"))
    kept = filter_rows(rows, picked)
    if by:
        st.dataframe(pd.DataFrame(group_rows(kept, by)), hide_index=True, key=f"{key}_groups", column_config={
            "lowest exact peak MiB": st.column_config.NumberColumn(format="%.1f"),
            "median exact peak MiB": st.column_config.NumberColumn(format="%.1f"),
            "best accuracy": st.column_config.NumberColumn(format="%.4f")})
    if len(kept) < len(rows):
        st.caption(f"Showing {len(kept)} of {len(rows)} runs.")
    return kept


def _tag(lab, run_ids: list[int], key: str, remove: bool) -> None:
    """Tag (or untag) the selected runs, then empty the box (a callback: it ran before the box was drawn)."""
    try:
        for rid in run_ids:
            lab.runs.tag(rid, st.session_state.get(f"{key}_text", ""), remove=remove)
        st.session_state[f"{key}_text"] = ""
    except SvmcoreError as e:
        st.session_state[f"{key}_error"] = str(e)


def tag_editor(lab, run_ids: list[int], key: str = "tags") -> None:
    """Add a tag to (or remove it from) the selected runs; the box is emptied once it is done."""
    if not run_ids:
        return
    with st.container(horizontal=True, gap="small", vertical_alignment="bottom", key=key):
        st.text_input(f"Tag the {len(run_ids)} selected run(s)", key=f"{key}_text", width=260,
                      placeholder="e.g. demo", help="Letters, digits, spaces and . : + - / _; filter by it above.")
        st.button("Add tag", key=f"{key}_add", on_click=_tag, args=(lab, run_ids, key, False))
        st.button("Remove tag", key=f"{key}_remove", on_click=_tag, args=(lab, run_ids, key, True))
    if f"{key}_error" in st.session_state:
        show_error(st.session_state.pop(f"{key}_error"))
