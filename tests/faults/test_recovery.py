"""Faults around processes: a worker killed in each phase, a runner killed while
its runs go on, a pid reused by another process."""

import os
import signal
import time

from svmcore.engine import procfs
from svmcore.engine.recovery import recover
from svmcore.engine.registry import get_active
from svmcore.spec.config import validate
from svmcore.store.sqlite import RunStatus
from tests.conftest import two_at_a_time
from tests.helpers import SMALL, _run, _start_cli_run, _wait_for_phase, _wait_running


def _wait_until(condition, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:.0f} s: {what}")
        time.sleep(0.02)


def _killed_in(store, phase):
    run = _run(store, fault=f"sleep:120@{phase}")
    try:
        _wait_for_phase(run, phase)
        _wait_until(lambda: any(e["kind"] == "phase_start" and e["phase"] == phase
                                for e in store.events(run.run_id)), f"the {phase} phase's start reached the store")
        os.kill(run.pid, signal.SIGKILL)
        return run, run.wait(10)
    finally:
        if not run.is_finished():  # an assertion above left it running
            run.cancel()
            run.wait(30)


def test_worker_sigkilled_in_each_phase_is_failed_and_keeps_its_data(store):
    """A phase each, two runs at a time (independent runs; each is killed in its own phase)."""
    phases = ["load", "train", "evaluate"]
    for phase, (run, status) in zip(phases, two_at_a_time(lambda p: _killed_in(store, p), [(p,) for p in phases])):
        assert status == RunStatus.FAILED, (phase, status, run.summary)
        assert run.summary["error"]["signal"] == "SIGKILL", (phase, run.summary)
        assert run.summary["phase"] == phase, (phase, run.summary)
        assert len(store.samples(run.run_id)) > 10, phase
        assert any(e["kind"] == "phase_start" and e["phase"] == phase for e in store.events(run.run_id)), phase
    assert store.integrity_ok()


def _runner_killed_then_worker_gone(home, store):
    proc = _start_cli_run(home, "sleep:120@train")
    rec = _wait_running(store)
    proc.kill()
    proc.wait()
    os.kill(rec.worker_pid, signal.SIGKILL)  # the worker is in its own session: kill it too
    _wait_until(lambda: not procfs.is_same_process(rec.worker_pid, rec.worker_ctime), "the worker is gone")
    assert recover(store) == [rec.id], "worker gone"
    after = store.get_run(rec.id)
    assert after.status == RunStatus.LOST, ("worker gone", after.status)
    assert len(store.samples(rec.id)) > 0, "worker gone: what was committed is kept"


def _runner_killed_worker_alive(home, store):
    proc = _start_cli_run(home, "sleep:3@train")
    rec = _wait_running(store)
    proc.kill()
    proc.wait()
    assert recover(store) == [rec.id], "worker alive"
    run = get_active(store.home, rec.id)
    assert run is not None, "worker alive: not re-attached"
    assert run.wait(60) == RunStatus.COMPLETED, ("worker alive", run.summary)
    assert store.get_run(rec.id).summary["accuracy"] > 0.5, "worker alive"


def test_runner_killed_then_worker_gone_is_lost_or_alive_is_monitored_again(tmp_path):
    """Both cases at once (independent CLI runs, each in a home of its own)."""
    from svmcore.store.sqlite import Store

    def case(check, name):
        home = str(tmp_path / name)
        os.makedirs(home)
        store = Store(home)
        try:
            check(home, store)
            assert store.integrity_ok(), name
        finally:
            store.close()

    two_at_a_time(case, [(_runner_killed_then_worker_gone, "gone"), (_runner_killed_worker_alive, "alive")])


def test_reused_pid_is_not_mistaken_for_the_worker(store):
    run_id = store.create_run(validate(SMALL).to_dict())
    # a live process (this one) with the wrong start time plays the part of a reused pid
    store.set_process(run_id, "/nonexistent", os.getpid(), procfs.create_time(os.getpid()) - 1,
                      999_999, 1.0)
    assert recover(store) == [run_id]
    assert store.get_run(run_id).status == RunStatus.LOST


