"""Learn: the common memory advice, each claim beside what it saves here, phase by phase."""

import pandas as pd
import streamlit as st

from svmcore.app.learn import queued_note
from svmcore.spec.errors import SvmcoreError
from ui import charts as plots
from ui.claims import claims_table_html
from ui.exercise import exercise_panel
from ui.messages import show_error
from ui.state import page_setup

lab = page_setup("Learn")
st.title("Learn the remedies")
st.markdown(
    "The usual advice for running out of memory comes with savings: *smaller batches save 30–50%, streaming 90%*. "
    "Each remedy below is measured before and after, changing only its own knobs, on stated setups; the default "
    "setup (sparse data, in memory) is always one of them. **Where the peak happens decides what a remedy can "
    "save**: a run's peak is its highest phase, so a remedy that acts on training cannot lower a peak that loading "
    "owns, and no remedy goes below the floor that Python and the libraries take before any data. Two causes of "
    "memory that *grows* while training can be switched on and measured too: a cache of transformed rows "
    "(`transform_cache`) and a history of batch arrays (`history`, kept by references or in reference cycles: "
    "the one case where periodic `gc.collect()` saves memory).")

SIZES = {"stated": "the stated setups", "quick": "quick: a tenth of the rows (savings differ)"}


def _measure(key: str | None, quick: bool) -> None:
    try:
        pairs = lab.learn.run_remedy(key, quick=quick) if key else lab.learn.run_all(quick=quick)
        st.session_state.learn_queued = queued_note(pairs)
    except SvmcoreError as e:
        st.session_state.learn_error = str(e)


def body(live: bool) -> None:
    pending = lab.learn.pending()
    if live and not pending:
        st.rerun(scope="app")  # the last runs ended: the whole page, with their numbers
    results = lab.learn.results()
    note = lab.learn.sources_note(results)
    if note:
        (st.info if note.reference else st.success)(note.text, icon=":material/computer:")
    size = st.radio("Measure at", list(SIZES), format_func=SIZES.get, key="learn_size", horizontal=True)
    st.button("Measure all on this machine", key="learn_all", on_click=_measure, args=(None, size == "quick"),
              disabled=bool(pending), help=lab.learn.measure_all_help())
    if pending:
        st.caption(f"Measuring on this machine: runs {', '.join(map(str, pending))} queued or running, one at a "
                   "time. Their numbers replace the reference when each pair ends.")
    if st.session_state.get("learn_error"):
        show_error(st.session_state.pop("learn_error"))
    elif st.session_state.get("learn_queued") and pending:
        st.caption(st.session_state.learn_queued)

    hidden = exercise_panel(lab, size == "quick", busy=bool(pending) and "exercise" not in st.session_state)
    if hidden:  # what each remedy measured would give the exercise away
        st.info("Teacher mode: the measured answers (the advice confronted, each remedy phase by phase, the diagnosis "
                "loop) appear here when the teacher reveals them.", icon=":material/visibility_off:")
        return
    advice_table(results)
    one_remedy(results, size, pending)
    loop_and_imports()


def advice_table(results) -> None:
    """What each remedy measured, beside what the advice claims."""
    st.subheader("The advice, confronted")
    st.caption("Per remedy and setup: the saving the usual advice claims, then what it changed here: the run's exact "
               "peak (the kernel's high-water mark), the peak of the phases it acts on, how the RSS split into "
               "anonymous and file-backed memory at its highest sample, throughput and accuracy (balanced accuracy in "
               "brackets). Changes are after vs before.")
    st.markdown(claims_table_html(lab.learn.claims(results)), unsafe_allow_html=True)
    speed = lab.learn.speed_note(results)
    if speed:
        st.caption(speed)


def see_also(r) -> None:
    """What tracing costs, beside what monitoring costs (the remedy's ``see_also`` benchmark)."""
    also = lab.learn.measured_by_bench(r, see_also=True)
    if also:
        with st.container(border=True, key="learn_see_also"):
            st.markdown("**Beside it: allocation tracing (the trace knob).** A traced run names the lines that held "
                        "its memory; the tracker costs speed and memory while it records.")
            st.caption(also.caption)
            for line in also.lessons:
                st.markdown(f"- {line}")


def one_remedy(results, size: str, pending: list[int]) -> None:
    st.subheader("One remedy, phase by phase")
    remedies = lab.learn.remedies()
    key = st.selectbox("Remedy", [r.key for r in remedies], key="learn_remedy",
                       format_func=lambda k: next(r.title for r in remedies if r.key == k))
    r = next(x for x in remedies if x.key == key)
    st.markdown(f"**What it does.** {r.what} **Why it saves memory.** {r.why} **What it costs.** {r.cost} "
                f"**The advice claims:** {r.claim}.")
    if r.limits:
        st.info(r.limits, icon=":material/info:")
    if r.measured_by:  # no before/after pair of runs: its own benchmark's figures
        finding = lab.learn.measured_by_bench(r)
        st.caption(finding.caption)
        for line in finding.lessons:
            st.markdown(f"- {line}")
    else:
        st.button(f"Measure {r.title.lower()} on this machine", key=f"learn_measure_{r.key}", on_click=_measure,
                  args=(r.key, size == "quick"), disabled=bool(pending))
    see_also(r)
    mine = [x for x in results if x.remedy.key == r.key]
    for x in mine:
        with st.container(border=True):
            e = x.experiment
            st.markdown(x.heading())
            if e.impossible:
                st.caption(f"Not run: {e.impossible}.")
                continue
            if x.pending:
                st.caption(f"Measuring on this machine: runs {', '.join(map(str, x.pending))}.")
            if x.before is None:
                st.caption("Not measured yet.")
                continue
            st.caption(x.measured_on())
            if x.error:
                show_error(x.error, "warning", prefix="Not comparable: ")
                continue
            st.plotly_chart(plots.remedy_phases_figure(plots.remedy_phases_info(x.before, x.after, x.cmp),
                                                       "Exact peak per phase, before and after"),
                            key=f"learn_bars_{r.key}_{e.key}")
            for lesson in x.lessons:
                st.markdown(f"- {lesson}")


def loop_and_imports() -> None:
    st.subheader("The diagnosis loop")
    loop = lab.learn.diagnosis_loop()
    st.markdown("\n".join(f"{i}. {step}" for i, step in enumerate(loop.steps, 1)))
    st.caption("`python -m svmcore doctor RUN_ID` does steps 2-4 for a run; `python -m svmcore fit --budget MB` "
               "and **Make it fit** on Train run the whole loop, every attempt a run linked to the one before.")
    if loop.measured:
        st.info(loop.measured, icon=":material/route:")

    st.subheader("What importing costs")
    floors = lab.forecasts.import_costs()
    st.caption("Before any data, the worker holds Python and its libraries: the floor, under every run's peak and "
               "every saving above. " + floors[0]["basis"].capitalize() + ".")
    st.table(pd.DataFrame([{"libraries": f["libraries"], "model": f["model"], "floor (MiB)": f"{f['floor_mb']:,.0f}"}
                           for f in floors]).set_index("libraries"))


if lab.learn.pending():
    st.fragment(run_every=1.0)(body)(live=True)
else:
    body(live=False)
