"""Launches that the data makes impossible are refused before any worker starts,
through every launch path, and nothing is stored."""

import json
import os

import pytest

from svmcore.app.lab import Lab
from svmcore.spec.errors import ConfigError
from svmcore.store.sqlite import Store
from tests.conftest import cli

ROWS = 20_000  # 16,000 training rows: above kernel-svm's limit of 10,000


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "big.svm"
    cli("data", "make", "sparse-text", "--rows", str(ROWS), "--features", "4096", "--nnz-per-row", "20",
        "--out", str(path), check=0)
    return path


def _stored(home):
    s = Store(home)
    try:
        return s.list_runs()
    finally:
        s.close()


def test_lab_launch_refuses_kernel_svm_on_too_many_rows_before_storing_anything(home, big_file):
    os.makedirs(os.path.join(home, "datasets"))
    data = os.path.join(home, "datasets", "big.svm")
    os.link(big_file, data)
    lab = Lab(home)
    with pytest.raises(ConfigError, match=r"^model: kernel-svm is exact .* 16,000 rows is above its limit"):
        lab.runs.launch({"dataset": data, "model": "kernel-svm"})
    with pytest.raises(ConfigError, match=r"^batch_size: "):
        lab.runs.launch({"dataset": data, "batch_size": 16_001})
    assert lab.store.list_runs() == [] and lab.queue.pending() == []
    with pytest.raises(ConfigError, match="no combination is valid: model: kernel-svm"):
        lab.sweeps.start({"dataset": data}, {"model": ["kernel-svm"]})
    assert lab.store.list_runs() == []


def test_cli_run_refuses_kernel_svm_on_too_many_rows_exit_2_nothing_stored(home, big_file):
    proc = cli("run", f"--dataset={big_file}", "--model=kernel-svm", home=home)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("svmcore: error: model: kernel-svm is exact") and "16,000 rows" in err
    assert _stored(home) == []


def test_cli_sweep_skips_the_impossible_grid_points_with_the_reason(home, big_file):
    proc = cli("sweep", f"--dataset={big_file}", "--epochs=1", "--grid", "model=linear-svm,kernel-svm", "--json",
               home=home, check=0)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [r["status"] for r in result["runs"]] == ["completed"]
    assert result["skipped"] == [{"values": {"model": "kernel-svm"}, "reason": result["skipped"][0]["reason"]}]
    assert "16,000 rows is above its limit" in result["skipped"][0]["reason"]
    assert "skipped model=kernel-svm: model: kernel-svm" in proc.stderr
    assert [r.config["model"] for r in _stored(home)] == ["linear-svm"]
