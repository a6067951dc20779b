"""The refusal's fix button sets the batch field through st.session_state only: the field is then
drawn without a default beside it, so Streamlit does not warn "created with a default value but also
had its value set via the Session State API" (issue 22; the warning was logged on every fix)."""

from __future__ import annotations

import logging
import os

import streamlit.elements.lib.policies as policies
from streamlit.testing.v1 import AppTest

from tests.ui.test_apptest import assert_clean, open_page, texts

WARNING = "was created with a default value but also had its value set via the Session State API"


def _refused_for_batch(at: AppTest, home: str) -> None:
    """A 300-line file: 240 training rows against the default batch of 1,024."""
    os.makedirs(os.path.join(home, "datasets"))
    with open(os.path.join(home, "datasets", "small.svm"), "w") as f:
        for i in range(300):
            f.write(f"{1 if i % 2 else -1} 1:{i % 7 + 1} 3:{(i * 13) % 5 + 0.5}\n")
    at.run()
    at.selectbox(key="train_dataset").set_value("small.svm").run()
    at.button(key="launch").click().run()
    assert "batch_size" in at.session_state.train_errors, texts(at.error)


def test_the_batch_fix_draws_the_field_without_a_default_beside_its_state(app_home, monkeypatch, caplog):
    # AppTest runs without a Runtime, where Streamlit skips this check: pretend one, and let the
    # once-per-process warning be shown again
    monkeypatch.setattr(policies.runtime, "exists", lambda: True)
    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    at = open_page()
    _refused_for_batch(at, app_home)
    fix = at.button(key="apply_fix")
    assert fix.label == "Set batch size to 240", fix.label
    want = 240
    with caplog.at_level(logging.WARNING):
        fix.click().run()
    assert_clean(at)
    assert at.number_input(key="train_batch_size").value == want and not at.error, texts(at.error)
    assert not [r for r in caplog.records if WARNING in r.getMessage()], [r.getMessage() for r in caplog.records]


def test_the_check_this_relies_on_does_warn(app_home, monkeypatch, caplog):
    """Without this the test above could not fail: a default passed beside a state set by the API warns."""
    monkeypatch.setattr(policies.runtime, "exists", lambda: True)
    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    script = ("import streamlit as st\n"
              "if st.button('set', key='b'):\n"
              "    st.session_state['n'] = 5\n"
              "st.number_input('n', value=3, key='n')\n")
    at = AppTest.from_string(script).run()
    with caplog.at_level(logging.WARNING):
        at.button(key="b").click().run()
    assert [r for r in caplog.records if WARNING in r.getMessage()]
