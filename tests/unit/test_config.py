"""The knob registry (svmcore.knobs) and svmcore.spec.config.validate."""

from __future__ import annotations

import dataclasses
import math
import re
import typing

import pytest

from svmcore.engine import limits
from svmcore.spec.choices import BY_KNOB, Mode
from svmcore.spec.config import DEFAULT_FEATURES, RunConfig, validate
from svmcore.spec.errors import ConfigError
from svmcore.spec.knobs import (
    BUILTIN_DATASETS,
    KNOBS,
    MAX_FEATURES,
    MAX_KERNEL_SVM_ROWS,
    defaults,
)

KNOB_NAMES = sorted(KNOBS)
FIELDS = {f.name: f for f in dataclasses.fields(RunConfig)}
HINTS = typing.get_type_hints(RunConfig)

# Other knobs a boundary value needs so that no *combination* rule fires.
BOUNDARY_CONTEXT = {
    "rows": {"batch_size": 1},
    "features": {"nnz_per_row": 1},
    "batch_size": {"rows": 100_000_000},
}


def knob_error(name: str) -> str:
    """A pytest.raises(match=...) pattern: the message starts with the knob's name."""
    return rf"^{re.escape(name)}: "


@pytest.fixture(autouse=True)
def _no_cgroup_probe(monkeypatch):
    """validate() probes /sys/fs/cgroup for cap_kind=cgroup; never touch the host from unit tests."""
    monkeypatch.setattr(limits, "cgroup_available", lambda: False)


# ---------------------------------------------------------------- the registry

def test_knobs_and_runconfig_fields_are_the_same_set():
    assert set(KNOBS) == set(FIELDS)


@pytest.mark.parametrize("name", KNOB_NAMES)
def test_every_knob_is_a_runconfig_field_with_the_same_default_and_type(name):
    k = KNOBS[name]
    assert k.name == name
    assert FIELDS[name].default == k.default
    hint = HINTS[name]
    if k.optional:
        assert set(typing.get_args(hint)) == {k.type, type(None)}
    elif name in BY_KNOB:  # a choice knob's field holds its enumeration's member, which is its text
        assert hint is BY_KNOB[name] and issubclass(hint, k.type)
    else:
        assert hint is k.type


@pytest.mark.parametrize("name", KNOB_NAMES)
def test_every_knob_is_self_consistent(name):
    k = KNOBS[name]
    assert k.help and k.trades
    assert k.flag == "--" + name.replace("_", "-")
    if k.default is None:
        assert k.optional
    else:
        assert isinstance(k.default, k.type)
    if k.choices:
        assert k.default in k.choices
        assert all(isinstance(c, k.type) for c in k.choices)
    if k.min is not None and k.default is not None:
        assert k.min <= k.default
    if k.max is not None and k.default is not None:
        assert k.default <= k.max
    if k.min is not None and k.max is not None:
        assert k.min < k.max


def test_defaults_returns_every_knob_default():
    assert defaults() == {n: k.default for n, k in KNOBS.items()}


def test_defaults_validate():
    cfg = validate()
    assert isinstance(cfg, RunConfig)
    for name in KNOB_NAMES:
        if name == "features":
            assert cfg.features == DEFAULT_FEATURES["sparse-text"] == 1 << 20
        else:
            assert getattr(cfg, name) == KNOBS[name].default, name
    assert validate(defaults()) == cfg
    assert validate({}) == cfg


@pytest.mark.parametrize("name", KNOB_NAMES)
def test_each_default_given_explicitly_validates(name):
    cfg = validate({name: KNOBS[name].default})
    if name != "features":
        assert getattr(cfg, name) == KNOBS[name].default


@pytest.mark.parametrize("dataset,features", [("sparse-text", 1 << 20), ("dense", 200),
                                              ("digits", 1 << 20), ("breast-cancer", 1 << 20)])
def test_unset_features_gets_the_dataset_default(dataset, features):
    assert validate(dataset=dataset).features == features
    assert validate(dataset=dataset, features=None).features == features
    assert validate(dataset=dataset, features=" ").features == features


def test_validate_round_trips_through_to_dict():
    cfg = validate(dataset="dense", rows=5000, batch_size=64, precision="float16", model="mlp",
                   hidden="32,16", memory_cap_mb=512, cap_kind="rlimit")
    assert validate(cfg.to_dict()) == cfg
    default = validate().to_dict()
    assert {k: (v, default[k]) for k, v in cfg.to_dict().items() if v != default[k]} == {
        "dataset": ("dense", "sparse-text"), "rows": (5000, 100_000), "features": (200, 1 << 20),
        "batch_size": (64, 1024), "precision": ("float16", "float64"), "model": ("mlp", "linear-svm"),
        "hidden": ("32,16", "64"), "memory_cap_mb": (512, None), "cap_kind": ("rlimit", "auto")}


def test_overrides_win_over_values():
    cfg = validate({"epochs": 3, "seed": 1}, epochs=7)
    assert (cfg.epochs, cfg.seed) == (7, 1)


# ---------------------------------------------------------------- accepted values and coercion

def _boundary_cases():
    for name in KNOB_NAMES:
        k = KNOBS[name]
        for bound in (k.min, k.max):
            if bound is not None:
                value = int(bound) if k.type is int else float(bound)
                yield pytest.param(name, value, id=f"{name}={value:g}")


@pytest.mark.parametrize("name,value", list(_boundary_cases()))
def test_range_bounds_are_inclusive(name, value):
    cfg = validate({name: value, **BOUNDARY_CONTEXT.get(name, {})})
    assert getattr(cfg, name) == value
    assert type(getattr(cfg, name)) is KNOBS[name].type


def _choice_cases():
    for name in KNOB_NAMES:
        for choice in KNOBS[name].choices or ():
            yield pytest.param(name, choice, id=f"{name}={choice}")


@pytest.mark.parametrize("name,value", list(_choice_cases()))
def test_every_choice_is_accepted(monkeypatch, name, value):
    extra = {
        ("cap_kind", "rlimit"): {"memory_cap_mb": 1024},
        ("cap_kind", "cgroup"): {"memory_cap_mb": 1024},
        ("model", "kernel-svm"): {"rows": MAX_KERNEL_SVM_ROWS},
        ("representation", "dense"): {"dataset": "dense"},
        ("model_state", "float32"): {"solver": "native"},
        ("transform_cache", "memory"): {"model": "kernel-approx", "mode": "stream"},
        ("transform_cache", "disk"): {"model": "kernel-approx", "mode": "memmap"},
    }.get((name, value), {})
    monkeypatch.setattr(limits, "cgroup_available", lambda: True)
    assert getattr(validate({name: value, **extra}), name) == value


@pytest.mark.parametrize("name,given,expected", [
    ("rows", "2_000", 2000),
    ("rows", " 3000 ", 3000),
    ("rows", 4000.0, 4000),
    ("epochs", "7", 7),
    ("memory_cap_mb", "512", 512),
    ("memory_cap_mb", "", None),
    ("features", "", 1 << 20),
    ("test_file", "  ", None),
    ("alpha", "0.001", 0.001),
    ("alpha", 1, 1.0),
    ("c", "1e3", 1000.0),
    ("average", "yes", True), ("average", "ON", True), ("average", "1", True), ("average", "true", True),
    ("average", "no", False), ("average", "Off", False), ("average", "0", False), ("average", False, False),
    ("mode", " stream ", Mode.STREAM),
    ("hidden", " 128,64 ", "128,64"),
])
def test_values_are_coerced(name, given, expected):
    extra = {"batch_size": 1} if name == "rows" else {}
    cfg = validate({name: given, **extra})
    assert getattr(cfg, name) == expected
    if expected is not None:
        assert type(getattr(cfg, name)) is type(expected)


# ---------------------------------------------------------------- refused values, per knob

def _bad_values(name):
    """(label, value) pairs that must be refused for this knob, from its metadata."""
    k = KNOBS[name]
    if k.type is int:
        out = [("str", "abc"), ("fraction", 1.5), ("fraction-str", "2.5"), ("bool", True), ("list", [1]),
               ("nan", math.nan), ("inf", math.inf), ("exp-str", "1e3")]
        if k.min is not None:
            out.append(("below-min", int(k.min) - 1))
        if k.max is not None:
            out.append(("above-max", int(k.max) + 1))
            out.append(("above-max-str", str(int(k.max) + 1)))
    elif k.type is float:
        out = [("str", "abc"), ("bool", False), ("list", [0.1]), ("nan", math.nan), ("inf", math.inf),
               ("-inf", -math.inf), ("nan-str", "nan"), ("overflow-str", "1e400"), ("complex", 1j)]
        if k.min:  # a minimum of 0 (l1, l2, ftrl_beta) has no value below it but the negatives
            out.append(("below-min", k.min / 10))
        if k.min is not None:
            out.append(("negative", -1.0))
        if k.max is not None:
            out.append(("above-max", k.max * 10))
    elif k.type is bool:
        out = [("int", 1), ("int0", 0), ("maybe", "maybe"), ("float", 1.0), ("list", [True])]
    else:  # str
        out = [("int", 5), ("float", 1.0), ("bool", True), ("list", ["x"]), ("bytes", b"memory")]
        if k.choices and not k.free_text:
            out += [("unknown-choice", "no-such-choice"), ("wrong-case", str(k.choices[0]).upper()),
                    ("empty", "")]
    if not k.optional:
        out.append(("none", None))
    return out


def _bad_cases():
    for name in KNOB_NAMES:
        for label, value in _bad_values(name):
            yield pytest.param(name, value, id=f"{name}-{label}")


@pytest.mark.parametrize("name,value", list(_bad_cases()))
def test_bad_value_raises_config_error_naming_the_knob(name, value):
    with pytest.raises(ConfigError, match=knob_error(name)) as info:
        validate({name: value})
    assert info.value.knob == name
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("name", [n for n in KNOB_NAMES if KNOBS[n].min is not None])
def test_out_of_range_message_states_the_allowed_range(name):
    k = KNOBS[name]
    bad = (int(k.max) + 1) if k.type is int else k.max * 10
    with pytest.raises(ConfigError, match=knob_error(name)) as info:
        validate({name: bad})
    assert "out of range" in str(info.value)
    assert k.describe_allowed() in str(info.value)


def test_int_range_in_messages_is_exact():
    # describe_allowed formats bounds with :g, so seed's maximum 2147483647 reads
    # "2.14748e+09" and rows' 100000000 reads "1e+08": not the real bounds.
    wrong = {}
    for name in KNOB_NAMES:
        k = KNOBS[name]
        if k.type is not int or k.max is None:
            continue
        with pytest.raises(ConfigError, match=knob_error(name)) as info:
            validate({name: int(k.max) + 1})
        message = str(info.value).replace(",", "").replace("_", "")
        if str(int(k.max)) not in message or str(int(k.min)) not in message:
            wrong[name] = str(info.value)
    assert not wrong, wrong


@pytest.mark.parametrize("name", [n for n in KNOB_NAMES if KNOBS[n].choices and not KNOBS[n].free_text])
def test_unknown_choice_message_lists_the_choices(name):
    with pytest.raises(ConfigError, match=knob_error(name)) as info:
        validate({name: "no-such-choice"})
    for choice in KNOBS[name].choices:
        assert str(choice) in str(info.value)


@pytest.mark.parametrize("name", ["alpha", "c"])
def test_float_knob_given_an_int_too_large_for_a_float_raises_config_error(name):
    # float(10**400) raises OverflowError, which config.coerce does not catch.
    with pytest.raises(ConfigError, match=knob_error(name)):
        validate({name: 10**400})


# ---------------------------------------------------------------- unknown knobs

@pytest.mark.parametrize("bad", ["bogus", "Rows", "batch-size", "learning_rate", "rows ", "n_features"])
def test_unknown_knob_is_refused_by_name(bad):
    with pytest.raises(ConfigError, match=knob_error(bad) + "unknown knob") as info:
        validate({bad: 1})
    assert info.value.knob == bad
    assert "batch_size" in str(info.value)  # lists the known knobs


def test_unknown_knob_as_keyword_override():
    with pytest.raises(ConfigError, match=knob_error("nope") + "unknown knob"):
        validate(nope=3)


def test_unknown_knob_is_reported_even_next_to_valid_ones():
    with pytest.raises(ConfigError, match=knob_error("zzz")):
        validate({"rows": 1000, "batch_size": 10, "zzz": 1})


# ---------------------------------------------------------------- impossible combinations

@pytest.mark.parametrize("mode", ["stream", "memmap"])
def test_kernel_svm_needs_memory_mode(mode):
    with pytest.raises(ConfigError, match=knob_error("mode") + ".*kernel-svm"):
        validate(model="kernel-svm", mode=mode, rows=1000, batch_size=100)


def test_kernel_svm_in_memory_mode_is_fine():
    assert validate(model="kernel-svm", mode="memory", rows=1000, batch_size=100).model == "kernel-svm"


@pytest.mark.parametrize("rows", [MAX_KERNEL_SVM_ROWS + 1, 100_000, 100_000_000])
def test_kernel_svm_refuses_rows_above_its_limit(rows):
    with pytest.raises(ConfigError, match=knob_error("model") + ".*kernel-approx"):
        validate(model="kernel-svm", rows=rows)


def test_kernel_svm_accepts_rows_at_its_limit():
    assert validate(model="kernel-svm", rows=MAX_KERNEL_SVM_ROWS).rows == MAX_KERNEL_SVM_ROWS


@pytest.mark.parametrize("precision", ["float64", "float32", "float16"])
def test_dense_representation_of_a_huge_matrix_is_refused(precision):
    with pytest.raises(ConfigError, match=knob_error("representation") + "dense") as info:
        validate(representation="dense", features=1 << 24, rows=1_000_000, precision=precision)
    assert "GiB" in str(info.value)


def test_dense_batch_too_large_even_in_stream_mode():
    with pytest.raises(ConfigError, match=knob_error("representation") + "dense one batch"):
        validate(representation="dense", features=MAX_FEATURES, rows=1_000_000, mode="stream",
                 batch_size=100_000)


@pytest.mark.parametrize("cap_mb,ok", [(10_000, True), (5_000, False)])
def test_dense_size_is_checked_against_the_memory_cap(cap_mb, ok):
    # 1e6 rows x 2^10 hashed columns x 8 B = 7.6 GiB
    values = dict(representation="dense", features=1 << 24, hashing_bits=10, rows=1_000_000,
                  memory_cap_mb=cap_mb)
    if ok:
        assert validate(values).representation == "dense"
    else:
        with pytest.raises(ConfigError, match=knob_error("representation") + ".*cap"):
            validate(values)


def test_dense_small_data_is_fine():
    cfg = validate(dataset="dense", representation="dense", rows=10_000)
    assert (cfg.representation, cfg.features) == ("dense", 200)


@pytest.mark.parametrize("features,nnz", [(2, 3), (10, 11), (49, 50), (1000, 100_000)])
def test_sparse_text_nnz_per_row_above_features_is_refused(features, nnz):
    with pytest.raises(ConfigError, match=knob_error("nnz_per_row")):
        validate(features=features, nnz_per_row=nnz)


@pytest.mark.parametrize("features", [2, 50])
def test_nnz_per_row_equal_to_features_is_fine(features):
    assert validate(features=features, nnz_per_row=features).nnz_per_row == features


def test_nnz_rule_only_applies_to_sparse_text():
    assert validate(dataset="dense", features=10, nnz_per_row=50).nnz_per_row == 50


@pytest.mark.parametrize("dataset", ["sparse-text", "dense"])
@pytest.mark.parametrize("rows,batch", [(50, 51), (1000, 1001), (100_000, 10_000_000)])
def test_batch_size_above_synthetic_rows_is_refused(dataset, rows, batch):
    with pytest.raises(ConfigError, match=knob_error("batch_size")):
        validate(dataset=dataset, rows=rows, batch_size=batch)


def test_batch_size_equal_to_rows_is_fine():
    assert validate(rows=1000, batch_size=1000).batch_size == 1000


@pytest.mark.parametrize("cap_kind", ["rlimit", "cgroup"])
def test_cap_kind_without_memory_cap_is_refused(cap_kind):
    with pytest.raises(ConfigError, match=knob_error("cap_kind") + ".*memory_cap_mb"):
        validate(cap_kind=cap_kind)


@pytest.mark.parametrize("available", [True, False])
def test_cgroup_cap_follows_availability(monkeypatch, available):
    """validate() is pure; admission checks what this machine can do."""
    from svmcore.engine.admission import admit

    monkeypatch.setattr(limits, "cgroup_available", lambda: available)
    assert validate(cap_kind="cgroup", memory_cap_mb=256).cap_kind == "cgroup"
    if available:
        assert admit({"cap_kind": "cgroup", "memory_cap_mb": 256}, None).config.cap_kind == "cgroup"
    else:
        with pytest.raises(ConfigError, match=knob_error("cap_kind") + ".*rlimit"):
            admit({"cap_kind": "cgroup", "memory_cap_mb": 256}, None)


@pytest.mark.parametrize("hidden", ["", " ", ",", "64,", ",64", "a", "64;32", "64 32", "1.5", "0", "-5",
                                    "64,0", "100001", "1,2,3,4,5,6,7,8,9", "64,,32", "0x10", "9" * 5000])
def test_bad_hidden_strings_are_refused(hidden):
    with pytest.raises(ConfigError, match=knob_error("hidden")):
        validate(model="mlp", hidden=hidden)


@pytest.mark.parametrize("hidden,sizes", [("64", (64,)), ("128,64", (128, 64)), (" 8 , 4 ", (8, 4)),
                                          ("1,1,1,1,1,1,1,1", (1,) * 8), ("100000", (100_000,))])
def test_good_hidden_strings(hidden, sizes):
    assert validate(model="mlp", hidden=hidden).hidden_sizes == sizes


@pytest.mark.parametrize("make_path", [
    lambda tmp: "no-such-dataset",
    lambda tmp: "sparse_text",
    lambda tmp: str(tmp / "missing.svm"),
    lambda tmp: str(tmp),  # a folder, not a file
    lambda tmp: "",
], ids=["unknown-name", "near-miss-name", "missing-file", "folder", "empty"])
def test_dataset_that_is_neither_builtin_nor_a_file_is_refused(tmp_path, make_path):
    with pytest.raises(ConfigError, match=knob_error("dataset")):
        validate(dataset=make_path(tmp_path))


def test_dataset_file_that_exists_is_accepted(tmp_path):
    p = tmp_path / "d.svm"
    p.write_text("1 1:1\n")
    cfg = validate(dataset=str(p))
    assert cfg.dataset == str(p) and not cfg.is_builtin and not cfg.is_synthetic


@pytest.mark.parametrize("name", BUILTIN_DATASETS)
def test_builtin_datasets_are_accepted(name):
    cfg = validate(dataset=name)
    assert cfg.is_builtin
    assert cfg.is_synthetic == (name in ("sparse-text", "dense"))


def test_missing_test_file_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=knob_error("test_file")):
        validate(test_file=str(tmp_path / "nope.svm"))


# ---------------------------------------------------------------- long values are cut in messages (issue #10)

LONG = "7" * 50_000 + "x" * 50_000  # 100 KB: not a number, not a choice, not a file


def assert_cut(msg: str, size: int = 100_000) -> None:
    assert len(msg) < 600, f"{len(msg)} characters echoed"
    assert "…" in msg and f"({size:,} characters)" in msg, msg[:300]


@pytest.mark.parametrize("name", KNOB_NAMES)
def test_a_100kb_value_is_cut_in_the_message_of_every_knob(name):
    with pytest.raises(ConfigError) as info:
        validate({name: LONG})
    assert str(info.value).startswith(f"{name}: ")
    assert_cut(str(info.value))


def test_a_100kb_unknown_knob_name_is_cut():
    with pytest.raises(ConfigError) as info:
        validate({"k" * 100_000: 1})
    assert_cut(str(info.value))


def test_short_values_are_echoed_whole():
    with pytest.raises(ConfigError, match=r"^epochs: expected a whole number, got 'three'$"):
        validate(epochs="three")


def test_a_100kb_value_in_a_sweep_grid_is_cut():
    from svmcore.sweeps.grid import parse_grid

    for item in (f"batch_size={LONG}", f"precision={LONG}", LONG, f"{LONG}=1,2", f"epochs=1,{LONG}"):
        with pytest.raises(ConfigError) as info:
            parse_grid([item])
        assert len(str(info.value)) < 600, (item[:20], len(str(info.value)))
        assert "…" in str(info.value), str(info.value)[:300]


def test_a_100kb_data_token_is_cut_in_the_reader_message(tmp_path):
    from svmcore.data.readers import iter_file_chunks
    from svmcore.spec.errors import DataError

    path = tmp_path / "d.svm"
    path.write_text("1 1:1\n" + LONG + " 1:1\n")
    with pytest.raises(DataError) as info:
        list(iter_file_chunks(str(path), 10))
    assert info.value.line == 2
    assert_cut(str(info.value))


def test_distill_takes_a_teacher_in_one_process():
    assert validate(model="mlp-numpy", distill=True).distill
    for knobs, words in (({}, "linear-svm is already the student"),
                         ({"model": "kernel-approx", "workers": 2}, "use workers=1")):
        with pytest.raises(ConfigError) as e:
            validate(knobs, distill=True)
        assert e.value.knob == "distill" and words in str(e.value)
