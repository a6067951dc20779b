"""Growth told from peaks on real runs (small data, a few seconds each): the memory retained
after each pass, recorded, stored and shown; a run that leaks 8 MiB a pass (the worker's
'hog:8@epochs' fault: memory it allocates, touches and keeps at the start of every pass) is
told growth by doctor, with the pass in which it meets a budget."""

import json

import pytest

from tests.conftest import cli, two_at_a_time

SMALL = ["--rows", "5000", "--batch-size", "256"]


def test_each_pass_records_what_it_retained_and_doctor_tells_growth_from_a_steady_run(home):
    steady, leaking = two_at_a_time(lambda args, env: cli("run", *SMALL, *args, "--json", home=home, env=env, check=0),
                                    [(["--epochs", "3"], {"SVMCORE_FAULT": ""}),
                                     (["--epochs", "4"], {"SVMCORE_FAULT": "hog:8@epochs"})])
    s = json.loads(steady.stdout)
    assert [p["epoch"] for p in s["passes"]] == [1, 2, 3]
    for p in s["passes"]:  # exact readings of the worker at the pass's end: below its exact peak
        assert 20 < p["anon_mb"] < p["rss_mb"] <= s["peak_rss_mb"] and p["heap_mb"] is None
    g = s["growth_per_pass"]
    assert not g["judged"] and abs(g["per_pass_mb"]) < 1.0  # a run that keeps nothing: three passes, not judged
    shown = cli("runs", "show", str(s["run_id"]), home=home, check=0).stdout
    assert "retained after each pass: " in shown and "3 passes: 4 are needed to tell growth" in shown
    stored = json.loads(cli("runs", "show", str(s["run_id"]), "--json", home=home, check=0).stdout)["summary"]
    assert stored["passes"] == s["passes"] and stored["growth_per_pass"] == g

    leak = json.loads(leaking.stdout)
    g = leak["growth_per_pass"]
    assert g["grows"] and g["per_pass_mb"] == pytest.approx(8.0, abs=0.5), g
    budget = round(leak["peak_rss_mb"] + 20)  # met in pass 7: 4 passes + 20 MiB / 8 a pass
    d = json.loads(cli("doctor", str(leak["run_id"]), "--budget", str(budget), "--json", home=home, check=0).stdout)
    t = d["trouble"]
    assert t["kind"] == "growth" and t["passes"] == 4
    assert f"the {budget} MiB budget is reached in pass 7, beyond the run's 4 passes" in t["reach"], t
    assert [r["remedy"] for r in d["growth_remedies"]] == ["gc"]
    steady_d = json.loads(cli("doctor", str(s["run_id"]), "--json", home=home, check=0).stdout)
    assert steady_d["trouble"]["kind"] in ("transient peak", "floor")
