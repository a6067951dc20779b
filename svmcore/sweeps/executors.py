"""Where a sweep's runs go.

- ``local`` (the default): the process-wide ``RunQueue``, one run at a time on this
  machine, so runs do not disturb each other's timings.
- ``dask``: one task per run on a dask.distributed cluster (``dask_executor``), one
  run per Dask worker at a time; each run's record comes back to this process, the
  only writer of the store.

An executor (``describe``, ``submit``, ``cancel``, ``cancel_all``, ``close``) hands out one
handle per run with the surface a ``Sweep`` uses: ``run_id``, ``status``, ``summary``,
``wait(timeout)`` and ``is_finished()``.
"""

from __future__ import annotations

import os

from svmcore.engine.queue import RunQueue
from svmcore.engine.admission import Admitted
from svmcore.predict.calibration import load_calibration
from svmcore.predict.launch import forecast_of
from svmcore.spec.config import shown
from svmcore.spec.errors import ConfigError
from svmcore.store.sqlite import Store
from svmcore.sweeps.dask_executor import DaskExecutor  # dask itself is imported only when it runs

EXECUTORS = ("local", "dask")


class LocalExecutor:
    """The run queue of this process, as a sweep executor."""

    kind = "local"

    def __init__(self, queue: RunQueue):
        self.queue = queue
        self.runs = []

    def describe(self) -> dict:
        return {"executor": self.kind}

    def submit(self, launch: Admitted, sweep_id: int | None = None, label: str | None = None,
               extra_env: dict | None = None):
        """Queue the launch with its forecast, made from the scans its admission read."""
        launch = forecast_of(launch, load_calibration(self.queue.store.home))
        run = self.queue.submit(launch, sweep_id=sweep_id, extra_env=extra_env, label=label)
        self.runs.append(run)
        return run

    def cancel(self, run_id: int) -> bool:
        return any(r.run_id == run_id for r in self.runs) and self.queue.cancel(run_id)

    def cancel_all(self) -> None:
        for r in self.runs:
            if not r.is_finished():
                self.queue.cancel(r.run_id)

    def close(self) -> None:
        pass  # the queue is shared with single launches; it outlives any sweep


def make_executor(kind: str, store: Store, queue: RunQueue | None = None, scheduler: str | None = None,
                  threads_per_run: int = 1) -> LocalExecutor | DaskExecutor:
    """An executor of ``kind``; ``scheduler`` is a Dask scheduler address (none: a
    LocalCluster on this machine with as many worker processes as runs of
    ``threads_per_run`` threads fit its cores). Raises an SvmcoreError naming the
    problem (an unknown kind, an unreachable scheduler)."""
    if kind not in EXECUTORS:
        raise ConfigError("executor", f"unknown executor {shown(kind)}; choose one of {', '.join(EXECUTORS)}")
    if kind == "local":
        if scheduler:
            raise ConfigError("scheduler", "a scheduler address is only used with the dask executor")
        return LocalExecutor(queue or RunQueue(store))
    n_workers = max(1, (os.cpu_count() or 1) // max(1, threads_per_run))
    return DaskExecutor(store, scheduler or None, n_workers=n_workers)
