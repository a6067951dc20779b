"""svmcore.data.disk: temporary names that say which process writes them, the removal of
those a stopped process left, and a full disk in one line."""

import errno
import os
import subprocess
import sys
import time

import pytest

from svmcore.data import disk
from svmcore.spec.errors import DiskFull


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


def test_room_is_checked_against_the_free_space_of_the_nearest_existing_folder(tmp_path):
    folder = str(tmp_path / "not" / "yet")
    disk.check_room("a copy", folder, 1024)
    free = disk.free_bytes(folder)
    with pytest.raises(DiskFull) as err:
        disk.check_room("memmap mode's binary copy of the rows", folder, free + 2**30, upper_bound=True)
    assert str(err.value) == (f"not enough disk space: memmap mode's binary copy of the rows needs up to "
                              f"{(free + 2**30) / 2**20:,.1f} MiB in {folder}, and {free / 2**20:,.1f} MiB are free; "
                              "free some space or put the data folder on a larger disk")
    disk.check_room("a copy", folder, free + 2**30, written_bytes=2**30)  # what is on disk already counts


@pytest.mark.parametrize("error,full", [
    (OSError(errno.ENOSPC, "No space left on device"), True),
    (OSError(errno.EDQUOT, "Disk quota exceeded"), True),
    (OSError("144695 requested and 15823 written"), True),  # numpy's short write: no errno
    (OSError(errno.EACCES, "Permission denied"), False),
    (MemoryError(), False),
])
def test_what_counts_as_a_full_disk(error, full):
    assert disk.is_disk_full(error) is full
