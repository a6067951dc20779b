"""Issue 40: an MLP on 2^20 hashed columns of SMS-like text peaked at 3.7 GiB with no memory
warning, and a time warning 2.4x too long (its basis: wall seconds of calibration runs on a busy
machine). The warning names the model's part and what shrinks it; the time forecast is CPU time."""

from __future__ import annotations

import pytest

from svmcore.predict import launch
from svmcore.predict.calibration import fit_train_time
from svmcore.predict.model import time_features
from svmcore.spec.config import validate
from svmcore.spec.result import Forecast, RunSummary
from svmcore.spec.units import MiB
from tests.faults.test_fit_words import sms_text


def test_an_mlp_on_two_to_the_twenty_hashed_columns_gets_a_memory_warning(tmp_path):
    cfg = validate(dataset=sms_text(tmp_path / "SMSSpamCollection"), model="mlp")  # raw text: 2^20 columns
    fc = launch.forecast(cfg, None, cache_dir=str(tmp_path / "cache"))  # no calibration: the lower bound
    assert fc.parts["model"] >= 4 * (1 << 20) * 64 * 8 / MiB  # weights, best copy, Adam's two moments
    warns = launch.launch_warnings(cfg, fc, 64 * 1024 * MiB)  # plenty of memory available
    memory = [w for w in warns if w.startswith("Memory: ")]
    assert len(memory) == 1, warns
    assert "the model and its optimiser state" in memory[0] and "1,048,576 input columns" in memory[0], memory
    assert "hashing_bits 16" in memory[0], memory
    assert fc.narrower_mb < fc.predicted_peak_mb / 8, fc.narrower_mb


def test_a_small_model_gets_no_memory_warning(tmp_path):
    cfg = validate(dataset=sms_text(tmp_path / "sms"), hashing_bits=14, model="mlp")
    fc = launch.forecast(cfg, None, cache_dir=str(tmp_path / "cache"))
    assert [w for w in launch.launch_warnings(cfg, fc, 64 * 1024 * MiB) if w.startswith("Memory: ")] == []


def test_the_time_model_is_fitted_on_cpu_seconds_where_a_run_recorded_them():
    from svmcore.predict.calibration import _shape_from_summary

    # runs whose train phase took 3x its CPU time in wall seconds (two other processes on the cores)
    obs = []
    for rows in (10_000, 40_000, 90_000):
        cfg = validate(rows=rows, features=1 << 16, nnz_per_row=20, epochs=1)
        s = {"features": 1 << 16, "data": {"rows": rows, "nnz": rows * 20}}
        f = time_features(cfg, _shape_from_summary(cfg, RunSummary.from_dict(s)))
        cpu = 1e-8 * f["sample_linear-svm"] + 1e-9 * f["step_linear-svm"] + 0.05
        s.update(train_s=3 * cpu, phases=[{"name": "train", "wall_s": 3 * cpu, "cpu_s": cpu, "peak_rss_mb": 150.0}])
        obs.append((cfg, RunSummary.from_dict(s)))
    coefs = fit_train_time(obs)
    for cfg, s in obs:
        f = time_features(cfg, _shape_from_summary(cfg, s))
        assert sum(v * coefs[k] for k, v in f.items()) == pytest.approx(s.phases[0].cpu_s, rel=0.05)


def test_the_time_warning_says_cpu_time():
    fc = Forecast(300.0, "train", predicted_train_s=600.0)
    (warn,) = launch.launch_warnings(validate(), fc, None)
    assert warn.startswith("Time: training alone is forecast to take about 10 minutes of CPU time"), warn


def test_recommend_never_picks_the_lean_path_for_raw_text(tmp_path):
    from svmcore.predict.recommend import recommend
    from tests.unit.test_fit_steps import _one_byte_calibration

    sms = sms_text(tmp_path / "SMSSpamCollection")
    cal = _one_byte_calibration({"rows": 20_000, "epochs": 1}, {})
    result = recommend({"dataset": sms}, 4000, cal, cache_dir=str(tmp_path / "cache"))
    assert result["fits"] and not validate(result["config"]).lean, result["config"]


def test_an_mlp_layer_the_allocator_maps_afresh_each_step_costs_more_per_weight():
    from svmcore.predict.calibration import _shape_from_summary

    # measured CPU per weight-step here: 23 ns for an 8 MiB first layer, 35-38 ns from 64 MiB up (its
    # temporaries are new zeroed pages at every step); one cost per weight-step fitted both 25% apart
    obs = []
    for bits, rows, ns in ((14, 30_000, 23e-9), (15, 30_000, 23e-9), (17, 5000, 36e-9), (18, 5000, 36e-9)):
        cfg = validate(rows=rows, features=1 << 18, nnz_per_row=50, epochs=1, model="mlp", hashing_bits=bits)
        s = {"features": 1 << bits, "data": {"rows": rows, "nnz": rows * 50}}
        f = time_features(cfg, _shape_from_summary(cfg, RunSummary.from_dict(s)))
        assert ("fresh_mlp" in f) == (bits >= 17), f  # 2^17 x 64 float64 weights: 64 MiB
        cpu = ns * f["step_mlp"] + 0.05
        s["phases"] = [{"name": "train", "wall_s": cpu, "cpu_s": cpu, "peak_rss_mb": 500.0}]
        obs.append((cfg, RunSummary.from_dict(s)))
    coefs = fit_train_time(obs)
    wide = validate(rows=5000, features=1 << 20, nnz_per_row=50, epochs=1, model="mlp", hashing_bits=20)
    s = {"features": 1 << 20, "data": {"rows": 5000, "nnz": 5000 * 50}}
    f = time_features(wide, _shape_from_summary(wide, RunSummary.from_dict(s)))
    assert sum(v * coefs[k] for k, v in f.items()) == pytest.approx(36e-9 * f["step_mlp"] + 0.05, rel=0.05)
