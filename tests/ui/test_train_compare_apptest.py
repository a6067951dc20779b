"""AppTest of the Train page's run picker and toast, and of the Compare page's headline,
presentation view and export (issue #11). The browser side is tests/e2e/test_train_compare.py."""

from __future__ import annotations

import contextlib
import html
import json

import pytest
from streamlit.testing.v1 import AppTest

from svmcore.app.headlines import RunFacts, comparison_headline, outcome_headline
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store
from tests.ui.test_apptest import ENTRY, SMALL, TIMEOUT, assert_clean, open_page, store_runs, texts, wait_run_finished
from tests.helpers import facts as hand_facts

SUMMARY = {"peak_rss_mb": 180.0, "peak_phase": "load", "accuracy": 0.8, "balanced_accuracy": 0.79,
           "samples_per_s": 5e4}


def imported_run(s: Store, status: RunStatus = RunStatus.COMPLETED, **config) -> int:
    """A run row made directly in the store (no worker): for what only the history matters."""
    rid = s.create_run(dict({"dataset": "sparse-text", "mode": "memory", "model": "linear-svm"}, **config),
                       status=RunStatus.RUNNING)
    if status.is_finished():
        assert s.complete_imported(rid, {"status": status.value, "summary": SUMMARY})
    return rid


def option_ids(at: AppTest) -> list[str]:
    return [o.split(" · ")[0] for o in at.selectbox(key="shown_run").options]


# ---------------------------------------------------------------- Train: the picker

def test_picker_lists_every_run_even_the_oldest_of_many(app_home):
    s = Store(app_home)
    ids = [imported_run(s, batch_size=100 + i) for i in range(17)]
    s.close()
    at = open_page()
    assert_clean(at)
    assert option_ids(at) == [f"run {i}" for i in reversed(ids)]  # newest first, all 17
    at.selectbox(key="shown_run").set_value(ids[0]).run()
    assert_clean(at)
    assert at.session_state["run_id"] == ids[0]
    assert any(f"Run {ids[0]} completed" in t for t in texts(at.success)), texts(at.success)


def test_picker_label_follows_the_status_and_the_shown_run_stays(app_home):
    s = Store(app_home)
    older = imported_run(s)
    s.close()
    at = open_page()  # the Lab (and its recovery of unfinished rows) exists from here on
    s = Store(app_home)
    going = imported_run(s, RunStatus.RUNNING)  # as a live run's row looks to the history
    at.run()
    picker = at.selectbox(key="shown_run")
    assert picker.value == older, "a run that appears does not take the place of the one being looked at"
    assert picker.options[0].startswith(f"run {going} · running ·"), picker.options
    picker.set_value(going).run()
    assert at.session_state["run_id"] == going
    assert s.complete_imported(going, {"status": "completed", "summary": SUMMARY})
    s.close()
    at.run()  # the browser sends back the old label ("running"): the run shown must not change
    assert_clean(at)
    picker = at.selectbox(key="shown_run")
    assert picker.value == going and at.session_state["run_id"] == going
    assert picker.options[0].startswith(f"run {going} · completed ·"), picker.options
    assert any(f"Run {going} completed: exact peak 180 MiB, owned by load" in t for t in texts(at.success))


def test_the_launched_run_stays_shown_after_another_was_picked_and_its_end_is_a_toast(app_home):
    s = Store(app_home)
    older = imported_run(s)
    s.close()
    at = open_page()
    at.selectbox(key="shown_run").set_value(older).run()
    at.checkbox(key="train_features_on").check().run()
    at.number_input(key="train_features").set_value(SMALL["features"])
    at.number_input(key="train_rows").set_value(SMALL["rows"])
    at.number_input(key="train_epochs").set_value(1).run()
    at.button(key="launch").click().run()
    assert_clean(at)
    new = max(r.id for r in store_runs(app_home))
    assert at.session_state["run_id"] == new and at.selectbox(key="shown_run").value == new
    assert wait_run_finished(new, app_home) == RunStatus.COMPLETED
    at.run()
    assert_clean(at)
    assert at.selectbox(key="shown_run").value == new
    rec = next(r for r in store_runs(app_home) if r.id == new)
    expected = outcome_headline(RunFacts(new, "completed", rec.summary))
    assert [t.value for t in at.toast] == [expected], [t.value for t in at.toast]
    assert expected.startswith(f"Run {new} completed: exact peak ") and ", owned by " in expected
    at.run()
    assert not at.toast, "the toast is said once"


def test_a_failed_run_says_why_in_plain_words(app_home):
    s = Store(app_home)
    rid = s.create_run({"dataset": "sparse-text"}, status=RunStatus.RUNNING)
    s.complete_imported(rid, {"status": "failed", "summary": {"phase": "load",
                                                              "error": {"message": "line 2: not a number"}}})
    s.close()
    at = open_page()
    assert_clean(at)
    assert texts(at.error) == [f"**Run {rid} failed**: line 2: not a number (phase load)"], texts(at.error)


# ---------------------------------------------------------------- Compare: the headline

def facts(home: str, run_id: int, name: str) -> RunFacts:
    rec = next(r for r in store_runs(home) if r.id == run_id)
    return RunFacts(run_id, rec.status.value, rec.summary, name)


def headline_lines(at: AppTest) -> list[str]:
    """The headline's lines as shown (HTML markdown: one <li> each, text escaped)."""
    import re

    block = next(m.value for m in at.markdown if "compareHeadline" in m.value)
    lines = [html.unescape(re.sub(r"<[^>]+>", "", li)).strip() for li in re.findall(r"<li.*?</li>", block)]
    return [line.removeprefix("\u25a0").strip() for line in lines]  # the run's colour swatch


def test_compare_headline_against_the_baseline_and_switched(history_home):
    h = history_home
    a, b = sorted(h["sweep_runs"])  # the latest two: batch_size 256 and 2048, nothing else differs
    at = open_page("pages/1_Compare.py")
    assert_clean(at)
    assert at.selectbox(key="baseline").value == a
    # each run is named by what it changed against the baseline (issue 43)
    base, other = facts(h["home"], a, "baseline"), facts(h["home"], b, "batch size 2,048")
    assert headline_lines(at) == [comparison_headline(base, other)]
    assert headline_lines(at)[0].startswith(f"run {b} · batch size 2,048 vs run {a} · baseline: exact peak ")
    assert any(t.startswith(f"Baseline run {a}: the earliest of them.") for t in texts(at.caption))
    at.selectbox(key="baseline").set_value(b).run()
    assert_clean(at)
    assert headline_lines(at) == [comparison_headline(facts(h["home"], b, "baseline"),
                                                      facts(h["home"], a, "batch size 256"))]
    assert any(t.startswith(f"Baseline run {b}: your choice.") for t in texts(at.caption))


def test_a_colour_picked_on_compare_is_the_runs_on_its_charts_and_kept(history_home):
    h = history_home
    a, b = sorted(h["sweep_runs"])
    at = open_page("pages/1_Compare.py")
    at.color_picker(key=f"colour_{b}").set_value("#123456").run()
    assert_clean(at)
    try:
        with contextlib.closing(Store(h["home"])) as s:
            assert s.get_run(b).colour == "#123456"
        memory, phases = (json.loads(c.proto.spec) for c in at.get("plotly_chart"))
        lines = {t["name"]: t["line"]["color"] for t in memory["data"] if t.get("name", "").startswith("run ")}
        bars = {t["name"]: t["marker"]["color"] for t in phases["data"]}
        assert lines[f"run {b} · batch size 2,048"] == bars[f"run {b} · batch size 2,048"] == "#123456", lines
        assert lines[f"run {a} · baseline"] != "#123456"
        again = open_page("pages/1_Compare.py")  # a new session: the run keeps it
        assert again.color_picker(key=f"colour_{b}").value.upper() == "#123456"
    finally:
        with contextlib.closing(Store(h["home"])) as s:
            s.set_colour(b, None)


def test_compare_table_puts_the_key_numbers_first(history_home):
    at = open_page("pages/1_Compare.py")
    table = at.dataframe[0].value
    assert list(table.columns[:5]) == ["id", "peak_mb", "accuracy", "balanced_accuracy", "samples_per_s"]
    assert all(float(v).is_integer() for v in table["samples_per_s"].dropna())
    columns = json.loads(at.dataframe[0].proto.columns)
    pinned = [name for name, cfg in columns.items() if cfg.get("pinned")]
    assert pinned == ["id", "peak_mb", "accuracy", "balanced_accuracy", "samples_per_s"], pinned
    # issue 43: an oom run's accuracy read "None" and a name was cut to "memm"
    assert at.dataframe[0].proto.placeholder == "\u2013" and columns["name"]["width"] == "medium", columns["name"]


def test_presentation_view_shows_big_numbers_and_keeps_the_selection(history_home):
    at = open_page("pages/1_Compare.py")
    at.toggle(key="present").set_value(True).run()
    assert_clean(at)
    labels = [m.label for m in at.metric]
    assert labels == ["exact peak", "samples/s", "accuracy", "balanced accuracy"] * 2, labels
    deltas = [m.delta for m in at.metric]
    assert not any(deltas[:4]) and all(deltas[4:]), deltas  # against the baseline: the baseline has none
    assert "Knobs that differ" not in texts(at.subheader)
    assert not any(b.key == "delete" for b in at.button)


# ---------------------------------------------------------------- the one-file export

def test_presentation_html_is_one_file_that_opens_offline():
    from svmcore.app.headlines import compare
    from ui import charts
    from ui import compare as cmp_ui

    runs = [hand_facts(1, "completed", "memory", peak_mb=252.0, peak_phase="load", accuracy=0.75, balanced_accuracy=0.7,
                       samples_per_s=2.8e5),
            hand_facts(2, "completed", "<b>stream</b>", peak_mb=208.0, peak_phase="train", accuracy=0.75,
                       balanced_accuracy=0.712, samples_per_s=1e5)]
    cmp = compare(runs)
    empty = charts.run_series(1, [], [], charts.RunSummary())
    fig = charts.stacked_figure(charts.stacked_info([empty]))
    page = cmp_ui.presentation_html(cmp, [fig, fig], {"mode": ["memory", "stream"]}, {1: "box-a", 2: None},
                                    when=0.0)
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>")
    assert "<script src" not in page.lower() and "cdn.plot.ly/plotly" not in page
    assert page.count("plotly.js v") == 1 and len(page) > 1_000_000  # the library itself, once
    assert html.escape(cmp.headlines[0]) in page and "<b>stream</b>" not in page
    assert "box-a" in page and "<th>mode</th><td>memory</td><td>stream</td>" in page


@pytest.mark.parametrize("present", [False, True])
def test_compare_offers_the_presentation_download(history_home, present):
    at = AppTest.from_file(ENTRY, default_timeout=TIMEOUT).run()
    at.switch_page("pages/1_Compare.py").run()
    if present:
        at.toggle(key="present").set_value(True).run()
    assert_clean(at)
    buttons = [e for e in at.get("download_button")]
    assert any("Presentation (HTML)" in b.proto.label for b in buttons), [b.proto.label for b in buttons]


def test_a_data_parallel_run_is_headed_by_all_its_processes_on_the_panel_and_in_compare(app_home):
    par = {"workers": 2, "scheduler": "local", "cluster_start_s": 2.4, "total_peak_sampled_mb": 679.6,
           "worker_peak_source": "exact", "total_source": "sampled",
           "per_worker": [{"worker": 1, "address": "tcp://127.0.0.1:1", "pid": 1, "rows": 1200, "peak_rss_mb": 255.8,
                           "peak_exact": True, "peak_sampled_mb": 250.0},
                          {"worker": 2, "address": "tcp://127.0.0.1:2", "pid": 2, "rows": 1200, "peak_rss_mb": 255.9,
                           "peak_exact": True, "peak_sampled_mb": 250.0}]}
    s = Store(app_home)
    rid = s.create_run({"dataset": "sparse-text", "mode": "stream", "workers": 2}, status=RunStatus.RUNNING)
    s.complete_imported(rid, {"status": "completed", "summary": dict(SUMMARY, peak_rss_mb=168.3, parallel=par)})
    s.close()
    at = open_page()
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["all processes (sampled)"] == "679.6 MiB", metrics
    assert metrics["largest worker (exact)"] == "255.9 MiB" and metrics["coordinator exact peak"] == "168.3 MiB"
    assert any("all processes 680 MiB (sampled sum) · largest Dask worker (2) 256 MiB (exact) · coordinator 168 MiB"
               in t for t in texts(at.success)), texts(at.success)
    at.switch_page("pages/1_Compare.py").run()
    assert_clean(at)
    row = at.dataframe[0].value.set_index("id").loc[rid]
    assert (row["peak_mb"], row["largest_worker_mb"], row["coordinator_mb"]) == (679.6, 255.9, 168.3)


def test_a_data_parallel_run_whose_worker_hit_the_cap_names_that_worker_on_the_panel(app_home):
    par = {"workers": 2, "scheduler": "local", "cluster_start_s": 4.3, "total_peak_sampled_mb": None,
           "worker_peak_source": "sampled", "total_source": "sampled", "ended_early": True,
           "per_worker": [{"worker": k, "address": f"tcp://127.0.0.1:{k}", "pid": k, "rows": 1200, "peak_rss_mb": None,
                           "peak_exact": False, "peak_sampled_mb": None} for k in (1, 2)]}
    message = ("Dask worker 1 (tcp://127.0.0.1:1, pid 1) was killed by the kernel's OOM killer at the 300 MiB cgroup "
               "cap while training shard 1 in epoch 1; raise the cap or use fewer workers")
    s = Store(app_home)
    rid = s.create_run({"dataset": "sparse-text", "mode": "stream", "workers": 2}, status=RunStatus.RUNNING)
    s.complete_imported(rid, {"status": "oom", "summary": {
        "peak_rss_mb": 160.2, "phase": "train", "cap": "cgroup", "cap_mb": 300.0, "parallel": par,
        "error": {"type": "OutOfMemory", "message": message}}})
    s.close()
    at = open_page()
    assert_clean(at)
    assert texts(at.warning) == [f"**Run {rid} ran out of memory** in phase **train**: {message}. Memory until then: "
                                 "all processes – (sampled sum) · largest Dask worker – (sampled) · coordinator "
                                 "160 MiB (exact)."], texts(at.warning)


def test_a_cgroup_capped_run_shows_what_the_cap_limits_on_the_panel_and_in_compare(app_home):
    """A run that completed under a 150 MiB cgroup cap at 164 MiB of RSS: the panel says what its cgroup
    was charged (the figure the cap limits) and why RSS is more; Compare's table lists the cap and that
    figure."""
    capped = {"peak_rss_mb": 163.6, "cap": "cgroup", "cap_mb": 150.0, "cgroup_peak_mb": 107.0,
              "cgroup_held_peak_mb": 106.8, "rss_file_mb": 57.9}
    s = Store(app_home)
    rid = s.create_run({"dataset": "sparse-text", "mode": "memory", "model": "linear-svm"}, status=RunStatus.RUNNING)
    samples = [(t / 10, 160 * 2**20, 102 * 2**20, 58 * 2**20, 163 * 2**20, 105 * 2**20, 2**20) for t in range(20)]
    s.complete_imported(rid, {"status": "completed", "summary": dict(SUMMARY, **capped), "samples": samples})
    s.close()
    at = open_page()
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["charged to its cgroup (exact)"], metrics["cannot be reclaimed (sampled)"]) == ("107.0 MiB",
                                                                                                   "106.8 MiB")
    captions = " ".join(texts(at.caption))
    assert "the quantity its cgroup cap of 150 MiB limits" in captions, captions
    assert "RSS also counts the 58 MiB of library files the worker maps" in captions, captions
    at.switch_page("pages/1_Compare.py").run()
    assert_clean(at)
    row = at.dataframe[0].value.set_index("id").loc[rid]
    assert (row["cap"], row["cap_held_mb"]) == ("cgroup 150 MiB", 106.8), row
