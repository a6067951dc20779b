"""Property tests: readers only ever fail with DataError; validate only with ConfigError."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svmcore.data.readers import iter_file_chunks
from svmcore.spec.choices import BY_KNOB
from svmcore.spec.config import RunConfig, validate
from svmcore.spec.errors import ConfigError, DataError
from svmcore.spec.knobs import BUILTIN_DATASETS, KNOBS

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FORMATS = [("svmlight", ".svm"), ("csv", ".csv"), ("text", ".txt"), ("npz", ".npz"), (None, ".dat")]

# Fragments that steer random files towards the parsers' interesting corners.
FRAGMENTS = [b"1", b"-1", b"+1", b"0", b"3", b"1500000000", b"99999999999999999999", b".", b"e", b"-",
             b" ", b"  ", b"\t", b"\n", b"\r\n", b":", b",", b";", b"#", b'"', b"nan", b"inf", b"qid:",
             b"label", b"y", b"\xff", b"\xc3", b"\x00", b"abc", b"1:1", b"2:0.5", b"0:1", b"-3:1"]

random_bytes = st.one_of(
    st.binary(max_size=400),
    st.lists(st.sampled_from(FRAGMENTS), max_size=80).map(b"".join),
    # a plausible header line, then random fragments: gets past CSV header checks
    st.lists(st.sampled_from(FRAGMENTS), max_size=60).map(lambda xs: b"a,label,b\n" + b"".join(xs)),
    # a real npz prefix cut short or with junk appended
    st.integers(0, 600).map(lambda n: _NPZ[:n]),
    st.binary(max_size=50).map(lambda b: _NPZ + b),
)


def _npz_bytes() -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, X=np.eye(3), y=np.array([0, 1, 0]))
    return buf.getvalue()


_NPZ = _npz_bytes()


def _consume_all_formats(blob: bytes, folder: str) -> None:
    for fmt, ext in FORMATS:
        path = os.path.join(folder, "f" + ext)
        with open(path, "wb") as f:
            f.write(blob)
        for chunk_rows in (1, 1000):
            try:
                for ch in iter_file_chunks(path, chunk_rows, fmt):
                    assert ch.X.shape[0] == ch.y.shape[0] >= 1
                    assert ch.first_line >= 1
            except DataError as e:
                assert str(e)
                assert e.line is None or e.line >= 1


@PROPERTY
@given(random_bytes)
def test_random_files_only_ever_raise_data_error(blob):
    with tempfile.TemporaryDirectory() as folder:
        _consume_all_formats(blob, folder)


# ---------------------------------------------------------------- validate

ALL_CHOICES = sorted({str(c) for k in KNOBS.values() if k.choices for c in k.choices})

knob_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-10, 300_000),
    st.floats(),
    st.floats(min_value=1e-10, max_value=1e7),
    st.text(max_size=12),
    st.integers(-100, 10**9).map(str),
    st.sampled_from(ALL_CHOICES),
    st.sampled_from(["", " ", "64", "128,64", "1e3", "nan", "inf", "true", "off", "2_000", "0x10", "memory "]),
    st.binary(max_size=6),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.complex_numbers(allow_nan=True),
    st.decimals(allow_nan=True),
    st.fractions(),
)



def _valid_values(k) -> st.SearchStrategy:
    """Values this knob accepts on its own (combinations may still be refused)."""
    if k.name == "dataset":
        base = st.sampled_from(BUILTIN_DATASETS)
    elif k.name == "test_file":
        base = st.none()
    elif k.name == "hidden":
        base = st.lists(st.integers(1, 300), min_size=1, max_size=4).map(lambda xs: ",".join(map(str, xs)))
    elif k.choices:
        base = st.sampled_from(k.choices)
    elif k.type is bool:
        base = st.booleans() | st.sampled_from(["yes", "no", "1", "0", "on", "off"])
    elif k.type is int:
        base = st.integers(int(k.min), int(k.max))
        base = base | base.map(str)
    else:
        base = st.floats(k.min, k.max)
        base = base | base.map(repr)
    return base | st.none() if k.optional else base


def _value_for(name: str) -> st.SearchStrategy:
    valid = _valid_values(KNOBS[name])
    return st.one_of(valid, valid, valid, knob_values)  # mostly valid, sometimes anything


def _dicts(value_for) -> st.SearchStrategy:
    return st.lists(st.sampled_from(sorted(KNOBS)), unique=True, max_size=10).flatmap(
        lambda names: st.fixed_dictionaries({n: value_for(n) for n in names}))


# half the dictionaries hold only individually valid values, so that the combination
# rules and the returned RunConfig get exercised too, not only the type checks
knob_dicts = st.one_of(_dicts(lambda n: _valid_values(KNOBS[n])), _dicts(_value_for))


@PROPERTY
@given(knob_dicts)
def test_random_knob_dicts_give_a_run_config_or_config_error(values):
    # cap_kind=cgroup would probe /sys/fs/cgroup; answer for the machine instead
    with mock.patch("svmcore.engine.limits.cgroup_available", return_value=False):
        try:
            cfg = validate(values)
        except ConfigError as e:
            assert e.knob in KNOBS
            assert str(e).startswith(f"{e.knob}: ")
            return
        assert isinstance(cfg, RunConfig)
        for f in dataclasses.fields(RunConfig):
            k = KNOBS[f.name]
            v = getattr(cfg, f.name)
            if v is None:
                assert k.optional, f.name
                continue
            assert type(v) is BY_KNOB.get(f.name, k.type), (f.name, v)  # a choice knob's value is its member
            if k.choices and not k.free_text:
                assert v in k.choices
            if k.min is not None:
                assert k.min <= v, (f.name, v)
            if k.max is not None:
                assert v <= k.max, (f.name, v)
        # what validate returns validates again, unchanged
        assert validate(cfg.to_dict()) == cfg
