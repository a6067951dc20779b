"""The data folder's disk full or read-only: a clear message, no corrupt store."""

import os
import subprocess

import pytest

from svmcore.app.lab import Lab
from svmcore.spec.config import validate
from svmcore.spec.errors import SvmcoreError
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store, StoreError
from tests.conftest import cli
from tests.helpers import SMALL


def _mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("needs root to mount a small tmpfs: " + r.stderr.decode().strip())


def _disk(tmp_path, size):
    mnt = tmp_path / "disk"
    _mount_tmpfs(mnt, size)
    yield str(mnt)
    subprocess.run(["umount", "-l", str(mnt)])


@pytest.fixture
def small_disk(tmp_path):
    yield from _disk(tmp_path, "3m")


def _fill(path):
    # unbuffered: a buffered file's close would flush what the full disk refused, and raise there
    with open(os.path.join(path, "ballast"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass


def test_disk_full_gives_a_clear_error_and_keeps_the_store(small_disk):
    home = os.path.join(small_disk, "home")
    lab = Lab(home)
    rid = lab.runs.launch(dict(SMALL, epochs=1, rows=5_000))
    from svmcore.engine.registry import get_active
    run = get_active(home, rid)
    if run is not None:
        run.wait(120)
    assert lab.store.get_run(rid).status == RunStatus.COMPLETED
    _fill(small_disk)
    with pytest.raises(SvmcoreError) as err:
        for _ in range(50):  # the WAL may absorb a few writes before the disk refuses
            lab.runs.launch(dict(SMALL, epochs=1, rows=5_000))
    assert "disk" in str(err.value) or "space" in str(err.value)
    os.remove(os.path.join(small_disk, "ballast"))
    for r in lab.store.list_runs():  # let whatever did start finish before checking
        if r.status in (RunStatus.RUNNING, RunStatus.QUEUED):
            active = get_active(home, r.id)
            if active:
                active.wait(120)
    assert not lab.store.integrity_problems()
    assert lab.store.get_run(rid).status == RunStatus.COMPLETED


def test_read_only_data_folder_is_one_clear_line(small_disk, tmp_path):
    home = os.path.join(small_disk, "home")
    writable = Store(home)
    writable.create_run(validate(SMALL).to_dict())
    writable.close()
    subprocess.run(["mount", "-o", "remount,ro", small_disk], check=True)
    try:
        with pytest.raises(StoreError):
            Store(home).create_run(validate(SMALL).to_dict())
        proc = cli("run", "--rows=2000", home=home)
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        listed = cli("runs", "list", "--json", home=home)
        assert listed.returncode == 0, listed.stderr  # the history stays readable
        assert len(__import__("json").loads(listed.stdout)) == 1
    finally:
        subprocess.run(["mount", "-o", "remount,rw", small_disk], check=True)
    assert not Store(home).integrity_problems()


def test_a_spill_that_fills_the_disk_is_dropped_and_the_batches_still_flow(small_disk):
    import numpy as np
    import scipy.sparse as sp

    from svmcore.data.spill import Spill
    from tests.helpers import parts_of

    X = sp.random(20_000, 1000, density=0.02, format="csr", random_state=0)  # ~4.8 MB spilled
    y = np.arange(20_000) % 2
    spill = Spill(os.path.join(small_disk, "spill"), np.float64)
    seen = sum(b[0].n_rows for b in spill.write_through((parts_of(X[s:s + 1000]), y[s:s + 1000])
                                                        for s in range(0, 20_000, 1000)))
    assert seen == 20_000
    assert not spill.complete and "could not write the spill" in spill.failed
    assert not os.path.exists(os.path.join(small_disk, "spill"))


def test_the_shuffle_buffer_drops_a_spill_that_fills_the_disk_and_trains_every_row(small_disk, tmp_path):
    """A shuffled stream spills each batch as it is trained: a full disk drops the spill
    mid-pass and every row still trains."""
    import numpy as np

    from svmcore.data.files import make_dataset
    from svmcore.data.shuffle_order import Shuffle
    from svmcore.data.spill import Spill
    from tests.helpers import stream_feed

    path = str(tmp_path / "d.svm")
    make_dataset("sparse-text", rows=20_000, features=3000, nnz_per_row=20, seed=5, out=path)  # ~4.8 MB spilled
    cfg = validate({"dataset": path, "mode": "stream", "shuffle_buffer": 2048, "parser": "native"})
    spill = Spill(os.path.join(small_disk, "spill"), np.float64)
    stream = stream_feed(cfg, 20_000, spill, Shuffle(cfg.seed, 2048), hold_out=False)
    codes = np.concatenate([b.codes for b in stream.batches(256, 0)])
    assert codes.shape[0] == 20_000
    assert not spill.complete and "could not write the spill" in spill.failed
    assert not os.path.exists(os.path.join(small_disk, "spill"))
    again = np.concatenate([b.codes for b in stream.batches(256, 1)])  # later passes parse the text again
    assert again.shape[0] == 20_000 and sorted(again.tolist()) == sorted(codes.tolist())


def test_a_live_sample_the_disk_cannot_take_stays_in_memory(small_disk, caplog):
    """A run writes its live-evaluation sample to the run's folder; on a full disk it
    keeps the sample in memory (and says so in the log) instead of failing the run."""
    import numpy as np
    import scipy.sparse as sp

    from svmcore.data.feeds.held_out import sample_on_disk
    from tests.helpers import parts_of

    _fill(small_disk)
    X = sp.random(2000, 400, density=0.05, random_state=1, format="csr")
    parts = parts_of(X)
    with caplog.at_level("WARNING"):
        got = sample_on_disk(os.path.join(small_disk, "eval-sample"), parts, np.zeros(2000, np.int64))
    assert got is parts
    assert "kept the live-evaluation sample in memory" in caplog.text
    assert not os.path.exists(os.path.join(small_disk, "eval-sample"))


def test_a_damaged_store_on_a_read_only_disk_is_one_clear_line_and_left_in_place(small_disk):
    home = os.path.join(small_disk, "home")
    os.makedirs(home)
    junk = b"this is not sqlite" * 300
    with open(os.path.join(home, "runs.sqlite"), "wb") as f:
        f.write(junk)
    subprocess.run(["mount", "-o", "remount,ro", small_disk], check=True)
    try:
        proc = cli("runs", "list", home=home)
        assert proc.returncode == 2
        err = proc.stderr.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err
        assert "damaged" in err and "could not be moved aside" in err
    finally:
        subprocess.run(["mount", "-o", "remount,rw", small_disk], check=True)
    assert sorted(os.listdir(home)) == ["runs.sqlite"]
    with open(os.path.join(home, "runs.sqlite"), "rb") as f:
        assert f.read() == junk


def test_shards_that_fill_the_disk_say_disk_full_with_the_folder_and_the_space_and_are_removed(small_disk):
    import numpy as np
    import scipy.sparse as sp

    from svmcore.spec.errors import DiskFull
    from svmcore.worker.parallel import write_shards
    from tests.helpers import parts_of

    X = sp.random(20_000, 1000, density=0.02, format="csr", random_state=0)  # ~4.8 MB in shards
    y = np.arange(20_000) % 2
    folder = os.path.join(small_disk, "runs", "1", "shards")
    need = X.nnz * 12 + 20_000 * 8
    with pytest.raises(DiskFull) as err:
        write_shards(((parts_of(X[s:s + 1000]), y[s:s + 1000]) for s in range(0, 20_000, 1000)), 2, folder,
                     np.float64, need_bytes=need)
    message = str(err.value)
    assert message.startswith("disk full: ") and folder in message, message
    assert f"need about {need / 2**20:,.1f} MiB" in message, message
    assert "requested and" not in message
    assert not os.path.exists(folder)


@pytest.fixture
def disk_8m(tmp_path):
    yield from _disk(tmp_path, "8m")


def test_a_data_parallel_run_on_a_full_disk_is_one_line_and_keeps_no_shards(disk_8m):
    # 8 MiB: the held-out rows (~4.8 MB) and the run's events fit, the shards (~19 MB) do not. On 3 MiB
    # the held-out rows and the events of a slow (loaded) machine's run could fill it before any shard.
    home = os.path.join(disk_8m, "home")
    proc = cli("run", "--rows=100000", "--features=5000", "--nnz-per-row=20", "--workers=2", "--mode=stream",
               home=home)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("svmcore: error: disk full: "), proc.stderr
    assert os.path.join(home, "runs", "1", "shards") in err[0]
    assert not os.path.exists(os.path.join(home, "runs", "1", "shards"))


# ------------------------------------------------------------------ copies of the data, and a disk that fills mid-run

def _fill_up(path):
    """Fill the disk to its last byte (a 64 KiB write refused can leave most of a block free)."""
    with open(os.path.join(path, "ballast"), "ab", buffering=0) as f:
        for block in (65536, 4096, 512, 1):
            try:
                while True:
                    f.write(b"\0" * block)
            except OSError:
                pass


@pytest.mark.parametrize("mode,what", [("memmap", "memmap mode's binary copy of the rows needs up to"),
                                       ("stream", "stream mode's text copy of the rows needs about")])
def test_a_copy_that_will_not_fit_is_refused_before_it_starts(small_disk, mode, what):
    import re

    from tests.helpers import assert_nothing_left

    home = os.path.join(small_disk, "home")
    proc = cli("run", "--rows=100000", f"--mode={mode}", "--epochs=1", home=home)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1, (proc.returncode, proc.stderr)
    m = re.fullmatch(rf"svmcore: error: not enough disk space: {what} ([\d.,]+) MiB in (\S+), and ([\d.,]+) MiB "
                     r"are free; free some space or put the data folder on a larger disk", err[0])
    assert m, err[0]
    need, folder, free = float(m[1].replace(",", "")), m[2], float(m[3].replace(",", ""))
    assert folder == os.path.join(home, "cache") and need > 40 > 3 > free, err[0]
    assert os.listdir(folder) == []  # nothing was written
    rec = Store(home).get_run(1)
    assert rec.status == RunStatus.FAILED and rec.summary.error.message == err[0][len("svmcore: error: "):]
    assert_nothing_left(home)


@pytest.mark.parametrize("copy", ["binary", "text"])
def test_a_copy_the_disk_fills_up_during_is_one_line_naming_the_folder_and_is_removed(small_disk, copy):
    """Without a size to check first (or with the disk filled by another program meanwhile),
    the copy stops at the full disk: one DiskFull line, never numpy's "N requested and M written"."""
    from svmcore.data import copies
    from svmcore.data.sources import Source

    cache = os.path.join(small_disk, "cache")
    os.makedirs(cache)
    cfg = validate({"rows": 100_000, "mode": "memmap" if copy == "binary" else "stream"})
    with pytest.raises(SvmcoreError) as err:  # one clear line, not an OSError
        if copy == "binary":
            copies.binary_copy(Source(cfg), cache, [-1.0, 1.0], cfg.features, "float64", "csr", cfg.rows)
        else:
            copies.write_svmlight(Source(cfg), os.path.join(cache, "text.svm"), what="the text copy")
    message = str(err.value)
    what = "memmap mode's binary copy of the rows" if copy == "binary" else "the text copy"
    assert message.startswith(f"disk full: {what} needs more space in {cache}; "), message
    assert "MiB were written before the disk filled up" in message and "requested and" not in message, message
    assert message.endswith("the partial copy was removed"), message
    assert os.listdir(cache) == []


@pytest.mark.parametrize("command", ["run", "fit"])
def test_a_disk_that_fills_up_mid_run_is_one_outcome_everywhere(small_disk, command):
    """The run's outcome, what the command says of it and what the store keeps are one: failed,
    disk full, naming the folder (it was: `failed` and exit 1 on the CLI, `lost` in the store; fit
    said "run 6: running, exact peak 0.0 MiB")."""
    import json
    import sys
    import time

    from tests.conftest import ROOT
    from tests.helpers import assert_nothing_left

    home = os.path.join(small_disk, "home")
    # monitor light: with full monitoring the live sample waits on disk and is deleted when training ends,
    # which gives the filled disk back a MiB for the run's last writes
    args = [command, "--rows=5000", "--epochs=1", "--monitor=light"] + (["--budget=400"] if command == "fit" else [])
    env = dict(os.environ, PYTHONPATH=ROOT, SVMCORE_FAULT="sleep:2@train")
    proc = subprocess.Popen([sys.executable, "-m", "svmcore", "--home", home, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    events = os.path.join(home, "runs", "1", "events.jsonl")
    deadline = time.monotonic() + 120
    while not (os.path.exists(events) and '"train"' in open(events).read()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    _fill_up(small_disk)
    out, err = proc.communicate(timeout=300)
    os.remove(os.path.join(small_disk, "ballast"))
    said = f"disk full: the worker could not write its files in {os.path.join(home, 'runs', '1')}; "
    assert proc.returncode == 2, (proc.returncode, out, err)
    assert "Traceback" not in err, err
    if command == "run":
        assert err.strip().splitlines() == [next(li for li in err.splitlines() if said in li)], err
        assert out.startswith("run 1: failed"), out
    else:
        assert "run 1: failed, exact peak" in err and "running" not in err, err
        assert out.startswith("DOES NOT FIT: ") and said in out, out
    listed = json.loads(cli("runs", "list", "--json", home=home, check=0).stdout)  # recovers first
    assert [(r["id"], r["status"]) for r in listed] == [(1, "failed")], listed
    error = Store(home).get_run(1).summary.error
    assert error.type == "DiskFull" and error.message.startswith(said), error
    assert_nothing_left(home)
