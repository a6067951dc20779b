"""The Learn page's pure parts: the remedy registry (every remedy of the advice, the
default setup always a base), what a before/after pair measured (the peak's split at
its highest sample, the most a remedy can save when other phases hold the peak), the
lessons and the claims table's rows. Plain data; no run."""

from __future__ import annotations

import pytest

from svmcore.app.headlines import change_text
from svmcore.app.remedies import ADVICE, REMEDIES, quick_base, remedy
from svmcore.app.remedy_results import (
    CLAIMS_COLUMNS,
    changed_knobs,
    claim_verdict,
    claims_row,
    compare,
    lessons,
    measured_with,
    peak_moment,
    setup_text,
    side,
    speed_spread,
)
from svmcore.spec.errors import ConfigError
from svmcore.spec.result import RunSummary
from ui.charts import RemedyPhasesInfo, remedy_phases_figure, remedy_phases_info
from ui.claims import claims_table_html

MiB = 2**20
ADVICE_TITLES = ["Smaller batches", "Sparse representation", "Gradient checkpointing", "Streaming from disk",
                 "Mixed precision (FP16)", "Turning off logging and visualisation callbacks", "Fewer threads",
                 "Periodic gc.collect()", "Memory-mapped files (memmap)", "Distributed data parallel",
                 "Feature hashing", "FTRL instead of SGD", "Train offline, serve light", "A memory pool for batches",
                 "Distillation: a compact student from a big teacher"]


# ---------------------------------------------------------------- the registry

def test_the_advice_is_every_remedy_of_the_common_list_with_its_claim():
    assert [r.title for r in ADVICE] == ADVICE_TITLES
    claims = {r.key: r.claim_pct for r in ADVICE}
    assert claims["batch"] == (30, 50) and claims["sparse"] == (60, 80) and claims["checkpointing"] == (40, 40)
    assert claims["stream"] == (90, 100) and claims["precision"] == (50, 50) and claims["logging"] == (10, 20)
    assert claims["threads"] == (25, 25) and claims["gc"] == (15, 30) and claims["memmap"] == (70, 70)
    assert remedy("ddp").claim.startswith("linear")


def test_every_runnable_remedy_has_the_default_setup_as_a_base():
    for r in REMEDIES:
        if r.measured_by:  # measured_by: no pair of runs, its own benchmark measures it
            continue
        defaults = [e for e in r.experiments if e.default_setup]
        assert defaults, r.key
        for e in defaults:  # the default setup, only the remedy's own knobs moved
            assert set(e.before) <= set(r.knobs), (r.key, e.before)
        for e in r.experiments:
            assert set(e.after) <= set(r.knobs), (r.key, e.after)
            assert e.runnable() is None or e.impossible, (r.key, e.key, e.runnable())


def test_a_default_setup_that_cannot_run_says_why():
    sparse = remedy("sparse").experiment("default")
    assert sparse.runnable() == sparse.impossible and "781 GiB" in sparse.impossible
    with pytest.raises(ConfigError, match="already sparse"):
        sparse.configs()
    assert "10,000 rows" in remedy("model").experiment("default").impossible


def test_fp16_says_what_the_product_does_not_do():
    limits = remedy("precision").limits
    assert "storage only" in limits and "hardware" in limits and "libraries" in limits


def test_quick_base_divides_the_rows_and_keeps_the_batch_inside_them():
    assert quick_base({})["rows"] == 10_000
    assert quick_base({"batch_size": 8192}) == {"batch_size": 8000, "rows": 10_000}  # 2,000 rows held out
    assert quick_base({"rows": 5000})["rows"] == 2000
    assert quick_base({"dataset": "digits"}) == {"dataset": "digits"}
    before, after = remedy("batch").experiment("default").configs(quick=True)
    assert (before.rows, before.batch_size, after.batch_size) == (10_000, 8000, 256)


def test_unknown_remedy_and_experiment_are_one_clear_error():
    with pytest.raises(ConfigError, match="unknown remedy"):
        remedy("x" * 500)
    with pytest.raises(ConfigError, match="has no experiment"):
        remedy("batch").experiment("nope")


# ---------------------------------------------------------------- one run

def test_peak_moment_is_the_highest_sample_and_its_split():
    samples = [(0.0, 100 * MiB, 90 * MiB, 10 * MiB, 0), (0.5, 300 * MiB, 120 * MiB, 180 * MiB, 0),
               (1.0, 200 * MiB, 150 * MiB, 50 * MiB, 0)]
    assert peak_moment(samples) == {"t_s": 0.5, "rss_mb": 300.0, "anon_mb": 120.0, "file_mb": 180.0}
    assert peak_moment([]) is None


def test_side_keeps_the_figures_and_the_knobs_that_differ_from_the_defaults():
    summary = {"status": "completed", "peak_rss_mb": 243.2, "peak_phase": "train", "floor_mb": 128.0,
               "samples_per_s": 141684.8, "accuracy": 0.80866, "balanced_accuracy": 0.8, "train_s": 2.83,
               "phases": [{"name": "imports", "peak_rss_mb": 128.0}, {"name": "load", "peak_rss_mb": 242.0},
                          {"name": "train", "peak_rss_mb": 243.2}]}
    s = side({"batch_size": 256, "rows": 100_000}, RunSummary.from_dict(summary), [(0.1, 240 * MiB, 200 * MiB, 40 * MiB, 0)], run_id=3)
    assert s["config"] == {"batch_size": 256}
    assert s["phases"] == {"imports": 128.0, "load": 242.0, "train": 243.2}
    assert (s["peak_mb"], s["peak_phase"], s["samples_per_s"], s["accuracy"]) == (243.2, "train", 141685.0, 0.8087)
    assert s["at_peak"] == {"t_s": 0.1, "rss_mb": 240.0, "anon_mb": 200.0, "file_mb": 40.0}
    assert s["run_id"] == 3 and s["status"] == "completed"


def test_setup_and_change_in_words():
    assert setup_text({}) == ("sparse-text, 100,000 rows × 2^20 columns, memory mode, sparse, float64, "
                              "batch 1,024, 5 epochs")
    assert "hashed to 2^12" in setup_text({"hashing_bits": 12}) and "mlp (64)" in setup_text({"model": "mlp"})
    assert change_text({"batch_size": 256}, {"batch_size": 8192}) == "batch size 8,192 → 256"
    assert changed_knobs({"rows": 100_000, "mode": "stream"}) == {"mode": "stream"}


# ---------------------------------------------------------------- a pair

def run(peak, phases, sps=100_000.0, acc=0.8, bal=0.79, anon=None, file=None, status="completed"):
    return {"status": status, "peak_mb": peak, "peak_phase": max(phases, key=phases.get), "phases": phases,
            "samples_per_s": sps, "accuracy": acc, "balanced_accuracy": bal, "config": {},
            "at_peak": None if anon is None else {"anon_mb": anon, "file_mb": file}}


# the default setup: loading holds the peak, training acts below it
LOAD_OWNS = (run(243.0, {"imports": 128.0, "load": 242.0, "train": 243.0, "evaluate": 243.0}),
             run(242.5, {"imports": 128.0, "load": 242.0, "train": 200.0, "evaluate": 242.5}, sps=50_000.0,
                 acc=0.81, bal=0.80))


def test_compare_a_remedy_that_cannot_lower_a_peak_that_loading_owns():
    cmp = compare(*LOAD_OWNS, acts_on=("train", "evaluate"))
    assert cmp["peak_saving_pct"] == pytest.approx(100 * 0.5 / 243)
    assert cmp["acts_on"] == ["train", "evaluate"] and cmp["phase_before_mb"] == 243.0
    assert (cmp["other_phase"], cmp["other_phase_mb"]) == ("load", 242.0)
    assert cmp["ceiling_pct"] == pytest.approx(100 * 1 / 243)
    assert cmp["speed_change_pct"] == pytest.approx(-50.0)
    assert cmp["accuracy_change"] == pytest.approx(0.01) and cmp["balanced_accuracy_change"] == pytest.approx(0.01)
    # issue 43: "load holds it" while the chart outlined evaluate, which held the peak: both are said
    assert claim_verdict((30, 50), cmp) == "cannot lower this peak (load, untouched, is within 0.4% of it)"
    said = lessons(remedy("batch"), cmp)
    assert said[0] == ("It cannot lower this run's peak in this setup: the run's peak is train's (243 MiB), and the "
                       "load phase, which it does not act on, already peaks at 242 MiB, within 0.4% of it: below that "
                       "the peak cannot go.")
    assert said[1].startswith("The advice claims 30–50%; here the run's exact peak went 243 → 242 MiB (−0.2%)")


def test_compare_needs_two_completed_runs():
    assert compare(LOAD_OWNS[0], dict(LOAD_OWNS[1], status="oom"), ("train",)) is None
    assert lessons(remedy("batch"), None) == []
    assert claim_verdict((30, 50), None) == "not measured"


@pytest.mark.parametrize("after_peak, claim, verdict", [
    (100.0, (30, 50), "as claimed"), (180.0, (30, 50), "less than claimed"), (20.0, (30, 50), "more than claimed"),
    (199.0, (30, 50), "no saving"), (220.0, (30, 50), "raises the peak"), (100.0, None, "saves 50%")])
def test_claim_verdict(after_peak, claim, verdict):
    before = run(200.0, {"imports": 100.0, "load": 200.0})
    after = run(after_peak, {"imports": 100.0, "load": after_peak})
    # acting on load with only the floor outside it: up to 50% can be saved
    assert claim_verdict(claim, compare(before, after, ("load",))) == verdict


def test_memmap_lesson_names_the_move_to_file_backed_memory():
    before = run(243.0, {"imports": 128.0, "load": 243.0}, anon=230.0, file=13.0)
    after = run(190.0, {"imports": 128.0, "load": 190.0}, anon=150.0, file=40.0)
    cmp = compare(before, after, remedy("memmap").acts_on)
    said = " ".join(lessons(remedy("memmap"), cmp))
    assert "anonymous memory went 230 → 150 MiB and file-backed 13 → 40 MiB" in said
    assert "still count in RSS" in said
    assert "can drop them under pressure" in said


# ---------------------------------------------------------------- the claims table

def test_claims_rows_for_a_measured_a_pending_and_an_impossible_experiment():
    r = remedy("batch")
    cmp = compare(*LOAD_OWNS, acts_on=r.acts_on)
    stated = changed_knobs(r.experiment("default").before)  # the before run measured the stated setup
    row = claims_row(r, r.experiment("default"), {"source": "reference", "before": dict(LOAD_OWNS[0], config=stated),
                                                   "after": LOAD_OWNS[1], "cmp": cmp})
    assert tuple(row) == CLAIMS_COLUMNS
    assert row["remedy"] == "Smaller batches" and row["the advice claims"] == "30–50%"
    assert row["setup"] == "default setup, 8,192-row batches"  # issue 43: it said "default setup" of batch 8,192
    assert row["run's exact peak (MiB)"] == "243 → 242 (−0.2%)"
    assert row["phases it acts on (MiB)"] == "243 → 242 (−0.2%) in train, evaluate"
    assert row["speed (samples/s)"] == "100k → 50k (−50%)"
    assert row["accuracy (balanced)"] == "0.800 → 0.810 (+0.010)"
    assert row["verdict"].startswith("cannot lower this peak (load, untouched, is within") and \
        row["measured on"] == "reference machine"
    pending = claims_row(remedy("ftrl"), None, None)
    assert pending["verdict"] == "not runnable yet (being built)" and pending["run's exact peak (MiB)"] == "–"
    impossible = claims_row(remedy("sparse"), remedy("sparse").experiment("default"), None)
    assert impossible["verdict"].startswith("not run: it is already sparse")


def test_a_quick_measurement_says_what_it_was_measured_with():
    r = remedy("gc")
    before = dict(LOAD_OWNS[0], config={"rows": 10_000})
    row = claims_row(r, r.experiment("default"), {"source": "this machine", "before": before,
                                                   "after": dict(LOAD_OWNS[1], config={"rows": 10_000,
                                                                                       "gc_every": 10})})
    assert row["setup"] == "default setup (measured with rows=10,000)" and row["measured on"] == "this machine"



def test_the_learn_pages_experiment_title_says_a_quick_measurement_too():
    """Issue 22: quick mode showed a "1M rows" experiment measured on 100k rows with no note."""
    from svmcore.app.learn import ExperimentResult

    r = remedy("stream")
    e = r.experiment("1m")
    quick, _ = e.configs(quick=True)
    assert ExperimentResult(r, e, "this machine", "", {"config": changed_knobs(quick.to_dict())}).heading() == (
        f"**{e.title}** (measured with rows=100,000)" + (f" · {e.why}" if e.why else ""))
    stated, _ = e.configs()
    assert measured_with(e, {"config": changed_knobs(stated.to_dict())}) == ""
    assert measured_with(e, None) == ""


def test_a_pair_that_did_not_complete_says_so():
    r = remedy("gc")
    row = claims_row(r, r.experiment("default"), {"source": "this machine", "before": LOAD_OWNS[0],
                                                   "after": LOAD_OWNS[1], "cmp": None,
                                                   "error": "the after run (run 4) ended oom"})
    assert row["verdict"] == "the after run (run 4) ended oom"


def test_claims_table_html_escapes_and_lists_every_row():
    rows = [claims_row(r, None, None) for r in ADVICE]
    rows[0] = dict(rows[0], setup="<script>x</script>")
    text = claims_table_html(rows)
    assert text.count("<tr>") == len(rows) + 1
    assert all(t.replace("&", "&amp;") in text or t in text for t in ADVICE_TITLES)
    assert "<script>" not in text and "&lt;script&gt;" in text


# ---------------------------------------------------------------- the bars

def test_phase_bars_mark_the_owner_and_what_other_phases_hold():
    cmp = compare(*LOAD_OWNS, acts_on=("train", "evaluate"))
    info = remedy_phases_info(*LOAD_OWNS, cmp)
    assert info == RemedyPhasesInfo(phases=["imports", "load", "train", "evaluate"],
                                    before=[128.0, 242.0, 243.0, 243.0], after=[128.0, 242.0, 200.0, 242.5],
                                    owner_before="train", owner_after="evaluate", acts_on=["train", "evaluate"],
                                    other_phase="load", other_mb=242.0)
    fig = remedy_phases_figure(info, "t")
    before, after = fig.data
    assert list(before.marker.opacity) == [0.45, 0.45, 1.0, 0.45]
    assert list(after.marker.line.width) == [0, 0, 0, 2.5]
    assert any(s.y0 == 242.0 for s in fig.layout.shapes if s.type == "line")
    assert sum(1 for s in fig.layout.shapes if s.type == "rect") == 2  # the two phases it acts on, shaded


def test_speed_spread_of_the_default_setups_before_runs():
    def pair(config, sps, peak):
        return {"before": {"config": config, "samples_per_s": sps, "peak_mb": peak}, "after": {}}

    measured = {"a": {"default": pair({}, 100_000.0, 243.0), "big": pair({"rows": 10}, 5.0, 1.0)},
                "b": {"default": pair({}, 250_000.0, 242.5)}}
    assert speed_spread(measured) == {"runs": 2, "min": 100_000.0, "max": 250_000.0, "ratio": 2.5,
                                      "peak_min_mb": 242.5, "peak_max_mb": 243.0}
    assert speed_spread({"a": {"default": pair({}, 1.0, 1.0)}}) is None


def test_data_parallel_compares_the_largest_worker_and_states_the_total():
    from svmcore.app.remedy_results import claims_row, compare, lessons

    r = remedy("ddp")
    before = {"status": "completed", "peak_mb": 300.0, "phases": {"load": 300.0}, "samples_per_s": 1000.0,
              "accuracy": 0.80, "balanced_accuracy": 0.80}
    after = {"status": "completed", "peak_mb": 180.0, "phases": {"train": 180.0}, "samples_per_s": 500.0,
             "accuracy": 0.79, "balanced_accuracy": 0.79,
             "parallel": {"workers": 2, "worker_peak_mb": 270.0, "worker_peak_exact": True, "total_sampled_mb": 700.0}}
    cmp = compare(before, after, r.acts_on)
    assert cmp["peak_after_mb"] == 270.0 and round(cmp["peak_saving_pct"]) == 10
    row = claims_row(r, r.experiments[0], {"cmp": cmp, "before": before, "after": after, "source": "reference"})
    assert "per worker −10%" in row["verdict"] and "linear would be −50%" in row["verdict"]
    assert "+133%" in row["verdict"]
    assert "270 per worker (exact)" in row["run's exact peak (MiB)"]
    text = " ".join(lessons(r, cmp))
    assert "700 MiB" in text and "floor" in text


def test_a_data_parallel_run_that_failed_before_its_workers_were_read_is_a_side_without_a_worker_peak():
    """Issue 43's walk: a failed 2-worker run (no worker's peak read) made Learn's whole page raise."""
    from svmcore.app.remedy_results import side

    summary = {"status": "failed", "peak_rss_mb": 669.2, "parallel": {
        "workers": 2, "per_worker": [{"worker": 0, "peak_rss_mb": None}, {"worker": 1, "peak_rss_mb": None}],
        "total_peak_sampled_mb": None, "cluster_start_s": 6.7}}
    got = side({"workers": 2}, RunSummary.from_dict(summary), run_id=22, status="failed")
    assert got["parallel"]["worker_peak_mb"] is None and got["parallel"]["workers"] == 2


def test_an_experiment_says_its_setup_where_it_was_measured_and_what_changed():
    from svmcore.app.learn import ExperimentResult

    r = remedy("batch")
    quick = ExperimentResult(r, r.experiment("default"), "reference", "reference machine, not yours",
                             {"config": {"batch_size": 8192, "rows": 10_000}},
                             {"config": {"batch_size": 256, "rows": 10_000}})
    assert quick.heading() == ("**default setup, 8,192-row batches** (measured with rows=10,000) · big batches on the "
                               "default data")
    assert quick.measured_on() == (
        "Measured on **reference machine, not yours**. Before: sparse-text, 10,000 rows × 2^20 columns, memory "
        "mode, sparse, float64, batch 8,192, 5 epochs; after: batch size 8,192 → 256.")
    streamed = ExperimentResult(r, r.experiment("dense-stream"), None, "not measured yet")
    assert streamed.heading() == "**dense batches, streamed** · where a batch is most of the memory"
