"""Data-parallel training (workers > 1): the mixing math, the shards, the knobs' checks."""

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.spec.config import validate
from svmcore.spec.errors import ConfigError
from svmcore.worker import parallel
from tests.helpers import parts_of


def test_mix_is_the_row_weighted_mean_of_weights_and_steps():
    a = {"coef_": np.array([[1.0, 2.0]]), "intercept_": np.array([0.5]), "t_": 11.0}
    b = {"coef_": np.array([[3.0, 6.0]]), "intercept_": np.array([-0.5]), "t_": 31.0}
    out = parallel.mix([a, b], [10, 30], start_t=1.0)
    np.testing.assert_allclose(out["coef_"], [[2.5, 5.0]])
    np.testing.assert_allclose(out["intercept_"], [-0.25])
    assert out["t_"] == 1.0 + (10 * 10 + 30 * 30) / 40  # the steps' weighted mean too


def test_mix_of_equal_states_is_that_state_and_keeps_the_dtype():
    s = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "t_": 5.0}
    out = parallel.mix([s, dict(s), dict(s)], [1, 1, 1], start_t=5.0)
    assert out["w"].dtype == np.float32
    np.testing.assert_array_equal(out["w"], s["w"])
    assert out["t_"] == 5.0


@pytest.mark.parametrize("bad", [([], []), ([{"t_": 1.0}], [0])])
def test_mix_refuses_no_states_or_no_weight(bad):
    with pytest.raises(ValueError):
        parallel.mix(*bad, start_t=1.0)


def _data(n=400, d=20, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, random_state=seed, format="csr")
    y = np.where(X @ rng.normal(size=d) > 0, 1, -1)
    return X, y


def test_sklearn_state_round_trips_and_mixing_two_copies_of_a_model_changes_nothing():
    from svmcore.worker.sklearn_sgd import SklearnSGD

    X, y = _data()
    m = SklearnSGD(1e-4, True, X.shape[1], [-1, 1]).partial_fit(X, y)
    before = m.decision_function(X)
    state = m.get_state()
    assert {"coef_", "intercept_", "_average_coef", "_standard_coef", "t_"} <= set(state)
    m.set_state(parallel.mix([state, state], [1, 1], start_t=state["t_"]))
    np.testing.assert_allclose(m.decision_function(X), before)


def test_compiled_state_folds_the_scale_and_keeps_the_predictions():
    from svmcore.worker.native_sgd import NativeSGD

    X, y = _data()
    m = NativeSGD(1e-3, True, X.shape[1], [-1, 1]).partial_fit(X, y)
    before = m.decision_function(X)
    state = m.get_state()
    assert state["state"][0, 0] == 1.0  # the lazy weight scale is folded into w
    m.set_state(parallel.mix([state, state], [3, 1], start_t=state["t_"]))
    np.testing.assert_allclose(m.decision_function(X), before, rtol=1e-10, atol=1e-12)


def test_shards_stripe_the_rows_and_hold_them_all(tmp_path):
    X, y = _data(n=103)
    codes = np.searchsorted([-1, 1], y)
    chunks = [(parts_of(X[s:s + 17]), codes[s:s + 17]) for s in range(0, 103, 17)]
    shards = parallel.write_shards(iter(chunks), 3, str(tmp_path), np.float32)
    assert [s.rows for s in shards] == [35, 34, 34]
    for k, s in enumerate(shards):
        (Xs, cs), = list(s.read(1000))
        np.testing.assert_array_equal(cs, codes[k::3])
        np.testing.assert_allclose(Xs.csr(X.shape[1]).toarray(), X[k::3].toarray().astype(np.float32))


def test_total_peak_sums_series_at_each_instant():
    a = ([0.0, 1.0, 2.0], [10, 50, 10])
    b = ([0.5, 1.5], [5, 7])
    assert parallel.total_peak([a, b], step_s=0.25) == 50 + 7  # at t=1.5: a held at 50, b read 7
    assert parallel.total_peak([]) == 0


@pytest.mark.parametrize("values,knob,words", [
    (dict(workers=2, model="kernel-svm", rows=2000), "workers", "kernel-svm"),
    (dict(workers=2, model="mlp"), "workers", "mlp"),
    (dict(workers=2, mode="memmap"), "workers", "mode=stream"),
    (dict(workers=2, solver="ftrl"), "workers", "FTRL"),
    (dict(workers=2, mode="stream", solver="native"), "workers", "native solver"),
    (dict(workers=2, model="mlp-numpy"), "workers", "mlp-numpy"),
    (dict(workers=4, rows=2000, batch_size=1024), "workers", "less than one batch"),
    (dict(scheduler="tcp://127.0.0.1:8786"), "scheduler", "workers to 2"),
    (dict(workers=2, scheduler="not an address"), "scheduler", "not a Dask scheduler address"),
    (dict(workers=2, scheduler="inproc://x"), "scheduler", "inproc:// is not supported"),
    (dict(workers=2, scheduler="ucx://h:8786"), "scheduler", "ucx:// is not supported"),
    (dict(workers=2, scheduler="ws://h:8786"), "scheduler", "ws:// is not supported"),
    (dict(workers=2, scheduler="tls://h:8786"), "scheduler", "tls:// is not supported"),
    (dict(workers=2, scheduler="tcp://h:99999"), "scheduler", "port '99999' of 'tcp://h:99999' is not a port number"),
    (dict(workers=2, scheduler="tcp://h:"), "scheduler", "'tcp://h:' has no port"),
    (dict(workers=2, scheduler="tcp://:8786"), "scheduler", "no valid host name"),
    (dict(workers=2, scheduler="tcp://h:" + "9" * 1000), "scheduler", "(1,008 characters)"),
    (dict(workers=0), "workers", "out of range"),
])
def test_combinations_that_cannot_work_are_refused_before_launch(values, knob, words):
    with pytest.raises(ConfigError) as info:
        validate(values)
    assert info.value.knob == knob and words in str(info.value)


def test_workers_one_is_the_single_process_run():
    cfg = validate({})
    assert cfg.workers == 1 and cfg.scheduler is None
    assert validate(workers=2, scheduler="tcp://10.0.0.5:8786", mode="stream").workers == 2
    assert validate(workers=2, scheduler="10.0.0.5:8786").scheduler == "10.0.0.5:8786"  # Dask reads it as tcp
    assert validate(workers=2, scheduler="tcp://[::1]:8786").workers == 2


def test_a_single_process_run_never_imports_dask():
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = ("import sys, json; import svmcore.worker.main, svmcore.worker.training; "
            "print(json.dumps([m for m in ('dask', 'distributed') if m in sys.modules]))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), check=True)
    assert json.loads(proc.stdout) == []


def test_a_budget_holds_every_process_of_a_local_data_parallel_run():
    from svmcore.predict.recommend import _budgeted
    from svmcore.spec.result import Forecast, ParallelForecast

    pred = Forecast(200.0, parallel=ParallelForecast(2, 250.0, {}, 200.0, 700.0, ""))
    assert _budgeted(validate(workers=2), pred)["predicted_peak_mb"] == 700.0
    assert _budgeted(validate(workers=2, scheduler="tcp://h:8786"), pred)["predicted_peak_mb"] == 250.0
    assert _budgeted(validate({}), Forecast(200.0)) == Forecast(200.0).to_dict()


def test_a_dask_call_that_waits_on_a_gone_worker_ends_as_that_workers_loss():
    # a broadcast scatter under way when a worker was killed waited 30 s a try on its address: the call
    # is watched, and the worker's loss ends it within a watch period of showing as gone
    import threading
    import time

    from svmcore.worker.parallel import WATCH_S, Cluster, WorkerLost

    cluster = Cluster.__new__(Cluster)  # no Dask: the watch alone
    cluster.local, cluster.workers, cluster.pids = False, ["tcp://a:1", "tcp://b:2"], {"tcp://b:2": 42}
    left = time.monotonic() + 0.5
    cluster._gone_now = lambda: 1 if time.monotonic() > left else None
    never = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(WorkerLost) as err:
        cluster.guarded(lambda k: f"while the model was sent (worker {k})", never.wait)
    assert time.monotonic() - t0 < 0.5 + 3 * WATCH_S
    assert "Dask worker 2 (tcp://b:2, pid 42) left the cluster while the model was sent (worker 1)" in str(err.value)


def test_a_watched_dask_call_returns_its_value_or_raises_its_own_error():
    from svmcore.worker.parallel import Cluster

    cluster = Cluster.__new__(Cluster)
    cluster.local, cluster.workers, cluster.pids = False, ["tcp://a:1"], {}
    cluster._gone_now = lambda: None
    assert cluster.guarded(lambda k: "", lambda: 7) == 7
    with pytest.raises(ValueError, match="its own"):
        cluster.guarded(lambda k: "", lambda: (_ for _ in ()).throw(ValueError("its own")))
