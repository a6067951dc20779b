"""svmcore.batches: rebatch, split_chunks, ArrayData."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.data.batches import (
    COMPUTE_DTYPES,
    STORE_DTYPES,
    ArrayData,
    cut_rows,
    rebatch,
    split_chunks,
    to_storage,
)
from svmcore.data.sources import MAX_TEST_ROWS, TEST_EVERY, is_test_row


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
    """Row chunks of (X, y) with the given sizes (cycled until the rows run out)."""
    out, start, i = [], 0, 0
    while start < X.shape[0]:
        n = sizes[i % len(sizes)]
        out.append((X[start:start + n], y[start:start + n]))
        start += n
        i += 1
    return out


def to_dense(X) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X)


# ---------------------------------------------------------------- rebatch

@pytest.mark.parametrize("kind", ["sparse", "dense"])
@pytest.mark.parametrize("chunk_sizes", [[1000], [1], [7], [333, 1, 50], [999, 1], [2000]])
@pytest.mark.parametrize("batch_size", [1, 10, 64, 999, 1000, 1001, 5000])
def test_rebatch_yields_exact_batch_sizes_and_every_row_once(kind, chunk_sizes, batch_size):
    X = source_matrix(1000)
    y = np.arange(1000)
    Xs = X if kind == "sparse" else X.toarray()
    batches = list(rebatch(iter(chunked(Xs, y, chunk_sizes)), batch_size))
    sizes = [b[0].shape[0] for b in batches]
    assert all(b[1].shape[0] == s for b, s in zip(batches, sizes))
    assert sizes[:-1] == [batch_size] * (len(sizes) - 1)
    assert 1 <= sizes[-1] <= batch_size
    assert sum(sizes) == 1000
    assert all(sp.issparse(b[0]) == (kind == "sparse") for b in batches)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), y)
    np.testing.assert_array_equal(np.vstack([to_dense(b[0]) for b in batches]), X.toarray())


def test_rebatch_of_nothing_is_nothing():
    assert list(rebatch(iter([]), 10)) == []


def test_rebatch_skips_empty_chunks():
    X = np.arange(20.0).reshape(10, 2)
    y = np.arange(10)
    chunks = [(X[:0], y[:0]), (X[:4], y[:4]), (X[4:4], y[4:4]), (X[4:], y[4:])]
    batches = list(rebatch(iter(chunks), 3))
    assert [b[0].shape[0] for b in batches] == [3, 3, 3, 1]
    np.testing.assert_array_equal(np.vstack([b[0] for b in batches]), X)


# ---------------------------------------------------------------- split_chunks

def run_split(n_rows, chunk_sizes):
    y = np.arange(n_rows)
    X = y.reshape(-1, 1).astype(np.float64)
    train = list(split_chunks(iter(chunked(X, y, chunk_sizes)), want_test=False, rows=n_rows))
    test = list(split_chunks(iter(chunked(X, y, chunk_sizes)), want_test=True, rows=n_rows))
    train_rows = np.concatenate([c[1] for c in train]) if train else np.zeros(0, int)
    test_rows = np.concatenate([c[1] for c in test]) if test else np.zeros(0, int)
    for X_, y_ in train + test:
        np.testing.assert_array_equal(X_[:, 0], y_)  # X and y rows stay paired
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
            yield rows.reshape(-1, 1), rows

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
        assert all(sp.issparse(c[0]) for c in out)
        got = sp.vstack([c[0] for c in out]).toarray()
        keep = is_test_row(np.arange(100), 100) if want_test else ~is_test_row(np.arange(100), 100)
        np.testing.assert_array_equal(got, X.toarray()[keep])


# ---------------------------------------------------------------- ArrayData

PRECISIONS = ["float64", "float32", "float16"]


def stored(X: sp.csr_matrix, storage: str, precision: str):
    """X in a storage form ArrayData takes: CSR matrix, CSR parts (data, indices,
    indptr) as memory mode keeps float16 and memmap mode keeps every precision, or dense."""
    if storage == "dense":
        return to_storage(X, precision, dense=True)
    if storage == "csr":
        return to_storage(X, precision, dense=False)
    return (X.data.astype(STORE_DTYPES[precision]), X.indices.astype(np.int32), X.indptr.astype(np.int64))


STORAGE_CASES = [(s, p) for s in ("csr", "parts", "dense") for p in PRECISIONS if not (s == "csr" and p == "float16")]


@pytest.mark.parametrize("storage,precision", STORAGE_CASES)
@pytest.mark.parametrize("dense_batches", [False, True], ids=["sparse-batches", "dense-batches"])
@pytest.mark.parametrize("batch_size", [1, 64, 1000, 4096])
def test_array_data_batches_agree_with_the_source_rows(storage, precision, dense_batches, batch_size):
    X = source_matrix(1000)
    y = np.where(np.arange(1000) % 3 == 0, 1.0, -1.0)
    data = ArrayData(stored(X, storage, precision), y, X.shape[1], precision, dense_batches)
    assert data.n_rows == 1000
    expected_dense = storage == "dense" or dense_batches
    cdtype = COMPUTE_DTYPES[precision]
    seen = 0
    for Xb, yb in data.batches(batch_size):
        n = Xb.shape[0]
        assert n == min(batch_size, 1000 - seen)
        assert Xb.shape[1] == X.shape[1]
        assert (not sp.issparse(Xb)) == expected_dense
        assert Xb.dtype == cdtype, (Xb.dtype, cdtype)
        np.testing.assert_array_equal(to_dense(Xb), X[seen:seen + n].toarray().astype(cdtype))
        np.testing.assert_array_equal(yb, y[seen:seen + n])
        seen += n
    assert seen == 1000


@pytest.mark.parametrize("storage,precision", STORAGE_CASES)
def test_array_data_single_batch_anywhere(storage, precision):
    X = source_matrix(300)
    y = np.arange(300.0)
    data = ArrayData(stored(X, storage, precision), y, X.shape[1], precision, False)
    for start, stop in [(0, 1), (17, 18), (100, 250), (0, 300), (299, 300)]:
        Xb, yb = data.batch(start, stop)
        np.testing.assert_array_equal(to_dense(Xb), X[start:stop].toarray())
        np.testing.assert_array_equal(yb, y[start:stop])


def test_float16_storage_rounds_values_and_computes_in_float32():
    X = sp.csr_matrix(np.array([[0.1, 0, 1 / 3], [0, 2049.0, 0]]))
    parts = stored(X, "parts", "float16")
    assert parts[0].dtype == np.float16
    Xb, _ = ArrayData(parts, np.array([1.0, -1.0]), 3, "float16", False).batch(0, 2)
    assert Xb.dtype == np.float32
    np.testing.assert_array_equal(Xb.toarray(), X.toarray().astype(np.float16).astype(np.float32))
    assert Xb[1, 1] == 2048.0  # float16 keeps ~3 significant digits


@pytest.mark.parametrize("precision", PRECISIONS)
def test_to_storage_forms(precision):
    X = source_matrix(50)
    dense = to_storage(X, precision, dense=True)
    assert isinstance(dense, np.ndarray) and dense.dtype == STORE_DTYPES[precision] and dense.flags.c_contiguous
    np.testing.assert_array_equal(dense, X.toarray().astype(STORE_DTYPES[precision]))
    sparse = to_storage(X.toarray(), precision, dense=False)
    if precision == "float16":
        data, indices, indptr, width = sparse
        assert data.dtype == np.float16 and width == X.shape[1]
        np.testing.assert_array_equal(cut_rows((data, indices, indptr), 0, 50, width, precision, True),
                                      X.toarray())
    else:
        assert sp.issparse(sparse) and sparse.dtype == STORE_DTYPES[precision]
        np.testing.assert_array_equal(sparse.toarray(), X.toarray())


def test_cut_rows_of_empty_rows():
    X = sp.csr_matrix((5, 4))
    parts = (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int64))
    Xb = cut_rows(parts, 1, 4, 4, "float32", False)
    assert Xb.shape == (3, 4) and Xb.nnz == 0 and Xb.dtype == np.float32


# ---------------------------------------------------------------- StreamData: a pass against the scan

def _stream(tmp_path, n_rows=None, reader_thread=False, rows=3000):
    from svmcore.data.batches import StreamData
    from svmcore.data.sources import Source, n_test_rows, scan
    from svmcore.spec.config import validate

    path = tmp_path / "train.svm"
    path.write_text("".join(f"{1 if r % 2 else -1} {r % 97 + 1}:1\n" for r in range(rows)))
    source = Source(validate(dataset=str(path)))
    source.during = "training"
    info = scan(source)
    train_rows = info.rows - n_test_rows(info.rows)
    return StreamData(source, train_rows if n_rows is None else n_rows, info.features, "float64", False,
                      reader_thread), path, train_rows


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
