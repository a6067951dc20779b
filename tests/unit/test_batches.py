"""The one batch type's plumbing: ``rows.rebatch``, the held-out split (``feeds.source_rows.split``),
the in-memory feed (``feeds.memory.InMemory``: storage and compute precisions, CSR parts or a
dense block) and a streamed pass counted against the scan."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.data.feeds.memory import InMemory
from svmcore.data.feeds.source_rows import numbered, split
from svmcore.data.rows import COMPUTE_DTYPES, STORE_DTYPES, Dense, Parts, Rows, block_of, rebatch
from svmcore.data.sources import MAX_TEST_ROWS, TEST_EVERY, is_test_row
from tests.helpers import parts_of


def source_matrix(rows=1000, cols=40, seed=0) -> sp.csr_matrix:
    """A CSR matrix whose values are exact in float16, with some empty rows."""
    rng = np.random.default_rng(seed)
    X = sp.random(rows, cols, density=0.15, format="csr", random_state=rng)
    X.data = np.round(X.data * 64) / 8 + 0.125  # multiples of 1/8, nonzero, exact in float16
    X = (sp.diags((np.arange(rows) % 7 != 3).astype(np.float64)) @ X).tocsr()  # every 7th row empty
    X.eliminate_zeros()
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int64)
    assert np.diff(X.indptr).min() == 0  # some rows are empty
    return X


def chunked(X, y, sizes):
    """Row chunks of (X, y) with the given sizes (cycled until the rows run out), as blocks."""
    out, start, i = [], 0, 0
    while start < X.shape[0]:
        n = sizes[i % len(sizes)]
        out.append(Rows(block_of(X[start:start + n]), y[start:start + n]))
        start += n
        i += 1
    return out


def to_dense(X) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else X.dense(40) if hasattr(X, "dense") else np.asarray(X)


# ---------------------------------------------------------------- rebatch

@pytest.mark.parametrize("chunk_sizes", [[1000], [1], [7], [333, 1, 50], [999, 1], [2000]])
@pytest.mark.parametrize("batch_size", [1, 10, 64, 999, 1000, 1001, 5000])
def test_rebatch_yields_exact_batch_sizes_and_every_row_once(chunk_sizes, batch_size):
    X = source_matrix(1000)
    y = np.arange(1000)
    batches = list(rebatch(iter(chunked(X, y, chunk_sizes)), batch_size))
    sizes = [b.X.n_rows for b in batches]
    assert all(b.codes.shape[0] == s for b, s in zip(batches, sizes))
    assert sizes[:-1] == [batch_size] * (len(sizes) - 1)
    assert 1 <= sizes[-1] <= batch_size
    assert sum(sizes) == 1000
    assert all(isinstance(b.X, Parts) for b in batches)
    np.testing.assert_array_equal(np.concatenate([b.codes for b in batches]), y)
    np.testing.assert_array_equal(np.vstack([to_dense(b.X) for b in batches]), X.toarray())


def test_rebatch_of_nothing_is_nothing():
    assert list(rebatch(iter([]), 10)) == []


def test_rebatch_skips_empty_chunks():
    X = np.arange(1.0, 21.0).reshape(10, 2)
    y = np.arange(10)
    P = Dense(X).sparse()
    chunks = [(P.slice(0, 0), y[:0]), (P.slice(0, 4), y[:4]), (P.slice(4, 4), y[4:4]), (P.slice(4, 10), y[4:])]
    batches = list(rebatch(iter(chunks), 3))
    assert [b.X.n_rows for b in batches] == [3, 3, 3, 1]
    np.testing.assert_array_equal(np.vstack([b.X.dense(2) for b in batches]), X)


# ---------------------------------------------------------------- split

def split_chunks(chunks, want_test: bool, rows: int):
    return split(numbered(chunks), want_test, rows)


def run_split(n_rows, chunk_sizes):
    y = np.arange(n_rows)
    X = Dense((y + 1).reshape(-1, 1).astype(np.float64))
    train = list(split_chunks(iter(chunked(X.array, y, chunk_sizes)), want_test=False, rows=n_rows))
    test = list(split_chunks(iter(chunked(X.array, y, chunk_sizes)), want_test=True, rows=n_rows))
    train_rows = np.concatenate([c[1] for c in train]) if train else np.zeros(0, int)
    test_rows = np.concatenate([c[1] for c in test]) if test else np.zeros(0, int)
    for X_, y_ in train + test:
        np.testing.assert_array_equal(X_.dense(1)[:, 0], y_ + 1)  # rows and codes stay paired
    return train_rows, test_rows


@pytest.mark.parametrize("n_rows", [1, 4, 5, 12, 1000, 1003])
@pytest.mark.parametrize("chunk_sizes", [[1], [3], [5], [7, 2], [10_000]])
def test_split_chunks_is_disjoint_complete_and_in_order(n_rows, chunk_sizes):
    train, test = run_split(n_rows, chunk_sizes)
    assert np.intersect1d(train, test).size == 0
    np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(n_rows))
    assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)
    np.testing.assert_array_equal(test, np.flatnonzero(is_test_row(np.arange(n_rows), n_rows)))
    assert test.size == n_rows // TEST_EVERY


@pytest.mark.parametrize("chunk_sizes", [[10_000], [9_999], [33_333, 1]])
def test_split_chunks_holds_out_at_most_max_test_rows_spread_over_the_data(chunk_sizes):
    n_rows = TEST_EVERY * MAX_TEST_ROWS + 25_003
    train, test = run_split(n_rows, chunk_sizes)
    assert test.size == MAX_TEST_ROWS
    assert train.size == n_rows - MAX_TEST_ROWS
    assert np.intersect1d(train, test).size == 0
    # spread over the whole data: a file sorted by label is tested on every part of it
    assert test.max() == n_rows - 1
    assert np.diff(test).max() - np.diff(test).min() <= 1


def test_split_chunks_test_pass_stops_reading_after_the_last_test_row():
    read = []
    n_rows = 1_000_000 + 5

    def chunks():
        for k in range(101):
            read.append(k)
            rows = np.arange(k * 10_000, min(n_rows, (k + 1) * 10_000))
            yield Rows(Dense(rows.reshape(-1, 1)), rows)

    test = list(split_chunks(chunks(), want_test=True, rows=n_rows))
    assert sum(c[1].size for c in test) == MAX_TEST_ROWS
    assert max(read) == 100
    read.clear()
    small = list(split_chunks(chunks(), want_test=True, rows=50_000))
    assert sum(c[1].size for c in small) == 10_000
    assert max(read) == 5  # stopped after row 49,999's chunk


def test_split_chunks_keeps_sparse_chunks_sparse():
    X = source_matrix(100)
    y = np.arange(100)
    for want_test in (False, True):
        out = list(split_chunks(iter(chunked(X, y, [30])), want_test, rows=100))
        assert all(isinstance(c[0], Parts) for c in out)
        got = np.vstack([c[0].dense(40) for c in out])
        keep = is_test_row(np.arange(100), 100) if want_test else ~is_test_row(np.arange(100), 100)
        np.testing.assert_array_equal(got, X.toarray()[keep])


# ---------------------------------------------------------------- InMemory

PRECISIONS = ["float64", "float32", "float16"]


def stored(X: sp.csr_matrix, storage: str, precision: str):
    """X as memory mode keeps it: CSR parts or a dense block, in the storage precision."""
    block = Dense(X.toarray()) if storage == "dense" else parts_of(X)
    return block.stored(STORE_DTYPES[precision])


STORAGE_CASES = [(s, p) for s in ("parts", "dense") for p in PRECISIONS]


@pytest.mark.parametrize("storage,precision", STORAGE_CASES)
@pytest.mark.parametrize("batch_size", [1, 64, 1000, 4096])
def test_in_memory_batches_agree_with_the_source_rows(storage, precision, batch_size):
    X = source_matrix(1000)
    codes = (np.arange(1000) % 3 == 0).astype(np.int64)
    cdtype = COMPUTE_DTYPES[precision]
    data = InMemory(stored(X, storage, precision), codes, cdtype)
    assert data.n_rows == 1000 and data.nbytes == stored(X, storage, precision).nbytes
    seen = 0
    for Xb, cb in data.batches(batch_size):
        n = Xb.n_rows
        assert n == min(batch_size, 1000 - seen)
        assert isinstance(Xb, Dense if storage == "dense" else Parts)  # dense stays dense in storage
        assert (Xb.array if storage == "dense" else Xb.data).dtype == cdtype
        np.testing.assert_array_equal(Xb.dense(40), X[seen:seen + n].toarray().astype(cdtype))
        np.testing.assert_array_equal(cb, codes[seen:seen + n])
        seen += n
    assert seen == 1000


@pytest.mark.parametrize("storage,precision", STORAGE_CASES)
def test_a_block_slices_and_gathers_anywhere(storage, precision):
    X = source_matrix(300)
    block = stored(X, storage, precision)
    for start, stop in [(0, 1), (17, 18), (100, 250), (0, 300), (299, 300)]:
        np.testing.assert_array_equal(block.slice(start, stop).dense(40), X[start:stop].toarray())
    rows = np.array([299, 0, 17, 17, 150])
    for got in (block.gather(rows), block.take(rows)):
        np.testing.assert_array_equal(got.dense(40), X[rows].toarray())
        np.testing.assert_array_equal(got.csr(40).toarray(), X[rows].toarray())


def test_float16_storage_rounds_values_and_computes_in_float32():
    X = sp.csr_matrix(np.array([[0.1, 0, 1 / 3], [0, 2049.0, 0]]))
    parts = stored(X, "parts", "float16")
    assert parts.data.dtype == np.float16
    Xb, _ = next(InMemory(parts, np.array([1, 0]), np.float32).batches(2))
    assert Xb.data.dtype == np.float32
    np.testing.assert_array_equal(Xb.csr(3).toarray(), X.toarray().astype(np.float16).astype(np.float32))
    assert Xb.csr(3)[1, 1] == 2048.0  # float16 keeps ~3 significant digits


def test_empty_rows_slice_to_an_empty_block():
    X = sp.csr_matrix((5, 4))
    Xb = parts_of(X).slice(1, 4).compute(np.float32)
    assert Xb.n_rows == 3 and Xb.nnz == 0 and Xb.data.dtype == np.float32 and Xb.csr(4).shape == (3, 4)


# ---------------------------------------------------------------- a streamed pass against the scan

def _stream(tmp_path, n_rows=None, reader_thread=False, rows=3000):
    from svmcore.data.sources import n_test_rows, scan, Source
    from svmcore.spec.config import validate
    from tests.helpers import stream_feed

    path = tmp_path / "train.svm"
    path.write_text("".join(f"{1 if r % 2 else -1} {r % 97 + 1}:1\n" for r in range(rows)))
    cfg = validate(dataset=str(path))
    info = scan(Source(cfg))
    train_rows = info.rows - n_test_rows(info.rows)
    feed = stream_feed(cfg, train_rows if n_rows is None else n_rows, reader_thread=reader_thread)
    feed.rows.source.during = "training"
    return feed, path, train_rows


@pytest.mark.parametrize("reader_thread", [False, True])
def test_stream_pass_counts_its_rows_against_the_scan(tmp_path, reader_thread):
    from svmcore.spec.errors import DataChangedError

    data, _, train_rows = _stream(tmp_path, reader_thread=reader_thread)
    assert sum(yb.shape[0] for _, yb in data.batches(500)) == train_rows  # unchanged: every row, once
    short, _, _ = _stream(tmp_path, n_rows=train_rows + 10, reader_thread=reader_thread)
    with pytest.raises(DataChangedError, match=f"{train_rows + 10:,} training rows at the start, "
                                               f"{train_rows:,} in pass 1"):
        list(short.batches(500))
    more, _, _ = _stream(tmp_path, n_rows=train_rows - 700, reader_thread=reader_thread)
    seen = 0
    with pytest.raises(DataChangedError, match="at least"):
        for _, yb in more.batches(500):
            seen += yb.shape[0]
    assert seen <= train_rows - 700  # a row beyond the scan's count is never handed to training


@pytest.mark.parametrize("reader_thread", [False, True])
def test_stream_pass_over_a_truncated_file_fails(tmp_path, reader_thread):
    from svmcore.spec.errors import DataChangedError

    data, path, _ = _stream(tmp_path, reader_thread=reader_thread, rows=30_000)
    size = path.stat().st_size
    batches = data.batches(1000)
    next(batches)
    os.truncate(path, size // 2)
    with pytest.raises(DataChangedError, match=f"train.svm changed while training: {size:,} bytes at the start, "
                                               f"{size // 2:,} now"):
        list(batches)
