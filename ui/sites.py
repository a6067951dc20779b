"""A traced run's allocation sites (the trace knob): under the memory chart, the top lines at the
run's peak or a phase's as a table and an icicle of their call paths, the line that reconciles
them with the exact peak, and memray's own flame graph as a download; on Compare, two traced
runs' top lines side by side."""

from __future__ import annotations

import html
import logging
from typing import NamedTuple

import plotly.graph_objects as go
import streamlit as st

from svmcore.app.lab import Lab
from svmcore.app.runs import RunView
from svmcore.spec.errors import SvmcoreError
from svmcore.spec.result import PeakSites, Trace
from ui.messages import plain

log = logging.getLogger(__name__)
RUN_PEAK = "the run's peak"


class IcicleInfo(NamedTuple):
    """Plotly icicle nodes: the call paths of the top sites, each node's bytes the sum of the sites
    beneath it (``branchvalues='total'``)."""

    ids: list[str]
    labels: list[str]
    parents: list[str]
    values_mib: list[float]


def icicle_info(peak: PeakSites) -> IcicleInfo:
    """The top sites' call paths as one tree, rooted at the peak."""
    root = RUN_PEAK if peak.phase is None else f"{peak.phase}'s peak"
    nodes: dict[str, list] = {root: [root, "", 0.0]}
    for site in peak.sites:
        path = root
        nodes[root][2] += site.bytes / 2**20
        for frame in site.stack or (site.where,):
            parent, path = path, f"{path}\n{frame}"
            nodes.setdefault(path, [frame, parent, 0.0])[2] += site.bytes / 2**20
    return IcicleInfo(list(nodes), [n[0] for n in nodes.values()], [n[1] for n in nodes.values()],
                      [round(n[2], 3) for n in nodes.values()])


def icicle_figure(info: IcicleInfo) -> go.Figure:
    fig = go.Figure(go.Icicle(ids=info.ids, labels=info.labels, parents=info.parents, values=info.values_mib,
                              branchvalues="total", tiling={"orientation": "v"}, maxdepth=8,
                              hovertemplate="%{label}<br>%{value:,.1f} MiB<extra></extra>"))
    fig.update_layout(margin={"t": 10, "l": 0, "r": 0, "b": 0}, height=420)
    return fig


def table_rows(peak: PeakSites) -> list[dict]:
    return [{"MiB held": round(s.bytes / 2**20, 2), "allocations": s.allocations, "line": s.where,
             "native function": s.native or "", "called from svmcore": s.ours or ""} for s in peak.sites]


def compare_rows(a: tuple[int, Trace], b: tuple[int, Trace]) -> list[dict]:
    """Two traced runs' top lines at their peaks side by side: each line's MiB in each run (0 where
    it is not among that run's top sites) and the change, the largest changes first."""
    (ia, ta), (ib, tb) = a, b
    held = [{s.where: s.bytes / 2**20 for s in (t.at(None).sites if t.at(None) else ())} for t in (ta, tb)]
    lines = sorted(set(held[0]) | set(held[1]), key=lambda w: -abs(held[1].get(w, 0) - held[0].get(w, 0)))
    return [{"line": w, f"run {ia} MiB": round(held[0].get(w, 0.0), 2), f"run {ib} MiB": round(held[1].get(w, 0.0), 2),
             "change MiB": round(held[1].get(w, 0.0) - held[0].get(w, 0.0), 2)} for w in lines]


def _flamegraph(lab: Lab, run_id: int):
    def make() -> bytes:  # on the click: memray takes seconds to draw it
        try:
            return lab.runs.flamegraph(run_id)
        except SvmcoreError as e:
            log.warning("run %s: no flame graph: %s", run_id, e)
            return f"<html><body><p>No flame graph: {html.escape(str(e))}</p></body></html>".encode()
    return make


def sites_panel(lab: Lab, view: RunView, key: str) -> None:
    """Under a finished traced run's memory chart."""
    trace = view.summary.trace
    if trace is None:
        return
    with st.container(border=True, key=f"sites_{view.id}"):
        st.markdown("**Allocation sites** (traced by memray: the lines whose allocations held the most at a peak of "
                    "the traced heap)")
        st.caption(plain(trace.reconciliation(view.summary.peak_rss_mb)))
        if not trace.peaks:
            return
        peaks = {RUN_PEAK if p.phase is None else f"{p.phase}'s peak": p for p in trace.peaks}
        first = next(iter(peaks))
        chosen = st.segmented_control("peak", list(peaks), default=first, key=f"{key}_sites_peak",
                                      label_visibility="collapsed") or first
        peak = peaks[chosen]
        st.caption(f"{chosen}: "
                   f"{peak.traced_bytes / 2**20:,.1f} MiB traced at {peak.t_s or 0:,.2f} s; the top "
                   f"{len(peak.sites)} lines hold {sum(s.bytes for s in peak.sites) / 2**20:,.1f} MiB of it")
        st.dataframe(table_rows(peak), hide_index=True)
        st.plotly_chart(icicle_figure(icicle_info(peak)), key=f"{key}_sites_icicle", config={"displaylogo": False})
        st.download_button("memray's flame graph (HTML)", _flamegraph(lab, view.id),
                           file_name=f"run-{view.id}-flamegraph.html", mime="text/html", key=f"{key}_flamegraph",
                           help="memray's report of the whole trace: every allocation held at the peak, under "
                                "the Python lines that made it (the table above names each line's native "
                                "function). Made on the first click (3 s for a 5,000-row run), then kept.")


def compare_panel(views: list[RunView], baseline: int) -> None:
    """On Compare: the baseline's (or the first traced run's) top lines beside another traced run's."""
    traced = sorted((v for v in views if v.summary.trace and v.summary.trace.at(None)), key=lambda v: v.id != baseline)
    if len(traced) < 2:
        if len(views) > 1 and traced:
            st.caption(f"Only run {traced[0].id} was traced: trace another (the trace knob) to compare the lines "
                       "that held their memory.")
        return
    a, b = traced[:2]
    st.subheader("Allocation sites at each run's traced peak")
    st.caption(f"Run {a.id} against run {b.id}: each line's MiB held at that run's peak of the traced heap (0: not "
               "among its top lines); a remedy's work shows as the lines it removed or shrank."
               + (f" {len(traced) - 2} more traced run(s) selected: the first two are shown." if len(traced) > 2 else ""))
    with st.container(key="cmp_sites"):
        st.dataframe(compare_rows((a.id, a.summary.trace), (b.id, b.summary.trace)), hide_index=True)
