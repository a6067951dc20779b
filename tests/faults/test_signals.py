"""SIGINT (Ctrl-C) and SIGTERM to every command that starts children: ``run`` (while its
worker builds the on-disk copy of the rows), ``sweep``, ``fit`` (during an attempt and
between two), ``estimate``'s first calibration and ``predict``. Each ends what it started and exits with
one line and its code (run, sweep and fit: cancelled, 4; the others 128 + the signal), leaving no
process, cgroup, spill, partial copy or run still marked running; and a worker killed while
it builds a copy leaves no partial copy behind either."""

import os
import re
import signal
import subprocess
import sys

import psutil
import pytest

from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store
from tests.conftest import ROOT
from tests.helpers import _run, assert_nothing_left, lean_model, wait_until

SIGNALS = [signal.SIGINT, signal.SIGTERM]


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


def _one_line(err: str) -> str:
    assert "Traceback" not in err, err
    return err.strip().splitlines()[-1] if err.strip() else ""


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
    assert run.wait(120) == RunStatus.FAILED and run.summary.error.signal == "SIGKILL", run.summary
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


@pytest.mark.slow
def test_a_sweep_sent_sigterm_cancels_its_runs_and_exits_4(tmp_path):
    home = str(tmp_path / "home")
    cmd = _Command(tmp_path, "--home", home, "sweep", "--rows", "20000", "--epochs", "1", "--grid", "batch_size=256,512",
                   env={"SVMCORE_FAULT": "sleep:120@train"})

    def training():
        if not os.path.exists(os.path.join(home, "runs.sqlite")):
            return False
        store = Store(home)
        try:
            return any(e["kind"] == "phase_start" and e["phase"] == "train"
                       for r in store.list_runs() for e in store.events(r.id))
        finally:
            store.close()

    _wait_until(training, what="the sweep's first run to train")
    code, out, err = cmd.signal(signal.SIGTERM)
    assert code == 4, (code, out, err)
    assert "Traceback" not in err, err
    store = Store(home)
    assert [r.status for r in store.list_runs()] == [RunStatus.CANCELLED] * 2
    store.close()
    assert_nothing_left(home)


# ------------------------------------------------------------------ fit

@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_fit_interrupted_during_an_attempt_is_cancelled_in_one_line_and_keeps_the_attempt(tmp_path, sig):
    home = str(tmp_path / "home")
    cmd = _Command(tmp_path, "--home", home, "fit", "--budget", "400", "--rows", "20000", "--epochs", "1",
                   env={"SVMCORE_FAULT": "sleep:120@train"})
    store = Store(home) if os.path.isdir(home) else None

    def training():
        nonlocal store
        if store is None and os.path.exists(os.path.join(home, "runs.sqlite")):
            store = Store(home)
        runs = store.list_runs() if store else []
        return runs and any(e["kind"] == "phase_start" and e["phase"] == "train" for e in store.events(runs[0].id))

    _wait_until(training, what="the first attempt to train")
    code, out, err = cmd.signal(sig)
    assert code == 4, (code, out, err)
    assert re.fullmatch(f"fit cancelled by {sig.name} after 1 run, kept in the history: run 1 cancelled "
                        r"\(exact peak [\d.]+ MiB\)", out.strip()), out
    assert "Traceback" not in err and "DOES NOT FIT" not in out, err
    assert store.get_run(1).status == RunStatus.CANCELLED
    assert_nothing_left(home)


def test_fit_interrupted_between_attempts_is_cancelled_and_keeps_them(home, monkeypatch, capsys):
    """The signal arrives while fit diagnoses its first attempt (in this process: a real
    signal to a real CLI, at the one moment no run is going)."""
    from svmcore import cli as svmcore_cli
    from svmcore.app import fit as fit_loop

    real = fit_loop.diagnose

    def diagnose_then_sigint(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(fit_loop, "diagnose", diagnose_then_sigint)
    monkeypatch.setenv("SVMCORE_FAULT", "spike:300@train")  # the first attempt goes over a 250 MiB budget
    code = svmcore_cli.main(["fit", "--home", home, "--budget", "250", "--rows", "20000", "--epochs", "1"])
    out, err = capsys.readouterr()
    assert code == 4, (code, out, err)
    assert out.strip().startswith("fit cancelled by SIGINT after 1 run, kept in the history: run 1 "), out
    assert "Traceback" not in err, err
    store = Store(home)
    assert [r.status for r in store.list_runs()] in ([RunStatus.OOM], [RunStatus.COMPLETED])
    store.close()
    assert_nothing_left(home)


# ------------------------------------------------------------------ estimate's first calibration

@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_an_interrupted_first_calibration_ends_its_run_in_one_line(tmp_path, sig):
    home = str(tmp_path / "home")
    cmd = _Command(tmp_path, "--home", home, "estimate", "--rows", "10000")
    calibration = os.path.join(home, "calibration")

    def first_run_started():
        if not os.path.exists(os.path.join(calibration, "runs.sqlite")):
            return None
        store = Store(calibration)
        try:
            runs = store.list_runs()
            return runs and runs[-1].worker_pid
        finally:
            store.close()

    _wait_until(first_run_started, what="the first calibration run")
    code, out, err = cmd.signal(sig)
    assert code == 128 + sig, (code, out, err)
    assert _one_line(err) == f"svmcore: estimate interrupted by {sig.name}; ended calibration run 1 cancelled", err
    assert not os.path.exists(os.path.join(home, "calibration.json"))
    assert_nothing_left(calibration)


# ------------------------------------------------------------------ predict

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A run with an exported model and a file to score."""
    return lean_model(tmp_path_factory.mktemp("predict-signals"), rows=100_000)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_predict_interrupted_ends_its_scoring_process_and_keeps_the_old_output(served, tmp_path, sig):
    home, data = served
    out = tmp_path / "predictions.txt"
    out.write_text("the old predictions\n")
    cmd = _Command(tmp_path, "--home", home, "predict", "--model", "1", "--data", data, "--out", str(out))
    parent = psutil.Process(cmd.proc.pid)

    def scoring():
        if cmd.proc.poll() is not None:
            return True
        try:
            return next((c for c in parent.children() if "svmcore.serve" in c.cmdline()), None)
        except psutil.Error:  # forked, not yet started as the scoring process
            return None

    child = _wait_until(scoring, what="the scoring process")
    assert cmd.proc.poll() is None, cmd.err.read_text()
    child.suspend()  # caught in the middle, whatever the machine's speed
    code, stdout, err = cmd.signal(sig)
    assert code == 128 + sig, (code, stdout, err)
    assert _one_line(err) == f"svmcore: predict interrupted by {sig.name}", err
    _wait_until(lambda: not child.is_running() or child.status() == psutil.STATUS_ZOMBIE, timeout=10,
                what="the scoring process to end")
    assert out.read_text() == "the old predictions\n"
    assert sorted(os.listdir(tmp_path)) == ["predictions.txt", "stderr.txt", "stdout.txt"]  # no temporary left


# ------------------------------------------------------------------ before the trap is set

def test_ctrl_c_while_the_command_is_still_importing_is_one_line_and_130(tmp_path):
    """Python takes about half a second to import the command line; a Ctrl-C then (nothing is
    started yet) ends it with one line, not a KeyboardInterrupt traceback."""
    home = str(tmp_path / "home")
    cmd = _Command(tmp_path, "--home", home, "run", "--rows", "20000", env={"SVMCORE_FAULT": "sleep:60@train"})

    def importing_numpy():
        try:
            with open(f"/proc/{cmd.proc.pid}/maps") as f:
                return "numpy" in f.read()
        except OSError:
            return False

    _wait_until(importing_numpy, what="the command to import numpy")
    code, out, err = cmd.signal(signal.SIGINT)
    assert code in (130, 4), (code, out, err)  # 4: the signal came once the run had started
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1, err
    if os.path.exists(home):
        assert_nothing_left(home)
