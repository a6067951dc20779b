"""Every linear solver through the same checks (scikit-learn's "common checks" idea): one
fixture over the registry's solvers (``spec.registry.SOLVERS``), and each that keeps its state
in float32 once more so (``name:float32``), each check run on each. Where solvers
legitimately differ, the check says so."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.spec.config import validate
from svmcore.spec.registry import FLOAT32_STATE_SOLVERS, SOLVERS
from svmcore.worker import parallel, solvers
from svmcore.worker.solvers import LinearModel

VARIANTS = (*SOLVERS, *(f"{s}:float32" for s in FLOAT32_STATE_SOLVERS))
WIDTH = 40


def make(name: str, width: int = WIDTH, classes=(0, 1), average: bool = True, seed: int = 0) -> LinearModel:
    """``name``: a solver, or ``solver:float32`` for its float32 model state; made as a run makes it."""
    solver, _, state = name.partition(":")
    cfg = validate(solver=solver, model_state=state or "float64", average=average, seed=seed, l1=0.01,
                   ftrl_alpha=0.5, ftrl_beta=1.0)
    return solvers.make(cfg, width, classes, alpha=1e-4, l2=0.01)


@pytest.fixture(params=VARIANTS)
def name(request) -> str:
    return request.param


def separable(n: int = 600, width: int = WIDTH, classes: int = 2, seed: int = 0):
    """Sparse rows labelled by a linear rule with a margin (rows too close to it dropped)."""
    rng = np.random.default_rng(seed)
    X = sp.random(3 * n, width, density=0.25, format="csr", random_state=seed, dtype=np.float64)
    scores = X @ rng.normal(size=(width, classes))
    if classes == 2:
        margin = scores[:, 1] - scores[:, 0]
        keep = np.flatnonzero(np.abs(margin) > 0.3)[:n]
        return X[keep], (margin[keep] > 0).astype(np.int64)
    top = np.sort(scores, axis=1)
    keep = np.flatnonzero(top[:, -1] - top[:, -2] > 0.3)[:n]
    return X[keep], scores[keep].argmax(axis=1)


def batches(X, y, size: int = 100):
    for s in range(0, X.shape[0], size):
        yield X[s:s + size], y[s:s + size]


def trained(name: str, X, y, epochs: int = 5, classes=(0, 1)) -> LinearModel:
    m = make(name, X.shape[1], classes)
    for _ in range(epochs):
        for Xb, yb in batches(X, y):
            m.partial_fit(Xb, yb, classes=np.asarray(classes))
    return m


def parts(X):
    X = X.tocsr()
    return X.data, X.indices, X.indptr.astype(np.int64)


def test_every_solver_follows_the_protocol(name):
    """Once fitted (scikit-learn's estimator has no coef_ before its first batch)."""
    assert isinstance(make(name).partial_fit(np.eye(WIDTH)[:2], [0, 1]), LinearModel)


@pytest.mark.parametrize("classes", [2, 3])
def test_learns_a_separable_problem(name, classes):
    X, y = separable(classes=classes, seed=classes)
    m = trained(name, X, y, epochs=10, classes=tuple(range(classes)))
    assert (m.predict(X) == y).mean() >= 0.95


@pytest.mark.parametrize("classes", [2, 3])
def test_decision_function_shape_and_dtype_for_every_kind_of_batch(name, classes):
    X, y = separable(classes=classes)
    m = trained(name, X, y, epochs=1, classes=tuple(range(classes)))
    want = (X.shape[0],) if classes == 2 else (X.shape[0], classes)
    for rows in (X, parts(X), X.toarray(), X.astype(np.float32), parts(X.astype(np.float32))):
        got = m.decision_function(rows)
        assert got.shape == want and got.dtype == np.float64
    np.testing.assert_allclose(m.decision_function(parts(X)), m.decision_function(X.toarray()), rtol=1e-12,
                               atol=1e-12)
    # the protocol's export: the scores are X @ coef_.T + intercept_
    explicit = np.asarray(X @ m.coef_.T + m.intercept_)
    np.testing.assert_allclose(m.decision_function(X), explicit.ravel() if classes == 2 else explicit,
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("average, classes", [(False, 2), (True, 3)])
def test_batches_give_the_one_pass_model(name, average, classes):
    """The compiled solvers carry their whole state across calls: batches are one pass,
    exactly (but for what scikit-learn restarts on every call, and so do they: a two-class
    averaged model's plain intercept, ``tests/unit/test_sgd.py``). scikit-learn's partial_fit
    shuffles the rows of each call, so it only approaches the one-pass model (and its accuracy)."""
    X, y = separable(classes=classes)
    labels = np.arange(classes)
    whole = make(name, classes=tuple(labels), average=average).partial_fit(X, y, classes=labels)
    split = make(name, classes=tuple(labels), average=average)
    for Xb, yb in batches(X, y, size=37):
        split.partial_fit(Xb, yb, classes=labels)
    if name == "sklearn":
        assert abs((whole.predict(X) == y).mean() - (split.predict(X) == y).mean()) < 0.05
    else:
        np.testing.assert_allclose(split.coef_, whole.coef_, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(split.intercept_, whole.intercept_, rtol=1e-12, atol=1e-14)
        assert split.t_ == whole.t_


def test_two_solvers_made_alike_train_alike(name):
    X, y = separable()
    a, b = trained(name, X, y, epochs=2), trained(name, X, y, epochs=2)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_dense_and_sparse_rows_train_the_same_weights(name):
    """Zeros leave the weights untouched in every solver. The SGD solvers decay the
    intercept of sparse rows by 0.01 per step and of dense rows by 1 (scikit-learn's
    rule), so their intercepts, and with them the weights, differ; FTRL's are the same."""
    X, y = separable()
    a = make(name).partial_fit(X, y)
    b = make(name).partial_fit(X.toarray(), y)
    if name == "ftrl":
        np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(b.intercept_, a.intercept_, rtol=1e-12, atol=1e-14)
    else:
        assert not np.allclose(a.intercept_, b.intercept_)


def test_dense_rows_score_as_their_sparse_form_across_score_slices(name, monkeypatch):
    """Dense rows are scored as CSR parts a slice at a time: the same scores as the sparse
    rows, bit for bit, with slice boundaries inside the batch (7 rows a slice here).
    scikit-learn's estimator scores dense rows with BLAS: the same to rounding."""
    from svmcore.worker import solvers
    monkeypatch.setattr(solvers, "DENSE_SCORE_CELLS", 7 * WIDTH)
    X, y = separable(classes=3)
    m = trained(name, X, y, epochs=1, classes=(0, 1, 2))
    same = (lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12)) if name == "sklearn" \
        else np.testing.assert_array_equal
    for dtype in (np.float64, np.float32):
        part = X[:50].astype(dtype)
        same(m.decision_function(part.toarray()), m.decision_function(part))


@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("which", ["native", "native:float32"])
def test_released_coefficients_are_coef_bit_for_bit_without_a_weight_sized_copy(which, average):
    """The model export's ``release_coef``: the coefficients folded into the weight array
    itself (in its type: float32 state gives them rounded to float32), a block at a time; only
    a block's worth is allocated, and the solver is spent."""
    import tracemalloc
    X, y = separable(classes=3)
    width = 1 << 16
    m = make(which, width, classes=(0, 1, 2), average=average)
    for Xb, yb in batches(sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width)), y):
        m.partial_fit(Xb, yb)
    expected = m.coef_
    tracemalloc.start()
    try:
        coef = m.release_coef(block=1 << 10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert coef.dtype == np.dtype(which.partition(":")[2] or "float64")
    np.testing.assert_array_equal(coef, expected.astype(coef.dtype))
    assert peak < expected.nbytes // 8, peak
    assert m.w is None and m.aw is None


def test_ftrl_releases_its_coefficients_in_place_and_lets_n_go():
    """FTRL's ``release_coef``: the weights computed into z itself (each from its own z and n),
    bit for bit ``coef_``, with no weight-sized array allocated; n is let go."""
    import tracemalloc
    import weakref
    X, y = separable(classes=3)
    width = 1 << 16
    m = make("ftrl", width, classes=(0, 1, 2))
    for Xb, yb in batches(sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width)), y):
        m.partial_fit(Xb, yb)
    expected, n = m.coef_, weakref.ref(m.n)
    tracemalloc.start()
    try:
        coef = m.release_coef()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(coef, expected)
    assert peak < expected.nbytes // 8, peak
    assert m.z is None and m.n is None and n() is None


def test_the_native_solvers_fast_path_trains_the_models_of_its_checked_path():
    """CSR parts of the kernel's types go straight to the kernel through weights checked once
    (``binding.SGDFit``); anything else through the checked path. Same weights to the bit,
    int32 codes (the spill's) too; a model that trained that way still pickles."""
    import pickle
    import weakref

    X, y = separable(classes=3)
    fast, checked = make("native", classes=(0, 1, 2)), make("native", classes=(0, 1, 2))
    for _ in range(2):
        for Xb, yb in batches(X, y):
            data, indices, indptr = parts(Xb)
            fast.fit_codes((data, indices.astype(np.int32), indptr), yb.astype(np.int32))
            checked.fit_codes(Xb, yb)  # a scipy matrix (int32 indptr): the checked path
    assert fast._bound is not None and checked._bound is None
    assert np.array_equal(fast.coef_, checked.coef_) and np.array_equal(fast.intercept_, checked.intercept_)
    assert fast.t_ == checked.t_
    again = pickle.loads(pickle.dumps(fast))
    assert again._bound is None and np.array_equal(again.decision_function(X), fast.decision_function(X))
    again.fit_codes(parts(X[:10]), y[:10])  # binds to its own arrays, not to the pickled model's
    assert again._bound.bound_to(again.w, again.aw, again.state) and not np.array_equal(again.coef_, fast.coef_)
    average = weakref.ref(fast.aw)
    fast.release_coef()
    assert average() is None  # the binding does not keep the average the export lets go


def test_state_round_trips_and_a_mix_of_copies_is_the_model(name):
    X, y = separable()
    m = trained(name, X, y, epochs=2)
    before = m.decision_function(X)
    state = m.get_state()
    assert "t_" in state and all(isinstance(v, np.ndarray) for k, v in state.items() if k != "t_")
    # folding changes nothing, but a float32 state's rounding of the folded weights
    rtol = 1e-5 if name.endswith(":float32") else 1e-10
    np.testing.assert_allclose(m.decision_function(X), before, rtol=rtol, atol=1e-12)
    before = m.decision_function(X)
    other = make(name)
    other.partial_fit(X[:5], y[:5])  # scikit-learn's estimator has its arrays only once fitted
    other.set_state(copy.deepcopy(state))
    np.testing.assert_allclose(other.decision_function(X), before, rtol=1e-10, atol=1e-12)
    assert other.t_ == m.t_
    m.set_state(parallel.mix([state, copy.deepcopy(state)], [3, 1], start_t=state["t_"]))
    np.testing.assert_allclose(m.decision_function(X), before, rtol=1e-10, atol=1e-12)


def test_set_state_refuses_a_state_of_another_shape_or_kind(name):
    X, y = separable()
    m = trained(name, X, y, epochs=1)
    state = m.get_state()
    with pytest.raises(ValueError, match="state"):
        m.set_state({k: v for k, v in state.items() if k != "t_"})
    array = next(k for k in state if k != "t_")
    with pytest.raises(ValueError, match=f"state '{array}' is of shape"):
        m.set_state({**state, array: np.zeros(np.shape(state[array]) + (2,))})


def test_nonzero_count_is_the_nonzero_coefficients(name):
    X, y = separable()
    m = trained(name, X, y, epochs=2, classes=(0, 1))
    assert 0 < m.nonzero_weights() == np.count_nonzero(m.coef_)
    if name != "sklearn":  # scikit-learn's estimator has no weights before its first batch
        assert make(name).nonzero_weights() == 0


def test_ftrl_l1_zeroes_weights_the_sgd_solvers_keep():
    """The count is of a sparse model: FTRL's L1 leaves weights at exactly zero, L2 SGD does not."""
    X, y = separable(width=400)
    from svmcore.worker.ftrl import NativeFTRL
    ftrl = NativeFTRL(2.0, 0.01, 0.5, 1.0, 400, (0, 1)).partial_fit(X, y)
    assert ftrl.nonzero_weights() < trained("native", X, y, epochs=1).nonzero_weights()


def test_refuses_rows_wider_than_the_model_naming_the_column(name):
    m = make(name, width=5)
    y = np.array([0, 1])
    wide = sp.csr_matrix(([1.0, 1.0], ([0, 1], [2, 7])), shape=(2, 8))
    for rows in (wide, parts(wide)):
        with pytest.raises(ValueError, match=r"column 7 \(feature 8\), beyond the model's 5 features"):
            m.partial_fit(rows, y)
        with pytest.raises(ValueError, match="column 7"):
            m.decision_function(rows)
    with pytest.raises(ValueError, match="rows have 6 columns, beyond the model's 5"):
        m.partial_fit(np.ones((2, 6)), y)
    with pytest.raises(ValueError, match="column -1: columns start at 0"):
        m.partial_fit((np.ones(2), np.array([0, -1], np.int32), np.array([0, 1, 2])), y)


def test_refuses_an_empty_batch_and_labels_that_do_not_fit(name):
    m = make(name, width=5)
    empty = sp.csr_matrix((0, 5))
    with pytest.raises(ValueError, match="empty batch"):
        m.partial_fit(empty, np.array([], np.int64))
    X = sp.csr_matrix(np.eye(5)[:3])
    with pytest.raises(ValueError, match="3 rows but 2 labels"):
        m.partial_fit(X, np.array([0, 1]))
    with pytest.raises(ValueError, match="label 7 is not one of the classes"):
        m.partial_fit(X, np.array([0, 1, 7]))
    with pytest.raises(ValueError, match="two classes"):
        make(name, classes=(1,))


def test_no_rows_score_as_no_scores(name):
    """scikit-learn refuses to score zero rows; the adapter answers like the others."""
    m = make(name, width=5, classes=(0, 1, 2)).partial_fit(sp.csr_matrix(np.eye(5)[:3]), np.array([0, 1, 2]))
    assert m.decision_function(sp.csr_matrix((0, 5))).shape == (0, 3)
    assert make(name, width=5).partial_fit(np.eye(5)[:2], [0, 1]).decision_function(np.zeros((0, 5))).shape == (0,)


def _held(obj, seen=None) -> int:
    """Bytes of every numpy array reachable from an object's attributes (tuples and
    objects with attributes followed), each array once."""
    seen = set() if seen is None else seen
    total = 0
    values = obj if isinstance(obj, (tuple, list)) else vars(obj).values()
    for v in values:
        if isinstance(v, np.ndarray):
            if id(v) not in seen:
                seen.add(id(v))
                total += v.nbytes
        elif isinstance(v, (tuple, list)) or (hasattr(v, "__dict__") and not isinstance(v, type)):
            total += _held(v, seen)
    return total


def test_memory_description_is_the_arrays_held(name):
    X, y = separable(classes=3)
    m = trained(name, X, y, epochs=1, classes=(0, 1, 2))
    mem = m.memory()
    assert all(isinstance(v, int) for v in mem.values())
    assert sum(mem.values()) == _held(m)
    assert sum(mem.values()) >= 3 * WIDTH * 8  # at least one float64 weight per feature and class


def test_a_float32_state_is_the_same_through_either_entry():
    """Float32 model state: the kernel takes every product in float64 and rounds a weight where it
    is stored, whether a batch comes as a scipy matrix (``binding.sgd_fit``) or as CSR parts straight
    to the kernel (``binding.SGDFit``): the same float32 weights, bit for bit, averaged or not."""
    X, y = separable(classes=3)
    for average in (True, False):
        a, b = (make("native:float32", classes=(0, 1, 2), average=average) for _ in range(2))
        for _ in range(3):
            for Xb, yb in batches(X, y):
                a.partial_fit(Xb, yb)
                b.partial_fit((Xb.data, Xb.indices, Xb.indptr.astype(np.int64)), yb)
        assert a.w.dtype == b.w.dtype == np.float32 and a.aw.dtype == np.float32
        assert np.array_equal(a.w, b.w) and np.array_equal(a.aw, b.aw) and np.array_equal(a.state, b.state)


@pytest.mark.parametrize("solver", FLOAT32_STATE_SOLVERS)
def test_float32_state_holds_half_the_weights_and_learns_the_float64_model(solver):
    """Half the bytes of the weights and their average; the same steps, so the coefficients stay
    within float32's rounding of the float64 model's and the predictions agree."""
    X, y = separable(n=2000, width=400)
    wide, narrow = trained(solver, X, y), trained(f"{solver}:float32", X, y)
    assert narrow.memory()["w"] * 2 == wide.memory()["w"] and narrow.memory()["aw"] * 2 == wide.memory()["aw"]
    scale = np.abs(wide.coef_).max()
    assert np.abs(narrow.coef_ - wide.coef_).max() < 1e-4 * scale
    assert (narrow.predict(X) == wide.predict(X)).mean() > 0.995


def test_a_float32_state_mixes_into_float32():
    """Parameter mixing hands a float32 model a mean of states (float64): it keeps its type."""
    X, y = separable()
    m = trained("native:float32", X, y, epochs=1)
    state = {k: (v.astype(np.float64) if isinstance(v, np.ndarray) else v) for k, v in m.get_state().items()}
    m.set_state(state)
    assert m.w.dtype == m.aw.dtype == np.float32
