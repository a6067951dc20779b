"""ui.charts: the pure ``*_info`` functions behind every chart, on small hand-built inputs,
their typed views compared with == (no Streamlit, no figure)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from svmcore.engine.summary import MemorySample, phase_spans
from svmcore.spec.events import EVAL, OUTCOME, PHASE_END, PHASE_START, PROGRESS
from svmcore.spec.result import PhaseSpan, Forecast, RunSummary
from svmcore.sweeps.frontier import TradeoffPoint
from ui.charts import (
    NO_WORKERS,
    PALETTE,
    AccuracyInfo,
    AccuracyLine,
    Band,
    Curve,
    Dot,
    MemoryInfo,
    MemoryLine,
    OomDot,
    OomMark,
    PhasePeaks,
    PhasePeaksInfo,
    RepeatMark,
    RunSeries,
    StackedInfo,
    ThroughputLine,
    TradeoffInfo,
    WorkerCurve,
    WorkersInfo,
    accuracy_info,
    accuracy_range,
    legend_grid,
    label_lanes,
    memory_info,
    monitoring_note,
    panel_domains,
    panels_of,
    oom_marks,
    phase_peaks_figure,
    phase_peaks_info,
    _lookalike,
    chart_colours,
    run_colour,
    run_series,
    samples_at,
    stacked_figure,
    stacked_info,
    thin,
    throughput_info,
    tint,
    tradeoff_figure,
    tradeoff_info,
    view_series,
    x_range,
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
    assert memory_info(SAMPLES, summary) == MemoryInfo(
        MemoryLine([0.123, 0.5, 1.0], [40.0, 100.0, 64.5], [30.0, 80.0, 60.0], [10.0, 20.0, 4.5], [], []),
        phases=[("imports", 0.0, 0.3), ("train", 0.3, 1.0)], peak_mb=101.5, cap_mb=256.0, cgroup_peak_mb=None,
        floor_mb=38.0, predicted_mb=120.0)


def test_memory_info_of_nothing():
    assert memory_info([], RunSummary()) == MemoryInfo(MemoryLine([], [], [], [], [], []), [], None, None, None,
                                                       None, None)


def test_memory_info_leaves_out_phases_without_an_end():
    summary = RunSummary(phases=(PhaseSpan("load", 0.0, 0.5, 0.5, 10.0), PhaseSpan("train", 0.5, None, None, None)))
    assert memory_info(SAMPLES, summary).phases == [("load", 0.0, 0.5)]


def test_memory_info_a_given_prediction_wins_over_the_stored_one():
    summary = RunSummary(prediction={"predicted_peak_mb": 120.0})
    assert memory_info([], summary, Forecast(predicted_peak_mb=99.0)).predicted_mb == 99.0
    assert memory_info([], summary, None).predicted_mb == 120.0
    assert memory_info([], RunSummary(prediction={"error": "not calibrated"})).predicted_mb is None


def test_memory_info_of_a_single_sample():
    info = memory_info([ms(2.0, 50, 45, 5)], RunSummary(peak_rss_mb=55.0))
    assert (info.line, info.peak_mb) == (MemoryLine([2.0], [50.0], [45.0], [5.0], [], []), 55.0)


# ---------------------------------------------------------------- a live run's phases (engine.summary.phase_spans)

def test_live_phases_of_no_events_is_empty():
    assert phase_spans([], end_s=3.0) == []


def test_live_phases_the_open_phase_ends_now():
    events = [start("imports", 0.1), end("imports", 0.6, 0.5, 80), start("load", 0.6),
              {"kind": PROGRESS, "t_s": 0.9, "samples": 0, "train_elapsed_s": 0.0}]
    assert phase_spans(events, end_s=2.5) == [PhaseSpan("imports", 0.1, 0.6, 0.5, 80.0),
                                              PhaseSpan("load", 0.6, 2.5, pytest.approx(1.9), None)]


def test_live_phases_of_a_run_whose_phases_all_ended_keep_their_ends():
    events = [start("imports", 0.1), end("imports", 0.6, 0.5, 80), start("train", 0.6), end("train", 2.0, 1.4, 96)]
    assert phase_spans(events, end_s=9.0) == [PhaseSpan("imports", 0.1, 0.6, 0.5, 80.0),
                                              PhaseSpan("train", 0.6, 2.0, 1.4, 96.0)]


def test_live_phases_ignore_an_end_of_another_phase():
    events = [start("load", 0.0), end("train", 1.0, 1.0, 50)]
    assert phase_spans(events, end_s=1.5) == [PhaseSpan("load", 0.0, 1.5, 1.5, None)]


def test_live_phases_feed_memory_info():
    events = [start("imports", 0.1), end("imports", 0.6, 0.5, 80), start("load", 0.6)]
    summary = RunSummary(phases=phase_spans(events, end_s=1.0))
    assert memory_info([], summary).phases == [("imports", 0.1, 0.6), ("load", 0.6, 1.0)]


# ---------------------------------------------------------------- throughput_info

PROGRESS_EVENTS = [progress(1.0, 0, 0.0), progress(2.0, 100, 1.0), progress(3.0, 300, 2.0),
                   progress(4.0, 600, 3.0), progress(5.0, 1000, 4.0)]


def test_throughput_is_a_moving_average_over_three_intervals():
    assert throughput_info(PROGRESS_EVENTS) == ThroughputLine([2.0, 3.0, 4.0, 5.0], [100.0, 150.0, 200.0, 300.0])


def test_throughput_window_of_one_is_the_rate_between_neighbours():
    assert throughput_info(PROGRESS_EVENTS, window=1) == ThroughputLine([2.0, 3.0, 4.0, 5.0],
                                                                        [100.0, 200.0, 300.0, 400.0])


def test_throughput_ignores_other_events_and_rounds_time():
    events = [start("train", 0.5), progress(1.0, 0, 0.0), ev(1.5, 0, 0.5), progress(2.00049, 50, 0.5)]
    assert throughput_info(events) == ThroughputLine([2.0], [100.0])


@pytest.mark.parametrize("events", [[], [progress(1.0, 100, 0.5)], [start("train", 0.0), ev(1.0, 10, 0.5)]])
def test_throughput_needs_two_progress_events(events):
    assert throughput_info(events) == ThroughputLine([], [])


def test_throughput_skips_intervals_without_training_time():
    events = [progress(1.0, 100, 1.0), progress(1.1, 100, 1.0), progress(2.0, 300, 2.0)]
    assert throughput_info(events, window=1) == ThroughputLine([2.0], [200.0])


# ---------------------------------------------------------------- accuracy_info

def test_accuracy_info_separates_the_final_evaluation():
    events = [ev(1.0, 100, 0.6, 0.55), progress(1.5, 200, 1.5), ev(2.0, 200, 0.7, 0.66),
              ev(3.0, 200, 0.75, 0.7, rows=4000, final=True)]
    assert accuracy_info(events) == AccuracyInfo(samples=[100, 200], t=[1.0, 2.0], accuracy=[0.6, 0.7],
                                                 balanced=[0.55, 0.66], rows=500, final=(200, 0.75, 4000),
                                                 final_t=3.0, final_balanced=0.7)


def test_accuracy_info_of_no_events():
    assert accuracy_info([]) == AccuracyInfo([], [], [], [], None, None, None, None)


def test_accuracy_info_of_a_run_still_training_has_no_final():
    info = accuracy_info([ev(1.0, 100, 0.6)])
    assert info == AccuracyInfo([100], [1.0], [0.6], [None], 500, None, None, None)


def test_accuracy_info_with_only_the_final_evaluation():
    info = accuracy_info([ev(3.0, 5000, 0.9, rows=1000, final=True)])
    assert info == AccuracyInfo([], [], [], [], None, (5000, 0.9, 1000), 3.0, None)


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


# ---------------------------------------------------------------- thin

def test_thin_keeps_every_sample_up_to_the_limit():
    assert thin([3.0, 1.0, 2.0], most=3) == [0, 1, 2]
    assert thin([], most=3) == []


def test_thin_keeps_the_highest_of_each_span_and_the_last():
    values = [1, 5, 2, 8, 3, 9, 0, 4, 7, 1]
    assert thin(values, most=4) == [1, 5, 8, 9]  # spans [0,3) [3,6) [6,9), then the last sample


def test_thin_never_drops_the_peak():
    values = [0.0] * 999 + [50.0] + [0.0] * 1000
    keep = thin(values, most=10)
    assert len(keep) == 10 and 999 in keep and keep[-1] == 1999


# ---------------------------------------------------------------- run_series: one run on one x axis

SUMMARY = RunSummary(peak_rss_mb=101.5, peak_phase="train", cap="rlimit", cap_mb=256.0, floor_mb=38.0,
                     phases=(PhaseSpan("imports", 0.0, 0.3, 0.3, 38.0), PhaseSpan("train", 0.3, 1.0, 0.7, 101.5)),
                     prediction={"predicted_peak_mb": 120.0})
EVENTS = [start("imports", 0.0), end("imports", 0.3, 0.3, 38), start("train", 0.3), progress(0.5, 0, 0.0),
          progress(0.75, 100, 0.25), ev(0.8, 100, 0.6, 0.55), progress(1.0, 300, 0.5), end("train", 1.0, 0.7, 101.5),
          ev(1.1, 300, 0.7, 0.66, rows=4000, final=True)]
COMMON = {"id": 3, "name": "stream", "title": "run 3 · stream", "colour": PALETTE[2], "sampled": 3, "drawn": 3,
          "peak_mb": 101.5, "peak_phase": "train", "cap_mb": 256.0, "cap": "rlimit", "cgroup_peak_mb": None,
          "floor_mb": 38.0, "predicted_mb": 120.0, "monitor": "full"}


def test_run_series_by_time_puts_all_three_panels_on_seconds_since_launch():
    assert run_series(3, SAMPLES, EVENTS, SUMMARY, "time", name="stream") == RunSeries(
        **COMMON, x="time",
        mem=MemoryLine([0.123, 0.5, 1.0], [40.0, 100.0, 64.5], [30.0, 80.0, 60.0], [10.0, 20.0, 4.5], [], []),
        thr=ThroughputLine([0.75, 1.0], [400.0, 600.0]), acc=AccuracyLine([0.8], [0.6], [0.55], 500),
        final=AccuracyLine(1.1, 0.7, 0.66, 4000), phases=[("imports", 0.0, 0.3), ("train", 0.3, 1.0)],
        workers=NO_WORKERS)


def test_run_series_by_samples_seen_moves_every_panel_and_the_phases():
    assert run_series(3, SAMPLES, EVENTS, SUMMARY, "samples", name="stream") == RunSeries(
        **COMMON, x="samples",
        mem=MemoryLine([0.0, 0.0, 300.0], [40.0, 100.0, 64.5], [30.0, 80.0, 60.0], [10.0, 20.0, 4.5], [], []),
        thr=ThroughputLine([100.0, 300.0], [400.0, 600.0]), acc=AccuracyLine([100], [0.6], [0.55], 500),
        final=AccuracyLine(300, 0.7, 0.66, 4000),
        phases=[("train", 0.0, 300.0)],  # imports saw no samples: no width on this axis
        workers=NO_WORKERS)


def test_run_series_of_a_run_that_never_trained_has_nothing_by_samples_seen():
    series = run_series(4, SAMPLES, EVENTS[:2], RunSummary(phases=SUMMARY.phases[:1]), "samples")
    assert (series.mem, series.drawn, series.sampled, series.phases, series.final) == (
        MemoryLine([], [], [], [], [], []), 0, 3, [], None)


def test_run_series_thins_long_runs_keeping_the_peak():
    samples = [ms(i / 50, 10 + (i == 7) * 90, 10, 0) for i in range(20)]
    series = run_series(1, samples, [], RunSummary(), most=5)
    assert series.mem.x == [0.0, 0.14, 0.18, 0.28, 0.38]  # spans [0,4) [4,9) [9,14) [14,19), the last
    assert series.mem.rss == [10.0, 100.0, 10.0, 10.0, 10.0]
    assert (series.drawn, series.sampled) == (5, 20)


def test_a_run_without_live_monitoring_says_so_in_its_empty_panels():
    quiet = [e for e in EVENTS if e["kind"] not in (PROGRESS, EVAL) or e.get("final")]
    off = run_series(3, SAMPLES, quiet, SUMMARY, "time", monitor="off")
    light = run_series(3, SAMPLES, [e for e in EVENTS if e["kind"] != EVAL or e.get("final")], SUMMARY,
                       "time", monitor="light")
    assert off.monitor == "off" and off.acc.x == [] and off.final.accuracy == 0.7
    assert monitoring_note([off], "accuracy") == "monitoring off: no live accuracy (final evaluation only)"
    assert monitoring_note([off], "throughput").startswith("monitoring off: no live throughput")
    assert monitoring_note([light], "accuracy").startswith("monitoring light: no live accuracy")
    assert monitoring_note([light], "throughput") is None
    assert monitoring_note([run_series(3, SAMPLES, EVENTS, SUMMARY)], "accuracy") is None
    texts = [a.text for a in stacked_figure(stacked_info([off], live=True)).layout.annotations]
    assert "monitoring off: no live accuracy (final evaluation only)" in texts
    assert not any("drawn from the first training batch" in t for t in texts)


@dataclass(frozen=True)
class LiveView:
    """The attributes of svmcore.app.runs.RunView that view_series reads."""

    id: int
    samples: list
    events: list
    summary: RunSummary
    is_live: bool
    config: dict = field(default_factory=dict)
    prediction: Forecast | None = None
    colour: str | None = None


def test_view_series_of_a_live_run_ends_its_open_phase_now_and_shows_its_cap_and_forecast():
    view = LiveView(5, SAMPLES, [start("imports", 0.0), end("imports", 0.3, 0.3, 38), start("load", 0.3)],
                    RunSummary(), True, {"memory_cap_mb": 512}, Forecast(predicted_peak_mb=99.0))
    series = view_series(view)
    assert series.phases == [("imports", 0.0, 0.3), ("load", 0.3, 1.0)]
    assert (series.cap_mb, series.floor_mb, series.predicted_mb, series.peak_mb) == (512, 38.0, 99.0, None)


def test_view_series_of_a_finished_run_reads_its_summary():
    view = LiveView(3, SAMPLES, EVENTS, SUMMARY, False)
    assert view_series(view, "time", "stream") == run_series(3, SAMPLES, EVENTS, SUMMARY, "time", name="stream")


# ---------------------------------------------------------------- the stacked chart

def series_of(run_id, samples=SAMPLES, events=EVENTS, summary=SUMMARY, x="time"):
    return run_series(run_id, samples, events, summary, x)


def test_panels_of_a_finished_run_are_those_with_data():
    assert panels_of([series_of(1)]) == ["memory", "throughput", "accuracy"]
    oom_in_imports = series_of(2, events=EVENTS[:2], summary=RunSummary())
    assert panels_of([oom_in_imports]) == ["memory"]
    assert panels_of([oom_in_imports, series_of(1)]) == ["memory", "throughput", "accuracy"]


def test_panels_of_a_live_run_are_all_three_and_none_without_samples():
    assert panels_of([series_of(2, events=EVENTS[:2], summary=RunSummary())], live=True) == [
        "memory", "throughput", "accuracy"]
    assert panels_of([series_of(2, samples=[], events=[], summary=RunSummary())], live=True) == []
    assert panels_of([]) == []


def test_panel_domains_stack_top_to_bottom_by_weight():
    assert panel_domains(["memory", "throughput", "accuracy"]) == {
        "memory": (0.5672, 1.0), "throughput": (0.3052, 0.5072), "accuracy": (0.0, 0.2452)}
    assert panel_domains(["memory", "accuracy"]) == {"memory": (0.4, 1.0), "accuracy": (0.0, 0.34)}
    assert panel_domains(["memory"]) == {"memory": (0.0, 1.0)}
    assert panel_domains([]) == {}


def test_x_range_spans_every_panel_of_every_run_from_zero():
    assert x_range([series_of(1)], pad=0.0) == [0.0, 1.1]  # the final evaluation is the last thing drawn
    assert x_range([series_of(1)]) == [0.0, 1.1 * 1.02]
    later = series_of(2, samples=[ms(4.0, 10, 10, 0)], events=[], summary=RunSummary())
    assert x_range([series_of(1), later], pad=0.0) == [0.0, 4.0]
    assert x_range([series_of(1, x="samples")], pad=0.0) == [0.0, 300.0]
    assert x_range([series_of(2, samples=[], events=[], summary=RunSummary())]) == [0.0, 1.0]


PX = {"plot_width": 100, "char": 10, "pad": 0, "lane": 15}


def test_label_lanes_stack_names_of_short_phases_and_anchor_them_inside_at_the_edges():
    phases = [("dddd", 40, 100), ("a", 0, 10), ("bb", 10, 12), ("ccc", 12, 14), ("zz", 95, 100)]
    assert label_lanes(phases, 0, 100, PX) == [
        ("a", 5.0, 0, "center"),
        ("bb", 11.0, 1, "center"),  # would touch "a": one lane up
        ("ccc", 13.0, 0, "left"),  # would stick out on the left: anchored at its centre, going right
        ("dddd", 70.0, 0, "center"),
        ("zz", 97.5, 1, "right"),  # would stick out on the right
    ]


def test_label_lanes_of_no_phases_and_of_an_empty_range():
    assert label_lanes([], 0, 1, PX) == []
    assert label_lanes([("train", 0.0, 0.0)], 0.0, 0.0, PX) == [("train", 0.0, 0, "left")]


def test_stacked_info_of_one_run_draws_its_phases():
    s = series_of(3)
    info = stacked_info([s])
    assert info == StackedInfo(x="time", range=[0.0, 1.1 * 1.02], panels=["memory", "throughput", "accuracy"],
                               domains=panel_domains(["memory", "throughput", "accuracy"]), live=False, runs=[s],
                               phases=s.phases, labels=label_lanes(s.phases, 0.0, 1.1 * 1.02), phases_of=3, bands=[])


def test_stacked_info_of_several_runs_draws_the_phases_of_the_one_asked_or_none():
    a, b = series_of(1), series_of(2, summary=RunSummary(phases=(PhaseSpan("load", 0.0, 0.9, 0.9, 50.0),)))
    assert stacked_info([a, b], phases_of=2).phases == [("load", 0.0, 0.9)]
    assert stacked_info([a, b]).phases == [] and stacked_info([a, b]).phases_of is None


def test_stacked_figure_shares_one_x_axis_across_the_panels():
    fig = stacked_figure(stacked_info([series_of(3)])).to_plotly_json()
    layout = fig["layout"]
    assert {d.get("xaxis", "x") for d in fig["data"]} == {"x"}
    assert {d.get("yaxis", "y") for d in fig["data"]} == {"y", "y2", "y3"}
    assert "xaxis2" not in layout and layout["xaxis"]["range"] == [0.0, 1.1 * 1.02]
    assert (layout["hovermode"], layout["hoversubplots"]) == ("x unified", "axis")
    assert [layout[k]["domain"] for k in ("yaxis", "yaxis2", "yaxis3")] == [[0.5672, 1.0], [0.3052, 0.5072],
                                                                             [0.0, 0.2452]]
    bands = [(sh["x0"], sh["x1"], sh["yref"]) for sh in layout["shapes"] if sh["xref"] == "x"]
    assert bands == [(0.0, 0.3, "y domain"), (0.0, 0.3, "y2 domain"), (0.0, 0.3, "y3 domain"),
                     (0.3, 1.0, "y domain"), (0.3, 1.0, "y2 domain"), (0.3, 1.0, "y3 domain")]
    names = {d["name"] for d in fig["data"]}
    assert {"exact peak 102 MiB", "predicted 120 MiB", "rlimit cap 256 MiB", "balanced accuracy"} <= names
    # every label outside the plotting area: phase names above it (y = 1, pushed up), none inside
    assert [(a["text"], a["yref"], a["y"], a["ay"] < 0) for a in layout["annotations"]] == [
        ("imports", "paper", 1, True), ("train", "paper", 1, True)]


def test_stacked_figure_of_nothing_is_empty():
    assert stacked_figure(stacked_info([series_of(2, samples=[], events=[], summary=RunSummary())])).data == ()


def test_tint_is_the_colour_with_alpha():
    assert tint("#1F77B4", 0.3) == "rgba(31,119,180,0.3)"


# ---------------------------------------------------------------- several runs: per-phase peaks

@dataclass(frozen=True)
class View:
    """The attributes of svmcore.app.runs.RunView that phase_peaks_info reads."""

    id: int
    summary: RunSummary = field(default_factory=RunSummary)


def test_phase_peaks_info_lines_up_each_runs_phases_and_marks_the_owner():
    a = View(1, RunSummary(peak_phase="load", phases=(PhaseSpan("imports", 0, 1, 1, 128.0),
                                                      PhaseSpan("load", 1, 2, 1, 300.0))))
    b = View(12, RunSummary(peak_phase="train", phases=(PhaseSpan("train", 1, 2, 1, 200.0),
                                                        PhaseSpan("imports", 0, 1, 1, 130.0))))
    assert phase_peaks_info([a, b], {1: "memory"}) == PhasePeaksInfo(
        ["imports", "load", "train"],
        [PhasePeaks(1, "run 1 · memory", PALETTE[0], [128.0, 300.0, None], "load"),
         PhasePeaks(12, "run 12", PALETTE[11], [130.0, None, 200.0], "train")])


def test_phase_peaks_info_of_no_runs_and_of_a_phase_killed_before_its_peak():
    assert phase_peaks_info([]) == PhasePeaksInfo([], [])
    killed = View(2, RunSummary(peak_phase=None, phases=(PhaseSpan("load", 0, None, None, None),)))
    assert phase_peaks_info([killed]).runs[0].peaks == [None]


def test_run_colours_are_stable_and_wrap_around_the_palette():
    assert [run_colour(i) for i in (1, 2, len(PALETTE), len(PALETTE) + 1)] == [PALETTE[0], PALETTE[1], PALETTE[-1],
                                                                                PALETTE[0]]


def test_run_colours_are_distinct():
    assert len(set(PALETTE)) == len(PALETTE) == 16


def test_chart_colours_never_repeat_on_one_chart():
    """Issue 22: runs 8 and 18 drew the same pink. On one chart no two runs share a colour,
    however many there are and whatever their ids."""
    for ids in ([8, 18], list(range(1, 13)), [1, 17, 33, 49], list(range(1, 41)), [5, 21, 3, 19, 37]):
        colours = chart_colours(ids)
        assert sorted(colours) == sorted(ids) and len(set(colours.values())) == len(ids), (ids, colours)


def test_chart_colours_keep_a_runs_own_colour_and_the_one_picked():
    assert chart_colours([1, 2]) == {1: PALETTE[0], 2: PALETTE[1]}
    assert chart_colours([1, 17]) == {1: PALETTE[0], 17: PALETTE[1]}  # 17's own is taken: the next free
    assert chart_colours([2, 17]) == {2: PALETTE[1], 17: PALETTE[0]}  # the same run, the same colour as alone
    # a picked colour wins, even over a run whose own colour it is; lower case is the same colour
    assert chart_colours([1, 2], {2: "#1f77b4"}) == {2: PALETTE[0], 1: PALETTE[1]}
    assert chart_colours([3], {3: "#123456"}) == {3: "#123456"}


def test_a_run_that_looks_like_a_picked_colour_moves_and_the_pick_stays():
    """The browser walk picked #00AA00 for run 5: distinct from run 3's #2CA02C by its code,
    the same green on the chart. The run with no pick moves; one picked alike stays."""
    colours = chart_colours([3, 5], {5: "#00aa00"})
    assert colours[5] == "#00AA00" and colours[3] != PALETTE[2]
    assert not _lookalike(colours[3], "#00AA00")
    assert chart_colours([3, 5]) == {3: PALETTE[2], 5: PALETTE[4]}  # without the pick, each its own
    assert chart_colours([3, 5], {3: "#2ca02c", 5: "#00aa00"}) == {3: "#2CA02C", 5: "#00AA00"}  # both the user's
    many = chart_colours(list(range(1, 13)), {12: PALETTE[0]})
    assert len(set(many.values())) == 12 and many[12] == PALETTE[0]
    assert not any(_lookalike(c, PALETTE[0]) for r, c in many.items() if r != 12)


def test_a_train_chart_draws_the_run_in_its_picked_colour():
    """Train's chart is one run: the walk saw it ignore the colour picked on Compare."""
    view = LiveView(3, SAMPLES, EVENTS, SUMMARY, False, colour="#00AA00")
    assert view_series(view).colour == "#00AA00"
    assert view_series(LiveView(3, SAMPLES, EVENTS, SUMMARY, False)).colour == run_colour(3)
    assert view_series(view, colour="#123456").colour == "#123456"  # a chart of several runs decides


# ---------------------------------------------------------------- tradeoff_info

def tp(run_id, peak, acc, status="completed", sps=None, front=False):
    return TradeoffPoint(run_id, peak, acc, sps, status, f"label {run_id}", on_frontier=front)


def test_tradeoff_info_splits_completed_oom_and_the_frontier():
    points = [tp(1, 300.0, 0.95, sps=1000.0, front=True), tp(2, 100.0, 0.80, sps=None, front=True),
              tp(3, 200.0, 0.78, sps=500.0), tp(4, 256.0, None, status="oom"), tp(5, 50.0, 0.99, status="failed")]
    assert tradeoff_info(points, budget_mb=512.0) == TradeoffInfo(
        done=[Dot(1, 300.0, 0.95, 1000.0, "label 1"), Dot(2, 100.0, 0.80, 0.0, "label 2"),
              Dot(3, 200.0, 0.78, 500.0, "label 3")],
        oom=[OomDot(4, 256.0, "label 4")],
        frontier=[(100.0, 0.80), (300.0, 0.95)],  # by peak, not input order
        budget_mb=512.0)


def test_tradeoff_info_of_no_points():
    assert tradeoff_info([]) == TradeoffInfo([], [], [], None)


def test_tradeoff_info_of_only_oom_runs():
    assert tradeoff_info([tp(1, 64.0, None, status="oom"), tp(2, 96.0, None, status="oom")]) == TradeoffInfo(
        [], [OomDot(1, 64.0, "label 1"), OomDot(2, 96.0, "label 2")], [], None)


def test_tradeoff_info_of_one_point():
    assert tradeoff_info([tp(7, 10.0, 0.5, sps=3.0, front=True)]) == TradeoffInfo(
        [Dot(7, 10.0, 0.5, 3.0, "label 7")], [], [(10.0, 0.5)], None)


def test_tradeoff_info_reads_the_frontier_flags_of_tradeoff_points():
    from svmcore.spec.status import RunStatus
    from svmcore.store.records import RunRecord
    from svmcore.sweeps.frontier import tradeoff_points

    def rec(i, status, peak, acc):
        return RunRecord(i, 0.0, 1.0, status, {}, RunSummary(peak_rss_mb=peak, accuracy=acc, samples_per_s=10.0),
                         None, None, None, None, None, None, 1, None)

    points = tradeoff_points([rec(1, RunStatus.COMPLETED, 300.0, 0.9), rec(2, RunStatus.COMPLETED, 100.0, 0.8),
                              rec(3, RunStatus.COMPLETED, 200.0, 0.7), rec(4, RunStatus.OOM, 64.0, None)])
    info = tradeoff_info(points)
    assert info.frontier == [(100.0, 0.8), (300.0, 0.9)]
    assert info.oom == [OomDot(4, 64.0, "run 4")]
    assert [d.run_id for d in info.done] == [1, 2, 3]


def test_events_of_other_kinds_do_not_disturb_the_series():
    noise = [{"kind": OUTCOME, "t_s": 9.0, "status": "completed"}, start("train", 0.0)]
    events = noise + PROGRESS_EVENTS[:3] + [ev(2.0, 100, 0.6)]
    assert throughput_info(events) == throughput_info(PROGRESS_EVENTS[:3])
    assert accuracy_info(events).samples == [100]
    assert samples_at(events, [2.0]) == [100.0]


def test_workers_info_puts_each_dask_worker_on_the_run_clock_and_sums_all_processes():
    from svmcore.spec.events import WORKER_MEMORY
    from ui.charts import workers_info

    mib = 2**20
    events = [{"kind": WORKER_MEMORY, "worker": 1, "t_s": 0.5, "started_ago_s": 0.25, "dt": [0.0, 0.25],
               "rss_bytes": [10 * mib, 20 * mib]},
              {"kind": WORKER_MEMORY, "worker": 2, "t_s": 0.75, "started_ago_s": 0.5, "dt": [0.0], "rss_bytes": [5 * mib]}]
    info = workers_info(SAMPLES, events)
    assert info == WorkersInfo(
        [WorkerCurve(1, [0.25, 0.5], [10.0, 20.0]), WorkerCurve(2, [0.25], [5.0])],
        # coordinator 40 at 0.123 (no worker yet), 100 at 0.5 (+20 +5), 64.5 at 1.0 (held: +20 +5)
        Curve([0.12345, 0.5, 1.0], [40.0, 125.0, 89.5]))
    assert workers_info(SAMPLES, EVENTS) == NO_WORKERS == WorkersInfo([], Curve([], []))


def test_the_accuracy_axis_stays_between_0_and_1():
    """Issue 22: one final accuracy of 1.0 drew an axis from 0 to 2."""
    s = series_of(3)
    assert accuracy_range([s]) == [0.55 - 0.03, 0.7 + 0.03]
    perfect = s._replace(acc=s.acc._replace(accuracy=[1.0], balanced=[1.0]),
                         final=s.final._replace(accuracy=1.0, balanced=1.0))
    lo, hi = accuracy_range([perfect])
    assert 0.9 < lo < 1.0 < hi <= 1.015
    fig = stacked_figure(stacked_info([perfect])).to_plotly_json()
    assert fig["layout"]["yaxis3"]["range"] == [lo, hi]
    assert accuracy_range([s._replace(acc=s.acc._replace(accuracy=[], balanced=[]), final=None)]) is None


def test_oom_runs_at_the_same_peak_share_one_mark_that_counts_them():
    """Issue 22: two oom points at the same place drew as one ×."""
    marks = oom_marks([(4, 256.2, "a"), (9, 255.9, "b"), (5, 300.0, "c")])
    assert marks == [OomMark(256.2, ["run 4: a (oom at 256 MiB)", "run 9: b (oom at 256 MiB)"]),
                     OomMark(300.0, ["run 5: c (oom at 300 MiB)"])]
    fig = tradeoff_figure(tradeoff_info([tp(4, 256.2, None, status="oom"), tp(9, 255.9, None, status="oom"),
                                         tp(1, 100.0, 0.9, sps=10.0, front=True)]))
    oom = next(d for d in fig.data if d.name == "out of memory")
    assert list(oom.text) == ["×2"] and "run 9" in oom.customdata[0] and "run 4" in oom.customdata[0]


def test_phase_peak_labels_stand_upright_so_they_never_overlap():
    a = View(1, RunSummary(peak_phase="load", phases=(PhaseSpan("load", 0, 1, 1, 300.0),)))
    b = View(2, RunSummary(peak_phase="load", phases=(PhaseSpan("load", 0, 1, 1, 280.0),)))
    fig = phase_peaks_figure(phase_peaks_info([a, b]))
    assert [(list(d.text), d.textangle) for d in fig.data] == [(["peak"], -90), (["peak"], -90)]


def test_twelve_runs_phase_peaks_get_legend_rows_below_and_the_height_for_them():
    """The walk saw 12 runs' legend rows leave the bars about 25 px of height; then a legend
    column beside them squeezed the bars to 40% of the chart's width (issue 43): rows below,
    as many entries to a row as the widest name allows, and the chart taller by its rows."""
    views = [View(i, RunSummary(peak_phase="load", phases=(PhaseSpan("load", 0, 1, 1, 100.0 + i),)))
             for i in range(1, 13)]
    few = phase_peaks_figure(phase_peaks_info(views[:3]))
    assert few.layout.legend.orientation == "h" and few.layout.height == 340
    many = phase_peaks_figure(phase_peaks_info(views, {v.id: f"batch size {16 * v.id}" for v in views}))
    per_row, rows = legend_grid([f"run {v.id} · batch size {16 * v.id}" for v in views])
    assert (per_row, rows) == (2, 6)  # 23 characters: two to a 560 px plot
    assert many.layout.legend.orientation == "h" and many.layout.legend.entrywidth == 1 / 2
    assert many.layout.height == 340 + 22 * 5


# ---------------------------------------------------------------- a cgroup cap: what it limits, against it

def charged(t, rss_mb, anon_mb, file_mb, charge_mb, cache_mb, hwm_mb=0):
    return MemorySample(t, int(rss_mb * MiB), int(anon_mb * MiB), int(file_mb * MiB), int(hwm_mb * MiB),
                        int(charge_mb * MiB), int(cache_mb * MiB))


CAPPED = [charged(0.1, 90, 40, 50, 42, 2), charged(0.5, 170, 115, 55, 125, 5), charged(1.0, 160, 100, 60, 140, 40)]
CAPPED_SUMMARY = RunSummary(peak_rss_mb=171.0, cap="cgroup", cap_mb=150.0, cgroup_peak_mb=141.0,
                            cgroup_held_peak_mb=120.0)


def test_memory_info_of_a_cgroup_capped_run_has_what_its_cgroup_is_charged():
    info = memory_info(CAPPED, CAPPED_SUMMARY)
    assert (info.line.held, info.line.cache) == ([40.0, 120.0, 100.0], [2.0, 5.0, 40.0])  # the charge, split
    assert (info.cgroup_peak_mb, info.cap_mb, info.peak_mb) == (141.0, 150.0, 171.0)
    assert max(h + c for h, c in zip(info.line.held, info.line.cache)) <= info.cap_mb < max(info.line.rss)
    plain = memory_info(SAMPLES, SUMMARY)
    assert (plain.line.held, plain.line.cache, plain.cgroup_peak_mb) == ([], [], None)


def test_thinning_a_capped_run_keeps_the_peak_of_its_charge_as_well_as_of_its_rss():
    samples = [charged(i / 50, 100 + (i == 3) * 50, 60, 40, 60 + (i == 11) * 80, 0) for i in range(20)]
    series = run_series(1, samples, [], CAPPED_SUMMARY, most=5)
    m = series.mem
    assert max(m.rss) == 150.0 and max(h + c for h, c in zip(m.held, m.cache)) == 140.0
    assert len(m.x) == len(m.held) == len(m.cache) == len(m.rss) and m.x == sorted(m.x)


def test_a_capped_runs_chart_draws_the_charge_against_the_cap_and_rss_beside_it():
    fig = stacked_figure(stacked_info([run_series(4, CAPPED, [], CAPPED_SUMMARY)])).to_plotly_json()
    by_name = {d["name"]: d for d in fig["data"]}
    held, cache = by_name["charged to its cgroup: memory the kernel cannot reclaim"], by_name[
        "charged to its cgroup: page cache (reclaimed before any kill)"]
    assert held["stackgroup"] == cache["stackgroup"] == "charge" and list(held["y"]) == [40.0, 120.0, 100.0]
    assert {"cgroup cap 150 MiB", "cgroup exact peak 141 MiB (what the cap limits)", "exact peak 171 MiB",
            "total RSS"} <= set(by_name)
    assert "anonymous" not in by_name and "file-backed" not in by_name  # RSS beside it as a line, not a second stack
    assert list(by_name["total RSS"]["y"]) == [90.0, 170.0, 160.0]


def test_a_live_capped_run_draws_its_charge_under_its_cgroup_cap():
    view = LiveView(6, CAPPED, [start("imports", 0.0)], RunSummary(), True, {"memory_cap_mb": 150, "cap_kind": "auto"})
    series = view_series(view)
    assert (series.cap, series.cap_mb, series.mem.held) == ("cgroup", 150, [40.0, 120.0, 100.0])


def test_the_memory_caption_says_what_is_drawn_and_for_a_capped_run_why_rss_is_not_what_the_cap_limits():
    from ui.charts import memory_caption

    plain = memory_caption(run_series(3, SAMPLES, EVENTS, SUMMARY))
    assert plain.startswith("Memory: resident set size sampled 50 times a second (3 samples), stacked as anonymous")
    capped = memory_caption(run_series(4, CAPPED, [], CAPPED_SUMMARY), "It peaked at 141 MiB.")
    assert capped.startswith("Memory: what the kernel charges to the run's cgroup, the quantity its cgroup cap of "
                             "150 MiB limits, sampled 50 times a second (3 samples)")
    assert capped.endswith("It peaked at 141 MiB.")
    live = memory_caption(view_series(LiveView(6, CAPPED, [], RunSummary(), True, {"memory_cap_mb": 150})))
    assert "other processes read into memory first" in live  # the reason, before the run's own figures exist


def test_a_capped_sample_without_its_charge_is_a_gap_not_a_crash():
    """The cgroup read can fail for one sample (the group going as the run ends): that sample has
    RSS but no charge, drawn as a gap."""
    samples = CAPPED + [ms(1.2, 150, 95, 55)]
    info = memory_info(samples, CAPPED_SUMMARY)
    assert (info.line.held[-1], info.line.cache[-1]) == (None, None) and info.line.held[:3] == [40.0, 120.0, 100.0]
    series = run_series(4, samples, [], CAPPED_SUMMARY, most=3)
    assert series.mem.held and len(series.mem.held) == len(series.mem.x)



def test_a_legend_row_holds_as_many_runs_as_their_widest_name_allows():
    assert legend_grid([]) == (1, 0)
    assert legend_grid(["run 1 · stream", "run 2 · float32", "run 3"]) == (3, 1)  # 15 chars: 147 px each
    assert legend_grid(["run 1 · " + "x" * 100, "run 2"]) == (1, 2)  # wider than the plot: one a row


def test_a_storys_trade_off_keeps_each_runs_colour_and_room_for_its_tick_labels():
    """Issue 43: the story's trade-off slide recoloured runs by speed (run 8 pink everywhere,
    purple there), and its PNG (plotly.js, no Streamlit theme) cut the accuracy ticks to "16,
    14, 12" with the axis title over them."""
    info = tradeoff_info([tp(1, 300.0, 0.816, sps=1000.0, front=True), tp(8, 200.0, 0.814, sps=500.0, front=True)])
    fig = tradeoff_figure(info, labelled=True, colours={1: "#1F77B4", 8: "#E377C2"})
    done = next(d for d in fig.data if d.name == "completed runs")
    assert list(done.marker.color) == ["#1F77B4", "#E377C2"] and not done.showlegend and done.marker.colorscale is None
    assert fig.layout.yaxis.automargin and fig.layout.yaxis.tickformat == ".3f" and fig.layout.xaxis.automargin
    by_speed = next(d for d in tradeoff_figure(info).data if d.name == "completed runs")
    assert list(by_speed.marker.color) == [1000.0, 500.0] and by_speed.marker.showscale


def test_a_live_runs_empty_panels_keep_their_subplots_and_their_texts_apart():
    """Issue 43: in a run's first seconds the throughput and accuracy panels had no trace, so
    plotly.js made no subplot for them: their two "drawn from the first training batch on"
    texts were written over each other under the memory panel."""
    samples = [MemorySample(t * 0.02, (20 + t) * MiB, (10 + t) * MiB, 10 * MiB, (20 + t) * MiB) for t in range(60)]
    s = run_series(1, samples, [], RunSummary(), "time")
    fig = stacked_figure(stacked_info([s], live=True))
    assert {t.yaxis or "y" for t in fig.data} == {"y", "y2", "y3"}
    notes = {a.yref: a.text for a in fig.layout.annotations if "first training batch" in (a.text or "")}
    assert notes == {"y2 domain": "samples/s: drawn from the first training batch on",
                     "y3 domain": "accuracy: drawn from the first training batch on"}
    assert fig.layout.yaxis2.showticklabels is False and fig.layout.yaxis2.visible is not False


def test_repeats_of_one_setting_are_drawn_as_their_mean_and_range():
    """Issue 43: a run repeated over seeds is drawn as W&B draws grouped runs: the mean and a
    band from the lowest to the highest, on a grid up to where the shortest of them ends."""
    from ui.charts import band_info, repeat_marks

    def series(rid, xs, rss):
        samples = [ms(x, r, r, 0) for x, r in zip(xs, rss)]
        return run_series(rid, samples, [], RunSummary(), colour="#1F77B4")

    b = band_info([series(1, [0.0, 2.0], [100.0, 200.0]), series(2, [0.0, 1.0, 3.0], [120.0, 120.0, 300.0])], points=3)
    assert b == Band(runs=[1, 2], colour="#1F77B4", x=[0.0, 1.0, 2.0], mean=[110.0, 135.0, 205.0],
                     lo=[100.0, 120.0, 200.0], hi=[120.0, 150.0, 210.0], title="runs 1, 2: mean and range")
    assert band_info([series(1, [0.0, 2.0], [100.0, 200.0])]) is None
    info = stacked_info([series_of(1), series_of(2)], groups=[[1, 2]])
    fig = stacked_figure(info)
    assert [t.name for t in fig.data if t.fill == "tonexty"] == [None] and any(
        t.name == "runs 1, 2: mean and range" for t in fig.data)
    points = [tp(1, 100.0, 0.80), tp(2, 110.0, 0.82), tp(3, 90.0, 0.70), tp(4, 95.0, None, status="oom")]
    assert repeat_marks(points, [[1, 2], [3, 4]]) == [
        RepeatMark(runs=[1, 2], peak_mb=105.0, peak_lo=100.0, peak_hi=110.0, accuracy=0.81, acc_lo=0.80, acc_hi=0.82)]
