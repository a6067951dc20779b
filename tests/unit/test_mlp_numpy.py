"""The numpy MLP: gradients against finite differences, checkpointing gives the same
weights, sparse and dense input give the same weights."""

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.spec.config import kept_layers
from svmcore.worker.mlp_numpy import NumpyMLP


def _data(rows=64, features=12, classes=2, seed=0, density=0.3):
    rng = np.random.default_rng(seed)
    X = sp.random(rows, features, density=density, format="csr", random_state=seed, dtype=np.float64)
    y = rng.integers(0, classes, rows)
    return X, y


def _train(X, y, hidden, checkpoint, steps=5, batch=16, classes=(0, 1), dtype=np.float64):
    net = NumpyMLP(X.shape[1], hidden, classes, alpha=1e-3, checkpoint=checkpoint, seed=3, dtype=dtype)
    for s in range(steps):
        lo = (s * batch) % X.shape[0]
        net.partial_fit(X[lo:lo + batch], y[lo:lo + batch])
    return net


def test_kept_layers():
    assert kept_layers(8, 0) == kept_layers(8, 1) == list(range(1, 9))
    assert kept_layers(8, 2) == [2, 4, 6, 8]
    assert kept_layers(8, 3) == [3, 6]
    assert kept_layers(2, 4) == []


@pytest.mark.parametrize("classes", [2, 3])
def test_gradients_match_finite_differences(classes):
    X, y = _data(rows=20, features=6, classes=classes)
    net = NumpyMLP(6, (5, 4, 3), list(range(classes)), alpha=0.1, checkpoint=2, seed=1)
    grads = net.gradients(X, y)
    params = net._params()
    h = 1e-6
    for p, g in zip(params, grads):
        flat, gflat = p.reshape(-1), g.reshape(-1)
        for j in range(0, flat.size, max(1, flat.size // 7)):
            old = flat[j]
            flat[j] = old + h
            up = net.loss(X, y)
            flat[j] = old - h
            down = net.loss(X, y)
            flat[j] = old
            assert gflat[j] == pytest.approx((up - down) / (2 * h), rel=1e-4, abs=1e-8)


@pytest.mark.parametrize("hidden", [(8,), (8, 7, 6), (9, 8, 7, 6, 5, 4, 3, 2)])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_checkpointing_gives_bitwise_equal_weights(hidden, k):
    X, y = _data()
    plain = _train(X, y, hidden, 0)
    ckpt = _train(X, y, hidden, k)
    for a, b in zip(plain._params(), ckpt._params()):
        np.testing.assert_array_equal(a, b)  # same operations on the same inputs: bitwise
    assert (ckpt.recomputed_layers > 0) == (kept_layers(len(hidden), k) != list(range(1, len(hidden) + 1)))


def test_checkpointing_multiclass_float32_bitwise():
    X, y = _data(classes=4)
    a = _train(X, y, (6, 6, 6, 6), 0, classes=(0, 1, 2, 3), dtype=np.float32)
    b = _train(X, y, (6, 6, 6, 6), 2, classes=(0, 1, 2, 3), dtype=np.float32)
    for p, q in zip(a._params(), b._params()):
        assert p.dtype == np.float32
        np.testing.assert_array_equal(p, q)


def test_sparse_and_dense_input_same_weights_to_rounding():
    X, y = _data()
    s = _train(X, y, (8, 6), 2)
    d = _train(X.toarray(), y, (8, 6), 2)
    for a, b in zip(s._params(), d._params()):
        # sparse and dense products sum in different orders: equal to rounding, not bitwise
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_learns_a_separable_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    net = NumpyMLP(5, (16, 16), [0, 1], alpha=1e-4, checkpoint=2, seed=0, learning_rate=1e-2)
    for _ in range(30):
        for lo in range(0, 400, 50):
            net.partial_fit(X[lo:lo + 50], y[lo:lo + 50])
    assert (net.predict(X) == y).mean() > 0.95


@pytest.mark.parametrize("k", [0, 2, 3, 4])
def test_the_memory_model_counts_what_a_step_allocates(k):
    """predict.model's activations and step bytes against tracemalloc's peak of one step."""
    import tracemalloc

    from svmcore.predict.model_parts import activation_values, mlp_numpy_bytes
    from svmcore.spec.config import validate

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(512, 50)), rng.integers(0, 2, 512)
    cfg = validate(model="mlp-numpy", hidden="256,256,256,256,256,256", checkpoint=k, batch_size=512,
                   dataset="dense", features=50)
    net = NumpyMLP(50, cfg.hidden_sizes, [0, 1], checkpoint=k)
    held = sum(a.nbytes for a in net._params() + net._m + net._v)
    assert held == mlp_numpy_bytes(cfg, 50, 1)[0]
    net.partial_fit(X, y)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        net.partial_fit(X, y)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    predicted = activation_values(cfg, 1) * 512 * 8 + mlp_numpy_bytes(cfg, 50, 1)[1]
    assert peak == pytest.approx(predicted, rel=0.05)
