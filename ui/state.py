"""The one Lab of this server, shared by every browser session (runs outlive tabs)."""

from __future__ import annotations

import os

import streamlit as st

from svmcore.app.lab import Lab
from svmcore.spec.errors import SvmcoreError
from ui.messages import show_error


def home() -> str:
    return os.environ.get("SVMCORE_HOME") or os.path.join(os.getcwd(), ".svmcore")


@st.cache_resource(show_spinner=False)
def _lab(path: str) -> Lab:
    return Lab(path)


def lab() -> Lab:
    return _lab(home())


def page_setup(title: str) -> Lab:
    st.set_page_config(page_title=f"{title} · SVM Memory Lab", page_icon="assets/icon.png", layout="wide")
    with open(os.path.join(os.path.dirname(__file__), "..", "assets", "style.css")) as f:
        st.markdown(f"<style>{f.read()}</style>", unsafe_allow_html=True)
    with st.sidebar:
        st.markdown("### SVM Memory Lab")
        for path, label in PAGES:
            st.page_link(path, label=label)
        st.divider()
    try:
        the_lab = lab()
    except SvmcoreError as e:  # the data home cannot be used (a file where a folder must be, ...)
        show_error(e)
        st.stop()
    store = the_lab.store
    if store.damaged_moved_to:  # found damaged when this server opened it
        st.warning(f"The run history was damaged ({store.damage}). It was moved to `{store.damaged_moved_to}` "
                   f"and a new, empty history started. To copy back every run that can still be read: "
                   f"`python -m svmcore runs recover {store.damaged_moved_to}`", icon=":material/warning:")
    return the_lab


PAGES = (("app.py", "Train"), ("pages/1_Compare.py", "Compare"), ("pages/2_Sweep.py", "Sweep"),
         ("pages/3_Learn.py", "Learn"), ("pages/4_Data.py", "Data"), ("pages/5_Story.py", "Story"))
