"""Issue 40: the dashboard's name fields follow the one names rule (spec.names) and a name
stored before it (escape sequences, a newline, U+202E, 10,000 characters) is shown escaped
on Train and Compare: it can neither flip nor forge the text around it."""

from __future__ import annotations

import pytest

from svmcore.store.sqlite import Store
from tests.ui.test_apptest import assert_clean, open_page, texts

STORED = "\x1b[31mRED\n    9 completed forged\u202eabc" + "x" * 10_000
SHOWN = "\\x1b[31mRED\\x0a    9 completed forged\\u202eabc"
RAW = ("\x1b", "\n    9", "\u202e")


@pytest.fixture
def named_home(history, history_copy):
    """A copy of the shared real history whose completed run holds a hostile name."""
    return history_copy(("UPDATE runs SET name=? WHERE id=?", STORED, history["completed"]))


def _stored(home: str) -> dict:
    s = Store(home)
    try:
        return {r.id: r.name for r in s.list_runs()}
    finally:
        s.close()


def test_a_stored_hostile_name_is_shown_escaped_on_train_and_compare(named_home):
    rid = named_home["completed"]
    at = open_page()
    at.selectbox(key="shown_run").set_value(rid).run()
    assert_clean(at)
    label = at.selectbox(key="shown_run").format_func(rid)
    assert SHOWN in label and not any(r in label for r in RAW) and len(label) < 300, label
    assert at.text_input(key=f"rename_{rid}").value.startswith(SHOWN)

    at.switch_page("pages/1_Compare.py").run()
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "name" in d.value)
    name = dict(zip(table["id"], table["name"]))[rid]
    assert name.startswith(SHOWN) and name.endswith("…") and not any(r in name for r in RAW), name
    everything = " ".join(texts(at.markdown) + texts(at.caption))
    assert not any(r in everything for r in RAW), "a raw control or direction character reached the page"


@pytest.mark.parametrize(("name", "said"), [("abc\u202edef", "U+202E RIGHT-TO-LEFT OVERRIDE at character 4"),
                                            ("zero\u200bwidth", "U+200B ZERO WIDTH SPACE at character 5")])
def test_a_rename_that_breaks_the_rule_is_one_error_and_changes_nothing(named_home, name, said):
    rid = named_home["oom"]
    at = open_page()
    at.selectbox(key="shown_run").set_value(rid).run()
    at.text_input(key=f"rename_{rid}").input(name).run()
    assert_clean(at)
    assert any("a run's name cannot hold" in t and said in t for t in texts(at.error)), texts(at.error)
    assert _stored(named_home["home"])[rid] is None


def test_launching_with_a_name_that_breaks_the_rule_launches_nothing(named_home):
    before = _stored(named_home["home"])
    at = open_page()
    at.text_input(key="train_name").input("a\u202eb").run()
    at.button(key="launch").click().run()
    assert_clean(at)
    assert any("U+202E RIGHT-TO-LEFT OVERRIDE" in t for t in texts(at.error)), texts(at.error)
    assert _stored(named_home["home"]) == before
