"""What only the C parser (nativesvm) does: numbers with more than 19 significant
digits go through the C library's strtod, never the per-line Python path. The cases
it shares with the numba parser and scikit-learn are in test_svmlight_parsers.py."""

from __future__ import annotations

from svmcore.data import nativesvm


def test_long_mantissas_stay_in_c():
    halfway = b"9007199254740993.000000000000000000000001"
    before = dict(nativesvm.stats)
    data, _, _, y, *_ = nativesvm.parse_block(b"1 1:" + halfway + b" 2:" + b"1" * 30 + b"\n" + halfway + b"\n", 2)
    assert data.tolist() == [float(halfway), float(b"1" * 30)] and y.tolist() == [1.0, float(halfway)]
    assert nativesvm.stats == before
