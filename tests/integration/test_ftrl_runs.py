"""FTRL through real workers: the three modes train the same model from the same file in
file order, the same seed gives the same model with shuffling, every linear run reports
its nonzero weights and sparse size in --json, and float16 runs report the upcast."""

import json

import pytest

from svmcore.data.files import make_dataset
from tests.conftest import cli, two_at_a_time


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("ftrl") / "small.svm")
    make_dataset("sparse-text", rows=3000, features=1 << 12, nnz_per_row=20, seed=3, out=path)
    return path


def _run(home, path, *flags):
    proc = cli("run", f"--dataset={path}", "--epochs=2", "--batch-size=256", "--json", *flags, home=home,
               env={"SVMCORE_DATA_DIRS": path.rsplit("/", 1)[0]}, check=0)
    s = json.loads(proc.stdout.strip().splitlines()[-1])
    assert s["status"] == "completed", s.get("error")
    return s


MODEL = ("accuracy", "balanced_accuracy", "nonzero_weights", "weights", "sparse_model_bytes")


@pytest.mark.slow
def test_memory_stream_and_memmap_train_the_same_model_in_file_order(home, small_file):
    modes = ("memory", "stream", "memmap")
    got = dict(zip(modes, two_at_a_time(_run, [(home, small_file, "--solver=ftrl", f"--mode={mode}", "--no-shuffle",
                                                "--l1=0.5") for mode in modes])))
    first = {k: got["memory"][k] for k in MODEL}
    assert 0 < first["nonzero_weights"] < first["weights"]
    for mode, s in got.items():
        assert {k: s[k] for k in MODEL} == first, mode


@pytest.mark.slow
def test_the_same_seed_gives_the_same_model_with_shuffling(home, small_file):
    a, b = two_at_a_time(_run, [(home, small_file, "--solver=ftrl", "--mode=memmap", "--shuffle", "--seed=5")] * 2)
    assert {k: a[k] for k in MODEL} == {k: b[k] for k in MODEL}


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["sklearn", "native", "ftrl"])
def test_every_linear_run_reports_its_model_size_and_float16_its_upcast(home, small_file, solver):
    s, plain = two_at_a_time(_run, [(home, small_file, f"--solver={solver}", "--precision=float16",
                                     "--representation=dense"), (home, small_file, f"--solver={solver}", "--epochs=1")])
    assert s["weights"] == 1 << 12
    assert 0 < s["nonzero_weights"] <= s["weights"]
    assert s["sparse_model_bytes"] == s["nonzero_weights"] * 12 + 8 + 16
    u = s["upcast"]
    assert u["batches"] == s["batches"]
    # dense float16 batches of 256 rows x 2^12 columns: float32 is twice the float16 bytes
    assert u["float32_bytes_max"] == 256 * (1 << 12) * 4
    assert u["float32_bytes_per_batch"] == 2 * u["float16_bytes_per_batch"]
    assert u["seconds_per_batch"] > 0
    assert plain["upcast"] is None
