"""Learn's class exercise end to end with real runs: the guess is queued as the
remedy's before and after runs (real workers), and the reveal sets it beside their
exact peaks (VmHWM) and the forecast taken before they ran."""

from __future__ import annotations

import time

import pytest

from svmcore.app.exercise import change_pct, pct_text
from svmcore.app.lab import Lab


@pytest.mark.slow
def test_a_guess_is_measured_and_revealed(tmp_path):
    lab = Lab(str(tmp_path))
    started = lab.exercise.start("stream:default", -40, quick=True)
    assert started["title"] == "Streaming from disk: memory → stream" and started["guess_pct"] == -40.0
    assert started["lower_bound"], "a fresh home has no calibration: the forecast is a lower bound and says so"
    assert lab.exercise.outcome(started)["state"] == "measuring"
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline and lab.exercise.outcome(started)["state"] == "measuring":
        time.sleep(0.2)
    out = lab.exercise.outcome(started)
    assert out["state"] == "done", out
    before, after = (lab.store.get_run(started[k]) for k in ("before", "after"))
    assert (before.config["mode"], after.config["mode"], before.config["rows"]) == ("memory", "stream", 10_000)
    peaks = (before.summary.peak_rss_mb, after.summary.peak_rss_mb)
    assert out["rows"][2]["peak"] == f"{peaks[0]:,.0f} → {peaks[1]:,.0f} MiB"
    assert out["rows"][2]["change"] == pct_text(change_pct(*peaks))
    assert out["rows"][0]["change"] == "\u221240%" and out["verdict"].startswith(("Well judged", "Too"))
    # the pair is the Learn page's own measurement of the remedy, too
    [result] = [x for x in lab.learn.results() if x.remedy.key == "stream" and x.experiment.key == "default"]
    assert result.source == "this machine" and result.before["run_id"] == before.id


@pytest.mark.slow
def test_measured_ahead_several_at_once_then_a_class_guesses_and_the_reveal_needs_no_run(tmp_path):
    """Issue 43: thirty students, one run at a time, would wait about ten minutes. The teacher
    measures the choices ahead (here two of them), in parallel within the machine's memory;
    a guess then reveals at once from those runs, and the class's guesses are tallied beside them."""
    lab = Lab(str(tmp_path))
    keys = ["batch:default-1024", "gc:default"]
    done = lab.exercise.prepare(quick=True, keys=keys)
    assert sorted(done["pairs"]) == keys and done["slots"] >= 1 and done["already"] == 0
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and lab.exercise.prepared(quick=True)["running"]:
        time.sleep(0.2)
    assert lab.exercise.prepared(quick=True)["running"] == []
    pairs = {k: lab.exercise.measured(k, quick=True) for k in keys}
    assert pairs == {k: tuple(v) for k, v in done["pairs"].items()}, pairs
    assert lab.exercise.prepare(quick=True, keys=keys)["already"] == 2  # measured: nothing queued again
    before = len(lab.store.list_runs())
    started = lab.exercise.start("gc:default", -10, quick=True)
    assert started["ahead"] and (started["before"], started["after"]) == pairs["gc:default"]
    assert lab.exercise.outcome(started)["state"] == "done" and len(lab.store.list_runs()) == before
    for pct in (-30, -10, 0):
        lab.exercise.submit("gc:default", pct)
    view = lab.exercise.class_view("gc:default", quick=True)
    b, a = (lab.store.get_run(i) for i in pairs["gc:default"])
    measured = change_pct(b.summary.peak_rss_mb, a.summary.peak_rss_mb)
    assert view["measured_pct"] == measured and view["guesses"] == [-30.0, -10.0, 0.0]
    assert view["verdict"].startswith("The class's median guess was \u221210% (3 guesses")
    assert (b.config["rows"], b.config["gc_every"], a.config["gc_every"]) == (10_000, 0, 10)
