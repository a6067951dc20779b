"""The figures FTRL and float16 runs add: the model's nonzero weights and sparse size,
and the float16 upcast measured per batch; how Learn reads them from a run's summary."""

import numpy as np
import scipy.sparse as sp

from svmcore.app.remedies import remedy
from svmcore.app.remedy_results import claims_row, compare, lessons, side
from svmcore.data.feeds.memory import InMemory
from svmcore.data.rows import Dense
from svmcore.data.upcast import METER, to_compute
from svmcore.spec.result import RunSummary
from svmcore.spec.units import MiB
from tests.helpers import parts_of

PHASES = [{"name": "imports", "peak_rss_mb": 280.0}, {"name": "train", "peak_rss_mb": 400.0}]


def _summary(**extra) -> RunSummary:
    return RunSummary(status="completed", peak_rss_mb=400.0, peak_phase="train", floor_mb=280.0, samples_per_s=1e5,
                      accuracy=0.8, balanced_accuracy=0.8, train_s=2.0, batches=100, phases=PHASES, **extra)


def test_the_upcast_is_counted_only_for_float16_batches():
    METER.reset()
    out = to_compute(np.ones(10, np.float32), np.float32)
    assert out.dtype == np.float32 and METER.summary() is None
    half = np.ones(1000, np.float16)
    out = to_compute(half, np.float32)
    assert out.dtype == np.float32 and np.array_equal(out, half.astype(np.float32))
    u = METER.summary()
    assert (u["batches"], u["float32_bytes_per_batch"], u["float16_bytes_per_batch"]) == (1, 4000, 2000)
    assert u["seconds_per_batch"] >= 0


def test_float16_batches_in_memory_pass_through_the_meter():
    X = sp.random(100, 50, density=0.2, format="csr", random_state=0)
    for dense in (False, True):
        METER.reset()
        stored = (Dense(X.toarray()) if dense else parts_of(X)).stored(np.float16)
        data = InMemory(stored, np.zeros(100, np.int64), np.float32)
        batches = list(data.batches(30))
        u = METER.summary()
        assert u["batches"] == len(batches) == 4
        nbytes = sum((b.array if dense else b.data).nbytes for b, _ in batches)
        assert u["float32_bytes_total"] == nbytes


def test_learn_shows_the_model_size_and_says_what_ftrl_saves():
    r = remedy("ftrl")
    before = side({"features": 1 << 24, "solver": "native"},
                  _summary(nonzero_weights=800_000, weights=1 << 24, sparse_model_bytes=9_600_032))
    after = side({"features": 1 << 24, "solver": "ftrl"},
                 _summary(nonzero_weights=30_000, weights=1 << 24, sparse_model_bytes=360_032))
    cmp = compare(before, after, r.acts_on)
    assert cmp["model_after"]["sparse_mb"] == 360_032 / MiB and cmp["model_after"]["dense_mb"] == 128.0
    text = " ".join(lessons(r, cmp))
    assert "800,000 → 30,000 nonzero weights" in text and "z and n" in text
    row = claims_row(r, r.experiments[1], {"cmp": cmp, "before": before, "after": after, "source": "reference"})
    assert row["verdict"].startswith("no saving; saved model, sparse: 9.16 MiB → 0.34 MiB")


def test_learn_shows_what_the_float16_upcast_cost_per_batch():
    r = remedy("precision")
    upcast = {"batches": 100, "float32_bytes_per_batch": 409_600.0, "float16_bytes_per_batch": 204_800.0,
              "float32_bytes_max": 409_600, "float32_bytes_total": 40_960_000, "seconds_per_batch": 2e-4,
              "seconds_max": 1e-3, "seconds_total": 0.02}
    cmp = compare(side({}, _summary(train_data_bytes=60 * MiB)),
                  side({"precision": "float16"}, _summary(upcast=upcast, train_data_bytes=30 * MiB)), r.acts_on)
    text = " ".join(lessons(r, cmp))
    assert "the training rows took 60 → 30 MiB (−50%)" in text
    assert "200.0 KiB of half-precision values becoming 400.0 KiB" in text
    assert "200 µs a batch (measured), 1.0% of the 20.00 ms" in text
    assert "tensor cores" in text
    assert not any("Float16" in x for x in lessons(r, compare(side({}, _summary()), side({}, _summary()), r.acts_on)))
