"""Data-parallel runs on a LocalCluster started for the run (each costs a few seconds of
cluster start-up, so these are few and marked slow)."""

import time

import psutil
import pytest

from svmcore.spec.events import WORKER_MEMORY
from svmcore.spec.status import RunStatus
from tests.helpers import _run

pytestmark = pytest.mark.slow

KNOBS = dict(rows=12_000, features=1 << 14, nnz_per_row=20, epochs=3)


def _alive(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_two_workers_train_one_model_about_as_well_as_one_process(store):
    single = _run(store, **KNOBS)
    assert single.wait(120) == RunStatus.COMPLETED, single.summary
    ddp = _run(store, workers=2, mode="stream", **KNOBS)
    assert ddp.wait(180) == RunStatus.COMPLETED, ddp.summary
    par = ddp.summary.parallel
    assert [w.rows for w in par.per_worker] == [single.summary.train_rows // 2] * 2
    assert all(w.peak_exact and w.peak_rss_mb > 50 for w in par.per_worker)
    assert par.total_peak_sampled_mb > max(w.peak_sampled_mb for w in par.per_worker)
    assert abs(ddp.summary.accuracy - single.summary.accuracy) < 0.03
    events = [e for e in store.events(ddp.run_id) if e["kind"] == WORKER_MEMORY]
    assert sorted({(e["worker"], e["epoch"]) for e in events}) == [(w, e) for w in (1, 2) for e in (1, 2, 3)]
    assert all(len(e["dt"]) == len(e["rss_bytes"]) > 0 for e in events)
    # what each pass retained: the coordinator's, and each Dask worker's at the end of its shard's pass
    assert [p.epoch for p in ddp.summary.passes] == [1, 2, 3]
    assert all(len(p.workers_anon_mb) == 2 and min(p.workers_anon_mb) > 20 for p in ddp.summary.passes)
    pids = {w.pid for w in par.per_worker}
    assert not any(_alive(p) for p in pids), "the run's LocalCluster outlived it"


def test_a_dask_worker_that_dies_mid_epoch_fails_the_run_naming_it(store):
    run = _run(store, fault="exit:9@shard2-epoch2", workers=2, **KNOBS)
    assert run.wait(180) == RunStatus.FAILED, run.summary
    message = run.summary.error.message
    assert "Dask worker 2" in message and "epoch 2" in message, message
    assert run.summary.accuracy is None  # no model is reported


def test_cancel_stops_the_cluster_and_leaves_no_process(store):
    run = _run(store, fault="sleep:60@shard1-epoch2", workers=2, **KNOBS)
    deadline = time.monotonic() + 120
    pids = set()
    while time.monotonic() < deadline and not pids:
        pids = {e["pid"] for e in store.events(run.run_id) if e["kind"] == WORKER_MEMORY}
        time.sleep(0.2)
    assert pids, "no epoch finished"
    time.sleep(0.5)  # inside epoch 2
    run.cancel()
    assert run.wait(30) == RunStatus.CANCELLED
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in pids | {run.pid}):
        time.sleep(0.1)
    assert not [p for p in pids | {run.pid} if _alive(p)]


def test_mixing_every_k_batches_keeps_each_workers_place_in_its_shard(store):
    run = _run(store, workers=2, mix_every=2, mode="stream", batch_size=1024, **KNOBS)
    assert run.wait(180) == RunStatus.COMPLETED, run.summary
    events = [e for e in store.events(run.run_id) if e["kind"] == WORKER_MEMORY]
    per_epoch = {}
    for e in events:
        per_epoch.setdefault((e["worker"], e["epoch"]), []).append(e["rows"])
    shard_rows = [w.rows for w in run.summary.parallel.per_worker]
    for (worker, _), rows in per_epoch.items():
        assert len(rows) > 1 and sum(rows) == shard_rows[worker - 1]  # several mixes, each row once a pass
    # a shard's pass ends at its last mix: the worker's reading is the one taken then
    assert all(len(p.workers_anon_mb) == 2 and min(p.workers_anon_mb) > 20 for p in run.summary.passes)
    assert run.summary.accuracy > 0.6
