"""What a run leaves behind and who removes it: its cgroup (named in job.json), its
stream spill, a data-parallel run's shards, the lean path's live-evaluation sample, a
half-written model export, the disk space it holds in reserve, the partial copies of
the data a killed worker left in the cache folder, and on delete its folder. One
function, used by every path a run ends by."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal

from svmcore.data import disk
from svmcore.engine import limits

log = logging.getLogger(__name__)

# a run's folders of copied rows: a stream spill, data-parallel shards, the lean path's live-evaluation
# sample, and a model export a full disk (or a kill) stopped half-way
COPIES = ("spill", "shards", "eval-sample", "model.tmp")
# room held on the run's disk while it runs, given back before its end is recorded: a disk that fills
# up mid-run still takes the outcome (the store's last writes need a few hundred KiB at most)
RESERVE = "disk-reserve"
RESERVE_BYTES = 1 << 20


def hold_reserve(run_dir: str) -> None:
    """Hold RESERVE_BYTES on the run folder's disk (raises OSError if it is not there)."""
    fd = os.open(os.path.join(run_dir, RESERVE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.posix_fallocate(fd, 0, RESERVE_BYTES)
    finally:
        os.close(fd)


def read_job(run_dir: str | None, run_id: int | None = None, missing_ok: bool = False) -> dict:
    """A run's job file as its runner wrote it (``{}`` when it cannot be read, which is logged unless
    ``missing_ok`` and it is not there). A job file written before it recorded ``started_at`` was
    written just before the worker started: its modification time stands in."""
    path = os.path.join(run_dir or "", "job.json")
    try:
        with open(path) as f:
            job = json.load(f)
        if not isinstance(job, dict):
            raise ValueError("not a JSON object")
        job.setdefault("started_at", os.path.getmtime(path))
        return job
    except (OSError, ValueError) as e:
        if not (missing_ok and isinstance(e, FileNotFoundError)):
            log.warning("run %s: its job file %s could not be read (%s); its cap, start, cgroup and cache are not "
                        "known", run_id, path, e)
        return {}


def release_leftovers(run_dir: str | None, home: str | None = None, *, cgroup: str | None = None,
                      delete_folder: bool = False) -> None:
    """Release what an ended run leaves behind: the processes still in its cgroup and the
    cgroup itself (``cgroup``, else the one named in RUN_DIR/job.json), a stream run's
    binary spill and a data-parallel run's shards (copies of the training rows), a
    half-written model export, its disk reserve, and the partial copies in its cache
    folder whose writer is gone. With ``delete_folder`` (the run is being deleted), the
    whole run folder too, but only when it is inside ``home``'s runs folder. The one
    cleanup used by ``Run``'s end, ``recover``, ``Lab.delete`` and the CLI's ``runs
    delete``; what it cannot remove is logged, never raised."""
    job = read_job(run_dir, missing_ok=True) if run_dir else {}
    cgroup = cgroup or job.get("cgroup")
    if cgroup and os.path.isdir(cgroup):
        if limits.is_run_cgroup(cgroup):
            for pid in limits.cgroup_pids(cgroup):  # descendants must not outlive the run
                if pid != os.getpid():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
            limits.remove_cgroup(cgroup)
        else:
            log.warning("left %s alone: it is not a run's cgroup (svmcore/run-*)", cgroup)
    if job.get("cache_dir"):
        disk.remove_orphaned_temporaries(job["cache_dir"])
    if not run_dir:
        return

    def report(_func, path, exc_info):
        log.warning("could not remove %s: %s", path, exc_info[1])

    if delete_folder:
        if home and disk.is_inside(run_dir, os.path.join(home, "runs")):
            if os.path.isdir(run_dir):
                shutil.rmtree(run_dir, onerror=report)
            return
        log.info("kept the run folder %s: it is outside %s", run_dir, os.path.join(home or "", "runs"))
    for copy in COPIES:  # a killed run leaves its copies of the training rows behind
        path = os.path.join(run_dir, copy)
        if os.path.isdir(path):
            shutil.rmtree(path, onerror=report)
    try:
        os.remove(os.path.join(run_dir, RESERVE))
    except FileNotFoundError:
        pass
    except OSError as e:
        log.warning("could not remove %s: %s", os.path.join(run_dir, RESERVE), e)
