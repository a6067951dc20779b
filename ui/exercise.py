"""Learn's class exercise drawn: pick a remedy, guess the change of the exact peak,
measure; then the guess beside the measurement and the memory model's forecast."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from svmcore.app.exercise import pct_text
from svmcore.spec.errors import SvmcoreError
from ui.messages import plain


def _start(lab, quick: bool) -> None:
    try:
        st.session_state.exercise = lab.exercise.start(st.session_state.exercise_remedy,
                                                       st.session_state.exercise_guess, quick)
    except SvmcoreError as e:
        st.session_state.exercise_error = str(e)


def _again() -> None:
    st.session_state.pop("exercise", None)


def exercise_panel(lab, quick: bool, busy: bool) -> None:
    st.subheader("Class exercise: predict before you measure")
    started = st.session_state.get("exercise")
    if started is None:
        st.markdown(f"The setup: **{lab.exercise.setup_text(quick)}**. Which remedy lowers its exact peak, and by "
                    "how much? Pick one and write down your guess before you look at the table below; then measure "
                    "it. The product runs the setup before and after the remedy and shows your guess beside the "
                    "measured exact peaks and the memory model's forecast.")
        options = {c.key: c.title for c in lab.exercise.choices()}
        with st.container(horizontal=True, gap="small", vertical_alignment="bottom"):
            st.selectbox("Your pick", list(options), format_func=options.get, key="exercise_remedy", width=460)
            st.number_input("Your guess: change of the exact peak (%)", min_value=-99, max_value=300, value=-30,
                            step=5, key="exercise_guess", width=260,
                            help="Negative: the peak falls. −30 means the remedy saves 30% of the exact peak.")
            st.button("Measure it", type="primary", key="exercise_go", on_click=_start, args=(lab, quick),
                      disabled=busy, help="Waits for the page's other runs first." if busy else None)
        if st.session_state.get("exercise_error"):
            st.error(plain(st.session_state.pop("exercise_error")))
        return
    out = lab.exercise.outcome(started)
    st.markdown(f"**Your pick:** {plain(started['title'])}; **your guess:** {pct_text(started['guess_pct'])} of the "
                "exact peak.")
    if out["state"] == "measuring":
        st.info(out["text"] + " The reveal appears here when both have finished.", icon=":material/hourglass_top:")
    elif out["state"] == "done":
        st.dataframe(pd.DataFrame(out["rows"]).rename(columns={"who": "", "peak": "exact peak before → after",
                                                               "change": "change"}),
                     hide_index=True, key="exercise_reveal")
        if out["verdict"]:
            shown = st.success if out["verdict"].startswith("Well judged") else st.info
            shown(out["verdict"], icon=":material/psychology:")
            st.caption(out["model"] + f" Runs {out['runs'][0]} (before) and {out['runs'][1]} (after).")
        else:
            st.warning(out["text"])
    else:
        st.warning(out["text"])
    st.button("Try another guess", key="exercise_again", on_click=_again)
