"""svmcore.sweeps.frontier on hand-built points and records: plain data compared with ==."""

from __future__ import annotations

import pytest

from svmcore.spec.errors import ConfigError
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.records import RunRecord
from svmcore.sweeps.frontier import (
    OBJECTIVES,
    TradeoffPoint,
    best_under,
    pareto_front,
    tradeoff_points,
)


def pt(run_id, peak, acc, status="completed", sps=None, bal=None):
    return TradeoffPoint(run_id, peak, acc, sps, status, f"run {run_id}", balanced_accuracy=bal)


def ids(points):
    return [p.run_id for p in points]


def record(run_id, status, summary, label=None, host=None):
    return RunRecord(id=run_id, created_at=1000.0 + run_id, finished_at=1010.0 + run_id, status=status,
                     config={}, summary=RunSummary.from_dict(summary), run_dir=None, worker_pid=None, worker_ctime=None,
                     runner_pid=None, runner_ctime=None, host=host, sweep_id=1, label=label)


# ---------------------------------------------------------------- pareto_front

def test_pareto_front_of_nothing_is_empty():
    assert pareto_front([]) == []


def test_pareto_front_of_one_point_is_that_point():
    p = pt(1, 100.0, 0.8)
    assert pareto_front([p]) == [p]


def test_pareto_front_keeps_the_undominated_points_sorted_by_peak():
    points = [pt(1, 300.0, 0.95), pt(2, 100.0, 0.80), pt(3, 200.0, 0.78), pt(4, 150.0, 0.90),
              pt(5, 400.0, 0.94)]
    # 3 is beaten by 2 (less memory, more accurate); 5 by 1
    assert ids(pareto_front(points)) == [2, 4, 1]


def test_pareto_front_does_not_depend_on_input_order():
    points = [pt(1, 300.0, 0.95), pt(2, 100.0, 0.80), pt(3, 200.0, 0.78), pt(4, 150.0, 0.90)]
    assert ids(pareto_front(points)) == ids(pareto_front(list(reversed(points)))) == [2, 4, 1]


def test_pareto_front_at_equal_peak_keeps_only_the_more_accurate():
    assert ids(pareto_front([pt(1, 100.0, 0.70), pt(2, 100.0, 0.90), pt(3, 100.0, 0.80)])) == [2]


def test_pareto_front_at_equal_accuracy_keeps_only_the_smaller_peak():
    assert ids(pareto_front([pt(1, 200.0, 0.9), pt(2, 100.0, 0.9), pt(3, 300.0, 0.9)])) == [2]


def test_pareto_front_of_identical_points_holds_one_of_them():
    front = pareto_front([pt(1, 100.0, 0.9), pt(2, 100.0, 0.9)])
    assert [(p.peak_mb, p.accuracy) for p in front] == [(100.0, 0.9)]


def test_pareto_front_where_more_memory_buys_accuracy_every_time_keeps_all():
    points = [pt(i, 100.0 * i, 0.5 + 0.1 * i) for i in (3, 1, 4, 2)]
    assert ids(pareto_front(points)) == [1, 2, 3, 4]


def test_pareto_front_where_the_smallest_is_also_the_best_is_that_one():
    points = [pt(1, 50.0, 0.99), pt(2, 100.0, 0.9), pt(3, 200.0, 0.95)]
    assert ids(pareto_front(points)) == [1]


# ---------------------------------------------------------------- best_under

def test_objectives_are_the_documented_three():
    assert OBJECTIVES == ("accuracy", "balanced_accuracy", "samples_per_s")


def test_best_under_picks_the_most_accurate_run_that_fits():
    points = [pt(1, 100.0, 0.80), pt(2, 200.0, 0.90), pt(3, 300.0, 0.95)]
    assert best_under(points, 250.0).run_id == 2
    assert best_under(points, 1000.0).run_id == 3
    assert best_under(points, 100.0).run_id == 1


def test_best_under_a_budget_equal_to_the_peak_fits():
    assert best_under([pt(1, 256.0, 0.9)], 256.0).run_id == 1
    assert best_under([pt(1, 256.0, 0.9)], 255.99) is None


def test_best_under_nothing_or_nothing_that_fits_is_none():
    assert best_under([], 1000.0) is None
    assert best_under([pt(1, 100.0, 0.9)], 99.0) is None


def test_best_under_ignores_runs_that_did_not_complete():
    points = [pt(1, 100.0, 0.8), pt(2, 150.0, 0.99, status="oom"), pt(3, 120.0, 0.99, status="failed")]
    assert best_under(points, 1000.0).run_id == 1


def test_best_under_only_oom_runs_is_none():
    assert best_under([pt(1, 100.0, None, status="oom")], 1000.0) is None


def test_best_under_a_tie_goes_to_the_smaller_peak():
    points = [pt(1, 300.0, 0.9), pt(2, 100.0, 0.9), pt(3, 200.0, 0.9)]
    assert best_under(points, 1000.0).run_id == 2


@pytest.mark.parametrize("objective, expected", [
    ("accuracy", 1),           # 0.95
    ("balanced_accuracy", 2),  # 0.93
    ("samples_per_s", 3),      # 9000 samples/s
])
def test_best_under_ranks_by_the_chosen_objective(objective, expected):
    points = [pt(1, 100.0, 0.95, sps=1000.0, bal=0.60),
              pt(2, 200.0, 0.90, sps=2000.0, bal=0.93),
              pt(3, 300.0, 0.85, sps=9000.0, bal=0.80)]
    assert best_under(points, 500.0, objective).run_id == expected


@pytest.mark.parametrize("objective", ["balanced_accuracy", "samples_per_s"])
def test_best_under_ties_on_other_objectives_also_go_to_the_smaller_peak(objective):
    points = [pt(1, 300.0, 0.5, sps=500.0, bal=0.7), pt(2, 200.0, 0.4, sps=500.0, bal=0.7)]
    assert best_under(points, 1000.0, objective).run_id == 2


def test_best_under_skips_runs_without_a_value_for_the_objective():
    points = [pt(1, 100.0, None, sps=None, bal=None), pt(2, 200.0, 0.7, sps=50.0, bal=0.6)]
    for objective in OBJECTIVES:
        assert best_under(points, 1000.0, objective).run_id == 2
    assert best_under([pt(1, 100.0, 0.9, sps=None)], 1000.0, "samples_per_s") is None


def test_best_under_an_unknown_objective_is_a_config_error_naming_objective():
    with pytest.raises(ConfigError) as exc:
        best_under([pt(1, 100.0, 0.9)], 1000.0, "speed")
    assert exc.value.knob == "objective"
    assert str(exc.value) == ("objective: 'speed' is not one of: accuracy, balanced_accuracy, samples_per_s")


def test_best_under_checks_the_objective_even_without_points():
    with pytest.raises(ConfigError):
        best_under([], 1000.0, "throughput")


# ---------------------------------------------------------------- tradeoff_points

def test_tradeoff_points_of_no_runs_is_empty():
    assert tradeoff_points([]) == []


def test_tradeoff_points_carry_the_run_figures():
    rec = record(7, RunStatus.COMPLETED, {"peak_rss_mb": 123.5, "accuracy": 0.91, "samples_per_s": 4567.0,
                                          "balanced_accuracy": 0.88}, label="mode=stream", host="box")
    assert tradeoff_points([rec]) == [TradeoffPoint(7, 123.5, 0.91, 4567.0, "completed", "mode=stream",
                                                    on_frontier=True, host="box", balanced_accuracy=0.88,
                                                    on_speed_frontier=True)]


def test_tradeoff_points_without_a_label_are_named_after_the_run():
    rec = record(3, RunStatus.COMPLETED, {"peak_rss_mb": 10, "accuracy": 0.5})
    (p,) = tradeoff_points([rec])
    assert p.label == "run 3"
    assert p.peak_mb == 10.0 and isinstance(p.peak_mb, float)


def test_tradeoff_points_keep_oom_runs_at_the_peak_they_reached_off_the_frontier():
    recs = [record(1, RunStatus.COMPLETED, {"peak_rss_mb": 300.0, "accuracy": 0.9}),
            # reached 256 MiB before the cap cut in: less memory than run 1, never on the frontier
            record(2, RunStatus.OOM, {"peak_rss_mb": 256.0, "accuracy": None, "error": {"type": "OutOfMemory"}})]
    assert tradeoff_points(recs) == [
        TradeoffPoint(1, 300.0, 0.9, None, "completed", "run 1", on_frontier=True, on_speed_frontier=True),
        TradeoffPoint(2, 256.0, None, None, "oom", "run 2", on_frontier=False),
    ]


def test_an_oom_run_with_an_accuracy_does_not_push_completed_runs_off_the_frontier():
    recs = [record(1, RunStatus.COMPLETED, {"peak_rss_mb": 300.0, "accuracy": 0.8}),
            record(2, RunStatus.OOM, {"peak_rss_mb": 100.0, "accuracy": 0.99, "last_accuracy": 0.99})]
    assert [(p.run_id, p.on_frontier) for p in tradeoff_points(recs)] == [(1, True), (2, False)]


@pytest.mark.parametrize("summary", [{}, {"peak_rss_mb": None, "accuracy": 0.9}, {"peak_rss_mb": 0, "accuracy": 0.9}])
def test_tradeoff_points_drop_runs_without_a_peak(summary):
    recs = [record(1, RunStatus.COMPLETED, summary),
            record(2, RunStatus.OOM, dict(summary)),
            record(3, RunStatus.COMPLETED, {"peak_rss_mb": 50.0, "accuracy": 0.7})]
    assert ids(tradeoff_points(recs)) == [3]


@pytest.mark.parametrize("status", [RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.LOST, RunStatus.RUNNING,
                                    RunStatus.QUEUED])
def test_tradeoff_points_drop_runs_that_neither_completed_nor_ran_out_of_memory(status):
    recs = [record(1, status, {"peak_rss_mb": 10.0, "accuracy": 0.99}),
            record(2, RunStatus.COMPLETED, {"peak_rss_mb": 50.0, "accuracy": 0.7})]
    points = tradeoff_points(recs)
    assert ids(points) == [2]
    assert points[0].on_frontier  # the dropped run did not dominate it


def test_tradeoff_points_flag_the_frontier_and_keep_the_input_order():
    recs = [record(1, RunStatus.COMPLETED, {"peak_rss_mb": 300.0, "accuracy": 0.95}),
            record(2, RunStatus.COMPLETED, {"peak_rss_mb": 100.0, "accuracy": 0.80}),
            record(3, RunStatus.COMPLETED, {"peak_rss_mb": 200.0, "accuracy": 0.78}),  # beaten by 2
            record(4, RunStatus.COMPLETED, {"peak_rss_mb": 150.0, "accuracy": 0.90}),
            record(5, RunStatus.COMPLETED, {"peak_rss_mb": 400.0, "accuracy": 0.90})]  # beaten by 4
    assert [(p.run_id, p.on_frontier) for p in tradeoff_points(recs)] == [
        (1, True), (2, True), (3, False), (4, True), (5, False)]


def test_a_completed_run_without_accuracy_is_a_point_but_not_on_the_frontier():
    recs = [record(1, RunStatus.COMPLETED, {"peak_rss_mb": 10.0, "accuracy": None}),
            record(2, RunStatus.COMPLETED, {"peak_rss_mb": 50.0, "accuracy": 0.7})]
    assert [(p.run_id, p.accuracy, p.on_frontier) for p in tradeoff_points(recs)] == [(1, None, False),
                                                                                      (2, 0.7, True)]


def test_tradeoff_points_feed_best_under():
    recs = [record(1, RunStatus.COMPLETED, {"peak_rss_mb": 300.0, "accuracy": 0.95}),
            record(2, RunStatus.COMPLETED, {"peak_rss_mb": 100.0, "accuracy": 0.80}),
            record(3, RunStatus.OOM, {"peak_rss_mb": 128.0})]
    points = tradeoff_points(recs)
    assert best_under(points, 200.0).run_id == 2
    assert best_under(points, 300.0).run_id == 1
    assert best_under(points, 50.0) is None


def test_a_data_parallel_point_carries_all_its_processes_and_its_largest_worker():
    par = {"total_peak_sampled_mb": 679.6, "per_worker": [{"worker": 1, "peak_rss_mb": 255.8, "peak_exact": True},
                                                          {"worker": 2, "peak_rss_mb": 255.9, "peak_exact": True}]}
    one, ddp = tradeoff_points([record(1, RunStatus.COMPLETED, {"peak_rss_mb": 150.0, "accuracy": 0.8}),
                                record(2, RunStatus.COMPLETED, {"peak_rss_mb": 168.3, "accuracy": 0.8,
                                                                "parallel": par})])
    assert (one.all_processes_mb, one.largest_worker_mb) == (None, None)
    assert (ddp.peak_mb, ddp.all_processes_mb, ddp.largest_worker_mb) == (679.6, 679.6, 255.9)  # the run's peak
    assert (ddp.peak_exact, one.peak_exact) == (False, True)


def test_a_data_parallel_run_fits_a_budget_only_when_all_its_processes_do():
    """Issue 18: its exact peak is its coordinator's alone (167 MiB where its processes
    held 680 MiB); the best setting under 300 MiB is not a run that held 680."""
    single = pt(1, 250.0, 0.80)
    parallel = TradeoffPoint(2, 167.0, 0.85, None, "completed", "run 2", all_processes_mb=680.0, largest_worker_mb=256.0)
    assert best_under([single, parallel], 300.0) == single
    assert best_under([single, parallel], 700.0) == parallel
