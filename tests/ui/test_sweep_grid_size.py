"""The Sweep page counts a grid before it builds it (issue 18): 12 knobs of 8 values
(68.7 billion combinations) are refused with one line and Start is off; the CLI side is
tests/faults/test_holes.py."""

from __future__ import annotations

from tests.faults.test_holes import EIGHT, HUGE_GRID
from tests.ui.test_apptest import assert_clean, open_page, texts


def test_a_huge_grid_is_refused_on_the_sweep_page(app_home):
    at = open_page("pages/2_Sweep.py")
    assert_clean(at)
    knobs = [item.split("=")[0] for item in HUGE_GRID]
    at.multiselect(key="varied").set_value(knobs).run()
    assert_clean(at)
    for k in knobs:
        at.text_input(key=f"grid_{k}").set_value(EIGHT)
    at.run()
    assert_clean(at)
    errors = texts(at.error)
    assert any("68,719,476,736 combinations" in e and "at most 200 per sweep" in e for e in errors), errors
    assert at.button(key="start_sweep").disabled
