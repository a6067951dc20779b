"""Grids of settings, run through the queue, and what to make of the results:
the memory/accuracy Pareto frontier and the best setting under a memory budget."""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any

from .config import RunConfig, _coerce, shown, validate
from .errors import ConfigError
from .knobs import KNOBS
from .store import RunRecord, RunStatus, Store

MAX_GRID_RUNS = 200


def parse_grid(items: list[str]) -> dict[str, list]:
    """['batch_size=256,2048', 'precision=float32,float64'] -> {knob: [values]}, each
    value checked against the knob registry."""
    grid: dict[str, list] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not values.strip():
            raise ConfigError("grid", f"{shown(item)} must look like KNOB=V1,V2 (e.g. batch_size=256,2048)")
        if name not in KNOBS:
            raise ConfigError("grid", f"unknown knob {shown(name)}; known knobs: {', '.join(KNOBS)}")
        if name in grid:
            raise ConfigError("grid", f"knob {shown(name)} is given twice")
        parsed = [_coerce(name, v.strip()) for v in values.split(",") if v.strip()]
        grid[name] = list(dict.fromkeys(parsed))  # keep order, drop repeats
    return grid


@dataclass
class GridPoint:
    values: dict[str, Any]
    config: RunConfig | None
    error: str | None = None


def expand(base: dict, grid: dict[str, list], cache_dir: str | None = None) -> list[GridPoint]:
    """Every combination of the grid over the base knobs. Impossible combinations are
    kept as points with the reason, so the user sees what was skipped and why. With
    ``cache_dir`` (launching), the data's rules are checked too (``preflight``: e.g.
    kernel-svm on more rows than its limit, a batch larger than the data)."""
    from .datasets import preflight
    from .errors import SvmcoreError

    names = list(grid)
    combos = list(itertools.product(*(grid[n] for n in names))) if names else [()]
    if len(combos) > MAX_GRID_RUNS:
        raise ConfigError("grid", f"{len(combos)} combinations; at most {MAX_GRID_RUNS} per sweep")
    points = []
    for combo in combos:
        values = dict(zip(names, combo))
        try:
            cfg = validate({**base, **values})
            if cache_dir is not None:
                preflight(cfg, cache_dir)
            points.append(GridPoint(values, cfg))
        except SvmcoreError as e:
            points.append(GridPoint(values, None, str(e)))
    return points


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
                                                     label=_label(p.values)))
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


def _label(values: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


# ---------------------------------------------------------------- trade-offs

@dataclass(frozen=True)
class TradeoffPoint:
    run_id: int
    peak_mb: float
    accuracy: float | None
    samples_per_s: float | None
    status: str
    label: str
    on_frontier: bool = False
    host: str | None = None
    balanced_accuracy: float | None = None


def tradeoff_points(records: list[RunRecord]) -> list[TradeoffPoint]:
    """Finished runs as points; completed ones not dominated in (lower peak, higher
    accuracy) are on the frontier. Out-of-memory runs are kept (at the peak they
    reached) so the view shows where the cap cut in."""
    pts = []
    for r in records:
        if r.status not in (RunStatus.COMPLETED, RunStatus.OOM) or not r.summary.get("peak_rss_mb"):
            continue
        pts.append(TradeoffPoint(r.id, float(r.summary["peak_rss_mb"]), r.summary.get("accuracy"),
                                 r.summary.get("samples_per_s"), r.status.value, r.label or f"run {r.id}",
                                 host=r.host, balanced_accuracy=r.summary.get("balanced_accuracy")))
    done = [p for p in pts if p.status == "completed" and p.accuracy is not None]
    frontier = {p.run_id for p in pareto_front(done)}
    return [TradeoffPoint(**{**p.__dict__, "on_frontier": p.run_id in frontier}) for p in pts]


def pareto_front(points: list[TradeoffPoint]) -> list[TradeoffPoint]:
    """Points that no other point beats on both peak (lower) and accuracy (higher),
    sorted by peak."""
    front = []
    best_acc = float("-inf")
    for p in sorted(points, key=lambda p: (p.peak_mb, -p.accuracy)):
        if p.accuracy > best_acc:
            front.append(p)
            best_acc = p.accuracy
    return front


OBJECTIVES = ("accuracy", "balanced_accuracy", "samples_per_s")


def best_under(points: list[TradeoffPoint], budget_mb: float, objective: str = "accuracy") -> TradeoffPoint | None:
    """The completed run with the best ``objective`` (accuracy, balanced_accuracy or
    samples_per_s) whose exact peak fits ``budget_mb``; ties go to the smaller peak."""
    if objective not in OBJECTIVES:
        raise ConfigError("objective", f"{objective!r} is not one of: {', '.join(OBJECTIVES)}")
    fits = [p for p in points if p.status == "completed" and p.peak_mb <= budget_mb
            and getattr(p, objective) is not None]
    if not fits:
        return None
    return max(fits, key=lambda p: (getattr(p, objective), -p.peak_mb))


# ---------------------------------------------------------------- CLI

def cmd_sweep(args, home: str) -> int:
    from .cli import knob_values
    from .executors import make_executor
    from .runner import recover

    grid = parse_grid(args.grid)
    if not grid:
        raise ConfigError("grid", "give at least one --grid KNOB=V1,V2")
    base = knob_values(args)
    points = expand(base, grid, os.path.join(home, "cache"))
    if all(p.config is None for p in points):
        raise ConfigError("grid", "no combination is valid: " + "; ".join(p.error for p in points[:3]))
    if args.scheduler and args.executor != "dask":
        raise ConfigError("scheduler", "--scheduler is only used with --executor dask")
    store = Store(home)
    recover(store)
    executor = make_executor(args.executor, store, scheduler=args.scheduler,
                             threads_per_run=max(p.config.threads for p in points if p.config))
    sweep = Sweep(store, executor, base, grid)
    for p in points:
        if p.error:
            print(f"skipped {_label(p.values)}: {p.error}", file=sys.stderr)
    try:
        while not sweep.wait(0.5):
            done, total = sweep.progress()
            if sys.stderr.isatty() and not args.json:
                sys.stderr.write(f"\rsweep {sweep.sweep_id}: {done}/{total} runs finished")
                sys.stderr.flush()
    except KeyboardInterrupt:
        sweep.cancel()
        sweep.wait(10)
    finally:
        sweep.close()
    records = [store.get_run(i) for i in sweep.run_ids]
    pts = tradeoff_points(records)
    result = {"sweep_id": sweep.sweep_id, "grid": grid,
              "executor": executor.describe(),
              "runs": [{"run_id": r.id, "values": r.label, "status": r.status.value, "host": r.host,
                        "peak_rss_mb": r.summary.get("peak_rss_mb"), "accuracy": r.summary.get("accuracy"),
                        "balanced_accuracy": r.summary.get("balanced_accuracy"),
                        "samples_per_s": r.summary.get("samples_per_s")} for r in records],
              "skipped": [{"values": p.values, "reason": p.error} for p in points if p.error],
              "frontier": [p.run_id for p in pts if p.on_frontier]}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"\nsweep {sweep.sweep_id}: {len(records)} runs")
        for r in result["runs"]:
            star = "*" if r["run_id"] in result["frontier"] else " "
            peak = f"{r['peak_rss_mb']:.1f}" if r["peak_rss_mb"] else "-"
            acc = f"{r['accuracy']:.4f}" if r["accuracy"] is not None else "-"
            print(f" {star} run {r['run_id']:>4}  {r['status']:9}  peak {peak:>8} MiB  acc {acc}  on {r['host']}  "
                  f"{r['values']}")
        print(" * on the memory/accuracy frontier")
    return 0 if all(r.status in (RunStatus.COMPLETED, RunStatus.OOM) for r in records) else 1
