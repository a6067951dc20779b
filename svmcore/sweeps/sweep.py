"""A sweep: a grid submitted to an executor; its run handles fill in as runs are queued."""

from __future__ import annotations

import os
import threading

from svmcore.store.sqlite import RunStatus, Store
from svmcore.sweeps.grid import expand, grid_label


class Sweep:
    """A grid submitted to an executor (``executors``); ``run_ids`` fill in as runs are queued."""

    def __init__(self, store: Store, executor, base: dict, grid: dict[str, list], extra_env: dict | None = None):
        self.store = store
        self.executor = executor
        self.base = base
        self.grid = grid
        self.points = expand(base, grid, os.path.join(store.home, "cache"))
        self.runs = []
        try:
            self.sweep_id = store.create_sweep({"base": base, "grid": grid, **executor.describe()})
            for p in self.points:
                if p.config is not None:
                    self.runs.append(executor.submit(p.config, sweep_id=self.sweep_id, extra_env=extra_env,
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
        except Exception:
            pass
        self.executor.close()
