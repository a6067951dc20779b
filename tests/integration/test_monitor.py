"""The monitor knob: what the worker reports while it trains, and that the final
scores come whatever it is."""

import pytest

from svmcore.spec.config import validate
from svmcore.spec.errors import ConfigError
from svmcore.spec.status import RunStatus
from tests.helpers import _run


def _kinds(store, run):
    return [e["kind"] for e in store.events(run.run_id)]


@pytest.mark.parametrize("monitor", ["full", "light", "off"])
def test_monitor_levels(store, monitor):
    run = _run(store, monitor=monitor)
    assert run.wait(120) == RunStatus.COMPLETED, run.summary
    s = run.summary
    events = store.events(run.run_id)
    evals = [e for e in events if e["kind"] == "eval"]
    progress = [e for e in events if e["kind"] == "progress"]
    live = [e for e in evals if not e.get("final")]
    assert [e for e in evals if e.get("final")], "the final evaluation always runs"
    assert 0.6 < s.accuracy <= 1.0
    assert s.samples_seen == 2 * s.train_rows  # from the worker's result, not from progress events
    assert s.monitor == monitor
    if monitor == "full":
        assert live and progress
    elif monitor == "light":
        assert not live and progress
    else:
        assert not live and not progress


def test_monitor_off_mlp_numpy_with_checkpointing(store):
    run = _run(store, model="mlp-numpy", hidden="16,16,16,16", checkpoint=2, hashing_bits=12, monitor="off")
    assert run.wait(120) == RunStatus.COMPLETED, run.summary
    assert run.summary.accuracy > 0.5
    assert run.summary.recomputed_layers > 0
    assert "eval" in _kinds(store, run) and "progress" not in _kinds(store, run)


def test_monitor_and_checkpoint_validation():
    with pytest.raises(ConfigError, match="monitor"):
        validate(monitor="quiet")
    with pytest.raises(ConfigError, match="checkpoint"):
        validate(model="mlp-numpy", checkpoint=-1)
    with pytest.raises(ConfigError, match="checkpoint"):
        validate(model="mlp-numpy", checkpoint=9)
    assert validate(model="mlp-numpy", checkpoint=3).checkpoint == 3


def test_the_parents_sampling_rate_does_not_move_the_workers_exact_peak(store):
    """The sampler reads /proc from the parent: 4 or 200 samples a second, the worker's
    VmHWM is its own."""
    from svmcore.engine.runner import Run

    peaks, counts = [], []
    for hz in (4, 200):
        run = Run(store, validate({"rows": 20_000, "features": 1 << 16, "nnz_per_row": 30, "epochs": 2}),
                  sample_hz=hz).start()
        assert run.wait(120) == RunStatus.COMPLETED, run.summary
        peaks.append(run.summary.peak_rss_mb)
        counts.append(run.summary.n_samples)
    assert counts[1] > 10 * counts[0]
    assert abs(peaks[0] - peaks[1]) <= max(3.0, 0.02 * peaks[0]), peaks
