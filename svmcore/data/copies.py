"""On-disk forms of a dataset, built once chunk by chunk and reused.

- a text (svmlight) copy, for streaming sources that are not text files already;
- a binary form (CSR arrays or a dense matrix, train and test apart) that memmap
  mode maps into memory instead of loading.

Both are written to a temporary folder and renamed into place, so a run that dies
while building leaves no half-built cache behind.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass

import numpy as np

from svmcore.data import disk
from svmcore.data.rows import STORE_DTYPES, Dense, Parts, block_of
from svmcore.data.sources import CHUNK_ROWS, Source, is_test_row
from svmcore.spec.choices import Representation

log = logging.getLogger(__name__)


def write_svmlight(source: Source, out_path: str, classes: list | None = None, rows: int | None = None,
                   what: str = "the text copy of the rows") -> int:
    """Write every row of ``source`` as svmlight text without holding it all; returns rows.
    With ``rows`` (the source's), a copy the disk cannot take is refused from its first
    chunk's size before it grows past that chunk; a disk that fills up on the way is one
    DiskFull line. Either way no partial file is left."""
    from concurrent.futures import ThreadPoolExecutor  # here, not at the top: the lean worker's floor
    try:
        from svmcore.data import nativesvm as fast

        fast.warm_up()
    except Exception as e:  # no gcc: scikit-learn's writer, ~10x slower, same bytes
        log.warning("native svmlight writer unavailable (%s); using scikit-learn's", e)
        fast = None
    tmp = disk.temporary(out_path)
    room = _Room(what, os.path.dirname(os.path.abspath(out_path)), rows)
    written = 0
    try:
        # the compiled writer formats chunk k on a second core (it releases the GIL) while
        # chunk k+1 is generated; at most two chunks of text are pending
        with open(tmp, "wb") as f, ThreadPoolExecutor(max_workers=1) as pool:
            pending = None
            for X, y in source.iter_chunks(CHUNK_ROWS, hashed=False):
                room.first_rows = room.first_rows or X.shape[0]
                if y.dtype.kind not in "fiub":
                    y = np.searchsorted(np.asarray(classes), y).astype(np.float64)
                if fast is not None:  # dense rows too: their nonzeros, as scikit-learn writes them
                    P = block_of(X).sparse()
                    job = pool.submit(fast.write_rows, P.data, P.indices, P.indptr, y)  # the same bytes
                    if pending is not None:
                        f.write(room.checked(pending.result()))
                    pending = job
                else:
                    if pending is not None:
                        f.write(room.checked(pending.result()))
                        pending = None
                    from sklearn.datasets import dump_svmlight_file  # no gcc: 2.5 s of imports

                    dump_svmlight_file(X, y, f, zero_based=False)
                    if room.unchecked:  # written straight to the file: its size there
                        f.flush()
                        room.check(f.tell(), written_bytes=f.tell())
                written += X.shape[0]
            if pending is not None:
                f.write(room.checked(pending.result()))
        os.replace(tmp, out_path)
    except OSError as e:
        if not disk.is_disk_full(e):
            raise
        done = disk.tree_bytes(tmp)
        os.remove(tmp)
        raise disk.disk_full(what, room.folder, room.need_bytes, done) from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return written


class _Room:
    """A text copy's size told from its first chunk (bytes per row times the rows),
    checked once against the free space of its folder's disk."""

    def __init__(self, what: str, folder: str, rows: int | None):
        self.what, self.folder, self.rows = what, folder, rows
        self.first_rows = 0
        self.need_bytes: int | None = None

    @property
    def unchecked(self) -> bool:
        return bool(self.rows) and self.need_bytes is None

    def check(self, chunk_bytes: int, written_bytes: int = 0) -> None:
        if self.unchecked and self.first_rows:
            self.need_bytes = int(chunk_bytes / self.first_rows * self.rows)
            disk.check_room(self.what, self.folder, self.need_bytes, written_bytes)

    def checked(self, text: bytes) -> bytes:
        self.check(len(text))
        return text


def cache_entries(cache_dir: str) -> set[str]:
    """The copies in the cache folder now (temporaries left out): what a run's
    prepare phase built once is the difference of two of these."""
    try:
        return {n for n in os.listdir(cache_dir) if not n.endswith(".tmp")}
    except FileNotFoundError:
        return set()


def text_copy(source: Source, cache_dir: str, classes: list, rows: int | None = None) -> str:
    """A text file holding the source's rows, before hashing (streaming hashes as it
    reads): the file itself when it is text already. ``rows``: the source's, to refuse
    a copy the disk cannot take before it is written."""
    if source.fmt in ("svmlight", "csv", "text"):
        return source.path
    path = os.path.join(cache_dir, f"text-{source.key(hashed=False)}.svm")
    if not os.path.exists(path):
        os.makedirs(cache_dir, exist_ok=True)
        write_svmlight(source, path, classes, rows, what="stream mode's text copy of the rows")
    return path


@dataclass
class BinaryData:
    """Memory-mapped train/test arrays of a dataset in one precision."""

    folder: str
    meta: dict

    def _map(self, name: str, dtype, shape=None):
        path = os.path.join(self.folder, name)
        if os.path.getsize(path) == 0:
            return np.zeros(0 if shape is None else shape, dtype=dtype)
        return np.memmap(path, dtype=dtype, mode="r", shape=shape)

    def part(self, which: str):
        """(rows, class codes) of 'train' or 'test', mapped: a ``rows.Dense`` block or ``rows.Parts``."""
        m = self.meta[which]
        dtype = STORE_DTYPES[self.meta["dtype"]]
        codes = self._map(f"{which}_y.i32", np.int32)
        if self.meta["representation"] == Representation.DENSE:
            return Dense(self._map(f"{which}_X.bin", dtype, (m["rows"], self.meta["features"]))), codes
        return Parts(self._map(f"{which}_data.bin", dtype), self._map(f"{which}_indices.i32", np.int32),
                     self._map(f"{which}_indptr.i64", np.int64)), codes


HOLD_OUT_RULE = 2  # in cache names: version of the held-out rule (datasets.is_test_row)


def binary_copy_bytes(rows: int, nnz: int, features: int, dtype: str, representation: str) -> int:
    """The bytes of ``binary_copy``'s files: labels, then CSR arrays (two row pointers,
    train and test) or a dense matrix."""
    value = np.dtype(STORE_DTYPES[dtype]).itemsize
    if representation == Representation.DENSE:
        return rows * (features * value + 4)
    return rows * 4 + nnz * (value + 4) + (rows + 2) * 8


# Seed of the order in which a mixed copy holds each chunk's training rows: part of the copy, not
# of a run, so every shuffled run on the data shares it (a run's own seed draws its windows)
MIX_SEED = 40


def binary_copy(source: Source, cache_dir: str, classes: list, features: int, dtype: str,
                representation: str, rows: int, hold_out: bool = True, nnz: int | None = None,
                nnz_exact: bool = True, mixed: bool = False) -> BinaryData:
    """The binary form for memmap mode, built chunk by chunk if not there yet. ``rows``
    is the dataset's row count (the held-out rule depends on it). Without ``hold_out``
    (a separate test file) every row goes to the train part. With ``nnz`` (the scan's;
    not ``nnz_exact``: an upper bound, for generated data) a copy the disk cannot take
    is refused before anything is written.

    ``mixed`` (shuffled runs): each chunk's training rows are written in a random order drawn
    from (``MIX_SEED``, the chunk's number), at no cost here, so that a shuffled pass's pieces
    of 64 rows (``shuffle_order``) are not 64 neighbours, which in many files are alike.
    Unshuffled runs read the rows in file order, from a copy of their own."""
    folder = os.path.join(cache_dir, f"bin-{source.key()}-{dtype}-{representation}"
                          + (f"-h{HOLD_OUT_RULE}" if hold_out else "-all") + ("-mixed" if mixed else ""))

    def build(tmp: str) -> dict:
        np_dtype = STORE_DTYPES[dtype]
        class_arr = np.asarray(classes)
        dense = representation == Representation.DENSE
        names = ["y.i32"] + (["X.bin"] if dense else ["data.bin", "indices.i32", "indptr.i64"])
        files = {p: {n: open(os.path.join(tmp, f"{p}_{n}"), "wb") for n in names} for p in ("train", "test")}
        stats = {p: {"rows": 0, "nnz": 0} for p in ("train", "test")}
        for f in ([] if dense else files.values()):  # CSR: each part's row pointers start at 0
            np.zeros(1, np.int64).tofile(f["indptr.i64"])
        row0 = 0
        for k, (X, y) in enumerate(source.iter_chunks(CHUNK_ROWS, features)):
            X = block_of(X)
            ids = np.arange(row0, row0 + X.n_rows)
            test = is_test_row(ids, rows) if hold_out else np.zeros(ids.shape, bool)
            row0 += X.n_rows
            yi = np.searchsorted(class_arr, y).astype(np.int32)
            for p, mask in (("train", ~test), ("test", test)):
                if not mask.any():
                    continue
                kept = np.flatnonzero(mask)
                if mixed and p == "train":
                    kept = kept[np.random.default_rng([MIX_SEED, k]).permutation(kept.shape[0])]
                Xp = X.gather(kept)
                f = files[p]
                yi[kept].tofile(f["y.i32"])
                if dense:
                    Xp.dense(features).astype(np_dtype).tofile(f["X.bin"])
                else:
                    Xp = Xp.sparse()
                    Xp.data.astype(np_dtype).tofile(f["data.bin"])
                    Xp.indices.tofile(f["indices.i32"])
                    (Xp.indptr[1:] + stats[p]["nnz"]).tofile(f["indptr.i64"])
                    stats[p]["nnz"] += Xp.nnz
                stats[p]["rows"] += int(mask.sum())
        for part in files.values():
            for fh in part.values():
                fh.close()
        return {"features": features, "dtype": dtype, "representation": representation,
                "classes": list(classes), **stats}

    need = binary_copy_bytes(rows, nnz, features, dtype, representation) if nnz is not None else None
    return BinaryData(folder, _cached_folder(folder, build, "memmap mode's binary copy of the rows", need,
                                             need_is_bound=not nnz_exact and representation != Representation.DENSE))


def _cached_folder(folder: str, build, what: str = "a copy of the data", need_bytes: int | None = None,
                   need_is_bound: bool = False) -> dict:
    """The meta of a cache folder, built by ``build(tmp)`` (which fills ``tmp`` and returns the
    meta) if it is not there yet, in a temporary folder (``disk.temporary``) renamed into place:
    nothing is left half-built, and of two runs building it at once the one that won is kept.
    ``need_bytes`` (``need_is_bound``: at most) is checked against the free space first; a disk
    that fills up is one DiskFull line naming ``what`` and the folder."""
    meta_path = os.path.join(folder, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            return json.load(f)
    cache_dir = os.path.dirname(folder)
    os.makedirs(cache_dir, exist_ok=True)
    if need_bytes is not None:
        disk.check_room(what, cache_dir, need_bytes, upper_bound=need_is_bound)
    tmp = disk.temporary(folder)
    os.makedirs(tmp)
    try:
        meta = build(tmp)
        with open(os.path.join(tmp, "meta.json"), "w") as f:
            json.dump(meta, f)
        try:
            os.rename(tmp, folder)
        except OSError:  # another run built it meanwhile
            remove_tree(tmp)
            with open(meta_path) as f:
                meta = json.load(f)
        return meta
    except BaseException as e:
        full = disk.is_disk_full(e)
        written = disk.tree_bytes(tmp) if full else 0
        remove_tree(tmp)
        if full:
            raise disk.disk_full(what, cache_dir, need_bytes, written) from None
        raise


def remove_tree(path: str) -> None:
    """``path`` and everything under it, gone if it can be (lean-floor callers use this, not shutil)."""
    import shutil  # here, not at the top: shutil loads bz2, lzma and zlib (0.25 MiB of a lean run's peak)

    shutil.rmtree(path, ignore_errors=True)
