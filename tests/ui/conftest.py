"""Fixtures for the headless AppTest suite: a data home per test, a shared history
made with the real engine, and a clean ``st.cache_resource`` around every test
(the app's one Lab is cached by home path)."""

from __future__ import annotations

import os

import pytest
import streamlit

from tests.helpers import make_history, shared_history

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = {"rows": 20_000, "features": 65_536, "epochs": 2}


def _stop_runs_of(home: str) -> None:
    """Cancel and reap any run of ``home`` still alive, so no worker outlives its test
    (run ids are per store and the active-run table is per process)."""
    from svmcore.engine.registry import active_runs

    real = os.path.abspath(home)
    for run in active_runs().values():
        if os.path.abspath(run.home) == real:
            run.cancel()
            run.wait(20)


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


HISTORY_SCRIPT = r"""
import json, sys, time
from svmcore.app.lab import Lab

home, small = sys.argv[1], json.loads(sys.argv[2])
lab = Lab(home, slots=2)  # two runs at a time: independent runs, each its own process's peak; ids in launch order
completed = lab.runs.launch(dict(small))
oom = lab.runs.launch({"rows": 300_000, "memory_cap_mb": 150, "cap_kind": "rlimit"})
sweep = lab.sweeps.start(dict(small), {"batch_size": [256, 2048]})
ids = [completed, oom] + sorted(lab.sweeps.status(sweep)["statuses"])
deadline = time.monotonic() + 300  # a loaded machine (load 30 on 2 cores) took over 120 s
while time.monotonic() < deadline and any(lab.runs.view(i).is_live for i in ids):
    time.sleep(0.1)
print(json.dumps({"completed": completed, "oom": oom, "sweep": sweep, "sweep_runs": ids[2:],
                  "statuses": {i: lab.runs.view(i).status.value for i in ids}}))
"""


@pytest.fixture(scope="session")
def history(tmp_path_factory):
    """A data home with finished runs made by the real engine: a completed run, an oom
    run (rlimit cap) and a completed two-point sweep. Made by the Lab API in a separate
    small process, so that the test process (its size, its table of active runs) has no
    part in them. Returns dict(home, completed, oom, sweep, sweep_runs)."""
    made, home = shared_history(tmp_path_factory, "ui-history", _make_history)  # once for both test processes
    return dict(made, home=home)


def _make_history(home: str) -> dict:
    made = make_history(HISTORY_SCRIPT, home, SMALL)
    statuses = made.pop("statuses")
    assert statuses == {str(made["completed"]): "completed", str(made["oom"]): "oom",
                        **{str(i): "completed" for i in made["sweep_runs"]}}, statuses
    assert len(made["sweep_runs"]) == 2
    return made


@pytest.fixture
def history_copy(history, tmp_path, monkeypatch):
    """A copy of the shared history, changed by ``statements`` (SQL run on its store), as
    the app's home: ``history_copy(*statements)`` returns the history's ids with the copy's home."""
    import shutil
    import sqlite3

    def copy(*statements) -> dict:
        home = str(tmp_path / "home")
        shutil.copytree(history["home"], home)
        db = sqlite3.connect(os.path.join(home, "runs.sqlite"))
        for sql, *args in statements:
            db.execute(sql, args)
        db.commit()
        db.close()
        monkeypatch.setenv("SVMCORE_HOME", home)
        monkeypatch.delenv("SVMCORE_FAULT", raising=False)
        streamlit.cache_resource.clear()
        return dict(history, home=home)

    yield copy
    streamlit.cache_resource.clear()


@pytest.fixture
def history_home(history, monkeypatch):
    monkeypatch.setenv("SVMCORE_HOME", history["home"])
    monkeypatch.delenv("SVMCORE_FAULT", raising=False)
    streamlit.cache_resource.clear()
    yield history
    streamlit.cache_resource.clear()
