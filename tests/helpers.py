"""Shared helpers for tests that start real worker processes."""

import os
import subprocess
import sys
import time

from svmcore.engine.runner import Run
from svmcore.spec.config import validate
from tests.conftest import ROOT

SMALL = dict(rows=20_000, features=1 << 16, nnz_per_row=30, epochs=2)


def _run(store, fault=None, **knobs):
    cfg = validate({**SMALL, **knobs})
    run = Run(store, cfg, extra_env={"SVMCORE_FAULT": fault} if fault else None).start()
    return run


def wait_until(condition, timeout=60, what="condition", every_s=0.05):
    """The first true value of ``condition()``, polled; AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"timed out waiting for {what}")


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




# The head of a history script on the lean path: its home's datasets/tiny.svm (2,000 rows, or
# args["file_rows"], of 20 of 4,096 columns: about a second a run with the native parser and solver),
# ``args`` (the JSON given to make_history), ``path`` and a Lab. A script goes on from there.
TINY_HISTORY = r"""
import json, os, random, sys, time
from svmcore.app.lab import Lab

home, args = sys.argv[1], json.loads(sys.argv[2])
os.makedirs(os.path.join(home, "datasets"))
path = os.path.join(home, "datasets", "tiny.svm")
rng = random.Random(7)
with open(path, "w") as f:
    for i in range(args.pop("file_rows", 2000)):
        cols = sorted(rng.sample(range(1, 4096), 20))
        f.write(("1" if i % 2 else "-1") + " " + " ".join(f"{j}:{rng.random():.3f}" for j in cols) + "\n")
lab = Lab(home)
"""


def make_history(script: str, home: str, small: dict) -> dict:
    """Run a history-making script (Lab API) in a small separate process, so the test
    process has no part in its runs; returns the JSON it printed last."""
    import json

    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("SVMCORE_FAULT", None)
    proc = subprocess.run([sys.executable, "-c", script, home, json.dumps(small)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def shared_history(tmp_path_factory, name: str, build) -> tuple[dict, str]:
    """A history home made once for the whole test session, across pytest-xdist's processes, and
    this process's own copy of it: ``(build(home)'s result, the copy's home)``.

    ``make test`` runs two test processes and both need the same shared histories (they used to make
    one each: the same real runs twice, ~10 s of CPU for the browser suite's, ~5 s for AppTest's).
    The first process to ask makes it (under a file lock in the session's shared temporary folder),
    the other waits for it and copies it. Each process gets a copy of its own, with every absolute
    path of the home (run folders, model folders, cache folder) rewritten to the copy, so a
    process's tests change only its own copy, as before."""
    import fcntl
    import json
    import shutil

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the session's, across processes
    master = str(shared / f"shared-{name}")
    made_json = os.path.join(master, "made.json")
    with open(str(shared / f"shared-{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not os.path.exists(made_json):
                shutil.rmtree(master, ignore_errors=True)  # a build that failed half-way
                os.makedirs(os.path.join(master, "home"))
                made = build(os.path.join(master, "home"))
                with open(made_json + ".part", "w") as f:
                    json.dump(made, f)
                os.replace(made_json + ".part", made_json)
            with open(made_json) as f:
                made = json.load(f)
            src = os.path.join(master, "home")
            home = str(tmp_path_factory.mktemp(f"{name}-copy") / "home")
            shutil.copytree(src, home)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    _rehome(src, home)
    return made, home


def _rehome(src: str, home: str) -> None:
    """The copy ``home`` of the home ``src``: every mention of ``src`` in its store and in its runs'
    text files says ``home`` instead."""
    import sqlite3

    db = sqlite3.connect(os.path.join(home, "runs.sqlite"))
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for col in [r[1] for r in db.execute(f"PRAGMA table_info('{table}')")]:
                db.execute(f'UPDATE "{table}" SET "{col}" = replace("{col}", ?, ?) '
                           f'WHERE typeof("{col}") = \'text\' AND instr("{col}", ?) > 0', (src, home, src))
        db.commit()
        left = [t for t in tables for col in [r[1] for r in db.execute(f"PRAGMA table_info('{t}')")]
                if db.execute(f'SELECT count(*) FROM "{t}" WHERE typeof("{col}") = \'text\' AND instr("{col}", ?) > 0',
                              (src,)).fetchone()[0]]
        assert not left, left
    finally:
        db.close()
    for folder, _, files in os.walk(home):
        for fname in files:
            if fname.endswith((".json", ".jsonl", ".txt", ".csv")):
                path = os.path.join(folder, fname)
                with open(path, "rb") as f:
                    data = f.read()
                if src.encode() in data:
                    with open(path, "wb") as f:
                        f.write(data.replace(src.encode(), home.encode()))


# dense rows hashed to 2^11 columns in memmap: fit takes sparse rows, and a first run then peaks in prepare,
# where it builds the on-disk copy, above what its other phases (and a rerun with the copy cached) need
COPY_BUILD_START = ["--rows", "30000", "--epochs", "1", "--mode", "memmap", "--representation", "dense",
                    "--hashing-bits", "11", "--batch-size", "4096"]


def copy_build_budget(probe_home: str) -> int:
    """A budget between the prepare phase's peak of COPY_BUILD_START's fitted run (sparse rows) and the
    peak of its other phases, measured here by one real run in ``probe_home`` (the floor moves with the
    libraries installed: 126 MiB on one machine, 138 on a fresh install)."""
    import json

    from tests.conftest import cli

    knobs = [k for k in COPY_BUILD_START if k != "dense"]
    knobs[knobs.index("--representation") + 1:knobs.index("--representation") + 1] = ["sparse"]
    s = json.loads(cli("run", *knobs, "--json", home=probe_home, check=0).stdout.strip().splitlines()[-1])
    peaks = {p["name"]: p["peak_rss_mb"] for p in s["phases"]}
    others = max(v for k, v in peaks.items() if k not in ("imports", "prepare"))
    assert peaks["prepare"] > others + 4, peaks  # the copy's build owns the peak, with room for a budget between
    return int((peaks["prepare"] + others) / 2)


def learn_reading(folder, ref):
    """A Learn whose reference folder holds only ``ref`` (a ``reference.Reference``, as a
    benchmark writes it into the package's reference data)."""
    import dataclasses
    import json

    from svmcore.app.learn import Learn
    from svmcore.app.reference import read

    with open(os.path.join(str(folder), f"{ref.name}.json"), "w") as f:
        json.dump(dataclasses.asdict(ref), f)
    learn = Learn.__new__(Learn)
    learn._reference_dir = str(folder)
    learn._reference = read("remedies", str(folder))
    return learn


def assert_nothing_left(home: str) -> None:
    """What every end of a run must leave in ``home``: no run still `running` or `queued`, no
    process of a run, no run's cgroup, no copy of the rows in a run folder (spill, shards, live
    sample, half a model export, its disk reserve) and no partial copy in the cache folder."""
    import json

    from svmcore.spec.status import RunStatus
    from svmcore.store.sqlite import Store

    copies = ("spill", "shards", "eval-sample", "model.tmp", "disk-reserve")

    store = Store(home)
    try:
        for rec in store.list_runs():
            assert rec.status not in (RunStatus.RUNNING, RunStatus.QUEUED), (rec.id, rec.status)
            if not rec.run_dir:
                continue
            assert not _processes_of(rec.run_dir), (rec.id, _processes_of(rec.run_dir))
            try:
                with open(os.path.join(rec.run_dir, "job.json")) as f:
                    cgroup = json.load(f).get("cgroup")
            except FileNotFoundError:
                cgroup = None
            assert not cgroup or not os.path.exists(cgroup), (rec.id, cgroup)
            left = [n for n in copies if os.path.exists(os.path.join(rec.run_dir, n))]
            assert not left, (rec.id, left)
    finally:
        store.close()
    cache = os.path.join(home, "cache")
    partial = [n for n in os.listdir(cache) if n.endswith(".tmp")] if os.path.isdir(cache) else []
    assert not partial, partial


def lean_model(folder, rows: int) -> tuple[str, str]:
    """(home, data): a run in ``folder``/home whose exported model was trained on the lean path
    (seconds) on ``rows`` rows of sparse text, and that file, to score."""
    from svmcore.data.files import make_dataset
    from tests.conftest import cli

    home, data = os.path.join(str(folder), "home"), os.path.join(str(folder), "score.svm")
    make_dataset("sparse-text", rows=rows, features=1 << 12, nnz_per_row=10, seed=3, out=data)
    cli("run", f"--dataset={data}", "--parser=native", "--solver=native", "--mode=stream", "--epochs=1",
        home=home, check=0)
    return home, data


def stream_feed(cfg, train_rows: int, spill=None, shuffle=None, hold_out: bool = True, reader_thread: bool = False,
                index: str | None = None):
    """The run's streamed feed (``feeds.stream.Streamed``) over ``cfg``'s dataset, scanned here:
    ``train_rows`` training rows, values in the run's storage and compute precisions."""
    import numpy as np

    from svmcore.data.feeds.source_rows import SourceRows
    from svmcore.data.feeds.stream import Streamed
    from svmcore.data.rows import COMPUTE_DTYPES, STORE_DTYPES
    from svmcore.data.sources import Source, scan

    source = Source(cfg)
    info = scan(source)
    rows = SourceRows(source, info.features, np.asarray(info.classes), info.rows)
    return Streamed(rows, train_rows, STORE_DTYPES[cfg.precision], COMPUTE_DTYPES[cfg.precision], shuffle, spill,
                    reader_thread, hold_out, index)


def parts_of(X):
    """A scipy CSR matrix's rows as ``rows.Parts`` (int32 columns, int64 row pointers)."""
    import numpy as np

    from svmcore.data.rows import Parts

    return Parts(X.data, X.indices.astype(np.int32), X.indptr.astype(np.int64))


def facts(run_id, status, name="", label="", data="", peak_mb=None, **summary):
    """A ``headlines.RunFacts`` given by hand: its summary's fields as keywords (``peak_mb``: its exact peak)."""
    from svmcore.app.headlines import RunFacts
    from svmcore.spec.result import RunSummary

    return RunFacts(run_id, status, RunSummary(peak_rss_mb=peak_mb, **summary), name, label, data)
