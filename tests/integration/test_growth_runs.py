"""Growth told from peaks on real runs (small data, a few seconds each): the memory retained
after each pass, recorded, stored and shown; a run that leaks 8 MiB a pass (the worker's
'hog:8@epochs' fault: memory it allocates, touches and keeps at the start of every pass) is
told growth by doctor, with the pass in which it meets a budget."""

import json

import pytest

from tests.conftest import cli, two_at_a_time

SMALL = ["--rows", "5000", "--batch-size", "256"]


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_traced_run_that_grows_names_the_lines_that_grew(home):
    """Traced, the leaking run's growth comes with the lines that held more at the end of its last
    pass than at the end of its first: the fault's allocations, 3 x 8 MiB. They are read at memray's
    memory snapshots (one each 10 ms) last taken by each pass's end, and these passes take a few ms
    each: a pass's 8 MiB more or less can fall on either side."""
    proc = cli("run", *SMALL, "--epochs", "4", "--parser", "native", "--solver", "native", "--trace", "--json",
               home=home, env={"SVMCORE_FAULT": "hog:8@epochs"}, check=0)
    s = json.loads(proc.stdout)
    assert s["growth_per_pass"]["grows"], s["growth_per_pass"]
    t = s["trace"]
    assert t["grew_passes"] == [1, 4]
    top = t["grew"][0]
    assert top["file"] == "svmcore/worker/faults.py" and top["function"] == "fire", t["grew"]
    assert round(top["bytes"] / 2**20) in (16, 24, 32) and top["bytes"] % (8 * 2**20) < 64, top
    assert all(p["heap_mb"] > 0 for p in s["passes"])
    d = cli("doctor", str(s["run_id"]), "--budget", str(round(s["peak_rss_mb"] + 20)), home=home, check=0).stdout
    grew = d.split("The lines that grew from the end of pass 1 to the end of pass 4:\n", 1)
    assert len(grew) == 2 and grew[1].startswith(f"    {round(top['bytes'] / 2**20)}") or "faults.py:" in grew[1][:200], d
