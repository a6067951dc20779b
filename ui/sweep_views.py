"""Experiment-tracker views: a sweep as parallel coordinates, and the run table's
filters, grouping and tags (the widgets; the answers come from svmcore.app)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from svmcore.app.parallel import TREES, Importance, ParallelInfo, brushed
from svmcore.app.runs import FILTER_LABELS, FILTERS, choices, filter_rows, group_rows
from svmcore.spec.errors import SvmcoreError
from ui.brush import parallel_brush
from ui.charts import chart_text
from ui.messages import show_error


def parallel_figure(info: ParallelInfo, height: int = 440, ranges: dict[int, list] | None = None) -> go.Figure:
    """One line per completed run across the knobs and results, coloured by exact peak;
    each axis's ticks are ``parallel_info``'s (labels that tell every tick apart);
    ``ranges``: the ranges brushed on its axes, drawn again after the page redraws it."""
    ranges = ranges or {}
    dims = [dict(label=chart_text(d.label), values=d.values, tickvals=d.tickvals,
                 ticktext=[chart_text(t) for t in d.ticktext],
                 **({"constraintrange": ranges[i]} if i in ranges else {}))
            for i, d in enumerate(info.dimensions)]
    fig = go.Figure(go.Parcoords(dimensions=dims, line=dict(color=info.colour, colorscale="Viridis_r",
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


def parallel_panel(lab, sweep_id: int, host: str | None) -> set[int] | None:
    """The parallel coordinates, brushable: the runs inside every range dragged on its axes
    (None when nothing is brushed, or nothing is drawn)."""
    info = lab.sweeps.parallel(sweep_id, host)
    if not info.runs:
        return None
    ranges = parallel_brush("parallel", key=f"parallel_brush_{sweep_id}_{host}")
    st.plotly_chart(parallel_figure(info, ranges=ranges), key="parallel")
    if info.left_out:
        st.caption("Not on the parallel coordinates: " + ", ".join(f"run {rid} ({why})" for rid, why in info.left_out))
    return set(brushed(info, ranges)) if ranges else None


OBJECTIVE_WORDS = {"peak": "exact peak", "speed": "speed", "accuracy": "accuracy"}


def importance_figure(imp: Importance, height: int = 260) -> go.Figure:
    """The knobs' importances for one objective, the most important on top."""
    fig = go.Figure(go.Bar(x=list(imp.values)[::-1], y=[chart_text(k) for k in imp.knobs][::-1], orientation="h",
                           marker_color="#4C78A8", text=[f"{v:.2f}" for v in imp.values][::-1],
                           textposition="outside", cliponaxis=False,
                           hovertemplate="%{y}: %{x:.3f}<extra></extra>"))
    fig.update_layout(height=max(height, 60 + 34 * len(imp.knobs)), margin=dict(l=10, r=40, t=10, b=10),
                      xaxis=dict(title=f"importance for {imp.label} (they sum to 1)", range=[0, 1.1], automargin=True),
                      yaxis=dict(automargin=True))
    return fig


def importance_panel(lab, sweep_id: int) -> None:
    """Which knob mattered, one objective at a time (as Optuna's dashboard)."""
    st.subheader("Which knob mattered")
    objective = st.segmented_control("for", list(OBJECTIVE_WORDS), default="peak", key="importance_objective",
                                     format_func=OBJECTIVE_WORDS.get) or "peak"
    imp = lab.sweeps.importance(sweep_id, objective)
    if imp.why_none:
        st.caption(f"No importance for {imp.label}: {imp.why_none}.")
        return
    st.plotly_chart(importance_figure(imp), key="importance", config={"displaylogo": False})
    st.caption(f"A random forest (scikit-learn, {TREES} trees, a fixed seed) fitted to this sweep's {imp.runs} "
               f"completed runs, the knobs it varied as the features and {imp.label} as the target; its importances "
               "say how much each knob's splits explain (Optuna's dashboard uses fANOVA). With repeats over seeds, "
               "the seed's share is the run-to-run noise.")


def sweep_table(pts: list, shown: set[int] | None = None) -> None:
    """The sweep's runs as a table (``shown``: only these, as brushed on the parallel coordinates)."""
    rows = [p for p in pts if shown is None or p.run_id in shown]
    if shown is not None:
        st.caption(f"Showing the {len(rows)} of {len(pts)} runs inside the ranges dragged on the parallel coordinates "
                   "(click an axis outside its range to clear it).")
    table = pd.DataFrame([{"run": p.run_id, "name": p.name, "setting": p.label, "status": p.status,
                           "peak (MiB)": p.peak_mb, "accuracy": p.accuracy,
                           "balanced accuracy": p.balanced_accuracy, "samples/s": p.samples_per_s,
                           "on frontier": p.on_frontier, "3-way frontier": p.on_speed_frontier, "host": p.host,
                           "largest worker (MiB)": p.largest_worker_mb} for p in rows])
    # data-parallel runs only: their largest worker, beside their peak (all their processes)
    table = table.drop(columns=[c for c in ("largest worker (MiB)",) if c in table and table[c].isna().all()])
    if table.empty:
        return
    st.dataframe(table, hide_index=True, key="sweep_table", placeholder="–", column_config={
        "peak (MiB)": st.column_config.NumberColumn(format="%.1f", help=(
            "The run's exact peak (the kernel's high-water mark); a data-parallel run's: all its processes, "
            "their 50 Hz samples summed (sampled)")),
        "accuracy": st.column_config.NumberColumn(format="%.4f"),
        "balanced accuracy": st.column_config.NumberColumn(format="%.4f"),
        "samples/s": st.column_config.NumberColumn(format="%.0f"),
        "on frontier": st.column_config.CheckboxColumn(help="No other completed run has a lower exact peak "
                                                            "and a higher accuracy"),
        "3-way frontier": st.column_config.CheckboxColumn(help="No other completed run is at least as good on "
                                                               "exact peak, accuracy and samples/s at once")})
