"""The Train page prices the knobs in the sidebar once per rerun (issue 41: two or three
forecasts in three shapes), and a rerun with nothing changed prices nothing again; the data
size, the warnings and the forecast panel come from that one forecast."""

from __future__ import annotations

import json
import os

from streamlit.testing.v1 import AppTest

from svmcore.predict import calibration as calib
from tests.integration.test_launch_once import counters, counts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_train_page_rerun_forecasts_once_and_an_unchanged_one_not_again(app_home, monkeypatch):
    cal = calib.Calibration({"linear-svm+base": 120.0}, {}, calib.fingerprint(), 0.0, 1, {})
    with open(calib.calibration_path(app_home), "w") as f:
        json.dump(cal.to_dict(), f)
    calls = counters(monkeypatch)
    at = AppTest.from_file(os.path.join(ROOT, "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert counts(calls)["forecasts"] == 1, calls["forecasts"]
    shown = [i.value for i in at.info if "Predicted exact peak" in i.value]
    assert len(shown) == 1 and "120 MiB" not in shown[0], shown  # the floor and the default run's parts
    at.run()  # a rerun, nothing changed
    assert counts(calls)["forecasts"] == 1
    at.sidebar.number_input(key="train_batch_size").set_value(512).run()
    assert counts(calls)["forecasts"] == 2  # other knobs: priced once more
