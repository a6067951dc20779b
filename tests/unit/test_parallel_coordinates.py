"""svmcore.app.parallel: a sweep's runs as parallel coordinates, compared with ==,
from runs kept in the real SQLite store."""

from __future__ import annotations

from svmcore.app.parallel import Axis, ParallelInfo, parallel_info
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store


def _runs(tmp_path):
    store = Store(str(tmp_path))
    made = [({"batch_size": 256, "precision": "float64"}, RunStatus.COMPLETED,
             {"peak_rss_mb": 250.0, "samples_per_s": 1000.0, "accuracy": 0.75}),
            ({"batch_size": 4096, "precision": "float32"}, RunStatus.COMPLETED,
             {"peak_rss_mb": 180.5, "samples_per_s": 3000.0, "accuracy": 0.74}),
            ({"batch_size": 65536, "precision": "float32"}, RunStatus.OOM, {"peak_rss_mb": 150.2}),
            ({"batch_size": 1024, "precision": "float64"}, RunStatus.COMPLETED,
             {"peak_rss_mb": 200.0, "samples_per_s": 2000.0})]
    for config, status, summary in made:
        rid = store.create_run(config)
        store.finish_run(rid, status, RunSummary.from_dict(dict(summary, run_id=rid, status=status)))
    return store


def test_knobs_then_results_one_line_per_completed_run(tmp_path):
    store = _runs(tmp_path)
    info = parallel_info(store.list_runs(), ["batch_size", "precision"])
    store.close()
    assert info == ParallelInfo(
        dimensions=[
            Axis("batch_size", [256.0, 4096.0], [256.0, 4096.0], ["256", "4,096"]),
            Axis("precision", [1, 0], [0, 1], ["float32", "float64"]),
            Axis("exact peak (MiB)", [250.0, 180.5], [181.0, 198.0, 215.0, 233.0, 250.0],
                 ["181", "198", "215", "233", "250"]),
            Axis("samples/s", [1000.0, 3000.0], [1000.0, 1500.0, 2000.0, 2500.0, 3000.0],
                 ["1,000", "1,500", "2,000", "2,500", "3,000"]),
            Axis("accuracy", [0.75, 0.74], [0.74, 0.742, 0.745, 0.748, 0.75],
                 ["0.740", "0.742", "0.745", "0.748", "0.750"])],
        runs=[1, 2], colour=[250.0, 180.5], left_out=[(3, "oom"), (4, "no accuracy")])


def test_nothing_completed_draws_nothing(tmp_path):
    store = Store(str(tmp_path))
    rid = store.create_run({"batch_size": 256})
    store.finish_run(rid, RunStatus.OOM, RunSummary(rid, RunStatus.OOM, 99.0))
    assert parallel_info(store.list_runs(), ["batch_size"]) == ParallelInfo([], [], [], [(1, "oom")])
    store.close()


def test_accuracy_ticks_a_thousandth_apart_are_told_apart():
    """Issue 43: the accuracy axis read "0.771, 0.771, 0.770 ..." (three decimals, always)."""
    from svmcore.app.parallel import distinct_ticks

    vals, texts = distinct_ticks([0.7702, 0.7712, 0.7705])
    assert texts == ["0.7702", "0.7704", "0.7707", "0.7710", "0.7712"] and vals == [float(t) for t in texts]
    assert distinct_ticks([0.5, 0.9]) == ([0.5, 0.6, 0.7, 0.8, 0.9], ["0.5", "0.6", "0.7", "0.8", "0.9"])
    assert distinct_ticks([250.0]) == ([250.0], ["250"])


def test_every_tick_stays_inside_its_axis():
    """A tick rounded past the axis's end (178.5 on an axis up to 178.45) ran into its title."""
    from svmcore.app.parallel import distinct_ticks

    vals, texts = distinct_ticks([178.13, 178.45])
    assert 178.13 <= min(vals) and max(vals) <= 178.45 and len(set(texts)) == 5, (vals, texts)


def test_brushing_an_axis_keeps_the_runs_inside_its_ranges(tmp_path):
    """Issue 43: brushing the parallel-coordinates axes filters the run table (as Optuna's dashboard)."""
    from svmcore.app.parallel import brushed

    store = _runs(tmp_path)
    info = parallel_info(store.list_runs(), ["batch_size", "precision"])
    store.close()
    assert brushed(info, {}) == [1, 2]
    assert brushed(info, {2: [200.0, 260.0]}) == [1]  # exact peak 250 in, 180.5 out
    assert brushed(info, {1: [-0.5, 0.5]}) == [2]  # the text axis: float32 is tick 0
    assert brushed(info, {2: [[100.0, 190.0], [240.0, 260.0]]}) == [1, 2]  # two ranges on one axis
    assert brushed(info, {2: [200.0, 260.0], 4: [0.745, 0.76]}) == [1]
    assert brushed(info, {2: [300.0, 400.0]}) == []
