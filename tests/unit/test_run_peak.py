"""One figure for "the run's peak" (``RunSummary.run_peak``), read by every consumer: a
data-parallel run is all its processes together, its largest Dask worker and its coordinator
named beside it. Issue 40: `doctor 8 --budget 200` said "within the budget" when each of its two
Dask workers used 230 MiB (620 MiB in all), `fit` judged its attempts by the coordinator, and
`predict --model 8` said "trained in 161 MiB"."""

from __future__ import annotations

import time

from svmcore.app.doctor import diagnose
from svmcore.app.fit import fit
from svmcore.app.headlines import RunFacts, comparison_headline, compare
from svmcore.app.serving import text as serving_text
from svmcore.app.serving import training_of
from svmcore.app.headlines import story_slides
from svmcore.spec.config import validate
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.records import RunRecord
from svmcore.sweeps.frontier import best_under, tradeoff_points

PAR = {"workers": 2, "scheduler": "local", "cluster_start_s": 2.4, "total_peak_sampled_mb": 620.0,
       "per_worker": [{"worker": 1, "peak_rss_mb": 228.0, "peak_exact": True, "rows": 1200},
                      {"worker": 2, "peak_rss_mb": 230.0, "peak_exact": True, "rows": 1200}]}
WORDS = ("620 MiB in all its processes (sampled sum; largest Dask worker (2) 230 MiB, exact; coordinator 161 MiB, "
         "exact)")


def record(run_id=8, status=RunStatus.COMPLETED, parallel=PAR, coordinator_mb=161.0, **config) -> RunRecord:
    phases = [{"name": n, "start_s": 0.0, "end_s": 1.0, "wall_s": 1.0, "peak_rss_mb": v}
              for n, v in (("imports", 140.0), ("load", 150.0), ("train", coordinator_mb))]
    summary = {"status": status.value, "peak_rss_mb": coordinator_mb, "peak_phase": "train", "phases": phases,
               "floor_mb": 140.0, "accuracy": 0.8, "balanced_accuracy": 0.8, "samples_per_s": 1e4,
               **({"parallel": parallel} if parallel else {})}
    cfg = validate(dict({"rows": 2400, "epochs": 1, "workers": 2 if parallel else 1}, **config)).to_dict()
    return RunRecord(run_id, time.time(), time.time(), status, cfg, RunSummary.from_dict(summary), None, None, None, None,
                     None, None,
                     None, None)


def test_the_run_peak_of_a_data_parallel_run_is_all_its_processes_naming_its_largest_worker():
    peak = record().summary.run_peak
    assert (peak.mb, peak.exact, peak.label) == (620.0, False, "peak of all processes (sampled sum)")
    assert peak.text() == WORDS
    one = record(parallel=None, coordinator_mb=163.4).summary.run_peak
    assert (one.mb, one.exact, one.text(), one.label) == (163.4, True, "163 MiB", "exact peak")
    unread = {**PAR, "total_peak_sampled_mb": None, "per_worker": [dict(w, peak_rss_mb=None) for w in PAR["per_worker"]]}
    failed = record(parallel=unread).summary.run_peak
    assert (failed.mb, failed.exact) == (161.0, True)
    assert failed.text() == "161 MiB (its coordinator's alone: its Dask workers' memory was not read)"


def test_doctor_judges_a_data_parallel_run_by_all_its_processes():
    d = diagnose(record(), 200, None, None)
    assert d["peak_mb"] == 620.0 and not d.get("healthy")
    assert d["verdict"] == f"run 8 peaked at {WORDS}, 420 MiB above the budget of 200 MiB"
    # the processes together own what the budget judges, and the remedy for them is one process
    assert d["owner"] == "all processes" and d["owner_mb"] == 620.0
    assert [r["change"] for r in d["remedies"]][:1] == [{"workers": 1}], d["remedies"]
    within = diagnose(record(), 700, None, None)
    assert within["healthy"] and within["verdict"] == f"run 8 completed at {WORDS}, within the budget of 700 MiB"


def test_fit_never_calls_a_data_parallel_run_that_held_more_than_the_budget_a_fit():
    seen = []

    def launch(cfg, parent, change):
        seen.append(cfg)
        return record(run_id=len(seen), **{k: v for k, v in cfg.to_dict().items() if k in ("rows", "epochs")})

    result = fit({"rows": 2400, "epochs": 1, "workers": 2}, 600, launch, None, None, max_attempts=2)
    assert not result["fits"] and seen, result["summary"]
    assert [a["peak_mb"] for a in result["attempts"]] == [620.0] * len(result["attempts"])
    assert any("at 620" in step for step in result["path"]), result["path"]


def test_fit_forecasts_a_data_parallel_run_by_all_its_processes_and_first_makes_it_one_process():
    # issue 40: `fit --budget 200 --workers 2` forecast the coordinator's 129 MiB and went oom twice
    from svmcore.app.doctor import model_view

    view = model_view(validate({"rows": 2400, "epochs": 1, "workers": 2}), None)
    coordinator = max(v["mb"] for k, v in view["phases"].items() if k != "all processes")
    assert view["peak_phase"] == "all processes" and view["peak_mb"] > coordinator + 2 * 200, view["phases"]
    seen = []

    def launch(cfg, parent, change):
        seen.append((cfg.workers, [c["knobs"] for c in change["changes"]]))
        return record(run_id=len(seen), parallel=None, coordinator_mb=150.0, rows=2400, epochs=1)

    result = fit({"rows": 2400, "epochs": 1, "workers": 2}, 200, launch, None, None, max_attempts=2)
    assert seen == [(1, [{"workers": 1}])] and result["fits"], (seen, result["summary"])
    assert result["path"][0] == "workers 1"


def test_predict_says_what_the_model_was_trained_in_for_all_the_runs_processes():
    training = training_of(record())
    assert (training["peak_mb"], training["peak_exact"]) == (620.0, False)
    summary = {"rows": 10, "score_s": 0.01, "rows_per_s": 1000.0, "peak_mb": 40.0, "floor_mb": 30.0,
               "model": {"model_bytes": 2**20, "storage": "dense", "dtype": "float32", "nonzero_weights": 5,
                         "width": 10, "vectors": 1}, "training": training}
    assert f"trained in {WORDS}, serves in 40 MiB" in serving_text(summary)
    assert "trained in 163 MiB, serves in" in serving_text(dict(summary, training=training_of(
        record(parallel=None, coordinator_mb=163.4))))


def test_compare_and_story_weigh_a_data_parallel_run_by_all_its_processes():
    base = RunFacts(1, "completed", record(1, parallel=None, coordinator_mb=250.0).summary, "workers 1")
    par = RunFacts(8, "completed", record().summary, "workers 2")
    assert par.peak.mb == 620.0
    line = comparison_headline(base, par)
    assert f"peak +148% (250 → 620 MiB; run 8's: {WORDS})" in line, line
    slides = story_slides(compare([base, par], 1))
    lowest = next(s for s in slides if s.headline.startswith("Lowest peak"))
    assert lowest.headline == "Lowest peak: run 8 · workers 2, 620 MiB (+148%), accuracy 0.800."
    assert slides[0].headline.endswith("a data-parallel run's peak is all its processes, sampled.")


def test_a_sweep_weighs_a_data_parallel_run_by_all_its_processes():
    one, ddp = tradeoff_points([record(1, parallel=None, coordinator_mb=250.0), record(2)])
    assert (ddp.peak_mb, ddp.peak_exact, one.peak_exact) == (620.0, False, True)
    assert best_under([one, ddp], 300.0) == one and best_under([one, ddp], 700.0).run_id in (1, 2)


def test_recommend_reports_a_measured_run_by_its_run_peak():
    from svmcore.predict.recommend import measured_of

    assert measured_of(record()) == {"run_id": 8, "peak_mb": 620.0, "peak_exact": False, "accuracy": 0.8,
                                     "balanced_accuracy": 0.8, "samples_per_s": 1e4}
    assert RunSummary.from_dict({"peak_rss_mb": 99.0}).run_peak.mb == 99.0


def test_a_sweeps_parallel_coordinates_draw_a_data_parallel_run_at_all_its_processes():
    from svmcore.app.parallel import parallel_info

    info = parallel_info([record(1, parallel=None, coordinator_mb=250.0), record(2)], ["workers"])
    assert info.colour == [250.0, 620.0]
    peak_axis = info.dimensions[1]
    assert peak_axis.label == "peak (MiB; data-parallel: all processes, sampled)" and peak_axis.values == [250.0, 620.0]
    alone = parallel_info([record(1, parallel=None, coordinator_mb=250.0)], ["workers"])
    assert alone.dimensions[1].label == "exact peak (MiB)"
