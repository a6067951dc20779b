"""Train offline, serve light on Learn and in the claims table: measured by its own
benchmark (bench/serve.py, which writes what Learn reads into the package's reference
data), not by a before/after pair of runs; the doctor says it does not lower a
training run's peak."""

import pytest

from bench.serve import reference
from svmcore.app.doctor import NOT_FOR_ONE_RUN
from svmcore.app.remedies import remedy
from svmcore.app.remedy_results import measured_row
from svmcore.spec.errors import ConfigError
from tests.helpers import learn_reading

BENCH = {"date": "2026-12-02", "description": "AMD EPYC, 2 CPUs", "seconds": 60, "rows": 200_000,
         "test_rows": 50_000, "runs": [
    {"solver": "sklearn", "train_peak_mb": 420.0, "serve_peak_mb": 38.2, "serve_floor_mb": 33.7,
     "serve_rows_per_s": 61_000.0, "train_samples_per_s": 250_000.0, "train_accuracy": 0.85,
     "serve_accuracy": 0.85, "model_bytes": 4 * 2**20, "storage": "dense", "dtype": "float32",
     "nonzero_weights": 900_000},
    {"solver": "ftrl, l1=2", "train_peak_mb": 500.0, "serve_peak_mb": 34.0, "serve_floor_mb": 33.7,
     "serve_rows_per_s": 80_000.0, "train_samples_per_s": 300_000.0, "train_accuracy": 0.8,
     "serve_accuracy": 0.8, "model_bytes": 12_000, "storage": "sparse", "dtype": "float32",
     "nonzero_weights": 1000}]}


def test_the_claims_row_gives_training_and_serving_peaks_and_each_model_size():
    row = measured_row(remedy("serve"), reference(BENCH))
    assert row["run's exact peak (MiB)"] == "trained 420–500 → served 34–38"
    assert row["accuracy (balanced)"] == "served = trained, every solver"
    assert "sklearn 4.00 MiB (dense float32)" in row["verdict"] and "ftrl, l1=2 0.01 MiB (sparse float32)" in row["verdict"]
    assert row["measured on"] == "reference machine"
    assert measured_row(remedy("serve"), None)["verdict"] == "not measured yet (python bench/serve.py)"


def test_the_lessons_say_trained_in_serves_in_per_solver():
    first = reference(BENCH).figures["lessons"][0]
    assert first.startswith("sklearn: trained in 420 MiB, serves in 38 MiB (its floor 34), 4.00 MiB model")
    assert "as in training" in first


def test_learn_shows_the_committed_benchmark_and_refuses_to_queue_runs_for_it(tmp_path):
    learn = learn_reading(tmp_path, reference(BENCH))
    finding = learn.measured_by_bench(remedy("serve"))
    assert finding.lessons == tuple(reference(BENCH).figures["lessons"])
    assert finding.caption == ("Measured by `python bench/serve.py` on the reference machine (AMD EPYC, 2 CPUs, "
                               "2026-12-02; exact peaks; see docs/benchmarks.md):")
    assert learn.measured_by_bench(remedy("batch")) is None
    assert learn.measured_by_bench(remedy("pool")) == ("Not measured yet: `python bench/memory_pool.py`.", ())
    with pytest.raises(ConfigError, match="bench/serve.py measures it"):
        learn.run_remedy("serve")


def test_the_doctor_says_serving_does_not_lower_a_training_peak():
    assert "not of training" in NOT_FOR_ONE_RUN["serve"]
