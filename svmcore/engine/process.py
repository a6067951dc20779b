"""The worker process: spawned by this runner (a child: its exit status is read with
waitpid) or found alive after a restart (not a child: it is identified by pid and start
time, and only its being gone can be seen). Killing it kills its whole tree."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys

import psutil

from svmcore.engine import limits, procfs

log = logging.getLogger(__name__)

# the folder holding the svmcore package: the worker imports it from there
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def child_env(extra: dict[str, str | None] | None = None) -> dict[str, str]:
    """Our environment for a child that imports svmcore: its folder first on PYTHONPATH, then
    ``extra`` (a variable set to None is left out)."""
    path = os.pathsep.join(p for p in (PACKAGE_PARENT, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, **(extra or {})}
    return {k: v for k, v in env.items() if v is not None}


class WorkerProcess:
    def __init__(self, pid: int, created: float | None, child: bool, cgroup: str | None,
                 popen: subprocess.Popen | None = None):
        self.pid = pid
        self.created = created
        self.child = child
        self.cgroup = cgroup
        self.popen = popen

    @classmethod
    def spawn(cls, run_dir: str, job: dict, extra_env: dict[str, str | None]) -> "WorkerProcess":
        """Write the job and start ``python -m svmcore.worker RUN_DIR`` in a session of its
        own, its output to files (a full pipe could block it or break it when we die)."""
        with open(os.path.join(run_dir, "job.json"), "w") as f:
            json.dump(job, f)
        argv = [sys.executable, "-m", "svmcore.worker", run_dir]
        if job.get("cgroup"):
            # join the run's cgroup before Python starts: a page is charged to the group that first
            # touched it, and the interpreter's first 6 MiB (measured) stayed charged to ours when the
            # worker moved itself later (the worker's own move remains, a no-op then)
            argv = ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', job["cgroup"], *argv]
        with open(os.path.join(run_dir, "stdout.txt"), "wb") as out, \
                open(os.path.join(run_dir, "stderr.txt"), "wb") as err:
            popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                                     cwd=run_dir, env=child_env(extra_env))
        return cls(popen.pid, procfs.create_time(popen.pid), True, job.get("cgroup"), popen)

    def poll_exit(self) -> tuple[bool, dict]:
        """(ended, exit info): {"code": N}, {"signal": NAME}, or {"code": None} when the exit
        status cannot be known (not our child)."""
        if self.child:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return True, {"code": None}
            if pid == 0:
                return False, {}
            if self.popen is not None:
                self.popen.returncode = os.waitstatus_to_exitcode(status)
            if os.WIFSIGNALED(status):
                return True, {"signal": signal.Signals(os.WTERMSIG(status)).name}
            return True, {"code": os.WEXITSTATUS(status)}
        return (not procfs.is_same_process(self.pid, self.created)), {"code": None}

    def kill_tree(self) -> None:
        """SIGKILL the worker and every descendant: its cgroup's members, its children, and
        whatever kept its session (double-forked processes included)."""
        pids = set()
        if self.cgroup:
            pids.update(limits.cgroup_pids(self.cgroup))
        if self.child or procfs.is_same_process(self.pid, self.created):
            pids.add(self.pid)
            try:
                pids.update(c.pid for c in psutil.Process(self.pid).children(recursive=True))
            except psutil.Error:
                pass  # gone meanwhile: the session scan below still finds what it left
            pids.update(procfs.session_members(self.pid))
        pids.discard(os.getpid())
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
