"""`svmcore sweep --random N`: a random search beside the grid, with real worker runs on the
lean path (a small svmlight file, about a second a run)."""

from __future__ import annotations

import json
import os
import random

from svmcore.sweeps.grid import random_combos
from tests.conftest import cli


def test_the_cli_runs_a_random_search(tmp_path):
    os.makedirs(tmp_path / "datasets")
    path = tmp_path / "datasets" / "tiny.svm"
    rng = random.Random(5)
    path.write_text("".join(("1" if i % 2 else "-1") + " " + " ".join(
        f"{j}:{rng.random():.3f}" for j in sorted(rng.sample(range(1, 2048), 15))) + "\n" for i in range(1500)))
    out = cli("sweep", "--dataset", str(path), "--mode", "stream", "--parser", "native", "--solver", "native",
              "--epochs", "1", "--grid", "batch_size=16,64,256,1024", "--grid", "seed=0,1", "--random", "3",
              "--random-seed", "2", "--json", home=str(tmp_path))
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(result["runs"]) == 3 and all(r["status"] == "completed" for r in result["runs"])
    labels = [r["values"] for r in result["runs"]]
    assert len(set(labels)) == 3
    want = [f"batch_size={b}, seed={s}" for b, s in random_combos({"batch_size": [16, 64, 256, 1024],
                                                                    "seed": [0, 1]}, 3, seed=2)]
    assert labels == want
