"""Shared helpers for tests that start real worker processes."""

import os
import subprocess
import sys
import time

from svmcore.config import validate
from svmcore.runner import Run
from tests.conftest import ROOT

SMALL = dict(rows=20_000, features=1 << 16, nnz_per_row=30, epochs=2)


def _run(store, fault=None, **knobs):
    cfg = validate({**SMALL, **knobs})
    run = Run(store, cfg, extra_env={"SVMCORE_FAULT": fault} if fault else None).start()
    return run


def _wait_for_phase(run, phase, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if run.snapshot().phase == phase:
            return
        if run.is_finished():
            raise AssertionError(f"run ended ({run.status}) before phase {phase}: {run.summary}")
        time.sleep(0.02)
    raise AssertionError(f"phase {phase} not reached")


def _processes_of(run_dir):
    """pids whose command line names this run's folder (the worker and any fork of it)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if run_dir.encode() in f.read():
                        out.append(int(name))
            except OSError:
                pass
    return out


def _start_cli_run(home, fault):
    env = dict(os.environ, PYTHONPATH=ROOT, SVMCORE_FAULT=fault)
    args = [f"--{k.replace('_', '-')}={v}" for k, v in SMALL.items()]
    return subprocess.Popen([sys.executable, "-m", "svmcore", "run", "--home", home, "--json"] + args,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)


def _wait_running(store, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = store.list_runs()
        if runs and runs[0].worker_pid and any(e["kind"] == "phase_start" and e["phase"] == "train"
                                               for e in store.events(runs[0].id)):
            return runs[0]
        time.sleep(0.05)
    raise AssertionError("the CLI run never reached train")


