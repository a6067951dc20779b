"""doctor's three kinds of trouble on constructed summaries: a transient peak in a phase,
growth pass after pass (and the pass in which it meets the cap or budget), a floor; and the
remedies it ranks for growth (those that stop accumulation)."""

from __future__ import annotations

import time

from svmcore.app.doctor import FLOOR, GROWTH, PEAK, diagnose, text
from svmcore.spec.config import validate
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.records import RunRecord

PHASES = {"imports": 128.0, "prepare": 130.0, "load": 170.0, "train": 190.0, "evaluate": 192.0}


def _record(retained: list[float] | None, phases: dict = PHASES, status: RunStatus = RunStatus.COMPLETED,
            config: dict | None = None, **summary) -> RunRecord:
    spans = [{"name": n, "start_s": 0.0, "end_s": 1.0, "wall_s": 1.0, "peak_rss_mb": v} for n, v in phases.items()]
    passes = None if retained is None else [{"epoch": i + 1, "rss_mb": r + 45.0, "anon_mb": r}
                                            for i, r in enumerate(retained)]
    s = {"status": status.value, "phases": spans, "peak_rss_mb": max(phases.values()),
         "peak_phase": max(phases, key=phases.get), "floor_mb": phases["imports"], "passes": passes, **summary}
    cfg = validate({"rows": 20_000, "epochs": len(retained or [1]), **(config or {})}).to_dict()
    return RunRecord(7, time.time(), time.time(), status, cfg, RunSummary.from_dict(s), None, None, None, None, None,
                     None, None, None)


def test_a_run_that_grows_is_told_growth_with_the_pass_it_meets_the_budget():
    rec = _record([120.0, 128.0, 136.0, 144.0], {**PHASES, "evaluate": 201.0})
    d = diagnose(rec, 220, None, None)
    t = d["trouble"]
    assert t["kind"] == GROWTH and t["per_pass_mb"] == 8.0 and t["passes"] == 4
    # 201 MiB after pass 4, +8 a pass: 225 in pass 7
    assert t["reach"] == ("+8.0 MiB a pass (8.0 to 8.0 over 4 passes): the 220 MiB budget is reached in pass 7, "
                          "beyond the run's 4 passes")
    assert [r["remedy"] for r in d["growth_remedies"]] == ["gc"]
    words = text(d)
    assert "Its trouble is growth, memory retained pass after pass (a cache or a leak)" in words
    assert "Remedies that stop accumulation, cheapest first:\n  1. Periodic gc.collect(): gc every 10 — stops" in words


def test_growth_meets_an_oom_runs_cap_in_the_pass_it_died_in():
    rec = _record([120.0, 128.0, 136.0, 144.0], {**PHASES, "train": 300.0}, RunStatus.OOM, {"epochs": 10},
                  phase="train", cap="rlimit", cap_mb=300.0)
    d = diagnose(rec, None, None, None)
    assert d["trouble"]["reach"].endswith("the 300 MiB cap was reached in pass 5, where the run ran out of memory")


def test_growth_with_gc_already_on_has_no_knob_to_stop_it():
    rec = _record([120.0, 128.0, 136.0, 144.0], config={"gc_every": 10})
    d = diagnose(rec, None, None, None)
    assert d["trouble"]["kind"] == GROWTH and d["growth_remedies"] == []
    assert "no cap or budget to meet (give --budget to see when it would)" in d["trouble"]["reach"]
    assert "No knob of the list stops this accumulation for this config" in text(d)


def test_a_peak_well_above_what_the_run_retained_is_a_transient_peak():
    rec = _record([112.0, 112.0, 112.1, 112.0], {**PHASES, "load": 240.0})  # retained RSS 157
    t = diagnose(rec, 200, None, None)["trouble"]
    assert t["kind"] == PEAK and t["above_mb"] == 83.0
    assert t["words"].startswith("a transient peak in load: its exact peak of 240 MiB is 83 MiB above the 157 MiB")


def test_a_peak_within_noise_of_what_the_run_held_throughout_is_a_floor():
    rec = _record([140.0, 140.0, 140.1, 140.1])  # retained RSS 185, peak 192 (3.6% above)
    t = diagnose(rec, 150, None, None)["trouble"]
    assert t["kind"] == FLOOR and "128 MiB of it the libraries' floor" in t["words"]


def test_without_a_pass_the_kind_is_not_told_and_an_old_run_says_so():
    t = diagnose(_record([], status=RunStatus.OOM, phase="load", cap="rlimit", cap_mb=170.0), None, None,
                 None)["trouble"]
    assert t["kind"] is None and "ended before its first pass did" in t["why_unknown"]
    old = diagnose(_record(None), 150, None, None)
    assert old["trouble"] == {"kind": None, "growth": "retained memory not recorded (a run stored before it was)"}


def test_the_short_answer_of_a_growing_run_says_so_and_puts_the_remedies_that_stop_it_first():
    from svmcore.app.fit import diagnosis_answer

    rec = _record([120.0, 128.0, 136.0, 144.0], {**PHASES, "evaluate": 201.0})
    answer = diagnosis_answer(diagnose(rec, 190, None, None))
    assert answer.verdict.endswith("It grows pass after pass (a cache or a leak): +8.0 MiB a pass (8.0 to 8.0 over 4 "
                                   "passes): the 190 MiB budget is reached in pass 3, one of the run's own 4 passes.")
    assert answer.remedies[0].title == "Periodic gc.collect()" and answer.remedies[0].change == {"gc_every": 10}
    assert answer.remedies[0].text.startswith("gc every 10: stops what reference cycles hold")
