"""svmcore.datasets and svmcore.synthetic."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.data import synthetic
from svmcore.data.rows import block_of, rebatch
from svmcore.data.sources import (
    MAX_TEST_ROWS,
    TEST_EVERY,
    DataInfo,
    Source,
    check_trainable,
    hash_features,
    is_test_row,
    n_test_rows,
    scan,
)
from svmcore.data.synthetic import GEN_CHUNK_ROWS, iter_synthetic
from svmcore.spec.config import validate
from svmcore.spec.errors import ConfigError, DataError


def dense(X) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def all_rows(chunks):
    Xs, ys = zip(*chunks)
    X = sp.vstack(Xs, format="csr") if sp.issparse(Xs[0]) else np.vstack(Xs)
    return X, np.concatenate(ys)


def same_matrix(A, B) -> bool:
    if sp.issparse(A) != sp.issparse(B) or A.shape != B.shape:
        return False
    if sp.issparse(A):
        return (A != B).nnz == 0
    return np.array_equal(A, B)


def synth_cfg(kind="sparse-text", rows=25_000, features=None, nnz=20, seed=0, **kw):
    values = dict(dataset=kind, rows=rows, nnz_per_row=nnz, seed=seed, batch_size=1, **kw)
    if features is not None:
        values["features"] = features
    return validate(values)


# ---------------------------------------------------------------- synthetic data

@pytest.mark.parametrize("kind,features", [("sparse-text", 5000), ("dense", 30)])
def test_synthetic_is_deterministic_by_seed(kind, features):
    a = all_rows(iter_synthetic(kind, 12_000, features, 10, seed=3))
    b = all_rows(iter_synthetic(kind, 12_000, features, 10, seed=3))
    c = all_rows(iter_synthetic(kind, 12_000, features, 10, seed=4))
    assert same_matrix(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not same_matrix(a[0], c[0])
    assert not np.array_equal(a[1], c[1])


@pytest.mark.parametrize("kind", ["sparse-text", "dense"])
def test_synthetic_has_the_requested_shape(kind):
    X, y = all_rows(iter_synthetic(kind, 23_456, 300, 7, seed=1))
    assert X.shape == (23_456, 300)
    assert y.shape == (23_456,)
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert X.dtype == np.float64
    if kind == "sparse-text":
        assert sp.isspmatrix_csr(X)
        per_row = np.diff(X.indptr)
        assert per_row.max() <= 7 and per_row.min() >= 1  # repeated tokens merge
        np.testing.assert_allclose(np.sqrt(X.multiply(X).sum(axis=1)).A1, 1.0)  # L2-normalised
        assert X.indices.min() >= 0 and X.indices.max() < 300


@pytest.mark.parametrize("kind", ["sparse-text", "dense"])
def test_synthetic_chunks_come_from_seed_and_chunk_index_alone(kind):
    chunks = list(iter_synthetic(kind, 2 * GEN_CHUNK_ROWS + 123, 64, 5, seed=9))
    assert [c[0].shape[0] for c in chunks] == [GEN_CHUNK_ROWS, GEN_CHUNK_ROWS, 123]
    for k in (0, 1):
        if kind == "sparse-text":
            X, y = synthetic.sparse_text_chunk(k, GEN_CHUNK_ROWS, 64, 5, 9)
        else:
            X, y = synthetic.dense_chunk(k, GEN_CHUNK_ROWS, 64, 9)
        assert same_matrix(chunks[k][0], X) and np.array_equal(chunks[k][1], y)
    assert not np.array_equal(dense(chunks[0][0])[:100], dense(chunks[1][0])[:100])


@pytest.mark.parametrize("positive_fraction,digest", [(0.5, "3485f7b5fe367709dc97f3d91fec50bc"),
                                                      (0.1, "e9f9a0df49a932ff76af822761793b10")])
def test_the_generated_rows_are_the_ones_every_result_was_measured_on(positive_fraction, digest):
    """The rows of a chunk, as the generator made them before it was rewritten to hold less: every
    benchmark and calibration figure was measured on these rows. The ids, row bounds and labels are
    pinned to the byte; the values to 1e-12, because numpy's exp and log round the last bit
    differently on CPUs with AVX-512 (its own SIMD code) and without (libm): the old byte digest held
    on one and failed on the other, for values that differ by an ulp."""
    import hashlib

    X, y = synthetic.sparse_text_chunk(1, 2000, 1 << 20, 50, 7, positive_fraction)
    h = hashlib.sha256()
    for a in (X.indices, X.indptr, y):
        h.update(np.ascontiguousarray(a).tobytes())
    assert h.hexdigest()[:32] == digest
    assert X.nnz == 92062
    assert float(X.data.sum()) == pytest.approx(12701.417723680133, rel=1e-12)
    assert float(X.data @ (np.arange(X.nnz) % 7)) == pytest.approx(38058.90475245619, rel=1e-12)


def test_making_a_chunk_holds_a_few_times_the_chunk_not_ten():
    """A stream run's one-time text copy and memory mode's load held the generator's temporaries
    beside their own: 56 MiB for a 10,000-row chunk of 5.4 MiB (the text copy owned the first
    stream run's peak, issue 22); in place and freed when used, 27 MiB."""
    import tracemalloc

    synthetic._balanced_threshold(1 << 20, 50, 0)  # cached once per process: not the chunk's
    tracemalloc.start()
    try:
        X, y = synthetic.sparse_text_chunk(0, GEN_CHUNK_ROWS, 1 << 20, 50, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    held = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes + y.nbytes
    assert peak <= 6 * held, (peak / 2**20, held / 2**20)


@pytest.mark.parametrize("kind,features", [("sparse-text", 4096), ("dense", 16)])
@pytest.mark.parametrize("chunk_rows,batch_size", [(10_000, 1024), (7, 7), (333, 10_000), (25_000, 4999)])
def test_synthetic_rows_do_not_depend_on_chunking(kind, features, chunk_rows, batch_size):
    cfg = synth_cfg(kind, rows=25_000, features=features, nnz=10, seed=5)
    ref_X, ref_y = all_rows(Source(cfg).iter_chunks(10_000))
    batches = list(rebatch(((block_of(X).sparse(), y) for X, y in Source(cfg).iter_chunks(chunk_rows)), batch_size))
    assert all(b.X.n_rows == batch_size for b in batches[:-1])
    X, y = all_rows((b.X.csr(features) if sp.issparse(ref_X) else b.X.dense(features), b.codes) for b in batches)
    assert same_matrix(X, ref_X)
    np.testing.assert_array_equal(y, ref_y)


def test_synthetic_features_default_per_kind():
    assert synth_cfg("sparse-text").features == 1 << 20  # text-like data has about a million columns
    assert synth_cfg("dense").features == 200


@pytest.mark.parametrize("kind,features,nnz", [
    ("sparse-text", 1 << 20, 50),   # the defaults
    ("sparse-text", 1 << 20, 20),
    ("sparse-text", 1 << 20, 5),
    ("sparse-text", 1 << 20, 2),
    ("sparse-text", 1 << 20, 1),    # nnz_per_row's minimum
    ("sparse-text", 100_000, 100),
    ("sparse-text", 1000, 50),
    ("dense", 200, 1),
    ("dense", 10, 1),
    ("dense", 2, 1),
])
def test_synthetic_labels_are_roughly_balanced(kind, features, nnz):
    shares = {}
    for seed in (0, 1, 2):
        _, y = all_rows(iter_synthetic(kind, GEN_CHUNK_ROWS, features, nnz, seed))
        shares[seed] = round(float(np.mean(y > 0)), 3)
    assert all(0.40 <= s <= 0.60 for s in shares.values()), f"share of positive labels by seed: {shares}"


def test_synthetic_labels_follow_the_hidden_model():
    """A linear model on the first chunk predicts the second well above chance (the
    labels are not noise) and not perfectly (5% of them are flipped)."""
    from sklearn.linear_model import LogisticRegression

    chunks = list(iter_synthetic("dense", 2 * GEN_CHUNK_ROWS, 20, 1, seed=0))
    clf = LogisticRegression(max_iter=500).fit(*chunks[0])
    acc = clf.score(*chunks[1])
    assert 0.7 < acc < 0.99


# ---------------------------------------------------------------- held-out rows

def test_is_test_row_every_fifth_row():
    rows = np.arange(30)
    assert np.flatnonzero(is_test_row(rows, 30)).tolist() == [4, 9, 14, 19, 24, 29]


@pytest.mark.parametrize("n", [TEST_EVERY * MAX_TEST_ROWS, TEST_EVERY * MAX_TEST_ROWS + 1, 2 * TEST_EVERY * MAX_TEST_ROWS,
                               1_000_003])
def test_is_test_row_holds_out_at_most_max_test_rows_over_the_whole_data(n):
    mask = is_test_row(np.arange(n), n)
    assert mask.sum() == n_test_rows(n) == MAX_TEST_ROWS
    held = np.flatnonzero(mask)
    assert held[-1] == n - 1  # the last part of the data is tested too
    assert np.diff(held).max() - np.diff(held).min() <= 1  # evenly spread


# ---------------------------------------------------------------- hashing

@pytest.mark.parametrize("bits", [1, 4, 10, 18])
@pytest.mark.parametrize("as_dense", [False, True])
def test_hash_features_keeps_rows_and_maps_into_2_pow_bits(bits, as_dense):
    X = sp.random(300, 5000, density=0.01, format="csr", random_state=1)
    X.data += 0.5
    H = hash_features(X.toarray() if as_dense else X, bits)
    assert sp.isspmatrix_csr(H)
    assert H.shape == (300, 1 << bits)
    assert H.indices.dtype == np.int32
    assert H.nnz == 0 or (H.indices.min() >= 0 and H.indices.max() < 1 << bits)
    # rows stay rows: a row's signed sum of values is a sum of its own values with signs
    np.testing.assert_array_equal(np.diff(H.indptr) > 0, np.diff(X.indptr) > 0)
    assert np.all(np.abs(H).sum(axis=1).A1 <= X.sum(axis=1).A1 + 1e-9)
    H2 = hash_features(X, bits)
    assert same_matrix(H, H2)


def test_hash_features_without_collisions_preserves_magnitudes():
    X = sp.csr_matrix(np.array([[0, 3.0, 0, 0], [1.5, 0, 0, 0], [0, 0, 0, 2.0]]))
    H = hash_features(X, 20)
    assert H.shape == (3, 1 << 20)
    assert np.diff(H.indptr).tolist() == [1, 1, 1]
    np.testing.assert_array_equal(np.abs(H.data), [3.0, 1.5, 2.0])
    # the same source column lands in the same hashed column with the same sign
    H2 = hash_features(sp.csr_matrix(np.array([[0, 1.0, 0, 0]])), 20)
    assert H2.indices.tolist() == H[0].indices.tolist()
    assert np.sign(H2.data).tolist() == np.sign(H[0].data).tolist()


def test_source_applies_hashing_bits():
    cfg = synth_cfg("sparse-text", rows=500, features=1 << 20, hashing_bits=8)
    for X, y in Source(cfg).iter_chunks(100):
        assert X.shape[1] == 256 and X.shape[0] == y.shape[0]


# ---------------------------------------------------------------- scan

def test_scan_svmlight_file_is_exact(tmp_path):
    p = tmp_path / "d.svm"
    p.write_text("# c\n1 1:1 4:2\n-1 2:0.5\n\n1 7:1\n-1\n1 1:1 2:1 3:1\n")
    info = scan(Source(validate(dataset=str(p))))
    assert (info.rows, info.features, info.nnz) == (5, 7, 7)
    assert info.classes == [-1.0, 1.0] and info.class_counts == [2, 3]
    assert info.format == "svmlight" and info.exact and not info.dense_source
    assert info.name == "d.svm"
    assert info.density == pytest.approx(7 / 35)


def test_scan_csv_file_counts_nonzeros(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("a,b,label,c\n0,1,2,0\n3,0,1,0\n0,0,2,5\n1,1,3,1\n")
    info = scan(Source(validate(dataset=str(p))))
    assert (info.rows, info.features, info.nnz) == (4, 3, 6)  # the label column is not a feature
    assert info.classes == [1.0, 2.0, 3.0] and info.class_counts == [1, 2, 1]
    assert info.format == "csv" and info.dense_source


def test_scan_text_file_uses_hashed_width_and_text_labels(tmp_path):
    p = tmp_path / "d.txt"
    p.write_text("pos\tapple bean corn\nneg\tapple apple\npos\tzoo\n")
    info = scan(Source(validate(dataset=str(p), hashing_bits=12)))
    assert (info.rows, info.features, info.nnz) == (3, 1 << 12, 5)
    assert info.classes == ["neg", "pos"] and info.class_counts == [1, 2]


def test_scan_npz_file(tmp_path):
    p = tmp_path / "d.npz"
    X = sp.csr_matrix(np.array([[0, 1.0, 0], [2, 0, 3], [0, 0, 0], [4, 0, 0]]))
    np.savez(p, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape), y=np.array([0, 1, 1, 1]))
    info = scan(Source(validate(dataset=str(p))))
    assert (info.rows, info.features, info.nnz) == (4, 3, 4)
    assert info.classes == [0, 1] and info.class_counts == [1, 3]


def test_scan_bigger_file_across_chunks(tmp_path):
    rng = np.random.default_rng(0)
    n = 23_456
    ids = rng.integers(1, 500, size=n)
    labels = np.where(np.arange(n) % 3 == 0, 1, -1)
    p = tmp_path / "d.svm"
    p.write_text("".join(f"{lab} {i}:1\n" for lab, i in zip(labels, ids)))
    info = scan(Source(validate(dataset=str(p))))
    assert (info.rows, info.features, info.nnz) == (n, int(ids.max()), n)
    assert info.class_counts == [int((labels == -1).sum()), int((labels == 1).sum())]


def test_scan_reports_the_bad_line(tmp_path):
    p = tmp_path / "d.svm"
    p.write_text("1 1:1\n" * 15_000 + "1 1:x\n")
    with pytest.raises(DataError) as info:
        scan(Source(validate(dataset=str(p))))
    assert info.value.line == 15_001


def test_scan_cache_is_used_and_keyed_by_file_identity(tmp_path):
    p = tmp_path / "d.svm"
    p.write_text("1 1:1\n-1 2:1\n")
    cache = tmp_path / "cache"
    first = scan(Source(validate(dataset=str(p))), str(cache))
    files = sorted(os.listdir(cache))  # the scan, and the text's row index beside it (text_index)
    assert len(files) == 2 and files[0].startswith("scan-") and files[1] == files[0][:-len(".json")] + ".rows"
    assert json.loads((cache / files[0]).read_text())["rows"] == 2
    assert scan(Source(validate(dataset=str(p))), str(cache)) == first
    p.write_text("1 1:1\n-1 2:1\n1 3:1\n")  # a changed file is a new key
    assert scan(Source(validate(dataset=str(p))), str(cache)).rows == 3


def test_scan_synthetic_estimate_and_exact():
    cfg = synth_cfg("sparse-text", rows=1000, features=512, nnz=8)
    est = scan(Source(cfg))
    assert not est.exact and (est.rows, est.features, est.nnz) == (1000, 512, 8000)
    exact = scan(Source(cfg), exact=True)
    assert exact.exact and exact.rows == 1000 and exact.features == 512
    assert 0 < exact.nnz <= 8000
    assert exact.classes == [-1.0, 1.0] and sum(exact.class_counts) == 1000


def test_scan_shipped_dataset():
    info = scan(Source(validate(dataset="breast-cancer")))
    assert (info.rows, info.features) == (569, 30)
    assert info.classes == [-1.0, 1.0] and sum(info.class_counts) == 569


# ---------------------------------------------------------------- check_trainable

def info_of(rows, classes=(-1.0, 1.0)):
    return DataInfo("d", "svmlight", rows, 10, rows, list(classes), [1] * len(classes), False)


@pytest.mark.parametrize("classes", [[1.0], ["spam"], []])
def test_check_trainable_refuses_one_class(classes):
    with pytest.raises(DataError, match="one class"):
        check_trainable(info_of(100, classes), validate(batch_size=1))


def test_check_trainable_refuses_one_class_from_a_real_file(tmp_path):
    p = tmp_path / "d.svm"
    p.write_text("1 1:1\n1 2:1\n1 3:1\n")
    cfg = validate(dataset=str(p), batch_size=1)
    with pytest.raises(DataError, match="one class"):
        check_trainable(scan(Source(cfg)), cfg)


def test_check_trainable_batch_size_against_training_rows():
    # 100 rows -> 20 held out -> 80 training rows
    check_trainable(info_of(100), validate(batch_size=80))
    with pytest.raises(ConfigError, match=r"^batch_size: ") as info:
        check_trainable(info_of(100), validate(batch_size=81))
    assert info.value.knob == "batch_size"
    assert "80" in str(info.value)


def test_check_trainable_with_a_test_file_trains_on_every_row(tmp_path):
    t = tmp_path / "test.svm"
    t.write_text("1 1:1\n")
    check_trainable(info_of(100), validate(batch_size=100, test_file=str(t)))
    with pytest.raises(ConfigError, match=r"^batch_size: "):
        check_trainable(info_of(100), validate(batch_size=101, test_file=str(t)))


def test_check_trainable_kernel_svm_row_limit():
    from svmcore.spec.knobs import MAX_KERNEL_SVM_ROWS as limit

    # limit training rows = rows - held-out rows (a fifth, below 100k rows)
    check_trainable(info_of(limit * 5 // 4), validate(model="kernel-svm", rows=limit, batch_size=1))
    with pytest.raises(ConfigError, match=r"^model: "):
        check_trainable(info_of(limit * 5 // 4 + 5), validate(model="kernel-svm", rows=limit, batch_size=1))


def test_check_trainable_does_not_materialise_a_row_index():
    # The number of held-out rows is min(rows // 5, 20,000); counting it with
    # np.arange(rows) costs ~17 bytes per row in the worker's prepare phase
    # (~1.7 GiB at the 100,000,000-row maximum), even in stream mode.
    import tracemalloc

    info = info_of(10_000_000)
    cfg = validate(batch_size=1)
    tracemalloc.start()
    try:
        check_trainable(info, cfg)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, f"check_trainable traced {peak / 2**20:.0f} MiB for 10,000,000 rows"


# ---------------------------------------------------------------- a file changed while read

def _svm_file(path, rows=5000):
    rng = np.random.default_rng(1)
    ids = rng.integers(1, 300, size=rows)
    path.write_text("".join(f"{1 if r % 2 else -1} {i}:1 {i + 1}:0.5\n" for r, i in enumerate(ids)))
    return path


def _pinned(path, **knobs):
    source = Source(validate(dataset=str(path), **knobs))
    source.during = "training"
    info = scan(source)
    return source, info


def _change(path, how):
    if how == "truncate":
        os.truncate(path, os.path.getsize(path) // 2)
    elif how == "append":
        with open(path, "ab") as f:
            f.write(b"1 3:1\n" * 10)
    elif how == "tear":  # a writer caught mid-line
        with open(path, "ab") as f:
            f.write(b"1 3:1 17")
    elif how == "replace":  # same bytes count, another file (a new inode)
        tmp = path.parent / "new.svm"
        tmp.write_bytes(path.read_bytes().replace(b"-1 ", b"+1 ", 1))
        os.replace(tmp, path)


@pytest.mark.parametrize("how, says", [("truncate", "bytes at the start"), ("append", "bytes at the start"),
                                       ("tear", "bytes at the start"), ("replace", "replaced by another file")])
@pytest.mark.parametrize("parser", ["sklearn", "native"])
def test_a_file_changed_between_chunks_fails_the_pass_with_one_message(tmp_path, how, says, parser):
    path = _svm_file(tmp_path / "train.svm")
    size = os.path.getsize(path)
    source, info = _pinned(path, parser=parser)
    assert source.stamp.size == size and source.expected_rows == info.rows == 5000
    chunks = source.iter_chunks(1000)
    next(chunks)
    _change(path, how)
    with pytest.raises(DataError) as e:
        list(chunks)
    msg = str(e.value)
    assert msg.startswith("train.svm changed while training: ") and says in msg, msg
    assert msg.endswith("; re-run on a stable copy") and str(tmp_path) not in msg
    if how in ("truncate", "append", "tear"):
        assert f"{size:,} bytes at the start, {os.path.getsize(path):,} now" in msg


def test_an_unchanged_file_reads_every_pass(tmp_path):
    source, info = _pinned(_svm_file(tmp_path / "train.svm"))
    for _ in range(2):
        assert sum(X.shape[0] for X, _ in source.iter_chunks(1000)) == info.rows


def test_a_pass_with_other_rows_than_the_scan_fails(tmp_path):
    source, info = _pinned(_svm_file(tmp_path / "train.svm"))
    source.expected_rows = info.rows + 1  # the file looks the same, its rows do not
    with pytest.raises(DataError, match="5,001 rows at the start, 5,000 read in this pass"):
        list(source.iter_chunks(1000))


def test_a_deleted_file_fails_the_pass(tmp_path):
    path = _svm_file(tmp_path / "train.svm")
    source, _ = _pinned(path)
    chunks = source.iter_chunks(1000)
    next(chunks)
    os.remove(path)
    with pytest.raises(DataError, match="train.svm changed while training: it was deleted or moved away"):
        list(chunks)


def test_a_file_changed_during_the_scan_fails_the_scan(tmp_path, monkeypatch):
    path = _svm_file(tmp_path / "train.svm")
    raw = Source._raw_chunks

    def appending(self, *a, **k):
        for i, ch in enumerate(raw(self, *a, **k)):
            if i == 0:
                _change(path, "append")
            yield ch

    monkeypatch.setattr(Source, "_raw_chunks", appending)
    with pytest.raises(DataError, match="train.svm changed while being read: .* bytes at the start"):
        scan(Source(validate(dataset=str(path))), str(tmp_path / "cache"))
    assert not (tmp_path / "cache").exists() or not os.listdir(tmp_path / "cache")  # nothing cached


def test_memmap_conversion_of_a_file_changed_midway_fails_and_leaves_no_cache(tmp_path, monkeypatch):
    from svmcore.data import copies as cache

    path = _svm_file(tmp_path / "train.svm", rows=25_000)
    source, info = _pinned(path, mode="memmap")
    raw = Source._raw_chunks

    def truncating(self, *a, **k):
        for i, ch in enumerate(raw(self, *a, **k)):
            if i == 1:
                _change(path, "truncate")
            yield ch

    monkeypatch.setattr(Source, "_raw_chunks", truncating)
    with pytest.raises(DataError, match="train.svm changed while training"):
        cache.binary_copy(source, str(tmp_path / "cache"), info.classes, info.features, "float64", "csr", info.rows)
    assert not [n for n in os.listdir(tmp_path / "cache") if n.startswith("bin-")]


def test_a_sorted_file_can_group_its_positives_by_kind_holding_about_a_chunk(tmp_path):
    """w8a's positives come in runs of rows that are alike (a source's pages): ``group_kinds``
    writes the positives grouped by the marker token that makes each one positive, each kind's
    rows in file order, then the negatives as ``sort_by_label`` does; the same rows either way.
    A run of kinds holding more than ``budget_rows`` rows is gathered in a pass of its own."""
    from svmcore.data.files import make_dataset

    def lines(path):
        with open(path) as f:
            return f.read().splitlines()

    kw = dict(rows=12_000, features=1 << 12, nnz_per_row=20, seed=1, positive_fraction=0.05, sort_by_label=True)
    make_dataset("sparse-text", out=str(tmp_path / "sorted.svm"), **kw)
    make_dataset("sparse-text", out=str(tmp_path / "kinds.svm"), group_kinds=True, **kw)
    plain, grouped = lines(tmp_path / "sorted.svm"), lines(tmp_path / "kinds.svm")
    assert sorted(plain) == sorted(grouped) and grouped != plain
    n_pos = sum(ln.startswith("1 ") for ln in plain)
    assert all(ln.startswith("1 ") for ln in grouped[:n_pos]) and grouped[n_pos:] == plain[n_pos:]
    make = lambda: iter_synthetic("sparse-text", 12_000, 1 << 12, 20, 1, 0.05)  # noqa: E731
    kinds = lambda X: synthetic.marker_kinds(X, 1 << 12, 1)  # noqa: E731
    X0, y0 = all_rows(make())
    pos = X0[y0 > 0]
    want = pos[np.argsort(kinds(pos), kind="stable")]  # by kind, each kind's rows in file order
    for budget in (GEN_CHUNK_ROWS, 50):  # one gathering pass; one for every few kinds
        X, y = all_rows(synthetic.sorted_by_label(make, kinds, budget_rows=budget))
        assert (y[:n_pos] > 0).all() and (y[n_pos:] < 0).all() and same_matrix(X[:n_pos], want)
    assert len(np.unique(kinds(want))) > 20
    with pytest.raises(ConfigError, match="group_kinds"):
        make_dataset("sparse-text", out=str(tmp_path / "x.svm"), **{**kw, "sort_by_label": False}, group_kinds=True)


def test_the_marker_kind_of_a_row_is_its_head_token_with_the_smallest_marker():
    X, y = synthetic.sparse_text_chunk(0, 3000, 1 << 12, 20, 1, 0.05)
    kinds = synthetic.marker_kinds(X, 1 << 12, 1)
    rank = np.arange(1 << 12)
    u_of = dict(zip(((rank * 2654435761 + 1) % (1 << 12)).tolist(), synthetic._hash_unit(rank, 8).tolist()))
    for i in range(0, 3000, 97):
        cols = X.indices[X.indptr[i]:X.indptr[i + 1]].tolist()
        assert kinds[i] == (min(cols, key=lambda c: u_of[c]) if cols else -1)
