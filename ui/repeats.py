"""Repeating a run over seeds, from Train: the same setting again, so that its run-to-run
spread is measured and Compare draws it as a band."""

from __future__ import annotations

import streamlit as st

from svmcore.spec.errors import SvmcoreError
from ui.messages import show_error

SEEDS = 2


def _repeat(lab, run_id: int) -> None:
    try:
        st.session_state.repeated = (run_id, lab.runs.repeat(run_id, SEEDS))
    except SvmcoreError as e:
        st.session_state.repeat_error = str(e)


def repeat_button(lab, row: dict) -> None:
    """Under a completed run: launch its setting over more seeds, then a link to Compare
    with it and its repeats (the band of their memory, every delta judged by their spread)."""
    if row["status"] != "completed":
        return
    rid = row["id"]
    with st.container(horizontal=True, gap="small", vertical_alignment="center", key=f"repeat_row_{rid}"):
        st.button(f"Repeat over {SEEDS} more seeds", key=f"repeat_{rid}", on_click=_repeat, args=(lab, rid),
                  help="The same knobs with the next seeds, through the queue: how far runs of one setting differ "
                       "is the noise every comparison is judged by.")
        done = st.session_state.get("repeated")
        if done and done[0] == rid:
            st.page_link("pages/1_Compare.py", label=f"Compare run {rid} with its repeats (runs "
                                                      f"{', '.join(map(str, done[1]))})",
                         query_params={"runs": ",".join(map(str, [rid, *done[1]]))}, icon=":material/compare:")
    if "repeat_error" in st.session_state:
        show_error(st.session_state.pop("repeat_error"))
