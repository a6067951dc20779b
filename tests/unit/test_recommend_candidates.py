"""svmcore.predict.recommend.candidates: the settings a recommendation chooses from. The
user's config with mode, precision, parser, solver, batch size and hashing varied; each
a valid config, none twice, and only the knobs that apply to the model. Unit level: no
scan, no calibration, no run."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json

import pytest

from svmcore.predict import recommend
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.errors import ConfigError

VARIED = ("mode", "precision", "parser", "solver", "batch_size", "hashing_bits")
PRECISIONS = {"float64", "float32", "float16"}
PARSERS = {"sklearn", "native"}


@functools.cache
def _candidates(base_json: str) -> tuple:
    return tuple(recommend.candidates(json.loads(base_json)))


def candidates(base: dict) -> list:
    """recommend.candidates, computed once per base (it is pure, and the tests only read it)."""
    return list(_candidates(json.dumps(base, sort_keys=True)))


KERNEL_SVM = {"model": "kernel-svm", "rows": 5000, "c": 2.0, "cache_size_mb": 50}
MLP = {"model": "mlp", "hidden": "32,16", "rows": 5000, "shuffle_buffer": 100, "solver": "native"}


def knobs(cands):
    return {tuple(getattr(c, k) for k in VARIED) for c in cands}


def values(cands, knob):
    return {getattr(c, knob) for c in cands}


def test_a_linear_svm_gets_every_combination_of_the_six_knobs():
    cands = candidates({"features": 1_000_000})  # below 2^20: hashing to 2^18 and 2^16 columns
    expected = set(itertools.product(("memory", "memmap", "stream"), PRECISIONS, PARSERS, ("sklearn", "native", "ftrl"),
                                     (256, 1024, 4096), (0, 18, 16)))
    assert knobs(cands) == expected
    assert len(cands) == len(expected) == 3 * 3 * (2 * 3) * 3 * 3


@pytest.mark.parametrize("base", [
    {},
    {"model": "kernel-approx", "approximation": "rff", "n_components": 64},
    MLP,
    KERNEL_SVM,
    {"dataset": "dense", "representation": "dense", "rows": 20_000},
    {"hashing_bits": 18, "batch_size": 256, "epochs": 2},
])
def test_every_candidate_is_a_valid_config_and_none_comes_twice(base):
    cands = candidates(base)
    assert cands
    assert all(isinstance(c, RunConfig) for c in cands)
    assert all(validate(c.to_dict()) == c for c in cands)
    assert len({c.to_json() for c in cands}) == len(cands)


@pytest.mark.parametrize("base", [
    {"seed": 11, "epochs": 3, "alpha": 1e-4, "shuffle": False, "rows": 50_000, "nnz_per_row": 20, "threads": 2,
     "memory_cap_mb": 2048, "cap_kind": "rlimit", "gc_every": 10, "average": False},
    KERNEL_SVM,
    MLP,
])
def test_candidates_change_only_the_six_knobs(base):
    cfg0 = validate(base)
    kept = [f.name for f in dataclasses.fields(RunConfig) if f.name not in VARIED]
    assert {k: {getattr(c, k) for c in candidates(base)} for k in kept} == {k: {getattr(cfg0, k)} for k in kept}


def test_the_user_s_own_setting_is_a_candidate():
    for base in ({}, {"mode": "stream", "precision": "float32", "batch_size": 512, "hashing_bits": 16},
                 KERNEL_SVM, MLP):
        assert validate(base) in candidates(base)


def test_kernel_svm_gets_memory_mode_only_and_keeps_its_solver():
    cands = candidates(KERNEL_SVM)
    assert values(cands, "mode") == {"memory"}
    assert values(cands, "solver") == {"sklearn"}
    assert values(cands, "precision") == PRECISIONS and values(cands, "parser") == PARSERS
    assert values(cands, "batch_size") == {256, 1024, 4096}
    assert len(cands) == 1 * 3 * 2 * 1 * 3 * 3  # hashing: off, 18 and 16 bits (20 bits is no narrower than 2^20)


def test_mlp_gets_every_mode_and_keeps_its_solver():
    cands = candidates(MLP)
    assert values(cands, "mode") == {"memory", "memmap", "stream"}
    assert values(cands, "solver") == {"native"}  # not one of mlp's knobs: the user's is left alone, not varied
    assert len(cands) == 3 * 3 * 2 * 1 * 3 * 3


def test_kernel_approx_varies_the_solver_like_linear_svm():
    cands = candidates({"model": "kernel-approx", "hashing_bits": 16})
    assert values(cands, "solver") == {"sklearn", "native", "ftrl"}
    assert values(cands, "mode") == {"memory", "memmap", "stream"}


def test_batch_sizes_are_the_user_s_256_and_4096_without_repeats():
    # (hashing_bits=16: no hashing variant, a quarter of the candidates, the same batch sizes)
    assert values(candidates({"batch_size": 256, "hashing_bits": 16}), "batch_size") == {256, 4096}
    assert len(candidates({"batch_size": 256, "hashing_bits": 16})) == 3 * 3 * (2 * 3) * 2 * 1
    assert values(candidates({"batch_size": 4096, "hashing_bits": 16}), "batch_size") == {256, 4096}
    assert values(candidates({"batch_size": 100, "hashing_bits": 16}), "batch_size") == {100, 256, 4096}


def test_a_batch_larger_than_the_synthetic_data_is_not_proposed():
    cands = candidates({"rows": 2000, "batch_size": 512, "hashing_bits": 16})
    assert values(cands, "batch_size") == {256, 512}
    assert values(candidates({"model": "kernel-svm", "rows": 2000, "batch_size": 512}), "batch_size") == {256, 512}


def test_hashing_is_offered_only_below_the_width_of_the_data():
    # (on kernel-svm: hashing does not depend on the model, and it has a sixth of the candidates)
    assert values(candidates({**KERNEL_SVM, "features": 300_000}), "hashing_bits") == {0, 18, 16}
    assert values(candidates({**KERNEL_SVM, "features": 100_000}), "hashing_bits") == {0, 16}
    assert values(candidates({**KERNEL_SVM, "features": 50_000}), "hashing_bits") == {0}
    assert values(candidates({"dataset": "dense", "representation": "dense", "rows": 20_000}),
                  "hashing_bits") == {0}


def test_hashing_below_the_user_s_own_bits():
    assert values(candidates({**KERNEL_SVM, "hashing_bits": 18}), "hashing_bits") == {18, 16}
    assert values(candidates({**KERNEL_SVM, "hashing_bits": 16}), "hashing_bits") == {16}
    assert values(candidates({**KERNEL_SVM, "hashing_bits": 22}), "hashing_bits") == {22, 20, 18, 16}


@pytest.mark.parametrize("features", [1 << 20, 1 << 18])
def test_every_hashing_variant_has_fewer_columns_than_the_data(features):
    cands = candidates({**KERNEL_SVM, "features": features})
    assert all((1 << c.hashing_bits) < features for c in cands if c.hashing_bits)


def test_settings_that_are_invalid_in_combination_are_skipped_not_raised():
    # dense float64 in memory: 100,000 x 200 x 8 B = 153 MiB, above the 100 MiB cap; float32 fits
    base = {"dataset": "dense", "representation": "dense", "rows": 100_000, "memory_cap_mb": 100, "mode": "stream"}
    cands = candidates(base)
    assert ("memory", "float64") not in {(c.mode, c.precision) for c in cands}
    assert {(c.mode, c.precision) for c in cands} >= {("memory", "float32"), ("memory", "float16"),
                                                      ("stream", "float64"), ("memmap", "float64")}


def test_an_invalid_base_is_a_config_error_naming_the_knob():
    with pytest.raises(ConfigError) as exc:
        recommend.candidates({"model": "kernel-svm", "mode": "stream", "rows": 3000})
    assert exc.value.knob == "mode"
    with pytest.raises(ConfigError) as exc:
        recommend.candidates({"epochs": 0})
    assert exc.value.knob == "epochs"
    with pytest.raises(ConfigError) as exc:
        recommend.candidates({"rows": 1000})  # the default batch of 1024 is above the data
    assert exc.value.knob == "batch_size"


def test_candidates_come_in_a_stable_order():
    base = KERNEL_SVM
    first, second = recommend.candidates(base), recommend.candidates(base)
    assert [c.to_json() for c in first] == [c.to_json() for c in second]
    assert [(c.precision, c.parser) for c in first[:6]] == [("float64", "sklearn")] * 6  # batch, then hashing


def test_mlp_numpy_candidates_include_gradient_checkpointing():
    from svmcore.predict.recommend import candidates as cands

    ks = {c.checkpoint for c in cands({"model": "mlp-numpy", "hidden": "64,64,64,64,64,64,64,64", "rows": 5000})}
    assert ks == {0, 2, 3}
    assert {c.checkpoint for c in cands({"model": "linear-svm"})} == {0}
