"""The diagnosis loop on the dashboard: the diagnosis under an oom or over-budget run,
and "Make it fit" on Train."""

from __future__ import annotations

import streamlit as st

from svmcore.app.doctor import text
from svmcore.app.lab import Lab
from svmcore.app.runs import RunView
from svmcore.spec.errors import SvmcoreError
from svmcore.store.records import RunStatus
from ui.messages import plain, show_error


def _markdown(diagnosis_text: str) -> str:
    """The diagnosis's lines as paragraphs, its indented lines as list items (plain text)."""
    out = []
    for line in diagnosis_text.splitlines():
        if line.startswith("  "):
            item = line.strip()
            item = item[2:] if item.startswith("- ") else item.split(". ", 1)[-1]
            out.append(f"- {plain(item)}")
        else:
            out.append(("\n" if out else "") + plain(line) + "\n")
    return "\n".join(out)


def diagnosis_panel(lab: Lab, view: RunView) -> None:
    """Under a finished run that ran out of memory or went over its budget (its cap, or the
    budget of the fit that launched it): which phase held the peak, what held it, and the
    remedies that act there."""
    budget = lab.fits.budget_of(view.id)
    peak = view.summary.run_peak.mb  # a data-parallel run: all its processes
    over = view.status == RunStatus.COMPLETED and budget is not None and peak is not None and peak > budget
    if view.status != RunStatus.OOM and not over:
        return
    try:
        d = lab.fits.diagnose(view.id, budget)
    except SvmcoreError as e:
        show_error(e, "warning", prefix="No diagnosis: ")
        return
    with st.expander(f"Diagnosis: the {d['owner']} phase held the peak — what would fit", expanded=True):
        st.markdown(_markdown(text(d)))
        st.caption(f"The same as `python -m svmcore doctor {view.id}"
                   + (f" --budget {budget:g}`" if budget is not None else "`")
                   + ". Predicted savings are for this run's own config; measured ones are Learn's reference.")


def fit_panel(lab: Lab, values: dict) -> None:
    """"Make it fit": remedies and runs until one completes within the budget."""
    with st.expander("Make it fit a memory budget"):
        c1, c2 = st.columns([1, 2], vertical_alignment="bottom")
        budget = c1.number_input("budget (MiB)", min_value=64, max_value=1_000_000, step=16, value=256,
                                 key="fit_budget")
        c2.caption("Forecast; while it does not fit, apply the remedy that acts on the phase owning the peak at the "
                   "least cost; launch under the budget as a cap; on oom, diagnose the measured run and repeat.")
        if st.button("Make it fit", key="fit_go"):
            try:
                st.session_state.fit_id = lab.fits.start(values, float(budget))
            except SvmcoreError as e:
                show_error(e, "warning")
        fit_id = st.session_state.get("fit_id")
        if fit_id is not None:
            _fit_progress(lab, fit_id)


@st.fragment(run_every=1.0)
def _fit_progress(lab: Lab, fit_id: int) -> None:
    state = lab.fits.state(fit_id)
    if state is None:
        return
    for step in state["steps"]:
        st.markdown(f"- {plain(step)}")
    if state["running"]:
        if state["runs"] and st.session_state.get("run_id") != state["runs"][-1]:
            st.session_state.run_id = state["runs"][-1]  # the run panel below follows the current attempt
            st.rerun(scope="app")
        st.caption(f"Working: {len(state['runs'])} run(s) launched so far.")
        return
    if state["error"]:
        show_error(state["error"], prefix="Make it fit failed: ")
        return
    r = state["result"]
    shown = (st.success if r["fits"] else st.warning)
    shown(("**Fits:** " if r["fits"] else "**Does not fit:** ") + plain(r["summary"]))
    if st.session_state.get("fit_followed") != fit_id and state["runs"]:
        st.session_state.fit_followed = fit_id
        st.session_state.run_id = state["runs"][-1]
        st.rerun(scope="app")
