"""Data: upload or name a file, generate synthetic data, inspect any dataset."""

import os

import pandas as pd
import streamlit as st

from svmcore.app.folders import UPLOAD_LIMIT_MB
from svmcore.spec.config import DEFAULT_FEATURES
from svmcore.spec.errors import SvmcoreError
from svmcore.spec.knobs import BUILTIN_DATASETS, KNOBS
from ui.messages import escape_markdown, show_error
from ui.state import page_setup

lab = page_setup("Data")
st.title("Datasets")


def inspect_next(path: str) -> None:
    """Make ``path`` the dataset inspected below (the keyed selectbox must follow it)."""
    st.session_state.inspect = path
    # set through the widget's own state: a popped key left the browser showing the old name
    st.session_state.inspect_choice = path


tab_up, tab_gen, tab_path = st.tabs(["Upload a file", "Generate synthetic data", "A file on the server"])
with tab_up:
    st.caption(f"svmlight/libsvm, CSV with a header naming a `label` column, .npz (CSR arrays or a "
               f"dense X, plus y), or raw text lines `label<TAB>text`. The format is read from the content, "
               f"so names without an extension (`a9a`, `a9a.t`) are fine. Up to {UPLOAD_LIMIT_MB} MB; for "
               f"more, put the file on the server (see the third tab).")
    up = st.file_uploader("Dataset file", key="upload")
    if up is not None and st.session_state.get("uploaded_name") != (up.name, up.size):
        try:
            path, new = lab.folders.upload(up.name, up.getvalue())
            st.session_state.uploaded_name = (up.name, up.size)
            inspect_next(path)
            saved = escape_markdown(os.path.basename(path))
            st.success(f"Saved as {saved}; it is now in the dataset list on every page." if new
                       else f"This file was uploaded before: it is {saved}, in the dataset list on every page.")
        except SvmcoreError as e:
            show_error(e)
with tab_gen:
    c = st.columns(5)
    kind = c[0].selectbox("kind", ["sparse-text", "dense"], key="gen_kind")
    rows_k, feat_k, nnz_k = KNOBS["rows"], KNOBS["features"], KNOBS["nnz_per_row"]
    rows = c[1].number_input("rows", int(rows_k.min), int(rows_k.max), rows_k.default, key="gen_rows", help=rows_k.help)
    features = c[2].number_input("features", int(feat_k.min), int(feat_k.max), DEFAULT_FEATURES[kind],
                                 key="gen_features", help=feat_k.help)
    nnz = c[3].number_input("nonzeros per row", int(nnz_k.min), int(nnz_k.max), nnz_k.default, key="gen_nnz",
                            disabled=kind == "dense", help=nnz_k.help)
    fmt = c[4].selectbox("format", ["svmlight", "npz", "text"], key="gen_fmt")
    c = st.columns([1, 1, 3])
    positives = c[0].number_input("share of positives", 0.001, 0.5, 0.5, step=0.01, format="%.3f", key="gen_pos",
                                  disabled=kind != "sparse-text",
                                  help="Below 0.5 the positive class is a minority, learnable from a few marker "
                                       "tokens: accuracy alone then flatters a model that ignores it.")
    sort = c[1].checkbox("sorted by label", key="gen_sorted",
                         help="Every positive row first, as many public libsvm files come: trained in file order "
                              "(shuffle off), SGD ends on the majority class.")
    if st.button("Generate", key="generate"):
        try:
            with st.spinner("Writing chunk by chunk…"):
                path = lab.folders.generate(kind, int(rows), int(features), int(nnz), 0, fmt,
                                    positive_fraction=float(positives) if kind == "sparse-text" else 0.5,
                                    sort_by_label=sort)
            inspect_next(path)
            st.success(f"Wrote {escape_markdown(os.path.basename(path))}.")
        except SvmcoreError as e:
            show_error(e)
with tab_path:
    st.caption("For data too large to upload: a file inside the data folders (the `datasets` and "
               "`uploads` folders of the data home, and any folder in `SVMCORE_DATA_DIRS`).")
    typed = st.text_input("File name or path", key="server_path")
    if st.button("Use this file", key="use_path") and typed:
        try:
            inspect_next(lab.folders.resolve(typed))
        except SvmcoreError as e:
            show_error(e)

st.subheader("Inspect")
files = lab.folders.files()
options = list(BUILTIN_DATASETS) + files
current = st.session_state.get("inspect", "sparse-text")
if current not in options:
    options.append(current)
if st.session_state.get("inspect_choice") not in options:
    st.session_state.inspect_choice = current
choice = st.selectbox("Dataset", options, key="inspect_choice",
                      format_func=lambda p: p if p in BUILTIN_DATASETS else os.path.basename(p))
st.session_state.inspect = choice
try:
    with st.spinner("Counting rows, nonzeros and labels…"):
        info = lab.folders.inspect(choice)
    c = st.columns(5)
    c[0].metric("rows", f"{info['rows']:,}")
    c[1].metric("features", f"{info['features']:,}")
    c[2].metric("nonzeros", f"{info['nnz']:,}")
    c[3].metric("density", f"{info['density']:.2e}")
    c[4].metric("classes", len(info["classes"]))
    st.markdown("**Label balance**")
    st.bar_chart(pd.DataFrame({"rows": info["class_counts"]}, index=info["classes"]))
    st.markdown("**Size in memory** (CSR: value + 4-byte column id per nonzero + 8-byte row pointers)")
    sizes = pd.DataFrame({prec: {k: v / 2**20 for k, v in d.items()} for prec, d in info["bytes_in_memory"].items()}).T
    sizes.columns = ["sparse (MiB)", "dense (MiB)"]
    st.dataframe(sizes.style.format("{:,.1f}"), key="sizes")
except SvmcoreError as e:
    show_error(e)
