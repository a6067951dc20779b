"""Headless tests (AppTest) of the Learn page and the Sweep page's budget: the reference
measurement on first open, this machine's numbers once its runs end, remedies being
built, what importing costs, the budget drawn from the results and the warnings for a
cap below the floor. Runs are real worker processes."""

from __future__ import annotations

import json
import re
import time

import pytest

from svmcore.app.remedies import ADVICE
from svmcore.spec.status import RunStatus
from tests.ui.test_apptest import (
    assert_clean,
    chart,
    open_page,
    store_runs,
    texts,
    wait_run_finished,
)

LEARN = "pages/3_Learn.py"
SWEEP = "pages/2_Sweep.py"


def claims_html(at) -> str:
    found = [m.value for m in at.markdown if '<table class="claims">' in m.value]
    assert len(found) == 1, "no claims table on the page"
    return found[0]


def claims_rows(at) -> list[str]:
    """Each row of the claims table as its text (tags dropped)."""
    body = claims_html(at).split("<tbody>")[1]
    return [re.sub(r"<[^>]+>", " ", row) for row in body.split("<tr>")[1:]]


def test_learn_shows_the_reference_on_first_open(app_home):
    at = open_page(LEARN)
    assert_clean(at)
    assert not store_runs(app_home), "opening the page must not start runs"
    info = " ".join(texts(at.info))
    assert "**reference machine**" in info and "not on yours" in info and "CPUs" in info and "GiB" in info
    rows = claims_rows(at)
    for r in ADVICE:  # every remedy of the advice, with its claim
        assert any(r.title.replace("&", "&amp;") in row and r.claim in row for row in rows), r.title
    measured = [row for row in rows if "reference machine" in row]
    assert len(measured) >= 15, rows  # every runnable experiment has a reference number
    assert any("cannot lower this peak" in row for row in rows)
    assert not any("not runnable yet" in row for row in rows)  # every remedy of the advice runs, or is measured
    # the first remedy's phase bars, from the reference
    assert chart(at, "learn_bars_batch_default")["data"][0]["name"] == "before"
    assert any("Measured on **reference machine, not yours**" in t for t in texts(at.caption))
    floors = at.table[0].value
    assert list(floors["floor (MiB)"]) == ["128", "30"]  # the last: the lean path


@pytest.mark.slow
def test_learn_measures_one_remedy_here_and_replaces_the_reference(app_home):
    at = open_page(LEARN)
    at.radio(key="learn_size").set_value("quick").run()
    at.selectbox(key="learn_remedy").set_value("gc").run()
    at.button(key="learn_measure_gc").click().run()
    assert_clean(at)
    runs = sorted(store_runs(app_home), key=lambda r: r.id)
    assert [r.label for r in runs] == ["Learn · Periodic gc.collect() · default setup · before",
                                       "Learn · Periodic gc.collect() · default setup · after"]
    assert runs[0].config["rows"] == 10_000 and runs[1].config["gc_every"] == 10
    assert any("Measuring on this machine: runs 1, 2" in t for t in texts(at.caption)), texts(at.caption)
    assert at.button(key="learn_all").disabled
    for r in runs:
        assert wait_run_finished(r.id, app_home, timeout=120) == RunStatus.COMPLETED
    at.run()
    assert_clean(at)
    gc_row = next(row for row in claims_rows(at) if "Periodic gc.collect()" in row)
    assert "this machine" in gc_row and "(measured with rows=10,000)" in gc_row
    assert any("Measured on **this machine (runs 1 and 2)**" in t for t in texts(at.caption)), texts(at.caption)
    assert any("Measured on **reference machine, not yours**" in t for t in texts(at.caption)) is False


def test_every_remedy_of_the_advice_can_be_measured_here(app_home):
    at = open_page(LEARN)
    for r in ADVICE:
        at.selectbox(key="learn_remedy").set_value(r.key).run()
        assert_clean(at)
        assert not any("Not runnable yet" in t for t in texts(at.warning)), (r.key, texts(at.warning))
        if r.measured_by:  # its own benchmark measures it (tests/ui/test_serve_learn_ui.py)
            continue
        assert [b for b in at.button if b.key == f"learn_measure_{r.key}"], r.key
    at.selectbox(key="learn_remedy").set_value("precision").run()
    assert any("storage only" in t and "hardware" in t for t in texts(at.info))


def test_learn_shows_ftrl_s_model_size_and_the_float16_upcast_from_the_reference(app_home):
    at = open_page(LEARN)
    at.selectbox(key="learn_remedy").set_value("ftrl").run()
    assert_clean(at)
    assert [b for b in at.button if b.key == "learn_measure_ftrl"]
    lessons = " ".join(texts(at.markdown))
    assert "nonzero weights of 16,777,216" in lessons and "z and n" in lessons
    ftrl_rows = [row for row in claims_rows(at) if "FTRL instead of SGD" in row]
    assert len(ftrl_rows) == 2 and all("saved model, sparse" in row for row in ftrl_rows)
    at.selectbox(key="learn_remedy").set_value("precision").run()
    lessons = " ".join(texts(at.markdown))
    assert "copied to float32 to compute" in lessons and "µs a batch (measured)" in lessons


def test_learn_floors_come_from_the_calibration_when_there_is_one(app_home):
    from svmcore.predict import calibration as calib

    cal = calib.Calibration({"linear-svm+base": 124.0, "mlp+base": 126.0}, {}, calib.fingerprint(),
                            time.time(), 1, {})
    with open(calib.calibration_path(app_home), "w") as f:
        json.dump(cal.to_dict(), f)
    at = open_page(LEARN)
    assert list(at.table[0].value["floor (MiB)"]) == ["124", "126", "30"]  # the lean floor is the reference's
    assert any("measured on this machine by its calibration" in t.lower() for t in texts(at.caption))


# ---------------------------------------------------------------- Sweep: budget and warnings

def test_sweep_budget_starts_at_the_median_peak_and_states_the_speed_cost(history_home):
    from svmcore.sweeps.frontier import default_budget, tradeoff_points

    h = history_home
    at = open_page(SWEEP)
    assert_clean(at)
    peaks = [r for r in store_runs(h["home"]) if r.sweep_id == h["sweep"]]
    expected = default_budget(tradeoff_points(peaks))
    assert at.number_input(key=f"budget_{h['sweep']}").value == expected
    assert any(t.startswith(f"**Best under {expected} MiB by accuracy") for t in texts(at.success)), texts(at.success)
    assert any(t.startswith(("Speed cost: ", "Speed: ")) for t in texts(at.caption)), texts(at.caption)
    layout = chart(at, "tradeoff")["layout"]
    lo, hi = layout["xaxis"]["range"]
    done = [r.summary.peak_rss_mb for r in peaks]
    assert lo < min(done) and hi > max(done) and hi - lo < 2 * (max(done) - min(done)) + 10


def test_sweep_warns_when_the_cap_is_below_the_floor(app_home):
    """64 MiB: below the floor (128 MiB on the reference machine) and, under a cgroup cap (where this
    machine has one), below what the libraries charge to the run's cgroup (the floor less their files)."""
    at = open_page(SWEEP)
    at.checkbox(key="sweep_memory_cap_mb_on").check().run()
    at.number_input(key="sweep_memory_cap_mb").set_value(64).run()
    assert_clean(at)
    warns = [t for t in texts(at.warning) if "is below the" in t]
    assert len(warns) == 1 and warns[0].startswith("4 of 4 combinations: its ") and "cap of 64 MiB is below the" in \
        warns[0] and "floor of 128 MiB" in warns[0], warns
    assert not store_runs(app_home)


def test_train_warns_when_the_cap_is_below_the_floor(app_home):
    at = open_page()
    at.checkbox(key="train_memory_cap_mb_on").check().run()
    at.number_input(key="train_memory_cap_mb").set_value(64).run()
    assert_clean(at)
    warns = [t for t in texts(at.warning) if t.startswith("Memory: ")]
    assert len(warns) == 1 and "cap of 64 MiB is below the" in warns[0] and "floor of 128 MiB" in warns[0], warns
    assert "reference machine" in warns[0], warns
