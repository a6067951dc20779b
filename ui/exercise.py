"""Learn's class exercise drawn: pick a remedy, guess the change of the exact peak, then
the guess beside the measurement and the memory model's forecast. Alone, the answers
wait for the learner's guess; in teacher mode every browser's guess goes into one round
and the answers (with the class's tally) wait for the teacher."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from svmcore.app.exercise import answers_hidden, pct_text
from svmcore.spec.errors import SvmcoreError
from ui.charts import chart_text
from ui.messages import plain

GUESS_HELP = "Negative: the peak falls. −30 means the remedy saves 30% of the exact peak."


def _start(lab, quick: bool) -> None:
    try:
        st.session_state.exercise = lab.exercise.start(st.session_state.exercise_remedy,
                                                       st.session_state.exercise_guess, quick)
    except SvmcoreError as e:
        st.session_state.exercise_error = str(e)


def _again() -> None:
    st.session_state.pop("exercise", None)
    st.session_state.exercise_guess = None


def _teacher(lab) -> None:
    lab.exercise.classroom.set_teacher(st.session_state.exercise_teacher)
    st.session_state.pop("exercise_guessed", None)


def _pick_and_guess(lab, key: str) -> tuple[str | None, float | None]:
    """The remedy (none picked yet) and the guess (blank: the learner's own number, not one
    the page suggests)."""
    options = {c.key: c.title for c in lab.exercise.choices()}
    pick = st.selectbox("Your pick", list(options), format_func=options.get, key=f"{key}_remedy", index=None,
                        placeholder="the remedy you think lowers the peak", width=520)
    guess = st.number_input("Your guess: change of the exact peak (%)", min_value=-99, max_value=300, value=None,
                            step=5, key=f"{key}_guess", width=260, placeholder="e.g. −20", help=GUESS_HELP)
    return pick, guess


def exercise_panel(lab, quick: bool, busy: bool) -> bool:
    """The exercise; returns whether the measured answers are hidden from this learner."""
    st.subheader("Class exercise: predict before you measure")
    rnd = lab.exercise.classroom.state()
    st.session_state.exercise_teacher = rnd.teacher  # the class's mode, as any browser last set it
    st.toggle("Teacher mode: a class guesses from its own browsers; the answers wait for the teacher",
              key="exercise_teacher", on_change=_teacher, args=(lab,))
    if rnd.teacher:
        _class_round(lab, rnd, quick)
    else:
        _alone(lab, quick, busy)
    return answers_hidden(rnd.teacher, rnd.revealed)


def _alone(lab, quick: bool, busy: bool) -> None:
    started = st.session_state.get("exercise")
    if started is None:
        st.markdown(f"The setup: **{lab.exercise.setup_text(quick)}**. Which remedy lowers its exact peak, and by "
                    "how much? Pick one and write down your guess; then measure it. The product runs the setup "
                    "before and after the remedy (or takes the pair measured ahead on this machine) and shows your "
                    "guess beside the measured exact peaks and the memory model's forecast. Guess before you look "
                    "at the table below; for a class, teacher mode hides it until the teacher reveals it.")
        with st.container(horizontal=True, gap="small", vertical_alignment="bottom"):
            pick, guess = _pick_and_guess(lab, "exercise")
            st.button("Measure it", type="primary", key="exercise_go", on_click=_start, args=(lab, quick),
                      disabled=busy or pick is None or guess is None,
                      help="Waits for the page's other runs first." if busy else
                      "Pick a remedy and type your guess first." if pick is None or guess is None else None)
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
            ahead = " (measured ahead on this machine)" if started.get("ahead") else ""
            st.caption(out["model"] + f" Runs {out['runs'][0]} (before) and {out['runs'][1]} (after){ahead}.")
        else:
            st.warning(out["text"])
    else:
        st.warning(out["text"])
    st.button("Try another guess", key="exercise_again", on_click=_again)


def _submit(lab) -> None:
    try:
        n = lab.exercise.submit(st.session_state.class_remedy, st.session_state.class_guess,
                                st.session_state.get("class_name", ""))
        st.session_state.exercise_guessed = n
        st.session_state.class_guess = None
    except SvmcoreError as e:
        st.session_state.exercise_error = str(e)


def _class_round(lab, rnd, quick: bool) -> None:
    st.markdown(f"The setup: **{lab.exercise.setup_text(quick)}**. Everyone picks the remedy they think lowers its "
                "exact peak, types a guess and submits it from their own browser. The answers stay hidden until the "
                "teacher reveals them; then each remedy's guesses are tallied beside the measurement.")
    if not rnd.revealed:
        with st.container(horizontal=True, gap="small", vertical_alignment="bottom", key="class_guess_box"):
            pick, guess = _pick_and_guess(lab, "class")
            st.text_input("Your name (optional)", key="class_name", max_chars=40, width=200)
            st.button("Submit my guess", type="primary", key="class_submit", on_click=_submit, args=(lab,),
                      disabled=pick is None or guess is None,
                      help="Pick a remedy and type your guess first." if pick is None or guess is None else None)
        if st.session_state.get("exercise_error"):
            st.error(plain(st.session_state.pop("exercise_error")))
        mine = st.session_state.get("exercise_guessed")
        st.info(("Your guess is in. " if mine else "") + f"{len(rnd.guesses)} guess(es) in this round. The answers "
                "appear when the teacher reveals them.", icon=":material/how_to_vote:")
    _teacher_controls(lab, rnd, quick)
    if rnd.revealed:
        _class_reveal(lab, rnd, quick)


def _teacher_controls(lab, rnd, quick: bool) -> None:
    with st.expander("For the teacher", expanded=not rnd.revealed):
        ready = lab.exercise.prepared(quick)
        st.caption(f"Measured on this machine at this size: {ready['measured']} of {ready['of']} remedies"
                   + (f"; {len(ready['running'])} run(s) of the preparation going" if ready["running"] else "")
                   + ". Measure them ahead, before the class, so the reveal needs no waiting: several runs at "
                     "once, as many as the memory available allows (each run's exact peak is its own process's, "
                     "so running side by side leaves it true).")
        with st.container(horizontal=True, gap="small"):
            if st.button("Measure every remedy ahead", key="class_prepare", disabled=bool(ready["running"])):
                try:
                    done = lab.exercise.prepare(quick)
                    st.session_state.class_prepared = (f"Queued {len(done['pairs'])} pair(s), {done['slots']} run(s) "
                                                       f"at once; {done['already']} were measured already.")
                except SvmcoreError as e:
                    st.session_state.exercise_error = str(e)
                st.rerun()
            st.button("Hide the answers" if rnd.revealed else "Reveal the answers", key="class_reveal",
                      type="secondary" if rnd.revealed else "primary", disabled=not rnd.guesses,
                      on_click=lab.exercise.classroom.reveal, args=(not rnd.revealed,),
                      help=None if rnd.guesses else "The answers wait for the class's guesses: none is in yet.")
            st.button("New round", key="class_new", on_click=lab.exercise.classroom.new_round,
                      help="No guesses, answers hidden again; the measurements stay.")
        if st.session_state.get("class_prepared"):
            st.caption(st.session_state.pop("class_prepared"))


def _class_reveal(lab, rnd, quick: bool) -> None:
    keys = sorted({g.choice for g in rnd.guesses}, key=lambda k: -len(rnd.guesses_for(k)))
    if not keys:
        st.info("No guesses in this round yet.")
        return
    for key in keys:
        view = lab.exercise.class_view(key, quick)
        with st.container(border=True):
            st.markdown(f"**{plain(view['title'])}**")
            st.plotly_chart(guesses_figure(view), key=f"class_tally_{key}", config={"displaylogo": False})
            if view["verdict"]:
                st.success(view["verdict"], icon=":material/groups:")
            else:
                st.warning("Not measured on this machine yet at this size: measure every remedy ahead (above), or "
                           "let one learner press Measure it with teacher mode off.")


def guesses_figure(view: dict, height: int = 260) -> go.Figure:
    """The class's guesses as bars of ten points, the measured change and the memory
    model's forecast as vertical lines."""
    fig = go.Figure(go.Bar(x=[(b.lo + b.hi) / 2 for b in view["bins"]], y=[b.count for b in view["bins"]],
                           width=[(b.hi - b.lo) * 0.9 for b in view["bins"]], marker_color="#9467BD",
                           name="guesses", hovertemplate="%{y} guess(es) from %{x:.0f} ± 5%<extra></extra>"))
    measured, forecast = view["measured_pct"], view["forecast_pct"]
    # the two labels stand on either side of their lines, away from each other: close lines overlapped them
    left = measured is not None and forecast is not None and measured < forecast
    for pct, name, dash, colour, side in (
            (measured, "measured", "solid", "#2CA02C", "top left" if left else "top right"),
            (forecast, "memory model's lower bound" if view["lower_bound"] else "memory model's forecast", "dash",
             "#6B6B6B", "top right" if left else "top left")):
        if pct is not None:
            fig.add_vline(x=pct, line=dict(color=colour, dash=dash, width=2.5),
                          annotation_text=chart_text(f"{name} {pct_text(pct)}"), annotation_position=side)
    xs = [b.lo for b in view["bins"]] + [b.hi for b in view["bins"]]
    xs += [v for v in (measured, forecast) if v is not None]
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10), showlegend=False, bargap=0,
                      xaxis=dict(title="change of the exact peak (%)", automargin=True, ticksuffix="%",
                                 range=[min(xs) - 12, max(xs) + 12]),
                      # room above the tallest bar for the two lines' labels (they were written over it)
                      yaxis=dict(title="guesses", automargin=True, dtick=1,
                                 range=[0, 1.4 * max([b.count for b in view["bins"]] + [1])]))
    return fig
