"""A sweep: a grid submitted to an executor; its run handles fill in as runs are queued.
``start_sweep`` is the one entry point of both front ends (dashboard and CLI)."""

from __future__ import annotations

import logging
import os
import threading

from svmcore.engine.queue import RunQueue
from svmcore.spec.errors import ConfigError
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store
from svmcore.sweeps.executors import make_executor
from svmcore.sweeps.grid import GridPoint, expand, grid_label

log = logging.getLogger(__name__)


def start_sweep(store: Store, base: dict, grid: dict[str, list], executor: str = "local",
                scheduler: str | None = None, queue: RunQueue | None = None, draws: int | None = None,
                seed: int = 0) -> "Sweep":
    """Expand the grid (impossible points are kept with their reason; ``draws``: that many
    combinations drawn at random, with ``seed``), check that some combination can run, and
    submit it to the executor ('local': ``queue``, or a new one; 'dask': the scheduler at
    ``scheduler``, or a local cluster). Raises an SvmcoreError naming the problem before
    anything is stored."""
    if not grid:
        raise ConfigError("grid", "choose at least one knob to vary")
    if scheduler and executor != "dask":
        raise ConfigError("scheduler", "a scheduler address is only used with the dask executor")
    points = expand(base, grid, os.path.join(store.home, "cache"), draws, seed)
    if all(p.config is None for p in points):
        raise ConfigError("grid", "no combination is valid: " + "; ".join(p.error for p in points[:3]))
    threads = max(p.config.threads for p in points if p.config)
    ex = make_executor(executor, store, queue, scheduler, threads)
    return Sweep(store, ex, base, grid, points, search=None if draws is None else {"random": draws, "seed": seed})


class Sweep:
    """A grid submitted to an executor (``executors``); ``run_ids`` fill in as runs are queued."""

    def __init__(self, store: Store, executor, base: dict, grid: dict[str, list], points: list[GridPoint],
                 extra_env: dict | None = None, search: dict | None = None):
        self.store = store
        self.executor = executor
        self.base = base
        self.grid = grid
        self.points = points
        self.error: str | None = None  # a sweep whose status could not be recorded says why
        self.runs = []
        try:
            self.sweep_id = store.create_sweep({"base": base, "grid": grid, **executor.describe(),
                                                **({"search": search} if search else {})})
            for p in self.points:
                if p.config is not None:
                    self.runs.append(executor.submit(p.launch, sweep_id=self.sweep_id, extra_env=extra_env,
                                                     label=grid_label(p.values)))
        except BaseException:
            executor.close()  # a Dask cluster started for this sweep must not outlive it
            raise
        self._watch = threading.Thread(target=self._close_when_done, daemon=True)
        self._watch.start()

    @property
    def run_ids(self) -> list[int]:
        return [r.run_id for r in self.runs]

    def progress(self) -> tuple[int, int]:
        return sum(r.is_finished() for r in self.runs), len(self.runs)

    def cancel(self) -> None:
        self.executor.cancel_all()

    def wait(self, timeout: float | None = None) -> bool:
        for r in self.runs:
            r.wait(timeout)
        return all(r.is_finished() for r in self.runs)

    def close(self) -> None:
        """Let go of the executor (a Dask client or cluster); unfinished runs are cancelled."""
        self.executor.close()

    def _close_when_done(self) -> None:
        for r in self.runs:
            r.wait()
        cancelled = any(r.status == RunStatus.CANCELLED for r in self.runs)
        try:
            self.store.set_sweep_status(self.sweep_id, "cancelled" if cancelled else "finished")
        except Exception as e:  # the runs are recorded; only the sweep's own status is not
            log.exception("sweep %s: its status could not be recorded", self.sweep_id)
            self.error = f"the sweep's status could not be recorded: {e}"
        finally:
            self.executor.close()
