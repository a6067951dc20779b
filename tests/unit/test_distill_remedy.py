"""Distillation on Learn and in the claims table: measured by its own benchmark
(bench/distill.py, which writes what Learn reads into the package's reference data)."""

from bench.distill import reference
from svmcore.app.reference import read
from svmcore.app.remedies import remedy
from svmcore.app.remedy_results import measured_row
from tests.helpers import learn_reading

MiB = 2**20


def _case(name, teacher, student, alone, peak, served, lower):
    return {"case": name, "teacher": {"model": "mlp-numpy", "accuracy": teacher, "model_bytes": 96 * MiB,
                                      "serve_lower_bound_mb": lower},
            "student": {"accuracy": student, "model_bytes": 1.5 * MiB, "exported_bytes": 0.25 * MiB},
            "labels_alone": {"accuracy": alone, "peak_mb": 180.0}, "agreement": 0.848,
            "run": {"peak_mb": peak}, "served": {"peak_mb": served}}


BENCH = {"date": "2026-12-03", "description": "Intel Xeon", "seconds": 349, "cases": [_case("wide", 0.7362, 0.7430, 0.7590, 353.0, 36.0, 222.0),
                   _case("dense", 0.7767, 0.7795, 0.7920, 423.0, 36.4, 127.0)]}


def test_the_claims_row_gives_training_and_serving_peaks_and_both_accuracy_gaps():
    row = measured_row(remedy("distill"), reference(BENCH))
    assert row["run's exact peak (MiB)"] == ("training 353, 423 · serving the student 36, 36 (the teacher at least "
                                             "222, 127)")
    assert row["accuracy (balanced)"] == ("student vs teacher +0.3 pt to +0.7 pt; vs the student on labels alone "
                                          "-1.6 pt to -1.3 pt")
    assert measured_row(remedy("distill"), None)["verdict"] == "not measured yet (python bench/distill.py)"


def test_the_lessons_give_each_case_its_figures():
    lines = reference(BENCH).figures["lessons"]
    assert lines[0] == ("wide: teacher 0.7362, distilled student 0.7430 (agrees on 84.8%), the same student on the "
                        "labels 0.7590; trained in 353 MiB (the label-trained student 180); the student serves in 36 "
                        "MiB from a 256.0 KiB model, the teacher would need at least 222 MiB (96.00 MiB of arrays over "
                        "its libraries' floor)")


def test_learn_reads_the_distill_result_file(tmp_path):
    learn = learn_reading(tmp_path, reference(BENCH))
    assert learn.measured_by_bench(remedy("distill")).lessons == tuple(reference(BENCH).figures["lessons"])


def test_the_committed_reference_gives_the_row_its_figures():
    ref = read("distill")
    row = measured_row(remedy("distill"), ref)
    assert row["measured on"] == "reference machine" and len(ref.figures["lessons"]) >= 4
    assert row["run's exact peak (MiB)"].startswith("training ")
