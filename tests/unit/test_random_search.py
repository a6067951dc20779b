"""svmcore.sweeps.grid: a random search beside the grid (as Optuna's RandomSampler over
categorical values), compared with ==. (The CLI's --random on real runs:
tests/integration/test_random_search_cli.py.)"""

from __future__ import annotations

import pytest

from svmcore.spec.errors import ConfigError
from svmcore.sweeps.grid import MAX_GRID_RUNS, expand, parse_grid, random_combos

GRID = {"batch_size": [16, 64, 256, 1024], "shuffle": [True, False], "seed": [0, 1]}


def test_draws_are_different_combinations_of_the_grids_values_the_same_for_a_seed():
    drawn = random_combos(GRID, 5, seed=3)
    assert len(drawn) == 5 and len(set(drawn)) == 5
    assert all(b in GRID["batch_size"] and s in GRID["shuffle"] and d in GRID["seed"] for b, s, d in drawn)
    assert drawn == random_combos(GRID, 5, seed=3) and drawn != random_combos(GRID, 5, seed=4)
    assert sorted(random_combos(GRID, 100)) == sorted((b, s, d) for b in GRID["batch_size"]
                                                      for s in GRID["shuffle"] for d in GRID["seed"])  # all 16


def test_a_grid_too_big_to_run_whole_can_be_searched_at_random():
    """12 knobs of 8 values are 68.7 billion combinations: refused as a grid, drawn from without building it."""
    items = [f"{k}={','.join(str(v) for v in range(2, 10))}" for k in
             ("epochs", "gc_every", "threads", "hashing_bits", "mix_every", "features", "n_components",
              "shuffle_buffer", "cache_size_mb", "workers", "nnz_per_row", "batch_size")]
    with pytest.raises(ConfigError, match="combinations"):
        parse_grid(items)
    grid = parse_grid(items, whole=False)
    drawn = random_combos(grid, 20, seed=1)
    assert len(set(drawn)) == 20 and all(len(c) == 12 for c in drawn)
    with pytest.raises(ConfigError, match=f"draw 1 to {MAX_GRID_RUNS} combinations"):
        random_combos(grid, MAX_GRID_RUNS + 1)
    points = expand({"rows": 1000}, {"batch_size": [16, 64, 256]}, draws=2, seed=0)
    assert [p.values for p in points] == [{"batch_size": b} for (b,) in random_combos({"batch_size": [16, 64, 256]}, 2)]
