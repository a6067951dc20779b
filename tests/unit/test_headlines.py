"""svmcore.app.headlines: the one-line answers (outcome toast, comparison headline),
their wording compared with ==."""

from __future__ import annotations

import pytest

from svmcore.app.headlines import (
    RunFacts,
    compare,
    comparison_headline,
    comparison_headlines,
    deltas,
    knob_value_text,
    outcome_headline,
    pick_label,
    run_label,
    data_text,
    names_against,
    pick_baseline,
    run_title,
    speed_text,
)
from svmcore.spec.config import validate
from svmcore.spec.result import PhaseSpan, RunPeak, RunSummary
from tests.helpers import facts

MEMORY = facts(1, "completed", "memory", peak_mb=252.0, peak_phase="load", accuracy=0.75,
                  balanced_accuracy=0.70, samples_per_s=280_000.0)
STREAM = facts(2, "completed", "stream", peak_mb=208.0, peak_phase="train", accuracy=0.75,
                  balanced_accuracy=0.712, samples_per_s=100_000.0)
OOM = facts(3, "oom", "batch size 4,096", peak_mb=150.2, phase="train", cap="rlimit", cap_mb=150.0)


def test_the_headline_of_the_issue():
    assert comparison_headline(MEMORY, STREAM) == (
        "run 2 · stream vs run 1 · memory: exact peak \u221217% (252 \u2192 208 MiB), 2.8\u00d7 slower, "
        "accuracy \u00b10.000, balanced accuracy +0.012 (within noise)")


def test_the_headline_the_other_way_round():
    assert comparison_headline(STREAM, MEMORY) == (
        "run 1 · memory vs run 2 · stream: exact peak +21% (208 \u2192 252 MiB), 2.8\u00d7 faster, "
        "accuracy \u00b10.000, balanced accuracy \u22120.012 (within noise)")


def test_a_headline_leaves_out_what_was_not_measured():
    bare = facts(4, "completed", peak_mb=252.0)
    assert comparison_headline(MEMORY, bare) == "run 4 vs run 1 · memory: exact peak \u00b10% (252 \u2192 252 MiB)"
    assert comparison_headline(MEMORY, facts(5, "completed")) == (
        "run 5 vs run 1 · memory: nothing measured to compare")


def test_a_run_that_did_not_complete_says_how_it_ended():
    assert comparison_headline(MEMORY, OOM) == (
        "run 3 · batch size 4,096 vs run 1 · memory: ran out of memory in train: exact peak 150 MiB "
        "under a 150 MiB rlimit cap")
    cancelled = facts(6, "cancelled", peak_mb=190.4, phase="train")
    assert comparison_headline(MEMORY, cancelled) == (
        "run 6 vs run 1 · memory: cancelled in train: exact peak 190 MiB until then")


def test_a_baseline_that_did_not_complete_asks_for_another():
    assert comparison_headlines(OOM, [MEMORY, STREAM]) == [
        "The baseline, run 3 · batch size 4,096, ran out of memory in train: exact peak 150 MiB under a "
        "150 MiB rlimit cap. Choose a completed run as the baseline."]


def test_one_line_per_compared_run_and_none_for_the_baseline_itself():
    assert comparison_headlines(MEMORY, [MEMORY, STREAM, OOM]) == [comparison_headline(MEMORY, STREAM),
                                                                    comparison_headline(MEMORY, OOM)]
    assert comparison_headlines(MEMORY, [MEMORY]) == []


@pytest.mark.parametrize("ratio,text", [(0.357, "2.8\u00d7 slower"), (1.5, "1.5\u00d7 faster"),
                                        (1.04, "same speed"), (0.96, "same speed"), (0.0, "same speed")])
def test_speed_text(ratio, text):
    assert speed_text(ratio) == text


def test_deltas_are_percent_ratio_and_differences():
    base = facts(1, "completed", peak_mb=200.0, accuracy=0.5, balanced_accuracy=0.5, samples_per_s=100.0)
    other = facts(2, "completed", peak_mb=250.0, accuracy=0.75, balanced_accuracy=0.625, samples_per_s=50.0)
    assert deltas(base, other) == {"peak_pct": 25.0, "speed_ratio": 0.5, "accuracy": 0.25,
                                   "balanced_accuracy": 0.125}
    assert deltas(base, facts(3, "completed")) == {"peak_pct": None, "speed_ratio": None, "accuracy": None,
                                                      "balanced_accuracy": None}


def test_deltas_of_a_run_stopped_by_its_cap_are_none():
    assert deltas(MEMORY, OOM) == {"peak_pct": None, "speed_ratio": None, "accuracy": None, "balanced_accuracy": None}
    assert deltas(OOM, MEMORY) == deltas(MEMORY, OOM)


@pytest.mark.parametrize("facts,error,text", [
    (MEMORY, None, "Run 1 completed: exact peak 252 MiB, owned by load"),
    (facts(17, "completed", peak_mb=251.6), None, "Run 17 completed: exact peak 252 MiB"),
    (OOM, None, "Run 3 ran out of memory in train: exact peak 150 MiB under a 150 MiB rlimit cap"),
    (facts(8, "oom", phase="imports"), None, "Run 8 ran out of memory in imports: exact peak –"),
    (facts(5, "cancelled", peak_mb=190.0, phase="train"), None,
     "Run 5 cancelled in train: exact peak 190 MiB until then"),
    (facts(6, "failed", phase="load"), "line 2: not a number", "Run 6 failed in load: line 2: not a number"),
    (facts(7, "failed"), None, "Run 7 failed"),
    (facts(9, "lost"), None, "Run 9 was lost: its runner stopped before it reported an outcome"),
    (facts(10, "running"), None, "Run 10 is running"),
])
def test_outcome_headline(facts, error, text):
    assert outcome_headline(facts, error) == text


def test_run_facts_of_a_summary():
    s = RunSummary(peak_rss_mb=99.0, peak_phase="load", phase=None, cap="cgroup", cap_mb=512.0, accuracy=0.9,
                   balanced_accuracy=0.8, samples_per_s=1e4)
    run = RunFacts(4, "completed", s, "float32")
    assert (run.summary, run.peak, run.compared_peak_mb, run.title) == (s, RunPeak(99.0, True, None), 99.0,
                                                                       "run 4 · float32")


@pytest.mark.parametrize("name,value,text", [
    ("mode", "stream", "stream"), ("shuffle", False, "shuffle off"), ("average", True, "average on"),
    ("batch_size", 2048, "batch size 2,048"), ("epochs", 2.0, "epochs 2"), ("memory_cap_mb", None, "no memory cap"),
    ("memory_cap_mb", 150, "memory cap 150 MB"), ("solver", "native", "solver native"), ("precision", "float32", "float32"),
    ("alpha", 1e-5, "alpha 1e-05"), ("dataset", "/srv/data/a9a.svm", "a9a.svm"), ("hidden", "64,32", "hidden 64,32"),
])
def test_knob_value_text(name, value, text):
    assert knob_value_text(name, value) == text


def test_runs_are_named_by_what_they_changed_against_the_baseline():
    differing = {"mode": ["memory", "stream", "memory"], "batch_size": [1024, 1024, 256], "epochs": [1, 2, 1]}
    assert names_against([1, 2, 3], differing, 1) == {1: "baseline", 2: "stream, epochs 2", 3: "batch size 256"}
    assert names_against([1, 2, 3], differing, 1, most=1) == {1: "baseline", 2: "stream, +1 more",
                                                               3: "batch size 256"}
    assert names_against([1, 2, 3], differing, 3) == {1: "batch size 1,024", 2: "stream, batch size 1,024, epochs 2",
                                                      3: "baseline"}
    assert names_against([4, 5], {}, 4) == {4: "baseline", 5: "same knobs"}
    assert names_against([4], {}, 4) == {4: ""}  # alone (asked about before a delete): compared with nothing


def test_eight_one_knob_runs_are_named_by_their_one_knob():
    """Issue 43: seven one-knob runs and the default were each labelled with all six knobs
    that varied ("memory, float64, hashing 0 bits, no memory cap, batch size 1,024, threads 2")."""
    base = {"mode": "memory", "precision": "float64", "hashing_bits": 0, "memory_cap_mb": None,
            "batch_size": 1024, "threads": 1}
    changes = [{}, {"mode": "stream"}, {"precision": "float32"}, {"hashing_bits": 16}, {"memory_cap_mb": 400},
               {"batch_size": 256}, {"threads": 2}, {"batch_size": 8192}]
    configs = [dict(base, **c) for c in changes]
    ids = [10, 3, 4, 5, 6, 7, 8, 9]
    differing = {k: [c[k] for c in configs] for k in base if len({str(c[k]) for c in configs}) > 1}
    assert names_against(ids, differing, 10) == {
        10: "baseline", 3: "stream", 4: "float32", 5: "hashing 16 bits", 6: "memory cap 400 MB",
        7: "batch size 256", 8: "threads 2", 9: "batch size 8,192"}


def test_a_run_on_a_file_is_not_named_by_a_rows_knob_it_does_not_read():
    differing = {"dataset": ["sparse-text", "/srv/up/small.svm"], "rows": [100_000, None]}
    assert names_against([1, 6], differing, 1) == {1: "baseline", 6: "small.svm"}


def test_the_baseline_is_the_run_a_person_would_pick_and_says_why():
    """Issue 43: the baseline defaulted to the hashing run (the first ticked), not the default run."""
    def full(**knobs):  # a config as a run stores it: every knob
        return validate(knobs).to_dict()

    one_knob = {10: full(rows=20_000, hashing_bits=16), 3: full(rows=20_000, mode="stream"), 1: full(rows=20_000),
                4: full(rows=20_000, precision="float32")}
    assert pick_baseline(one_knob) == (1, "the run the others differ from least")
    two = {7: full(batch_size=2048), 5: full(batch_size=256)}  # as far apart either way, neither at the defaults
    assert pick_baseline(two) == (5, "the earliest of them")
    at_default = {9: full(), 8: full(batch_size=256)}
    assert pick_baseline(at_default) == (9, "the run at the default knobs")
    repeats = {4: full(seed=1), 3: full(seed=2)}  # the seed is no setting: both at the defaults, the earliest
    assert pick_baseline(repeats) == (3, "the run at the default knobs")


def test_run_title_puts_the_users_name_first():
    assert run_title(7, "big batch", "batch size 8,192") == "run 7 · big batch (batch size 8,192)"
    assert run_title(7, "big batch") == "run 7 · big batch"
    assert run_title(7, None, "stream") == "run 7 · stream"
    assert run_title(7) == "run 7"
    assert facts(7, "completed", "stream", label="mine").title == "run 7 · mine (stream)"


def test_data_text_says_what_the_run_used():
    assert data_text("/srv/up/small.svm", RunSummary(train_rows=240, test_rows=60), 100_000) == "small.svm, 300 rows"
    assert data_text("sparse-text", RunSummary(), 20_000) == "sparse-text, 20,000 rows"
    assert data_text("/srv/up/small.svm", RunSummary(), 100_000) == "small.svm"


def test_a_comparison_warns_when_the_runs_used_different_data():
    a = facts(1, "completed", data="sparse-text, 100,000 rows")
    b = facts(6, "completed", data="small.svm, 300 rows")
    assert compare([a, b]).warning == ("These runs used different data, so their numbers are not like for like: "
                                       "run 1: sparse-text, 100,000 rows; run 6: small.svm, 300 rows.")
    assert compare([a, facts(2, "completed", data=a.data)]).warning is None


def test_compare_against_the_first_run_or_the_one_chosen():
    cmp = compare([MEMORY, STREAM, OOM])
    assert (cmp.baseline, [r.id for r in cmp.runs], sorted(cmp.deltas)) == (1, [1, 2, 3], [2, 3])
    assert cmp.headlines == (comparison_headline(MEMORY, STREAM), comparison_headline(MEMORY, OOM))
    chosen = compare([MEMORY, STREAM], baseline=2)
    assert (chosen.baseline, chosen.headlines) == (2, (comparison_headline(STREAM, MEMORY),))
    assert compare([MEMORY, STREAM], baseline=99).baseline == 1  # not among them: the first
    assert compare([]).headlines == ()


def test_run_label_is_current_and_skips_what_is_missing():
    row = {"id": 17, "status": "completed", "dataset": "sparse-text", "mode": "memory", "model": "linear-svm",
           "label": ""}
    assert run_label(row) == "run 17 · completed · sparse-text · memory · linear-svm"
    assert run_label(dict(row, status="running", label="learn: batches")) == (
        "run 17 · running · sparse-text · memory · linear-svm · learn: batches")
    assert run_label(dict(row, name="big batch")) == "run 17 · big batch · completed · sparse-text · memory · linear-svm"
    assert run_label({"id": 3, "status": "queued"}) == "run 3 · queued"
    assert run_label(dict(row, changed="float32")) == "run 17 · completed · sparse-text · memory · linear-svm · float32"


def test_a_runs_changed_knobs_are_those_away_from_the_defaults_as_the_pickers_list_them():
    """The walk saw runs 4 (float32), 5 (batch 8192), 10 (60k rows) and 12 (cap 150) all
    listed 'completed · sparse-text · memory · linear-svm' on Train and Story."""
    from svmcore.app.headlines import changed_knobs_text
    from svmcore.spec.config import validate

    def text(**knobs):
        return changed_knobs_text(validate(knobs).to_dict())

    assert text() == ""  # features auto resolved to 2^20 is the default too
    assert text(precision="float32") == "float32"
    assert text(rows=60_000, batch_size=8192, memory_cap_mb=150) == "rows 60,000, memory cap 150 MB, batch size 8,192"
    assert text(mode="stream", solver="native", parser="native", epochs=3, seed=4) == (
        "parser native, epochs 3, solver native")  # in the registry's order; mode is in the label already, a seed no news
    assert text(rows=60_000, batch_size=8192, memory_cap_mb=150, precision="float32").endswith(", +1 more")
    on_file = dict(validate({}).to_dict(), dataset="/srv/a9a", rows=5)
    assert changed_knobs_text(on_file) == ""  # a file is not generated: rows does not apply


PARALLEL = {"workers": 2, "scheduler": "local", "cluster_start_s": 2.4, "total_peak_sampled_mb": 679.6,
            "per_worker": [{"worker": 1, "peak_rss_mb": 255.8, "peak_exact": True, "rows": 1200},
                           {"worker": 2, "peak_rss_mb": 255.9, "peak_exact": True, "rows": 1200}]}


def test_a_data_parallel_run_is_headed_by_all_its_processes_beside_its_largest_worker_and_coordinator():
    s = RunSummary.from_dict({"status": "completed", "peak_rss_mb": 168.3, "peak_phase": "train",
                              "parallel": PARALLEL})
    line = ("all processes 680 MiB (sampled sum) · largest Dask worker (2) 256 MiB (exact) · "
            "coordinator 168 MiB (exact)")
    assert s.parallel_peaks.text() == line
    assert outcome_headline(RunFacts(7, "completed", s)) == f"Run 7 completed: {line}"
    sampled = {**PARALLEL, "per_worker": [dict(w, peak_exact=False) for w in PARALLEL["per_worker"]]}
    assert "largest Dask worker (2) 256 MiB (sampled)" in RunSummary.from_dict(
        {"peak_rss_mb": 168.3, "parallel": sampled}).parallel_peaks.text()
    assert RunSummary.from_dict({"peak_rss_mb": 168.3}).parallel_peaks is None  # one process: as before


def test_a_failed_data_parallel_run_whose_workers_were_never_read_shows_no_worker_figure():
    unread = {**PARALLEL, "total_peak_sampled_mb": None,
              "per_worker": [dict(w, peak_rss_mb=None, peak_exact=False) for w in PARALLEL["per_worker"]]}
    peaks = RunSummary.from_dict({"peak_rss_mb": 160.2, "parallel": unread}).parallel_peaks
    assert peaks.text() == "all processes – (sampled sum) · largest Dask worker – (sampled) · coordinator 160 MiB (exact)"


def _first_stream_run(prepared_once=("text-abc.svm",)) -> RunSummary:
    phases = [PhaseSpan("imports", 0.0, 0.5, 0.5, 60.0), PhaseSpan("prepare", 0.5, 4.0, 3.5, 256.0),
              PhaseSpan("load", 4.0, 4.1, 0.1, 150.0), PhaseSpan("train", 4.1, 9.0, 4.9, 207.0),
              PhaseSpan("evaluate", 9.0, 9.5, 0.5, 190.0)]
    return RunSummary.from_dict({"peak_rss_mb": 256.0, "peak_phase": "prepare", "accuracy": 0.75,
                                 "balanced_accuracy": 0.7, "samples_per_s": 97_000.0, "prepared_once": list(prepared_once),
                                 "phases": [p.__dict__ for p in phases]})


def test_a_first_stream_runs_one_time_preparation_is_left_out_and_said():
    """Issue 22: the first stream run peaked at 256 MiB writing its data file (the
    prepare phase) against a 253 MiB memory run: '+1%'. Its own cost is 207 MiB."""
    base = facts(1, "completed", "memory", peak_mb=253.0, peak_phase="load", accuracy=0.75,
                    balanced_accuracy=0.7, samples_per_s=280_000.0)
    first = RunFacts(6, "completed", _first_stream_run(), "stream")
    assert (*first.one_time, first.compared_peak_mb) == (256.0, 207.0, 207.0)
    assert comparison_headline(base, first) == (
        "run 6 · stream vs run 1 · memory: exact peak −18% (253 → 207 MiB; run 6's one-time preparation (256 MiB) "
        "left out), 2.9× slower, accuracy ±0.000, balanced accuracy ±0.000")
    assert outcome_headline(first) == (
        "Run 6 completed: exact peak 207 MiB without its one-time preparation (which peaked at 256 MiB building "
        "copies of the data that later runs reuse)")


def test_a_run_that_reused_its_copies_or_whose_peak_was_elsewhere_is_compared_whole():
    later = RunFacts(7, "completed", _first_stream_run(prepared_once=()))
    assert (later.one_time[0], later.compared_peak_mb) == (None, 256.0)
    elsewhere = RunSummary.from_dict({"peak_rss_mb": 256.0, "peak_phase": "train", "prepared_once": ["text-abc.svm"],
                                      "phases": [{"name": "train", "peak_rss_mb": 256.0}]})
    assert RunFacts(8, "completed", elsewhere).one_time == (None, None)


def test_a_compare_chart_carries_its_headline_wrapped_for_its_png():
    import plotly.graph_objects as go

    from ui.charts import chart_text
    from ui.compare import HEADLINE_CHARS, HEADLINE_LINES, chart_config, headline_title_lines, with_headline

    base = facts(1, "completed", "memory", peak_mb=252.0, accuracy=0.75, balanced_accuracy=0.7,
                    samples_per_s=280_000.0)
    others = [facts(i, "completed", f"batch size {i * 16}", peak_mb=200.0 + i, accuracy=0.75,
                       balanced_accuracy=0.7, samples_per_s=100_000.0) for i in range(2, 14)]
    two = compare([base, others[0]])
    lines = headline_title_lines(two)
    assert " ".join(x.strip() for x in lines) == two.headlines[0]
    assert all(len(x) <= HEADLINE_CHARS for x in lines)
    fig = with_headline(go.Figure(layout=dict(height=600, margin=dict(t=40))), two)
    assert fig.layout.title.text == "<br>".join(map(chart_text, lines)) and fig.layout.height == 600 + 17 * len(lines)
    # several runs: the baseline once, then one short line per run (the walk's 8 runs ended "… the rest of the
    # headline is on the page")
    twelve = headline_title_lines(compare([base] + others[:11]))
    assert twelve[0] == "Against the baseline, run 1 · memory (\u2248: within run-to-run noise):"
    assert len(twelve) == HEADLINE_LINES == 12
    assert twelve[1] == "run 2 · batch size 32: \u221220% peak, 2.8\u00d7 slower, \u00b10.0 pt accuracy"
    assert headline_title_lines(compare([base, facts(3, "completed", "seed 1", peak_mb=246.0, accuracy=0.749,
                                                        samples_per_s=250_000.0), others[0]]))[1] == (
        "run 3 · seed 1: \u2248\u22122% peak, \u22481.1\u00d7 slower, \u2248\u22120.1 pt accuracy")
    many = headline_title_lines(compare([base] + others))
    assert len(many) == HEADLINE_LINES and many[-1] == "… and 2 more lines on the page"
    assert chart_config("runs-1-2-memory", fig)["toImageButtonOptions"] == {
        "format": "png", "filename": "runs-1-2-memory", "width": 1600, "height": fig.layout.height, "scale": 1}


def test_a_comparison_with_a_data_parallel_run_weighs_all_its_processes_and_names_its_largest_worker():
    """Issue 18: a data-parallel run's headline peak was its coordinator's alone (167 MiB
    where its processes held 680 MiB together); issue 40: the comparison weighs all its processes
    (sampled, so the peak is not called exact), its largest worker and coordinator named."""
    base = facts(1, "completed", "memory", peak_mb=253.0, peak_phase="load", accuracy=0.75,
                    balanced_accuracy=0.7, samples_per_s=280_000.0)
    par = RunFacts(2, "completed", RunSummary.from_dict({
        "status": "completed", "peak_rss_mb": 168.3, "peak_phase": "train", "accuracy": 0.75,
        "balanced_accuracy": 0.7, "samples_per_s": 140_000.0, "parallel": PARALLEL}), "workers 2")
    line = comparison_headline(base, par)
    assert ("peak +169% (253 → 680 MiB; run 2's: 680 MiB in all its processes (sampled sum; largest Dask worker "
            "(2) 256 MiB, exact; coordinator 168 MiB, exact))") in line and "exact peak" not in line, line
    assert "coordinator" not in comparison_headline(base, facts(3, "completed", "x", peak_mb=200.0))


def test_a_picker_of_a_few_runs_lists_them_short():
    """Issue 43: at 1024x768 Story's remedy options were cut to "run 22 · completed · spar…"."""
    row = {"id": 22, "status": "completed", "dataset": "sparse-text", "mode": "stream", "model": "linear-svm",
           "changed": "float32, batch size 256", "name": ""}
    assert pick_label(row) == "run 22 · stream · float32, batch size 256"
    assert pick_label(dict(row, name="lean", status="oom", dataset="a9a.svm")) == (
        "run 22 · lean · a9a.svm · stream · float32, batch size 256 · oom")


def test_every_delta_says_whether_it_exceeds_the_run_to_run_noise():
    """Issue 43: two runs with the same settings differed by -3% peak and 1.1x speed, and
    Compare presented it as a result."""
    from svmcore.app.noise import Noise

    a = facts(1, "completed", "baseline", peak_mb=246.9, accuracy=0.8091, balanced_accuracy=0.8088,
                 samples_per_s=92_380.0)
    b = facts(2, "completed", "seed 1", peak_mb=240.0, accuracy=0.8028, balanced_accuracy=0.8027,
                 samples_per_s=84_000.0)
    assert comparison_headline(a, b) == (
        "run 2 · seed 1 vs run 1 · baseline: exact peak \u22123% (247 \u2192 240 MiB) (within noise), 1.1\u00d7 slower "
        "(within noise), accuracy \u22120.006 (within noise), balanced accuracy \u22120.006 (within noise)")
    wide = Noise(peak_pct=2.0, speed_ratio=1.05, accuracy_pts=0.5, basis="test")
    assert comparison_headline(a, b, wide) == (
        "run 2 · seed 1 vs run 1 · baseline: exact peak \u22123% (247 \u2192 240 MiB), 1.1\u00d7 slower, "
        "accuracy \u22120.006, balanced accuracy \u22120.006")
    assert compare([a, b], 1).noise.peak_pct == 5.0
