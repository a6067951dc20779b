"""ui.charts: the pure ``*_info`` functions behind every chart, on small hand-built inputs,
their plain data compared with == (no Streamlit, no figure)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from svmcore.engine.summary import MemorySample
from svmcore.spec.events import EVAL, OUTCOME, PHASE_END, PHASE_START, PROGRESS
from svmcore.store.records import PhaseSpan, RunSummary
from svmcore.sweeps.frontier import TradeoffPoint
from ui.charts import (
    PALETTE,
    accuracy_info,
    compare_info,
    live_phases,
    memory_info,
    run_colour,
    samples_at,
    throughput_info,
    tradeoff_info,
)

MiB = 2**20


def ms(t, rss_mb, anon_mb, file_mb, hwm_mb=0):
    return MemorySample(t, int(rss_mb * MiB), int(anon_mb * MiB), int(file_mb * MiB), int(hwm_mb * MiB))


def start(name, t):
    return {"kind": PHASE_START, "t_s": t, "phase": name, "rss_bytes": 0}


def end(name, t, wall, peak_mb):
    return {"kind": PHASE_END, "t_s": t, "phase": name, "wall_s": wall, "peak_rss_bytes": peak_mb * MiB,
            "rss_bytes": 0}


def progress(t, samples, elapsed):
    return {"kind": PROGRESS, "t_s": t, "samples": samples, "batches": 1, "epoch": 1, "epochs": 1,
            "total": 10_000, "train_elapsed_s": elapsed}


def ev(t, samples, acc, bal=None, rows=500, final=False):
    e = {"kind": EVAL, "t_s": t, "samples": samples, "accuracy": acc, "rows": rows, "train_elapsed_s": t}
    if bal is not None:
        e["balanced_accuracy"] = bal
    if final:
        e["final"] = True
    return e


# ---------------------------------------------------------------- memory_info

SAMPLES = [ms(0.12345, 40, 30, 10), ms(0.5, 100, 80, 20), ms(1.0, 64.5, 60, 4.5)]


def test_memory_info_of_a_finished_run():
    summary = RunSummary(peak_rss_mb=101.5, cap_mb=256.0, floor_mb=38.0,
                         phases=(PhaseSpan("imports", 0.0, 0.3, 0.3, 38.0), PhaseSpan("train", 0.3, 1.0, 0.7, 101.5)),
                         prediction={"predicted_peak_mb": 120.0, "low_mb": 100.0})
    assert memory_info(SAMPLES, summary) == {
        "t": [0.123, 0.5, 1.0], "rss": [40.0, 100.0, 64.5], "anon": [30.0, 80.0, 60.0], "file": [10.0, 20.0, 4.5],
        "phases": [("imports", 0.0, 0.3), ("train", 0.3, 1.0)],
        "peak_mb": 101.5, "cap_mb": 256.0, "floor_mb": 38.0, "predicted_mb": 120.0,
    }


def test_memory_info_of_nothing():
    assert memory_info([], RunSummary()) == {"t": [], "rss": [], "anon": [], "file": [], "phases": [],
                                             "peak_mb": None, "cap_mb": None, "floor_mb": None,
                                             "predicted_mb": None}


def test_memory_info_leaves_out_phases_without_an_end():
    summary = RunSummary(phases=(PhaseSpan("load", 0.0, 0.5, 0.5, 10.0), PhaseSpan("train", 0.5, None, None, None)))
    assert memory_info(SAMPLES, summary)["phases"] == [("load", 0.0, 0.5)]


def test_memory_info_a_given_prediction_wins_over_the_stored_one():
    summary = RunSummary(prediction={"predicted_peak_mb": 120.0})
    assert memory_info([], summary, {"predicted_peak_mb": 99.0})["predicted_mb"] == 99.0
    assert memory_info([], summary, {})["predicted_mb"] == 120.0  # an empty one is no prediction
    assert memory_info([], RunSummary(prediction={"error": "not calibrated"}))["predicted_mb"] is None


def test_memory_info_of_a_single_sample():
    info = memory_info([ms(2.0, 50, 45, 5)], RunSummary(peak_rss_mb=55.0))
    assert (info["t"], info["rss"], info["anon"], info["file"], info["peak_mb"]) == ([2.0], [50.0], [45.0], [5.0],
                                                                                     55.0)


# ---------------------------------------------------------------- live_phases

def test_live_phases_of_no_events_is_empty():
    assert live_phases([], 3.0) == ()


def test_live_phases_the_open_phase_ends_now():
    events = [start("imports", 0.1), end("imports", 0.6, 0.5, 80), start("load", 0.6),
              {"kind": PROGRESS, "t_s": 0.9, "samples": 0, "train_elapsed_s": 0.0}]
    assert live_phases(events, 2.5) == (PhaseSpan("imports", 0.1, 0.6, 0.5, 80.0),
                                         PhaseSpan("load", 0.6, 2.5, None, None))


def test_live_phases_of_a_run_whose_phases_all_ended_keep_their_ends():
    events = [start("imports", 0.1), end("imports", 0.6, 0.5, 80), start("train", 0.6), end("train", 2.0, 1.4, 96)]
    assert live_phases(events, 9.0) == (PhaseSpan("imports", 0.1, 0.6, 0.5, 80.0),
                                         PhaseSpan("train", 0.6, 2.0, 1.4, 96.0))


def test_live_phases_ignore_an_end_of_another_phase():
    events = [start("load", 0.0), end("train", 1.0, 1.0, 50)]
    assert live_phases(events, 1.5) == (PhaseSpan("load", 0.0, 1.5, None, None),)


def test_live_phases_feed_memory_info():
    events = [start("imports", 0.1), end("imports", 0.6, 0.5, 80), start("load", 0.6)]
    summary = RunSummary(phases=live_phases(events, 1.0))
    assert memory_info([], summary)["phases"] == [("imports", 0.1, 0.6), ("load", 0.6, 1.0)]


# ---------------------------------------------------------------- throughput_info

PROGRESS_EVENTS = [progress(1.0, 0, 0.0), progress(2.0, 100, 1.0), progress(3.0, 300, 2.0),
                   progress(4.0, 600, 3.0), progress(5.0, 1000, 4.0)]


def test_throughput_is_a_moving_average_over_three_intervals():
    assert throughput_info(PROGRESS_EVENTS) == {"t": [2.0, 3.0, 4.0, 5.0],
                                                "samples_per_s": [100.0, 150.0, 200.0, 300.0]}


def test_throughput_window_of_one_is_the_rate_between_neighbours():
    assert throughput_info(PROGRESS_EVENTS, window=1) == {"t": [2.0, 3.0, 4.0, 5.0],
                                                          "samples_per_s": [100.0, 200.0, 300.0, 400.0]}


def test_throughput_ignores_other_events_and_rounds_time():
    events = [start("train", 0.5), progress(1.0, 0, 0.0), ev(1.5, 0, 0.5), progress(2.00049, 50, 0.5)]
    assert throughput_info(events) == {"t": [2.0], "samples_per_s": [100.0]}


@pytest.mark.parametrize("events", [[], [progress(1.0, 100, 0.5)], [start("train", 0.0), ev(1.0, 10, 0.5)]])
def test_throughput_needs_two_progress_events(events):
    assert throughput_info(events) == {"t": [], "samples_per_s": []}


def test_throughput_skips_intervals_without_training_time():
    events = [progress(1.0, 100, 1.0), progress(1.1, 100, 1.0), progress(2.0, 300, 2.0)]
    assert throughput_info(events, window=1) == {"t": [2.0], "samples_per_s": [200.0]}


# ---------------------------------------------------------------- accuracy_info

def test_accuracy_info_separates_the_final_evaluation():
    events = [ev(1.0, 100, 0.6, 0.55), progress(1.5, 200, 1.5), ev(2.0, 200, 0.7, 0.66),
              ev(3.0, 200, 0.75, 0.7, rows=4000, final=True)]
    assert accuracy_info(events) == {"samples": [100, 200], "accuracy": [0.6, 0.7], "balanced": [0.55, 0.66],
                                     "rows": 500, "final": (200, 0.75, 4000), "final_balanced": 0.7}


def test_accuracy_info_of_no_events():
    assert accuracy_info([]) == {"samples": [], "accuracy": [], "balanced": [], "rows": None, "final": None,
                                 "final_balanced": None}


def test_accuracy_info_of_a_run_still_training_has_no_final():
    info = accuracy_info([ev(1.0, 100, 0.6)])
    assert info == {"samples": [100], "accuracy": [0.6], "balanced": [None], "rows": 500, "final": None,
                    "final_balanced": None}


def test_accuracy_info_with_only_the_final_evaluation():
    info = accuracy_info([ev(3.0, 5000, 0.9, rows=1000, final=True)])
    assert info == {"samples": [], "accuracy": [], "balanced": [], "rows": None, "final": (5000, 0.9, 1000),
                    "final_balanced": None}


# ---------------------------------------------------------------- samples_at

def test_samples_at_interpolates_between_progress_events():
    events = [progress(1.0, 100, 0.5), progress(3.0, 500, 2.5)]
    assert samples_at(events, [1.0, 2.0, 2.5, 3.0]) == [100.0, 300.0, 400.0, 500.0]


def test_samples_at_is_zero_before_the_first_and_the_last_count_after_the_last():
    events = [progress(1.0, 100, 0.5), progress(3.0, 500, 2.5)]
    assert samples_at(events, [0.0, 0.99, 3.01, 99.0]) == [0.0, 0.0, 500.0, 500.0]


def test_samples_at_without_progress_is_unknown():
    assert samples_at([ev(1.0, 100, 0.5)], [0.0, 1.0]) == [None, None]
    assert samples_at([], []) == []


def test_samples_at_no_time_is_an_empty_list():
    assert samples_at([progress(1.0, 100, 0.5)], []) == []


def test_samples_at_a_single_progress_event():
    assert samples_at([progress(2.0, 100, 1.0)], [1.0, 2.0, 3.0]) == [0.0, 100.0, 100.0]


# ---------------------------------------------------------------- compare_info

@dataclass(frozen=True)
class View:
    """The attributes of svmcore.app.runs.RunView that compare_info reads."""

    id: int
    label: str | None
    samples: list
    events: list
    summary: RunSummary = field(default_factory=RunSummary)


def two_views():
    a = View(1, "stream", [ms(1.0, 50, 40, 10), ms(2.0, 60, 50, 10), ms(3.0, 70, 60, 10)],
             [progress(1.0, 0, 0.0), progress(2.0, 100, 1.0), progress(3.0, 300, 2.0), ev(3.0, 300, 0.8)],
             RunSummary(peak_rss_mb=72.0))
    b = View(12, None, [ms(0.5, 10, 5, 5)], [], RunSummary())
    return [a, b]


def test_compare_info_by_time():
    assert compare_info(two_views()) == [
        {"id": 1, "name": "run 1 · stream", "colour": PALETTE[0], "x": [1.0, 2.0, 3.0], "rss": [50.0, 60.0, 70.0],
         "thr_x": [2.0, 3.0], "thr": [100.0, 150.0], "acc_x": [300], "acc": [0.8], "peak_mb": 72.0},
        {"id": 12, "name": "run 12", "colour": PALETTE[1], "x": [0.5], "rss": [10.0],
         "thr_x": [], "thr": [], "acc_x": [], "acc": [], "peak_mb": None},
    ]


def test_compare_info_by_samples_seen():
    assert compare_info(two_views(), align="samples") == [
        {"id": 1, "name": "run 1 · stream", "colour": PALETTE[0], "x": [0.0, 100.0, 300.0],
         "rss": [50.0, 60.0, 70.0], "thr_x": [100.0, 300.0], "thr": [100.0, 150.0], "acc_x": [300], "acc": [0.8],
         "peak_mb": 72.0},
        # no progress: nothing can be placed by samples seen
        {"id": 12, "name": "run 12", "colour": PALETTE[1], "x": [], "rss": [], "thr_x": [], "thr": [],
         "acc_x": [], "acc": [], "peak_mb": None},
    ]


def test_compare_info_of_no_runs():
    assert compare_info([]) == []
    assert compare_info([], align="samples") == []


def test_run_colours_are_stable_and_wrap_around_the_palette():
    assert [run_colour(i) for i in (1, 2, len(PALETTE), len(PALETTE) + 1)] == [PALETTE[0], PALETTE[1], PALETTE[-1],
                                                                                PALETTE[0]]


# ---------------------------------------------------------------- tradeoff_info

def tp(run_id, peak, acc, status="completed", sps=None, front=False):
    return TradeoffPoint(run_id, peak, acc, sps, status, f"label {run_id}", on_frontier=front)


def test_tradeoff_info_splits_completed_oom_and_the_frontier():
    points = [tp(1, 300.0, 0.95, sps=1000.0, front=True), tp(2, 100.0, 0.80, sps=None, front=True),
              tp(3, 200.0, 0.78, sps=500.0), tp(4, 256.0, None, status="oom"), tp(5, 50.0, 0.99, status="failed")]
    assert tradeoff_info(points, budget_mb=512.0) == {
        "done": [(1, 300.0, 0.95, 1000.0, "label 1"), (2, 100.0, 0.80, 0.0, "label 2"),
                 (3, 200.0, 0.78, 500.0, "label 3")],
        "oom": [(4, 256.0, "label 4")],
        "frontier": [(100.0, 0.80), (300.0, 0.95)],  # by peak, not input order
        "budget_mb": 512.0,
    }


def test_tradeoff_info_of_no_points():
    assert tradeoff_info([]) == {"done": [], "oom": [], "frontier": [], "budget_mb": None}


def test_tradeoff_info_of_only_oom_runs():
    assert tradeoff_info([tp(1, 64.0, None, status="oom"), tp(2, 96.0, None, status="oom")]) == {
        "done": [], "oom": [(1, 64.0, "label 1"), (2, 96.0, "label 2")], "frontier": [], "budget_mb": None}


def test_tradeoff_info_of_one_point():
    assert tradeoff_info([tp(7, 10.0, 0.5, sps=3.0, front=True)]) == {
        "done": [(7, 10.0, 0.5, 3.0, "label 7")], "oom": [], "frontier": [(10.0, 0.5)], "budget_mb": None}


def test_tradeoff_info_reads_the_frontier_flags_of_tradeoff_points():
    from svmcore.store.records import RunRecord, RunStatus
    from svmcore.sweeps.frontier import tradeoff_points

    def rec(i, status, peak, acc):
        return RunRecord(i, 0.0, 1.0, status, {}, {"peak_rss_mb": peak, "accuracy": acc, "samples_per_s": 10.0},
                         None, None, None, None, None, None, 1, None)

    points = tradeoff_points([rec(1, RunStatus.COMPLETED, 300.0, 0.9), rec(2, RunStatus.COMPLETED, 100.0, 0.8),
                              rec(3, RunStatus.COMPLETED, 200.0, 0.7), rec(4, RunStatus.OOM, 64.0, None)])
    info = tradeoff_info(points)
    assert info["frontier"] == [(100.0, 0.8), (300.0, 0.9)]
    assert info["oom"] == [(4, 64.0, "run 4")]
    assert [d[0] for d in info["done"]] == [1, 2, 3]


def test_events_of_other_kinds_do_not_disturb_the_series():
    noise = [{"kind": OUTCOME, "t_s": 9.0, "status": "completed"}, start("train", 0.0)]
    events = noise + PROGRESS_EVENTS[:3] + [ev(2.0, 100, 0.6)]
    assert throughput_info(events) == throughput_info(PROGRESS_EVENTS[:3])
    assert accuracy_info(events)["samples"] == [100]
    assert samples_at(events, [2.0]) == [100.0]
