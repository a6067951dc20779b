"""Headless test (AppTest) of Learn's 'Train offline, serve light' row: the committed
benchmark's figures per solver (trained in, serves in, model size), no button to queue
runs it does not have, and its row in the claims table."""

from __future__ import annotations

from svmcore.app.reference import read
from tests.ui.test_apptest import assert_clean, open_page, texts
from tests.ui.test_learn_sweep_ui import LEARN, claims_rows


def test_learn_shows_what_serving_measured_on_the_reference_machine(app_home):
    bench = read("serve")
    assert bench, "the package's reference data holds serve.json"
    at = open_page(LEARN)
    at.selectbox(key="learn_remedy").set_value("serve").run()
    assert_clean(at)
    assert any("Measured by `python bench/serve.py`" in t for t in texts(at.caption))
    lessons = [t for t in texts(at.markdown) if "serves in" in t]
    assert [t[2:] for t in lessons] == bench.figures["lessons"] and lessons[0].startswith("- sklearn: trained in")
    assert not [b for b in at.button if b.key == "learn_measure_serve"]
    row = next(r for r in claims_rows(at) if "Train offline, serve light" in r)
    assert "served" in row and "reference machine" in row
