"""Train offline, serve light (issue 21), on real runs: a run trained through the CLI
exports its model; ``svmcore predict`` scores a file with it in a child process that
loads only numpy and the native library, reproduces the training process's own scores
on the same rows, and reports that process's exact peak. Bad input exits 2 with one
clear line."""

import json
import os

import numpy as np
import pytest

from svmcore.data.files import make_dataset
from tests.conftest import cli, two_at_a_time

HEAVY = ("scipy", "sklearn", "threadpoolctl", "pandas", "joblib")
SOLVERS = {"sklearn": (), "ftrl": (), "native": ("--parser=native", "--mode=stream")}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve")
    whole = str(folder / "all.svm")
    make_dataset("sparse-text", rows=8000, features=1 << 14, nnz_per_row=20, seed=4, out=whole)
    with open(whole, "rb") as f:
        lines = f.readlines()
    paths = {"train": str(folder / "train.svm"), "test": str(folder / "test.svm")}
    for name, part in (("train", lines[:6000]), ("test", lines[6000:])):
        with open(paths[name], "wb") as f:
            f.writelines(part)
    return paths


@pytest.fixture(scope="module")
def shome(tmp_path_factory):
    return str(tmp_path_factory.mktemp("serve-home"))


def _train(home, files, *flags):
    proc = cli("run", f"--dataset={files['train']}", f"--test-file={files['test']}", "--epochs=2",
               "--batch-size=256", "--json", *flags, home=home, check=0)
    s = json.loads(proc.stdout.strip().splitlines()[-1])
    assert s["status"] == "completed", s.get("error")
    return s


@pytest.fixture(scope="module")
def runs(shome, files):
    got = two_at_a_time(_train, [(shome, files, f"--solver={solver}", *flags) for solver, flags in SOLVERS.items()])
    return dict(zip(SOLVERS, got))


def _predict(home, *args, check=0):
    return cli("predict", *args, home=home, check=check)


@pytest.mark.slow
@pytest.mark.parametrize("solver", list(SOLVERS))
def test_served_predictions_are_the_training_process_own(shome, files, runs, solver, tmp_path):
    run = runs[solver]
    export = run["model_export"]
    assert export["exported"] and export["check"]["vs_training"]["changed_predictions"] == 0
    out = str(tmp_path / "pred.txt")
    proc = _predict(shome, "--model", str(run["run_id"]), "--data", files["test"], "--out", out, "--scores", "--json")
    s = json.loads(proc.stdout.strip().splitlines()[-1])
    # the same rows as the run's final evaluation: the same accuracy, to the last row
    assert s["rows"] == run["test_rows"] == 2000
    assert s["accuracy"] == run["accuracy"]
    labels, scores = [], []
    for line in open(out):
        label, score = line.rstrip("\n").split("\t")
        labels.append(float(label))
        scores.append(float(score))
    # the training process's own scores on the first test rows, written beside the model
    own = np.load(os.path.join(export["folder"], "check_scores.npy"))[:, 0]
    served = np.array(scores[:own.shape[0]])
    tol = 1e-5 if export["dtype"] == "float32" else 1e-9
    assert np.abs(served - own).max() <= tol * max(1.0, np.abs(own).max())
    assert np.array_equal(np.array(labels[:own.shape[0]]), np.where(own > 0, 1.0, -1.0))
    # the serving process's own exact peak, below the training process's
    assert s["peak_source"].endswith("exact") and 0 < s["floor_mb"] <= s["peak_mb"]
    assert s["peak_mb"] < run["peak_rss_mb"] or solver == "native"
    assert s["model"]["model_bytes"] == export["model_bytes"]


def test_the_serving_process_loads_only_numpy_and_the_native_library(shome, files, runs):
    from svmcore.app.serving import serve

    s = serve(shome, runs["sklearn"]["run_id"], files["test"], out=os.devnull, list_modules=True)
    heavy = [m for m in s["modules"] if m.split(".")[0] in HEAVY]
    assert heavy == []
    assert "numpy" in s["modules"] and "svmcore.data.native" in s["modules"]


def test_ftrl_with_strong_l1_exports_a_sparse_model_that_serves_the_same(shome, files, tmp_path):
    run = _train(shome, files, "--solver=ftrl", "--l1=5")
    export = run["model_export"]
    assert export["storage"] == "sparse" and export["nonzero_weights"] < (1 << 14) // 4
    assert export["model_bytes"] < export["sizes"]["dense_float32"]
    proc = _predict(shome, "--model", str(run["run_id"]), "--data", files["test"], "--out", str(tmp_path / "p"),
                    "--json")
    assert json.loads(proc.stdout.strip().splitlines()[-1])["accuracy"] == run["accuracy"]


def test_a_hashed_run_is_served_with_the_same_hashing(shome, files):
    run = _train(shome, files, "--solver=native", "--hashing-bits=10")
    proc = _predict(shome, "--model", str(run["run_id"]), "--data", files["test"], "--json")
    assert json.loads(proc.stderr.strip().splitlines()[-1])["accuracy"] == run["accuracy"]
    assert len(proc.stdout.splitlines()) == 2000  # the predictions on stdout, the summary on stderr


def _refused(proc, *words):
    assert proc.returncode == 2, (proc.stdout[-500:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for w in words:
        assert w in proc.stderr, proc.stderr


def test_bad_input_gets_one_clear_line_and_exit_2(shome, files, runs, tmp_path):
    rid = str(runs["native"]["run_id"])
    _refused(_predict(shome, "--model", "9999", "--data", files["test"], check=None), "no run with id 9999")
    _refused(_predict(shome, "--model", rid, "--data", str(tmp_path / "none.svm"), check=None), "no such file")
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:0.5\n# a comment\n-1 3:abc\n")
    _refused(_predict(shome, "--model", rid, "--data", str(bad), check=None), "bad.svm, line 3", "abc")
    wide = tmp_path / "wide.svm"
    wide.write_text("1 1:0.5\n-1 20000:1\n")
    _refused(_predict(shome, "--model", rid, "--data", str(wide), check=None), "wide.svm, line 2",
             "feature 20,000", "16,384 features", "--hashing-bits")


def test_a_model_that_is_not_exportable_says_so_and_its_distilled_student_is_served(shome, files, tmp_path):
    teacher = ("--model=kernel-approx", "--n-components=64", "--epochs=1")
    run, distilled = two_at_a_time(_train, [(shome, files, *teacher), (shome, files, *teacher, "--distill")])
    export = {k: v for k, v in run["model_export"].items() if v is not None}  # every key is written, null if unknown
    assert export == {"exported": False, "reason": run["model_export"]["reason"]}
    _refused(_predict(shome, "--model", str(run["run_id"]), "--data", files["test"], check=None),
             f"run {run['run_id']} has no exported model", "kernel-approx models are not exportable yet")
    # distill: the teacher trains as before (the same model: same transform, rows and order), then a
    # linear-svm student on its predicted classes, in a phase of its own; the run's model is the student's
    d = distilled["distillation"]
    assert [p["name"] for p in distilled["phases"]][-3:] == ["train", "distill", "evaluate"]
    assert d["teacher"]["model"] == "kernel-approx" and d["student"]["model"] == "linear-svm"
    assert abs(d["teacher"]["accuracy"] - run["accuracy"]) <= 0.002, (d["teacher"], run["accuracy"])
    assert distilled["accuracy"] == d["student"]["accuracy"] != d["teacher"]["accuracy"]
    assert 0.5 < d["agreement"] <= 1 and d["student"]["model_bytes"] > 0 < d["teacher"]["model_bytes"]
    assert distilled["weights"] == 1 << 14  # the student's: one weight per input column
    export = distilled["model_export"]
    assert export["exported"] and export["check"]["vs_training"]["changed_predictions"] == 0
    proc = _predict(shome, "--model", str(distilled["run_id"]), "--data", files["test"], "--out",
                    str(tmp_path / "p"), "--json")
    served = json.loads(proc.stdout.strip().splitlines()[-1])
    assert served["accuracy"] == distilled["accuracy"] and served["peak_mb"] < distilled["peak_rss_mb"]
    assert served["model"]["model"] == "linear-svm" and served["model"]["distilled_from"] == "kernel-approx"
