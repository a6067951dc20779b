"""What only the numba parser (fastsvm) has: its CSR helper, its float table, its
numba cache fallback and its counter of ambiguous long mantissas. The cases it shares
with the C parser and scikit-learn are in test_svmlight_parsers.py."""

from __future__ import annotations

import numpy as np

from svmcore.data import fastsvm
from svmcore.data.fastsvm import parse_block, to_csr


def test_to_csr_keeps_index_dtypes():
    data, indices, indptr, y, n_rows, max_id = parse_block(b"1 1:1 3:2\n-1 2:5\n", 10)
    X = to_csr(data, indices, indptr, n_rows, 10)
    assert X.shape == (2, 10) and X.indices.dtype == np.int32 and X.indptr.dtype == np.int64
    assert X.toarray()[0, 2] == 2.0 and X.toarray()[1, 1] == 5.0


def test_power_of_five_table_spot_values():
    t = fastsvm._POW5
    idx = lambda q: 2 * (q + 342)  # noqa: E731
    assert (int(t[idx(-342)]), int(t[idx(-342) + 1])) == (0xEEF453D6923BD65A, 0x113FAA2906A13B3F)
    assert (int(t[idx(-1)]), int(t[idx(-1) + 1])) == (0xCCCCCCCCCCCCCCCC, 0xCCCCCCCCCCCCCCCD)
    assert (int(t[idx(0)]), int(t[idx(0) + 1])) == (1 << 63, 0)
    assert (int(t[idx(308)]), int(t[idx(308) + 1])) == (0x8E679C2F5E44FF8F, 0x570F09EAA7EA7648)


def test_jit_without_any_cache_location_still_compiles(monkeypatch):
    from numba.core import caching

    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [])

    def add(a, b):
        return a + b

    assert fastsvm._jit(add)(2, 3) == 5


def test_an_ambiguous_long_mantissa_takes_the_python_path_and_is_counted():
    halfway = b"9007199254740993.000000000000000000000001"  # > 19 digits, truncation cannot decide
    before = dict(fastsvm.stats)
    data, *_ = parse_block(b"1 1:" + halfway + b"\n", 1)
    assert data[0] == float(halfway)
    assert fastsvm.stats["slow_lines"] == before["slow_lines"] + 1
    assert fastsvm.stats["python_lines"] == before["python_lines"] + 1
    before = dict(fastsvm.stats)
    parse_block(b"1 1:" + b"1" * 30 + b"\n", 1)  # long but decided by truncation: stays compiled
    assert fastsvm.stats == before
