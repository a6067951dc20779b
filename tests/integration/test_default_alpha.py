"""The default regularisation is chosen for the data: at default knobs every solver lands
within 0.5 points of the best of a small grid of strengths, on a file whose training rows
are followed by test rows of the same kind (bench/alpha.py measures it at 2*10^5 and 10^6
rows), and every run says which alpha it used and why."""

import json
import os

import pytest

from svmcore.data.files import make_dataset
from svmcore.spec.regularisation import auto_alpha, auto_l2, class_balance
from tests.conftest import cli, two_at_a_time

TRAIN_ROWS = 10_000
GRID = {"sklearn": ("alpha", (1e-4, 1e-5, 1e-6)), 
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


@pytest.mark.slow
@pytest.mark.parametrize("solver", list(GRID))
def test_the_default_lands_within_half_a_point_of_the_best_of_a_grid(home, files, solver):
    knob, values = GRID[solver]
    # accuracy only, on a fixed seed: the runs do not measure each other
    default, *at = two_at_a_time(lambda *flags: _run(home, files, solver, *flags),
                                 [()] + [(f"--{knob}={v}",) for v in values])
    grid = {v: s["accuracy"] for v, s in zip(values, at)}
    reg = default["regularisation"]
    balance = class_balance(default["data"]["class_counts"])  # the train file's, as scanned: about even
    assert 0.9 < balance <= 1.0
    name, value = ("l2", auto_l2(TRAIN_ROWS)) if solver == "ftrl" else ("alpha", auto_alpha(TRAIN_ROWS, balance))
    assert reg == {"name": name, "value": value, "source": "auto", "why": reg["why"]}
    assert "10,000 training rows" in reg["why"]
    assert 100 * (max(grid.values()) - default["accuracy"]) <= 0.5, (default["accuracy"], grid)


@pytest.mark.slow
def test_on_imbalanced_data_the_default_serves_balanced_accuracy_too(home, tmp_path):
    """Issue 40: the rule in rows was measured on balanced data; on w8a (3% positive) it cost 1.1
    points of balanced accuracy against the grid's best. With the class balance in the rule the
    default lands within a point of the best of a grid on balanced accuracy and within half a
    point on accuracy, on a w8a-like file (3% positive, sorted by label, positives by kind; the
    held-out rows spread over it). Measured at seed 0: the old rule's 8.5e-6 gave 0.835, the
    default now (4.3e-7) 0.871, 3e-7 0.877."""
    path = str(tmp_path / "kinds3pct")
    make_dataset("sparse-text", rows=50_000, features=1 << 14, nnz_per_row=30, seed=1, out=path,
                 positive_fraction=0.03, sort_by_label=True, group_kinds=True)

    def run(*flags):
        proc = cli("run", f"--dataset={path}", "--monitor=off", "--json", *flags, home=home,
                   env={"SVMCORE_DATA_DIRS": str(tmp_path)}, check=0)
        return json.loads(proc.stdout.strip().splitlines()[-1])

    values = (1e-5, 1e-6, 3e-7)
    default, *at = two_at_a_time(run, [()] + [(f"--alpha={v}",) for v in values])
    balance = class_balance(default["data"]["class_counts"])
    assert 0.05 < balance < 0.07
    assert default["regularisation"]["value"] == auto_alpha(40_000, balance) < auto_alpha(40_000) / 10
    best = max(s["balanced_accuracy"] for s in at)
    assert 100 * (best - default["balanced_accuracy"]) <= 1.0, (default["balanced_accuracy"], best)
    assert 100 * (max(s["accuracy"] for s in at) - default["accuracy"]) <= 0.5
