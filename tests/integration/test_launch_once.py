"""One launch validates its knobs once, reads the data's scan once and forecasts once
(issue 41: three of each, in three dict shapes), and hands the worker that scan; the
forecast stored with the run is the one the warnings were made from. Counted around a
real `svmcore run` in-process and a real Lab launch (the worker's own process is not
counted here: what it receives is checked in its job file)."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import sys
import time

import pytest

from svmcore.data.files import make_dataset
from svmcore.data.sources import Source, scan
from svmcore.predict import calibration as calib
from svmcore.spec.config import validate

COUNTED = {"validations": ("svmcore.spec.config", "validate"), "scans": ("svmcore.data.sources", "scan"),
           "forecasts": ("svmcore.predict.model", "parts")}  # the memory model prices a run from its parts


def counters(monkeypatch) -> dict[str, list]:
    """Each counted function replaced, wherever svmcore or ui imported it by name, by one that
    counts its calls."""
    import svmcore.app.lab  # noqa: F401  (every launch path's modules, so their imported names are patched)
    import svmcore.cli  # noqa: F401

    calls: dict[str, list] = {}
    for what, (module, name) in COUNTED.items():
        original = getattr(importlib.import_module(module), name)
        calls[what] = seen = []

        def counting(*args, _original=original, _seen=seen, **kwargs):
            _seen.append(args[:1])
            return _original(*args, **kwargs)

        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").startswith(("svmcore", "ui")) and getattr(mod, name, None) is original:
                monkeypatch.setattr(mod, name, counting)
    return calls


def counts(calls: dict) -> dict[str, int]:
    return {k: len(v) for k, v in calls.items()}


@pytest.fixture
def calibrated_home(home):
    """A home with a calibration of this machine's fingerprint (the forecast is the memory model's):
    a floor of 120 MiB, and 100 bytes of RSS per byte of the training rows held in memory."""
    coefs = {"load": {"load_data_float64": 100.0}, "train": {"data_float64": 100.0}}
    cal = calib.Calibration({"linear-svm+base": 120.0}, coefs, calib.fingerprint(), 0.0, 1, {})
    with open(calib.calibration_path(home), "w") as f:
        json.dump(cal.to_dict(), f)
    return home


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A training file and a test file of its own (each scanned: two scans a launch at most)."""
    folder = tmp_path_factory.mktemp("data")
    train, test = str(folder / "train.svm"), str(folder / "test.svm")
    make_dataset("sparse-text", rows=3_000, features=4_096, nnz_per_row=20, seed=1, out=train)
    make_dataset("sparse-text", rows=1_000, features=4_096, nnz_per_row=20, seed=2, out=test)
    return train, test


def _job(home: str, run_id: int) -> dict:
    with open(os.path.join(home, "runs", str(run_id), "job.json")) as f:
        return json.load(f)


def _scans_of(train: str, test: str, cache: str) -> tuple[dict, dict]:
    cfg = validate(dataset=train, test_file=test)
    return (scan(Source(cfg), cache).to_dict(),
            scan(Source(dataclasses.replace(cfg, dataset=test, test_file=None)), cache).to_dict())


def test_svmcore_run_validates_scans_and_forecasts_once(calibrated_home, files, monkeypatch, capsys):
    from svmcore.cli import main

    train, test = files
    calls = counters(monkeypatch)
    code = main(["run", "--home", calibrated_home, "--dataset", train, "--test-file", test, "--epochs=1",
                 "--memory-cap-mb=150", "--cap-kind=rlimit", "--json"])
    out, err = capsys.readouterr()
    # once each: the training file and the test file are each read once
    assert counts(calls) == {"validations": 1, "scans": 2, "forecasts": 1}, calls
    assert code in (0, 3), err  # (completed, or out of memory as warned)
    summary = json.loads(out.strip().splitlines()[-1])
    stored = summary["prediction"]["predicted_peak_mb"]
    assert stored > 150  # the training rows' ~0.5 MiB at 100 bytes per byte, above the floor
    assert f"forecast to peak at {stored:,.0f} MiB" in err  # the warning and the stored forecast are one
    job = _job(calibrated_home, summary["run_id"])
    assert (job["scan"], job["test_scan"]) == _scans_of(train, test, os.path.join(calibrated_home, "cache"))


def test_a_lab_launch_validates_scans_and_forecasts_once(calibrated_home, files, monkeypatch):
    from svmcore.app.lab import Lab

    train, test = files
    monkeypatch.setenv("SVMCORE_DATA_DIRS", os.path.dirname(train))  # the Lab opens files of its data folders only
    lab = Lab(calibrated_home)
    calls = counters(monkeypatch)
    run_id = lab.runs.launch({"dataset": train, "test_file": test, "epochs": 1})
    assert counts(calls) == {"validations": 1, "scans": 2, "forecasts": 1}, calls
    forecast = lab.runs.view(run_id).prediction
    deadline = time.monotonic() + 300
    while lab.runs.view(run_id).is_live and time.monotonic() < deadline:
        time.sleep(0.2)
    view = lab.runs.view(run_id)
    assert view.status.value == "completed", view.summary
    assert view.summary.prediction == forecast  # the one record, kept as it was made
    job = _job(calibrated_home, run_id)
    assert (job["scan"], job["test_scan"]) == _scans_of(train, test, os.path.join(calibrated_home, "cache"))
