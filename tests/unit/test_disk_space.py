"""svmcore.data.disk: temporary names that say which process writes them, and the removal
of those a stopped process left."""

import os
import subprocess
import sys
import time

from svmcore.data import disk


def _a_dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temporaries_of_gone_processes_are_removed_and_a_live_writer_s_kept(tmp_path):
    dead = _a_dead_pid()
    (tmp_path / f"bin-abc-float64-csr-h2.{dead}-0a1b2c3d.tmp").mkdir()
    (tmp_path / f"bin-abc-float64-csr-h2.{dead}-0a1b2c3d.tmp" / "train_y.i32").write_bytes(b"\0" * 64)
    (tmp_path / f"text-abc.svm.{dead}-99aa00ff.tmp").write_bytes(b"1 1:1\n")
    live = os.path.basename(disk.temporary(str(tmp_path / "text-def.svm")))
    (tmp_path / live).write_bytes(b"")
    kept = ["bin-xyz-float64-csr-h2", "scan-abc.json", "other.tmp"]  # finished copies; a name not ours
    for name in kept:
        (tmp_path / name).write_bytes(b"")
    removed = disk.remove_orphaned_temporaries(str(tmp_path))
    assert sorted(removed) == sorted([f"bin-abc-float64-csr-h2.{dead}-0a1b2c3d.tmp", f"text-abc.svm.{dead}-99aa00ff.tmp"])
    assert sorted(os.listdir(tmp_path)) == sorted(kept + [live])


def test_a_zombie_s_temporaries_are_removed(tmp_path):
    """A killed worker whose parent died too may stay a zombie (pid 1 here does not reap):
    it writes nothing any more."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while _state(proc.pid) != "Z":  # ended, not yet waited for
            assert time.monotonic() < deadline
            time.sleep(0.01)
        name = f"heldout-abc-h2.{proc.pid}-00000000.tmp"
        (tmp_path / name).mkdir()
        assert disk.remove_orphaned_temporaries(str(tmp_path)) == [name]
    finally:
        proc.wait()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_a_missing_folder_has_no_temporaries(tmp_path):
    assert disk.remove_orphaned_temporaries(str(tmp_path / "nothing")) == []
