"""An exported linear model on disk, and scoring CSR rows with it (numpy only).

A run's model lives in ``RUN_DIR/model/``: ``model.json`` (what it is: classes, width,
intercepts, storage, the hashing and input precision the run used, the export's own
checks and sizes) and the weights as ``.npy`` files (read without pickle):

- dense:  ``coef.npy``, shape (vectors, width);
- sparse: ``indptr.npy`` (int64, vectors + 1), ``indices.npy`` (int32 columns, sorted
  within each vector) and ``values.npy``: only the nonzero weights.

Values are float32 where the export found that it changes no prediction on the
rows it checked, float64 otherwise. One weight vector for two classes (class 1 where
the score is > 0), one per class for more (the highest score wins), as in training.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from svmcore.data.hashing import hashed_columns
from svmcore.spec.errors import SvmcoreError

FORMAT = "svmcore-linear/1"
MODEL_DIR = "model"
META = "model.json"
CHECK_SCORES = "check_scores.npy"  # the training process's own scores on the rows it checked
INPUT_DTYPES = {"float64": np.float64, "float32": np.float32, "float16": np.float16}


class ModelFileError(SvmcoreError):
    """An exported model is missing, damaged or of an unknown format."""


def weight_bytes(nvec: int, width: int, nnz: int, itemsize: int, sparse: bool) -> int:
    """Bytes of the weight arrays in one layout (intercepts, one float64 each, included)."""
    if sparse:
        return nnz * (4 + itemsize) + (nvec + 1) * 8 + nvec * 8
    return nvec * width * itemsize + nvec * 8


def write(run_dir: str, meta: dict, arrays: dict[str, np.ndarray]) -> str:
    """Write the model folder whole (a temporary folder renamed into place): a reader
    never sees half a model. Returns the folder."""
    import shutil  # here, not at the top: the lean worker's floor (shutil loads bz2 and lzma)

    folder = os.path.join(run_dir, MODEL_DIR)
    tmp = folder + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for name, a in arrays.items():
        np.save(os.path.join(tmp, name + ".npy"), a, allow_pickle=False)
    with open(os.path.join(tmp, META), "w") as f:
        json.dump({"format": FORMAT, **meta}, f, indent=1)
    shutil.rmtree(folder, ignore_errors=True)
    os.rename(tmp, folder)
    return folder


def read_meta(folder: str) -> dict:
    path = os.path.join(folder, META)
    try:
        with open(path) as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise ModelFileError(f"no exported model in {folder}") from None
    except (OSError, ValueError) as e:
        raise ModelFileError(f"the model description {path} cannot be read ({e})") from None
    if meta.get("format") != FORMAT:
        raise ModelFileError(f"{path} is not a model this version serves (format {meta.get('format')!r}, "
                             f"expected {FORMAT!r})")
    return meta


def _load(folder: str, name: str) -> np.ndarray:
    path = os.path.join(folder, name + ".npy")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ModelFileError(f"the model's {name}.npy cannot be read ({e}); export the run again") from None


@dataclass
class LinearModel:
    meta: dict
    classes: np.ndarray
    intercept: np.ndarray
    width: int
    coef: np.ndarray | None = None  # dense (vectors, width)
    indptr: np.ndarray | None = None  # sparse, per vector
    indices: np.ndarray | None = None
    values: np.ndarray | None = None

    @property
    def nvec(self) -> int:
        return int(self.intercept.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of the weights as held in memory."""
        return sum(a.nbytes for a in (self.coef, self.indptr, self.indices, self.values, self.intercept)
                   if a is not None)

    def prepare(self, data: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Parsed values and 0-based columns as the run saw them: rounded to its input
        precision and folded by its feature hashing."""
        dtype = INPUT_DTYPES[self.meta.get("input_precision", "float64")]
        if dtype is not np.float64:
            data = data.astype(dtype).astype(np.float64)
        bits = int(self.meta.get("hashing_bits") or 0)
        if bits:
            indices, sign = hashed_columns(indices, bits)
            data = data * sign
        return data, indices

    def scores(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray) -> np.ndarray:
        """(rows, vectors) float64 scores of CSR rows whose columns are below ``width``
        (after ``prepare``)."""
        n = indptr.shape[0] - 1
        rows = np.repeat(np.arange(n), np.diff(indptr))
        data = np.asarray(data, dtype=np.float64)
        out = np.empty((n, self.nvec))
        for v in range(self.nvec):
            if self.coef is not None:
                w = self.coef[v, indices].astype(np.float64)
            else:
                cols = self.indices[self.indptr[v]:self.indptr[v + 1]]
                vals = self.values[self.indptr[v]:self.indptr[v + 1]]
                if cols.shape[0] == 0:
                    out[:, v] = self.intercept[v]
                    continue
                pos = np.minimum(np.searchsorted(cols, indices), cols.shape[0] - 1)
                w = np.where(cols[pos] == indices, vals[pos].astype(np.float64), 0.0)
            out[:, v] = np.bincount(rows, weights=data * w, minlength=n) + self.intercept[v]
        return out

    def predict_codes(self, scores: np.ndarray) -> np.ndarray:
        return (scores[:, 0] > 0).astype(np.int64) if self.nvec == 1 else scores.argmax(axis=1)


def load(folder: str) -> LinearModel:
    """The model in ``folder`` (a run's ``model/``), weights in memory."""
    meta = read_meta(folder)
    common = dict(meta=meta, classes=np.asarray(meta["classes"]), intercept=np.asarray(meta["intercept"], np.float64),
                  width=int(meta["width"]))
    if meta["storage"] == "dense":
        m = LinearModel(**common, coef=_load(folder, "coef"))
        ok = m.coef.shape == (m.nvec, m.width)
    else:
        m = LinearModel(**common, indptr=_load(folder, "indptr"), indices=_load(folder, "indices"),
                        values=_load(folder, "values"))
        ok = (m.indptr.shape == (m.nvec + 1,) and m.indices.shape == m.values.shape
              and int(m.indptr[-1]) == m.indices.shape[0])
    if not ok:
        raise ModelFileError(f"the weights in {folder} do not match model.json; export the run again")
    return m
