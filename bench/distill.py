"""Distillation (issue 21): a teacher (kernel approximation, or the numpy MLP) trained with
``--distill``, which then trains a linear-svm student on the teacher's predicted classes;
against it, the same student trained on the labels alone. Per case: the teacher's, the
distilled student's and the label-trained student's accuracy on the same test file, how
often teacher and student agree, the training run's exact peak (and its train and distill
phases'), the models' bytes, and serving: the student served by ``svmcore predict`` in a
lean process (exact peak, rows/s, accuracy), the teacher's lower bound where it is not
exportable (its run's measured floor, the libraries it needs, plus its arrays).

    python bench/distill.py [--out bench/results] [--render]

Every run goes through the normal CLI, one at a time; files from ``svmcore data make``
(seed 0), cut into a training file and a test file of later rows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.remedies import describe, machine, rerender, write_result  # noqa: E402
from bench.serve import cli, cut, split  # noqa: E402
from svmcore.app.reference import Reference  # noqa: E402
from svmcore.spec.outcomes import size_text  # noqa: E402

MiB = 2**20
# (name, data make args, train rows, test rows, teacher knobs, shared knobs)
CASES = (
    ("dense, kernel-approx teacher", ("dense",), 40_000, 10_000,
     ("--model=kernel-approx", "--n-components=256"), ("--epochs=3",)),
    ("dense, mlp-numpy teacher", ("dense",), 40_000, 10_000,
     ("--model=mlp-numpy", "--hidden=256"), ("--epochs=3",)),
    ("sparse-text, kernel-approx teacher", ("sparse-text",), 50_000, 10_000,
     ("--model=kernel-approx", "--n-components=256"), ("--epochs=2",)),
    ("sparse-text 2^16 columns, mlp-numpy teacher", ("sparse-text", "--features=65536"), 30_000, 10_000,
     ("--model=mlp-numpy", "--hidden=64"), ("--epochs=2",)),
    ("digits (scikit-learn's), kernel-approx teacher", ("digits",), 1_400, 397,
     ("--model=kernel-approx", "--n-components=256"), ("--epochs=10", "--batch-size=128")),
    ("digits (scikit-learn's), mlp-numpy teacher", ("digits",), 1_400, 397,
     ("--model=mlp-numpy", "--hidden=64"), ("--epochs=10", "--batch-size=128")),
)


def files(folder: str, make: tuple, rows: int, test_rows: int) -> tuple[str, str]:
    if make == ("digits",):  # real data a package ships: 1,797 8x8 images, 10 classes, pixels scaled to [0, 1]
        from sklearn.datasets import dump_svmlight_file, load_digits
        whole = os.path.join(folder, "all.svm")
        X, y = load_digits(return_X_y=True)
        dump_svmlight_file(X[:rows + test_rows] / 16.0, y[:rows + test_rows], whole, zero_based=False)
        return cut(folder, whole, rows)
    return split(folder, rows, test_rows, make)


def _phase(run: dict, name: str) -> float | None:
    return next((p["peak_rss_mb"] for p in run["phases"] if p["name"] == name), None)


def teacher_bound(teacher: dict, run_floor_mb: float, lean_floor_mb: float) -> dict:
    """The teacher's serving memory, at least: the floor of the libraries that score it (scikit-learn's for a
    kernel approximation, whose transform is scikit-learn's: the training run's measured floor; numpy alone for
    mlp-numpy: the serving process's measured floor) plus its arrays."""
    floor, libs = ((lean_floor_mb, "numpy (the serving process's floor)") if teacher["model"] == "mlp-numpy"
                   else (run_floor_mb, "scikit-learn (the training run's floor)"))
    return {"serve_floor_mb": floor, "serve_libraries": libs,
            "serve_lower_bound_mb": floor + teacher["model_bytes"] / MiB}


def measure(home: str, train: str, test: str, teacher: tuple, shared: tuple) -> dict:
    data = (f"--dataset={train}", f"--test-file={test}", "--seed=0", *shared)
    d = cli(home, "run", *data, *teacher, "--distill")
    if d["status"] != "completed":
        raise RuntimeError(f"the distilled run ended {d['status']}: {d.get('error')}")
    alone = cli(home, "run", *data)  # the student alone: linear-svm on the labels, the same knobs
    served = cli(home, "predict", "--model", str(d["run_id"]), "--data", test, "--out", os.devnull)
    dist = d["distillation"]
    return {
        "teacher": {**dist["teacher"], **teacher_bound(dist["teacher"], d["floor_mb"], served["floor_mb"])},
        "student": {**dist["student"], "exported_bytes": d["model_export"]["model_bytes"],
                    "storage": d["model_export"]["storage"], "dtype": d["model_export"]["dtype"]},
        "agreement": dist["agreement"],
        "run": {"run_id": d["run_id"], "peak_mb": d["peak_rss_mb"], "peak_phase": d["peak_phase"],
                "train_peak_mb": _phase(d, "train"), "distill_peak_mb": _phase(d, "distill"), "wall_s": d["wall_s"],
                "distill_wall_s": next(p["wall_s"] for p in d["phases"] if p["name"] == "distill")},
        "labels_alone": {"accuracy": alone["accuracy"], "balanced_accuracy": alone["balanced_accuracy"],
                         "peak_mb": alone["peak_rss_mb"], "wall_s": alone["wall_s"]},
        "served": {"peak_mb": served["peak_mb"], "floor_mb": served["floor_mb"], "rows_per_s": served["rows_per_s"],
                   "accuracy": served["accuracy"], "rows": served["rows"]},
    }


def _signed_pt(x: float) -> str:
    return f"{x * 100:+.1f} pt"


def reference(r: dict) -> Reference:
    """What Learn shows of the results: the claims row (per case the teacher's and the
    students' accuracy, the training run's exact peak and the serving figures) and a
    sentence per case."""
    cases = r["cases"]
    gaps = [c["student"]["accuracy"] - c["teacher"]["accuracy"] for c in cases]
    vs_labels = [c["student"]["accuracy"] - c["labels_alone"]["accuracy"] for c in cases]
    peaks = lambda values: ", ".join(f"{v:,.0f}" for v in values)  # noqa: E731
    row = {
        "setup": f"{len(cases)} teachers (kernel-approx, mlp-numpy) on generated files and scikit-learn's digits",
        "run's exact peak (MiB)": f"training {peaks(c['run']['peak_mb'] for c in cases)} · serving the student "
                                  f"{peaks(c['served']['peak_mb'] for c in cases)} (the teacher at least "
                                  f"{peaks(c['teacher']['serve_lower_bound_mb'] for c in cases)})",
        "accuracy (balanced)": f"student vs teacher {_signed_pt(min(gaps))} to {_signed_pt(max(gaps))}; vs the "
                               f"student on labels alone {_signed_pt(min(vs_labels))} to {_signed_pt(max(vs_labels))}",
        "verdict": "serving memory falls to the student's; training memory rises (both models are held while the "
                   "student trains); the student keeps the teacher's accuracy only where its decisions are near-linear"}
    lessons = []
    for c in cases:
        t, s, a, sv = c["teacher"], c["student"], c["labels_alone"], c["served"]
        lessons.append(f"{c['case']}: teacher {t['accuracy']:.4f}, distilled student {s['accuracy']:.4f} (agrees on "
                       f"{c['agreement']:.1%}), the same student on the labels {a['accuracy']:.4f}; trained in "
                       f"{c['run']['peak_mb']:,.0f} MiB (the label-trained student {a['peak_mb']:,.0f}); the student "
                       f"serves in {sv['peak_mb']:,.0f} MiB from a {size_text(s['exported_bytes'])} model, the "
                       f"teacher would need at least {t['serve_lower_bound_mb']:,.0f} MiB ({size_text(t['model_bytes'])} "
                       "of arrays over its libraries' floor)")
    return Reference("distill", r["description"], r["date"], "python bench/distill.py", r["seconds"],
                     {"row": row, "lessons": lessons})


def markdown(r: dict) -> str:
    out = [f"# Distillation, {r['date']}", "",
           f"Machine: {r['description']}; load average {r['machine']['loadavg_before']} before, "
           f"{r['machine']['loadavg_after']} after; {r['seconds']} s in all.", "",
           "Each teacher trained with `--distill` (the student: linear-svm, scikit-learn's SGD, the run's epochs, "
           "on the teacher's predicted classes); the same student trained on the labels alone with the same knobs; "
           "all scored on the same test file of later rows. Peaks are exact (each process's VmHWM). The student is "
           "served by `svmcore predict` (numpy and the model only); the teacher is not exportable, so its serving "
           "figure is a lower bound: the measured floor of the libraries that score it (scikit-learn's for "
           "kernel-approx, the training run's floor; numpy alone for mlp-numpy, the serving process's floor) plus "
           "its arrays.", "",
           "| case | teacher acc | student (distilled) acc | student (labels alone) acc | agreement | "
           "training peak MiB (train / distill phase) | teacher model | student model (exported) | "
           "serving: student MiB (rows/s) | serving: teacher MiB, at least |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for c in r["cases"]:
        t, s, a, run, sv = c["teacher"], c["student"], c["labels_alone"], c["run"], c["served"]
        out.append(f"| {c['case']} | {t['accuracy']:.4f} | {s['accuracy']:.4f} | {a['accuracy']:.4f} | "
                   f"{c['agreement']:.1%} | {run['peak_mb']:,.0f} ({run['train_peak_mb']:,.0f} / "
                   f"{run['distill_peak_mb']:,.0f}) | {size_text(t['model_bytes'])} | "
                   f"{size_text(s['model_bytes'])} ({size_text(s['exported_bytes'])} {s['storage']} "
                   f"{s['dtype']}) | {sv['peak_mb']:,.0f} ({sv['rows_per_s']:,.0f}) | "
                   f"{t['serve_lower_bound_mb']:,.0f} |")
    out += ["", "Rows per case: " + "; ".join(f"{c['case']}: {c['train_rows']:,} training, {c['test_rows']:,} test"
                                             for c in r["cases"]) + ".", ""]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--render", action="store_true", help="only rewrite the .md from the existing .json")
    args = ap.parse_args()
    if args.render:
        return rerender(args.out, "distill", markdown, reference)
    load_before, t0 = os.getloadavg(), time.time()
    cases = []
    with tempfile.TemporaryDirectory(prefix="svmcore-distill-bench-") as folder:
        home = os.path.join(folder, "home")
        for name, make, rows, test_rows, teacher, shared in CASES:
            train, test = files(folder, make, rows, test_rows)
            cases.append({"case": name, "train_rows": rows, "test_rows": test_rows, "teacher_flags": list(teacher),
                          "flags": list(shared), **measure(home, train, test, teacher, shared)})
            print(json.dumps(cases[-1]), file=sys.stderr, flush=True)
    m = machine()
    m["loadavg_before"], m["loadavg_after"] = [round(x, 2) for x in load_before], [round(x, 2) for x in os.getloadavg()]
    result = {"date": time.strftime("%Y-%m-%d"), "machine": m, "description": describe(m),
              "seconds": round(time.time() - t0), "cases": cases}
    write_result(args.out, "distill", result, markdown(result), reference(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
