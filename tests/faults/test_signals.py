"""SIGINT (Ctrl-C) and SIGTERM to ``run`` while its worker builds the on-disk copy of the
rows: cancelled, exit 4, leaving no process, cgroup, spill, partial copy or run still marked
running; and a worker killed while it builds a copy leaves no partial copy behind either."""

import os
import signal
import subprocess
import sys

import psutil
import pytest

from svmcore.store.sqlite import RunStatus, Store
from tests.conftest import ROOT
from tests.helpers import _run, assert_nothing_left, wait_until

def _wait_until(condition, timeout=120, what="condition"):
    return wait_until(condition, timeout, what, every_s=0.01)


class _Command:
    """``python -m svmcore ARGS`` as a real process, its output in files (never a full pipe)."""

    def __init__(self, tmp_path, *args, env=None):
        self.out, self.err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
        full_env = dict(os.environ, PYTHONPATH=ROOT, TMPDIR=str(tmp_path))
        full_env.pop("SVMCORE_FAULT", None)
        full_env.update(env or {})
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "svmcore", *args], stdout=out, stderr=err,
                                         env=full_env, cwd=ROOT)

    def signal(self, sig) -> tuple[int, str, str]:
        assert self.proc.poll() is None, (self.proc.returncode, self.err.read_text()[-2000:])
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=120)
        return code, self.out.read_text(), self.err.read_text()


def _cache_temporaries(home):
    cache = os.path.join(home, "cache")
    return [n for n in os.listdir(cache) if n.endswith(".tmp")] if os.path.isdir(cache) else []


# ------------------------------------------------------------------ run

@pytest.mark.parametrize("sig,mode", [(signal.SIGINT, "memmap"), (signal.SIGTERM, "stream")],
                         ids=["SIGINT-memmap", "SIGTERM-stream"])
def test_a_run_interrupted_while_it_builds_its_copy_is_cancelled_and_leaves_nothing(tmp_path, sig, mode):
    home = str(tmp_path / "home")
    cmd = _Command(tmp_path, "--home", home, "run", "--rows", "1000000", "--nnz-per-row", "10", "--mode", mode,
                   "--epochs", "1")
    _wait_until(lambda: _cache_temporaries(home), what="the copy's build to begin")
    code, out, err = cmd.signal(sig)
    assert code == 4, (code, out, err)
    assert out.startswith("run 1: cancelled"), out
    assert "Traceback" not in err, err
    assert Store(home).get_run(1).status == RunStatus.CANCELLED
    assert_nothing_left(home)


def test_a_worker_killed_while_it_builds_its_copy_leaves_no_partial_copy(store):
    run = _run(store, rows=1_000_000, nnz_per_row=10, mode="memmap", epochs=1)
    _wait_until(lambda: _cache_temporaries(store.home), what="the copy's build to begin")
    os.kill(run.pid, signal.SIGKILL)  # as the kernel's OOM killer or `kill -9` would
    assert run.wait(120) == RunStatus.FAILED and run.summary["error"]["signal"] == "SIGKILL", run.summary
    assert_nothing_left(store.home)


def test_a_copy_left_by_a_runner_and_worker_both_killed_is_removed_when_the_run_is_recovered(home, store, tmp_path):
    from svmcore.engine.recovery import recover

    cmd = _Command(tmp_path, "--home", home, "run", "--rows", "1000000", "--nnz-per-row", "10", "--mode", "memmap",
                   "--epochs", "1")
    _wait_until(lambda: _cache_temporaries(home) and store.list_runs() and store.list_runs()[0].worker_pid,
                what="the copy's build to begin")
    rec = store.list_runs()[0]
    cmd.proc.kill()  # the runner dies without cleaning up ...
    cmd.proc.wait()
    os.kill(rec.worker_pid, signal.SIGKILL)  # ... and so does its worker, half-way through the copy
    _wait_until(lambda: not psutil.pid_exists(rec.worker_pid) or psutil.Process(rec.worker_pid).status() == "zombie",
                what="the worker to end")
    assert _cache_temporaries(home)
    assert recover(store) == [rec.id]
    assert store.get_run(rec.id).status == RunStatus.LOST
    assert_nothing_left(home)
