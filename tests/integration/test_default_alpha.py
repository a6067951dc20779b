"""The default regularisation is chosen for the data: at default knobs every solver lands
within 0.5 points of the best of a small grid of strengths, on a file whose training rows
are followed by test rows of the same kind (bench/alpha.py measures it at 2*10^5 and 10^6
rows), and every run says which alpha it used and why."""

import json
import os

import pytest

from svmcore.data.files import make_dataset
from svmcore.spec.regularisation import auto_alpha, auto_l2
from tests.conftest import cli, two_at_a_time

TRAIN_ROWS = 10_000
GRID = {"sklearn": ("alpha", (1e-4, 1e-5, 1e-6)), "numba": ("alpha", (1e-4, 1e-5, 1e-6)),
        "native": ("alpha", (1e-4, 1e-5, 1e-6)), "ftrl": ("l2", (1.0, 0.1, 0.01))}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("alpha")
    whole = str(folder / "whole.svm")
    make_dataset("sparse-text", rows=2 * TRAIN_ROWS, features=1 << 16, nnz_per_row=30, seed=4, out=whole)
    with open(whole) as f:
        lines = f.readlines()
    train, test = str(folder / "train.svm"), str(folder / "test.svm")
    with open(train, "w") as f:
        f.writelines(lines[:TRAIN_ROWS])
    with open(test, "w") as f:
        f.writelines(lines[TRAIN_ROWS:])
    return train, test


def _run(home, files, solver, *flags):
    train, test = files
    proc = cli("run", f"--dataset={train}", f"--test-file={test}", "--parser=native", f"--solver={solver}",
               "--monitor=off", "--json", *flags, home=home, env={"SVMCORE_DATA_DIRS": os.path.dirname(train)},
               check=0)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("solver", list(GRID))
def test_the_default_lands_within_half_a_point_of_the_best_of_a_grid(home, files, solver):
    knob, values = GRID[solver]
    # accuracy only, on a fixed seed: the runs do not measure each other
    default, *at = two_at_a_time(lambda *flags: _run(home, files, solver, *flags),
                                 [()] + [(f"--{knob}={v}",) for v in values])
    grid = {v: s["accuracy"] for v, s in zip(values, at)}
    reg = default["regularisation"]
    name, value = ("l2", auto_l2(TRAIN_ROWS)) if solver == "ftrl" else ("alpha", auto_alpha(TRAIN_ROWS))
    assert reg == {"name": name, "value": value, "source": "auto", "why": reg["why"]}
    assert "10,000 training rows" in reg["why"]
    assert 100 * (max(grid.values()) - default["accuracy"]) <= 0.5, (default["accuracy"], grid)
