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
