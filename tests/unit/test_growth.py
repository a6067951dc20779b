"""Growth per pass: the estimator on synthetic sequences, the per-pass record as the store
keeps and reads it (old summaries without it: not recorded), and the engine's reading of the
worker's pass_end events."""

from __future__ import annotations

import pytest

from svmcore.engine.summary import pass_memory
from svmcore.spec.growth import GROWTH_NOISE_MB, growth_of
from svmcore.spec.result import PassMemory, RunSummary

MiB = 2**20


def test_a_steady_leak_grows_by_the_median_of_its_differences_with_their_range():
    g = growth_of([141.0, 143.0, 145.2, 147.0, 149.0])
    assert g.per_pass_mb == pytest.approx(2.0, abs=0.01) and g.lo_mb == pytest.approx(1.8)
    assert g.hi_mb == pytest.approx(2.2) and g.grows
    assert g.text() == ("retained after each pass: 141, 143, 145, 147, 149 MiB (anonymous memory, exact readings); "
                        "+2.0 MiB a pass (1.8 to 2.2): it grows pass after pass")


def test_one_outlying_pass_moves_the_range_not_the_median():
    g = growth_of([100.0, 112.0, 114.0, 116.0, 118.0])  # a one-time step in pass 2
    assert g.per_pass_mb == pytest.approx(2.0) and g.hi_mb == pytest.approx(12.0) and g.grows


def test_a_run_that_keeps_nothing_is_within_noise():
    g = growth_of([118.3, 118.3, 118.5, 118.31, 118.32])
    assert not g.grows and g.per_pass_mb < GROWTH_NOISE_MB
    assert g.text().endswith("within noise (a run that keeps nothing varies by up to 1 MiB)")
    step = growth_of([112.6, 118.3, 118.3, 118.31, 118.32])  # memmap: pages of its file's index kept in pass 2
    assert not step.grows and step.per_pass_mb < GROWTH_NOISE_MB


def test_growth_that_stops_before_the_last_pass_is_a_one_time_build_not_growth():
    # a data-parallel run: 80 and 33 MiB over its first passes, then nothing
    g = growth_of([566.2, 645.8, 678.5, 678.6])
    assert not g.grows and g.text().endswith(": no growth pass after pass (it rose or fell in some passes only)")


def test_one_pass_says_growth_is_not_measurable_and_three_are_not_judged():
    one = growth_of([161.5])
    assert one.per_pass_mb is None and not one.grows
    assert one.text().endswith("; one pass: growth is not measurable")
    three = growth_of([120.0, 128.0, 136.0])
    assert three.per_pass_mb == pytest.approx(8.0) and not three.judged and not three.grows
    assert "3 passes: 4 are needed to tell growth from what a run builds once" in three.text()
    assert growth_of([]).text() == "retained after each pass: no pass ended"


def test_the_pass_that_meets_a_limit():
    g = growth_of([120.0, 128.0, 136.0, 144.0])  # peak 201 in pass 4, +8 a pass
    assert g.reaching(220.0, 201.0) == 7  # 201 + 8 * 3 = 225
    assert g.reaching(201.0, 201.0) == 4 and g.reaching(150.0, 201.0) == 1
    assert growth_of([120.0, 120.1, 120.0, 120.2]).reaching(220.0, 201.0) is None


def test_the_per_pass_record_is_stored_and_read_back_and_absent_means_not_recorded():
    passes = [{"epoch": 1, "rss_mb": 160.0, "anon_mb": 120.0},
              {"epoch": 2, "rss_mb": 170.0, "anon_mb": 130.0, "workers_anon_mb": [10.0, 11.0]}]
    s = RunSummary.from_dict({"peak_rss_mb": 200.0, "passes": passes})
    assert s.passes[1] == PassMemory(2, 170.0, 130.0, None, (), (10.0, 11.0))
    assert s.passes[1].all_anon_mb == 151.0 and s.passes[0].heap_mb is None
    d = s.to_dict()
    assert d["growth_per_pass"]["retained_anon_mb"] == [120.0, 151.0]
    back = RunSummary.from_dict(d)
    assert back == s and "growth_per_pass" not in back.extra
    old = RunSummary.from_dict({"peak_rss_mb": 200.0})  # a summary written before runs recorded it
    assert old.passes is None and old.growth is None and "growth_per_pass" not in old.to_dict()


def _ev(kind, **f):
    return {"kind": kind, "t_s": 0.0, **f}


def test_the_engine_reads_the_train_phases_pass_ends_only():
    events = [_ev("phase_start", phase="train", rss_bytes=0),
              _ev("pass_end", epoch=1, rss_bytes=160 * MiB, anon_bytes=120 * MiB),
              _ev("pass_end", epoch=2, rss_bytes=161 * MiB, anon_bytes=121 * MiB,
                  workers_rss_bytes=[200 * MiB], workers_anon_bytes=[150 * MiB]),
              _ev("phase_start", phase="distill", rss_bytes=0),  # a student's passes are not the run's
              _ev("pass_end", epoch=1, rss_bytes=190 * MiB, anon_bytes=150 * MiB)]
    got = pass_memory(events)
    assert [p.epoch for p in got] == [1, 2] and got[1].workers_rss_mb == (200.0,) and got[1].anon_mb == 121.0
    assert pass_memory([]) == ()


def test_the_memory_chart_marks_what_each_training_pass_retained():
    from ui.charts import pass_marks

    events = [_ev("phase_start", phase="train", rss_bytes=0) | {"t_s": 1.0},
              _ev("progress", samples=0, batches=0, epoch=1, epochs=2, total=200, train_elapsed_s=0.0) | {"t_s": 1.0},
              _ev("pass_end", epoch=1, rss_bytes=160 * MiB, anon_bytes=120 * MiB) | {"t_s": 2.0},
              _ev("progress", samples=200, batches=2, epoch=2, epochs=2, total=200, train_elapsed_s=2.0) | {"t_s": 3.0},
              _ev("pass_end", epoch=2, rss_bytes=168 * MiB, anon_bytes=128 * MiB) | {"t_s": 3.0}]
    assert pass_marks(events) == ([2.0, 3.0], [120.0, 128.0])
    assert pass_marks(events, "samples") == ([100.0, 200.0], [120.0, 128.0])
