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
from svmcore.data.readers import npy_header
from svmcore.data.rows import STORE_DTYPES
from svmcore.serve.model_folder import DENSE, ModelFileError, check_meta, open_regular, read_json

FORMAT = "svmcore-linear/1"
MODEL_DIR = "model"
META = "model.json"
CHECK_SCORES = "check_scores.npy"  # the training process's own scores on the rows it checked


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
    """The folder's model.json, read bounded and checked field by field (``model_folder``)."""
    path = os.path.join(folder, META)
    try:
        meta = read_json(path)
    except FileNotFoundError:
        raise ModelFileError(f"no exported model in {folder}") from None
    except OSError as e:
        raise ModelFileError(f"the model description {path} cannot be read ({e.strerror})") from None
    if meta.get("format") != FORMAT:
        raise ModelFileError(f"{path} is not a model this version serves (format {meta.get('format')!r}, "
                             f"expected {FORMAT!r})")
    check_meta(meta)
    return meta


def _layout(meta: dict) -> dict[str, tuple[tuple[int, ...], str]]:
    """The arrays model.json says the folder holds: name -> (shape, dtype)."""
    nvec, width, nnz = meta["vectors"], meta["width"], meta["nonzero_weights"]
    if meta["storage"] == DENSE:
        return {"coef": ((nvec, width), meta["dtype"])}
    return {"indptr": ((nvec + 1,), "int64"), "indices": ((nnz,), "int32"), "values": ((nnz,), meta["dtype"])}


def _load(folder: str, name: str, shape: tuple[int, ...], dtype: str, header_only: bool = False):
    """``name``.npy, refused unless it is a regular file whose header says ``shape`` and
    ``dtype`` (read before the array: a header that claims more is refused, not allocated)."""
    path = os.path.join(folder, name + ".npy")
    try:
        with open_regular(path) as f:
            found, _, found_dtype = npy_header(f)
            if tuple(found) != shape or found_dtype != np.dtype(dtype):
                raise ModelFileError(f"the model's {name}.npy holds {tuple(found)} {found_dtype}, which does not "
                                     f"match model.json ({shape} {dtype}); export the run again")
            if header_only:
                return None
            f.seek(0)
            return np.load(f, allow_pickle=False)
    except FileNotFoundError:
        raise ModelFileError(f"the model's {name}.npy is missing; export the run again") from None
    except (OSError, ValueError) as e:
        raise ModelFileError(f"the model's {name}.npy cannot be read ({e}); export the run again") from None


def check(folder: str) -> dict:
    """The folder's model.json, with every array's header checked against it (no array is
    loaded): what ``load`` would refuse for its description, refused here."""
    meta = read_meta(folder)
    for name, (shape, dtype) in _layout(meta).items():
        _load(folder, name, shape, dtype, header_only=True)
    return meta


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
        dtype = STORE_DTYPES[self.meta.get("input_precision", "float64")]
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
    """The model in ``folder`` (a run's ``model/``), weights in memory; ModelFileError for
    one whose files do not agree with its model.json."""
    meta = read_meta(folder)
    width, nnz = meta["width"], meta["nonzero_weights"]
    arrays = {name: _load(folder, name, shape, dtype) for name, (shape, dtype) in _layout(meta).items()}
    m = LinearModel(meta, np.asarray(meta["classes"]), np.asarray(meta["intercept"], np.float64), width, **arrays)
    if m.coef is not None:
        return m
    ordered = m.indptr[0] == 0 and m.indptr[-1] == nnz and bool((np.diff(m.indptr) >= 0).all())
    if not ordered or (nnz and not (0 <= int(m.indices.min()) and int(m.indices.max()) < width)):
        raise ModelFileError(f"the sparse weights in {folder} do not match model.json; export the run again")
    return m
