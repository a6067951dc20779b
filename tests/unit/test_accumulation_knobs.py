"""The two accumulation knobs (transform_cache, history): what validation refuses, and why."""

from __future__ import annotations

import pytest

from svmcore.spec.config import validate
from svmcore.spec.errors import ConfigError


def test_both_are_off_by_default():
    cfg = validate()
    assert (cfg.transform_cache, cfg.history) == ("none", "none")
    assert not cfg.accumulates


@pytest.mark.parametrize("values,why", [
    ({"model": "linear-svm", "mode": "stream"}, "linear-svm has no transform to cache"),
    ({"model": "mlp", "mode": "stream", "hashing_bits": 12}, "Feature hashing is applied as rows are read"),
    ({"model": "kernel-approx", "mode": "memory"}, "memory mode transforms every training row once"),
    ({"model": "kernel-approx", "mode": "stream", "workers": 2}, "use workers=1"),
])
@pytest.mark.parametrize("cache", ["memory", "disk"])
def test_the_cache_is_refused_where_there_is_no_transform_in_later_passes(values, why, cache):
    with pytest.raises(ConfigError, match=f"^transform_cache: .*{why}") as info:
        validate(values, transform_cache=cache)
    assert info.value.fix == {"transform_cache": "none"}


@pytest.mark.parametrize("mode", ["stream", "memmap"])
def test_the_cache_is_accepted_where_each_pass_transforms(mode):
    cfg = validate(model="kernel-approx", mode=mode, transform_cache="disk")
    assert cfg.accumulates.cache and not cfg.accumulates.history


def test_a_distilled_run_in_memory_transforms_every_pass_and_may_cache():
    assert validate(model="kernel-approx", distill=True, transform_cache="memory").accumulates


@pytest.mark.parametrize("values,why", [
    ({"model": "kernel-svm", "rows": 1000, "batch_size": 100}, "kernel-svm trains once on all rows"),
    ({"workers": 2}, "use workers=1"),
])
def test_the_history_needs_batches_in_the_runs_own_process(values, why):
    with pytest.raises(ConfigError, match=f"^history: .*{why}"):
        validate(values, history="refs")


def test_an_unknown_history_names_the_choices():
    with pytest.raises(ConfigError, match="^history: 'all' is not one of: none, refs, cycles"):
        validate(history="all")
