"""The exported model's file and its numpy scoring: dense and sparse layouts score the
same rows the same as a scipy product, hashing folds columns as training does, and a
damaged or foreign model folder is refused with a clear error."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.data.hashing import hashed_columns
from svmcore.data.sources import hash_features
from svmcore.serve import model_file
from svmcore.worker.model_export import _arrays


def _rows(seed=0, n=300, width=500):
    X = sp.random(n, width, density=0.03, format="csr", random_state=seed)
    X.indices = X.indices.astype(np.int32)
    return X


@pytest.mark.parametrize("nvec", [1, 3])
@pytest.mark.parametrize("sparse", [False, True])
def test_both_layouts_score_as_the_matrix_product(tmp_path, nvec, sparse):
    rng = np.random.default_rng(1)
    coef = rng.normal(size=(nvec, 500)) * (rng.random((nvec, 500)) < 0.2)  # mostly zero, as after L1
    intercept = rng.normal(size=nvec)
    meta = {"classes": list(range(max(2, nvec))), "intercept": intercept.tolist(), "width": 500, "vectors": nvec,
            "storage": "sparse" if sparse else "dense", "input_precision": "float64", "hashing_bits": 0,
            "dtype": "float64", "nonzero_weights": int(np.count_nonzero(coef)), "model_bytes": 0}
    model_file.write(str(tmp_path), meta, _arrays(coef, np.float64, sparse))
    m = model_file.load(str(tmp_path / "model"))
    X = _rows()
    got = m.scores(X.data, X.indices, X.indptr.astype(np.int64))
    np.testing.assert_allclose(got, X @ coef.T + intercept, rtol=1e-12, atol=1e-12)
    assert m.nbytes == sum(a.nbytes for a in _arrays(coef, np.float64, sparse).values()) + intercept.nbytes
    if sparse:
        assert m.values.shape[0] == np.count_nonzero(coef)


def test_hashing_folds_columns_as_training_does():
    X = _rows(seed=2)
    cols, sign = hashed_columns(X.indices, 6)
    folded = sp.csr_matrix((X.data * sign, cols, X.indptr.copy()), shape=(X.shape[0], 64))
    folded.sum_duplicates()
    np.testing.assert_allclose(folded.toarray(), hash_features(X, 6).toarray(), rtol=1e-14, atol=1e-15)


def test_a_damaged_or_foreign_model_is_refused(tmp_path):
    with pytest.raises(model_file.ModelFileError, match="no exported model"):
        model_file.load(str(tmp_path))
    meta = {"classes": [-1, 1], "intercept": [0.0], "width": 10, "vectors": 1, "storage": "dense", "dtype": "float64",
            "nonzero_weights": 0, "model_bytes": 88}
    folder = model_file.write(str(tmp_path), meta, {"coef": np.zeros((1, 9))})
    with pytest.raises(model_file.ModelFileError, match=r"coef.npy holds \(1, 9\) float64, which does not match "
                                                        r"model.json \(\(1, 10\) float64\)"):
        model_file.load(folder)
    with open(f"{folder}/model.json", "w") as f:
        json.dump({**meta, "format": "other/9"}, f)
    with pytest.raises(model_file.ModelFileError, match="format 'other/9'"):
        model_file.load(folder)
    with open(f"{folder}/coef.npy", "wb") as f:
        f.write(b"not numpy")
    with open(f"{folder}/model.json", "w") as f:
        json.dump({**meta, "format": model_file.FORMAT}, f)
    with pytest.raises(model_file.ModelFileError, match="coef.npy cannot be read"):
        model_file.load(folder)
