"""What a run leaves behind once it is over: its cgroup and its stream spill must go,
however it ended (finished while watched, re-attached after a restart, finished as
lost by ``recover``, deleted)."""

import json
import logging
import os
import signal
import subprocess
import sys

import pytest

from svmcore.engine import limits
from svmcore.engine.recovery import recover
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from tests.conftest import ROOT, cli, two_at_a_time
from tests.helpers import _run
from tests.helpers import wait_until as _wait_until

needs_cgroup = pytest.mark.skipif(not limits.cgroup_available(), reason="no writable cgroup v1 memory controller")


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


def _join(group: str, pid: int) -> None:
    """Put ``pid`` into ``group``, as the worker puts itself into its run's cgroup."""
    with open(os.path.join(group, "cgroup.procs"), "w") as f:
        f.write(str(pid))


@needs_cgroup
def test_remove_cgroup_removes_child_groups_bottom_up(tmp_path):
    group = limits.create_cgroup(f"run-test-{os.getpid()}", None)
    nested = os.path.join(group, "svmcore", "probe-x")
    os.makedirs(nested)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        _join(os.path.join(group, "svmcore"), proc.pid)
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
        _join(group, proc.pid)
        with caplog.at_level(logging.WARNING, logger="svmcore"):
            limits.remove_cgroup(group, timeout_s=0.3)
        assert os.path.isdir(group)
        assert any(group in r.getMessage() for r in caplog.records), caplog.text
    finally:
        proc.kill()
        proc.wait()
        limits.remove_cgroup(group)
    assert not os.path.exists(group)


# ---------------------------------------------------------------- runs the runner lost sight of

STREAM = dict(rows=20_000, features=1 << 16, nnz_per_row=30, epochs=3, mode="stream", batch_size=1000)


def _start_cli_run(home, fault, **knobs):
    env = dict(os.environ, PYTHONPATH=ROOT, SVMCORE_FAULT=fault)
    args = [f"--{k.replace('_', '-')}={v}" for k, v in knobs.items()]
    return subprocess.Popen([sys.executable, "-m", "svmcore", "run", "--home", home, "--json"] + args,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)


def _spill_written(store):
    """The CLI's run once its first pass is over and its spill is on disk (it then sleeps at epoch 2)."""
    runs = store.list_runs()
    if not runs or not runs[0].worker_pid or not runs[0].run_dir:
        return None
    rec = runs[0]
    try:
        with open(os.path.join(rec.run_dir, "events.jsonl")) as f:
            first_pass_done = any('"epoch_samples_per_s"' in line for line in f)
    except OSError:
        return None
    spill = os.path.join(rec.run_dir, "spill")
    if first_pass_done and os.path.isdir(spill) and sum(
            os.path.getsize(os.path.join(spill, n)) for n in os.listdir(spill)) > 0:
        return rec
    return None


def _gone(pid, ctime):
    from svmcore.engine import procfs
    return not procfs.is_same_process(pid, ctime)


def _lost_run_releases_its_cgroup_and_spill_and_delete_removes_its_folder(home, store):
    proc = _start_cli_run(home, "sleep:120@epoch2", memory_cap_mb=800, cap_kind="cgroup", **STREAM)
    try:
        rec = _wait_until(lambda: _spill_written(store), what="the first pass and its spill")
    finally:
        proc.kill()  # the runner dies without cleaning up ...
        proc.wait()
    os.kill(rec.worker_pid, signal.SIGKILL)  # ... and so does the worker (it is in its own session)
    _wait_until(lambda: _gone(rec.worker_pid, rec.worker_ctime), what="the worker to end")
    group = _job(rec.run_dir)["cgroup"]
    assert group and os.path.isdir(group)
    assert recover(store) == [rec.id]
    assert store.get_run(rec.id).status == RunStatus.LOST
    assert not os.path.exists(group)
    assert not os.path.exists(os.path.join(rec.run_dir, "spill"))
    assert os.path.isfile(os.path.join(rec.run_dir, "events.jsonl"))  # the evidence stays until deleted
    deleted = cli("runs", "delete", str(rec.id), home=home)
    assert deleted.returncode == 0, deleted.stderr
    assert not os.path.exists(rec.run_dir)
    assert store.get_run(rec.id) is None


def _reattached_cgroup_run_leaves_no_cgroup(home, store):
    from svmcore.engine.registry import get_active
    from tests.helpers import SMALL, _wait_running

    proc = _start_cli_run(home, "sleep:2@train", memory_cap_mb=800, cap_kind="cgroup", **SMALL)
    try:
        rec = _wait_running(store)
    finally:
        proc.kill()
        proc.wait()
    group = _job(rec.run_dir)["cgroup"]
    assert recover(store) == [rec.id]
    run = get_active(store.home, rec.id)
    assert run is not None and run.wait(120) == RunStatus.COMPLETED, run.summary
    assert not os.path.exists(group)


@pytest.mark.slow
@needs_cgroup
def test_a_lost_run_and_a_reattached_run_release_their_cgroups(tmp_path):
    """A run lost with its runner (recovered as lost: its cgroup and spill released, then deleted)
    and one re-attached after its runner died (its cgroup gone when it completes): two
    independent CLI runs, each in a home of its own, at once."""
    from svmcore.store.sqlite import Store

    def case(check):
        name = check.__name__.strip("_")
        home = str(tmp_path / name)
        os.makedirs(home)
        store = Store(home)
        try:
            try:
                check(home, store)
            except AssertionError as e:
                raise AssertionError(f"{name}: {e}") from e
            assert not store.integrity_problems(), name
        finally:
            store.close()

    two_at_a_time(case, [(_lost_run_releases_its_cgroup_and_spill_and_delete_removes_its_folder,),
                         (_reattached_cgroup_run_leaves_no_cgroup,)])


def test_delete_keeps_a_run_folder_outside_the_home(home, store, tmp_path):
    outside = tmp_path / "elsewhere" / "7"
    outside.mkdir(parents=True)
    (outside / "events.jsonl").write_text("")
    rid = store.create_run({"dataset": "sparse-text"})
    store.set_process(rid, str(outside), os.getpid(), None, os.getpid(), None)
    store.finish_run(rid, RunStatus.FAILED, RunSummary())
    assert cli("runs", "delete", str(rid), home=home).returncode == 0
    assert store.get_run(rid) is None
    assert outside.is_dir()


def test_lab_delete_removes_the_folder_and_spill_inside_the_home_only(home, tmp_path):
    from svmcore.app.lab import Lab

    lab = Lab(home)
    inside = os.path.join(home, "runs", "1")
    os.makedirs(os.path.join(inside, "spill"))
    outside = tmp_path / "elsewhere"
    (outside / "spill").mkdir(parents=True)
    ids = []
    for folder in (inside, str(outside)):
        rid = lab.store.create_run({"dataset": "sparse-text"})
        lab.store.set_process(rid, folder, os.getpid(), None, os.getpid(), None)
        lab.store.finish_run(rid, RunStatus.LOST, RunSummary())
        ids.append(rid)
    for rid in ids:
        lab.runs.delete(rid)
    assert not os.path.exists(inside)
    assert outside.is_dir() and not (outside / "spill").exists()  # kept, but its spill is released


def test_a_data_parallel_runs_shards_are_released_with_its_spill(tmp_path):
    from svmcore.engine.leftovers import release_leftovers

    run_dir = tmp_path / "runs" / "3"
    for part in ("shards/shard-0", "shards/shard-1", "spill"):
        (run_dir / part).mkdir(parents=True)
        (run_dir / part / "data.bin").write_bytes(b"\0" * 4096)
    (run_dir / "events.jsonl").write_text("")
    release_leftovers(str(run_dir))  # as Run._finish and recover call it
    assert sorted(os.listdir(run_dir)) == ["events.jsonl"]  # the evidence stays, the copies of the rows go
