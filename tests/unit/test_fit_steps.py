"""Issue 40's fit and doctor, on stored figures and the memory model (no process): a step is
taken only where the forecast peak falls, the words say what the numbers are."""

from __future__ import annotations

import time

from svmcore.app.fit import _end
from svmcore.spec.config import validate
from svmcore.store.records import RunRecord, RunStatus


def _record(status: RunStatus, config: dict, phases: dict, run_id: int = 7, **summary) -> RunRecord:
    spans = [{"name": n, "start_s": 0.0, "end_s": 1.0, "wall_s": 1.0, "peak_rss_mb": v} for n, v in phases.items()]
    s = {"status": status.value, "phases": spans, "peak_rss_mb": max(phases.values()),
         "peak_phase": max(phases, key=phases.get), "floor_mb": phases["imports"], **summary}
    return RunRecord(run_id, time.time(), time.time(), status, validate(config).to_dict(), s, None, None, None, None,
                     None, None, None, None)


def _attempt(run_id: int, status: str, samples_per_s: float, accuracy: float = 0.9) -> dict:
    return {"run_id": run_id, "status": status, "accuracy": accuracy, "samples_per_s": samples_per_s,
            "change": {"changes": []}}


def test_the_fit_summary_says_faster_for_a_faster_run_and_slower_for_a_slower_one():
    faster = _end(True, "fits", [_attempt(1, "completed", 1000.0), _attempt(2, "completed", 1300.0)], ["x"], 100)
    assert "1.3x faster than run 1" in faster["summary"] and "slower" not in faster["summary"], faster["summary"]
    slower = _end(True, "fits", [_attempt(1, "completed", 1300.0), _attempt(2, "completed", 1000.0)], ["x"], 100)
    assert "1.3x slower than run 1" in slower["summary"], slower["summary"]
    same = _end(True, "fits", [_attempt(1, "completed", 1000.0), _attempt(2, "completed", 1010.0)], ["x"], 100)
    assert "as fast as run 1" in same["summary"], same["summary"]


def _libsvm(path, rows: int, width: int, per_row: int) -> str:
    """An a9a-like file: svmlight, binary features, no extension."""
    import random

    rng = random.Random(1)
    with open(path, "w") as f:
        for i in range(rows):
            ids = sorted(rng.sample(range(1, width + 1), per_row))
            f.write(("+1" if i % 4 == 0 else "-1") + " " + " ".join(f"{j}:1" for j in ids) + "\n")
    return str(path)


def test_doctor_says_folded_only_where_hashing_was_applied(tmp_path):
    from svmcore.app.doctor import diagnose, moves

    a9a = _libsvm(tmp_path / "a9a", 2000, 123, 14)
    narrow = {m.key: m for m in moves(validate(dataset=a9a), 123)}["hashing"]
    assert narrow.change is None and "folded" not in narrow.reason, narrow.reason
    assert "123 columns" in narrow.reason and "never hashed" in narrow.reason, narrow.reason
    folded = {m.key: m for m in moves(validate(dataset=a9a, hashing_bits=7), 128)}["hashing"]
    assert folded.change is None and folded.reason == "the columns are already folded to 2^7"
    rec = _record(RunStatus.COMPLETED, {"dataset": a9a}, {"imports": 137.0, "load": 150.0, "train": 152.0})
    useless = {r["remedy"]: r["why"] for r in diagnose(rec, 140, None, None)["useless"]}
    assert "folded" not in useless["hashing"] and "123 columns" in useless["hashing"], useless["hashing"]


def test_a_peak_just_above_the_budget_is_not_rounded_to_it():
    from svmcore.app.doctor import diagnose
    from svmcore.app.fit import fit

    rec = _record(RunStatus.COMPLETED, {"rows": 20_000}, {"imports": 128.0, "load": 140.0, "train": 143.3})
    verdict = diagnose(rec, 143, None, None)["verdict"]
    assert "peaked at 143.3 MiB in train, 0.3 MiB above the budget of 143.0 MiB" in verdict, verdict
    said: list[str] = []
    launched = []

    def launch(cfg, parent, change):
        launched.append(cfg)
        return _record(RunStatus.COMPLETED, cfg.to_dict(), {"imports": 128.0, "load": 150.0, "evaluate": 160.0},
                       run_id=len(launched), accuracy=0.9, samples_per_s=1000.0)

    fit({"rows": 20_000, "epochs": 1}, 167, launch, None, None, progress=said.append)  # forecast 167.3 MiB
    assert said and all(" 167 MiB in evaluate > budget 167" not in s for s in said), said
    assert any("forecast 167.3 MiB in evaluate > budget 167.0" in s for s in said), said


def test_a_forecast_just_above_the_cap_is_not_rounded_to_it():
    from svmcore.predict.launch import launch_warnings

    forecast = {"peak_mb": 143.4, "peak_phase": "train", "lower_bound": False, "parts": {"model": 10.0},
                "train_s": None, "time_basis": "calibrated", "floor_mb": 100.0, "floor_basis": "measured"}
    warns = launch_warnings(validate(memory_cap_mb=143), forecast, None)
    assert any("peak at 143.4 MiB" in w and "memory cap is 143 MiB" in w for w in warns), warns
