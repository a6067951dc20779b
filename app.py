"""Train: pick the knobs, launch, and watch memory, throughput and accuracy live."""

import streamlit as st

from svmcore.app.headlines import run_label
from svmcore.app.runs import first_shown
from svmcore.spec.errors import SvmcoreError
from svmcore.spec.knobs import defaults
from svmcore.spec.names import NAME_MOST
from svmcore.spec.outcomes import size_text
from ui.doctor import budget_panel, fit_status
from ui.live import prediction_panel, preload, run_panel
from ui.messages import show_error
from ui.repeats import repeat_button
from ui.state import page_setup
from ui.widgets import apply_knobs, knob_panel


def _picked() -> None:
    """A run picked in "Showing" is the one shown from now on, first on the page (at 1024x768
    its numbers were below the fold, under the next run's forecast), and no toast is owed."""
    st.session_state.run_id = st.session_state.picked = st.session_state.shown_run
    st.session_state.pop("announce", None)


def _renamed(run_id: int) -> None:
    try:
        lab.runs.rename(run_id, st.session_state.get(f"rename_{run_id}"))
    except SvmcoreError as e:
        st.session_state.rename_error = str(e)


def refused_at_launch(errors: dict, fix: dict) -> None:
    """Why the last launch was refused, under the Launch button (where the user looks),
    and the one obvious fix as a button when there is one."""
    for msg in errors.values():
        show_error(msg, prefix="**Not launched.** ")
    if fix:
        text = ", ".join(f"{k.replace('_', ' ')} to {v:,}" if isinstance(v, int) else f"{k.replace('_', ' ')} to {v}"
                         for k, v in fix.items())
        st.button(f"Set {text}", key="apply_fix", on_click=apply_knobs, args=(fix,), width="stretch",
                  help="Sets the field; press Launch run again to launch.")


lab = page_setup("Train")
st.title("SVM Memory Lab")
fit_status(lab)  # a fit's steps, then its result card: at the top, where the run panel was
intro = st.container()

if "train_knobs" not in st.session_state:
    st.session_state.train_knobs = defaults()
# an error stays next to its field only while the field still holds the refused value
errors = {k: msg for k, (msg, bad) in st.session_state.get("train_errors", {}).items()
          if st.session_state.get(f"train_{k}", bad) == bad}
if st.session_state.pop("clear_name", False):
    st.session_state.train_name = ""

with st.sidebar:
    name = st.text_input("run name (optional)", key="train_name", max_chars=NAME_MOST, placeholder="e.g. big batch",
                         help="Shown where runs are listed (Train, Compare, svmcore runs list); rename it later here, "
                              "next to the run shown.")
    launch = st.button("Launch run", type="primary", key="launch", width="stretch")
    # always mounted, so that the knobs below keep their places when a refusal goes: otherwise the
    # rerun after "Set batch size to 240" showed the old knobs (stale) beside the new ones until it ended
    with st.container(key="refusal"):
        if errors:
            refused_at_launch(errors, st.session_state.get("train_fix") or {})
    values = knob_panel(st.session_state.train_knobs, "train", lab, errors)

if launch:
    try:
        st.session_state.run_id = st.session_state.announce = st.session_state.launched = lab.runs.launch(
            values, name=name)
        st.session_state.train_knobs = values
        st.session_state.train_errors, st.session_state.train_fix = {}, {}
        st.session_state.clear_name = True
        st.rerun()
    except SvmcoreError as e:
        knob = getattr(e, "knob", "dataset")
        knob = knob if knob in values else "dataset"
        st.session_state.train_errors = {knob: (str(e), st.session_state.get(f"train_{knob}"))}
        st.session_state.train_fix = getattr(e, "fix", None) or {}
        st.rerun()

rows = lab.runs.history()
shown = next((r for r in rows if r["id"] == st.session_state.get("run_id")), None) or first_shown(rows)
# the run launched here (live or just ended) comes first, so that at 1024x768 its progress,
# numbers and chart are in view; otherwise the data and the forecast for the next launch do
run_first = shown is not None and (shown["status"] in ("queued", "running")
                                   or shown["id"] in (st.session_state.get("launched"), st.session_state.get("picked")))
if not run_first:
    intro.markdown("Choose a dataset and memory knobs in the sidebar, then **Launch**. Training runs in its own "
                   "process; its memory is read from the kernel 50 times a second and its exact peak from the "
                   "kernel's high-water mark. Compare runs, sweep settings and learn the remedies from the pages "
                   "on the left.")
first, second = st.container(), st.container()
with second if run_first else first:
    if run_first:
        st.subheader("Next run", help="What the knobs in the sidebar would take, before you launch them.")
    try:
        preview = lab.forecasts.preview(values)
    except SvmcoreError as e:
        show_error(e, "warning")
    else:
        size = preview.size
        where = "held in memory" if size.resident else "on disk; one batch in memory at a time"
        # KiB below one MiB: a small file read "0.0 MiB"
        mib, batch = size_text(size.bytes), size_text(size.batch_bytes)
        dense = size.sizes["float64"]["dense"]
        dense = f"{dense / 2**30:,.2f} GiB" if dense >= 2**30 else size_text(dense)
        st.info(f"**Training data: {mib}** as {values['representation']} {values['precision']} "
                f"({size.rows:,} rows × {size.features:,} features, "
                f"{'' if size.exact else 'up to '}{size.nnz:,} nonzeros), {where}. "
                f"One batch of {values['batch_size']:,} rows: {batch}. "
                f"Dense float64 would be {dense}.",
                icon=":material/memory:")
        forecast_mb = prediction_panel(lab, preview)
        budget_panel(lab, values, shown["id"] if shown else None, forecast_mb)

with first if run_first else second:
    preload()
    if not rows:
        st.markdown("No runs yet: press **Launch run** to train on the built-in `sparse-text` dataset.")
    else:
        labels = {r["id"]: run_label(r) for r in rows}  # every run, its status as of this rerun
        if st.session_state.get("run_id") not in labels:
            st.session_state.run_id = shown["id"]
        # the run shown is session state's run_id: the launched run stays shown until a pick changes it
        st.session_state.shown_run = rid = st.session_state.run_id
        pick, rename = st.columns([3, 2], vertical_alignment="bottom")
        pick.selectbox("Showing", list(labels), format_func=lambda i: labels.get(i, f"run {i}"), key="shown_run",
                       on_change=_picked, help="Every run of the history, newest first; type to search.")
        row = next(r for r in rows if r["id"] == rid)
        rename.text_input(f"name of run {rid}", value=row["name"], key=f"rename_{rid}", max_chars=NAME_MOST,
                          placeholder="unnamed: type a name, then Enter", on_change=_renamed, args=(rid,))
        if "rename_error" in st.session_state:
            show_error(st.session_state.pop("rename_error"))
        repeat_button(lab, row)
        run_panel(lab, rid, key="train", drawn_status=row["status"])
