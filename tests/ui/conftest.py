"""Fixtures for the headless AppTest suite: a data home per test, a shared history
made with the real engine, and a clean ``st.cache_resource`` around every test
(the app's one Lab is cached by home path)."""

from __future__ import annotations

import os
import time

import pytest
import streamlit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = {"rows": 20_000, "features": 65_536, "epochs": 2}


def _stop_runs_of(home: str) -> None:
    """Cancel and reap any run of ``home`` still alive, so no worker outlives its test
    (run ids are per store and the active-run table is per process)."""
    from svmcore.runner import active_runs

    real = os.path.abspath(home)
    for run in active_runs().values():
        if os.path.abspath(run.home) == real:
            run.cancel()
            run.wait(20)


def wait_finished(lab, run_ids, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    pending = set(run_ids)
    while pending and time.monotonic() < deadline:
        pending = {i for i in pending if (lab.view(i) is None) or lab.view(i).is_live}
        if pending:
            time.sleep(0.1)
    assert not pending, f"runs {sorted(pending)} did not finish in {timeout:.0f} s"


@pytest.fixture
def app_home(home, monkeypatch):
    """SVMCORE_HOME -> a fresh folder; the cached Lab dropped before and after."""
    monkeypatch.setenv("SVMCORE_HOME", home)
    monkeypatch.delenv("SVMCORE_FAULT", raising=False)
    monkeypatch.delenv("SVMCORE_DATA_DIRS", raising=False)
    streamlit.cache_resource.clear()
    yield home
    _stop_runs_of(home)
    streamlit.cache_resource.clear()


@pytest.fixture(scope="session")
def history(tmp_path_factory):
    """A data home with finished runs made by the real engine: two completed single
    runs, one oom run (rlimit cap) and a completed two-point sweep.
    Returns dict(home=..., completed=id, oom=id, sweep=sweep_id, sweep_runs=[ids])."""
    from svmcore.lab import Lab
    from svmcore.store import RunStatus

    home = str(tmp_path_factory.mktemp("history") / "home")
    os.makedirs(home)
    lab = Lab(home)
    completed = lab.launch(dict(SMALL))
    oom = lab.launch({"rows": 300_000, "memory_cap_mb": 150, "cap_kind": "rlimit"})
    sweep = lab.start_sweep(dict(SMALL), {"batch_size": [256, 2048]})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        st = lab.sweep_status(sweep)
        if st["total"] == 2 and st["done"] == 2:
            break
        time.sleep(0.2)
    sweep_runs = sorted(lab.sweep_status(sweep)["statuses"])
    wait_finished(lab, [completed, oom] + sweep_runs)
    assert lab.view(completed).status == RunStatus.COMPLETED, lab.view(completed).summary
    assert lab.view(oom).status == RunStatus.OOM, lab.view(oom).summary
    assert [lab.view(i).status for i in sweep_runs] == [RunStatus.COMPLETED] * 2
    return {"home": home, "completed": completed, "oom": oom, "sweep": sweep, "sweep_runs": sweep_runs}


@pytest.fixture
def history_home(history, monkeypatch):
    monkeypatch.setenv("SVMCORE_HOME", history["home"])
    monkeypatch.delenv("SVMCORE_FAULT", raising=False)
    streamlit.cache_resource.clear()
    yield history
    streamlit.cache_resource.clear()
