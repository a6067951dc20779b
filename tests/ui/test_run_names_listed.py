"""Issue 22: a run's name shows everywhere a run is listed. The Sweep page's table, its
best setting, its trade-off chart and the list of runs not drawn, and Story's pickers,
showed ids and labels only."""

from __future__ import annotations

from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store
from tests.ui.test_apptest import assert_clean, chart, open_page, texts

NAME = "<i>big</i> batch"


def _sweep_of_named_runs(home: str) -> tuple[int, list[int]]:
    s = Store(home)
    sweep_id = s.create_sweep({"base": {}, "grid": {"batch_size": [256, 2048]}})
    ids = []
    for batch, peak, acc in [(256, 150.0, 0.80), (2048, 200.0, 0.85)]:
        rid = s.create_run({"batch_size": batch}, status=RunStatus.QUEUED, sweep_id=sweep_id,
                           label=f"batch_size={batch}")
        s.complete_imported(rid, {"status": "completed", "summary": {"peak_rss_mb": peak, "accuracy": acc,
                                                                     "samples_per_s": 1e4}})
        ids.append(rid)
    failed = s.create_run({"batch_size": 4096}, status=RunStatus.QUEUED, sweep_id=sweep_id, label="batch_size=4096")
    s.complete_imported(failed, {"status": "failed", "summary": {}})
    s.set_name(ids[1], NAME)
    s.set_name(failed, "too big")
    s.close()
    return sweep_id, ids + [failed]


def test_the_sweep_page_lists_the_runs_by_their_names(app_home):
    sweep_id, (plain_run, named, failed) = _sweep_of_named_runs(app_home)
    at = open_page("pages/2_Sweep.py")
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "setting" in d.value)
    assert dict(zip(table["run"], table["name"])) == {plain_run: "", named: NAME}
    at.number_input(key=f"budget_{sweep_id}").set_value(300).run()
    assert any(f"run {named}** (batch_size=2048 ({NAME}))" in t for t in texts(at.success)), texts(at.success)
    hover = next(d for d in chart(at, "tradeoff")["data"] if d["name"] == "completed runs")["hovertext"]
    assert f"run {named}: batch_size=2048 (&lt;i&gt;big&lt;/i&gt; batch)" in hover, hover
    assert any(f"run {failed} · too big failed" in t for t in texts(at.caption)), texts(at.caption)


def test_story_picks_runs_by_their_names(app_home):
    _, (_, named, _) = _sweep_of_named_runs(app_home)
    at = open_page("pages/5_Story.py")
    assert_clean(at)
    options = [o for box in at.selectbox for o in box.options] + [o for box in at.multiselect for o in box.options]
    assert any(o.startswith(f"run {named} · {NAME} · ") for o in options), options
