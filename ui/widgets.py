"""Sidebar widgets generated from the knob registry, so the UI always matches it."""

from __future__ import annotations

import os

import streamlit as st

from svmcore.spec.knobs import BUILTIN_DATASETS, KNOBS, Knob
from ui.messages import show_error

GROUPS = (("data", "Data"), ("memory", "Memory knobs"), ("training", "Model and training"))
OTHER_FILE = "a file in the data folders…"
HOLD_OUT = "(hold out every 5th row)"  # the test file left unset


def _help(k: Knob) -> str:
    return f"{k.help}\n\n**Trades:** {k.trades}"


def _initial(key: str, **value) -> dict:
    """The widget's first value, passed only while its key holds none: a key set through
    st.session_state (the fix button, 'Use these knobs') is the value, and passing a default beside it
    makes Streamlit warn "created with a default value but also had its value set via the Session State API"."""
    return {} if key in st.session_state else value


def knob_label(k: Knob) -> str:
    """'batch size (rows)', 'memory cap (MB)': the knob's name and its unit once (a name
    that ends in its unit drops it there: it read "set memory cap mb (MB)")."""
    name = k.name.replace("_", " ")
    if k.unit and k.unit != k.unit.lower() and name.endswith(" " + k.unit.lower()):  # 'mb' of memory_cap_mb
        name = name[:-len(k.unit) - 1]
    return name + (f" ({k.unit})" if k.unit and k.unit.rstrip("s") not in name else "")


def knob_widget(k: Knob, value, key: str, lab=None):
    label = knob_label(k)
    if k.name == "dataset":
        files = lab.folders.files() if lab else []
        names = list(BUILTIN_DATASETS) + [os.path.basename(f) for f in files]
        paths = dict(zip(names[len(BUILTIN_DATASETS):], files))
        current = value if value in BUILTIN_DATASETS else os.path.basename(str(value))
        idx = names.index(current) if current in names else 0
        choice = st.selectbox(label, names, key=key, help=_help(k), **_initial(key, index=idx))
        return paths.get(choice, choice)
    if k.name == "test_file":
        files = lab.folders.files() if lab else []
        opts = [HOLD_OUT] + [os.path.basename(f) for f in files]
        choice = st.selectbox(label, opts, index=0, key=key, help=_help(k))
        return None if choice == opts[0] else files[opts.index(choice) - 1]
    if k.type is bool:
        return st.toggle(label, key=key, help=_help(k), **_initial(key, value=bool(value)))
    if k.choices:
        return st.selectbox(label, list(k.choices), key=key, help=_help(k),
                            **_initial(key, index=list(k.choices).index(value)))
    if k.optional and k.type is str:  # the Dask scheduler's address: empty = a LocalCluster for the run
        text = st.text_input(label, key=key, help=_help(k), **_initial(key, value=value or ""),
                             placeholder="unset: a local cluster for the run")
        return text.strip() or None
    if k.optional:
        unset = f" (unset: auto, {k.auto})" if k.auto else ""
        on = st.checkbox(f"set {label}{unset}", key=key + "_on", help=_help(k),
                         **_initial(key + "_on", value=value is not None))
        if not on:
            return None
        if value is not None:
            default = value
        elif k.type is float:  # the middle of the range on a log scale
            default = float(f"{(k.min * k.max) ** 0.5:.1g}")
        else:
            default = int(k.min or 1) * 4
        if k.type is float:
            return st.number_input(label, min_value=float(k.min), max_value=float(k.max), format="%.2g", key=key,
                                   help=_help(k), label_visibility="collapsed", **_initial(key, value=float(default)))
        return st.number_input(label, min_value=k.type(k.min), max_value=k.type(k.max), key=key, help=_help(k),
                               label_visibility="collapsed", **_initial(key, value=k.type(default)))
    if k.type is int:
        return st.number_input(label, min_value=int(k.min), max_value=int(k.max), step=1, key=key, help=_help(k),
                               **_initial(key, value=int(value)))
    if k.type is float:
        return st.number_input(label, min_value=float(k.min), max_value=float(k.max), format="%.2g", key=key,
                               help=_help(k), **_initial(key, value=float(value)))
    return st.text_input(label, key=key, help=_help(k), **_initial(key, value=str(value)))


def knob_panel(values: dict, prefix: str, lab=None, errors: dict | None = None) -> dict:
    """All knobs, grouped; model-specific knobs only for the chosen model. Returns values."""
    out = dict(values)
    errors = errors or {}
    if f"{prefix}_model" in st.session_state:  # the model is picked below the memory group, whose knobs depend on it
        out["model"] = st.session_state[f"{prefix}_model"]
    for group, title in GROUPS:
        with st.expander(title, expanded=group != "training" or True):
            for k in KNOBS.values():
                if k.group != group:
                    continue
                if k.applies_to and out.get("model", "linear-svm") not in k.applies_to:
                    continue
                if k.only_with and out.get(k.only_with[0], KNOBS[k.only_with[0]].default) != k.only_with[1]:
                    continue
                if k.name in ("rows", "features", "nnz_per_row") and out.get("dataset") not in ("sparse-text", "dense"):
                    continue
                if k.name == "nnz_per_row" and out.get("dataset") == "dense":
                    continue
                if k.name == "scheduler" and (out.get("workers") or 1) == 1:
                    out[k.name] = None  # hidden: a scheduler only serves data-parallel runs
                    continue
                if k.name == "cap_kind" and out.get("memory_cap_mb") is None:
                    out[k.name] = k.default  # hidden: it must not keep a choice made for a cap
                    continue
                out[k.name] = knob_widget(k, out.get(k.name, k.default), f"{prefix}_{k.name}", lab)
                with st.container():  # always mounted (drawn as nothing while empty): the knobs below keep their places
                    if k.name in errors:
                        show_error(errors[k.name])
    return out


def apply_knobs(changed: dict) -> None:
    """Set some of the sidebar's widgets (a callback runs before the widgets are drawn again)."""
    for k, v in changed.items():
        st.session_state[f"train_{k}"] = v
    st.session_state.pop("recommendation", None)


def widget_state(k: Knob, value, key: str) -> dict:
    """What ``knob_widget`` keeps in session state for this value (its key, and for an
    optional knob its "set" box), so that setting it shows the value in the widget too."""
    if k.name == "dataset":
        return {key: value if value in BUILTIN_DATASETS else os.path.basename(str(value))}
    if k.name == "test_file":
        return {key: HOLD_OUT if value is None else os.path.basename(str(value))}
    if k.type is bool or k.choices:
        return {key: value}
    if k.optional and k.type is str:
        return {key: value or ""}
    if k.optional:
        return {key + "_on": value is not None, **({key: k.type(value)} if value is not None else {})}
    return {key: k.type(value)}


def load_knobs(values: dict) -> None:
    """Put a whole setting in the sidebar (a callback: it runs before the widgets are drawn
    again). Each widget is set through session state, so that it shows the value: a widget
    whose key was only removed kept showing its old value while the run took the new one."""
    # a remedy's change can hold the registry's enums (Precision.FLOAT32): widgets take their values
    st.session_state.train_knobs = {k: getattr(values[k], "value", values[k]) for k in KNOBS if k in values}
    for name, value in st.session_state.train_knobs.items():
        for key, v in widget_state(KNOBS[name], value, f"train_{name}").items():
            st.session_state[key] = v
    for key in ("recommendation", "train_errors", "train_fix"):
        st.session_state.pop(key, None)
