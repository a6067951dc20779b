"""A data file changed by another program while a real worker reads it: the run ends
`failed` with one message naming the file and what changed, never `completed` with
figures from half a file (or from rows that were not there when it started)."""

import os

import pytest

from svmcore.engine.runner import Run
from svmcore.spec.config import validate
from svmcore.spec.status import RunStatus
from tests.conftest import cli

ROWS = 20_000


@pytest.fixture(scope="module")
def source_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "source.svm"
    cli("data", "make", "sparse-text", "--rows", str(ROWS), "--features", "4096", "--nnz-per-row", "20",
        "--out", str(path), check=0)
    return path


@pytest.fixture
def train_file(source_file, tmp_path):
    """A fresh copy per test: the faults change it."""
    path = tmp_path / "train.svm"
    path.write_bytes(source_file.read_bytes())
    return path


def _run(store, fault, **knobs):
    cfg = validate({"epochs": 2, "batch_size": 500, **knobs})
    run = Run(store, cfg, extra_env={"SVMCORE_FAULT": fault} if fault else None).start()
    assert run.wait(120) is not None
    return run


def _assert_failed_with_change(run, size_before, path, phase):
    assert run.status == RunStatus.FAILED, run.summary
    err = run.summary.error
    assert err.bad_input and err.type == "DataChangedError", err
    msg = err.message
    assert msg.startswith(f"{path.name} changed while training: "), msg
    assert f"{size_before:,} bytes at the start, {os.path.getsize(path):,} now" in msg, msg
    assert msg.endswith("; re-run on a stable copy") and len(msg.splitlines()) == 1
    assert run.summary.phase == phase
    assert run.summary.accuracy is None and run.summary.train_rows is None


@pytest.mark.parametrize("fault", ["truncate:0.5@train", "append:300@train", "tear@train"])
@pytest.mark.parametrize("threads", [1, 2])  # 2: the reader thread parses ahead
def test_stream_run_over_a_file_changed_while_training_fails(store, train_file, fault, threads):
    size = os.path.getsize(train_file)
    run = _run(store, fault, dataset=str(train_file), mode="stream", threads=threads)
    _assert_failed_with_change(run, size, train_file, "train")
    assert store.get_run(run.run_id).status == RunStatus.FAILED


@pytest.mark.parametrize("parser", ["sklearn", "native"])
def test_stream_run_over_an_unchanged_file_completes_with_every_row(store, train_file, parser):
    run = _run(store, None, dataset=str(train_file), mode="stream", parser=parser)
    assert run.status == RunStatus.COMPLETED, run.summary
    s = run.summary
    assert s.train_rows == ROWS - ROWS // 5 and s.samples_seen == 2 * s.train_rows


def test_memory_run_over_a_file_truncated_while_loading_fails(store, train_file):
    size = os.path.getsize(train_file)
    run = _run(store, "truncate:0.5@load", dataset=str(train_file), mode="memory")
    _assert_failed_with_change(run, size, train_file, "load")


def test_a_test_file_changed_while_it_is_read_fails_the_run(store, train_file, source_file, tmp_path):
    test = tmp_path / "test.svm"
    test.write_bytes(b"".join(source_file.read_bytes().splitlines(keepends=True)[:3000]))
    size = os.path.getsize(test)
    run = _run(store, "append-test:50@load", dataset=str(train_file), test_file=str(test), mode="stream")
    _assert_failed_with_change(run, size, test, "load")


def test_a_file_changed_after_loading_fails_the_run_at_the_end_of_training(store, train_file):
    """Memory mode read the file whole at load; a writer finishing a torn line during
    training still means the run did not train on a stable file."""
    size = os.path.getsize(train_file)
    run = _run(store, "tear@train", dataset=str(train_file), mode="memory")
    _assert_failed_with_change(run, size, train_file, "train")
