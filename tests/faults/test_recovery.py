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
from svmcore.spec.status import RunStatus
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


@pytest.mark.slow
def test_worker_sigkilled_in_each_phase_is_failed_and_keeps_its_data(store):
    """A phase each, two runs at a time (independent runs; each is killed in its own phase)."""
    phases = ["load", "train", "evaluate"]
    for phase, (run, status) in zip(phases, two_at_a_time(lambda p: _killed_in(store, p), [(p,) for p in phases])):
        assert status == RunStatus.FAILED, (phase, status, run.summary)
        assert run.summary.error.signal == "SIGKILL", (phase, run.summary)
        assert run.summary.phase == phase, (phase, run.summary)
        assert len(store.samples(run.run_id)) > 10, phase
        assert any(e["kind"] == "phase_start" and e["phase"] == phase for e in store.events(run.run_id)), phase
    assert not store.integrity_problems()


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
    assert store.get_run(rec.id).summary.accuracy > 0.5, "worker alive"


@pytest.mark.slow
def test_runner_killed_then_worker_gone_is_lost_or_alive_is_monitored_again(tmp_path):
    """Both cases at once (independent CLI runs, each in a home of its own)."""
    from svmcore.store.sqlite import Store

    def case(check, name):
        home = str(tmp_path / name)
        os.makedirs(home)
        store = Store(home)
        try:
            check(home, store)
            assert not store.integrity_problems(), name
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




# ---------------------------------------------------------------- what a recovered run's summary says

def _start_cli(home, command, fault, **knobs):
    """``svmcore run`` or ``svmcore fit --budget B`` (B: the cap) as a real process, ``SMALL`` and ``knobs``."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = dict(os.environ, PYTHONPATH=ROOT, SVMCORE_FAULT=fault)
    args = [f"--{k.replace('_', '-')}={v}" for k, v in {**SMALL, **knobs}.items()]
    head = ["fit", "--budget", str(knobs["memory_cap_mb"])] if command == "fit" else ["run"]
    return subprocess.Popen([sys.executable, "-m", "svmcore"] + head + ["--home", home, "--json"] + args,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)


def _recovered_after_runner_killed(home, store, command, watched):
    """Kill -9 the runner (``run`` or ``fit``) mid-training; recover at once (the worker is re-attached
    and watched to its end), or only once the worker has ended unwatched (finished from its files)."""
    from svmcore.engine import limits

    proc = _start_cli(home, command, "sleep:4@epoch2", memory_cap_mb=600, cap_kind="cgroup")
    rec = _wait_running(store)
    _wait_until(lambda: any(e["kind"] == "progress" for e in store.events(rec.id)), "training under way")
    proc.kill()
    proc.wait()
    if watched:
        assert recover(store) == [rec.id]
        run = get_active(store.home, rec.id)
        assert run is not None and run.wait(120) == RunStatus.COMPLETED, run and run.summary
    else:
        _wait_until(lambda: not procfs.is_same_process(rec.worker_pid, rec.worker_ctime), "the worker ended", 120)
        assert recover(store) == [rec.id]
    after = store.get_run(rec.id)
    s, samples = after.summary, store.samples(rec.id)
    case = f"{command}, {'re-attached' if watched else 'finished unwatched'}: {after.summary}"
    assert after.status == RunStatus.COMPLETED, case
    assert (s.cap, s.cap_mb) == ("cgroup", 600), case
    assert limits.cgroup_available() and s.cgroup_peak_mb and s.cgroup_peak_mb < 600, case
    last_phase_end = max(p.end_s for p in s.phases)
    assert s.wall_s >= last_phase_end > s.phases[0].start_s, case  # from the worker's start to its end
    assert s.wall_s > s.train_s >= 4, case  # the 4 s sleep is inside training
    assert s.n_samples == len(samples), case  # every sample, the dead runner's too
    assert s.peak_sampled_mb == max(r[1] for r in samples) / 2**20, case


@pytest.mark.slow
def test_a_run_recovered_after_its_runner_was_killed_keeps_its_cap_and_wall_time(tmp_path):
    """kill -9 of ``run`` and of ``fit`` mid-training, each recovered while its worker lives (re-attached)
    and after it ended unwatched: the summary names the cgroup cap, its size and the group's exact peak,
    and its wall time runs from the worker's start to its end (it used to say ``cap none`` and
    6.6 s for a run with 12 s of training). Four CLI runs, two at a time, each in its own home."""
    from svmcore.store.sqlite import Store

    def case(command, watched):
        home = str(tmp_path / f"{command}-{watched}")
        os.makedirs(home)
        store = Store(home)
        try:
            _recovered_after_runner_killed(home, store, command, watched)
            assert not store.integrity_problems()
        finally:
            store.close()

    two_at_a_time(case, [("run", True), ("run", False), ("fit", True), ("fit", False)])


@pytest.mark.slow
def test_a_worker_oom_killed_while_no_runner_watched_is_oom_not_lost(home, store):
    """The runner dies, then its worker hits its cgroup cap (the kernel kills it) before anyone recovers
    the run: the cgroup's OOM-kill count says how it ended, as it would have told the runner."""
    from svmcore.engine import limits

    if not limits.cgroup_available():
        import pytest
        pytest.skip("no writable cgroup v1 memory controller")
    proc = _start_cli(home, "run", "sleep:3@train,hog:600@train", memory_cap_mb=400, cap_kind="cgroup")
    rec = _wait_running(store)
    proc.kill()
    proc.wait()
    _wait_until(lambda: not procfs.is_same_process(rec.worker_pid, rec.worker_ctime), "the worker ended", 120)
    assert recover(store) == [rec.id]
    after = store.get_run(rec.id)
    assert after.status == RunStatus.OOM, after.summary
    assert "OOM killer" in after.summary.error.message, after.summary
    assert (after.summary.cap, after.summary.cap_mb) == ("cgroup", 400)
