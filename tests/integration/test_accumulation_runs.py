"""The two accumulation causes on real short runs: the memory they hold is the worker's own
anonymous memory, read by the parent from /proc (not the worker's count of its arrays)."""

from __future__ import annotations

import os

from svmcore.spec.status import RunStatus
from tests.helpers import _run, wait_until

CACHE = dict(model="kernel-approx", mode="stream", n_components=128, epochs=3, monitor="off")


def _finished(store, **knobs):
    run = _run(store, **knobs)
    assert run.wait(180) == RunStatus.COMPLETED, run.summary
    return run


def _anon_growth(store, run, phase: str = "train") -> float:
    """Bytes of anonymous memory the worker gained in ``phase``: the highest sample near its end
    against the lowest near its start (50 Hz samples)."""
    span = next(p for p in run.summary.phases if p.name == phase)
    anon = [a for t, _rss, a, *_ in store.samples(run.run_id) if span.start_s <= t <= span.end_s]
    assert len(anon) >= 10, f"{len(anon)} samples in {phase}: too short to see"
    cut = max(3, len(anon) // 5)
    return max(anon[-cut:]) - min(anon[:cut])


def test_a_history_of_references_holds_every_batch_and_gc_frees_none_of_it(store):
    refs = _finished(store, epochs=4, monitor="off", history="refs")
    collected = _finished(store, epochs=4, monitor="off", history="refs", gc_every=5)
    for run in (refs, collected):
        kept = run.summary.kept
        assert kept.history == "refs" and kept.history_batches == run.summary.batches
        assert kept.history_most_held_batches == kept.history_batches  # gc.collect() freed nothing
        assert _anon_growth(store, run) >= 0.6 * kept.history_bytes


def test_a_cyclic_history_waits_for_the_collector_and_gc_every_frees_it(store):
    run = _finished(store, epochs=4, monitor="off", history="cycles", gc_every=5)
    kept = run.summary.kept
    assert kept.history == "cycles" and kept.history_batches == run.summary.batches > 20
    assert kept.history_most_held_batches <= 5  # every 5th batch's gc.collect() freed the cycles
    assert _anon_growth(store, run) <= 0.25 * kept.history_bytes


def test_a_cache_in_memory_grows_through_the_first_pass_and_on_disk_does_not(store):
    memory = _finished(store, **CACHE, transform_cache="memory")
    disk = _finished(store, **CACHE, transform_cache="disk")
    for run in (memory, disk):
        kept = run.summary.kept
        assert kept.cache_rows == run.summary.train_rows
        assert kept.cache_bytes >= run.summary.train_rows * 128 * 8  # float64 components, their class codes
        assert kept.cache_failed is None
        assert run.summary.spill is None  # the transformed rows replace the spill of parsed ones
    # the same passes over the same rows: what the memory cache holds, the disk cache does not
    assert _anon_growth(store, memory) - _anon_growth(store, disk) >= 0.7 * memory.summary.kept.cache_bytes
    assert not os.path.exists(os.path.join(disk.run_dir, "spill"))  # its file is gone with the run
    # later passes read back exactly the rows the first pass made, in the same order
    assert disk.summary.balanced_accuracy == memory.summary.balanced_accuracy


def test_a_cancelled_run_leaves_no_disk_cache_behind(store):
    run = _run(store, fault="sleep:120@epoch2", **dict(CACHE, monitor="light"), transform_cache="disk")
    cache = os.path.join(run.run_dir, "spill", "transformed.bin")
    try:
        wait_until(lambda: any(e.get("epoch_samples_per_s") for e in store.events(run.run_id)) and
                   os.path.isfile(cache) and os.path.getsize(cache) > 0, timeout=120,
                   what="the first pass and its cache on disk")
    finally:
        run.cancel()
    assert run.wait(60) == RunStatus.CANCELLED
    assert not os.path.exists(os.path.join(run.run_dir, "spill"))
