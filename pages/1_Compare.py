"""Compare: runs against a baseline in one line each, their curves on one x axis,
per-phase peaks, what differs, a presentation view, export, delete."""

import pandas as pd
import streamlit as st

from ui import charts as plots
from ui import compare, deletion, sweep_views
from ui.live import X_CHOICES
from ui.state import page_setup

lab = page_setup("Compare")
st.title("Compare runs")
rows = lab.runs.history()
if not rows:
    st.info("No runs yet. Launch one on the **Train** page, or a grid on **Sweep**.")
    st.stop()

present = st.toggle("Presentation view", key="present",
                    help="Big numbers, the headline and the charts, for showing the result to others.")
with st.expander("Runs: select rows to compare", expanded=not present):
    st.caption("Click rows to select runs (sort by clicking a column header; the run and its key numbers stay "
               "pinned when the table scrolls). Peaks are exact (the kernel's high-water mark); samples/s is "
               "training throughput.")
    shown = sweep_views.filtered(rows)
    if not shown:
        st.info("No run matches these filters.")
        st.stop()
    df = compare.history_frame(shown)
    deletion.clear_selection_if_asked("history", [r["id"] for r in shown])
    event = st.dataframe(df, hide_index=True, on_select="rerun", selection_mode="multi-row", key="history",
                         column_config=compare.history_columns())
picked = [int(df.iloc[i]["id"]) for i in event.selection.rows if i < len(df)] if event and event.selection else []
selected = picked
if not selected:
    selected = sorted(int(i) for i in df["id"].head(2))
    st.caption(f"Nothing selected: showing the latest {len(selected)} run(s).")
if not present:
    sweep_views.tag_editor(lab, selected)

with st.container(horizontal=True, gap="large", vertical_alignment="bottom"):
    baseline = st.selectbox("Baseline", selected, key="baseline", format_func=lambda i: f"run {i}", width=220,
                            help="Every other run is compared against this one.")
    x = st.segmented_control("x axis", list(X_CHOICES), default="time", format_func=X_CHOICES.get,
                             key="cmp_x") or "time"
cmp = lab.runs.compare(selected, baseline)
names = {r.id: r.name for r in cmp.runs}

compare.headline(cmp, big=present)
if present:
    compare.big_numbers(cmp)

views = lab.runs.views(selected)
series = [plots.view_series(v, x, names.get(v.id, "")) for v in views]
stacked = plots.stacked_info(series, phases_of=cmp.baseline)
figures = []
if stacked["panels"]:
    figures.append(plots.stacked_figure(stacked, height=720 if present else 620))
    st.plotly_chart(figures[-1], key="cmp_chart", config={"displaylogo": False})
    st.caption("Solid: memory (RSS sampled at 50 Hz), throughput and accuracy; dashed: each run's exact peak; "
               "dotted: balanced accuracy; stars: the final evaluation on every test row. "
               f"Shaded: the phases of the baseline, run {cmp.baseline}.")
else:
    st.caption("The selected runs have no memory samples to draw" + (" by samples seen." if x == "samples" else "."))
peaks = plots.phase_peaks_info(views, names)
if peaks["phases"]:
    st.subheader("Exact peak of each phase")
    figures.append(plots.phase_peaks_figure(peaks))
    st.plotly_chart(figures[-1], key="cmp_phases", config={"displaylogo": False})

diff = lab.runs.differing_knobs(selected)
if not present:
    if diff:
        st.subheader("Knobs that differ")
        st.dataframe(pd.DataFrame(diff, index=[f"run {i}" for i in selected]).T.astype(str), key="diff")
    elif len(selected) > 1:
        st.caption("The selected runs have identical knobs.")

st.subheader("Export" if present else "Export and delete")
hosts = {r["id"]: r["host"] for r in rows}
with st.container(horizontal=True, gap="small"):
    st.download_button("Presentation (HTML)", lambda: compare.presentation_html(cmp, figures, diff, hosts),
                       file_name=f"svm-memory-lab-runs-{'-'.join(map(str, selected))}.html", mime="text/html",
                       help="One file with the headline, the numbers and the interactive charts; opens offline.")
    st.download_button("Data (JSON)", lab.runs.export(selected, "json"), file_name="runs.json",
                       mime="application/json")
    st.download_button("Memory samples (CSV)", lab.runs.export(selected, "csv"), file_name="runs.csv",
                       mime="text/csv")
    if not present:
        deletion.delete_button(picked)
if not present:
    deletion.confirm_delete(lab, picked, names)
deletion.show_deleted()
