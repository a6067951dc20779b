"""The two accumulation causes on real short runs: the memory they hold is the worker's own
anonymous memory, read by the parent from /proc at 50 Hz while the worker pauses between two
passes (a test-only fault: a sleep), not the worker's count of its arrays."""

from __future__ import annotations

import os
import statistics

import pytest

from svmcore.predict.model import data_shape, kept_bytes
from svmcore.spec.status import RunStatus
from tests.helpers import _run, wait_until

CACHE = dict(model="kernel-approx", mode="stream", n_components=128, epochs=3, monitor="light")
HISTORY = dict(epochs=4, monitor="light")
PAUSE_S = 0.5
PAUSES = ",".join(f"sleep:{PAUSE_S}@epoch{n}" for n in (2, 3, 4))  # after passes 1, 2 and 3


def _finished(store, **knobs):
    run = _run(store, fault=PAUSES, **knobs)
    assert run.wait(180) == RunStatus.COMPLETED, run.summary
    return run


def _anon_after_pass(store, run) -> dict[int, float]:
    """The worker's anonymous memory (bytes, median of the samples) while it paused after each
    pass that ended before another: pass number -> bytes."""
    samples = store.samples(run.run_id)
    out = {}
    for e in store.events(run.run_id):
        if e["kind"] == "progress" and e.get("epoch_samples_per_s") and e["epoch"] < run.config.epochs:
            anon = [a for t, _rss, a, *_ in samples if e["t_s"] + 0.1 <= t <= e["t_s"] + PAUSE_S - 0.05]
            assert len(anon) >= 5, f"{len(anon)} samples in the pause after pass {e['epoch']}"
            out[e["epoch"]] = statistics.median(anon)
    return out


@pytest.mark.slow
def test_a_history_of_references_grows_every_pass_and_gc_frees_none_of_it(store):
    for knobs in ({"history": "refs"}, {"history": "refs", "gc_every": 5}):
        run = _finished(store, **HISTORY, **knobs)
        kept = run.summary.kept
        assert kept.history == "refs" and kept.history_batches == run.summary.batches
        assert kept.history_most_held_batches == kept.history_batches  # gc.collect() freed nothing
        anon = _anon_after_pass(store, run)
        per_pass = kept.history_bytes / run.config.epochs
        assert anon[3] - anon[1] >= 0.8 * 2 * per_pass, (anon, per_pass)
        # the memory model prices the copies the worker made, from the config and the data's shape
        assert abs(kept_bytes(run.config, data_shape(run.config))[1] / kept.history_bytes - 1) < 0.03


@pytest.mark.slow
def test_a_cyclic_history_waits_for_the_collector_and_gc_every_frees_it(store):
    run = _finished(store, **HISTORY, history="cycles", gc_every=5)
    kept = run.summary.kept
    assert kept.history == "cycles" and kept.history_batches == run.summary.batches > 20
    assert kept.history_most_held_batches <= 5  # every 5th batch's gc.collect() freed the cycles
    anon = _anon_after_pass(store, run)
    assert anon[3] - anon[1] <= 0.1 * kept.history_bytes, anon


@pytest.mark.slow
def test_a_cache_in_memory_grows_through_the_first_pass_and_on_disk_does_not(store):
    memory = _finished(store, **CACHE, transform_cache="memory")
    disk = _finished(store, **CACHE, transform_cache="disk")
    for run in (memory, disk):
        kept = run.summary.kept
        assert kept.cache_rows == run.summary.train_rows and kept.cache_failed is None
        assert kept.cache_bytes == run.summary.train_rows * (128 * 8 + 4)  # float64 components, int32 class codes
        assert run.summary.spill is None  # the transformed rows replace the spill of parsed ones
    assert kept_bytes(memory.config, data_shape(memory.config))[0] == memory.summary.kept.cache_bytes
    held, spilled = _anon_after_pass(store, memory), _anon_after_pass(store, disk)
    cache = memory.summary.kept.cache_bytes
    assert held[1] - spilled[1] >= 0.8 * cache, (held, spilled, cache)  # the same rows: in memory, or on disk
    assert abs(held[2] - held[1]) <= 0.1 * cache  # it grew in the first pass only
    assert not os.path.exists(os.path.join(disk.run_dir, "spill"))  # the disk cache's file is gone with the run
    # later passes read back exactly the rows the first pass made, in the same order
    assert disk.summary.balanced_accuracy == memory.summary.balanced_accuracy


def test_a_cancelled_run_leaves_no_disk_cache_behind(store):
    run = _run(store, fault="sleep:120@epoch2", **CACHE, transform_cache="disk")
    cache = os.path.join(run.run_dir, "spill", "transformed.bin")
    try:
        wait_until(lambda: any(e.get("epoch_samples_per_s") for e in store.events(run.run_id)) and
                   os.path.isfile(cache) and os.path.getsize(cache) > 0, timeout=120,
                   what="the first pass and its cache on disk")
    finally:
        run.cancel()
    assert run.wait(60) == RunStatus.CANCELLED
    assert not os.path.exists(os.path.join(run.run_dir, "spill"))
