"""The pure decisions around a memory budget: the floor (what importing costs) and the
warning for a cap below it, the margin a forecast needs to fit with 95% confidence, and
why an RSS peak can stand above a cgroup cap. Plain data, no run."""

from __future__ import annotations

import dataclasses

import pytest

from svmcore.predict import launch
from svmcore.predict.floors import (
    CALIBRATED_BASIS,
    REFERENCE_BASIS,
    REFERENCE_FLOORS_MB,
    cap_below_floor,
    floor_for,
    import_costs,
)
from svmcore.predict.margin import (
    Margin,
    bound,
    forecast_margin,
    statement,
    under_forecasts,
)
from svmcore.predict.model import Calibration
from svmcore.spec.config import validate
from svmcore.spec.result import Forecast
from svmcore.spec.outcomes import rss_over_cap_note
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.records import RunRecord


def cal(floors):
    return Calibration(floors, {}, "x", 0.0, 1, {"train": 0.04, "load": 0.07})


# ---------------------------------------------------------------- floors

def test_floor_without_calibration_is_the_reference_per_library_set():
    assert floor_for(validate(), None) == (128.0, REFERENCE_BASIS)
    assert floor_for(validate(solver="native"), None) == (128.0, REFERENCE_BASIS)  # scikit-learn's path still
    assert "reference machine on 2026-12-01 (the lean floor on 2026-12-04), not this one" in REFERENCE_BASIS


def test_floor_with_calibration_is_this_machines():
    c = cal({"linear-svm+base": 120.5, "mlp+base": 125.0})
    assert floor_for(validate(), c) == (120.5, CALIBRATED_BASIS)
    assert floor_for(validate(model="mlp"), c) == (125.0, CALIBRATED_BASIS)


def test_import_costs_from_the_reference_name_both_measurements():
    rows = import_costs(None)
    assert [r["floor_mb"] for r in rows] == [128.0, 30.0]
    assert "native C library" in rows[1]["libraries"]
    assert all(r["basis"] == REFERENCE_BASIS for r in rows)


def test_import_costs_from_the_calibration_list_its_floors_base_first():
    rows = import_costs(cal({"mlp+base": 125.0, "linear-svm+base": 124.0}))
    assert [(r["model"], r["floor_mb"]) for r in rows] == [("linear-svm", 124.0), ("mlp", 125.0),
                                                           ("linear-svm, stream mode", 30.0)]
    assert {r["basis"] for r in rows[:2]} == {CALIBRATED_BASIS}
    assert rows[2]["basis"] == REFERENCE_BASIS and "reference machine" in rows[2]["libraries"]  # never calibrated


@pytest.mark.parametrize("cap, expected", [(None, False), (64, True), (127, True), (128, False), (400, False)])
def test_cap_below_floor_warns_only_below_it(cap, expected):
    cfg = validate(memory_cap_mb=cap) if cap else validate()
    text = cap_below_floor(cfg, 128.0, REFERENCE_BASIS)
    assert (text is not None) is expected
    if expected:
        assert text.startswith(f"Memory: its memory cap of {cap} MiB is below the floor of 128 MiB")
        assert "out of memory" in text and "charged to other groups" in text and "reference machine" in text


def test_launch_warnings_say_below_the_floor_instead_of_above_the_cap():
    fc = Forecast(60.0, "load", {"data": 50.0}, lower_bound=True, floor_mb=REFERENCE_FLOORS_MB["base"],
                  floor_basis=REFERENCE_BASIS)
    warns = launch.launch_warnings(validate(memory_cap_mb=100), fc, None)
    assert len(warns) == 1 and "below the floor of 128 MiB" in warns[0], warns
    # above the floor but below the forecast: the cap warning as before
    warns = launch.launch_warnings(validate(memory_cap_mb=130), dataclasses.replace(fc, predicted_peak_mb=300.0), None)
    assert len(warns) == 1 and "its memory cap is 130 MiB" in warns[0], warns
    assert launch.launch_warnings(validate(memory_cap_mb=400), dataclasses.replace(fc, predicted_peak_mb=300.0),
                                  None) == []


def test_launch_forecast_carries_the_floor(tmp_path):
    fc = launch.forecast(validate(rows=2000, features=1024), None)
    assert (fc.floor_mb, fc.floor_basis) == (128.0, REFERENCE_BASIS)


# ---------------------------------------------------------------- margins

def rec(i, predicted, measured, status=RunStatus.COMPLETED):
    return RunRecord(i, 0.0, 1.0, status, {}, RunSummary(peak_rss_mb=measured, prediction={"predicted_peak_mb": predicted}),
                     None, None, None, None, None, None, None, None)


def test_runs_needed_for_a_95_percent_bound_is_19():
    assert bound([0.01] * 18) is None
    assert bound([0.01] * 19) == 0.01


def test_bound_is_the_order_statistic():
    errs = [i / 100 for i in range(40)]  # 0.00 .. 0.39
    # k = ceil(0.95 * 41) = 39: the 39th smallest
    assert bound(errs) == pytest.approx(0.38)
    assert bound([-0.1] * 30) == 0.0  # never a negative margin


def test_under_forecasts_take_completed_runs_with_a_forecast():
    history = [rec(1, 198.0, 207.0), rec(2, 100.0, 90.0), rec(3, 100.0, 300.0, RunStatus.OOM),
               RunRecord(4, 0.0, 1.0, RunStatus.COMPLETED, {}, RunSummary(peak_rss_mb=100.0), *[None] * 8)]
    assert under_forecasts(history) == pytest.approx([207 / 198 - 1, -0.1])


def test_margin_prefers_this_machines_runs_then_the_reference_then_the_fit():
    local = [rec(i, 100.0, 100.0 + i % 5) for i in range(25)]
    m = forecast_margin(local, [0.5] * 30, {"train": 0.2})
    assert m.bound and m.n == 25 and m.rel == pytest.approx(0.04) and "this machine" in m.basis
    m = forecast_margin(local[:5], [0.1] * 30, {"train": 0.2})
    assert m.bound and m.n == 30 and m.rel == pytest.approx(0.1) and "reference machine" in m.basis
    m = forecast_margin([], [], {"train": 0.2, "load": 0.05})
    assert not m.bound and m.rel == 0.2
    assert forecast_margin().rel is None


def test_statement_fits_with_confidence_only_when_the_margin_fits():
    m = Margin(0.05, True, 36, "36 forecasts measured on the reference machine")
    ok, text = statement(190.0, 200.0, m)
    assert ok and text.startswith("Fits with 95% confidence: predicted 190 MiB, at most 200 MiB")
    ok, text = statement(198.0, 200.0, m)  # the case of the issue: 198 predicted, 207 measured
    assert not ok and "not within 200 MiB with 95% confidence" in text and "+5.0%" in text and "208 MiB" in text
    ok, text = statement(100.0, 200.0, Margin(0.2, False, 0, "in-sample"))
    assert not ok and "no 95% bound" in text
    ok, text = statement(100.0, 200.0, Margin(None, False, 0, "no measured forecasts yet"))
    assert not ok and "no margin known" in text


# ---------------------------------------------------------------- RSS above a cgroup cap

def test_rss_over_a_cgroup_cap_is_explained():
    text = rss_over_cap_note(147.5, 100.0, "cgroup", 100.0)
    assert text.startswith("Its RSS peaked at 148 MiB, above the 100 MiB cap (the cgroup itself peaked at 100 MiB, page cache included)")
    assert "charged to other groups" in text
    assert rss_over_cap_note(90.0, 100.0, "cgroup") is None
    assert rss_over_cap_note(147.5, 100.0, "rlimit") is None
    assert rss_over_cap_note(147.5, None, None) is None


def test_a_capped_runs_measured_charge_says_what_the_cap_limits_and_why_rss_differs():
    """With the charge sampled (runs since the cgroup's usage was read with every sample), the
    sentence is the run's own measurement, whether or not its RSS passed the cap."""
    text = rss_over_cap_note(163.6, 150.0, "cgroup", 107.0, held_peak_mb=106.8, rss_file_mb=57.9)
    assert text == ("The cap limits what the kernel charges to the run's cgroup, which peaked at 107 MiB (exact; "
                    "107 MiB of it memory the kernel cannot reclaim, sampled), not its RSS, which peaked at 164 MiB: "
                    "RSS also counts the 58 MiB of library files the worker maps, which other processes read into "
                    "memory first and so are charged to their groups, while page cache the run brings in is "
                    "charged to it and reclaimed before any kill.")
    assert rss_over_cap_note(90.0, 150.0, "cgroup", 80.0, held_peak_mb=60.0, rss_file_mb=30.0).startswith(
        "The cap limits what the kernel charges to the run's cgroup, which peaked at 80 MiB")
    assert rss_over_cap_note(90.0, 150.0, "rlimit", 80.0, held_peak_mb=60.0, rss_file_mb=30.0) is None


# ---------------------------------------------------------------- recommend leaves the margin

@pytest.fixture
def small_file(tmp_path):
    path = tmp_path / "small.svm"
    path.write_text("".join(f"{1 if r % 2 else -1} {r % 50 + 1}:1\n" for r in range(3000)))
    return str(path)


def test_recommend_prefers_what_fits_with_the_margin(small_file, tmp_path):
    from svmcore.predict import calibration as calib
    from svmcore.predict.recommend import recommend

    c = calib.Calibration({"linear-svm+base": 120.0}, {}, calib.fingerprint(), 0.0, 1, {})
    # hashed: the lean path (no hashing) is not a candidate here; see the next test
    base, cache = {"dataset": small_file, "batch_size": 256, "hashing_bits": 16}, str(tmp_path / "c")
    no_margin = recommend(base, 250, c, "accuracy", cache, [], [0.0] * 30)
    # the native parser and solver: the fastest, on the base floor, plus the
    # model's export at its fixed cost (the native solver gives its weights up to it: the float32 copy,
    # 4 bytes for each of the 2^16 weights: 0.25 MiB)
    peak = 120.0 + 0.25
    assert no_margin["confident"] and no_margin["predicted_peak_mb"] == round(peak, 1)
    assert no_margin["config"]["solver"] == "native"
    assert no_margin["statement"].startswith("Fits with 95% confidence")
    # with a +50% margin only the scikit-learn path (120 -> 180 MiB) fits with confidence
    wide = recommend(base, 250, c, "accuracy", cache, [], [0.5] * 30)
    assert wide["confident"] and wide["predicted_peak_mb"] == round(peak, 1)
    assert wide["upper_mb"] == pytest.approx(peak * 1.5, abs=0.1)
    assert wide["margin"] == {"pct": 50.0, "bound": True, "n": 30, "confidence": 0.95,
                              "basis": "30 forecasts measured on the reference machine "
                                       "(bench/results/estimate-accuracy), not this one"}
    # nothing fits with the margin: the pick is offered and the answer says what the margin is
    tight = recommend(base, 150, c, "accuracy", cache, [], [0.5] * 30)
    assert tight["fits"] and not tight["confident"] and tight["fitting_with_confidence"] == 0
    assert "not within 150 MiB with 95% confidence" in tight["statement"] and "180 MiB" in tight["statement"]


def test_recommend_picks_the_lean_path_where_it_fits(small_file, tmp_path):
    from svmcore.predict import calibration as calib
    from svmcore.predict.recommend import recommend

    c = calib.Calibration({"linear-svm+base": 120.0}, {}, calib.fingerprint(), 0.0, 1, {})
    pick = recommend({"dataset": small_file, "batch_size": 256}, 250, c, "accuracy", str(tmp_path / "c"), [],
                     [0.0] * 30)
    # the lean floor (30 MiB) and the small file's shuffle buffer: fastest and smallest
    assert pick["confident"] and 30.0 <= pick["predicted_peak_mb"] < 33.0
    assert pick["config"]["parser"] == pick["config"]["solver"] == "native" and pick["config"]["mode"] == "stream"
