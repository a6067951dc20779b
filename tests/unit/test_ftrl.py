"""FTRL-proximal: the native solver against a plain-Python reference, its L1
sparsity, dense vs sparse input, and its knobs."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.spec.config import validate
from svmcore.spec.errors import ConfigError
from svmcore.worker.ftrl import NativeFTRL


def reference_ftrl(X, y, l1, l2, alpha, beta):
    """McMahan et al. (2013), algorithm 1, one row at a time in plain Python; the
    intercept is one more coordinate with value 1 and no L1/L2."""
    d = X.shape[1]
    z, n = [0.0] * (d + 1), [0.0] * (d + 1)

    def weight(j):
        r1, r2 = (0.0, 0.0) if j == d else (l1, l2)
        if abs(z[j]) <= r1:
            return 0.0
        return -(z[j] - math.copysign(r1, z[j])) / ((beta + math.sqrt(n[j])) / alpha + r2)

    X = sp.csr_matrix(X)
    for i in range(X.shape[0]):
        row = X[i]
        pairs = [(int(j), float(v)) for j, v in zip(row.indices, row.data) if v != 0.0] + [(d, 1.0)]
        margin = sum(weight(j) * v for j, v in pairs)
        margin = max(-35.0, min(35.0, margin))
        g0 = 1.0 / (1.0 + math.exp(-margin)) - float(y[i])
        for j, v in pairs:
            g = g0 * v
            sigma = (math.sqrt(n[j] + g * g) - math.sqrt(n[j])) / alpha
            z[j] += g - sigma * weight(j)
            n[j] += g * g
    return np.array([weight(j) for j in range(d)]), weight(d)


def problem(rows=300, d=40, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(rows, d, density=0.15, format="csr", random_state=seed)
    w = rng.normal(size=d)
    y = (X @ w + 0.1 * rng.normal(size=rows) > 0).astype(int)
    return X, y


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("classes", [2, 3])
def test_weights_and_scores_equal_a_plain_python_reference(classes, dtype):
    """The C kernels (``native/ftrl.c``) are algorithm 1, one vector per class for more than two
    (one-vs-rest), in float64 arithmetic whatever the values' type; they gave the numba kernels'
    weights bit for bit before those were retired."""
    X, y = problem()
    X = X.astype(dtype)
    if classes == 3:
        y = y + (np.asarray(X.sum(axis=1)).ravel() > 1.0).astype(int)
    m = NativeFTRL(0.05, 0.5, 0.3, 1.0, X.shape[1], np.arange(classes))
    for s in range(0, X.shape[0], 64):  # batches carry the state across
        m.partial_fit(X[s:s + 64], y[s:s + 64])
    for v in range(m.n_vectors):
        target = y if classes == 2 else (y == v).astype(int)
        w_ref, b_ref = reference_ftrl(X.astype(np.float64), target, 0.05, 0.5, 0.3, 1.0)
        np.testing.assert_allclose(m.coef_[v], w_ref, rtol=1e-10, atol=1e-12)
        assert m.intercept_[v] == pytest.approx(b_ref, rel=1e-10, abs=1e-12)
        assert np.abs(w_ref).sum() > 0
    scores = X.astype(np.float64) @ m.coef_.T + m.intercept_
    np.testing.assert_allclose(m.decision_function(X), scores.ravel() if classes == 2 else scores, rtol=1e-10,
                               atol=1e-12)
    assert m.nonzero_weights() == np.count_nonzero(m.coef_)


def test_l1_yields_sparse_weights():
    X, y = problem(rows=500, d=200)
    dense_model = NativeFTRL(0.0, 0.1, 0.3, 1.0, X.shape[1], [0, 1]).partial_fit(X, y)
    sparse_model = NativeFTRL(5.0, 0.1, 0.3, 1.0, X.shape[1], [0, 1]).partial_fit(X, y)
    nz_dense = np.count_nonzero(dense_model.coef_)
    nz_sparse = np.count_nonzero(sparse_model.coef_)
    assert nz_sparse < nz_dense / 2
    assert nz_sparse > 0


def test_dense_and_sparse_input_give_the_same_weights():
    X, y = problem()
    a = NativeFTRL(0.05, 0.5, 0.3, 1.0, X.shape[1], [0, 1]).partial_fit(X, y)
    b = NativeFTRL(0.05, 0.5, 0.3, 1.0, X.shape[1], [0, 1]).partial_fit(X.toarray(), y)
    c = NativeFTRL(0.05, 0.5, 0.3, 1.0, X.shape[1], [0, 1]).partial_fit(
        (X.data.astype(np.float64), X.indices, X.indptr.astype(np.int64)), y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.coef_, c.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


def test_multiclass_is_one_vs_rest_and_learns():
    rng = np.random.default_rng(1)
    centers = np.eye(3) * 4
    X = np.vstack([rng.normal(c, 1.0, size=(100, 3)) for c in centers])
    y = np.repeat([0, 1, 2], 100)
    m = NativeFTRL(0.0, 0.0, 0.5, 1.0, 3, [0, 1, 2])
    for _ in range(5):
        m.partial_fit(X, y)
    assert m.coef_.shape == (3, 3)
    assert (m.predict(X) == y).mean() > 0.9


def test_unknown_label_is_refused():
    m = NativeFTRL(0.0, 0.0, 0.5, 1.0, 2, [0, 1])
    with pytest.raises(ValueError, match="not one of the classes"):
        m.partial_fit(np.ones((1, 2)), np.array([5]))


def test_knobs_validate():
    cfg = validate(solver="ftrl", l1=0.5, l2="2", ftrl_alpha=0.2, ftrl_beta=0)
    assert (cfg.solver, cfg.l1, cfg.l2, cfg.ftrl_alpha, cfg.ftrl_beta) == ("ftrl", 0.5, 2.0, 0.2, 0.0)
    for name, bad in (("l1", -1), ("l2", "x"), ("ftrl_alpha", 0), ("ftrl_beta", float("nan")), ("solver", "adam")):
        with pytest.raises(ConfigError) as e:
            validate({"solver": "ftrl", name: bad})
        assert e.value.knob == name


def test_the_same_seed_gives_the_same_weights_with_shuffling():
    from svmcore.data.feeds.memory import InMemory
    from svmcore.data.shuffle_order import Shuffle
    from tests.helpers import parts_of

    X, y = problem(rows=400, d=60)
    classes = np.array([0, 1])

    def train(seed, precision):
        m = NativeFTRL(0.05, 0.5, 0.3, 1.0, X.shape[1], classes)
        dtype = np.float32 if precision == "float32" else np.float64
        data = InMemory(parts_of(X.tocsr()).stored(dtype), np.searchsorted(classes, y), dtype, Shuffle(seed, 128))
        for epoch in range(2):
            for Xb, codes in data.batches(50, epoch):
                m.partial_fit(Xb.csr(X.shape[1]), classes[codes])
        return m.coef_.copy()

    for precision in ("float64", "float32"):
        np.testing.assert_array_equal(train(1, precision), train(1, precision))
        assert not np.array_equal(train(1, precision), train(2, precision))
