"""Model factory and the one surface a run trains through (``Trainer``): every model exposes
the same small training surface; the linear models are ``solvers.LinearModel``s. The
``Trainer`` makes its model with the factory its registry entry names (``spec.registry``):
one of the functions below.

A run hands the trainer ``rows.Rows`` blocks and class codes. Incremental models (linear-svm,
kernel-approx, mlp, mlp-numpy) learn from one minibatch at a time (``fit``); the exact kernel
SVM needs all rows at once (``fit_all``). The trainer is the estimators' boundary: a linear
solver takes CSR parts as they are, scikit-learn's estimators and the numpy MLP a scipy CSR
matrix (``Parts.csr``), any of them dense rows with the dense representation; scikit-learn's
take labels, the solvers class codes.
"""

from __future__ import annotations

import numpy as np

from svmcore.spec.choices import Representation
from svmcore.spec.config import RunConfig
from svmcore.spec.regularisation import alpha_for, l2_for, regularisation
from svmcore.spec.registry import load
from svmcore.worker import solvers
from svmcore.worker.solvers import LinearSolver

KERNEL_SAMPLE_ROWS = 2000


def _rbf_gamma(X) -> float:
    """1 / (2 * mean squared row norm) of a block's rows: a scale-free RBF width for the data at hand."""
    P = X.sparse()
    sq = np.bincount(np.repeat(np.arange(P.n_rows), np.diff(P.indptr)), np.asarray(P.data, np.float64) ** 2,
                     minlength=P.n_rows)
    mean = float(sq.mean()) if sq.size else 1.0
    return 1.0 / (2.0 * mean) if mean > 0 else 1.0


class Trainer:
    def __init__(self, cfg: RunConfig, classes: list, n_features: int, train_rows: int, class_counts=None):
        self.cfg = cfg
        self.regularisation = regularisation(cfg, train_rows, class_counts)  # what the run reports it used, and why
        self.alpha = alpha_for(cfg, train_rows, class_counts)
        self.l2 = l2_for(cfg, train_rows)
        self.classes = np.asarray(classes)
        self.n_features = n_features
        self.incremental = cfg.model_entry.incremental
        self.transformer = None
        self.needs_transform_fit = cfg.model_entry.transform
        self.model = self._make()
        self.linear = isinstance(self.model, LinearSolver)
        self.dense = cfg.representation == Representation.DENSE

    def _make(self):
        return load(self.cfg.model_entry.factory)(self)

    def _estimator_input(self, X):
        """A block as scikit-learn's estimators take it: dense with the dense representation,
        else a scipy CSR matrix."""
        return X.dense(self.n_features) if self.dense else X.csr(self.n_features)

    def features(self, X, transformed: bool = False):
        """A block as the model takes it: through the fitted transform if there is one (unless
        its rows are ``transformed`` already: then as they are, dense); dense with the dense
        representation; CSR parts for a linear solver; else a scipy CSR matrix."""
        if self.transformer is not None and not transformed:
            return self.transform(X)
        if self.dense or transformed:
            return X.dense(self.n_features)
        return X if self.linear else X.csr(self.n_features)

    def fit_transform_on(self, X) -> None:
        """Fit the kernel approximation on a block of training rows."""
        c = self.cfg
        gamma = _rbf_gamma(X)
        if c.approximation == "nystroem":
            from sklearn.kernel_approximation import Nystroem
            n = min(c.n_components, X.n_rows)
            self.transformer = Nystroem(gamma=gamma, n_components=n, random_state=c.seed)
        else:
            from sklearn.kernel_approximation import RBFSampler
            self.transformer = RBFSampler(gamma=gamma, n_components=c.n_components, random_state=c.seed)
        self.transformer.fit(self._estimator_input(X))

    def transform(self, X) -> np.ndarray:
        """A block's rows through the fitted transform (float32 unless the run computes in float64)."""
        out = self.transformer.transform(self._estimator_input(X))
        return out.astype(np.float32, copy=False) if self.cfg.precision != "float64" else out

    def fit(self, X, codes: np.ndarray, transformed: bool = False) -> None:
        """One step on a batch: a block and its class codes."""
        if self.linear:
            self.model.fit_codes(self.features(X, transformed), codes)
        else:
            self.model.partial_fit(self.features(X, transformed), self.classes[codes], classes=self.classes)

    def fit_all(self, X, codes: np.ndarray) -> None:
        self.model.fit(self.features(X), self.classes[codes])

    def predict_codes(self, X) -> np.ndarray:
        """The class codes the model predicts for a block's rows."""
        if self.linear:
            return self.model.predict_codes(self.features(X))
        return np.searchsorted(self.classes, self.model.predict(self.features(X)))

    def sparse_model(self) -> dict:
        """For a linear model (linear-svm, or the linear model over kernel-approx's components):
        its nonzero weights (counted without a copy of the weights) and the exact bytes of a
        sparse copy: an index (int32 below 2^31 columns) and a float64 value per nonzero, and per
        weight vector its intercept and an int64 row pointer. {} otherwise."""
        if not self.linear:
            return {}
        nnz, nvec, width = self.model.nonzero_weights(), self.model.intercept_.shape[0], self.model.n_features
        index_bytes = 4 if width < 2**31 else 8
        return {"nonzero_weights": nnz, "weights": nvec * width,
                "sparse_model_bytes": nnz * (index_bytes + 8) + nvec * 8 + (nvec + 1) * 8}

    def model_bytes(self) -> int:
        """Bytes held in the fitted model's and transformer's arrays."""
        total = sum(self.model.memory().values()) if self.linear else _array_bytes(self.model)
        return total + (_array_bytes(self.transformer) if self.transformer is not None else 0)


def linear(t: Trainer) -> solvers.LinearModel:
    """linear-svm, and kernel-approx's linear model over its components: the solver's."""
    width = t.cfg.n_components if t.cfg.model_entry.transform else t.n_features
    return solvers.make(t.cfg, width, t.classes, t.alpha, t.l2)


def mlp_numpy(t: Trainer):
    from svmcore.worker.mlp_numpy import NumpyMLP
    c = t.cfg
    return NumpyMLP(t.n_features, c.hidden_sizes, t.classes, alpha=t.alpha, checkpoint=c.checkpoint, seed=c.seed,
                    dtype=np.dtype(f"f{c.compute_bytes}"))


def mlp(t: Trainer):
    from sklearn.neural_network import MLPClassifier
    c = t.cfg
    return MLPClassifier(hidden_layer_sizes=c.hidden_sizes, alpha=t.alpha, batch_size=min(c.batch_size, 200),
                         random_state=c.seed)


def kernel_svm(t: Trainer):
    from sklearn.svm import SVC
    c = t.cfg
    return SVC(C=c.c, kernel="rbf", gamma="scale", cache_size=c.cache_size_mb)


def _array_bytes(obj) -> int:
    """Bytes of the numpy arrays (alone, in a list, or a sparse matrix's) among an object's attributes."""
    total = 0
    for v in vars(obj).values():
        if isinstance(v, np.ndarray):
            total += v.nbytes
        elif isinstance(v, list):
            total += sum(a.nbytes for a in v if isinstance(a, np.ndarray))
        elif hasattr(v, "indptr"):  # a scipy sparse matrix (an SVC's support vectors)
            total += v.data.nbytes + v.indices.nbytes + v.indptr.nbytes
    return total
