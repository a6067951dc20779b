"""Train: pick the knobs, launch, and watch memory, throughput and accuracy live."""

import streamlit as st

from svmcore.app.headlines import run_label
from svmcore.spec.errors import SvmcoreError
from svmcore.spec.knobs import defaults
from ui.doctor import fit_panel
from ui.live import prediction_panel, preload, run_panel
from ui.messages import show_error
from ui.state import page_setup
from ui.widgets import knob_panel


def _picked() -> None:
    """A run picked in "Showing" is the one shown from now on (and no toast is owed)."""
    st.session_state.run_id = st.session_state.shown_run
    st.session_state.pop("announce", None)


lab = page_setup("Train")
st.title("SVM Memory Lab")
st.markdown("Choose a dataset and memory knobs in the sidebar, then **Launch**. Training runs in its own "
            "process; its memory is read from the kernel 50 times a second and its exact peak from the "
            "kernel's high-water mark. Compare runs, sweep settings and learn the remedies from the pages "
            "on the left.")

if "train_knobs" not in st.session_state:
    st.session_state.train_knobs = defaults()
# an error stays next to its field only while the field still holds the refused value
errors = {k: msg for k, (msg, bad) in st.session_state.get("train_errors", {}).items()
          if st.session_state.get(f"train_{k}", bad) == bad}

with st.sidebar:
    launch = st.button("Launch run", type="primary", key="launch", width="stretch")
    values = knob_panel(st.session_state.train_knobs, "train", lab, errors)

if launch:
    try:
        st.session_state.run_id = st.session_state.announce = lab.runs.launch(values)
        st.session_state.train_knobs = values
        st.session_state.train_errors = {}
        st.rerun()
    except SvmcoreError as e:
        knob = getattr(e, "knob", "dataset")
        knob = knob if knob in values else "dataset"
        st.session_state.train_errors = {knob: (str(e), st.session_state.get(f"train_{knob}"))}
        st.rerun()

try:
    size = lab.forecasts.data_size(values)
    mib = size["bytes"] / 2**20
    where = "held in memory" if size["resident"] else "on disk; one batch in memory at a time"
    batch = size["batch_bytes"] / 2**20
    st.info(f"**Training data: {mib:,.1f} MiB** as {values['representation']} {values['precision']} "
            f"({size['rows']:,} rows × {size['features']:,} features, "
            f"{'' if size['exact'] else 'up to '}{size['nnz']:,} nonzeros), {where}. "
            f"One batch of {values['batch_size']:,} rows: {batch:,.2f} MiB. "
            f"Dense float64 would be {size['sizes']['float64']['dense'] / 2**30:,.2f} GiB.", icon=":material/memory:")
except SvmcoreError as e:
    show_error(e, "warning")
else:
    prediction_panel(lab, values)
    fit_panel(lab, values)

preload()
rows = lab.runs.history()
if not rows:
    st.markdown("No runs yet: press **Launch run** to train on the built-in `sparse-text` dataset.")
else:
    labels = {r["id"]: run_label(r) for r in rows}  # every run, its status as of this rerun
    if st.session_state.get("run_id") not in labels:
        st.session_state.run_id = rows[0]["id"]
    # the run shown is session state's run_id: the launched run stays shown until a pick changes it
    st.session_state.shown_run = st.session_state.run_id
    st.selectbox("Showing", list(labels), format_func=lambda i: labels.get(i, f"run {i}"), key="shown_run",
                 on_change=_picked, help="Every run of the history, newest first; type to search.")
    run_panel(lab, st.session_state.run_id, key="train")
