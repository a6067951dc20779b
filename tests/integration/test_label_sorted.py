"""A file sorted by label, as many public libsvm files come: without shuffling, SGD ends on
the majority class and accuracy hides it; with shuffling, every mode learns the minority
class, and every run reports the class-aware scores that tell the two apart."""

import json

import pytest

from svmcore.data.files import make_dataset
from tests.conftest import cli, two_at_a_time


@pytest.fixture(scope="module")
def sorted_file(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("sorted") / "sorted3pct")  # no extension, like a9a
    make_dataset("sparse-text", rows=60_000, features=1 << 16, nnz_per_row=30, seed=1, out=path,
                 positive_fraction=0.03, sort_by_label=True)
    with open(path) as f:
        first = [next(f).split(" ", 1)[0] for _ in range(10)]
    assert first == ["1"] * 10  # the positives come first
    return path


def _run(home, path, mode, shuffle):
    proc = cli("run", f"--dataset={path}", f"--mode={mode}", "--epochs=5", "--parser=native",
               "--shuffle" if shuffle else "--no-shuffle", "--json", home=home,
               env={"SVMCORE_DATA_DIRS": path.rsplit("/", 1)[0]}, check=0)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mode", ["memory", "stream", "memmap"])
def test_shuffle_turns_a_majority_class_model_into_a_real_one(home, sorted_file, mode):
    plain, mixed = two_at_a_time(_run, [(home, sorted_file, mode, False), (home, sorted_file, mode, True)])
    for s in (plain, mixed):
        assert {"balanced_accuracy", "f1", "baseline_accuracy", "confusion", "per_class_recall"} <= set(s)
        assert s["confusion"]["classes"] == ["-1", "1"]
        assert sum(map(sum, s["confusion"]["matrix"])) == s["test_rows"]
        assert 0.95 < s["baseline_accuracy"] < 0.99
    # file order: the model ends on the majority class; accuracy is the baseline's
    assert plain["balanced_accuracy"] < 0.6
    assert plain["accuracy"] - plain["baseline_accuracy"] < 0.02
    # shuffled: the minority class is learnt
    assert mixed["balanced_accuracy"] > 0.7, mixed
    assert mixed["f1"] > 0.5
    assert mixed["shuffle"] is True and plain["shuffle"] is False
    # both score near the 97% baseline; only the file-order model is warned about (on balanced accuracy)
    assert [w["kind"] for w in plain["warnings"]] == ["near-chance"] and "shuffle off" in plain["warnings"][0]["text"]
    assert mixed["warnings"] == []


def _default_run(home, path, config):
    args = {"memory": ["--mode=memory"], "stream": ["--mode=stream"], "memmap": ["--mode=memmap"],
            "lean": ["--mode=stream", "--parser=native", "--solver=native"]}[config]
    proc = cli("run", f"--dataset={path}", *args, "--json", home=home,
               env={"SVMCORE_DATA_DIRS": path.rsplit("/", 1)[0]}, check=0)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_mode_lands_near_memory_modes_balanced_accuracy_at_default_knobs(home, sorted_file):
    """Issue 20: windows drawn from pieces across the whole file reach the label block in
    every pass. Measured on this file (seeds 0-2): memory 0.829-0.833; memmap 0.2-0.9 points
    below it, stream and lean 0.9-1.7 above; before, at seed 0, memmap was 10 points below,
    lean 5.3, stream 3.0. Tolerance 1.5 points: memmap's spread over the three seeds was 0.75.
    With issue 40's class-aware alpha (3.4e-7 here): memory 0.872-0.887, stream +0.1, memmap -0.1,
    lean -0.2 on average."""
    _near_memory_mode(home, sorted_file, 0.015)


def _near_memory_mode(home, path, tolerance):
    """Every mode's balanced accuracy at default knobs (seed 0) at most ``tolerance`` below memory mode's."""
    memory, stream, memmap, lean = two_at_a_time(
        _default_run, [(home, path, c) for c in ("memory", "stream", "memmap", "lean")])
    assert memory["balanced_accuracy"] > 0.8, memory
    for name, s in (("stream", stream), ("memmap", memmap), ("lean", lean)):
        assert s["status"] == "completed" and s["shuffle"] is True
        gap = memory["balanced_accuracy"] - s["balanced_accuracy"]
        assert gap < tolerance, (name, s["balanced_accuracy"], memory["balanced_accuracy"])


@pytest.fixture(scope="module")
def kinds_file(tmp_path_factory):
    """Like w8a: 3% positive, sorted by label, and the positives grouped by kind (the marker token
    that makes each one positive), as rows gathered source by source come."""
    path = str(tmp_path_factory.mktemp("kinds") / "kinds3pct")
    make_dataset("sparse-text", rows=50_000, features=1 << 14, nnz_per_row=30, seed=1, out=path,
                 positive_fraction=0.03, sort_by_label=True, group_kinds=True)
    return path


def test_every_mode_lands_within_a_point_of_memory_mode_when_the_positives_come_by_kind(home, kinds_file):
    """Issue 40: shuffled passes read pieces of 64 rows; a piece of neighbours that are alike put a
    few kinds of positives in each window. Measured on this file (seeds 0-2, bench/results/label-sorted.md
    and label-sorted-before-i40.md): memmap 2.6 points below memory mode before, 0.6 after (its copy
    holds each chunk's rows mixed); stream +0.9 and -0.3, lean -0.1 and -1.1 (their spill is now
    written in the order the first pass trains; lean's own solver in memory mode: -1.7). At seed 0:
    memory 0.871, memmap 0.843 with its copy in file order (0.809 before the class-aware alpha)."""
    _near_memory_mode(home, kinds_file, 0.01)
