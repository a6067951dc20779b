"""svmcore.engine.summary: phase spans and the worker's result completed into the run's
summary from events (as the worker writes them, with the engine's ``t_s``) and 50 Hz
memory samples, compared with ==; and the summary's one typed shape (spec.result):
its JSON and back, the parts typed, unknown keys kept, what the store refuses."""

from __future__ import annotations

import json

import pytest

from svmcore.engine.summary import MemorySample, RunEnd, build_summary, phase_spans
from svmcore.spec.events import DATA, EVAL, LOADED, OUTCOME, PHASE_END, PHASE_START, PROGRESS, STARTED
from svmcore.spec.result import (
    Confusion,
    DataInfo,
    ExitInfo,
    Parallel,
    ParallelWorker,
    PhaseSpan,
    Forecast,
    Regularisation,
    RunError,
    RunSummary,
    ScoreWarning,
    SpillReport,
    Threads,
)
from svmcore.spec.status import RunStatus

MiB = 2**20


def start(name, t):
    return {"kind": PHASE_START, "t_s": t, "phase": name, "rss_bytes": 50 * MiB}


def end(name, t, wall, peak_mb):
    return {"kind": PHASE_END, "t_s": t, "phase": name, "wall_s": wall, "peak_rss_bytes": peak_mb * MiB,
            "rss_bytes": 60 * MiB}


def sample(t, rss_mb, hwm_mb):
    return MemorySample(t, rss_mb * MiB, (rss_mb - 10) * MiB, 10 * MiB, hwm_mb * MiB)


DATA_INFO = {"name": "d.svm", "format": "svmlight", "rows": 1000, "features": 64, "nnz": 5000, "classes": [0, 1],
             "class_counts": [500, 500], "dense_source": False, "exact": True}

# what the worker reports (``worker.loop.final_result``): the final scores again, its own counts and parts
WORKER = RunSummary(
    accuracy=0.5, balanced_accuracy=0.5,  # the final eval event is what counts
    samples_seen=2000, shuffle=True, batches=4, train_s=1.0, samples_per_s=1.0,
    epoch_samples_per_s=(1000.0, 3000.0), spill={"rows": 800, "read_back": True, "failed": None},
    train_rows=800, test_rows=200, features=64, train_data_bytes=4096, model_bytes=512,
    threads={"requested": 1, "blas": [], "os_threads": 1, "reader_thread": False},
    f1=0.875, f1_of="1", baseline_accuracy=0.5, per_class_recall={"0": 0.9, "1": 0.85},
    confusion={"classes": ["0", "1"], "matrix": [[90, 10], [15, 85]]},
    regularisation={"name": "alpha", "value": 4e-5, "source": "auto", "why": "auto: ..."},
    data={"name": "the worker's own", "rows": 1})


def completed_events():
    """A whole run: imports, prepare, load, train (two progress and one eval), evaluate, outcome."""
    return [
        {"kind": STARTED, "t_s": 0.0, "pid": 4242, "cap_kind": "rlimit", "cap_bytes": 512 * MiB},
        start("imports", 0.1), end("imports", 0.6, 0.5, 80),
        start("prepare", 0.6),
        {"kind": DATA, "t_s": 0.7, "info": DATA_INFO, "n_features": 64, "text_path": None, "binary_path": None},
        end("prepare", 0.8, 0.2, 85),
        start("load", 0.8),
        {"kind": LOADED, "t_s": 1.1, "train_rows": 800, "test_rows": 200, "train_data_bytes": 4096,
         "test_data_bytes": 1024},
        end("load", 1.2, 0.4, 120),
        start("train", 1.2),
        {"kind": PROGRESS, "t_s": 1.5, "samples": 500, "batches": 1, "epoch": 1, "epochs": 2, "total": 1600,
         "train_elapsed_s": 0.3},
        {"kind": EVAL, "t_s": 1.6, "samples": 500, "accuracy": 0.7, "balanced_accuracy": 0.65, "rows": 200,
         "train_elapsed_s": 0.4},
        {"kind": PROGRESS, "t_s": 2.2, "samples": 2000, "batches": 4, "epoch": 2, "epochs": 2, "total": 1600,
         "train_elapsed_s": 1.0, "epoch_samples_per_s": 3000.0},
        end("train", 2.2, 1.0, 150),
        start("evaluate", 2.2),
        {"kind": EVAL, "t_s": 2.4, "samples": 2000, "accuracy": 0.9, "balanced_accuracy": 0.875, "rows": 200,
         "final": True, "train_elapsed_s": 1.0},
        end("evaluate", 2.4, 0.2, 140),
        {"kind": OUTCOME, "t_s": 2.45, "status": "completed", "phase": None, "error": None,
         "summary": json.loads(json.dumps(WORKER.to_dict())), "peak_rss_bytes": 150 * MiB},
    ]


def completed_samples():
    return [sample(0.3, 70, 75), sample(1.0, 110, 118), sample(1.8, 140, 148), sample(2.3, 130, 139),
            sample(2.42, 120, 140)]


def summarise(events, samples, status=RunStatus.COMPLETED, error=None, last_phase="evaluate",
              cap_kind="rlimit", cap_bytes=512 * MiB, exit_info=None, wall_s=2.5, sample_hz=50, **more):
    outcome = next((e for e in reversed(events) if e["kind"] == OUTCOME), None)
    return build_summary(RunEnd(7, status, events, samples, outcome, error, last_phase, cap_kind, cap_bytes,
                                exit_info if exit_info is not None else {"code": 0}, wall_s, sample_hz, **more))


def worker_says(**summary):
    events = completed_events()
    events[-1]["summary"] = summary
    return events


# ---------------------------------------------------------------- phase_spans

def test_phase_spans_of_no_events_is_empty():
    assert phase_spans([]) == []
    assert phase_spans([{"kind": STARTED, "t_s": 0.0, "pid": 1}]) == []


def test_phase_spans_with_their_exact_peaks():
    assert phase_spans(completed_events()) == [
        PhaseSpan("imports", 0.1, 0.6, 0.5, 80.0), PhaseSpan("prepare", 0.6, 0.8, 0.2, 85.0),
        PhaseSpan("load", 0.8, 1.2, 0.4, 120.0), PhaseSpan("train", 1.2, 2.2, 1.0, 150.0),
        PhaseSpan("evaluate", 2.2, 2.4, 0.2, 140.0)]


def test_a_phase_never_ended_keeps_its_start_and_no_peak():
    events = [start("imports", 0.1), end("imports", 0.6, 0.5, 80), start("load", 0.6)]
    assert phase_spans(events) == [PhaseSpan("imports", 0.1, 0.6, 0.5, 80.0), PhaseSpan("load", 0.6)]


def test_an_end_for_another_phase_or_without_a_start_is_ignored():
    events = [end("imports", 0.05, 0.05, 10), start("load", 0.1), end("train", 0.5, 0.4, 99)]
    assert phase_spans(events) == [PhaseSpan("load", 0.1)]


def test_the_peak_is_in_mib_and_the_cpu_time_kept():
    (span,) = phase_spans([start("train", 0.0), end("train", 1.0, 1.0, 0) | {"peak_rss_bytes": 3 * MiB // 2,
                                                                             "cpu_s": 0.8}])
    assert (span.peak_rss_mb, span.cpu_s) == (1.5, 0.8)


# ---------------------------------------------------------------- build_summary: a completed run

def test_the_summary_of_a_completed_run():
    events = completed_events()
    assert summarise(events, completed_samples()) == RunSummary(
        run_id=7, status=RunStatus.COMPLETED, peak_rss_mb=150.0, peak_sampled_mb=140.0, sample_hz=50, n_samples=5,
        floor_mb=80.0, peak_phase="train", phases=phase_spans(events), cap="rlimit", cap_mb=512.0,
        exit=ExitInfo(0), wall_s=2.5, train_s=1.0, samples_seen=2000, samples_per_s=2000.0,
        epoch_samples_per_s=(1000.0, 3000.0), batches=4, accuracy=0.9, balanced_accuracy=0.875,
        last_accuracy=0.9, f1=0.875, f1_of="1", baseline_accuracy=0.5, per_class_recall={"0": 0.9, "1": 0.85},
        confusion=Confusion(("0", "1"), ((90, 10), (15, 85))), warnings=(), data=DataInfo.from_dict(DATA_INFO),
        train_rows=800, test_rows=200, features=64, shuffle=True, train_data_bytes=4096, model_bytes=512,
        regularisation=Regularisation("alpha", 4e-5, "auto", "auto: ..."), spill=SpillReport(800, True),
        threads=Threads(1, [], 1, False), passes=())


def test_the_data_copies_a_run_built_once_are_in_its_summary():
    events = [dict(e, prepared_once=["text-abc.svm", "heldout-abc-h5"]) if e["kind"] == DATA else e
              for e in completed_events()]
    assert summarise(events, completed_samples()).prepared_once == ("text-abc.svm", "heldout-abc-h5")
    reused = [dict(e, prepared_once=[]) if e["kind"] == DATA else e for e in completed_events()]
    assert summarise(reused, completed_samples()).prepared_once == ()


def test_the_engine_figures_are_its_own_not_the_workers():
    summary = summarise(completed_events(), completed_samples())
    assert summary.data == DataInfo.from_dict(DATA_INFO)  # from the data event, not the worker's summary
    assert summary.accuracy == 0.9 and summary.samples_per_s == 2000.0  # not the worker's 0.5 and 1.0


def test_what_the_worker_did_not_report_is_empty():
    summary = summarise(worker_says(train_rows=800), completed_samples())
    assert (summary.train_rows, summary.test_rows, summary.threads, summary.spill, summary.confusion,
            summary.per_class_recall, summary.epoch_samples_per_s) == (800, None, None, None, None, {}, ())


def test_a_cgroup_caps_peak_and_the_forecast_complete_the_summary():
    forecast = Forecast(predicted_peak_mb=140.0, peak_phase="train", phases_mb={"train": 140.0})
    summary = summarise(completed_events(), completed_samples(), cap_kind="cgroup", cgroup_peak_bytes=120 * MiB,
                        prediction=forecast)
    assert (summary.cap, summary.cgroup_peak_mb, summary.prediction) == ("cgroup", 120.0, forecast)


def test_a_cgroup_capped_runs_held_charge_and_file_pages_come_from_its_samples():
    samples = [MemorySample(1.0, 100 * MiB, 60 * MiB, 40 * MiB, 100 * MiB, 90 * MiB, 20 * MiB),
               MemorySample(2.0, 120 * MiB, 70 * MiB, 50 * MiB, 120 * MiB, 95 * MiB, 30 * MiB)]
    summary = summarise(completed_events(), samples, cap_kind="cgroup")
    assert (summary.cgroup_held_peak_mb, summary.rss_file_mb) == (70.0, 50.0)
    assert summarise(completed_events(), completed_samples()).cgroup_held_peak_mb is None


@pytest.mark.parametrize("where, expected_mb", [("phase", 300.0), ("sample", 310.0), ("outcome", 320.0)])
def test_the_exact_peak_is_the_highest_of_phase_peaks_samples_and_the_outcome(where, expected_mb):
    events = completed_events()
    samples = completed_samples()
    if where == "phase":
        events[events.index(end("load", 1.2, 0.4, 120))]["peak_rss_bytes"] = 300 * MiB
    elif where == "sample":
        samples[1] = sample(1.0, 110, 310)  # a spike inside load that its end event missed
    else:
        events[-1]["peak_rss_bytes"] = 320 * MiB
    assert summarise(events, samples).peak_rss_mb == expected_mb


def test_the_sampled_peak_is_the_highest_rss_sample_not_the_hwm():
    assert summarise(completed_events(), [sample(1.0, 100, 150), sample(2.0, 90, 150)]).peak_sampled_mb == 100.0


def test_peak_phase_is_the_phase_with_the_highest_peak():
    events = completed_events()
    events[events.index(end("load", 1.2, 0.4, 120))]["peak_rss_bytes"] = 200 * MiB
    summary = summarise(events, completed_samples())
    assert (summary.peak_phase, summary.peak_rss_mb) == ("load", 200.0)


def test_no_imports_phase_means_no_floor():
    events = [e for e in completed_events() if e.get("phase") != "imports"]
    assert summarise(events, completed_samples()).floor_mb is None


def test_no_cap_has_no_cap_mb():
    summary = summarise(completed_events(), completed_samples(), cap_kind="none", cap_bytes=None)
    assert (summary.cap, summary.cap_mb, summary.cap_text) == ("none", None, "none")


def test_throughput_falls_back_to_the_last_progress_and_the_train_phase():
    summary = summarise(worker_says(), completed_samples())
    assert (summary.samples_seen, summary.train_s, summary.samples_per_s) == (2000, 1.0, 2000.0)


def test_no_throughput_without_samples_seen_or_train_time():
    events = [e for e in worker_says() if e["kind"] != PROGRESS and e.get("phase") != "train"]
    summary = summarise(events, completed_samples())
    assert (summary.samples_seen, summary.train_s, summary.samples_per_s) == (None, None, None)


def test_without_a_final_eval_accuracy_is_none_and_last_accuracy_is_the_last_eval():
    events = [e for e in completed_events() if not (e["kind"] == EVAL and e.get("final"))]
    summary = summarise(events, completed_samples())
    assert (summary.accuracy, summary.balanced_accuracy, summary.last_accuracy) == (None, None, 0.7)


# ---------------------------------------------------------------- build_summary: killed runs

def killed_in_train():
    events = completed_events()
    events = events[:events.index(start("train", 1.2)) + 2]  # train started, one progress, then SIGKILL
    samples = [sample(0.3, 70, 75), sample(1.0, 110, 118), sample(1.19, 115, 120),  # before train
               sample(1.3, 100, 100), sample(1.6, 170, 180), sample(1.9, 160, 180)]
    return events, samples


def test_a_phase_the_worker_never_ended_gets_the_end_of_the_run_and_the_peak_inside_it():
    events, samples = killed_in_train()
    summary = summarise(events, samples, status=RunStatus.OOM, last_phase="train",
                        error={"type": "OutOfMemory", "message": "killed"}, exit_info={"signal": "SIGKILL"},
                        wall_s=5.0)
    # not the 120 MiB read before the phase began
    assert summary.phases[-1] == PhaseSpan("train", 1.2, 1.9, pytest.approx(0.7), 180.0)
    assert (summary.peak_rss_mb, summary.peak_phase) == (180.0, "train")
    assert (summary.status, summary.phase, summary.exit) == (RunStatus.OOM, "train", ExitInfo(signal="SIGKILL"))
    assert summary.error == RunError("OutOfMemory", "killed")
    assert summary.accuracy is None and summary.samples_seen == 500
    assert summary.train_s == pytest.approx(0.7) and summary.samples_per_s == pytest.approx(500 / 0.7)


def test_a_killed_phase_below_an_earlier_peak_does_not_own_the_peak():
    events, samples = killed_in_train()
    events[events.index(end("load", 1.2, 0.4, 120))]["peak_rss_bytes"] = 250 * MiB
    summary = summarise(events, samples, status=RunStatus.OOM, last_phase="train")
    assert summary.phases[-1].peak_rss_mb == 180.0
    assert (summary.peak_rss_mb, summary.peak_phase) == (250.0, "load")


def test_a_killed_phase_without_samples_ends_at_the_wall_time_with_no_peak():
    events, _ = killed_in_train()
    summary = summarise(events, [], status=RunStatus.FAILED, last_phase="train", wall_s=3.0)
    assert summary.phases[-1] == PhaseSpan("train", 1.2, 3.0, pytest.approx(1.8), None)
    assert (summary.peak_rss_mb, summary.peak_phase) == (120.0, "load")
    assert (summary.peak_sampled_mb, summary.n_samples) == (None, 0)


def test_a_killed_phase_with_no_sample_inside_it_keeps_no_peak():
    events, samples = killed_in_train()
    samples = samples[:3]  # all before the train phase began
    summary = summarise(events, samples, status=RunStatus.FAILED, last_phase="train")
    train = summary.phases[-1]
    assert (train.name, train.start_s, train.peak_rss_mb) == ("train", 1.2, None)
    assert (summary.peak_rss_mb, summary.peak_phase) == (120.0, "load")


def test_a_phase_killed_before_the_next_sample_does_not_end_before_it_began():
    events, samples = killed_in_train()
    events = events[:-1]  # killed right after the train phase began: no progress yet
    samples = samples[:3]  # the last reading (t=1.19 s) predates the train phase (t=1.2 s)
    summary = summarise(events, samples, status=RunStatus.OOM, last_phase="train", wall_s=1.25)
    train = summary.phases[-1]
    assert train.end_s >= train.start_s
    assert train.wall_s >= 0.0
    assert summary.train_s is None or summary.train_s >= 0.0


def test_killed_in_imports_the_floor_comes_from_the_samples():
    events = [{"kind": STARTED, "t_s": 0.0, "pid": 1, "cap_kind": "rlimit", "cap_bytes": 96 * MiB},
              start("imports", 0.1)]
    samples = [sample(0.2, 40, 40), sample(0.4, 90, 95)]
    summary = summarise(events, samples, status=RunStatus.OOM, last_phase="imports",
                        cap_bytes=96 * MiB, exit_info={"code": 1})
    assert (summary.floor_mb, summary.peak_phase, summary.peak_rss_mb) == (95.0, "imports", 95.0)
    assert summary.cap_mb == 96.0 and summary.phase == "imports"


def test_a_run_that_measured_nothing():
    summary = build_summary(RunEnd(9, RunStatus.LOST, [], [], None, {"type": "Lost", "message": "m"}, None,
                                   "none", None, {"code": None}, 0.0, 50))
    assert summary == RunSummary(9, RunStatus.LOST, sample_hz=50, cap="none", error=RunError("Lost", "m"),
                                 exit=ExitInfo(), wall_s=0.0, warnings=(), passes=())


def test_the_outcome_peak_alone_is_the_exact_peak():
    outcome = {"kind": OUTCOME, "status": "failed", "summary": None, "peak_rss_bytes": 64 * MiB}
    summary = build_summary(RunEnd(1, RunStatus.FAILED, [outcome], [], outcome, None, None, "none", None,
                                   {"code": 1}, 1.0, 50))
    assert summary.peak_rss_mb == 64.0


# ---------------------------------------------------------------- one shape: JSON and back

def test_the_summary_reads_back_from_its_json_as_it_was():
    for summary in (summarise(completed_events(), completed_samples()),
                    summarise(*killed_in_train(), status=RunStatus.OOM, last_phase="train",
                              error={"type": "OutOfMemory", "message": "killed", "cause": "MemoryError"})):
        stored = json.loads(json.dumps(summary.to_dict()))
        assert stored["version"] == 2 and RunSummary.problems(stored) == []
        assert RunSummary.from_dict(stored) == summary


def test_every_part_is_typed_and_keeps_the_keys_it_does_not_name():
    error = {"type": "OutOfMemory", "message": "m", "worker": "Dask worker 2", "later": "a newer key"}
    summary = RunSummary.from_dict({"error": error, "parallel": {"workers": 2, "per_worker": [
        {"worker": 1, "peak_rss_mb": 90.0, "peak_exact": False, "future": 1}]}, "warnings": [{"kind": "k", "text": "t"}]})
    assert summary.error == RunError("OutOfMemory", "m", worker="Dask worker 2", extra={"later": "a newer key"})
    assert summary.parallel.per_worker == (ParallelWorker(1, peak_rss_mb=90.0, peak_exact=False, extra={"future": 1}),)
    assert summary.warnings == (ScoreWarning("t", "k"),)
    again = summary.to_dict()
    assert again["error"]["later"] == "a newer key" and again["parallel"]["per_worker"][0]["future"] == 1


def test_run_summary_of_nothing_and_of_an_old_run():
    assert RunSummary.from_dict(None) == RunSummary()
    assert RunSummary.from_dict({}) == RunSummary()
    old = RunSummary.from_dict({"peak_rss_mb": 12.0, "n_samples": None, "per_class_recall": None,
                                "phases": [{"name": "train"}], "legacy": 1})
    assert (old.peak_rss_mb, old.n_samples, old.per_class_recall, old.extra) == (12.0, 0, {}, {"legacy": 1})
    assert old.phases == (PhaseSpan("train"),)
    assert old.to_dict()["legacy"] == 1  # what it does not know is written back


def test_run_summary_from_dict_leaves_its_input_alone():
    stored = summarise(completed_events(), completed_samples()).to_dict()
    before = json.dumps(stored)
    RunSummary.from_dict(stored)
    assert json.dumps(stored) == before


def test_what_the_store_refuses_is_named_where_it_is():
    assert RunSummary.problems({"peak_rss_mb": "abc", "status": "done", "phases": [{"start_s": 1.0}, 3],
                                "error": {"message": 5}, "parallel": {"per_worker": [{"rows": "x"}]},
                                "warnings": [{"kind": "k"}], "epoch_samples_per_s": [1.0, "fast"]}) == [
        "status is the text 'done', not a RunStatus", "peak_rss_mb is the text 'abc'", "phases[0].name is missing",
        "phases[1] is int 3", "error.message is int 5", "epoch_samples_per_s[1] is the text 'fast'",
        "warnings[0].text is missing", "parallel.per_worker[0].rows is the text 'x'"]


def test_an_mlp_runs_count_of_recomputed_layers_is_no_damage():
    # the worker reports how many hidden layers it computed twice (an int); the store called that damage
    assert RunSummary.problems({"recomputed_layers": 6}) == []
    assert RunSummary.from_dict({"recomputed_layers": 6}).recomputed_layers == 6


def test_a_data_parallel_summary_gives_all_processes_and_the_largest_worker_beside_the_coordinator():
    from svmcore.cli.run import describe

    par = {"workers": 2, "scheduler": "local", "cluster_start_s": 2.4, "total_peak_sampled_mb": 679.6,
           "per_worker": [{"worker": 1, "peak_rss_mb": 300.0, "peak_exact": True, "rows": 1200},
                          {"worker": 2, "peak_rss_mb": 255.9, "peak_exact": True, "rows": 1200}]}
    outcome = {"kind": "outcome", "status": "completed", "summary": {"parallel": par},
               "peak_rss_bytes": int(168.0 * 2**20)}
    s = build_summary(RunEnd(1, RunStatus.COMPLETED, [outcome], [], outcome, None, None, "none", None, {}, 10.0, 50))
    assert s.parallel == Parallel.from_dict(par)
    stored = s.to_dict()  # the headline keys scripts read (docs/dask.md)
    assert (stored["peak_all_processes_mb"], stored["peak_largest_worker_mb"], stored["peak_largest_worker"],
            stored["peak_coordinator_mb"]) == (679.6, 300.0, 1, 168.0)
    assert "sampled" in stored["peak_all_processes_source"] and stored["peak_largest_worker_source"] == "exact (VmHWM)"
    assert RunSummary.from_dict(stored) == s  # worked out again, not kept twice
    text = describe(s)
    assert text.splitlines()[1] == ("  peak: all processes 680 MiB (sampled sum) · largest Dask worker (1) 300 MiB "
                                    "(exact) · coordinator 168 MiB (exact)")
    assert "  coordinator peak RSS 168.0 MiB exact" in text


def test_a_model_near_chance_is_warned_about_in_the_summary_as_a_list():
    events = [dict(e, balanced_accuracy=0.52) if e["kind"] == EVAL and e.get("final") else e
              for e in completed_events()]
    summary = summarise(events, completed_samples())
    assert [w.kind for w in summary.warnings] == ["near-chance"]
    assert summary.warnings[0].text.startswith("balanced accuracy 0.5200 is within 10 points of chance")
    assert summary.score_warnings() == list(summary.warnings)
    stored_before = {k: v for k, v in summary.to_dict().items() if k != "warnings"}  # a run stored before the list
    assert RunSummary.from_dict(stored_before).score_warnings() == list(summary.warnings)


def test_the_cli_says_why_a_cgroup_capped_run_peaked_above_its_cap():
    # the walk: run 12 (cgroup cap 150 MiB) completed at an exact peak of 184 MiB, and 'runs show' said nothing
    from svmcore.cli.run import describe

    over = RunSummary.from_dict({"run_id": 12, "status": "completed", "peak_rss_mb": 184.4, "cap": "cgroup",
                                 "cap_mb": 150.0, "cgroup_peak_mb": 149.0})
    text = describe(over, "cap 150")
    assert text.startswith("run 12 (cap 150): completed")
    assert "Its RSS peaked at 184 MiB, above the 150 MiB cap (the cgroup itself peaked at 149 MiB" in text
    under = RunSummary.from_dict({"run_id": 3, "status": "completed", "peak_rss_mb": 140.0, "cap": "cgroup",
                                  "cap_mb": 150.0})
    assert "above the" not in describe(under)
