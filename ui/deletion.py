"""Deleting runs from the Compare page: only the rows the user picked, named, and
asked once before anything goes.

The click on "Delete" only records the run ids it will delete; a second step names
them and waits for "Yes, delete". What is confirmed is that recorded list of ids, never
row positions (the table can gain a row between the two clicks) and never the
"showing the latest N" fallback the page uses when nothing is selected."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from svmcore.spec.errors import SvmcoreError
from ui.messages import escape_markdown, show_error

PENDING = "delete_pending"
CLEAR_SELECTION = "history_clear_selection"
DONE = "delete_done"


def clear_selection_if_asked(table_key: str, run_ids: Sequence[int]) -> None:
    """Before the table is drawn: the table's selection is row positions, so once the rows
    shown change (a delete, a filter, a run that just appeared) the old positions point at
    other runs, and the selection is emptied."""
    shown = tuple(run_ids)
    before = st.session_state.get(f"{table_key}_shown_ids")
    st.session_state[f"{table_key}_shown_ids"] = shown
    if st.session_state.pop(CLEAR_SELECTION, False) or (before is not None and before != shown):
        st.session_state[table_key] = {"selection": {"rows": [], "columns": []}}


def describe(run_ids: Sequence[int], names: dict[int, str]) -> str:
    """'run 3 · batch size 256, run 4' as plain text (names come from the user's data)."""
    return ", ".join(f"run {i}" + (f" · {names[i]}" if names.get(i) else "") for i in run_ids)


def delete_button(picked: Sequence[int]) -> None:
    """The first step: a button only when rows are picked; its click records the ids."""
    if not picked:
        st.button("Delete selected", key="delete", disabled=True,
                  help="Select rows in the table to delete those runs.")
        return
    if st.button(f"Delete {len(picked)} selected…", key="delete"):
        st.session_state[PENDING] = tuple(picked)


def confirm_delete(lab, picked: Sequence[int], names: dict[int, str]) -> None:
    """The second step: names the recorded runs and deletes them on "Yes, delete".
    A pending delete whose selection has changed since is dropped, not carried over."""
    pending = st.session_state.get(PENDING)
    if not pending:
        return
    if tuple(picked) != pending:
        st.session_state.pop(PENDING, None)
        return
    with st.container(border=True, key="delete_confirmation"):
        noun = "run" if len(pending) == 1 else f"{len(pending)} runs"
        st.warning(f"Delete {noun}: {escape_markdown(describe(pending, names))}? Their records, memory samples "
                   "and files go for good; this cannot be undone.", icon=":material/delete:")
        with st.container(horizontal=True, gap="small"):
            yes = st.button(f"Yes, delete {noun}", key="delete_confirm", type="primary")
            keep = st.button("Keep them" if len(pending) > 1 else "Keep it", key="delete_keep")
    if keep:
        st.session_state.pop(PENDING, None)
        st.rerun()
    if yes:
        st.session_state.pop(PENDING, None)
        deleted = []
        try:
            for rid in pending:
                lab.runs.delete(rid)
                deleted.append(rid)
        except SvmcoreError as e:
            show_error(e, prefix=f"Deleted {len(deleted)} of {len(pending)} runs; the rest were kept: ")
            st.session_state[CLEAR_SELECTION] = True
            return
        st.session_state[CLEAR_SELECTION] = True
        st.session_state[DONE] = f"Deleted {describe(deleted, names)}."
        st.rerun()


def show_deleted() -> None:
    """What the last confirmed delete removed, once, after the page was redrawn without it."""
    done = st.session_state.pop(DONE, None)
    if done:
        show_error(done, kind="info")
