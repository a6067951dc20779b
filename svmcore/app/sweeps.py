"""Sweeps as the dashboard sees them: preview and start a grid (here or on a Dask
cluster), follow it, cancel it, and read its trade-offs."""

from __future__ import annotations

import threading
from collections.abc import MutableMapping

from svmcore.app.folders import PATH_KNOBS, DataFolders
from svmcore.app.parallel import Importance, ParallelInfo, knob_importance, parallel_info
from svmcore.app.noise import repeat_groups
from svmcore.app.runs import cancel_local
from svmcore.engine.queue import RunQueue
from svmcore.spec.errors import ConfigError
from svmcore.spec.knobs import KNOBS, defaults
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store
from svmcore.sweeps.frontier import (
    TradeoffPoint,
    best_under,
    default_budget,
    speed_cost,
    speed_cost_text,
    tradeoff_points,
)
from svmcore.sweeps.grid import GridPoint, expand, parse_grid
from svmcore.sweeps.sweep import Sweep, start_sweep

# the base a sweep starts from: small enough that a grid of them runs in minutes
SWEEP_BASE = {"rows": 50_000, "epochs": 2}
# the values a varied knob's field starts with, where its choices or default would say too little
GRID_VALUES = {"batch_size": "256,4096", "precision": "float64,float32", "mode": "memory,stream,memmap",
               "representation": "sparse,dense", "hashing_bits": "0,16", "threads": "1,2",
               "model": "linear-svm,kernel-approx", "gc_every": "0,10", "epochs": "1,3", "alpha": "auto,1e-5,1e-6"}
OBJECTIVES = {"accuracy": "accuracy", "balanced_accuracy": "balanced accuracy", "samples_per_s": "throughput"}


def sweep_base() -> dict:
    """The knobs a new sweep starts from."""
    return dict(defaults(), **SWEEP_BASE)


def grid_values(name: str) -> str:
    """The values a varied knob's field starts with: the suggested ones, else its choices,
    else its default."""
    k = KNOBS[name]
    return GRID_VALUES.get(name) or (",".join(k.choices) if k.choices else str(k.default))


def follow_budget(state: MutableMapping, key: str, suggested: int | None) -> None:
    """The budget field ``state[key]`` starts at ``suggested`` (the median measured peak) and
    follows it as results come in, until the user sets another value (``key + '_auto'``
    remembers the value it was last given)."""
    auto = key + "_auto"
    if suggested is not None and (key not in state or state[key] == state.get(auto)):
        state[key] = state[auto] = suggested


class Sweeps:
    def __init__(self, store: Store, queue: RunQueue, folders: DataFolders):
        self.store = store
        self.queue = queue
        self.folders = folders
        self.active: dict[int, Sweep] = {}  # started by this process
        self._lock = threading.Lock()

    def start(self, base: dict, grid: dict[str, list] | list[str], executor: str = "local",
              scheduler: str | None = None, draws: int | None = None, seed: int = 0) -> int:
        """Queue a grid (``draws``: that many of its combinations drawn at random); ``executor``
        'dask' runs it on the Dask scheduler at ``scheduler`` (none: a local cluster). Raises an
        SvmcoreError naming the problem."""
        base, grid = self._confined_grid(base, grid, draws is None)
        sweep = start_sweep(self.store, base, grid, executor, (scheduler or "").strip() or None, self.queue,
                            draws, seed)
        with self._lock:
            self.active[sweep.sweep_id] = sweep
        return sweep.sweep_id

    def preview(self, base: dict, grid: dict[str, list] | list[str], draws: int | None = None,
                seed: int = 0) -> list[GridPoint]:
        """The grid's combinations over ``base`` (or the ``draws`` a random search takes),
        each with its config or the reason it is skipped, without queueing anything: what the
        Sweep page shows before Start."""
        base, grid = self._confined_grid(base, grid, draws is None)
        return expand(base, grid, self.folders.cache_dir, draws, seed)

    def _confined_grid(self, base: dict, grid: dict[str, list] | list[str], whole: bool = True) -> tuple[dict, dict]:
        if isinstance(grid, list):
            grid = parse_grid(grid, whole)
        if not grid:
            raise ConfigError("grid", "choose at least one knob to vary")
        base = self.folders.confined(base)
        grid = {k: [self.folders.confined({k: v})[k] for v in vals] if k in PATH_KNOBS else vals
                for k, vals in grid.items()}
        return base, grid

    def _runs(self, sweep_id: int | None, host: str | None = None) -> list:
        """The sweep's runs (None: every run), on ``host`` only if given: peaks and speeds compare like with like."""
        return [r for r in self.store.list_runs(sweep_id=sweep_id) if host is None or r.host == host]

    def _varied(self, sweep_id: int) -> list[str]:
        return list(next((s["spec"] for s in self.store.sweeps() if s["id"] == sweep_id), {}).get("grid") or {})

    def points(self, sweep_id: int, host: str | None = None) -> list[TradeoffPoint]:
        """The sweep's finished runs as trade-off points (on ``host``, if given)."""
        return tradeoff_points(self._runs(sweep_id, host))

    def parallel(self, sweep_id: int, host: str | None = None) -> ParallelInfo:
        """The sweep's runs as parallel coordinates: its varied knobs against exact peak,
        samples/s and accuracy (``parallel_info``)."""
        return parallel_info(self._runs(sweep_id, host), self._varied(sweep_id))

    @staticmethod
    def seed_grid(base: dict, seeds: int) -> str | None:
        """'seed=0,1,2': the grid entry that runs every point over ``seeds`` seeds from the
        base's own (None for one seed)."""
        if seeds <= 1:
            return None
        first = int(base.get("seed") or 0)
        return "seed=" + ",".join(str(first + i) for i in range(seeds))

    def importance(self, sweep_id: int, objective: str) -> Importance:
        """Which of the knobs the sweep varied mattered for ``objective`` ('peak', 'speed',
        'accuracy'): ``parallel.knob_importance`` over its completed runs."""
        return knob_importance(self._runs(sweep_id), self._varied(sweep_id), objective)

    def repeats(self, sweep_id: int) -> list[list[int]]:
        """The sweep's runs that repeat one setting over seeds (``noise.repeat_groups``)."""
        return repeat_groups({r.id: r.config for r in self._runs(sweep_id)})

    def hosts(self, sweep_id: int) -> list[str]:
        return sorted({r.host for r in self._runs(sweep_id) if r.host})

    def status(self, sweep_id: int) -> dict:
        runs = self._runs(sweep_id)
        sweep = self.active.get(sweep_id)
        skipped = [{"values": p.values, "reason": p.error} for p in sweep.points if p.error] if sweep else []
        done = sum(r.status.is_finished() for r in runs)
        return {"sweep_id": sweep_id, "total": len(runs), "done": done,
                "running": [r.id for r in runs if r.status == RunStatus.RUNNING],
                "statuses": {r.id: r.status.value for r in runs}, "skipped": skipped,
                "names": {r.id: r.shown_name for r in runs if r.name},
                "error": sweep.error if sweep else None}

    def cancel(self, sweep_id: int) -> None:
        sweep = self.active.get(sweep_id)
        if sweep:
            sweep.cancel()
            return
        for r in self._runs(sweep_id):  # a sweep started before a restart
            if not r.status.is_finished():
                cancel_local(self.queue, r.id)

    def list(self) -> list[dict]:
        """Every sweep, newest first: its id, ``spec`` and ``damage`` (``store.sweeps``)."""
        return self.store.sweeps()

    @staticmethod
    def title(sweep: dict) -> str:
        """'sweep 3 · batch_size=[256, 2048]', and how many were drawn for a random search; a sweep
        whose spec is damaged says so."""
        if sweep.get("damage"):
            return f"sweep {sweep['id']} · damaged: its grid cannot be read"
        spec = sweep["spec"]
        drawn = f" · {spec['search']['random']} drawn at random" if (spec.get("search") or {}).get("random") else ""
        return f"sweep {sweep['id']} · " + ", ".join(f"{k}={v}" for k, v in (spec.get("grid") or {}).items()) + drawn

    def best_under(self, budget_mb: float, objective: str = "accuracy", sweep_id: int | None = None,
                   host: str | None = None) -> TradeoffPoint | None:
        return best_under(tradeoff_points(self._runs(sweep_id or None, host)), budget_mb, objective)

    def default_budget(self, sweep_id: int, host: str | None = None) -> int | None:
        """The budget the page starts from: the median exact peak of the sweep's completed
        runs (about half of them fit), None before any has completed."""
        return default_budget(self.points(sweep_id, host))

    def speed_cost(self, best: TradeoffPoint, budget_mb: float, sweep_id: int, host: str | None = None) -> str:
        """One sentence on what the best run under the budget costs in speed."""
        return speed_cost_text(best, speed_cost(best, self.points(sweep_id, host), budget_mb))

    # what Runs asks of the sweeps: runs that a Dask cluster runs for this process
    def is_remote(self, sweep_id: int | None) -> bool:
        sweep = self.active.get(sweep_id) if sweep_id is not None else None
        return sweep is not None and sweep.executor.kind != "local"

    def cancel_run(self, run_id: int) -> bool:
        return any(s.executor.kind != "local" and s.executor.cancel(run_id) for s in list(self.active.values()))
