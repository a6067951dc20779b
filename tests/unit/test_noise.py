"""svmcore.app.noise: the one definition of "within run-to-run noise", compared with ==."""

from __future__ import annotations

import pytest

from svmcore.app import headlines, remedy_results
from svmcore.app.noise import (DEFAULT_NOISE, NO_SAVING_PCT, Noise, Spread, measured_noise, peak_within,
                               repeat_groups, spread, within)


def test_one_definition_for_every_verdict():
    """The remedy verdicts and the story's advice read the same threshold (issue 43: unify,
    no twin of NO_SAVING_PCT)."""
    assert remedy_results.NO_SAVING_PCT is NO_SAVING_PCT and headlines.peak_within is peak_within
    assert DEFAULT_NOISE == Noise(5.0, 1.7, 1.5, "measured on this kind of machine")
    assert peak_within(-4.9) and not peak_within(-5.0) and not peak_within(None)


def test_which_deltas_are_within_the_noise():
    d = {"peak_pct": -3.0, "speed_ratio": 1 / 1.1, "accuracy": -0.006, "balanced_accuracy": 0.02}
    assert within(d) == {"peak_pct": True, "speed_ratio": True, "accuracy": True, "balanced_accuracy": False}
    assert within({"peak_pct": None, "speed_ratio": None, "accuracy": None, "balanced_accuracy": None}) == {
        "peak_pct": False, "speed_ratio": False, "accuracy": False, "balanced_accuracy": False}
    assert not within({"speed_ratio": 2.8})["speed_ratio"]


def test_repeats_are_runs_alike_in_every_knob_but_the_seed():
    configs = {5: {"mode": "memory", "seed": 0}, 6: {"mode": "memory", "seed": 1}, 7: {"mode": "stream", "seed": 0},
               9: {"mode": "memory", "seed": 2}, 8: {"mode": "stream", "seed": 0}}
    assert repeat_groups(configs) == [[5, 6, 9], [7, 8]]
    assert repeat_groups({1: {"seed": 0}}) == []


def test_the_spread_of_repeats_widens_the_noise_they_are_judged_by():
    peaks = spread([1, 2, 3], [240.0, 246.9, None])
    assert peaks == Spread((1, 2), 243.45, 240.0, 246.9)
    assert spread([1, 2], [240.0, None]) is None
    wide = measured_noise([peaks], [spread([1, 2], [55_000.0, 110_000.0])], [spread([1, 2], [0.79, 0.80])])
    assert wide == Noise(5.0, 2.0, 1.5, "measured on the repeats compared here")  # speeds 2x apart
    assert measured_noise([None], [None], [None]) == DEFAULT_NOISE


def test_a_repeat_at_either_end_of_its_own_spread_is_within_it():
    """CI, 12-06: a repeat scored +0.027 and ran 3.2x slower than its setting's first run;
    the two were the lowest and highest of the group, so the delta *was* the measured spread
    and a strict '<' called it beyond the noise. Every pair of repeats is within their noise,
    and the peak's noise is the widest pairwise change (highest over lowest), not the range
    over the mean."""
    runs, peaks, speeds, accs = [1, 2, 3], [38.0, 40.5, 39.0], [30_000.0, 9_375.0, 20_000.0], [0.770, 0.797, 0.781]
    noise = measured_noise([spread(runs, peaks)], [spread(runs, speeds)], [spread(runs, accs)])
    assert noise.measured and noise.accuracy_pts == pytest.approx(2.7) and noise.speed_ratio == pytest.approx(3.2)
    for i in range(3):
        for j in range(3):
            d = {"peak_pct": (peaks[j] / peaks[i] - 1) * 100, "speed_ratio": speeds[j] / speeds[i],
                 "accuracy": accs[j] - accs[i], "balanced_accuracy": accs[j] - accs[i]}
            assert all(within(d, noise).values()), (i, j, within(d, noise))
    assert not within({"accuracy": 0.028}, noise)["accuracy"]
    assert not DEFAULT_NOISE.measured and not peak_within(-5.0)  # the default threshold stays strict
