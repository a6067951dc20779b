"""The compiled solvers score rows from their training state: the same scores as the
explicit ``X @ coef_.T + intercept_`` to rounding, with no weight-sized allocation."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.worker.ftrl import NativeFTRL
from svmcore.worker.native_sgd import NativeSGD


MAKERS = {
    "native": lambda average, width, classes: NativeSGD(1e-4, average, width, classes),
    "ftrl": lambda average, width, classes: NativeFTRL(0.5, 0.1, 0.1, 1.0, width, classes),
}
CASES = [("native", True), ("native", False), ("ftrl", False)]


def _data(n=600, f=200, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, f, density=0.05, format="csr", random_state=seed)
    y = (np.argmax(X @ rng.normal(size=(f, classes)), axis=1) if classes > 2
         else (X @ rng.normal(size=f) > 0).astype(int))
    return X, y


def _trained(solver, average, classes, X, y):
    m = MAKERS[solver](average, X.shape[1], np.arange(classes))
    for s in range(0, X.shape[0], 128):
        m.partial_fit(X[s:s + 128], y[s:s + 128])
    return m


def _explicit(m, X):
    scores = np.asarray(X @ m.coef_.T + m.intercept_)
    return scores.ravel() if scores.shape[1] == 1 else scores


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize(("solver", "average"), CASES)
def test_decision_function_is_coef_times_x_plus_intercept(solver, average, classes):
    X, y = _data(classes=classes, seed=classes)
    m = _trained(solver, average, classes, X, y)
    want = _explicit(m, X)
    assert np.abs(want).max() > 0
    X32 = X.astype(np.float32)
    for rows, ref in ((X, want), (X.toarray(), want),
                      ((X32.data, X32.indices, X32.indptr.astype(np.int64)), _explicit(m, X32))):
        got = m.decision_function(rows)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    pred = m.predict(X)
    want_pred = m.classes_[(want > 0).astype(int)] if want.ndim == 1 else m.classes_[want.argmax(axis=1)]
    assert (pred == want_pred).mean() > 0.999  # ties at a margin of exactly 0 aside
    assert m.nonzero_weights() == np.count_nonzero(m.coef_)


@pytest.mark.parametrize("solver", ["native", "ftrl"])
def test_float16_and_integer_rows_are_scored_as_float64(solver):
    X, y = _data()
    m = _trained(solver, True, 2, X, y)
    half = X.data.astype(np.float16)
    want = m.decision_function(sp.csr_matrix((half.astype(np.float64), X.indices, X.indptr), shape=X.shape))
    np.testing.assert_array_equal(m.decision_function((half, X.indices, X.indptr)), want)  # float16 storage
    np.testing.assert_allclose(m.decision_function(X.toarray().astype(np.float16)), want, rtol=1e-12, atol=1e-12)
    ones = (X > 0).astype(np.int64)
    np.testing.assert_array_equal(m.decision_function(ones.toarray()), m.decision_function(ones.astype(np.float64)))


def test_unaveraged_start_scores_from_the_plain_weights():
    # before the second row the averaged model answers with its plain weights
    X, y = _data(n=1)
    m = NativeSGD(1e-4, True, X.shape[1], [0, 1]).partial_fit(X, y)
    np.testing.assert_allclose(m.decision_function(X), _explicit(m, X), rtol=1e-12, atol=1e-12)


def test_a_column_beyond_the_model_is_a_clear_error():
    X, y = _data()
    m = NativeSGD(1e-4, True, X.shape[1], [0, 1]).partial_fit(X, y)
    with pytest.raises(ValueError, match="column"):
        m.decision_function(sp.csr_matrix(([1.0], ([0], [X.shape[1] + 3])), shape=(1, X.shape[1] + 4)))
    with pytest.raises(ValueError, match="columns"):
        m.decision_function(np.zeros((2, X.shape[1] + 1)))


@pytest.mark.parametrize(("solver", "average"), CASES)
def test_scoring_allocates_nothing_of_the_weights_size(solver, average):
    width = 2**20  # 8 MiB a weight array
    rng = np.random.default_rng(5)
    n, nnz = 300, 50  # like text: a few dozen nonzeros a row
    X = sp.csr_matrix((rng.random(n * nnz), rng.integers(0, width, n * nnz), np.arange(0, n * nnz + 1, nnz)),
                      shape=(n, width))
    X.sum_duplicates()
    m = _trained(solver, average, 3, X, rng.integers(0, 3, n))
    # dense rows are scored as CSR parts a slice of at most 2^20 cells at a time (a 1 MiB mask)
    dense = np.zeros((4, width))
    dense[:, :50] = 1.0
    m.decision_function(X[:10])  # the library loaded outside the count
    m.decision_function(dense)
    m.nonzero_weights()
    tracemalloc.start()
    try:
        for rows in (X, dense):
            tracemalloc.reset_peak()
            m.decision_function(rows)
            m.predict(rows)
            assert tracemalloc.get_traced_memory()[1] < width * 8 // 4, type(rows)
        tracemalloc.reset_peak()
        m.nonzero_weights()
        assert tracemalloc.get_traced_memory()[1] < width * 8 // 4
    finally:
        tracemalloc.stop()
