"""The diagnosis loop on real runs: ``doctor`` on a run that ran out of memory, and
``fit`` reaching a budget in two remedies (small data, a few seconds a run)."""

import json

import pytest

from svmcore.app.headlines import change_text
from svmcore.store.sqlite import Store
from tests.conftest import cli
from tests.helpers import COPY_BUILD_START, copy_build_budget

SMALL = ["--rows", "100000", "--epochs", "1"]  # 100,000 rows of sparse text: the load phase holds ~100 MiB of data


@pytest.mark.slow
def test_doctor_names_the_load_phase_of_an_oom_run_and_the_remedies_that_act_on_it(home):
    # an rlimit cap: it refuses the load's allocations whatever the page cache holds (under a cgroup
    # cap the kernel could reclaim file pages and let the run complete at 188 MiB; seen once)
    # 200 MiB: a memory-mode run's first prepare extracts the held-out rows to the cache (~167 MiB exact)
    run = cli("run", *SMALL, "--memory-cap-mb", "200", "--cap-kind", "rlimit", "--json", home=home, check=3)
    run_id = json.loads(run.stdout)["run_id"]
    d = json.loads(cli("doctor", str(run_id), "--json", home=home, check=0).stdout)
    assert d["status"] == "oom" and d["owner"] == "load" and d["budget_mb"] == 200  # the cap, by default
    assert d["measured_phases_mb"]["load"] >= 150
    held = d["model"]["held_mb"]
    assert d["held_most"] == "libraries' floor" and held["data as stored"] > 80  # 100k rows x 50 nonzeros x 12 B
    helps = {r["remedy"]: r for r in d["remedies"]}
    assert {"memmap", "stream"} <= set(helps)
    assert helps["memmap"]["predicted_phase_saving_mb"] > 80 and helps["memmap"]["fits"]
    assert helps["memmap"]["measured"]["peak_saving_pct"] > 50  # Learn's reference, 1M rows
    ranked = [r["remedy"] for r in d["remedies"]]
    assert ranked.index("memmap") < ranked.index("stream")  # both fit: memmap costs less speed (measured)
    useless = {r["remedy"]: r["why"] for r in d["useless"]}
    assert useless["gc"].startswith("does not lower a load-phase peak")
    assert useless["batch"].startswith("does not lower a load-phase peak")
    text = cli("doctor", str(run_id), home=home, check=0).stdout
    assert f"run {run_id} ran out of memory in load" in text and "Periodic gc.collect(): does not lower" in text


def test_doctor_refuses_an_unknown_run_in_one_line(home):
    proc = cli("doctor", "99", home=home, check=2)
    assert proc.stderr.strip() == "svmcore: error: no run with id 99"


@pytest.mark.slow
def test_fit_takes_two_remedies_and_links_every_attempt(home):
    # 172 MiB at 100,000 rows: no one remedy fits (memmap alone peaks at 175-195 MiB, float32 alone at
    # 198-210), memmap with float32 does (168-171, the model's export in evaluate priced). The forecast
    # may take both before the first launch, or find out from a run: every attempt but the last is over
    # budget and linked to the one before.
    proc = cli("fit", "--budget", "172", *SMALL, "--json", home=home, check=0)
    result = json.loads(proc.stdout)
    assert result["fits"], result
    attempts = result["attempts"]
    changes = [c for a in attempts for c in a["change"]["changes"]]
    tried = [c["knobs"] for c in changes]
    assert len(changes) >= 2 and len({str(t) for t in tried}) == len(tried) and {"mode": "memmap"} in tried, tried
    assert all(c["why"] for c in changes)
    for before, after in zip(attempts, attempts[1:]):
        assert before["status"] == "oom" or before["peak_mb"] > 172, before
        assert after["parent_run_id"] == before["run_id"]
        assert f"run {before['run_id']}" in after["change"]["changes"][0]["why"]
    last = attempts[-1]
    assert last["status"] == "completed" and last["peak_mb"] <= 172
    for a in attempts:
        assert f"→ run {a['run_id']}" in result["summary"], result["summary"]
    assert all(change_text(t) in result["summary"] for t in tried), result["summary"]
    store = Store(home)
    rec = store.get_run(last["run_id"])
    assert rec.config["memory_cap_mb"] == 172 and rec.config["mode"] == "memmap"
    assert rec.change["changes"][-1]["remedy"] == last["change"]["changes"][-1]["remedy"]
    store.close()


@pytest.mark.slow
def test_a_fit_whose_first_run_is_over_budget_diagnoses_it_and_links_the_next(home, tmp_path):
    # the forecast takes sparse rows and says they fit; the first run peaks above the budget in prepare,
    # where it builds the on-disk copy, its other phases below it: the measured run is diagnosed and
    # rerun with the copy cached
    budget = copy_build_budget(str(tmp_path / "probe"))
    proc = cli("fit", "--budget", str(budget), *COPY_BUILD_START, "--json", home=home, check=0)
    result = json.loads(proc.stdout)
    assert result["fits"], result
    first, second = result["attempts"]
    assert first["status"] == "oom" or first["peak_mb"] > budget, first
    assert second["parent_run_id"] == first["run_id"] and second["status"] == "completed"
    assert second["peak_mb"] <= budget
    why = second["change"]["changes"][0]["why"]
    assert f"run {first['run_id']}" in why and "prepare" in why, why
    assert f"→ run {first['run_id']}" in result["summary"] and f"→ run {second['run_id']}" in result["summary"]
    store = Store(home)
    recs = {r.id: r for r in store.list_runs()}
    assert recs[second["run_id"]].parent_run_id == first["run_id"] and recs[first["run_id"]].parent_run_id is None
    store.close()
