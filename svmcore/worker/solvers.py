"""What every linear solver offers the training loops (``LinearModel``), the parts they share,
and ``make``: the solver of a run's config, from its registry entry (``spec.registry``).

Three solvers train the linear models: scikit-learn's SGD (``sklearn_sgd.SklearnSGD``),
the same SGD in the native library (``native_sgd.NativeSGD``) and FTRL-proximal
(``ftrl.NativeFTRL``). The loops call
``partial_fit`` a batch at a time, score with ``decision_function``/``predict``, count
the nonzero weights for the run's model size, read ``memory()`` for the model's bytes
and, for data-parallel runs, mix models through ``get_state``/``set_state``.

A batch is CSR parts ``(data, indices, indptr)`` (what the readers yield; memory-mapped
arrays too), a scipy sparse matrix (duck-typed: this module imports numpy only, the lean
worker uses it) or a dense array. Values that are neither float64 nor float32 are taken
as float32 (float16 storage) or float64 (integers).

Imported by the lean worker: numpy only.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from svmcore.data.rows import Dense, Parts
from svmcore.spec.registry import load


@runtime_checkable
class LinearModel(Protocol):
    """A linear classifier trained a batch at a time: one weight vector per class, or
    one in all for two classes (scikit-learn's one-vs-rest)."""

    classes_: np.ndarray
    n_features: int
    t_: float  # the step count (rows seen): what sets SGD's learning rate

    def partial_fit(self, X, y, classes=None) -> LinearModel:
        """One pass over a batch, rows in the order given; ``classes`` is accepted for
        scikit-learn's signature (the solver's classes are fixed when it is made)."""

    def decision_function(self, X) -> np.ndarray:
        """Scores, float64: (rows,) for two classes, (rows, classes) above."""

    def predict(self, X) -> np.ndarray:
        """Class labels of the rows."""

    @property
    def coef_(self) -> np.ndarray:
        """The weights, (vectors, features): a new array as large as the weights (the
        model export's); scoring never needs it."""

    @property
    def intercept_(self) -> np.ndarray:
        """The intercepts, (vectors,)."""

    def nonzero_weights(self) -> int:
        """The nonzero coefficients, counted without a copy of the weights."""

    def get_state(self) -> dict:
        """The trainable numbers as {name: array or float}, ``t_`` among them: what
        parameter mixing averages (a row-weighted mean of each) and ``set_state`` takes."""

    def set_state(self, state: dict) -> None:
        """Replace the trainable numbers by ``state`` (the keys and shapes of ``get_state``)."""

    def memory(self) -> dict[str, int]:
        """The bytes of every array the solver holds, by name."""


def make(cfg, width: int, classes, alpha: float, l2: float | None) -> LinearModel:
    """The linear model ``cfg``'s solver trains, over ``width`` columns: its registry entry's
    class, made from the config (``from_config``) with the run's regularisation."""
    return load(cfg.solver_entry.factory).from_config(cfg, width, classes, alpha, l2)


def floats(a: np.ndarray) -> np.ndarray:
    """Values as the kernels take them: float64 and float32 as they are, float16 as float32
    (exact, half the bytes of float64), anything else as float64."""
    if a.dtype in (np.float64, np.float32):
        return a
    return a.astype(np.float32 if a.dtype == np.float16 else np.float64)


def read_batch(X, n_features: int) -> Parts | Dense:
    """``X`` as CSR parts or dense rows, checked against the model's width: a row using a
    column at or beyond ``n_features`` is refused, naming it (rows narrower than the model
    leave its last weights untouched)."""
    if isinstance(X, tuple) or hasattr(X, "indptr"):
        if not isinstance(X, tuple):
            X = X.tocsr()
            X = (X.data, X.indices, X.indptr)
        data, indices, indptr = X[:3]
        indptr = np.asarray(indptr)
        if indptr.ndim != 1 or indptr.shape[0] < 1:
            raise ValueError("a CSR batch needs an indptr of at least one entry")
        if indices.shape[0] and int(indices.max()) >= n_features:
            j = int(indices.max())
            raise ValueError(f"a row uses column {j} (feature {j + 1}), beyond the model's {n_features} features")
        if indices.shape[0] and int(indices.min()) < 0:
            raise ValueError(f"a row uses column {int(indices.min())}: columns start at 0")
        return Parts(floats(np.asarray(data)), indices, indptr)
    X = np.asarray(X)
    if X.ndim == 1:
        X = X.reshape(1, -1)
    if X.ndim != 2:
        raise ValueError(f"a batch is a 2-D array of rows, not of shape {X.shape}")
    if X.shape[1] > n_features:
        raise ValueError(f"rows have {X.shape[1]} columns, beyond the model's {n_features}")
    return Dense(np.ascontiguousarray(floats(X)))


DENSE_SCORE_CELLS = 1 << 20


class LinearSolver:
    """What the solvers share: the classes and their codes, the batch checks, ``predict``
    and the memory description. A solver implements ``_fit(batch, codes)``,
    ``_scores(batch, out)`` (into ``out``, rows x vectors) and ``arrays()``."""

    def __init__(self, n_features: int, classes):
        self.classes_ = np.asarray(classes)
        if self.classes_.shape[0] < 2:
            raise ValueError("at least two classes are needed")
        if int(n_features) < 1:
            raise ValueError(f"a model needs at least one feature, not {n_features}")
        self.n_features = int(n_features)
        self.n_vectors = 1 if self.classes_.shape[0] == 2 else self.classes_.shape[0]

    def codes(self, y) -> np.ndarray:
        """Labels as class indices (int64); a label that is not a class is refused, named."""
        y = np.asarray(y)
        codes = np.searchsorted(self.classes_, y)
        codes[codes >= self.classes_.shape[0]] = 0
        bad = self.classes_[codes] != y
        if bad.any():
            raise ValueError(f"label {y[bad][0].item()!r} is not one of the classes {self.classes_.tolist()}")
        return codes.astype(np.int64)

    def partial_fit(self, X, y, classes=None):
        return self.fit_codes(X, self.codes(y))

    def fit_codes(self, X, codes: np.ndarray):
        """One pass over a batch whose labels are class indices already."""
        batch = read_batch(X, self.n_features)
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        if batch.n_rows == 0:
            raise ValueError("an empty batch (no rows) cannot be trained on")
        if codes.shape != (batch.n_rows,):
            raise ValueError(f"{batch.n_rows} rows but {codes.shape[0]} labels")
        self._begin_call()
        self._fit(batch, codes)
        return self

    def _begin_call(self) -> None:
        """Before each batch (one ``partial_fit`` call): nothing, but in ``NativeSGD``."""

    def decision_function(self, X) -> np.ndarray:
        """Scores; dense rows are scored as CSR parts of at most ``DENSE_SCORE_CELLS`` cells
        (one row at least) at a time, the nonzeros in column order as a dense loop would sum
        them (the same scores), so each solver has one scoring kernel and the conversion's
        mask stays under 1 MiB however wide the rows."""
        batch = read_batch(X, self.n_features)
        out = np.empty((batch.n_rows, self.n_vectors))
        if isinstance(batch, Parts):
            self._scores(batch, out)
            return out.ravel() if self.n_vectors == 1 else out
        step = max(1, DENSE_SCORE_CELLS // max(1, batch.array.shape[1]))
        for lo in range(0, batch.n_rows, step):
            self._scores(batch.slice(lo, lo + step).sparse(), out[lo:lo + step])
        return out.ravel() if self.n_vectors == 1 else out

    def predict_codes(self, X) -> np.ndarray:
        scores = self.decision_function(X)
        return (scores > 0).astype(np.int64) if scores.ndim == 1 else scores.argmax(axis=1)

    def predict(self, X) -> np.ndarray:
        return self.classes_[self.predict_codes(X)]

    def memory(self) -> dict[str, int]:
        """``arrays()``'s bytes, an array held under two names counted once."""
        seen, out = set(), {}
        for name, a in self.arrays().items():
            if id(a) not in seen:
                seen.add(id(a))
                out[name] = a.nbytes
        return out

    def _replace(self, state: dict, arrays: tuple[str, ...]) -> None:
        """``set_state``'s checks and assignment: exactly ``arrays`` and ``t_``, each array
        of the shape it replaces."""
        if set(state) != {*arrays, "t_"}:
            raise ValueError(f"a state of {type(self).__name__} has {sorted({*arrays, 't_'})}, not {sorted(state)}")
        for name in arrays:
            new, old = np.asarray(state[name]), getattr(self, name)
            if new.shape != old.shape:
                raise ValueError(f"state {name!r} is of shape {new.shape}, the model's {old.shape}")
        for name in arrays:  # in the type the model keeps it in (its model state)
            setattr(self, name, np.ascontiguousarray(state[name], dtype=getattr(self, name).dtype))
        self.t_ = type(self.t_)(state["t_"])
