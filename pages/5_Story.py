"""Story: a baseline and up to three remedies told as a click-through sequence, full
screen, and exported as one offline HTML file."""

import streamlit as st

from svmcore.app.headlines import pick_label
from svmcore.app.headlines import MOST_REMEDIES
from svmcore.spec.errors import SvmcoreError
from ui import story
from ui.messages import show_error
from ui.state import page_setup

lab = page_setup("Story")
rows = lab.runs.history()
done = sorted(r["id"] for r in rows if r["status"] == "completed")  # the oldest first: often the baseline
labels = {r["id"]: pick_label(r) for r in rows}


def _step(delta: int) -> None:
    st.session_state.story_step = st.session_state.get("story_step", 0) + delta


def _exit() -> None:
    """Back to the choice, with the story's runs and question still picked (the pickers,
    hidden while it was told, had forgotten them)."""
    base, remedies, question = st.session_state.story_runs
    st.session_state.update(story_on=False, story_base=base, story_remedies=list(remedies),
                            story_question=question or "")


if not st.session_state.get("story_on"):
    st.title("Tell a story")
    st.markdown("Pick a baseline and up to three remedy runs: the story shows the question, the baseline's memory "
                "curve with its phases, each remedy laid over it with its headline, and the trade-off, one slide "
                "at a time, full screen. Export it as one HTML file that opens offline and saves each slide as a "
                "PNG.")
    if len(rows) < 2:
        st.info("A story needs at least two runs. Launch them on **Train**, or a grid on **Sweep**.")
        st.stop()
    base = st.selectbox("Baseline", done, format_func=labels.get, key="story_base",
                        help="A completed run: every remedy is measured against it.")
    others = [r["id"] for r in rows if r["id"] != base]
    # each remedy named by what it changed against the baseline, as Compare names it
    changed = lab.runs.changes_against(base, others) if base is not None else {}
    remedy_labels = {r["id"]: pick_label(r, changed.get(r["id"])) for r in rows}
    remedies = st.multiselect(f"Remedies (up to {MOST_REMEDIES})", others, format_func=remedy_labels.get,
                              max_selections=MOST_REMEDIES, key="story_remedies")
    question = st.text_input("The question", key="story_question",
                             placeholder=f"empty: '{lab.runs.question_of(base)}'" if base is not None else "")
    try:
        cmp, slides = lab.runs.story(base, remedies, question)
    except SvmcoreError as e:
        show_error(e, "info")
        st.stop()
    figures = story.slide_figures(lab, cmp, slides)
    st.caption(" → ".join(s.title for s in slides))
    with st.container(horizontal=True, gap="small"):
        if st.button("Start the story", type="primary", key="story_start"):
            st.session_state.update(story_on=True, story_step=0, story_runs=(base, tuple(remedies), question))
            st.rerun()
        st.download_button("Story (HTML)", lambda: story.story_html(cmp, slides, figures),
                           file_name=f"svm-memory-lab-story-{'-'.join(str(r.id) for r in cmp.runs)}.html",
                           mime="text/html", key="story_html",
                           help="One file, a slide at a time (click or arrow keys); opens offline; its buttons save "
                                "each chart slide as a PNG that carries its headline.")
    st.stop()

base, remedies, question = st.session_state.story_runs
try:
    cmp, slides = lab.runs.story(base, list(remedies), question)
except SvmcoreError as e:  # a run deleted meanwhile
    show_error(e)
    st.button("Back to the choice", on_click=_exit)
    st.stop()
step = max(0, min(len(slides) - 1, st.session_state.get("story_step", 0)))
story.show(slides, story.slide_figures(lab, cmp, slides), step)
with st.container(horizontal=True, gap="small", key="story_nav"):
    st.caption(f"{step + 1} / {len(slides)}")
    st.button("‹ Back", key="story_back", on_click=_step, args=(-1,), disabled=step == 0)
    st.button("Next ›", key="story_next", on_click=_step, args=(1,), disabled=step == len(slides) - 1)
    st.button("Exit", key="story_exit", on_click=_exit)
