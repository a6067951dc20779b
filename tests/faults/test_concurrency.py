"""Several browser sessions and CLI processes launching at once: all complete,
none lost, and no run's measurements mixed with another's."""

import json
import os
import subprocess
import sys
import threading

import pytest

from svmcore.app.lab import Lab
from svmcore.engine.registry import get_active
from svmcore.spec.status import RunStatus
from tests.conftest import ROOT

TINY = dict(rows=3_000, features=4096, nnz_per_row=20, epochs=1)


def _lean_file(lab) -> dict:
    """The sessions' runs take the lean path (a svmlight file, native parser and solver, stream
    mode: a worker with numpy only, ~0.3 s of imports); the CLI processes' runs stay on the
    built-in data and scikit-learn, so both kinds of worker run side by side."""
    import random

    rng = random.Random(0)
    lines = []
    for i in range(3_000):
        cols = sorted(rng.sample(range(1, 4097), 20))
        lines.append(("+1" if i % 2 else "-1") + "".join(f" {c}:{rng.random():.4f}" for c in cols))
    path = lab.folders.upload("tiny.svm", ("\n".join(lines) + "\n").encode())[0]
    return dict(dataset=path, solver="native", parser="native", mode="stream", epochs=1)


@pytest.mark.slow
def test_sessions_and_cli_launching_together(home):
    lab = Lab(home)  # the app: one queue, one run at a time
    ids: list[int] = []
    lock = threading.Lock()
    lean = _lean_file(lab)

    def session(seed):
        for k in range(3):
            rid = lab.runs.launch(dict(lean, seed=seed * 10 + k))
            with lock:
                ids.append(rid)

    env = dict(os.environ, PYTHONPATH=ROOT)
    clis = [subprocess.Popen([sys.executable, "-m", "svmcore", "run", "--home", home, "--json",
                              *[f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()], f"--seed={100 + i}"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT) for i in range(2)]
    threads = [threading.Thread(target=session, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == 9
    assert max(p for p in (lab.queue.position(i) or 0 for i in ids)) >= 1  # they really queued
    cli_ids = []
    for p in clis:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        cli_ids.append(json.loads(out.strip().splitlines()[-1])["run_id"])
    for rid in ids:
        run = get_active(home, rid)
        if run is not None:
            run.wait(300)
    all_ids = ids + cli_ids
    assert len(set(all_ids)) == 11
    for rid in all_ids:
        rec = lab.store.get_run(rid)
        assert rec.status == RunStatus.COMPLETED, (rid, rec.status, rec.summary.error)
        started = next(e for e in lab.store.events(rid) if e["kind"] == "started")
        assert started["pid"] == rec.worker_pid  # the events are this run's own worker's
        t = [s[0] for s in lab.store.samples(rid)]
        # every sample the run's sampler took is stored, in order (a 0.2 s run under this load may have one)
        assert t == sorted(t) and len(t) == rec.summary.n_samples >= 1
        assert rec.summary.peak_rss_mb >= rec.summary.floor_mb
    assert not lab.store.integrity_problems()
