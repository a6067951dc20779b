"""Issue 40: run names from the CLI were stored unchecked: escape sequences
(``$'\\e[31mX\\e]0;pwned\\a'``), newlines (which forged rows in ``runs list``), U+202E
(which flipped Compare's text) and 10,000 characters; tags had a rule and the app's
rename another. Now one rule (``svmcore.spec.names``) refuses them in one line, exit 2,
nothing stored; a name stored before the rule is shown escaped."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from tests.conftest import cli
from tests.faults.test_cli_errors import one_line_error
from tests.faults.test_damaged_store import LEAN, _dataset

HOSTILE = {
    "escape sequences": ("\x1b[31mX\x1b]0;pwned\x07", "a control character: U+001B ESCAPE at character 1"),
    "a newline": ("ok\n    9 completed  forged", "a control character: U+000A LINE FEED (a newline) at character 3"),
    "right-to-left override": ("abc\u202edef", "U+202E RIGHT-TO-LEFT OVERRIDE at character 4"),
    "10,000 characters": ("x" * 10_000, "a run's name has at most 80 characters (10,000 given)"),
}


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    """A home with one real run (lean path, about a second), named 'first'."""
    home = str(tmp_path_factory.mktemp("names") / "home")
    os.makedirs(home)
    cli("run", f"--dataset={_dataset(home)}", *LEAN, "--name", "first", home=home, check=0, timeout=300)
    return home


def _names(home: str) -> list:
    db = sqlite3.connect(os.path.join(home, "runs.sqlite"))
    try:
        return [r[0] for r in db.execute("SELECT name FROM runs ORDER BY id")]
    finally:
        db.close()


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_name_is_refused_by_run_and_runs_name(one_run, case):
    name, said = HOSTILE[case]
    one_line_error(cli("run", f"--dataset={_dataset(one_run)}", *LEAN, "--name", name, home=one_run),
                   "svmcore: error: name: a run's name ", said)
    one_line_error(cli("runs", "name", "1", name, home=one_run), "svmcore: error: name: a run's name ", said)
    assert _names(one_run) == ["first"], "nothing stored: no run launched, the name unchanged"


def test_a_hostile_tag_is_refused_and_a_good_name_kept_as_written(one_run):
    one_line_error(cli("runs", "tag", "1", "ok", "a\u202eb", home=one_run), "U+202E RIGHT-TO-LEFT OVERRIDE")
    assert json.loads(cli("runs", "list", "--json", home=one_run, check=0).stdout)[0]["tags"] == []
    assert cli("runs", "name", "1", "  ünïcödé 日本語 – 2×  ", home=one_run, check=0).stdout.strip() == \
        "run 1 is named 'ünïcödé 日本語 – 2×'"
    cli("runs", "name", "1", "first", home=one_run, check=0)


def test_a_name_stored_before_the_rule_is_shown_escaped(one_run, tmp_path):
    """Written into the store by hand (as an older version stored it): `runs list` shows one
    row for the run, with no escape byte and no newline; `--json` keeps the name exact."""
    db = sqlite3.connect(os.path.join(one_run, "runs.sqlite"))
    stored = "\x1b[31mRED\x1b]0;pwned\x07\n    9 completed  forged\u202eabc"
    db.execute("UPDATE runs SET name=? WHERE id=1", (stored,))
    db.commit()
    db.close()
    try:
        listed = cli("runs", "list", home=one_run, check=0).stdout
        assert len(listed.splitlines()) == 2 and "\x1b" not in listed and "\u202e" not in listed, listed
        assert "\\x1b[31mRED\\x1b]0;pwned\\x07\\x0a    9 completed  forged\\u202eabc" in listed, listed
        shown = cli("runs", "show", "1", home=one_run, check=0).stdout
        assert "\x1b" not in shown and shown.splitlines()[0].startswith("run 1 (\\x1b[31mRED"), shown
        assert json.loads(cli("runs", "list", "--json", home=one_run, check=0).stdout)[0]["name"] == stored
    finally:
        cli("runs", "name", "1", "first", home=one_run, check=0)
