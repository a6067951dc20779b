"""Compare: the run history, overlays of any runs, what differs, export, delete."""

import pandas as pd
import streamlit as st

from svmcore.spec.errors import SvmcoreError
from ui import charts as plots
from ui.messages import show_error
from ui.state import page_setup

lab = page_setup("Compare")
st.title("Compare runs")
rows = lab.runs.history()
if not rows:
    st.info("No runs yet. Launch one on the **Train** page, or a grid on **Sweep**.")
    st.stop()

df = pd.DataFrame(rows)
df["started"] = pd.to_datetime(df["started"], unit="s").dt.strftime("%Y-%m-%d %H:%M:%S")
st.caption("Click rows to select runs (sort by clicking a column header). Peaks are exact "
           "(the kernel's high-water mark); throughput is training samples per second.")
event = st.dataframe(
    df, hide_index=True, on_select="rerun", selection_mode="multi-row", key="history",
    column_config={
        "peak_mb": st.column_config.NumberColumn("exact peak (MiB)", format="%.1f"),
        "accuracy": st.column_config.NumberColumn("accuracy", format="%.4f"),
        "balanced_accuracy": st.column_config.NumberColumn("balanced accuracy", format="%.4f",
                                                           help="mean of the per-class recalls"),
        "baseline_accuracy": st.column_config.NumberColumn("majority baseline", format="%.4f",
                                                           help="accuracy of always predicting the majority class"),
        "samples_per_s": st.column_config.NumberColumn("samples/s", format="%.0f"),
        "wall_s": st.column_config.NumberColumn("wall (s)", format="%.1f"),
    })
selected = [int(df.iloc[i]["id"]) for i in event.selection.rows] if event and event.selection else []
if not selected:
    selected = [int(i) for i in df["id"].head(2)]
    st.caption(f"Nothing selected: showing the latest {len(selected)} run(s).")

align = st.radio("Align curves by", ["time", "samples"], horizontal=True, key="align",
                 format_func=lambda a: {"time": "time since launch", "samples": "samples seen"}[a])
views = lab.runs.views(selected)
info = plots.compare_info(views, align)
mem, thr, acc = plots.compare_figures(info, align)
c1, c2, c3 = st.columns(3)
c1.plotly_chart(mem, key="cmp_mem")
c2.plotly_chart(thr, key="cmp_thr")
c3.plotly_chart(acc, key="cmp_acc")

diff = lab.runs.differing_knobs(selected)
if diff:
    st.subheader("Knobs that differ")
    st.dataframe(pd.DataFrame(diff, index=[f"run {i}" for i in selected]).T.astype(str), key="diff")
elif len(selected) > 1:
    st.caption("The selected runs have identical knobs.")

st.subheader("Export and delete")
c1, c2, c3, c4 = st.columns(4)
c1.download_button("Data (JSON)", lab.runs.export(selected, "json"), file_name="runs.json", mime="application/json")
c2.download_button("Memory samples (CSV)", lab.runs.export(selected, "csv"), file_name="runs.csv", mime="text/csv")
html = "".join(f.to_html(full_html=False, include_plotlyjs="cdn" if i == 0 else False)
               for i, f in enumerate((mem, thr, acc)))
c3.download_button("Charts (HTML)", f"<html><body>{html}</body></html>", file_name="charts.html", mime="text/html")
if c4.button(f"Delete {len(selected)} selected", key="delete"):
    try:
        for rid in selected:
            lab.runs.delete(rid)
        st.rerun()
    except SvmcoreError as e:
        show_error(e)
