"""The compiled SGD is scikit-learn's algorithm: same weights to rounding."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import SGDClassifier

from svmcore.worker.native_sgd import NativeSGD


def _data(n=2000, f=300, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, f, density=0.05, format="csr", random_state=seed)
    if classes == 2:
        y = (X @ rng.normal(size=f) > 0).astype(int)
    else:
        y = np.argmax(X @ rng.normal(size=(f, classes)), axis=1)
    return X, y


def _pair(X, y, classes, average, batch, dense=False):
    a = SGDClassifier(loss="hinge", alpha=1e-4, average=average, shuffle=False)
    b = NativeSGD(1e-4, average, X.shape[1], np.arange(classes))
    Xs = X.toarray() if dense else X
    for s in range(0, X.shape[0], batch):
        a.partial_fit(Xs[s:s + batch], y[s:s + batch], classes=np.arange(classes))
        b.partial_fit(Xs[s:s + batch], y[s:s + batch])
    return a, b


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("dense", [False, True])
def test_plain_sgd_matches_scikit_learn_over_many_batches(classes, dense):
    X, y = _data(classes=classes)
    a, b = _pair(X, y, classes, average=False, batch=256, dense=dense)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(b.intercept_, a.intercept_, rtol=1e-9, atol=1e-9)
    assert (b.predict(X) == a.predict(X)).all()


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("batch", [97, 256, 2000])
def test_averaged_two_class_sgd_matches_scikit_learn_over_many_batches(dense, batch):
    # scikit-learn keeps a two-class averaged model's plain intercept only before averaging
    # begins (at once), so every partial_fit call starts it at 0 again; so does NativeSGD
    X, y = _data(seed=1)
    a, b = _pair(X, y, 2, average=True, batch=batch, dense=dense)
    assert a._standard_intercept.tolist() == [0.0]
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(b.intercept_, a.intercept_, rtol=1e-9, atol=1e-9)
    assert (b.predict(X) == a.predict(X)).all()


@pytest.mark.parametrize("dense", [False, True])
def test_averaged_multiclass_sgd_matches_scikit_learn_in_one_call(dense):
    # Across several partial_fit calls scikit-learn restarts a multiclass averaged run's plain
    # intercepts from their values after the first call and writes them over its averaged ones
    # from the second call on; NativeSGD keeps averaging them, so the comparison is one call.
    X, y = _data(classes=3, seed=1)
    a, b = _pair(X, y, 3, average=True, batch=X.shape[0], dense=dense)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(b.intercept_, a.intercept_, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("average, classes", [(False, 2), (True, 3)])
def test_weights_do_not_depend_on_batch_size(average, classes):
    """Where scikit-learn restarts nothing per call, the batches are one pass."""
    X, y = _data(classes=classes, seed=2)
    one = NativeSGD(1e-4, average, X.shape[1], np.arange(classes)).partial_fit(X, y)
    many = NativeSGD(1e-4, average, X.shape[1], np.arange(classes))
    for s in range(0, X.shape[0], 97):
        many.partial_fit(X[s:s + 97], y[s:s + 97])
    np.testing.assert_allclose(many.coef_, one.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(many.intercept_, one.intercept_, rtol=1e-9, atol=1e-12)


def test_csr_parts_float32_and_int64_indptr_give_the_same_model():
    X, y = _data(seed=3)
    a = NativeSGD(1e-5, True, X.shape[1], [0, 1]).partial_fit(X, y)
    X32 = X.astype(np.float32)
    b = NativeSGD(1e-5, True, X.shape[1], [0, 1]).partial_fit(
        (X32.data, X32.indices, X32.indptr.astype(np.int64)), y)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-4, atol=1e-6)


def test_weight_scale_reset_keeps_the_model_finite():
    # a large alpha shrinks the scale below 1e-9 quickly: the reset must keep it exact
    X, y = _data(n=500, seed=4)
    a, b = _pair(X, y, 2, average=False, batch=50)
    a2 = SGDClassifier(loss="hinge", alpha=5.0, shuffle=False)
    b2 = NativeSGD(5.0, False, X.shape[1], [0, 1])
    for s in range(0, 500, 50):
        a2.partial_fit(X[s:s + 50], y[s:s + 50], classes=[0, 1])
        b2.partial_fit(X[s:s + 50], y[s:s + 50])
    assert np.isfinite(b2.coef_).all()
    np.testing.assert_allclose(b2.coef_, a2.coef_, rtol=1e-7, atol=1e-12)


def test_string_labels_and_unknown_labels():
    X, _ = _data(n=10)
    y = np.array(["ham", "spam"] * 5)
    m = NativeSGD(1e-4, False, X.shape[1], ["ham", "spam"]).partial_fit(X, y)
    assert set(m.predict(X)) <= {"ham", "spam"}
    with pytest.raises(ValueError, match="'eggs' is not one of the classes"):
        m.partial_fit(X[:2], np.array(["ham", "eggs"]))


def test_one_class_is_refused():
    with pytest.raises(ValueError, match="two classes"):
        NativeSGD(1e-4, False, 3, [1])


def test_the_native_solver_matches_scikit_learn_over_many_batches_on_its_fast_path():
    from svmcore.worker.native_sgd import NativeSGD

    X, y = _data(seed=1)
    a = SGDClassifier(loss="hinge", alpha=1e-4, average=True, shuffle=False)
    b = NativeSGD(1e-4, True, X.shape[1], np.arange(2))
    for s in range(0, X.shape[0], 256):
        Xb = X[s:s + 256]
        a.partial_fit(Xb, y[s:s + 256], classes=np.arange(2))
        b.fit_codes((Xb.data, Xb.indices, Xb.indptr.astype(np.int64)), y[s:s + 256].astype(np.int64))
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(b.intercept_, a.intercept_, rtol=1e-9, atol=1e-9)
