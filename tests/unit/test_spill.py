"""Stream mode's binary spill: what is read back is what was parsed."""

import os

import numpy as np
import scipy.sparse as sp

from svmcore.data.feeds.memory import InMemory
from svmcore.data.rows import Dense
from svmcore.data.shuffle_order import Shuffle
from svmcore.data.spill import Spill
from svmcore.spec.config import validate
from tests.helpers import parts_of, stream_feed


def _batches(n=1000, f=50, size=128, seed=0):
    X = sp.random(n, f, density=0.1, format="csr", random_state=seed)
    y = (np.arange(n) % 3 == 0).astype(np.int64)  # class codes
    return X, y, [(parts_of(X[s:s + size]), y[s:s + size]) for s in range(0, n, size)]


def test_write_through_passes_batches_unchanged_and_reads_them_back(tmp_path):
    X, y, batches = _batches()
    spill = Spill(str(tmp_path / "spill"), np.float32)
    seen = list(spill.write_through(iter(batches)))
    assert all(a[0] is b[0] for a, b in zip(seen, batches))
    assert spill.complete and spill.rows == X.shape[0]
    back = list(spill.read(300))  # another batch size
    assert [b.X.n_rows for b in back] == [300, 300, 300, 100]
    Xb = sp.vstack([b.X.csr(X.shape[1]) for b in back]).tocsr()
    np.testing.assert_array_equal(Xb.toarray(), X.astype(np.float32).toarray())
    np.testing.assert_array_equal(np.concatenate([b[1] for b in back]), y)


def test_an_unfinished_first_pass_is_never_read_back(tmp_path):
    _, _, batches = _batches()
    spill = Spill(str(tmp_path / "spill"), np.float64)
    it = spill.write_through(iter(batches))
    next(it)
    it.close()  # the consumer stopped early (cancel, error)
    assert not spill.complete


def test_discard_removes_the_files(tmp_path):
    _, _, batches = _batches()
    spill = Spill(str(tmp_path / "spill"), np.float64)
    list(spill.write_through(iter(batches)))
    spill.discard()
    assert not os.path.exists(tmp_path / "spill") and not spill.complete


def test_stream_epochs_after_the_first_read_the_spill_and_match(tmp_path):
    path = tmp_path / "d.svm"
    from sklearn.datasets import dump_svmlight_file
    X, _, _ = _batches(n=700, f=40)
    y = np.arange(700) % 2
    dump_svmlight_file(X, y, str(path), zero_based=False)
    cfg = validate(dataset=str(path), mode="stream", precision="float32")
    spill = Spill(str(tmp_path / "spill"), np.float32)
    data = stream_feed(cfg, 560, spill)
    first = list(data.batches(64, epoch=0))
    os.rename(path, str(path) + ".gone")  # later epochs must not touch the text
    second = list(data.batches(64, epoch=1))
    assert len(first) == len(second)
    for (a, ya), (b, yb) in zip(first, second):
        np.testing.assert_array_equal(a.dense(40), b.dense(40))
        np.testing.assert_array_equal(ya, yb)
        assert b.data.dtype == np.float32


def test_memory_mapped_rows_are_released_behind_the_cursor(tmp_path):
    n = 400_000
    arr = np.lib.format.open_memmap(str(tmp_path / "x.npy"), mode="w+", dtype=np.float64, shape=(n,))
    arr[:] = 1.0
    arr.flush()
    del arr
    m = np.load(str(tmp_path / "x.npy"), mmap_mode="r")

    def rss_file_kb():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("RssFile:"))

    base = rss_file_kb()
    assert float(m.sum()) == n  # touches every page: ~3 MiB mapped in
    touched = rss_file_kb()
    InMemory(Dense(m), np.zeros(0, np.int32), np.float64)._release(0, n)
    released = rss_file_kb()
    assert touched - base > 2500, (base, touched)
    assert released - base < 200, (base, touched, released)
    assert float(m.sum()) == n  # still readable after the release


def test_array_batches_release_mapped_pages_as_they_go(tmp_path):
    n, f = 50_000, 8
    x = np.lib.format.open_memmap(str(tmp_path / "x.npy"), mode="w+", dtype=np.float64, shape=(n, f))
    x[:] = 2.0
    x.flush()
    del x
    X = np.load(str(tmp_path / "x.npy"), mmap_mode="r")
    data = InMemory(Dense(X), np.zeros(n, np.int64), np.float64)
    total = sum(float(b.X.array.sum()) for b in data.batches(1000))
    assert total == 2.0 * n * f
    with open("/proc/self/smaps") as fh:
        text = fh.read()
    block = text[text.index(str(tmp_path / "x.npy")):]
    rss_kb = int(next(l.split()[1] for l in block.splitlines() if l.startswith("Rss:")))
    assert rss_kb < 200, rss_kb  # 3 MiB went through; almost none of it is still mapped in


def test_float16_stream_reads_back_shuffled_and_dense(tmp_path):
    """Issue 18: a shuffled float16 pass over the spill failed in scipy's csr_row_index
    ("Output dtype not compatible with inputs"), and a dense one in csr_todense. Every
    row comes back once, its values rounded to float16 and upcast to float32."""
    path = tmp_path / "d.svm"
    from sklearn.datasets import dump_svmlight_file
    X, _, _ = _batches(n=700, f=40)
    y = np.arange(700) % 2
    dump_svmlight_file(X, y, str(path), zero_based=False)
    cfg = validate(dataset=str(path), mode="stream", precision="float16")
    expected = X.toarray().astype(np.float16).astype(np.float32)
    for dense in (False, True):
        spill = Spill(str(tmp_path / f"spill{dense}"), np.float16)
        data = stream_feed(cfg, 700, spill, Shuffle(seed=1, window_rows=256), hold_out=False)
        for epoch in (0, 1):  # the text, then the spill
            # a shuffled batch lives in buffers later batches reuse: read each while it is the current one
            rows = np.vstack([b.X.dense(40) if dense else b.X.csr(40).toarray() for b in data.batches(64, epoch=epoch)])
            assert rows.dtype == np.float32 and rows.shape == (700, 40)
            # rows come shuffled: compare them as a set, sorted the same way
            np.testing.assert_array_equal(np.unique(rows, axis=0), np.unique(expected, axis=0))


def test_a_window_read_without_the_native_library_is_the_same(tmp_path, monkeypatch):
    """Shuffled windows are read by the native library in one call a window; where it cannot
    be built (the classic path does not need it otherwise) Python reads the same pieces."""
    from svmcore.data import spill as spill_module
    X, y, batches = _batches(n=3000, f=60, size=100)
    spill = Spill(str(tmp_path / "spill"), np.float64)
    list(spill.write_through(iter(batches)))

    def windows():
        got = list(spill.read_windows(128, 1024, Shuffle(seed=3, window_rows=1024).rng(1)))
        return [(b.X.data, b.X.indices, b.X.indptr, b.codes) for b in got]

    native = windows()
    assert sum(b[3].shape[0] for b in native) == 3000
    monkeypatch.setattr(spill_module, "native", lambda: False)
    python = windows()
    assert len(python) == len(native)
    for a, b in zip(native, python):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)
    # and the rows are the spill's: every row once, as written
    rows = sp.vstack([sp.csr_matrix((d, i, p), shape=(p.shape[0] - 1, X.shape[1])) for d, i, p, _ in native])
    np.testing.assert_array_equal(np.unique(rows.toarray(), axis=0), np.unique(X.toarray(), axis=0))
