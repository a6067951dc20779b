"""The memory model's arithmetic and its fit; its accuracy against real runs is in
tests/integration/test_estimate_runs.py and bench/estimate_accuracy.py."""

import json

import numpy as np
import pytest

from svmcore.data.shuffle_order import piece_rows
from svmcore.predict import calibration as calib
from svmcore.predict import launch
from svmcore.predict import model as estimate
from svmcore.predict.calibration import fit
from svmcore.predict.model import Shape, features, parts, predict
from svmcore.spec.config import validate
from svmcore.spec.result import Forecast, RunSummary
from svmcore.spec.units import MiB

SHAPE = Shape(rows=100_000, train_rows=80_000, test_rows=20_000, width=1 << 20, nnz_per_row=46.0,
              classes=2, dense_source=False)


def test_data_is_held_only_in_memory_mode_and_scales_with_rows_and_precision():
    mem = parts(validate(mode="memory"), SHAPE)
    assert mem["data"] == pytest.approx(80_000 * (46 * 12 + 8))
    half = parts(validate(mode="memory"), Shape(**{**SHAPE.__dict__, "train_rows": 40_000}))
    assert half["data"] == pytest.approx(mem["data"] / 2)
    f32 = parts(validate(mode="memory", precision="float32"), SHAPE)
    assert f32["data"] == pytest.approx(80_000 * (46 * 8 + 8))
    for mode in ("stream", "memmap"):
        assert parts(validate(mode=mode), SHAPE)["data"] == 0


def test_dense_costs_every_cell_and_hashing_narrows_it():
    cfg = validate(representation="dense", hashing_bits=10, rows=1000, batch_size=100)
    p = parts(cfg, Shape(1000, 800, 200, 1024, 40.0, 2, False))
    assert p["data"] == 800 * 1024 * 8
    assert p["batch"] == 100 * 1024 * 8


def test_model_bytes_follow_width_classes_average_and_solver():
    p = parts(validate(), SHAPE)
    assert p["model_linear"] == 2 * (1 << 20) * 8  # weights and their average
    assert parts(validate(average=False), SHAPE)["model_linear"] == (1 << 20) * 8
    three = parts(validate(), Shape(**{**SHAPE.__dict__, "classes": 3}))
    assert three["model_linear"] == 3 * p["model_linear"]
    native = parts(validate(solver="native"), SHAPE)
    assert native["model_linear"] == 0 and native["model_linear_compiled"] == p["model_linear"]
    # FTRL: z and n (it scores from them, no weights array), whatever average says; its own coefficient
    for average in (True, False):
        ftrl = parts(validate(solver="ftrl", average=average), SHAPE)
        assert ftrl["model_linear"] == ftrl["model_linear_compiled"] == 0
        assert ftrl["model_linear_ftrl"] == 2 * (1 << 20) * 8


def test_every_phase_the_run_goes_through_has_features():
    assert set(features(validate(), parts(validate(), SHAPE))) == {"prepare", "load", "train", "evaluate"}
    ka = validate(model="kernel-approx", rows=30_000)
    assert "transform" in features(ka, parts(ka, SHAPE))


def test_distill_adds_its_phase_with_the_students_weights_and_keeps_rows_untransformed():
    teacher = validate(model="kernel-approx", rows=30_000)
    distilled = validate(teacher.to_dict(), distill=True)
    before, after = features(teacher, parts(teacher, SHAPE)), features(distilled, parts(distilled, SHAPE))
    student = 2 * (1 << 20) * 8  # averaged SGD over the input columns, at a linear model's price
    assert after["distill"]["model_linear"] == before["train"]["model_linear"] + student
    assert after["evaluate"]["model_linear"] == before["evaluate"]["model_linear"] + student
    assert after["train"] == {k: v for k, v in before["train"].items() if k != "transformed"} | \
        {"batch_transformed": after["train"]["batch_transformed"]}  # the student needs the rows as they are
    assert "transformed" not in after["train"] and "distill" not in before
    # no calibration run distills: its phase is priced with the train phase's coefficients
    cal = calib.Calibration({"kernel-approx+base": 120.0}, {"train": {"model_linear": 1.0}}, calib.fingerprint(),
                            0.0, 1, {})
    phases = predict(distilled, cal, SHAPE).phases_mb
    assert list(phases) == ["imports", "prepare", "load", "transform", "train", "distill", "evaluate"]
    assert phases["distill"] == pytest.approx(phases["train"] + student / MiB, abs=0.1)


def test_the_model_export_follows_width_and_classes_in_the_evaluate_phase_of_runs_that_export(tmp_path):
    """The export at the end of the run (model_export._export) holds the weights' float64 copy and a
    float32 one: 12 bytes per weight of the exported model, in the evaluate phase only; the
    native SGD solver gives their weights up to it (folded in place): the float32 copy, 4 bytes; FTRL
    computes its weights into z and lets n go first: nothing above training."""
    p = parts(validate(), SHAPE)
    assert p["model_export"] == (1 << 20) * 12
    assert parts(validate(), Shape(**{**SHAPE.__dict__, "width": 1 << 22}))["model_export"] == (1 << 22) * 12
    assert parts(validate(), Shape(**{**SHAPE.__dict__, "classes": 3}))["model_export"] == 3 * (1 << 20) * 12
    assert parts(validate(solver="ftrl"), SHAPE)["model_export"] == 0
    for knobs in ({"average": False}, {"mode": "memmap"},
                  {"workers": 2, "mode": "stream"}):  # data-parallel runs export the mixed model in the run's process
        assert parts(validate(**knobs), SHAPE)["model_export"] == p["model_export"], knobs
    for knobs in ({"solver": "native"}, {"solver": "native", "mode": "memmap"}):
        assert parts(validate(**knobs), SHAPE)["model_export"] == (1 << 20) * 4, knobs
    f = features(validate(), p)
    assert f["evaluate"]["model_export"] == p["model_export"]
    assert all("model_export" not in f[ph] for ph in f if ph != "evaluate")
    # until a calibration fits it, one byte of RSS per byte
    cal = calib.Calibration({"linear-svm+base": 120.0}, {}, "x", 0.0, 1, {})
    pred = predict(validate(), cal, SHAPE)
    assert pred.phases_mb["evaluate"] == pytest.approx(120.0 + 12.0, abs=0.1)
    assert pred.phase_parts["evaluate"]["model"] == pytest.approx(12.0, abs=0.1)
    # models that are not exported: kernel-approx, the MLPs, the exact kernel SVM, and raw text
    for model in ("kernel-approx", "mlp", "mlp-numpy", "kernel-svm"):
        cfg = validate(model=model, rows=3000)
        assert parts(cfg, SHAPE)["model_export"] == 0, model
        assert "model_export" not in features(cfg, parts(cfg, SHAPE))["evaluate"], model
    raw = Shape(**{**SHAPE.__dict__, "file_format": "text"})
    assert parts(validate(dataset=_svmlight(tmp_path)), raw)["model_export"] == 0
    # a distilled run exports its linear-svm student, one weight per input column
    distilled = validate(model="kernel-approx", rows=30_000, distill=True)
    assert parts(distilled, SHAPE)["model_export"] == (1 << 20) * 12
    assert features(distilled, parts(distilled, SHAPE))["evaluate"]["model_export"] == (1 << 20) * 12
    # the lean path exports too, priced by its own calibration (model_lean): unchanged
    lean = validate(dataset=_svmlight(tmp_path), mode="stream", parser="native", solver="native")
    assert lean.lean and parts(lean, SHAPE)["model_export"] == 0
    assert all("model_export" not in f for f in features(lean, parts(lean, SHAPE)).values())


def _observations(true_coefs, floors, configs):
    """Runs whose per-phase peaks follow known coefficients exactly."""
    obs = []
    for cfg in configs:
        shape = estimate.data_shape(cfg)
        phases = [{"name": "imports", "peak_rss_mb": floors[estimate.floor_key(cfg)]}]
        for phase, f in features(cfg, parts(cfg, shape)).items():
            extra = sum(v * true_coefs.get(k, 0.0) for k, v in f.items()) / MiB
            phases.append({"name": phase, "peak_rss_mb": phases[0]["peak_rss_mb"] + extra})
        obs.append((cfg, RunSummary.from_dict({
            "phases": phases, "floor_mb": phases[0]["peak_rss_mb"], "features": shape.width,
            "train_rows": shape.train_rows, "test_rows": shape.test_rows,
            "data": {"rows": shape.rows, "nnz": shape.nnz_per_row * shape.rows, "exact": True, "classes": [0, 1],
                     "dense_source": shape.dense_source}})))
    return obs


def test_fit_recovers_the_coefficients_it_was_given():
    configs = [validate(v) for v in [
        dict(rows=20_000, features=1 << 16), dict(rows=40_000, features=1 << 18, precision="float32"),
        dict(rows=30_000, batch_size=4096, features=1 << 20), dict(rows=60_000, features=1 << 17, average=False),
        dict(rows=20_000, nnz_per_row=120, features=1 << 16), dict(rows=50_000, features=1 << 19, batch_size=256),
        dict(rows=25_000, features=1 << 21), dict(rows=70_000, features=1 << 16, nnz_per_row=10)]]
    truth = {"const_memory": 5.0, "load_data_float64": 1.0, "load_data_float32": 1.2, "test": 2.0,
             "data_float64": 1.5, "data_float32": 1.5, "model_linear": 1.0, "batch_memory": 3.0}
    obs = _observations(truth, {"linear-svm+base": 120.0}, configs)
    cal = fit(obs)
    for cfg, s in obs:
        pred = predict(cfg, cal, calib._shape_from_summary(cfg, s))
        measured = max(p.peak_rss_mb for p in s.phases)
        assert pred.predicted_peak_mb == pytest.approx(measured, rel=1e-3)


def test_prediction_reports_its_parts_and_every_phase(tmp_path):
    cal = calib.Calibration({"linear-svm+base": 124.0}, {"load": {"load_data_float64": 1.0, "test": 1.0}},
                               calib.fingerprint(), 0.0, 1, {})
    pred = predict(validate(rows=50_000), cal)
    assert pred.peak_phase == "load"
    assert set(pred.phases_mb) >= {"imports", "prepare", "load", "train", "evaluate"}
    assert pred.parts["floor"] == pred.floor_mb == 124.0
    total = sum(v for k, v in pred.parts.items())
    assert total == pytest.approx(pred.predicted_peak_mb, abs=0.5)
    assert pred.parts["data"] > 0 and pred.parts["test"] > 0


def test_a_calibration_from_another_machine_or_version_is_not_used(tmp_path):
    cal = calib.Calibration({"linear-svm+base": 124.0}, {}, "another-machine", 0.0, 1, {})
    with open(calib.calibration_path(str(tmp_path)), "w") as f:
        json.dump(cal.to_dict(), f)
    assert calib.load_calibration(str(tmp_path)) is None
    cal.fingerprint = calib.fingerprint()
    with open(calib.calibration_path(str(tmp_path)), "w") as f:
        json.dump(cal.to_dict(), f)
    assert calib.load_calibration(str(tmp_path)).floors == {"linear-svm+base": 124.0}
    with open(calib.calibration_path(str(tmp_path)), "w") as f:
        f.write("{not json")
    assert calib.load_calibration(str(tmp_path)) is None


def test_a_model_without_a_floor_of_its_own_borrows_the_linear_svm_s():
    cal = calib.Calibration({"linear-svm+base": 120.0, "mlp+base": 125.0}, {}, "x", 0.0, 1, {})
    assert estimate.floor_mb(cal, validate(model="mlp", parser="native")) == 125.0
    assert estimate.floor_mb(cal, validate(model="kernel-approx", solver="native")) == 120.0


def test_synthetic_sparse_shape_measures_real_nonzeros():
    shape = estimate.data_shape(validate(rows=10_000))
    assert 30 < shape.nnz_per_row < 50  # duplicate tokens merge: below the nominal 50
    hashed = estimate.data_shape(validate(rows=10_000, hashing_bits=8))
    assert hashed.width == 256 and hashed.nnz_per_row < shape.nnz_per_row
    assert np.isclose(estimate.data_shape(validate(dataset="dense", rows=1000, batch_size=100)).nnz_per_row, 200)


def test_shuffling_is_priced_by_mode_and_buffer():
    row = 46 * 12 + 8  # float64 CSR row: value + id per nonzero, a row pointer
    assert parts(validate(mode="memory"), SHAPE)["shuffle"] == 80_000 * 8  # the permutation
    # memmap: plus the random order of the 64-row pieces windows are drawn from; the spill keeps its order and
    # piece index on disk, so a stream pass holds its pool only
    order = 80_000 // 64 * 4  # int32
    assert parts(validate(mode="memmap", shuffle_buffer=10_000), SHAPE)["shuffle"] == pytest.approx(10_000 * row + order)
    assert parts(validate(mode="stream", shuffle_buffer=10_000), SHAPE)["shuffle"] == pytest.approx(10_000 * row)
    big = -(-80_000 // piece_rows(10**6)) * 4  # a bigger window: bigger pieces
    assert parts(validate(mode="memmap", shuffle_buffer=10**6), SHAPE)["shuffle"] == pytest.approx(80_000 * row + big)
    for mode in ("memory", "stream", "memmap"):
        assert parts(validate(mode=mode, shuffle=False), SHAPE)["shuffle"] == 0
        f = features(validate(mode=mode), parts(validate(mode=mode), SHAPE))
        assert f"shuffle_{mode}" in f["train"]


def test_recommend_never_proposes_a_batch_larger_than_the_training_rows(tmp_path):
    from svmcore.predict.recommend import recommend

    path = tmp_path / "small.svm"
    path.write_text("".join(f"{1 if r % 2 else -1} {r % 50 + 1}:1\n" for r in range(3000)))  # 2,400 train rows
    cal = calib.Calibration({"linear-svm+base": 120.0}, {}, calib.fingerprint(), 0.0, 1, {})
    result = recommend({"dataset": str(path), "batch_size": 256}, 10_000, cal, "accuracy", str(tmp_path / "c"))
    assert result["fits"]
    proposed = [result["changed"]] + [r["changed"] for r in result["runners_up"]]
    assert all(c.get("batch_size", 256) <= 2400 for c in proposed), proposed


# ---------------------------------------------------------------- the MLP, as scikit-learn holds it

@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_mlp_parts_are_what_scikit_learn_really_holds(precision):
    """coefs_, _best_coefs and Adam's two moments between steps; a step adds the dense
    gradient and Adam's temporaries. Measured with tracemalloc (numpy reports to it)."""
    import tracemalloc

    import scipy.sparse as sp
    from sklearn.neural_network import MLPClassifier

    width, hidden = 1 << 16, 32
    dtype = np.float64 if precision == "float64" else np.float32
    X = sp.random(600, width, density=30 / width, format="csr", random_state=0, dtype=dtype)
    y = np.where(np.arange(600) % 2, 1.0, -1.0)
    mlp = MLPClassifier(hidden_layer_sizes=(hidden,), batch_size=200, random_state=0)
    tracemalloc.start()
    try:
        mlp.partial_fit(X[:200], y[:200], classes=[-1.0, 1.0])
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        mlp.partial_fit(X[200:400], y[200:400])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    shape = Shape(1000, 800, 200, width, 30.0, 2, False)
    p = parts(validate(model="mlp", hidden=str(hidden), precision=precision, rows=1000, batch_size=200), shape)
    assert p["model_mlp"] == pytest.approx(held, rel=0.02)
    assert p["model_mlp_step"] == pytest.approx(peak - held, rel=0.02)
    # and the train phase prices both: its peak is during a step
    cfg = validate(model="mlp", hidden=str(hidden), precision=precision, rows=1000, batch_size=200)
    f = features(cfg, p)
    assert f["train"]["model_mlp"] == p["model_mlp"] + p["model_mlp_step"]
    assert f["evaluate"]["model_mlp"] == p["model_mlp"]


def test_mlp_on_raw_text_hashed_to_2_pow_20_is_priced_at_seven_copies_of_its_first_layer():
    """The case of issue #10: 2^20 x 64 float64 weights are 512 MiB; the run measured
    3,745 MiB at its peak (4.0x between steps, 7.0x during one, plus the floor)."""
    shape = Shape(20_000, 16_000, 4000, 1 << 20, 45.0, 2, False)
    cfg = validate(model="mlp", hidden="64")
    layer = (1 << 20) * 64 * 8
    lb = predict(cfg, None, shape)
    assert lb.peak_phase == "train" and lb.lower_bound
    assert 7 * layer / MiB <= lb.predicted_peak_mb < 3745  # a lower bound of the measured peak
    assert max(lb.parts, key=lb.parts.get) == "model"


# ---------------------------------------------------------------- the train time forecast

def test_time_fit_recovers_the_costs_it_was_given():
    configs = [validate(v) for v in [
        dict(rows=20_000, features=1 << 16), dict(rows=40_000, features=1 << 18, batch_size=256),
        dict(rows=30_000, batch_size=4096, features=1 << 20, mode="stream"), dict(rows=60_000, epochs=3),
        dict(rows=20_000, model="mlp", hashing_bits=14, hidden="64"),
        dict(rows=10_000, model="mlp", hashing_bits=16, hidden="32", mode="stream"),
        dict(rows=30_000, model="mlp", hashing_bits=12, hidden="128", epochs=2),
        dict(rows=50_000, features=1 << 17, mode="stream", epochs=2)]]
    truth = {"const": 0.05, "sample_linear-svm": 6e-9, "step_linear-svm": 7e-9, "parse_sklearn": 9e-7,
             "sample_mlp": 2e-9, "step_mlp": 2e-8}
    obs = []
    for cfg in configs:
        shape = estimate.data_shape(cfg)
        train_s = sum(v * truth.get(k, 0.0) for k, v in estimate.time_features(cfg, shape).items())
        obs.append((cfg, RunSummary.from_dict({"train_s": train_s, "features": shape.width,
                                               "train_rows": shape.train_rows, "test_rows": shape.test_rows,
                                               "data": {"rows": shape.rows, "exact": True,
                                                        "nnz": shape.nnz_per_row * shape.rows}})))
    coefs = calib.fit_train_time(obs)
    for cfg, s in obs:
        shape = calib._shape_from_summary(cfg, s)
        assert estimate.predict_train_s(cfg, shape, coefs) == pytest.approx(s.train_s, rel=1e-3)
    # a family the calibration never ran has no forecast, rather than a made-up one
    assert estimate.predict_train_s(validate(model="kernel-approx", rows=30_000), SHAPE, coefs) is None


def test_mlp_steps_follow_its_own_200_row_batches_and_its_weights():
    shape = Shape(1000, 1000, 0, 1 << 10, 20.0, 2, False)
    f = estimate.time_features(validate(model="mlp", hidden="64", rows=1000, batch_size=512, epochs=2), shape)
    # 1000 rows in batches of 512 and 488: 3 + 3 MLP steps of at most 200 rows, per epoch
    assert f["step_mlp"] == 2 * 6 * ((1 << 10) * 64 + 64)


# ---------------------------------------------------------------- warnings before launch

def _forecast(peak_mb=4000.0, train_s=600.0, lower=False, model_mb=3772.0, **more):
    return Forecast(peak_mb, "train", {"data": 14.0, "model": model_mb}, predicted_train_s=train_s, lower_bound=lower,
                    **more)


def test_launch_warnings_memory_above_what_is_available_now():
    cfg = validate(model="mlp")
    warns = launch.launch_warnings(cfg, _forecast(train_s=10), 3000 * MiB)
    assert len(warns) == 1
    assert warns[0].startswith("Memory: this run is forecast to peak at 4,000 MiB")
    assert "most of it model (3,772 MiB) in the train phase" in warns[0] and "3,000 MiB available now" in warns[0]
    assert launch.launch_warnings(cfg, _forecast(train_s=10, model_mb=900.0), 5000 * MiB) == []
    # enough memory free, but a 3.7 GiB model still gets a word (issue 40)
    (big,) = launch.launch_warnings(cfg, _forecast(train_s=10), 5000 * MiB)
    assert big.startswith("Memory: the model and its optimiser state alone are forecast to hold 3,772 MiB"), big


def test_launch_warnings_memory_above_the_cap():
    warns = launch.launch_warnings(validate(memory_cap_mb=1000), _forecast(train_s=None), None)
    assert len(warns) == 1 and "its memory cap is 1,000 MiB" in warns[0] and "out of memory" in warns[0]
    assert launch.launch_warnings(validate(memory_cap_mb=5000), _forecast(train_s=None, model_mb=900.0), None) == []


def test_under_a_cgroup_cap_the_warning_forecasts_what_the_cgroup_is_charged():
    """A cgroup is charged for the pages its run brings into memory first: the library files that other
    processes already hold (measured: 56-58 MiB on scikit-learn's path) count in RSS, not against the cap.
    A 100 MiB cgroup cap below the 128 MiB floor was said to end "almost certainly" out of memory; the run
    completed, its cgroup charged 96 MiB."""
    def fc(peak_mb, kind, lower=False):
        return _forecast(peak_mb=peak_mb, train_s=None, model_mb=8.0, floor_mb=128.0, floor_basis="measured here",
                         cap_kind=kind, capped_mb=peak_mb - (57.0 if kind == "cgroup" and not lower else 0.0),
                         lower=lower)

    assert launch.launch_warnings(validate(memory_cap_mb=100, cap_kind="cgroup"), fc(150.0, "cgroup"), None) == []
    [rlimit] = launch.launch_warnings(validate(memory_cap_mb=100, cap_kind="rlimit"), fc(150.0, "rlimit"), None)
    assert "below the floor of 128 MiB" in rlimit
    [over] = launch.launch_warnings(validate(memory_cap_mb=100, cap_kind="cgroup"), fc(170.0, "cgroup"), None)
    assert over.startswith("Memory: this run is forecast to peak at 170 MiB") and "its memory cap is 100 MiB" in over
    assert ("under a cgroup cap what counts is what the kernel charges to the run's cgroup, forecast at 113 MiB "
            "(the peak less the 57 MiB of library files") in over, over
    [floor] = launch.launch_warnings(validate(memory_cap_mb=64, cap_kind="cgroup"), fc(150.0, "cgroup"), None)
    assert "below the 71 MiB that Python and the libraries" in floor and "charge to a cgroup" in floor, floor
    # a lower bound is the parts alone, without the floor and its library files: all of it is charged
    [bound] = launch.launch_warnings(validate(memory_cap_mb=100, cap_kind="cgroup"),
                                     fc(120.0, "cgroup", lower=True), None)
    assert bound.startswith("Memory: this run needs at least 120 MiB") and "its memory cap is 100 MiB" in bound
    assert "forecast at" not in bound, bound


def test_launch_warnings_a_long_train_phase_in_minutes_and_says_it_is_rough():
    warns = launch.launch_warnings(validate(), _forecast(peak_mb=300, model_mb=100.0), 10_000 * MiB)
    assert warns == ["Time: training alone is forecast to take about 10 minutes of CPU time (a rough forecast from "
                     "per-sample and per-step costs fitted on this machine's calibration runs)."]
    assert launch.launch_warnings(validate(), _forecast(peak_mb=300, train_s=170, model_mb=100.0), 10_000 * MiB) == []
    ref = launch.launch_warnings(validate(), _forecast(peak_mb=300, train_s=9000, lower=True, model_mb=100.0), None)
    assert "about 2.5 hours" in ref[0] and "a reference machine, not this one" in ref[0]


def test_launch_warnings_more_threads_than_cpus():
    few = _forecast(peak_mb=300, train_s=None, model_mb=100.0)
    warns = launch.launch_warnings(validate(threads=64), few, None, cpus=2)
    assert len(warns) == 1 and warns[0].startswith("Threads: 64 threads on 2 CPUs") and "Use at most 2." in warns[0]
    assert launch.launch_warnings(validate(threads=2), few, None, cpus=2) == []
    assert launch.launch_warnings(validate(threads=64), few, None) == []  # the CPUs unknown: nothing said


def test_launch_warnings_without_calibration_say_the_peak_is_a_lower_bound():
    warns = launch.launch_warnings(validate(), _forecast(lower=True, train_s=None), 2000 * MiB)
    assert warns[0].startswith("Memory: this run needs at least 4,000 MiB (a lower bound")
    assert "calibrate for a forecast" in warns[0]


def test_launch_forecast_without_calibration_is_the_lower_bound(tmp_path):
    path = tmp_path / "raw.txt"
    path.write_text("".join(f"{'pos' if r % 2 else 'neg'}\tw{r % 7} w{r % 13} w{r}\n" for r in range(2000)))
    cfg = validate(dataset=str(path), model="mlp", hidden="64", batch_size=200)
    fc = launch.forecast(cfg, None, cache_dir=str(tmp_path / "cache"))
    assert fc.lower_bound and "floor" not in fc.parts
    assert fc.predicted_peak_mb >= 7 * (1 << 20) * 64 * 8 / MiB  # text is hashed to 2^20 columns by default
    assert fc.predicted_train_s > 0  # at the reference machine's rates


def test_the_forecast_says_what_the_runs_cap_will_limit(tmp_path):
    """Under a cgroup cap, what the cgroup is charged: the calibrated peak less the library files other
    processes hold (57 MiB on scikit-learn's path); a lower bound holds no floor, so all of it is charged."""
    cal = calib.Calibration({"linear-svm+base": 128.0}, {}, "x", 0.0, 1, {})
    cgroup, rlimit = validate(memory_cap_mb=100, cap_kind="cgroup"), validate(memory_cap_mb=100, cap_kind="rlimit")
    fc = launch.forecast(cgroup, cal, SHAPE)
    assert (fc.cap_kind, fc.floor_mb) == ("cgroup", 128.0)
    assert fc.capped_mb == pytest.approx(fc.predicted_peak_mb - 57.0, abs=0.1)
    assert launch.forecast(rlimit, cal, SHAPE).capped_mb == fc.predicted_peak_mb
    bound = launch.forecast(cgroup, None, SHAPE)
    assert bound.lower_bound and bound.capped_mb == bound.predicted_peak_mb
    assert launch.forecast(validate(), None, SHAPE).cap_kind == "none"


def test_a_forecast_that_fails_inside_the_model_is_logged_not_silently_dropped(tmp_path, caplog):
    # a calibration whose floor is not a number: the model itself fails (not the data)
    cal = calib.Calibration({"linear-svm+base": "not a number"}, {}, calib.fingerprint(), 0.0, 1, {})
    with open(calib.calibration_path(str(tmp_path)), "w") as f:
        json.dump(cal.to_dict(), f)
    with caplog.at_level("INFO", logger="svmcore.predict.launch"):
        assert launch.admit(validate(rows=2000), str(tmp_path)).forecast is None
    [record] = [r for r in caplog.records if r.name == "svmcore.predict.launch"]
    assert record.levelname == "ERROR" and "failed to price this run" in record.getMessage() and record.exc_info


def _svmlight(tmp_path, name="f"):
    path = tmp_path / name
    path.write_text("1 1:0.5 7:1\n-1 2:1\n")
    return str(path)


def test_the_lean_paths_test_file_is_priced_twice_in_every_phase_after_loading(tmp_path):
    """The lean worker reads a separate test file whole (float64 as parsed) and keeps the parsed
    blocks beside their concatenation: two bytes of RSS per byte, fixed (no calibration run is lean)."""
    lean = dict(dataset=_svmlight(tmp_path), mode="stream", parser="native", solver="native")
    with_test = validate(lean, test_file=_svmlight(tmp_path, "t"))
    shape = Shape(rows=80_000, train_rows=80_000, test_rows=20_000, width=1 << 19, nnz_per_row=45.6, classes=2,
                  dense_source=False)
    held = 20_000 * (45.6 * 12 + 8)
    assert parts(with_test, shape)["test_lean_file"] == pytest.approx(held)
    assert parts(validate(lean), shape)["test_lean_file"] == 0  # its held-out rows stay on disk
    cal = calib.Calibration({"linear-svm+lean": 37.0}, {}, "x", 0.0, 1, {})
    a, b = predict(with_test, cal, shape), predict(validate(lean), cal, shape)
    for phase in ("load", "train", "evaluate"):
        extra = a.phases_mb[phase] - b.phases_mb[phase]
        assert extra == pytest.approx(2 * held / MiB, abs=0.2), phase
    assert a.parts["test"] == pytest.approx(2 * held / MiB, abs=0.2)


def test_loading_dense_float32_peaks_while_a_chunk_is_made_dense_beside_the_chunks_before_it():
    """``to_storage`` makes a sparse chunk dense in float64, then copies it to the storage precision, while
    the chunks stored before it are held: in float32 and float16 that moment weighs as much as the stacking
    (two copies of the stored rows) or more, before the generator's own chunk; in float64 the stacking stays the peak. Measured at 20,000 x 4,096:
    739 MiB (float32), 614 (float16), both in load (bench/results/estimate-accuracy-held-out.md)."""
    shape = Shape(rows=20_000, train_rows=16_000, test_rows=4000, width=4096, nnz_per_row=190.0, classes=2,
                  dense_source=False)
    per_chunk = 8000 * 4096  # a chunk's training rows, cells
    f32 = parts(validate(rows=20_000, features=4096, representation="dense", precision="float32"), shape)
    assert (f32["load_held"], f32["io_densify_chunk"]) == (per_chunk * 4, per_chunk * 12)
    f64 = parts(validate(rows=20_000, features=4096, representation="dense"), shape)
    assert (f64["load_held"], f64["io_densify_chunk"]) == (per_chunk * 8, per_chunk * 8)  # kept as made: no copy
    mm = parts(validate(rows=20_000, features=4096, representation="dense", precision="float32", mode="memmap"), shape)
    assert mm["io_densify_chunk"] == 0 and mm["io_densify"] == 10_000 * 4096 * 4
    # a short last chunk: the last full chunk's moment is the larger (held 8,000 rows, 8,000 made dense)
    odd = Shape(rows=25_000, train_rows=20_000, test_rows=5000, width=100, nnz_per_row=10.0, classes=2,
                dense_source=False)
    p = parts(validate(rows=25_000, features=100, representation="dense", precision="float32"), odd)
    assert (p["load_held"], p["io_densify_chunk"]) == (8000 * 100 * 4, 8000 * 100 * 12)
    cal = calib.Calibration({"linear-svm+base": 120.0}, {"load": {"load_data_dense": 1.0}}, "x", 0.0, 1, {})
    for precision, peak_in_chunk in (("float32", True), ("float16", True), ("float64", False)):
        cfg = validate(rows=20_000, features=4096, representation="dense", precision=precision)
        load = predict(cfg, cal, shape).phases_mb["load"]
        pp = parts(cfg, shape)
        chunk_mb = (pp["load_held"] + pp["io_densify_chunk"]) / MiB
        stack_mb = pp["data_stacked"] / MiB
        assert load == pytest.approx(120 + max(chunk_mb, stack_mb), abs=0.2), precision
        assert (chunk_mb >= stack_mb) == peak_in_chunk, precision  # float32: 500 MiB each at 1.0


def test_the_lean_floor_comes_from_the_calibration_when_it_measured_one(tmp_path):
    from svmcore.predict.floors import REFERENCE_BASIS, CALIBRATED_BASIS, floor_for, import_costs

    cfg = validate(dataset=_svmlight(tmp_path), mode="stream", parser="native", solver="native")
    old = calib.Calibration({"linear-svm+base": 120.0}, {}, "x", 0.0, 1, {})
    new = calib.Calibration({"linear-svm+base": 120.0, "linear-svm+lean": 36.5}, {}, "x", 0.0, 1, {})
    assert floor_for(cfg, old) == (estimate.LEAN_FLOOR_MB, REFERENCE_BASIS)
    assert floor_for(cfg, new) == (36.5, CALIBRATED_BASIS)
    assert predict(cfg, new, SHAPE).parts["floor"] == 36.5
    assert [r["floor_mb"] for r in import_costs(new) if "lean" in r["libraries"]] == [36.5]


def test_the_lean_calibration_runs_give_its_floor_and_move_no_classic_coefficient(tmp_path):
    configs = [validate(v) for v in [dict(rows=20_000, features=1 << 16), dict(rows=40_000, features=1 << 18),
                                      dict(rows=30_000, features=1 << 20), dict(rows=60_000, features=1 << 17)]]
    truth = {"const_memory": 5.0, "load_data_float64": 1.0, "test": 2.0, "data_float64": 1.5, "model_linear": 1.0}
    obs = _observations(truth, {"linear-svm+base": 120.0}, configs)
    lean = validate(dataset=_svmlight(tmp_path), mode="stream", parser="native", solver="native")
    phases = [{"name": "imports", "peak_rss_mb": 36.0}] + [{"name": p, "peak_rss_mb": 5000.0}
                                                          for p in ("prepare", "load", "train", "evaluate")]
    summary = RunSummary.from_dict({
        "phases": phases, "floor_mb": 36.0, "features": 1 << 18, "train_rows": 16_000, "test_rows": 4000,
        "data": {"rows": 20_000, "nnz": 10**6, "exact": True, "classes": [0, 1], "dense_source": False}})
    with_lean, without = fit(obs + [(lean, summary)]), fit(obs)
    assert with_lean.floors["linear-svm+lean"] == 36.0
    classic = {ph: {k: v for k, v in c.items() if "lean" not in k} for ph, c in with_lean.coefs.items()}
    for phase, coefs in without.coefs.items():  # its absurd phase peaks moved only the lean path's own coefficients
        assert classic[phase] == pytest.approx(coefs, abs=1e-6), phase
    lean_train = predict(lean, with_lean, calib._shape_from_summary(lean, summary)).phases_mb["train"]
    assert lean_train == pytest.approx(5000.0, rel=1e-3)  # and they fit it


def test_a_build_from_a_dense_source_is_priced_apart_from_a_sparse_one():
    """Generating or parsing a sparse chunk holds many times its bytes, a dense source's chunk
    about its bytes: one coefficient for both fitted neither (the memmap prepare phase's constant
    took it all, and a 123-column file's forecast was +36%)."""
    dense_src = Shape(rows=100_000, train_rows=80_000, test_rows=20_000, width=200, nnz_per_row=200.0, classes=2,
                      dense_source=True)
    for mode in ("memmap", "stream"):
        sparse, dense = parts(validate(mode=mode), SHAPE), parts(validate(dataset="dense", mode=mode), dense_src)
        assert sparse["io_build"] == pytest.approx(10_000 * (46 * 12 + 8)) and sparse["io_build_dense"] == 0
        assert dense["io_build_dense"] == 10_000 * 200 * 8 and dense["io_build"] == 0
        prepare = features(validate(dataset="dense", mode=mode), dense)["prepare"]
        assert f"io_build_dense_{mode}" in prepare and f"io_build_{mode}" not in prepare


def test_calibrate_with_reuse_fits_on_the_runs_already_measured(tmp_path, monkeypatch):
    from svmcore.engine import runner
    from svmcore.spec.status import RunStatus
    from svmcore.store.sqlite import Store

    configs = [validate(v) for v in [dict(rows=20_000, features=1 << 16), dict(rows=40_000, features=1 << 18),
                                      dict(rows=30_000, features=1 << 20)]]
    obs = _observations({"const_memory": 5.0, "load_data_float64": 1.0, "test": 2.0}, {"linear-svm+base": 120.0},
                        configs)
    store = Store(str(tmp_path / "calibration"))
    for cfg, summary in obs:
        store.finish_run(store.create_run(cfg.to_dict()), RunStatus.COMPLETED, summary)

    def no_new_runs(*a, **k):
        raise AssertionError("a measured config was run again")

    monkeypatch.setattr(runner, "Run", no_new_runs)
    cal = calib.calibrate(str(tmp_path), configs=[c.to_dict() for c in configs], reuse=True)
    assert cal.runs == 3 and cal.coefs == fit(obs).coefs
    assert calib.load_calibration(str(tmp_path)).runs == 3  # cached like a calibration that ran them
