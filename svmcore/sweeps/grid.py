"""Grids of settings, run through the queue, and what to make of the results:
the memory/accuracy Pareto frontier and the best setting under a memory budget."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any

from svmcore.engine.admission import Admitted, admit
from svmcore.spec.config import RunConfig, coerce, shown
from svmcore.spec.errors import ConfigError, SvmcoreError
from svmcore.spec.knobs import KNOBS

MAX_GRID_RUNS = 200


def parse_grid(items: list[str], whole: bool = True) -> dict[str, list]:
    """['batch_size=256,2048', 'precision=float32,float64'] -> {knob: [values]}, each
    value checked against the knob registry; ``whole``: every combination will run, so
    their number is checked too (a random search draws some of them: it is not)."""
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
        texts = [v.strip() for v in values.split(",") if v.strip()]
        if len(texts) > MAX_GRID_RUNS:
            raise ConfigError("grid", f"{shown(name)} has {len(texts):,} values; at most {MAX_GRID_RUNS} runs per sweep")
        grid[name] = list(dict.fromkeys(coerce(name, v) for v in texts))  # keep order, drop repeats
    if whole:
        check_grid_size(grid)
    return grid


def check_grid_size(grid: dict[str, list]) -> int:
    """The number of combinations, counted (the product of the lengths) before any is
    built: 12 knobs of 8 values are 68.7 billion, which itertools.product would try to
    hold. Raises ConfigError above MAX_GRID_RUNS."""
    count = math.prod(len(v) for v in grid.values())
    if count > MAX_GRID_RUNS:
        lengths = " × ".join(str(len(v)) for v in grid.values())
        raise ConfigError("grid", f"{count:,} combinations ({lengths} values); at most {MAX_GRID_RUNS} per sweep")
    return count


@dataclass
class GridPoint:
    values: dict[str, Any]
    launch: Admitted | None  # admitted (with the scans of its data when the data was checked), or refused:
    error: str | None = None

    @property
    def config(self) -> RunConfig | None:
        return self.launch.config if self.launch is not None else None


def random_combos(grid: dict[str, list], draws: int, seed: int = 0) -> list[tuple]:
    """``draws`` different combinations of the grid's values, each equally likely (a
    random search, as Optuna's RandomSampler over categorical values), in the order drawn.
    Drawn by index into the product, which is never built: a grid too big to run whole
    can be searched at random."""
    if not 1 <= draws <= MAX_GRID_RUNS:
        raise ConfigError("random", f"draw 1 to {MAX_GRID_RUNS} combinations ({draws:,} asked)")
    sizes = [len(v) for v in grid.values()]
    picked = random.Random(seed).sample(range(math.prod(sizes)), min(draws, math.prod(sizes)))
    combos = []
    for index in picked:
        combo = []
        for values, size in zip(reversed(list(grid.values())), reversed(sizes)):
            index, at = divmod(index, size)
            combo.append(values[at])
        combos.append(tuple(reversed(combo)))
    return combos


def expand(base: dict, grid: dict[str, list], cache_dir: str | None = None, draws: int | None = None,
           seed: int = 0) -> list[GridPoint]:
    """Every combination of the grid over the base knobs (or ``draws`` of them at random,
    ``random_combos``). Impossible combinations are kept as points with the reason, so the
    user sees what was skipped and why. With ``cache_dir`` (launching), the data's rules are
    checked too (``admission.check_data``: e.g. kernel-svm on more rows than its limit, a batch larger
    than the data)."""
    names = list(grid)
    if draws is not None:
        combos = random_combos(grid, draws, seed) if names else [()]
    else:
        check_grid_size(grid)
        combos = list(itertools.product(*(grid[n] for n in names))) if names else [()]
    points = []
    for combo in combos:
        values = dict(zip(names, combo))
        try:
            points.append(GridPoint(values, admit({**base, **values}, cache_dir)))
        except SvmcoreError as e:
            points.append(GridPoint(values, None, str(e)))
    return points


def grid_label(values: dict) -> str:
    return ", ".join(f"{k}={'auto' if v is None and k in KNOBS and KNOBS[k].auto else v}" for k, v in values.items())
