"""The diagnosis's logic on stored figures: the phase that owned the peak, which
remedies act on it and which cannot, the ranking, and fit's stop when nothing is left."""

from __future__ import annotations

import time

from svmcore.app.doctor import diagnose, moves, text
from svmcore.app.fit import fit
from svmcore.app.reference import remedies_reference
from svmcore.spec.config import validate
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.records import RunRecord


def _record(status: RunStatus, config: dict, phases: dict, **summary) -> RunRecord:
    spans = [{"name": n, "start_s": 0.0, "end_s": 1.0, "wall_s": 1.0, "peak_rss_mb": v} for n, v in phases.items()]
    peak_phase = max(phases, key=phases.get)
    s = {"status": status.value, "phases": spans, "peak_rss_mb": max(phases.values()), "peak_phase": peak_phase,
         "floor_mb": phases["imports"], **summary}
    return RunRecord(7, time.time(), time.time(), status, validate(config).to_dict(), RunSummary.from_dict(s), None,
                     None, None, None, None, None, None, None)


def test_an_oom_run_is_diagnosed_in_the_phase_it_died_in():
    # died in load, although train (an earlier reading) never ran: the owner is where it died
    rec = _record(RunStatus.OOM, {"rows": 100_000, "epochs": 1, "memory_cap_mb": 190},
                  {"imports": 137.0, "prepare": 137.1, "load": 241.0}, phase="load", cap="cgroup", cap_mb=190.0)
    d = diagnose(rec, None, None, remedies_reference())
    assert d["owner"] == "load" and d["budget_mb"] == 190.0
    assert d["model"]["held_mb"]["libraries' floor"] == 128.0  # the reference floor: no calibration here
    assert "lower bound" in d["model"]["basis"]
    ranked = [r["remedy"] for r in d["remedies"]]
    assert ranked[:2] == ["memmap", "stream"]  # both predicted to fit; memmap costs less speed
    useless = {r["remedy"]: r["why"] for r in d["useless"]}
    assert useless["gc"] == "does not lower a load-phase peak (it acts on train, evaluate)"
    assert useless["sparse"] == "the rows are already sparse"
    assert "does not lower the peak" in useless["ftrl"]
    words = text(d)
    assert "Periodic gc.collect(): does not lower a load-phase peak" in words
    assert "measured on Learn (reference, 1M rows)" in words


def test_a_completed_run_within_its_budget_needs_no_remedy():
    rec = _record(RunStatus.COMPLETED, {"rows": 100_000}, {"imports": 137.0, "load": 240.0, "train": 238.0})
    d = diagnose(rec, 300, None, None)
    assert d["healthy"] and "within the budget of 300 MiB" in d["verdict"] and "remedies" not in d


def test_a_completed_run_over_the_budget_gets_the_remedies_of_its_peak_phase():
    rec = _record(RunStatus.COMPLETED, {"rows": 50_000, "mode": "stream", "representation": "dense",
                                        "hashing_bits": 12, "batch_size": 8192},
                  {"imports": 137.0, "prepare": 150.0, "load": 160.0, "train": 560.0, "evaluate": 500.0})
    d = diagnose(rec, 300, None, None)
    assert d["owner"] == "train" and "260 MiB above the budget" in d["verdict"]
    ranked = [r["remedy"] for r in d["remedies"]]
    assert {"batch", "sparse", "logging"} <= set(ranked)
    assert {r["remedy"] for r in d["useless"] if r["remedy"] in ("memmap", "stream")} == {"memmap", "stream"}


def test_each_remedy_says_why_it_cannot_apply():
    cfg = validate({"dataset": "dense", "rows": 5000, "model": "kernel-svm", "precision": "float16"})
    by_key = {m.key: m for m in moves(cfg)}
    assert by_key["model"].change == {"model": "kernel-approx"}
    assert by_key["precision"].change is None and "float16" in by_key["precision"].reason
    assert by_key["stream"].change is None and by_key["stream"].reason.startswith("not valid here")


def test_float32_model_state_is_offered_where_the_model_is_the_peak():
    """A linear run at 2^24 columns holds 256 MiB of weights and their average in its train phase:
    the model state remedy halves them (with the native solver where the run's keeps no float32
    state); a model without a linear model's state, or one already in float32, says why not."""
    rec = _record(RunStatus.COMPLETED, {"rows": 20_000, "features": 1 << 24, "epochs": 1},
                  {"imports": 137.0, "load": 150.0, "train": 420.0, "evaluate": 410.0})
    d = diagnose(rec, 350, None, None)
    step = next(r for r in d["remedies"] if r["remedy"] == "model_state")
    assert step["change"] == {"model_state": "float32", "solver": "native"}
    assert step["predicted_phase_saving_mb"] >= 128  # half of 256 MiB, at one byte of RSS per byte
    by_key = {m.key: m for m in moves(validate(model="mlp"))}
    assert by_key["model_state"].change is None and "no linear model" in by_key["model_state"].reason
    by_key = {m.key: m for m in moves(validate(solver="native", model_state="float32"))}
    assert "already float32" in by_key["model_state"].reason
    assert {m.key: m for m in moves(validate(solver="native"))}["model_state"].change == {"model_state": "float32"}


def test_fit_stops_without_a_run_when_no_remedy_reaches_a_budget_below_the_floor():
    launched = []
    result = fit({"rows": 20_000, "epochs": 1}, 64, lambda *a: launched.append(a), None, None)
    assert not result["fits"] and not launched and result["path"] == []  # said before any step (issue 40)
    reason = result["reason"]
    assert reason.startswith("no setting fits the budget of 64 MiB: before reading any data, this run's "
                             "libraries (Python, numpy, scipy, scikit-learn) hold 128 MiB, its floor"), reason
    assert "the lean path, with a floor of 30 MiB, is out of reach: it reads svmlight files only, and " \
           "sparse-text is a built-in dataset" in reason, reason


def _launcher(peaks: list[dict]):
    """A launch seam for the loop's logic: each attempt 'measures' the next phase peaks."""
    seen = []

    def launch(cfg, parent, change):
        phases = peaks[len(seen)]
        seen.append((cfg, parent, change))
        rec = _record(RunStatus.COMPLETED, cfg.to_dict(), phases, accuracy=0.8, balanced_accuracy=0.8,
                      samples_per_s=1000.0)
        return RunRecord(len(seen), *[getattr(rec, f) for f in list(RunRecord.__dataclass_fields__)[1:]])

    return launch, seen


def test_a_prepare_peak_that_built_the_cached_copy_is_rerun_as_is():
    base = {"rows": 30_000, "epochs": 1, "mode": "memmap", "hashing_bits": 11}
    over = {"imports": 137.0, "prepare": 208.0, "load": 160.0, "train": 168.0, "evaluate": 165.0}
    within = {**over, "prepare": 140.0}
    d = diagnose(_record(RunStatus.COMPLETED, base, over), 200, None, None)
    assert d["owner"] == "prepare" and "a rerun as is should fit" in d["copy_cached"]
    launch, seen = _launcher([over, within])
    result = fit(base, 200, launch, None, None)
    assert result["fits"] and len(seen) == 2
    assert seen[0][0] == seen[1][0] and seen[1][1] == 1  # the same config, after run 1
    assert seen[1][2]["changes"][0]["remedy"] == "rerun"
    assert "rerun (copy cached) → run 2" in result["summary"]


def test_a_forecast_just_above_the_budget_is_measured_before_a_remedy_that_costs_accuracy():
    from svmcore.app.doctor import model_view

    base = {"rows": 20_000, "epochs": 1, "mode": "stream", "monitor": "off", "batch_size": 256,
            "precision": "float16"}
    forecast = model_view(validate(base), None)["peak_mb"]
    budget = round(forecast / 1.1)  # 10% under the forecast: within the model's 15%
    launch, seen = _launcher([{"imports": 120.0, "prepare": 121.0, "load": 125.0, "train": budget - 5.0}])
    result = fit(base, budget, launch, None, None)
    assert result["fits"] and len(seen) == 1
    assert seen[0][0].hashing_bits == 0  # not hashed on the forecast's word: measured first
