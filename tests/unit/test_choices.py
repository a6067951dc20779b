"""The enumerations of the choice knobs (svmcore.spec.choices) against the knob registry."""

from __future__ import annotations

import json
import sqlite3

import pytest

from svmcore.spec import registry
from svmcore.spec.choices import BY_KNOB, Mode, Model, Solver
from svmcore.spec.registry import LINEAR_MODELS, MIXABLE_MODELS
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.knobs import KNOBS


def test_every_closed_choice_knob_has_its_enumeration():
    """A new knob with a fixed set of text values gets an enumeration (or is named here as plain text)."""
    plain_text = {"cap_kind", "approximation"}  # compared in one place each; no enumeration needed yet
    closed = {k.name for k in KNOBS.values() if k.choices and not k.free_text}
    assert closed - plain_text == set(BY_KNOB)


@pytest.mark.parametrize("name", sorted(BY_KNOB))
def test_an_enumeration_is_its_knobs_choices_in_order(name):
    assert KNOBS[name].choices == tuple(m.value for m in BY_KNOB[name])
    assert all(type(c) is str for c in KNOBS[name].choices)  # the registry holds plain text
    assert BY_KNOB[name](KNOBS[name].default).value == KNOBS[name].default


def test_members_are_their_text_on_every_wire():
    assert Model.LINEAR_SVM == "linear-svm" and f"{Mode.STREAM}" == "stream" and str(Solver.FTRL) == "ftrl"
    cfg = validate(model="kernel-approx", mode="stream", solver="native")
    assert cfg.model is Model.KERNEL_APPROX and cfg.mode is Mode.STREAM
    assert json.loads(cfg.to_json())["model"] == "kernel-approx"
    db = sqlite3.connect(":memory:")
    db.execute("create table t (v)")
    db.execute("insert into t values (?)", (cfg.model,))
    assert db.execute("select v, typeof(v) from t").fetchone() == ("kernel-approx", "text")


def test_the_defaults_of_runconfig_are_members():
    cfg = RunConfig()
    for name, enum in BY_KNOB.items():
        assert isinstance(getattr(cfg, name), enum), name


def test_the_named_groups_hold_members_of_their_enumeration():
    for group in ("LINEAR_MODELS", "MLP_MODELS", "MINIBATCH_MODELS", "MIXABLE_MODELS"):
        assert all(isinstance(m, Model) for m in getattr(registry, group)), group
    assert all(isinstance(m, Solver) for m in registry.MIXABLE_SOLVERS + registry.FLOAT32_STATE_SOLVERS)
    assert all(isinstance(m, Mode) for m in registry.DISK_MODES)
    assert Model.KERNEL_SVM not in registry.MINIBATCH_MODELS
    assert set(MIXABLE_MODELS) <= set(LINEAR_MODELS)


def test_the_data_parallel_refusal_names_the_groups():
    with pytest.raises(Exception, match="trains linear-svm or kernel-approx only"):
        validate(workers=2, model="mlp")
    with pytest.raises(Exception, match="use solver sklearn with"):
        validate(workers=2, solver="ftrl")



def test_to_dict_gives_the_text_of_each_member():
    d = validate(mode="stream").to_dict()
    assert type(d["mode"]) is str and d["mode"] == "stream" and type(d["model"]) is str
