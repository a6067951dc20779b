"""svmcore.app.parallel (knob importance): which knob mattered in a sweep, one objective at a time (a random
forest's importances, as Optuna's dashboard shows them), from runs kept in the real SQLite
store, compared with ==."""

from __future__ import annotations

from svmcore.app.parallel import Importance, knob_importance
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store


def _sweep(tmp_path, rows):
    store = Store(str(tmp_path))
    for config, status, summary in rows:
        rid = store.create_run(config)
        store.finish_run(rid, status, RunSummary.from_dict(dict(summary, run_id=rid, status=status)))
    return store


def test_the_knob_that_moves_an_objective_is_the_one_that_mattered(tmp_path):
    # the peak follows the mode alone, the batch size moves nothing but the speed; an oom run counts nowhere
    rows = [({"mode": mode, "batch_size": batch, "seed": seed}, RunStatus.COMPLETED,
             {"peak_rss_mb": {"memory": 250.0, "stream": 120.0}[mode], "samples_per_s": 1000.0 * batch,
              "accuracy": 0.75})
            for mode in ("memory", "stream") for batch in (256, 1024, 4096) for seed in (0, 1)]
    rows.append(({"mode": "memory", "batch_size": 65536, "seed": 0}, RunStatus.OOM, {"peak_rss_mb": 300.0}))
    store = _sweep(tmp_path, rows)
    runs = store.list_runs()
    store.close()
    knobs = ["mode", "batch_size", "seed"]
    assert knob_importance(runs, knobs, "peak") == Importance(
        "peak", "exact peak (MiB)", ("mode", "batch_size", "seed"), (1.0, 0.0, 0.0), 12)
    assert knob_importance(runs, knobs, "speed") == Importance(  # a bootstrap sample split once on the seed
        "speed", "samples/s", ("batch_size", "seed", "mode"), (0.9996, 0.0004, 0.0), 12)
    assert knob_importance(runs, knobs, "accuracy") == Importance(
        "accuracy", "accuracy", runs=12, why_none="every run measured the same accuracy")
    assert knob_importance(runs, knobs, "peak") == knob_importance(runs, knobs, "peak")  # the forest's seed is fixed


def test_too_few_runs_or_nothing_varied_says_so(tmp_path):
    store = _sweep(tmp_path, [({"mode": m}, RunStatus.COMPLETED, {"peak_rss_mb": p, "samples_per_s": 1.0,
                                                                   "accuracy": 0.7})
                              for m, p in (("memory", 250.0), ("stream", 120.0))])
    runs = store.list_runs()
    store.close()
    assert knob_importance(runs, ["mode"], "peak").why_none == "2 completed run(s) measured it; at least 4 are needed"
    assert knob_importance(runs * 2, ["batch_size"], "peak").why_none == "no knob took more than one value"
