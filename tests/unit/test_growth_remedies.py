"""The accumulation causes in the memory model, doctor and fit (no process): what they keep is
priced from the config and the data's shape; a run that keeps a growing cache or a history
gets the remedy that stops the growth first, and fit takes it before the others."""

from __future__ import annotations

import time

import pytest

from svmcore.app.doctor import diagnose, text
from svmcore.app.fit import fit
from svmcore.predict.model import GC_FIRST_GENERATION, Shape, kept_bytes, predict
from svmcore.spec.config import validate
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.spec.units import MiB
from svmcore.store.records import RunRecord

SHAPE = Shape(rows=10_000, train_rows=8_000, test_rows=2_000, width=1 << 16, nnz_per_row=40.0, classes=2,
              dense_source=False)
CACHED = dict(model="kernel-approx", mode="stream", rows=30_000, epochs=3, transform_cache="memory")


def test_a_cache_in_memory_is_every_training_rows_components_and_class_code():
    for precision, value_bytes in (("float64", 8), ("float32", 4)):
        cache, history = kept_bytes(validate(CACHED, n_components=100, precision=precision), SHAPE)
        assert (cache, history) == (8_000 * (100 * value_bytes + 4), 0.0)
    assert kept_bytes(validate(CACHED, transform_cache="disk"), SHAPE) == (0.0, 0.0)  # one batch read at a time


def test_a_history_is_a_copy_of_every_batch_of_every_pass_or_of_those_between_two_collections():
    steps = -(-8_000 // 1_000)
    per_batch = 1_000 * (40 * 12 + 8 + 4) + 8  # CSR in float64 (value, column id, row start) and a class code
    refs = validate(history="refs", batch_size=1_000, epochs=3)
    assert kept_bytes(refs, SHAPE) == (0.0, pytest.approx(3 * steps * per_batch))
    assert kept_bytes(validate(refs.to_dict(), gc_every=10), SHAPE)[1] == kept_bytes(refs, SHAPE)[1]  # gc frees none
    cycles = validate(refs.to_dict(), history="cycles", gc_every=5)
    assert kept_bytes(cycles, SHAPE)[1] == pytest.approx(5 * per_batch)
    many = validate(refs.to_dict(), history="cycles", batch_size=1, epochs=1)  # 8,000 batches, uncollected
    assert kept_bytes(many, SHAPE)[1] == pytest.approx(GC_FIRST_GENERATION * (40 * 12 + 8 + 4 + 8))


def test_the_forecast_holds_what_is_kept_in_the_train_phase():
    refs = validate(history="refs", batch_size=1_000, epochs=3)
    with_history, without = predict(refs, None, SHAPE), predict(validate(refs.to_dict(), history="none"), None, SHAPE)
    kept_mb = kept_bytes(refs, SHAPE)[1] / MiB
    assert with_history.phase_parts["train"]["kept"] == pytest.approx(kept_mb, abs=0.1)
    assert with_history.phases_mb["train"] - without.phases_mb["train"] == pytest.approx(kept_mb, abs=0.2)


def _record(config: dict, phases: dict, run_id: int = 7) -> RunRecord:
    spans = [{"name": n, "start_s": 0.0, "end_s": 1.0, "wall_s": 1.0, "peak_rss_mb": v} for n, v in phases.items()]
    s = {"status": "completed", "phases": spans, "peak_rss_mb": max(phases.values()),
         "peak_phase": max(phases, key=phases.get), "floor_mb": phases["imports"], "accuracy": 0.9,
         "samples_per_s": 1000.0}
    return RunRecord(run_id, time.time(), time.time(), RunStatus.COMPLETED, validate(config).to_dict(),
                     RunSummary.from_dict(s), None, None, None, None, None, None, None, None)


def test_doctor_ranks_the_remedy_that_stops_a_cache_growing_first():
    # float32 values would fit too, at no cost: the cache's move to disk comes first all the same
    d = diagnose(_record(CACHED, {"imports": 128.0, "load": 137.0, "train": 193.0}), 188, None, None)
    first = d["remedies"][0]
    assert (first["remedy"], first["change"], first["stops_growth"]) == ("cache", {"transform_cache": "disk"}, True)
    assert "precision" in [r["remedy"] for r in d["remedies"][1:]]
    line = next(line for line in text(d).splitlines() if line.startswith("  1. "))
    assert line.startswith("  1. No growing cache of transformed rows: transform cache disk") and "[stops growth]" in line
    history = diagnose(_record(dict(rows=20_000, epochs=3, history="refs"),
                               {"imports": 128.0, "load": 152.0, "train": 182.0}), 177, None, None)
    assert history["remedies"][0]["remedy"] == "history"


def test_fit_turns_the_growing_cache_off_before_anything_else():
    launched = []

    def launch(cfg, parent, change):
        launched.append((cfg, change))
        return _record(cfg.to_dict(), {"imports": 128.0, "load": 137.0, "train": 150.0}, run_id=len(launched))

    out = fit(CACHED, 188, launch, None, None)
    assert out["fits"], out
    [(cfg, change)] = launched
    assert [c["remedy"] for c in change["changes"]] == ["cache"], change
    assert cfg.transform_cache == "disk" and cfg.mode == "stream" and cfg.precision == "float64"


def test_what_a_run_kept_is_said_with_its_exact_bytes():
    from svmcore.cli.run import describe

    kept = {"cache": "disk", "cache_rows": 24_000, "cache_bytes": 49_248_000, "history": "cycles",
            "history_batches": 395, "history_bytes": 227 * MiB, "history_most_held_batches": 131,
            "history_most_held_bytes": 72 * MiB}
    text_ = describe(RunSummary.from_dict({"run_id": 3, "status": "completed", "kept": kept}))
    assert ("kept while training: cache of transformed rows (disk): 24,000 rows, 46.97 MiB, written to disk, read "
            "back a batch at a time, deleted when training ended (its arrays, exact)") in text_, text_
    assert "history of batch copies (cycles): 395 batches, 227.00 MiB in all; at most 131 (72.00 MiB) alive" in text_
    assert "kept" not in describe(RunSummary.from_dict({"run_id": 4, "status": "completed"}))
