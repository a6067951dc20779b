"""Compare: runs against a baseline in one line each, their curves on one x axis,
per-phase peaks, what differs, a presentation view, export, delete."""

import streamlit as st

from svmcore.app.headlines import run_tag
from svmcore.spec.errors import SvmcoreError
from ui import charts as plots
from ui import compare, deletion, sites, sweep_views
from ui.live import X_CHOICES
from ui.messages import show_error
from ui.state import page_setup


def _recolour(run_id: int) -> None:
    try:
        lab.runs.set_colour(run_id, st.session_state.get(f"colour_{run_id}"))
    except SvmcoreError as e:
        st.session_state.colour_error = str(e)


lab = page_setup("Compare")
present = st.session_state.get("present", False)
if present:  # only the result on the screen: no sidebar, no table, no pickers (they stay mounted, hidden)
    st.markdown("<style>[data-testid='stSidebar'],[data-testid='stSidebarCollapsedControl'],"
                "[data-testid='stHeader'],.st-key-controls{display:none}</style>", unsafe_allow_html=True)
st.title("Compare runs")
rows = lab.runs.history()
if not rows:
    st.info("No runs yet. Launch one on the **Train** page, or a grid on **Sweep**.")
    st.stop()

st.toggle("Presentation view", key="present",
          help="Only the headline, big numbers and the charts, full width: for showing the result to others.")
named = {r["id"]: r["name"] for r in rows}
with st.container(key="controls"):
    with st.expander("Runs: select rows to compare", expanded=True):
        st.caption("Click rows to select runs (sort by clicking a column header; the run and its key numbers stay "
                   "pinned when the table scrolls). Peaks are exact (the kernel's high-water mark); samples/s is "
                   "training throughput. Name a run on the Train page.")
        shown = sweep_views.filtered(rows)
        if not shown:
            st.info("No run matches these filters.")
            st.stop()
        df = compare.history_frame(shown)
        deletion.clear_selection_if_asked("history", [r["id"] for r in shown])
        event = st.dataframe(df, hide_index=True, on_select="rerun", selection_mode="multi-row", key="history",
                             column_config=compare.history_columns(), placeholder="–")
    # picked: the rows the user ticked, the only runs a delete or a tag acts on
    picked = [int(df.iloc[i]["id"]) for i in event.selection.rows if i < len(df)] if event and event.selection else []
    selected = picked
    # a comparison can be linked to: Compare?runs=3,5,8 (until rows are selected in the table)
    linked = [int(v) for v in str(st.query_params.get("runs", "")).split(",") if v.strip().isdigit()]
    linked = [i for i in dict.fromkeys(linked) if i in named]
    if not selected and linked:
        selected = linked
        st.caption(f"Showing the {len(selected)} run(s) named in the page's address; select rows to change.")
    elif not selected:
        selected = sorted(int(i) for i in df["id"].head(2))
        st.caption(f"Nothing selected: showing the latest {len(selected)} run(s).")
    sweep_views.tag_editor(lab, picked)

    picked_base, why_base = lab.runs.baseline_of(selected)
    if st.session_state.get("baseline_of") != selected:  # new runs compared: the baseline a person would pick
        st.session_state.update(baseline_of=selected, baseline=picked_base)
    with st.container(horizontal=True, gap="large", vertical_alignment="bottom"):
        baseline = st.selectbox("Baseline", selected, key="baseline", width=300,
                                format_func=lambda i: f"run {i}" + (f" · {named[i]}" if named.get(i) else ""),
                                help="Every other run is compared against this one.")
        x = st.segmented_control("x axis", list(X_CHOICES), default="time", format_func=X_CHOICES.get,
                                 key="cmp_x") or "time"
        colour_menu = st.popover("Colours", help="Pick a run's colour: it keeps it on every page.")
cmp = lab.runs.compare(selected, baseline)
if len(selected) > 1:
    st.caption(f"Baseline run {baseline}: " + (why_base if baseline == picked_base else "your choice")
               + ". Every other run is named by what it changed against it.")
tags = {r.id: run_tag(r.label, r.name) for r in cmp.runs}
colours = compare.colours_of(cmp, {r["id"]: r["colour"] for r in rows})
with colour_menu:
    for r in cmp.runs:
        st.color_picker(r.title, value=colours[r.id], key=f"colour_{r.id}", on_change=_recolour, args=(r.id,))
if "colour_error" in st.session_state:
    show_error(st.session_state.pop("colour_error"))

compare.headline(cmp, colours, big=present)
if present:
    compare.big_numbers(cmp, colours)

views = lab.runs.views(selected)
for v in views:
    if v.damage:
        show_error("; ".join(v.damage), "warning", prefix=f"**Run {v.id}'s record is damaged**, compared without: ")
stem = f"svm-memory-lab-runs-{'-'.join(map(str, selected))}"
series = [plots.view_series(v, x, tags.get(v.id, ""), colour=colours.get(v.id)) for v in views]
stacked = plots.stacked_info(series, phases_of=cmp.baseline, groups=lab.runs.repeats(selected))
figures = []
if stacked.panels:
    figures.append(compare.with_headline(plots.stacked_figure(stacked, height=720 if present else 620), cmp))
    st.plotly_chart(figures[-1], key="cmp_chart", config=compare.chart_config(f"{stem}-memory", figures[-1]))
    st.caption("Solid: memory (RSS sampled at 50 Hz), throughput and accuracy; dashed: each run's exact peak; "
               "dotted: balanced accuracy; stars: the final evaluation on every test row. "
               f"Shaded: the phases of the baseline, run {cmp.baseline}."
               + (" Runs that repeat one setting over seeds: their mean memory as a thick line, the band from the "
                  "lowest to the highest of them, each run thin." if stacked.bands else ""))
else:
    st.caption("The selected runs have no memory samples to draw" + (" by samples seen." if x == "samples" else "."))
peaks = plots.phase_peaks_info(views, tags, colours)
if peaks.phases:
    st.subheader("Exact peak of each phase")
    figures.append(compare.with_headline(plots.phase_peaks_figure(peaks), cmp))
    st.plotly_chart(figures[-1], key="cmp_phases", config=compare.chart_config(f"{stem}-phase-peaks", figures[-1]))

diff = lab.runs.differing_knobs(selected)
if not present:
    if diff:
        st.subheader("Knobs that differ")
        st.dataframe(compare.knob_frame(diff, selected), key="diff")
    elif len(selected) > 1:
        st.caption("The selected runs have identical knobs.")
    sites.compare_panel(views, baseline)

st.subheader("Export" if present else "Export and delete")
hosts = {r["id"]: r["host"] for r in rows}
with st.container(horizontal=True, gap="small"):
    st.download_button("Presentation (HTML)",
                       lambda: compare.presentation_html(cmp, figures, diff, hosts, colours=colours),
                       file_name=f"{stem}.html", mime="text/html",
                       help="One file with the headline, the numbers and the interactive charts; opens offline.")
    st.download_button("Data (JSON)", lab.runs.export(selected, "json"), file_name="runs.json",
                       mime="application/json")
    st.download_button("Memory samples (CSV)", lab.runs.export(selected, "csv"), file_name="runs.csv",
                       mime="text/csv")
    if not present:
        deletion.delete_button(picked)
if not present:
    deletion.confirm_delete(lab, picked, tags)
deletion.show_deleted()
