"""Sweeps on a real dask.distributed cluster: a LocalCluster of two worker processes
(one thread and one run slot each) started here, real training workers under them.
Completion, a Dask worker killed mid-run, cancel, and schedulers that cannot be used."""

from __future__ import annotations

import json
import os
import signal
import socket
import time

import psutil
import pytest

from svmcore.app.lab import Lab
from svmcore.engine.runner import Run
from svmcore.spec.status import RunStatus
from svmcore.sweeps import dask_executor
from svmcore.sweeps.dask_executor import SchedulerUnreachable
from svmcore.sweeps.executors import make_executor
from svmcore.sweeps.grid import expand
from svmcore.sweeps.sweep import Sweep
from tests.conftest import cli

TINY = dict(rows=2_000, features=1024, nnz_per_row=10, epochs=1)


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    c = LocalCluster(n_workers=2, processes=True, threads_per_worker=1, resources={"svmcore_run": 1},
                     dashboard_address=None)
    client = Client(c.scheduler_address, set_as_default=False)
    yield c, client
    client.close(timeout=30)  # bounded, as in test_ddp_faults: a close has no timeout of its own
    c.close(timeout=60)


@pytest.fixture
def address(cluster):
    c, client = cluster
    client.wait_for_workers(2, timeout=60)  # a test before may have killed one (its nanny restarts it)
    return c.scheduler_address


GRID = {"batch_size": [64, 128, 256, 512]}


def _worker_pids(client) -> set[int]:
    return set(client.run(os.getpid).values())


def _training_workers(marker: str) -> list[psutil.Process]:
    """Live `python -m svmcore.worker` processes of a Dask task's throwaway home started with
    this test's fault spec (a test in the other pytest process may run local workers with the
    same spec: CI saw one of them taken for a task's, whose home is no task's)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            cmd = p.info["cmdline"] or []
            if ("svmcore.worker" in cmd and _task_home(cmd[-1]).startswith("svmcore-")
                    and p.environ().get("SVMCORE_FAULT") == marker):
                out.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return out


def _in_train(proc: psutil.Process) -> bool:
    run_dir = proc.cmdline()[-1]
    try:
        with open(os.path.join(run_dir, "events.jsonl")) as f:
            return any(json.loads(line).get("phase") == "train" for line in f if line.endswith("\n"))
    except OSError:
        return False


def _wait_training(marker: str, n: int, timeout: float = 60) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs = [p for p in _training_workers(marker) if _in_train(p)]
        if len(procs) >= n:
            return procs
        time.sleep(0.1)
    raise AssertionError(f"{n} training workers never reached the train phase")


def _task_home(run_dir: str) -> str:
    """The name of a run's home: a Dask task's is svmcore-PREFIX-RUNID-xxxx (.../runs/1)."""
    return os.path.basename(os.path.dirname(os.path.dirname(run_dir)))


def _app_run_id(proc: psutil.Process) -> int:
    """The app's run id, from the task's throwaway home."""
    return int(_task_home(proc.cmdline()[-1]).split("-")[2])


@pytest.mark.slow
def test_sweep_on_dask_is_measured_like_a_local_run(home, address):
    lab = Lab(home)
    sweep_id = lab.sweeps.start(TINY, {"batch_size": [64, 256, 1024], "precision": ["float64", "float32"]},
                               executor="dask", scheduler=address)
    assert lab.sweeps.active[sweep_id].wait(180)
    runs = lab.store.list_runs(sweep_id=sweep_id)
    assert len(runs) == 6
    local = Run(lab.store, lab.sweeps.active[sweep_id].runs[0].config)
    local.start().wait(120)
    assert local.status == RunStatus.COMPLETED
    local_summary = lab.store.get_run(local.run_id).summary
    local_kinds = {e["kind"] for e in lab.store.events(local.run_id)}
    spans: dict[str, list[tuple[float, float]]] = {}
    for rec in runs:
        assert rec.status == RunStatus.COMPLETED, (rec.id, rec.summary.error)
        assert rec.summary.extra == local_summary.extra == {} and local_summary.dask is None
        assert rec.summary.run_id == rec.id
        assert [p.name for p in rec.summary.phases] == [p.name for p in local_summary.phases]
        assert rec.summary.peak_rss_mb >= rec.summary.floor_mb > 50
        assert 0.5 < rec.summary.accuracy <= 1.0
        samples = lab.store.samples(rec.id)
        assert len(samples) > 10 and [s[0] for s in samples] == sorted(s[0] for s in samples)
        assert {e["kind"] for e in lab.store.events(rec.id)} == local_kinds
        assert (rec.host, rec.host_cpus) == (socket.gethostname(), os.cpu_count())
        assert rec.host_memory_bytes == psutil.virtual_memory().total
        d = rec.summary.dask
        spans.setdefault(d.worker, []).append((d.started_at, d.ended_at))
    assert len(spans) == 2, spans  # both workers ran runs
    for worker, times in spans.items():  # and each ran one at a time
        times.sort()
        assert all(a[1] <= b[0] for a, b in zip(times, times[1:])), (worker, times)
    assert lab.store.sweeps()[0]["status"] == "finished"
    assert lab.runs.history()[0]["host"] == socket.gethostname()
    assert lab.sweeps.hosts(sweep_id) == [socket.gethostname()]
    assert not lab.store.integrity_problems()


@pytest.mark.slow
def test_dask_worker_killed_mid_run_loses_that_run_only(store, address, cluster):
    _, client = cluster
    marker = "sleep:2.5@train"
    executor = make_executor("dask", store, scheduler=address)
    sweep = Sweep(store, executor, TINY, GRID, expand(TINY, GRID), extra_env={"SVMCORE_FAULT": marker})
    victim = _wait_training(marker, 1)[0]
    assert "MALLOC_TRIM_THRESHOLD_" not in victim.environ()  # the nanny's malloc setting stays with Dask
    dask_worker = victim.ppid()
    assert dask_worker in _worker_pids(client)
    lost_id = _app_run_id(victim)
    os.kill(dask_worker, signal.SIGKILL)
    victim.wait(10)  # the training worker dies with its Dask worker (parent-death signal)
    assert sweep.wait(180)
    statuses = {r.id: r.status for r in store.list_runs(sweep_id=sweep.sweep_id)}
    assert statuses.pop(lost_id) == RunStatus.LOST
    assert set(statuses.values()) == {RunStatus.COMPLETED}, statuses
    lost = store.get_run(lost_id)
    # the scheduler ran the task again elsewhere; that second attempt reported the loss
    assert "Dask started it again" in lost.summary.error.message, lost.summary.error
    assert lost.host == socket.gethostname()  # where it ran is known from its start
    assert not _training_workers(marker)


def test_cancel_kills_running_runs_and_drops_queued_ones(store, address, cluster):
    marker = "sleep:60@train"
    executor = make_executor("dask", store, scheduler=address)
    sweep = Sweep(store, executor, TINY, GRID, expand(TINY, GRID), extra_env={"SVMCORE_FAULT": marker})
    running = {_app_run_id(p) for p in _wait_training(marker, 2)}
    t0 = time.monotonic()
    sweep.cancel()
    assert sweep.wait(30)
    assert time.monotonic() - t0 < 10
    runs = store.list_runs(sweep_id=sweep.sweep_id)
    assert {r.status for r in runs} == {RunStatus.CANCELLED}
    for r in runs:  # the two that ran come back with what was measured until the cancel
        assert (len(store.samples(r.id)) > 0) == (r.id in running), (r.id, running)
    deadline = time.monotonic() + 5
    while _training_workers(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _training_workers(marker)
    dask_workers = _worker_pids(cluster[1])
    assert not [p for p in psutil.process_iter(["cmdline", "ppid"])
                if "svmcore.worker" in (p.info["cmdline"] or []) and p.info["ppid"] in dask_workers]
    sweep._watch.join(20)
    assert store.sweeps()[0]["status"] == "cancelled"


def test_cancel_one_queued_run_of_a_dask_sweep(home, address):
    lab = Lab(home)
    sweep_id = lab.sweeps.start(TINY, {"batch_size": [64, 128, 256]}, executor="dask", scheduler=address)
    last = max(lab.sweeps.active[sweep_id].run_ids)
    assert lab.runs.cancel(last)
    assert lab.sweeps.active[sweep_id].wait(120)
    statuses = lab.sweeps.status(sweep_id)["statuses"]
    assert statuses.pop(last) == "cancelled"
    assert set(statuses.values()) == {"completed"}


def test_unreachable_scheduler_is_one_clear_error_and_exit_2(home):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens on it once closed
    t0 = time.monotonic()
    proc = cli("sweep", "--rows", "2000", "--grid", "batch_size=64,128", "--executor", "dask",
               "--scheduler", f"tcp://127.0.0.1:{port}", home=home, timeout=60)
    assert time.monotonic() - t0 < 25
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"error: cannot reach the Dask scheduler at tcp://127.0.0.1:{port}: " in lines[0], lines
    assert "connection refused" in lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("address, expect", [
    ("tcp://127.0.0.1:1", "cannot reach the Dask scheduler at tcp://127.0.0.1:1: connection refused"),
    ("foo://x:1", "cannot reach the Dask scheduler at foo://x:1: unknown address scheme 'foo'"),
    ("127.0.0.1", "cannot reach the Dask scheduler at 127.0.0.1: missing port number"),
])
def test_bad_scheduler_address_leaves_nothing_in_the_store(home, monkeypatch, address, expect):
    monkeypatch.setattr(dask_executor, "CONNECT_TIMEOUT_S", 1.0)
    lab = Lab(home)
    with pytest.raises(SchedulerUnreachable) as e:
        lab.sweeps.start(TINY, {"batch_size": [64]}, executor="dask", scheduler=address)
    assert expect in str(e.value)
    assert lab.store.list_runs() == [] and lab.store.sweeps() == []


def test_workers_without_a_run_slot_are_refused(home):
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, processes=False, threads_per_worker=1, dashboard_address=None) as c:
        with pytest.raises(SchedulerUnreachable, match="offers the svmcore_run resource.*--resources svmcore_run=1"):
            Lab(home).sweeps.start(TINY, {"batch_size": [64]}, executor="dask", scheduler=c.scheduler_address)


def test_scheduler_without_dask_executor_is_refused(home):
    proc = cli("sweep", "--grid", "batch_size=64", "--scheduler", "tcp://127.0.0.1:8786", home=home, timeout=60)
    assert proc.returncode == 2
    assert "--scheduler is only used with --executor dask" in proc.stderr


@pytest.mark.slow
def test_cli_sweep_on_a_local_cluster_of_its_own(home):
    proc = cli("sweep", *[f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()], "--grid", "batch_size=64,256",
               "--executor", "dask", "--json", home=home, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["executor"] == {"executor": "dask", "scheduler": "a local cluster on this machine"}
    assert [r["status"] for r in out["runs"]] == ["completed", "completed"]
    assert {r["host"] for r in out["runs"]} == {socket.gethostname()}


def test_closing_after_the_connection_is_gone_logs_what_could_not_be_cleaned(address, home, caplog):
    from svmcore.store.sqlite import Store

    ex = dask_executor.DaskExecutor(Store(home), scheduler=address)
    ex.client.close()  # the connection to the scheduler is gone before the sweep lets go of it
    with caplog.at_level("WARNING", logger="svmcore.sweeps.dask_executor"):
        ex.close()
    assert any("could not clear this sweep's events on the Dask scheduler" in r.getMessage()
               for r in caplog.records), caplog.text
