"""The diagnosis loop on the dashboard: the short answer under a run that did not fit
(its remedies one button away from the sidebar), the one panel for a memory budget
(recommend from the forecast, or make it fit with runs), and the fit's result card."""

from __future__ import annotations

import streamlit as st

from svmcore.app.doctor import text
from svmcore.app.fit import FitCard, diagnosis_answer
from svmcore.app.headlines import change_text
from svmcore.app.lab import Lab
from svmcore.app.runs import RunView
from svmcore.spec.errors import SvmcoreError
from svmcore.spec.knobs import KNOBS
from ui.messages import plain, scroll_into_view, show_error
from ui.widgets import apply_knobs, load_knobs


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


def _knobs_of(view: RunView, change: dict) -> dict:
    """The run's own knobs with a remedy's change: what Launch would run next."""
    return {**{k: v for k, v in view.config.items() if k in KNOBS}, **change}


def diagnosis_panel(lab: Lab, view: RunView) -> None:
    """Under a finished run that ran out of memory or went over its budget (its cap, or the
    budget of the fit that launched it): the short answer (the verdict and the best remedies,
    each with a button that puts the run's knobs with its change in the sidebar), and the
    full diagnosis folded below it."""
    budget = lab.fits.budget_of(view.id)
    if lab.fits.failed_budget(view.id) is None:
        return
    try:
        d = lab.fits.diagnose(view.id, budget)
    except SvmcoreError as e:
        show_error(e, "warning", prefix="No diagnosis: ")
        return
    answer = diagnosis_answer(d)
    with st.container(border=True, key=f"diagnosis_{view.id}"):
        st.markdown(f"**Why it did not fit.** {plain(answer.verdict)}")
        if answer.remedies:
            first = "what stops the growth first, then what is " if d.get("growth_remedies") else ""
            st.markdown(f"**What would fit, best first** ({first}acting on the {plain(d['owner'])} phase, which "
                        "held the peak):")
        for r in answer.remedies:
            c1, c2 = st.columns([5, 1], vertical_alignment="center")
            c1.markdown(f"{r.rank}. **{plain(r.title)}** → {plain(r.text)}")
            c2.button("Apply", key=f"doctor_apply_{view.id}_{r.rank}", on_click=load_knobs,
                      args=(_knobs_of(view, r.change),), type="primary" if r.rank == 1 else "secondary",
                      help=f"Puts run {view.id}'s knobs with {change_text(r.change)} in the sidebar; press Launch "
                           "to run it.")
        if answer.none_why:
            st.markdown(plain(answer.none_why) + " The detail below says why each remedy cannot help.")
        more = f"{answer.more_remedies} more remedies, " if answer.more_remedies else ""
        with st.expander(f"Detail: each phase's exact peak, what held the memory, {more}"
                         f"{answer.useless} that cannot help here"):
            st.markdown(_markdown(text(d)))
            st.caption(f"The same as `python -m svmcore doctor {view.id}"
                       + (f" --budget {budget:g}`" if budget is not None else "`")
                       + ". Predicted savings are for this run's own config; measured ones are Learn's reference.")


def _budget_default(lab: Lab, shown_id: int | None, forecast_mb: float | None) -> None:
    """The budget field starts at the budget the shown run did not fit (its cap, or its
    fit's budget), else at 80% of the forecast, else 256 MiB; it follows the shown run."""
    failed = lab.fits.failed_budget(shown_id) if shown_id is not None else None
    if st.session_state.get("fit_budget_for") == (shown_id, failed) and "fit_budget" in st.session_state:
        return
    st.session_state.fit_budget_for = (shown_id, failed)
    st.session_state.fit_budget = int(failed if failed is not None
                                      else max(64, forecast_mb * 0.8) if forecast_mb else 256)


def budget_panel(lab: Lab, values: dict, shown_id: int | None, forecast_mb: float | None) -> None:
    """One panel for one question, a memory budget: "Recommend" answers from the memory
    model (no run), "Make it fit" runs the diagnosis loop until a run fits."""
    failed = lab.fits.failed_budget(shown_id) if shown_id is not None else None
    _budget_default(lab, shown_id, forecast_mb)
    with st.expander("Fit a memory budget", expanded=failed is not None):
        c1, c2 = st.columns([1, 2], vertical_alignment="bottom")
        budget = c1.number_input("budget (MiB)", min_value=64, max_value=1_000_000, step=16, key="fit_budget")
        objective = c2.radio("recommend the best for", ["accuracy", "balanced_accuracy", "throughput"],
                             horizontal=True, key="rec_objective", format_func=lambda o: o.replace("_", " "))
        st.caption("**Recommend**: the memory model's pick among settings near the sidebar's, no run (needs the "
                   "calibration). **Make it fit**: forecast; while it does not fit, apply the remedy that acts on "
                   "the phase owning the peak at the least cost; launch under the budget as a cap; on oom, diagnose "
                   "the measured run and repeat. The result is set beside the run shown when it did not fit the "
                   "budget with these knobs.")
        with st.container(horizontal=True, gap="small"):
            recommend = st.button("Recommend", key="rec_go", disabled=forecast_mb is None,
                                  help=None if forecast_mb is not None else "Calibrate first (above).")
            go = st.button("Make it fit", key="fit_go", type="primary")
        if recommend:
            try:
                st.session_state.recommendation = lab.forecasts.recommend(values, budget, objective)
            except SvmcoreError as e:
                st.session_state.recommendation = {"fits": False, "message": str(e)}
        if go:
            try:
                st.session_state.fit_id = lab.fits.start(values, float(budget), origin=shown_id)
                st.session_state.pop("fit_card_closed", None)
                st.rerun()
            except SvmcoreError as e:
                show_error(e, "warning")
        _recommendation()


def _recommendation() -> None:
    rec = st.session_state.get("recommendation")
    if rec and not rec["fits"]:
        show_error(rec["message"], "warning")
    elif rec:
        changed = ", ".join(f"{k} = {v}" for k, v in rec["changed"].items()) or "the knobs as they are"
        show = st.success if rec.get("confident") else st.warning
        show(f"Within {rec['budget_mb']:,.0f} MiB, best for {rec['objective'].replace('_', ' ')}: **{changed}** "
             f"({rec['fitting']} of {rec['candidates']} candidate settings are predicted to fit). "
             + rec.get("statement", f"Predicted exact peak {rec['predicted_peak_mb']:,.0f} MiB."))
        st.caption(f"Ranking: {rec['basis']}. Launch it to measure it; the result shows predicted vs measured.")
        st.button("Use these knobs", key="rec_apply", on_click=apply_knobs, args=(rec["changed"],))


def fit_status(lab: Lab) -> None:
    """At the top of Train: a running fit's steps (the run panel below follows its current
    attempt), then its result card, in view where the run panel was."""
    fit_id = st.session_state.get("fit_id")
    if fit_id is None or st.session_state.get("fit_card_closed") == fit_id:
        return
    state = lab.fits.state(fit_id)
    if state is None:
        return
    if state["running"]:
        _fit_progress(lab, fit_id)
    elif state["error"]:
        show_error(state["error"], prefix="Make it fit failed: ")
    else:
        card = lab.fits.card(fit_id)
        if card is not None:
            fit_card(card, lab.fits.fitting_knobs(fit_id), fit_id)
            if st.session_state.get("fit_card_shown") != fit_id:  # once: the page may be scrolled down to the button
                st.session_state.fit_card_shown = fit_id
                if state["runs"]:  # the run panel shows the loop's last attempt (the progress fragment may not
                    st.session_state.run_id = st.session_state.launched = state["runs"][-1]  # have run since)
                scroll_into_view("fit_card")


def _side(title: str, side) -> None:
    with st.container(border=True):
        if side is None:
            st.markdown(f"**{title}**: none")
            return
        st.markdown(f"**{title}: {plain(side.title)}**")
        st.caption(plain(side.outcome[0].upper() + side.outcome[1:]))
        with st.container(horizontal=True, gap="medium"):
            for label, value in (("exact peak", side.peak_mb and f"{side.peak_mb:,.0f} MiB"),
                                 ("samples/s", side.samples_per_s and f"{side.samples_per_s:,.0f}"),
                                 ("accuracy", side.accuracy is not None and f"{side.accuracy:.3f}")):
                st.metric(label, value or "–", width="content")


def fit_card(card: FitCard, knobs: dict, fit_id: int) -> None:
    """The run that did not fit beside the one that fits, what the fitting run costs, the
    knobs changed and why, and a button that puts the fitting knobs in the sidebar."""
    with st.container(border=True, key="fit_card"):
        took = f" and {card.took_s:,.0f} s" if card.took_s is not None else ""
        head = (f"**Make it fit {card.budget_mb:,.0f} MiB: it fits**, in {card.runs} run(s){took}" if card.fits
                else f"**Make it fit {card.budget_mb:,.0f} MiB: nothing fitted** after {card.runs} run(s){took}")
        (st.success if card.fits else st.warning)(head + ". " + plain(card.versus))
        left, right = st.columns(2)
        with left:
            _side("Did not fit", card.failed)
        with right:
            _side("Fits", card.fitting)
        if card.changes:
            st.markdown("**Knobs changed, and why**\n" + "\n".join(
                f"- **{plain(words)}**: {plain(why)}" for words, why in card.changes))
        if not card.fits:
            st.caption(plain(card.summary))
        with st.container(horizontal=True, gap="small"):
            if card.apply:
                st.button(f"Use these knobs: {change_text(card.apply)}", key="fit_apply", type="primary",
                          on_click=load_knobs, args=(knobs,),
                          help="Puts the fitting run's knobs in the sidebar (your own memory cap as it was); "
                               "press Launch to run it.")
            st.button("Close", key="fit_close", on_click=st.session_state.update, kwargs={"fit_card_closed": fit_id})


@st.fragment(run_every=1.0)
def _fit_progress(lab: Lab, fit_id: int) -> None:
    state = lab.fits.state(fit_id)
    if state is None:
        return
    if not state["running"]:
        st.rerun(scope="app")  # the whole page: the result card
    with st.container(border=True, key="fit_progress"):
        st.markdown(f"**Making it fit {state['budget_mb']:,.0f} MiB**: {len(state['runs'])} run(s) launched so far; "
                    "the run panel below follows the current attempt.")
        for step in state["steps"]:
            st.markdown(f"- {plain(step)}")
    if state["runs"] and st.session_state.get("run_id") != state["runs"][-1]:
        # the run panel follows the current attempt, first on the page as a launched run is
        st.session_state.run_id = st.session_state.launched = state["runs"][-1]
        st.rerun(scope="app")

