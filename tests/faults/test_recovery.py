"""Faults around processes: a worker killed in each phase, a runner killed while
its runs go on, a pid reused by another process."""

import os
import signal
import time

import pytest

from svmcore.engine import procfs
from svmcore.engine.recovery import recover
from svmcore.engine.registry import get_active
from svmcore.spec.config import validate
from svmcore.store.sqlite import RunStatus
from tests.helpers import SMALL, _run, _start_cli_run, _wait_for_phase, _wait_running


def _wait_until(condition, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:.0f} s: {what}")
        time.sleep(0.02)


@pytest.mark.parametrize("phase", ["load", "train", "evaluate"])
def test_worker_sigkilled_in_each_phase_is_failed_and_keeps_its_data(store, phase):
    run = _run(store, fault=f"sleep:120@{phase}")
    _wait_for_phase(run, phase)
    _wait_until(lambda: any(e["kind"] == "phase_start" and e["phase"] == phase for e in store.events(run.run_id)),
                "the phase's start reached the store")
    os.kill(run.pid, signal.SIGKILL)
    assert run.wait(10) == RunStatus.FAILED
    assert run.summary["error"]["signal"] == "SIGKILL"
    assert run.summary["phase"] == phase
    assert len(store.samples(run.run_id)) > 10
    assert any(e["kind"] == "phase_start" and e["phase"] == phase for e in store.events(run.run_id))
    assert store.integrity_ok()


def test_runner_killed_then_worker_gone_is_lost(home, store):
    proc = _start_cli_run(home, "sleep:120@train")
    rec = _wait_running(store)
    proc.kill()
    proc.wait()
    os.kill(rec.worker_pid, signal.SIGKILL)  # the worker is in its own session: kill it too
    _wait_until(lambda: not procfs.is_same_process(rec.worker_pid, rec.worker_ctime), "the worker is gone")
    assert recover(store) == [rec.id]
    after = store.get_run(rec.id)
    assert after.status == RunStatus.LOST
    assert len(store.samples(rec.id)) > 0  # what was committed is kept


def test_runner_killed_worker_alive_is_monitored_again(home, store):
    proc = _start_cli_run(home, "sleep:3@train")
    rec = _wait_running(store)
    proc.kill()
    proc.wait()
    assert recover(store) == [rec.id]
    run = get_active(store.home, rec.id)
    assert run is not None
    assert run.wait(60) == RunStatus.COMPLETED
    assert store.get_run(rec.id).summary["accuracy"] > 0.5


def test_reused_pid_is_not_mistaken_for_the_worker(store):
    run_id = store.create_run(validate(SMALL).to_dict())
    # a live process (this one) with the wrong start time plays the part of a reused pid
    store.set_process(run_id, "/nonexistent", os.getpid(), procfs.create_time(os.getpid()) - 1,
                      999_999, 1.0)
    assert recover(store) == [run_id]
    assert store.get_run(run_id).status == RunStatus.LOST


