"""Learn's class exercise end to end with real runs: the guess is queued as the
remedy's before and after runs (real workers), and the reveal sets it beside their
exact peaks (VmHWM) and the forecast taken before they ran."""

from __future__ import annotations

import time

from svmcore.app.exercise import change_pct, pct_text
from svmcore.app.lab import Lab


def test_a_guess_is_measured_and_revealed(tmp_path):
    lab = Lab(str(tmp_path))
    started = lab.exercise.start("stream:default", -40, quick=True)
    assert started["title"] == "Streaming from disk: mode stream" and started["guess_pct"] == -40.0
    assert started["lower_bound"], "a fresh home has no calibration: the forecast is a lower bound and says so"
    assert lab.exercise.outcome(started)["state"] == "measuring"
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline and lab.exercise.outcome(started)["state"] == "measuring":
        time.sleep(0.2)
    out = lab.exercise.outcome(started)
    assert out["state"] == "done", out
    before, after = (lab.store.get_run(started[k]) for k in ("before", "after"))
    assert (before.config["mode"], after.config["mode"], before.config["rows"]) == ("memory", "stream", 10_000)
    peaks = (before.result.peak_rss_mb, after.result.peak_rss_mb)
    assert out["rows"][2]["peak"] == f"{peaks[0]:,.0f} → {peaks[1]:,.0f} MiB"
    assert out["rows"][2]["change"] == pct_text(change_pct(*peaks))
    assert out["rows"][0]["change"] == "\u221240%" and out["verdict"].startswith(("Well judged", "Too"))
    # the pair is the Learn page's own measurement of the remedy, too
    [result] = [x for x in lab.learn.results() if x.remedy.key == "stream" and x.experiment.key == "default"]
    assert result.source == "this machine" and result.before["run_id"] == before.id
