"""scikit-learn's ``SGDClassifier`` (hinge loss) as a ``solvers.LinearModel``: CSR parts become a
``csr_matrix`` here, at the estimator's boundary, and its float arrays are the state that
parameter mixing averages."""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import SGDClassifier

from svmcore.data.rows import Dense
from svmcore.worker.solvers import LinearSolver, read_batch

# fitted arrays that are not trainable numbers (a constant per class)
_NOT_STATE = ("_expanded_class_weight",)


class SklearnSGD(LinearSolver):
    """``SGDClassifier(loss="hinge", alpha, average, random_state=seed).partial_fit``; its
    rows are shuffled within each batch by the estimator (the seed makes it repeatable)."""

    def __init__(self, alpha: float, average: bool, n_features: int, classes, seed: int = 0):
        super().__init__(n_features, classes)
        self.estimator = SGDClassifier(loss="hinge", alpha=alpha, average=average, random_state=seed)

    @classmethod
    def from_config(cls, cfg, width: int, classes, alpha: float, l2: float | None) -> SklearnSGD:
        return cls(alpha, cfg.average, width, classes, seed=cfg.seed)

    def _matrix(self, X):
        """What the estimator takes: parts as a csr_matrix (no copy), the rest as given,
        after the width check."""
        batch = read_batch(X, self.n_features)
        return batch.array if isinstance(batch, Dense) else batch.csr(self.n_features)

    def fit_codes(self, X, codes: np.ndarray):
        return self.partial_fit(X, self.classes_[np.asarray(codes)])

    def partial_fit(self, X, y, classes=None):
        X = self._matrix(X)
        y = self.classes_[self.codes(y)]
        if X.shape[0] == 0:
            raise ValueError("an empty batch (no rows) cannot be trained on")
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"{X.shape[0]} rows but {y.shape[0]} labels")
        self.estimator.partial_fit(X, y, classes=self.classes_)
        return self

    def decision_function(self, X) -> np.ndarray:
        X = self._matrix(X)
        if X.shape[0] == 0:  # the estimator refuses no rows; the other solvers score them as none
            return np.empty((0,) if self.n_vectors == 1 else (0, self.n_vectors))
        return self.estimator.decision_function(X)

    @property
    def t_(self) -> float:
        return float(getattr(self.estimator, "t_", 1.0))  # scikit-learn's before its first step: 1

    @property
    def coef_(self) -> np.ndarray:
        return self.estimator.coef_.copy()

    @property
    def intercept_(self) -> np.ndarray:
        return self.estimator.intercept_.copy()

    def nonzero_weights(self) -> int:
        return int(np.count_nonzero(self.estimator.coef_))

    def get_state(self) -> dict:
        """Every float array of the fitted estimator (weights, intercept, the averaged copies
        and the plain SGD iterate behind them) and its step count ``t_``."""
        out = {k: v for k, v in vars(self.estimator).items()
               if isinstance(v, np.ndarray) and v.dtype.kind == "f" and k not in _NOT_STATE}
        out["t_"] = self.t_
        return out

    def set_state(self, state: dict) -> None:
        mine = self.get_state()
        if set(state) != set(mine):
            raise ValueError(f"a state of SklearnSGD has {sorted(mine)}, not {sorted(state)}")
        for k, v in state.items():
            if k != "t_" and np.shape(v) != mine[k].shape:
                raise ValueError(f"state {k!r} is of shape {np.shape(v)}, the model's {mine[k].shape}")
        for k, v in state.items():
            setattr(self.estimator, k, v)

    def arrays(self) -> dict[str, np.ndarray]:
        held = {"classes_": self.classes_}
        for k, v in vars(self.estimator).items():
            if isinstance(v, np.ndarray):
                held[f"estimator.{k}"] = v
        return held
