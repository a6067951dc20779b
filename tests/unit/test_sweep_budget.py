"""The Sweep page's answer, from its pure parts: the budget drawn from the results, the
frontier with speed as a third objective, what the pick under the budget costs in speed,
and the trade-off chart's axes clamped to the data."""

from __future__ import annotations

import pytest

from svmcore.app.sweeps import follow_budget, grid_values, sweep_base
from svmcore.spec.knobs import KNOBS, defaults
from svmcore.sweeps.frontier import (
    TradeoffPoint,
    best_under,
    default_budget,
    speed_cost,
    speed_cost_text,
    speed_front,
)
from ui.charts import TradeoffAxes, tradeoff_axes, tradeoff_figure, tradeoff_info


def pt(run_id, peak, acc, sps, status="completed"):
    return TradeoffPoint(run_id, peak, acc, sps, status, f"run {run_id}")


POINTS = [pt(1, 150.0, 0.80, 50_000.0), pt(2, 200.0, 0.85, 20_000.0), pt(3, 250.0, 0.86, 90_000.0),
          pt(4, 300.0, 0.84, 10_000.0), pt(5, 400.0, None, None, status="oom")]


def test_default_budget_is_the_median_peak_of_the_completed_runs_rounded_up():
    assert default_budget(POINTS) == 225  # median of 150, 200, 250, 300; the oom run does not count
    assert default_budget([pt(1, 199.2, 0.8, 1.0)]) == 200
    assert default_budget([pt(1, 100.0, None, None, status="oom")]) is None
    assert default_budget([]) is None


def test_the_budget_field_follows_the_median_until_the_user_sets_it():
    state: dict = {}
    follow_budget(state, "budget_3", None)  # no completed run yet: the field stays empty
    assert state == {}
    follow_budget(state, "budget_3", 225)
    assert state == {"budget_3": 225, "budget_3_auto": 225}
    follow_budget(state, "budget_3", 240)  # more results: it follows them
    assert state == {"budget_3": 240, "budget_3_auto": 240}
    state["budget_3"] = 300  # the user sets it: it stays
    follow_budget(state, "budget_3", 260)
    assert state == {"budget_3": 300, "budget_3_auto": 240}


def test_a_sweep_starts_small_and_each_varied_knob_with_values_to_try():
    assert sweep_base() == dict(defaults(), rows=50_000, epochs=2)
    assert grid_values("batch_size") == "256,4096"  # suggested
    assert grid_values("mode") == "memory,stream,memmap"
    assert grid_values("solver") == ",".join(KNOBS["solver"].choices) and "," in grid_values("solver")  # its choices
    assert grid_values("rows") == str(defaults()["rows"])  # its default


def test_speed_front_keeps_a_fast_run_that_costs_memory():
    # 4 is beaten by 3 on all three (less memory, more accurate, faster); 3 stays though 2-D it is beaten by none
    assert [p.run_id for p in speed_front(POINTS[:4])] == [1, 2, 3]
    assert [p.run_id for p in speed_front([pt(1, 100.0, 0.8, 10.0), pt(2, 100.0, 0.8, 20.0)])] == [2]


def test_speed_cost_of_the_pick_against_the_fastest_under_the_budget_and_overall():
    best = best_under(POINTS, 225)
    assert best.run_id == 2
    cost = speed_cost(best, POINTS, 225)
    assert cost["fastest_under"].run_id == 1 and cost["slower_than_fastest_under_pct"] == pytest.approx(60.0)
    assert cost["fastest"].run_id == 3 and cost["slower_than_fastest_pct"] == pytest.approx(100 * (1 - 2 / 9))
    text = speed_cost_text(best, cost)
    assert text.startswith("Speed cost: 20,000 samples/s, 60% slower than the fastest run under the budget "
                           "(run 1: 50,000 samples/s, accuracy 0.8000)")
    assert "the fastest run of all (run 3: 90,000 samples/s) peaked at 250.0 MiB, over the budget." in text


def test_speed_cost_when_the_pick_is_the_fastest():
    best = best_under(POINTS, 1000)
    assert best.run_id == 3
    cost = speed_cost(best, POINTS, 1000)
    assert cost["slower_than_fastest_under_pct"] == 0.0 and cost["slower_than_fastest_pct"] == 0.0
    assert speed_cost_text(best, cost) == "Speed: 90,000 samples/s, the fastest run under the budget too."
    assert speed_cost_text(pt(9, 1.0, 0.5, None), cost) == "Its throughput was not measured."


def test_tradeoff_axes_are_clamped_to_the_data():
    info = tradeoff_info(POINTS, budget_mb=225)
    axes = tradeoff_axes(info)
    x0, x1 = axes.x
    assert 150 - 0.1 * 250 <= x0 < 150 and 400 < x1 <= 400 + 0.1 * 250  # the oom run's peak is shown too
    y0, y1 = axes.y
    assert 0.80 - 0.1 < y0 < 0.80 and 0.86 < y1 < 0.86 + 0.1
    assert axes.budget_in_view
    fig = tradeoff_figure(info)
    assert list(fig.layout.xaxis.range) == pytest.approx([x0, x1]) and fig.layout.xaxis.autorange is False
    assert list(fig.layout.yaxis.range) == pytest.approx([y0, y1])


def test_a_budget_outside_the_data_does_not_stretch_the_axes():
    info = tradeoff_info(POINTS[:2], budget_mb=5000)
    axes = tradeoff_axes(info)
    assert axes.x[1] < 260 and not axes.budget_in_view
    fig = tradeoff_figure(info)
    assert list(fig.layout.xaxis.range) == pytest.approx(axes.x)
    assert any("budget 5000 MiB → (above every run)" in a.text for a in fig.layout.annotations)


def test_one_point_gets_a_small_window_around_it():
    axes = tradeoff_axes(tradeoff_info([pt(1, 100.0, 0.9, 1.0)]))
    assert axes.x == pytest.approx([98.0, 102.0]) and axes.y == pytest.approx([0.895, 0.905])
    assert tradeoff_axes(tradeoff_info([])) == TradeoffAxes(x=None, y=None, budget_in_view=False, accuracies=False)


def test_a_sweep_where_every_run_ran_out_of_memory_says_so_and_draws_no_accuracy():
    # the walk saw an accuracy axis of -0.5 to 1.5 with the × at "0.5"
    info = tradeoff_info([pt(1, 172.6, None, None, "oom"), pt(2, 172.55, None, None, "oom"),
                          pt(3, 180.0, None, None, "oom")])
    fig = tradeoff_figure(info)
    assert list(fig.layout.yaxis.range) == [0, 1] and fig.layout.yaxis.showticklabels is False
    assert "no run completed" in fig.layout.yaxis.title.text
    assert any(a.text.startswith("No run completed, so none has an accuracy") for a in fig.layout.annotations)
    assert [t.name for t in fig.data] == ["out of memory"]
