"""Admission's data rules (what only the data can refuse, from one scan of the data and of
its test file) and what the worker receives of that scan."""

from __future__ import annotations

import os

import numpy as np
import pytest

from svmcore.data.sources import Source, scan
from svmcore.engine.admission import Admitted, check_data
from svmcore.spec.config import validate
from svmcore.spec.errors import ConfigError, DataError


def _svm_file(path, rows=5000):
    rng = np.random.default_rng(1)
    ids = rng.integers(1, 300, size=rows)
    path.write_text("".join(f"{1 if r % 2 else -1} {i}:1 {i + 1}:0.5\n" for r, i in enumerate(ids)))
    return path


def test_admission_refuses_what_only_the_data_can_refuse(tmp_path):
    big = _svm_file(tmp_path / "big.svm", rows=20_000)
    cache = str(tmp_path / "cache")
    assert check_data(validate(dataset=str(big)), cache).scan.rows == 20_000
    with pytest.raises(ConfigError, match=r"^model: kernel-svm .* 16,000 rows is above its limit of 10,000"):
        check_data(validate(dataset=str(big), model="kernel-svm"), cache)
    with pytest.raises(ConfigError, match=r"^batch_size: 16,001 is larger than the training data \(16,000 rows\)"):
        check_data(validate(dataset=str(big), batch_size=16_001), cache)
    one = tmp_path / "one.svm"
    one.write_text("1 1:1\n" * 50)
    with pytest.raises(DataError, match="one class"):
        check_data(validate(dataset=str(one), batch_size=1), cache)
    few = tmp_path / "few.svm"
    few.write_text("1 1:1\n-1 2:1\n")
    with pytest.raises(DataError, match="no rows are left for testing"):
        check_data(validate(dataset=str(few), batch_size=1), cache)
    bad_test = tmp_path / "test.svm"
    bad_test.write_text("1 1:1\n-1 2:x\n")
    with pytest.raises(DataError, match="line 2"):
        check_data(validate(dataset=str(big), test_file=str(bad_test)), cache)
    # synthetic data: described from its knobs, no generation
    with pytest.raises(ConfigError, match=r"^batch_size: "):
        check_data(validate(rows=1000, batch_size=900), None)
    assert check_data(validate(rows=1000, batch_size=800), None).job_scans()["scan"]["rows"] == 1000


def test_the_worker_receives_the_scans_unless_a_file_changed_since(tmp_path):
    train, test = _svm_file(tmp_path / "train.svm"), _svm_file(tmp_path / "test.svm", rows=1000)
    cfg = validate(dataset=str(train), test_file=str(test))
    launch = check_data(cfg, str(tmp_path / "cache"))
    assert launch.job_scans() == {"scan": scan(Source(cfg)).to_dict(),
                                  "test_scan": scan(Source(validate(dataset=str(test)))).to_dict()}
    with open(test, "a") as f:  # the test file grew while the run was queued: the worker scans it again
        f.write("1 1:1\n")
    assert launch.job_scans() == {}
    assert Admitted(cfg).job_scans() == {}  # a run that was not admitted against its data: nothing handed down
    os.truncate(test, os.path.getsize(test) - len("1 1:1\n"))
    assert launch.job_scans() == {}  # (the same size again, but not the file that was scanned: rewritten since)


def test_two_sessions_scanning_one_new_file_at_once_both_get_its_scan(tmp_path):
    """A dashboard's sessions (and a rerun Streamlit starts before the run it stops has left a
    scan) are threads of one process: each scan of a file not yet cached writes the scan and
    the row index beside it under a name of its own. CI saw a launch fail with the app's
    error page when two wrote one index temporary and the second rename found it gone."""
    import threading

    path = str(tmp_path / "d.svm")
    with open(path, "w") as f:
        for i in range(20_000):
            f.write(f"{1 if i % 2 else -1} 1:{i % 7 + 1} 3:{(i * 13) % 5 + 0.5}\n")
    cfg = validate({"dataset": path})
    failures, infos = [], []
    go = threading.Barrier(6)

    def one(cache: str) -> None:
        go.wait()
        try:
            infos.append(scan(Source(cfg), cache))
        except Exception as e:  # the failure is the test's finding: kept and asserted below
            failures.append(repr(e))

    for attempt in range(5):
        cache = str(tmp_path / f"cache{attempt}")
        threads = [threading.Thread(target=one, args=(cache,)) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []
    assert {i.rows for i in infos} == {20_000}
    assert not [n for n in os.listdir(tmp_path / "cache0") if n.endswith(".tmp")]


@pytest.mark.parametrize("parser", ["sklearn", "native"])
def test_the_scan_counts_runs_of_one_label_and_tells_a_label_sorted_file(tmp_path, parser):
    """Runs are counted across the scan's chunks (a run that spans two chunks is one run);
    a file sorted by label has one run per class, far below the ~2pq(n-1) changes of a file in
    random order, and is told apart by ``labels_in_long_runs``; a random order is not."""
    rng = np.random.default_rng(0)
    labels = np.where(rng.random(150_000) < 0.03, 1, -1)
    for name, ys in (("sorted", np.sort(labels)[::-1]), ("random", labels)):
        path = tmp_path / name
        path.write_text("".join(f"{y} {i % 50 + 1}:1\n" for i, y in enumerate(ys.tolist())))
        info = scan(Source(validate(dataset=str(path), parser=parser)), str(tmp_path / "cache"))
        assert info.label_runs == 1 + int(np.count_nonzero(ys[1:] != ys[:-1]))
        assert info.labels_in_long_runs is (name == "sorted")


def test_a_scan_cached_before_label_runs_were_counted_is_scanned_again(tmp_path):
    import json

    path = _svm_file(tmp_path / "d.svm", rows=3000)
    cache = str(tmp_path / "cache")
    src = Source(validate(dataset=str(path)))
    first = scan(src, cache)
    cached = os.path.join(cache, next(n for n in os.listdir(cache) if n.endswith(".json")))
    with open(cached) as f:
        old = json.load(f)
    old.pop("label_runs")
    with open(cached, "w") as f:
        json.dump(old, f)
    assert scan(Source(validate(dataset=str(path))), cache).label_runs == first.label_runs > 1
    with open(cached) as f:
        assert json.load(f)["label_runs"] == first.label_runs
