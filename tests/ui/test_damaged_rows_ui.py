"""Issue 40: a damaged row of the run store (the summary cut to 100 characters; an event
and a sweep's spec cut short) showed "This app has encountered an error" on four pages.
Now every page draws, the damaged run is shown with what could be read and a line
saying what could not, and the other runs as usual."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.ui.test_apptest import ENTRY, PAGES, TIMEOUT, assert_clean, texts

CUT = "summary: not JSON (Unterminated string"


@pytest.fixture
def damaged_home(history, history_copy):
    """A copy of the shared real history with the completed run's summary cut to 100
    characters (the issue's edit), an event of the oom run cut short and the sweep's
    spec cut short."""
    return history_copy(("UPDATE runs SET summary=substr(summary,1,100) WHERE id=?", history["completed"]),
                        ("UPDATE events SET data=substr(data,1,5) WHERE run_id=? AND seq=1", history["oom"]),
                        ("UPDATE sweeps SET spec=substr(spec,1,10) WHERE id=?", history["sweep"]))


def _open(page: str, run_id: int, others: list[int]) -> AppTest:
    at = AppTest.from_file(ENTRY, default_timeout=TIMEOUT)
    at.session_state["run_id"] = run_id  # Train shows the damaged run
    at.query_params["runs"] = ",".join(str(i) for i in [run_id, *others])  # Compare compares it
    at.run()
    assert_clean(at)
    if page != "app.py":
        at.switch_page(page).run()
    return at


@pytest.mark.parametrize("page", PAGES)
def test_every_page_draws_over_a_damaged_row(damaged_home, page):
    at = _open(page, damaged_home["completed"], [damaged_home["oom"]])
    assert_clean(at)
    shown = texts(at.error) + texts(at.warning)
    if page == "app.py":
        assert any(f"Run {damaged_home['completed']} (completed): its record is damaged" in t and CUT in t
                   for t in shown), shown
    if page == "pages/1_Compare.py":
        assert any(f"Run {damaged_home['completed']}'s record is damaged" in t and CUT in t for t in shown), shown
        assert any(f"Run {damaged_home['oom']}'s record is damaged" in t and "events: 1 unreadable" in t
                   for t in shown), shown
        table = next(d.value for d in at.dataframe if "damage" in d.value)
        damage = dict(zip(table["id"], table["damage"]))
        assert CUT in damage[damaged_home["completed"]] and damage[damaged_home["sweep_runs"][0]] == "", damage
    if page == "pages/2_Sweep.py":
        assert any(f"Sweep {damaged_home['sweep']}'s record is damaged" in t for t in shown), shown


def test_story_refuses_a_damaged_baseline_in_one_line(damaged_home):
    at = _open("pages/5_Story.py", damaged_home["completed"], [])
    at.selectbox(key="story_base").set_value(damaged_home["completed"]).run()
    at.multiselect(key="story_remedies").set_value([damaged_home["sweep_runs"][0]]).run()
    assert_clean(at)
    assert any(f"run {damaged_home['completed']}'s record in the store is damaged" in t
               for t in texts(at.info)), texts(at.info)
