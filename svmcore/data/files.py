"""Writing synthetic datasets to files, and describing any dataset."""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile

import numpy as np

from svmcore.data import disk
from svmcore.data.lazy_sparse import sp
from svmcore.data.sources import CHUNK_ROWS, Source, scan
from svmcore.spec.config import BYTES_PER_VALUE, validate
from svmcore.spec.errors import ConfigError


def memory_sizes(rows: int, features: int, nnz: int) -> dict[str, dict[str, int]]:
    """Bytes the data takes in memory: CSR (values + int32 column ids + int64 row
    pointers) and dense, for each precision."""
    out = {}
    for prec, b in BYTES_PER_VALUE.items():
        out[prec] = {"sparse": nnz * (b + 4) + (rows + 1) * 8, "dense": rows * features * b}
    return out


class _Generated:
    """Synthetic rows with a chosen share of positives, optionally sorted by label."""

    def __init__(self, cfg, positive_fraction: float, sort_by_label: bool, group_kinds: bool = False):
        self.cfg = cfg
        self.positive_fraction = positive_fraction
        self.sort_by_label = sort_by_label
        self.group_kinds = group_kinds

    def iter_chunks(self, chunk_rows: int | None = None, n_features: int | None = None, hashed: bool = True):
        from svmcore.data.synthetic import iter_synthetic, marker_kinds, sorted_by_label

        c = self.cfg

        def make():
            return iter_synthetic(c.dataset, c.rows, c.features, c.nnz_per_row, c.seed, self.positive_fraction)

        if not self.sort_by_label:
            return make()
        return sorted_by_label(make, (lambda X: marker_kinds(X, c.features, c.seed)) if self.group_kinds else None)


def make_dataset(kind: str, rows, features, nnz_per_row, seed, out: str, fmt: str = "svmlight",
                 positive_fraction: float = 0.5, sort_by_label: bool = False, group_kinds: bool = False) -> int:
    """Write a synthetic dataset chunk by chunk; memory stays at one generation chunk.
    ``positive_fraction`` below 0.5 makes the positive class a minority (sparse-text);
    ``sort_by_label`` writes every positive row first, as many public libsvm files are;
    ``group_kinds`` (with both) writes the positive rows grouped by the marker token that makes
    each positive (``synthetic.sorted_by_label``), as files gathered source by source are."""
    values = {"dataset": kind, "rows": rows, "nnz_per_row": nnz_per_row, "seed": seed, "batch_size": 1}
    if features is not None:
        values["features"] = features
    cfg = validate(values)
    target = os.path.abspath(out)
    parent = os.path.dirname(target)
    if os.path.isdir(target):
        raise ConfigError("out", f"{out} is a folder; give the path of the file to write, "
                          f"e.g. {os.path.join(out, 'data' + {'svmlight': '.svm', 'npz': '.npz'}.get(fmt, '.txt'))}")
    if not os.path.isdir(parent):
        what = "is a file, not a folder" if os.path.exists(parent) else "does not exist"
        raise ConfigError("out", f"folder {parent} {what}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError("out", f"folder {parent} is read-only")
    try:
        positive_fraction = float(positive_fraction)
    except (TypeError, ValueError):
        raise ConfigError("positive_fraction", f"expected a number, got {str(positive_fraction)[:40]!r}") from None
    if not 0.001 <= positive_fraction <= 0.5:
        raise ConfigError("positive_fraction", f"{positive_fraction:g} is out of range; allowed: 0.001 to 0.5")
    if positive_fraction != 0.5 and kind != "sparse-text":
        raise ConfigError("positive_fraction", "only sparse-text data can be made imbalanced")
    if group_kinds and not (sort_by_label and positive_fraction < 0.5):
        raise ConfigError("group_kinds", "needs sort_by_label and a positive_fraction below 0.5 (the positives' "
                          "kinds are their marker tokens)")
    if positive_fraction != 0.5 or sort_by_label:
        source = _Generated(cfg, positive_fraction, sort_by_label, group_kinds)
    else:
        source = Source(cfg)
    try:
        if fmt == "svmlight":
            from svmcore.data.copies import write_svmlight
            return write_svmlight(source, out, rows=cfg.rows, what=f"the dataset {os.path.basename(out)}")
        if fmt == "text":
            return _write_text(source, out)
        return _write_npz(source, out)
    except OSError as e:
        raise ConfigError("out", f"cannot write {out}: {e.strerror or e}") from None


def _write_text(source: Source, out: str) -> int:
    """Raw text 'label<TAB>text': each nonzero becomes its token word, repeated by weight."""
    rows = 0
    tmp = disk.temporary(out)
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for X, y in source.iter_chunks(CHUNK_ROWS):
                X = sp.csr_matrix(X)
                reps = np.clip(np.rint(X.data * 4), 1, 4).astype(np.int64)
                for i in range(X.shape[0]):
                    lo, hi = X.indptr[i], X.indptr[i + 1]
                    words = " ".join(" ".join([f"w{j}"] * r)
                                     for j, r in zip(X.indices[lo:hi].tolist(), reps[lo:hi].tolist()))
                    f.write(f"{'pos' if y[i] > 0 else 'neg'}\t{words}\n")
                rows += X.shape[0]
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):  # a failed write leaves no half file behind
            os.remove(tmp)
    return rows


def _write_npz(source: Source, out: str) -> int:
    """CSR arrays and y in an .npz, streamed through temporary raw files."""
    work = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(out)))
    tmp = disk.temporary(out)
    try:
        names = {"data": np.float64, "indices": np.int32, "indptr": np.int64, "y": np.float64}
        files = {n: open(os.path.join(work, n), "wb") for n in names}
        np.zeros(1, np.int64).tofile(files["indptr"])
        rows = nnz = 0
        width = source.cfg.features
        for X, y in source.iter_chunks(CHUNK_ROWS):
            X = sp.csr_matrix(X)
            width = X.shape[1]
            X.data.astype(np.float64).tofile(files["data"])
            X.indices.astype(np.int32).tofile(files["indices"])
            (X.indptr[1:].astype(np.int64) + nnz).tofile(files["indptr"])
            y.astype(np.float64).tofile(files["y"])
            rows += X.shape[0]
            nnz += X.nnz
        for fh in files.values():
            fh.close()
        counts = {"data": nnz, "indices": nnz, "indptr": rows + 1, "y": rows}
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
            for n, dtype in names.items():
                with z.open(n + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array_header_1_0(member, {
                        "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
                        "shape": (counts[n],)})
                    with open(os.path.join(work, n), "rb") as src:
                        shutil.copyfileobj(src, member, 1 << 20)
            with z.open("shape.npy", "w") as member:
                np.lib.format.write_array(member, np.array([rows, width], dtype=np.int64))
        os.replace(tmp, out)
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if os.path.exists(tmp):  # a failed write leaves no half file behind
            os.remove(tmp)


def inspect_dataset(dataset: str, cache_dir: str | None = None, **knobs) -> dict:
    """Rows, features, nonzeros, density, label balance and in-memory sizes (counted
    in one pass over the data)."""
    cfg = validate({"dataset": dataset, "batch_size": 1, **knobs})
    info = scan(Source(cfg), cache_dir, exact=True)
    return {
        "name": info.name, "format": info.format, "rows": info.rows, "features": info.features,
        "nnz": info.nnz, "density": info.density,
        "classes": [str(c) for c in info.classes], "class_counts": info.class_counts,
        "bytes_in_memory": memory_sizes(info.rows, info.features, info.nnz),
    }
