"""Distillation on Learn and in the claims table: measured by its own benchmark
(bench/results/distill.json), its figures read from that file."""

from svmcore.app.reference import bench_reference
from svmcore.app.remedies import remedy
from svmcore.app.remedy_results import distill_lessons, distill_row
from tests.helpers import learn_reading

MiB = 2**20


def _case(name, teacher, student, alone, peak, served, lower):
    return {"case": name, "teacher": {"model": "mlp-numpy", "accuracy": teacher, "model_bytes": 96 * MiB,
                                      "serve_lower_bound_mb": lower},
            "student": {"accuracy": student, "model_bytes": 1.5 * MiB, "exported_bytes": 0.25 * MiB},
            "labels_alone": {"accuracy": alone, "peak_mb": 180.0}, "agreement": 0.848,
            "run": {"peak_mb": peak}, "served": {"peak_mb": served}}


BENCH = {"cases": [_case("wide", 0.7362, 0.7430, 0.7590, 353.0, 36.0, 222.0),
                   _case("dense", 0.7767, 0.7795, 0.7920, 423.0, 36.4, 127.0)]}


def test_the_claims_row_gives_training_and_serving_peaks_and_both_accuracy_gaps():
    row = distill_row(remedy("distill"), BENCH)
    assert row["run's exact peak (MiB)"] == ("training 353, 423 · serving the student 36, 36 (the teacher at least "
                                             "222, 127)")
    assert row["accuracy (balanced)"] == ("student vs teacher +0.3 pt to +0.7 pt; vs the student on labels alone "
                                          "-1.6 pt to -1.3 pt")
    assert distill_row(remedy("distill"), None)["verdict"] == "not measured yet (python bench/distill.py)"


def test_the_lessons_give_each_case_its_figures():
    lines = distill_lessons(BENCH)
    assert lines[0] == ("wide: teacher 0.7362, distilled student 0.7430 (agrees on 84.8%), the same student on the "
                        "labels 0.7590; trained in 353 MiB (the label-trained student 180); the student serves in 36 "
                        "MiB from a 256.0 KiB model, the teacher would need at least 222 MiB (96.00 MiB of arrays over "
                        "its libraries' floor)")


def test_learn_reads_the_distill_result_file(tmp_path):
    learn = learn_reading(tmp_path, "distill", BENCH)
    assert learn.measured_by_bench(remedy("distill")) == distill_lessons(BENCH)


def test_the_committed_result_file_gives_the_row_its_figures():
    bench = bench_reference("distill")
    row = distill_row(remedy("distill"), bench)
    assert row["measured on"] == "reference machine" and len(distill_lessons(bench)) == len(bench["cases"]) >= 4
    assert f"training {bench['cases'][0]['run']['peak_mb']:,.0f}" in row["run's exact peak (MiB)"]
