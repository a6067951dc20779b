"""What a run leaves behind once it is over: its cgroup and its stream spill must go,
however it ended (finished while watched, re-attached after a restart, finished as
lost by ``recover``, deleted)."""

import json
import logging
import os
import signal
import subprocess
import sys
import time

import pytest

from svmcore import limits
from svmcore.runner import recover
from svmcore.store import RunStatus
from tests.conftest import ROOT, cli
from tests.helpers import _run

needs_cgroup = pytest.mark.skipif(not limits.cgroup_available(), reason="no writable cgroup v1 memory controller")


def _wait_until(condition, timeout=60, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _job(run_dir):
    with open(os.path.join(run_dir, "job.json")) as f:
        return json.load(f)


# ---------------------------------------------------------------- cgroups

@needs_cgroup
def test_completed_cgroup_capped_run_leaves_no_cgroup(store):
    run = _run(store, memory_cap_mb=600, cap_kind="cgroup", epochs=1)
    assert run.wait(120) == RunStatus.COMPLETED, run.summary
    group = _job(run.run_dir)["cgroup"]
    assert group and group.startswith(limits.cgroup_parent() + os.sep)
    assert not os.path.exists(group), os.listdir(group)


@needs_cgroup
def test_remove_cgroup_removes_child_groups_bottom_up(tmp_path):
    group = limits.create_cgroup(f"run-test-{os.getpid()}", None)
    nested = os.path.join(group, "svmcore", "probe-x")
    os.makedirs(nested)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        limits.join_cgroup(os.path.join(group, "svmcore"), proc.pid)
    finally:
        proc.kill()
        proc.wait()
    limits.remove_cgroup(group)
    assert not os.path.exists(group)


@needs_cgroup
def test_remove_cgroup_that_still_holds_a_process_says_so(caplog):
    group = limits.create_cgroup(f"run-test-{os.getpid()}-busy", None)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        limits.join_cgroup(group, proc.pid)
        with caplog.at_level(logging.WARNING, logger="svmcore"):
            limits.remove_cgroup(group, timeout_s=0.3)
        assert os.path.isdir(group)
        assert any(group in r.getMessage() for r in caplog.records), caplog.text
    finally:
        proc.kill()
        proc.wait()
        limits.remove_cgroup(group)
    assert not os.path.exists(group)
