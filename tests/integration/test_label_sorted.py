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


@pytest.mark.slow
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


def _near_memory_mode(home, path, tolerance):
    """Every mode's balanced accuracy at default knobs (seed 0) at most ``tolerance`` below memory mode's."""
    memory, stream, memmap, lean = two_at_a_time(
        _default_run, [(home, path, c) for c in ("memory", "stream", "memmap", "lean")])
    assert memory["balanced_accuracy"] > 0.8, memory
    for name, s in (("stream", stream), ("memmap", memmap), ("lean", lean)):
        assert s["status"] == "completed" and s["shuffle"] is True
        gap = memory["balanced_accuracy"] - s["balanced_accuracy"]
        assert gap < tolerance, (name, s["balanced_accuracy"], memory["balanced_accuracy"])
    return {"memory": memory, "stream": stream, "memmap": memmap, "lean": lean}


@pytest.fixture(scope="module")
def kinds_file(tmp_path_factory):
    """Like w8a: 3% positive, sorted by label, and the positives grouped by kind (the marker token
    that makes each one positive), as rows gathered source by source come; 200,000 rows, where
    a first pass over the text in pieces lost 4 points."""
    path = str(tmp_path_factory.mktemp("kinds") / "kinds3pct")
    make_dataset("sparse-text", rows=200_000, features=1 << 14, nnz_per_row=30, seed=1, out=path,
                 positive_fraction=0.03, sort_by_label=True, group_kinds=True)
    return path


@pytest.mark.slow
def test_every_mode_lands_within_a_point_of_memory_mode_when_the_positives_come_by_kind(home, kinds_file):
    """Issues 20 and 40: every mode at default knobs lands within a point of memory mode's balanced
    accuracy on a label-sorted file whose positives come by kind (all positives first, as in the
    file of issue 20, and each kind together). Measured on this file at 200,000 rows (seeds 0-2,
    bench/results/label-sorted.md): memmap +0.1 (its copy holds each chunk's rows mixed); stream and
    lean, whose first pass read the text in pieces, were 4.6 and 4.3 points below, now +0.3 and -0.1:
    the file's labels come in long runs, so it is copied to the spill before the first pass and
    every pass reads windows drawn across it (lean's solver also restarts its plain intercept on
    every batch, as scikit-learn's does, docs/data.md)."""
    runs = _near_memory_mode(home, kinds_file, 0.01)
    # its labels come in long runs: the stream modes copy it to the spill before the first pass
    assert [runs[c]["spill"]["filled_first"] for c in ("stream", "lean")] == [True, True]
