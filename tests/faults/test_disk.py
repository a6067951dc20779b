"""The data folder's disk full or read-only: a clear message, no corrupt store."""

import os
import subprocess

import pytest

from svmcore.app.lab import Lab
from svmcore.spec.config import validate
from svmcore.spec.errors import SvmcoreError
from svmcore.store.sqlite import RunStatus, Store, StoreError
from tests.conftest import cli
from tests.helpers import SMALL


def _mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("needs root to mount a small tmpfs: " + r.stderr.decode().strip())


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    _mount_tmpfs(mnt, "3m")
    yield str(mnt)
    subprocess.run(["umount", "-l", str(mnt)])


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
    assert lab.store.integrity_ok()
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
    assert Store(home).integrity_ok()


def test_a_spill_that_fills_the_disk_is_dropped_and_the_batches_still_flow(small_disk):
    import numpy as np
    import scipy.sparse as sp

    from svmcore.data.spill import Spill

    X = sp.random(20_000, 1000, density=0.02, format="csr", random_state=0)  # ~4.8 MB spilled
    y = np.arange(20_000) % 2
    spill = Spill(os.path.join(small_disk, "spill"), np.float64, [0, 1], 1000)
    seen = sum(b[0].shape[0] for b in spill.write_through((X[s:s + 1000], y[s:s + 1000])
                                                          for s in range(0, 20_000, 1000)))
    assert seen == 20_000
    assert not spill.complete and "could not write the spill" in spill.failed
    assert not os.path.exists(os.path.join(small_disk, "spill"))


def test_the_lean_shuffle_buffer_drops_a_spill_that_fills_the_disk_and_trains_every_row(small_disk, tmp_path):
    """The lean path spills each shuffled batch as it is trained: a full disk drops the spill
    mid-pass and every row still trains."""
    import numpy as np

    from svmcore.data.files import make_dataset
    from svmcore.data.sources import Source
    from svmcore.data.spill import Spill
    from svmcore.worker import lean

    path = str(tmp_path / "d.svm")
    make_dataset("sparse-text", rows=20_000, features=3000, nnz_per_row=20, seed=5, out=path)  # ~4.8 MB spilled
    cfg = validate({"dataset": path, "mode": "stream", "shuffle_buffer": 2048})
    source = Source(cfg)
    source.pin()
    classes = np.array([-1.0, 1.0])
    spill = Spill(os.path.join(small_disk, "spill"), np.float64, classes, 3000)
    stream = lean.LeanStream(source, 20_000, 3000, cfg, classes, 20_000, False, spill)
    codes = np.concatenate([b.codes for b in stream.batches(256, 0)])
    assert codes.shape[0] == 20_000
    assert not spill.complete and "could not write the spill" in spill.failed
    assert not os.path.exists(os.path.join(small_disk, "spill"))
    again = np.concatenate([b.codes for b in stream.batches(256, 1)])  # later passes parse the text again
    assert again.shape[0] == 20_000 and sorted(again.tolist()) == sorted(codes.tolist())


def test_a_live_sample_the_disk_cannot_take_stays_in_memory(small_disk, caplog):
    """The lean path writes its live-evaluation sample to the run's folder; on a full disk it
    keeps the sample in memory (and says so in the log) instead of failing the run."""
    import numpy as np
    import scipy.sparse as sp

    from svmcore.worker import lean

    _fill(small_disk)
    X = sp.random(2000, 400, density=0.05, random_state=1, format="csr")
    parts = lean.Parts(X.data, X.indices.astype(np.int32), X.indptr.astype(np.int64))
    with caplog.at_level("WARNING"):
        got = lean._sample_on_disk(os.path.join(small_disk, "eval-sample"), parts, np.zeros(2000, np.int64))
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

    from svmcore.worker.parallel import DiskFull, write_shards

    X = sp.random(20_000, 1000, density=0.02, format="csr", random_state=0)  # ~4.8 MB in shards
    y = np.arange(20_000) % 2
    folder = os.path.join(small_disk, "runs", "1", "shards")
    need = X.nnz * 12 + 20_000 * 8
    with pytest.raises(DiskFull) as err:
        write_shards(((X[s:s + 1000], y[s:s + 1000]) for s in range(0, 20_000, 1000)), 2, folder, "float64",
                     [0, 1], 1000, need_bytes=need)
    message = str(err.value)
    assert message.startswith("disk full: ") and folder in message, message
    assert f"need about {need / 2**20:,.1f} MiB" in message, message
    assert "requested and" not in message
    assert not os.path.exists(folder)


def test_a_data_parallel_run_on_a_full_disk_is_one_line_and_keeps_no_shards(small_disk):
    home = os.path.join(small_disk, "home")
    proc = cli("run", "--rows=40000", "--features=5000", "--nnz-per-row=20", "--workers=2", "--mode=stream",
               home=home)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("svmcore: error: disk full: "), proc.stderr
    assert os.path.join(home, "runs", "1", "shards") in err[0]
    assert not os.path.exists(os.path.join(home, "runs", "1", "shards"))
