"""Issue 18's "other holes", each through the real CLI (`python -m svmcore`): what a
new user or hostile input found, and what must hold now."""

from __future__ import annotations

import json
import os

import pytest

from svmcore.engine import limits
from svmcore.spec.outcomes import rss_over_cap_note
from svmcore.spec.status import RunStatus
from tests.conftest import cli, two_at_a_time
from tests.faults.test_cli_errors import one_line_error
from tests.helpers import _run


def test_stream_runs_complete_over_the_spill(tmp_path):
    """Two runs over a stream spill, two at a time (independent runs, each in a home of its own).

    float16: `run --rows 3000 --precision float16 --mode stream` ended failed: scipy's
    csr_row_index cannot index float16 rows (a shuffled pass over the spill).

    kernel-approx: found while checking float16 in every mode: kernel-approx in stream mode
    ended failed ('the spill file ... is shorter than written'): the rows its transform is
    fitted on were read through the first pass's spill writer, which then counted them twice."""
    runs = {"float16": ("--precision", "float16"), "kernel-approx": ("--model", "kernel-approx")}
    procs = two_at_a_time(lambda name, knobs: cli("run", "--rows", "3000", "--epochs", "2", "--mode", "stream",
                                                  *knobs, "--json", home=str(tmp_path / name)), runs.items())
    float16, kernel = procs
    assert float16.returncode == 0, ("float16", float16.returncode, float16.stderr[-2000:])
    summary = json.loads(float16.stdout)
    assert summary["status"] == "completed" and summary["accuracy"] is not None, ("float16", summary)
    assert kernel.returncode == 0, ("kernel-approx", kernel.returncode, kernel.stderr[-2000:])
    summary = json.loads(kernel.stdout)
    assert summary["status"] == "completed" and summary["spill"]["read_back"], ("kernel-approx", summary)


EIGHT = "1,2,3,4,5,6,7,8"
# 12 knobs of 8 values: 8^12 = 68,719,476,736 combinations
HUGE_GRID = [f"{k}={EIGHT}" for k in ("seed", "epochs", "batch_size", "nnz_per_row", "shuffle_buffer", "gc_every",
                                      "c", "ftrl_alpha", "ftrl_beta", "cache_size_mb", "l1", "l2")]


def test_a_huge_sweep_grid_is_counted_and_refused_before_it_is_built(home):
    """The grid was built with itertools.product before the 200-run check: 12 knobs of
    8 values reached 9.8 GB in 60 s. Under a 2 GiB address-space limit the old code ends
    with a MemoryError; now it is one line, exit 2, before anything is built."""
    args = [a for item in HUGE_GRID for a in ("--grid", item)]
    proc = cli("sweep", "--rows", "1000", *args, home=home, env={"SVMCORE_FAULT": ""}, timeout=120,
               prefix=["prlimit", f"--as={2 << 30}", "--"])
    one_line_error(proc, "68,719,476,736 combinations", "8 × 8", "at most 200 per sweep")


def test_one_knob_with_too_many_values_is_refused_before_parsing_them(home):
    values = ",".join(str(i) for i in range(1, 10_001))
    proc = cli("sweep", "--grid", f"seed={values}", home=home, timeout=120)
    one_line_error(proc, "'seed' has 10,000 values", "at most 200")


@pytest.mark.parametrize("name", ["runs", "cache", "uploads", "datasets", "calibration"])
def test_a_file_where_the_home_needs_a_folder_is_one_line_naming_the_home(home, name):
    """A file named `runs` in the home: every run ended 'failed', exit 1, 'the run could
    not start: Not a directory', with no path."""
    with open(os.path.join(home, name), "w") as f:
        f.write("not a folder")
    run, listed = two_at_a_time(lambda *args: cli(*args, home=home, timeout=120),
                                [("run", "--rows", "1000", "--epochs", "1", "--batch-size", "100"), ("runs", "list")])
    one_line_error(run, f"the data home {home} cannot be used", f"{os.path.join(home, name)} is a file, not a folder")
    one_line_error(listed, f"{os.path.join(home, name)} is a file, not a folder")
    assert not os.path.exists(os.path.join(home, "runs.sqlite")), "nothing is stored for a run that cannot start"


def test_a_folder_where_the_run_store_file_must_be_is_one_line(home):
    os.mkdir(os.path.join(home, "runs.sqlite"))
    proc = cli("runs", "list", home=home, timeout=120)
    one_line_error(proc, f"{os.path.join(home, 'runs.sqlite')} is a folder, not the run store file")


def test_runs_recover_refuses_a_file_that_is_not_a_run_store(home, tmp_path):
    """`runs recover /etc/passwd` printed '0 recovered, 0 unreadable' and exited 0."""
    import sqlite3

    other = str(tmp_path / "other.db")
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t (x)")
    db.execute("INSERT INTO t VALUES (1)")
    db.commit()
    db.close()
    empty = tmp_path / "empty"
    passwd, not_a_store, made = two_at_a_time(lambda args, h: cli(*args, home=h, timeout=120), [
        (("runs", "recover", "/etc/passwd"), home), (("runs", "recover", other), home),
        (("runs", "list"), str(empty))])  # (independent: the last makes an empty store elsewhere)
    one_line_error(passwd, "/etc/passwd is not a run store: it is not an SQLite file")
    one_line_error(not_a_store, f"{other} is an SQLite database but not a run store")
    # a real store with no runs is still recovered from (nothing to copy, exit 0)
    assert made.returncode == 0, made.stderr
    proc = cli("runs", "recover", str(empty / "runs.sqlite"), home=home, timeout=120, check=0)
    assert "0 recovered" in proc.stdout


@pytest.mark.skipif(not limits.cgroup_available(), reason="needs a writable cgroup v1 memory controller")
def test_a_cgroup_peak_is_reported_only_for_a_cgroup_capped_run(store):
    """Every run sits in a cgroup of its own (to find its processes), but only a cgroup
    cap makes that group's peak a figure: it counts page cache (1,177 MiB reported for an
    uncapped lean run whose exact peak was 108 MiB)."""
    def finished(**knobs):
        run = _run(store, rows=5_000, epochs=1, **knobs)
        run.wait(120)
        return run

    free, capped = two_at_a_time(lambda knobs: finished(**knobs), [({},), ({"memory_cap_mb": 2000, "cap_kind": "cgroup"},)])
    assert free.status == RunStatus.COMPLETED, free.summary
    assert free.summary.cap == "none" and free.summary.cgroup_peak_mb is None, free.summary
    assert capped.status == RunStatus.COMPLETED, capped.summary
    assert capped.summary.cap == "cgroup" and capped.summary.cgroup_peak_mb > 0, capped.summary
    note = rss_over_cap_note(500.0, 400.0, "cgroup", 380.0)
    assert "the cgroup itself peaked at 380 MiB, page cache included" in note


def test_runs_list_names_a_file_run_by_the_file(home, tmp_path):
    """`runs list` showed the dataset of runs on .../heldout/a9a and .../heldout/w8a as the
    folder that holds them (the path cut to 14 characters)."""
    folder = tmp_path / "some-long-folder-name" / "heldout"
    folder.mkdir(parents=True)
    for name in ("a9a", "w8a"):
        (folder / name).write_text("1 1:0.5 2:1\n-1 2:0.25\n1 1:1\n-1 3:1\n" * 30)
        # the lean path (native parser and solver, stream mode, a svmlight file): numpy only, ~0.3 s of imports
        cli("run", "--dataset", str(folder / name), "--batch-size", "10", "--epochs", "1", "--solver", "native",
            "--parser", "native", "--mode", "stream", home=home, timeout=120, check=0)
    lines = cli("runs", "list", home=home, check=0).stdout.splitlines()
    datasets = [line.split()[4] for line in lines[1:]]
    assert datasets == ["w8a", "a9a"], lines
