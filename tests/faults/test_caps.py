"""The memory cap hit in every phase, under both kinds of cap: always `oom`, with the
phase named, never `failed` with an unreadable message."""

import pytest

from svmcore import limits
from svmcore.store import RunStatus
from tests.helpers import _run

KINDS = ["rlimit"] + (["cgroup"] if limits.cgroup_available() else [])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("phase, knobs", [
    ("prepare", {}),
    ("load", {}),
    ("transform", {"model": "kernel-approx", "n_components": 64}),
    ("train", {}),
    ("evaluate", {}),
])
def test_cap_hit_in_each_phase_is_oom(store, kind, phase, knobs):
    run = _run(store, fault=f"hog:700@{phase}", memory_cap_mb=450, cap_kind=kind, **knobs)
    assert run.wait(120) == RunStatus.OOM, run.summary
    s = run.summary
    assert s["phase"] == phase
    assert s["cap"] == kind and s["cap_mb"] == 450
    assert s["error"]["message"]
    assert store.integrity_ok()


@pytest.mark.parametrize("kind", KINDS)
def test_cap_below_the_libraries_is_oom_in_imports(store, kind):
    run = _run(store, memory_cap_mb=64, cap_kind=kind)
    assert run.wait(120) == RunStatus.OOM, run.summary
    assert run.summary["phase"] == "imports"


def test_a_cap_where_openblas_spins_is_oom_not_a_hang(store, monkeypatch):
    """OpenBLAS retries a failed allocation forever at import time; the runner gives up."""
    from svmcore import runner

    monkeypatch.setattr(runner, "IMPORTS_LIMIT_S", 8.0)
    run = _run(store, memory_cap_mb=100, cap_kind="rlimit")
    assert run.wait(60) == RunStatus.OOM, run.summary
    assert run.summary["phase"] == "imports"
