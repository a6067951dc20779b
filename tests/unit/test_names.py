"""The one rule for run names and tags (svmcore.spec.names), and how a stored name is shown."""

from __future__ import annotations

import pytest

from svmcore.spec.errors import ConfigError
from svmcore.spec.names import NAME_MOST, check_name, check_tag, shown
from svmcore.store.sqlite import Store

REFUSED_NAMES = [
    ("\x1b[31mX\x1b]0;pwned\x07", "a control character: U+001B ESCAPE at character 1"),
    ("a\x00b", "a control character: U+0000 NUL at character 2"),
    ("two\nlines", "a control character: U+000A LINE FEED (a newline) at character 4"),
    ("tab\there", "a control character: U+0009 TAB at character 4"),
    ("abc\u202edef", "an invisible formatting or direction character: U+202E RIGHT-TO-LEFT OVERRIDE at character 4"),
    ("zero\u200bwidth", "an invisible formatting or direction character: U+200B ZERO WIDTH SPACE at character 5"),
    ("line\u2028sep", "a line separator: U+2028 LINE SEPARATOR at character 5"),
    ("\ue000private", "a private-use character: U+E000 at character 1"),
    ("x" * 10_000, "has at most 80 characters (10,000 given)"),
]


@pytest.mark.parametrize(("text", "said"), REFUSED_NAMES)
def test_a_name_that_breaks_the_rule_is_refused_in_one_line_naming_the_problem(text, said):
    with pytest.raises(ConfigError) as e:
        check_name(text)
    assert str(e.value).startswith("name: a run's name ") and said in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("text", ["big batch", "ünïcödé 日本語 – 2×", "float32 / memmap: 1e-6 (try 3)", "x" * NAME_MOST,
                                  "emoji 🚀"])
def test_printable_names_are_kept_as_written(text):
    assert check_name(text) == text


def test_only_spaces_at_the_ends_are_trimmed_and_blank_is_no_name():
    assert check_name("  demo run  ") == "demo run"
    assert check_name("   ") is None and check_name(None) is None


@pytest.mark.parametrize(("text", "said"), [
    ("  ", "tag: a tag cannot be empty"),
    ("a\u202eb", "tag: a tag cannot hold an invisible formatting or direction character: U+202E"),
    ("x" * 41, "tag: a tag has at most 40 characters (41 given)"),
    ("<b>", "tag: '<b>': use letters, digits, spaces and . : + - / _ only"),
])
def test_tags_follow_the_same_rule_and_are_plainer(text, said):
    with pytest.raises(ConfigError) as e:
        check_tag(text)
    assert str(e.value).startswith(said), str(e.value)


def test_a_stored_name_is_shown_escaped_and_cut():
    assert shown("\x1b[31mX\x1b]0;pwned\x07") == "\\x1b[31mX\\x1b]0;pwned\\x07"
    assert shown("a\n    9 completed forged") == "a\\x0a    9 completed forged"
    assert shown("abc\u202edef") == "abc\\u202edef"
    assert shown("x" * 10_000) == "x" * NAME_MOST + "…"
    assert shown("ünïcödé 日本語") == "ünïcödé 日本語" and shown(None) == ""


def test_the_store_refuses_what_the_rule_refuses(tmp_path):
    store = Store(str(tmp_path))
    try:
        rid = store.create_run({"mode": "memory"})
        assert store.set_name(rid, "kept")
        for text, said in REFUSED_NAMES:
            with pytest.raises(ConfigError, match="a run's name"):
                store.set_name(rid, text)
        with pytest.raises(ConfigError, match="a tag cannot hold"):
            store.tag_run(rid, "a\x00b")
        assert store.get_run(rid).name == "kept" and store.tags() == {}
    finally:
        store.close()
