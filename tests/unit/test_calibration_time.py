"""How long calibration still takes: forecast from its own runs as they end (issue 22:
it promised 2-3 minutes and was at run 27 of 37 after 9.5 minutes)."""

from __future__ import annotations

import dataclasses

import pytest

from svmcore.app.forecasts import CalibrationState, calibration_work, time_left
from svmcore.predict import calibration as calib
from ui.live import calibration_text


def test_the_work_of_each_calibration_run_is_its_training_samples():
    work = calibration_work()
    assert len(work) == len(calib.calibration_configs()) + len(calib.LEAN_RUNS)  # every run calibrate makes
    assert work[0] == 100_000 and work[1] == 300_000  # rows x one pass
    assert all(w > 0 for w in work)


def test_time_left_fits_a_fixed_and_a_per_sample_cost_to_the_runs_done():
    # runs of 1, 3 and 2 units took 3, 7 and 5 s: 1 s a run plus 2 s a unit
    ends = [0.0, 3.0, 10.0, 15.0]
    work = (1, 3, 2, 4, 1)
    assert time_left(ends, work, now=15.0) == pytest.approx((1 + 2 * 4) + (1 + 2 * 1))
    assert time_left(ends, work, now=17.0) == pytest.approx(10.0)  # the current run has spent 2 s already
    assert time_left(ends, work, now=100.0) == 0.0


def test_time_left_waits_for_two_runs_and_survives_alike_runs():
    assert time_left([0.0], (1, 2), now=5.0) is None
    assert time_left([0.0, 4.0], (1, 2, 3), now=4.0) is None
    assert time_left([0.0, 4.0, 10.0], (5, 5, 5, 5), now=10.0) == pytest.approx(10.0)  # 5 s a run, two left
    # a negative per-sample slope from noise falls back to the mean run
    assert time_left([0.0, 10.0, 12.0], (1, 9, 4), now=12.0) == pytest.approx(6.0)


def test_the_progress_line_says_run_time_so_far_and_time_left():
    state = CalibrationState(running=True, done=26, total=37, error=None, calibrated=False, samples=1,
                             elapsed_s=570.0, left_s=240.0)
    assert calibration_text(state) == ("Calibrating the memory model on this machine: run 27 of 37 · 9.5 min so far "
                                       "· about 4 minutes left (forecast from the runs done so far)")
    assert calibration_text(dataclasses.replace(state, done=1, left_s=None)).endswith(
        "run 2 of 37 · 9.5 min so far · the time left is forecast once two runs have ended")
