"""The lean floor, a configuration of the one run: the native library (built on demand),
its SGD through either entry, its svmlight writer against scikit-learn's, and a run
whose reader and solver need only numpy and the native library, which loads neither scipy,
scikit-learn and trains exactly as the same run with scikit-learn's parser."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.data import nativesvm
from svmcore.data.rows import Rows
from svmcore.worker.native_sgd import NativeSGD

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("classes", [[-1.0, 1.0], [0, 1, 2]])
@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_native_sgd_weights_equal_through_either_entry(classes, average, dtype):
    """The lean path's CSR parts (straight to the kernel, ``binding.SGDFit``) and a scipy matrix
    (``binding.sgd_fit``, checked every call) train the same weights."""
    rng = np.random.default_rng(3)
    X = sp.random(1500, 400, density=0.03, random_state=2, format="csr", dtype=dtype)
    y = np.asarray(classes)[rng.integers(0, len(classes), 1500)]
    a, b = NativeSGD(1e-5, average, 400, classes), NativeSGD(1e-5, average, 400, classes)
    for s in range(0, 1500, 128):
        a.partial_fit(X[s:s + 128], y[s:s + 128])
        lo, hi = X.indptr[s], X.indptr[min(s + 128, 1500)]
        b.partial_fit((X.data[lo:hi], X.indices[lo:hi], (X.indptr[s:s + 129] - lo).astype(np.int64)), y[s:s + 128])
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.intercept_, b.intercept_)
    assert np.array_equal(a.predict(X), b.predict(X))
    assert np.allclose(a.decision_function(X), b.decision_function(X), rtol=0, atol=1e-12)


def test_native_sgd_refuses_unknown_labels_and_wide_rows():
    m = NativeSGD(1e-4, True, 3, [-1.0, 1.0])
    with pytest.raises(ValueError, match="not one of the classes"):
        m.partial_fit((np.ones(1), np.zeros(1, np.int32), np.array([0, 1])), np.array([2.0]))
    with pytest.raises(ValueError, match="feature 4"):
        m.partial_fit((np.ones(1), np.array([3], np.int32), np.array([0, 1])), np.array([1.0]))


@pytest.mark.parametrize("labels", ["float", "int"])
def test_writer_bytes_equal_dump_svmlight_file(labels):
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(5)
    X = sp.random(400, 1000, density=0.01, random_state=4, format="csr")
    X.data = np.concatenate([rng.standard_normal(X.nnz - 6), [1e-300, -0.0, 1e300, 5e-324, 123456789.0, 0.1]])
    X.indptr[100:] = X.indptr[100:]  # rows without nonzeros stay in (sp.random leaves some empty)
    y = rng.integers(-1, 3, 400) if labels == "int" else rng.standard_normal(400)
    ref = io.BytesIO()
    dump_svmlight_file(X, y, ref, zero_based=False)
    assert nativesvm.write_rows(X.data, X.indices, X.indptr, y) == ref.getvalue()


def test_library_builds_on_demand_into_an_empty_folder(tmp_path):
    code = "from svmcore.data.native import binding, library_path; print(library_path()); binding.library()"
    env = dict(os.environ, SVMCORE_NATIVE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    path = proc.stdout.strip()
    assert os.path.exists(path) and path.startswith(str(tmp_path))
    assert os.path.basename(path).startswith("libsvmnative-")
    # a second process finds it and builds nothing
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.stdout.strip() == path


def test_no_compiler_is_a_clear_error(tmp_path):
    code = ("from svmcore.data import native\ntry:\n    native.library_path()\n"
            "except native.NativeBuildError as e:\n    print('ERR', e)")
    env = dict(os.environ, SVMCORE_NATIVE_DIR=str(tmp_path / "c"), CC=str(tmp_path / "no-such-gcc"))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert "ERR" in proc.stdout and "no-such-gcc" in proc.stdout


def _run_worker(tmp_path, name: str, **knobs) -> tuple[dict, list]:
    """A worker process run to its outcome; returns the outcome event and its sys.modules."""
    from svmcore.spec.config import validate

    run_dir = tmp_path / name
    run_dir.mkdir()
    cfg = validate({"dataset": str(tmp_path / "d.svm"), "mode": "stream", "epochs": 3, "batch_size": 256,
                    "shuffle_buffer": 1000, **knobs})
    (run_dir / "job.json").write_text(json.dumps({"config": cfg.to_dict(), "cache_dir": str(tmp_path / "cache")}))
    code = ("import sys, json\nfrom svmcore.worker.main import main\nrc = main(sys.argv[1])\n"
            "mapped = 'libcrypto' in open('/proc/self/maps').read()\n"
            "import numpy as np\nhuge = np._core.multiarray._get_madvise_hugepage()\n"
            "print(json.dumps(sorted(sys.modules) + (['<libcrypto mapped>'] if mapped else [])\n"
            "                 + (['<huge pages advised>'] if huge else [])))")
    proc = subprocess.run([sys.executable, "-c", code, str(run_dir)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return events[-1], json.loads(proc.stdout.strip().splitlines()[-1])


def test_lean_run_loads_only_numpy_and_trains_as_with_scikit_learns_parser(tmp_path):
    from svmcore.data.files import make_dataset

    make_dataset("sparse-text", rows=6000, features=5000, nnz_per_row=20, seed=1, out=str(tmp_path / "d.svm"))
    lean, modules = _run_worker(tmp_path, "lean", parser="native", solver="native", threads=2)
    assert lean["status"] == "completed", lean
    assert lean["summary"]["lean"] is True and lean["summary"]["threads"]["reader_thread"]
    heavy = [m for m in modules if m.split(".")[0] in ("scipy", "sklearn", "numba", "llvmlite", "threadpoolctl",
                                                        "pandas", "joblib")]
    assert heavy == [], heavy
    assert "memray" not in modules  # the trace knob is off: its tracker is never loaded
    assert "<libcrypto mapped>" not in modules  # OpenSSL's: ~3 MiB of resident pages (floor.lean)
    # modules only other paths need, imported where they are used: 2.4 MiB of the floor (shutil comes in at the
    # end, to write the model and drop the spill)
    assert not {"zipfile", "subprocess", "socket", "concurrent.futures", "uuid"} & set(modules)
    assert "numpy.random" not in modules  # its seeded permutations come from the native library (2.2 MiB)
    assert "<huge pages advised>" not in modules  # a 2 MiB page for each parsed block's arrays (floor._small_pages)
    assert lean["summary"]["spill"]["read_back"]  # later passes read the spill, shuffled
    assert lean["summary"]["spill"]["filled_first"] is False  # labels in random order: the first pass trains
    # the memory each pass retained, read without a new import (the floor's modules are checked above)
    ends = [json.loads(line) for line in (tmp_path / "lean" / "events.jsonl").read_text().splitlines()
            if '"pass_end"' in line]
    assert [e["epoch"] for e in ends] == [1, 2, 3] and all(0 < e["anon_bytes"] < e["rss_bytes"] for e in ends)
    # the same run with scikit-learn's parser (and so scipy and scikit-learn loaded): same rows in the same
    # order, same model
    classic, modules = _run_worker(tmp_path, "classic", parser="sklearn", solver="native", threads=1)
    assert "sklearn" in {m.split(".")[0] for m in modules} and "<libcrypto mapped>" in modules
    for key in ("accuracy", "balanced_accuracy", "samples_seen", "test_rows", "train_rows"):
        assert lean["summary"][key] == classic["summary"][key], key


@pytest.mark.parametrize("monitor,live_evals,progress", [("off", 0, False), ("light", 0, True), ("full", 1, True)])
def test_lean_run_follows_the_monitor_knob_and_reports_its_model_size(tmp_path, monitor, live_evals, progress):
    from svmcore.data.files import make_dataset

    make_dataset("sparse-text", rows=3000, features=2000, nnz_per_row=10, seed=1, out=str(tmp_path / "d.svm"))
    out, _ = _run_worker(tmp_path, monitor, parser="native", solver="native", monitor=monitor)
    assert out["status"] == "completed" and out["summary"]["lean"] is True
    events = [json.loads(line) for line in (tmp_path / monitor / "events.jsonl").read_text().splitlines()]
    evals = [e for e in events if e["kind"] == "eval" and not e.get("final")]
    assert (len(evals) >= 1) == bool(live_evals)  # one a pass at least with full monitoring, none otherwise
    assert not (tmp_path / monitor / "eval-sample").exists()  # the live sample's folder goes with the run's end
    assert any(e["kind"] == "progress" for e in events) == progress
    s = out["summary"]
    assert s["monitor"] == monitor and 0 < s["nonzero_weights"] <= s["weights"] == 2000
    assert s["sparse_model_bytes"] == s["nonzero_weights"] * 12 + 8 + 16


def test_lean_run_names_a_bad_line(tmp_path):
    from svmcore.data.files import make_dataset

    make_dataset("sparse-text", rows=3000, features=500, nnz_per_row=5, seed=1, out=str(tmp_path / "d.svm"))
    with open(tmp_path / "d.svm", "ab") as f:
        f.write(b"1 3:abc\n")
    out, _ = _run_worker(tmp_path, "bad", parser="native", solver="native")
    assert out["status"] == "failed" and "3001" in out["error"]["message"], out["error"]


def test_data_make_writes_the_same_bytes_as_scikit_learn(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    from svmcore.data.files import make_dataset
    from svmcore.data.synthetic import iter_synthetic

    make_dataset("sparse-text", rows=25_000, features=3000, nnz_per_row=12, seed=9, out=str(tmp_path / "a.svm"))
    ref = io.BytesIO()
    for X, y in iter_synthetic("sparse-text", 25_000, 3000, 12, 9):
        dump_svmlight_file(X, y, ref, zero_based=False)
    assert (tmp_path / "a.svm").read_bytes() == ref.getvalue()


@pytest.mark.parametrize("shuffle", [True, False])
def test_lean_memory_mode_loads_only_numpy_and_trains_as_with_scikit_learns_parser(tmp_path, shuffle):
    from svmcore.data.files import make_dataset

    make_dataset("sparse-text", rows=6000, features=5000, nnz_per_row=20, seed=1, out=str(tmp_path / "d.svm"))
    knobs = {"mode": "memory", "precision": "float32", "shuffle": shuffle}
    lean, modules = _run_worker(tmp_path, "lean", parser="native", solver="native", **knobs)
    assert lean["status"] == "completed", lean
    assert lean["summary"]["lean"] is True and lean["summary"]["train_data_bytes"] > 0
    heavy = [m for m in modules if m.split(".")[0] in ("scipy", "sklearn", "numba", "llvmlite", "threadpoolctl",
                                                        "pandas", "joblib")]
    assert heavy == [], heavy
    # the same run with scikit-learn's parser: same rows in the same order, same model
    classic, modules = _run_worker(tmp_path, "classic", parser="sklearn", solver="native", **knobs)
    assert "sklearn" in {m.split(".")[0] for m in modules} and not classic["summary"]["lean"]
    for key in ("accuracy", "balanced_accuracy", "samples_seen", "batches", "test_rows", "train_rows", "nonzero_weights"):
        assert lean["summary"][key] == classic["summary"][key], key
    for s in (lean["summary"], classic["summary"]):  # the report's keys, the same in both configurations
        assert s["threads"]["os_threads"] >= 1 and s["threads"]["reader_thread"] is False
        assert set(s) == set(classic["summary"])


def test_parse_ahead_gives_the_same_rows_with_only_the_parse_on_the_reader_thread(tmp_path):
    """threads=2 ran the whole batch pipeline on the reader thread, whose Python work took the
    GIL from training: at 300k rows it was slower than threads=1 (first pass 105k vs 111k rows/s,
    later passes 428k vs 504k; medians of 5). Now the thread only parses in the first pass (later
    passes: test_later_passes_read_the_spill_ahead_in_the_same_order)."""
    import threading

    from svmcore.data.feeds.source_rows import SourceRows
    from svmcore.data.files import make_dataset
    from svmcore.data.sources import Source
    from svmcore.spec.config import validate

    path = str(tmp_path / "d.svm")
    # more 1 MiB text blocks than the reader's queue holds (two), so the reader is still putting blocks
    # when the first one is read: with fewer it could finish before the check below
    make_dataset("sparse-text", rows=20_000, features=5000, nnz_per_row=20, seed=3, out=path)
    source = Source(validate({"dataset": path, "parser": "native"}))
    source.pin()
    rows = SourceRows(source, 5000, np.array([-1.0, 1.0]), 20_000)
    plain = [Rows(*r) for r in rows.rows(False)]
    assert len(plain) > 3
    seen_reader = []
    ahead = []
    for r in rows.rows(False, parse_ahead=True):
        rows_ = Rows(*r)
        seen_reader.append(any(t.name == "svmcore-reader" for t in threading.enumerate()))
        ahead.append(rows_)
    assert any(seen_reader)
    assert len(ahead) == len(plain)
    for a, b in zip(ahead, plain):
        assert np.array_equal(a.codes, b.codes) and np.array_equal(a.X.data, b.X.data)
        assert np.array_equal(a.X.indices, b.X.indices) and np.array_equal(a.X.indptr, b.X.indptr)


def test_later_passes_read_the_spill_ahead_in_the_same_order(tmp_path):
    """threads=2: a later pass's windows are read (one native call each, without the GIL) and cut
    into batches by the reader thread, half a window ahead: the same batches as one thread."""
    import threading

    from svmcore.data.files import make_dataset
    from svmcore.data.shuffle_order import Shuffle
    from svmcore.data.spill import Spill
    from svmcore.spec.config import validate
    from tests.helpers import stream_feed

    path = str(tmp_path / "d.svm")
    make_dataset("sparse-text", rows=9000, features=3000, nnz_per_row=20, seed=5, out=path)
    cfg = validate({"dataset": path, "mode": "stream", "shuffle_buffer": 2048, "threads": 2, "parser": "native"})
    spill = Spill(str(tmp_path / "spill"), np.float64)
    stream = stream_feed(cfg, 9000, spill, Shuffle(cfg.seed, 2048), hold_out=False, reader_thread=True)
    assert sum(b.codes.shape[0] for b in stream.batches(128, 0)) == 9000 and spill.complete
    assert stream._later_ahead(128) == 8  # half the window's 16 batches
    seen_reader, ahead = [], []
    for b in stream.batches(128, 1):  # each batch copied before the next is taken: their buffers are reused
        seen_reader.append(any(t.name == "svmcore-reader" for t in threading.enumerate()))
        ahead.append(_owned(b))
    assert any(seen_reader)
    stream.reader_thread = False
    plain = [_owned(b) for b in stream.batches(128, 1)]
    assert len(ahead) == len(plain) and sum(b.codes.shape[0] for b in plain) == 9000
    for a, b in zip(ahead, plain):
        assert np.array_equal(a.codes, b.codes) and np.array_equal(a.X.data, b.X.data)
        assert np.array_equal(a.X.indices, b.X.indices) and np.array_equal(a.X.indptr, b.X.indptr)
    # wide rows: at most LATER_AHEAD_BYTES of batches, and never fewer than two
    spill.nnz = spill.rows * 50_000
    assert stream._later_ahead(128) == 2


def test_held_out_rows_wait_on_disk_while_training(tmp_path):
    """The held-out rows' index is read when rows are and let go while training (the
    index, labels and codes of up to 20,000 rows: 0.46 MiB of the peak); read again, the same rows; a cache folder
    whose labels no longer match its rows is named."""
    from svmcore.data.feeds.held_out import held_out
    from svmcore.data.feeds.source_rows import SourceRows
    from svmcore.data.files import make_dataset
    from svmcore.data.sources import Source
    from svmcore.spec.config import validate
    from svmcore.spec.errors import DataError

    path = str(tmp_path / "d.svm")
    make_dataset("sparse-text", rows=5000, features=800, nnz_per_row=8, seed=2, out=path)
    source = Source(validate({"dataset": path, "parser": "native"}))
    source.pin()
    held = held_out(SourceRows(source, 800, np.array([-1.0, 1.0]), 5000), str(tmp_path / "cache"))
    assert held.n_rows > 0 and held._indptr is None
    rows = np.arange(0, held.n_rows, 7)
    first = held.gather(rows)
    held.release()
    assert held._indptr is None
    again = held.gather(rows)
    assert held._indptr is not None
    for a, b in zip(first, again):
        assert np.array_equal(a, b)
    y = held.labels()
    assert y.shape == (held.n_rows,)
    np.save(os.path.join(held.folder, "y.npy"), y[:-1])
    with pytest.raises(DataError, match="labels for"):
        held.labels()


def test_the_live_sample_scored_from_disk_scores_as_in_memory(tmp_path):
    """The live-evaluation sample waits in the run's folder and is read back 256 rows at a
    time when scored: the same confusion matrix as the rows held in memory."""
    from svmcore.data.feeds.held_out import SAMPLE_SLICE_ROWS, drop_sample, sample_on_disk
    from svmcore.worker.loop import confusions
    from tests.helpers import parts_of

    rng = np.random.default_rng(3)
    X = sp.random(2000, 400, density=0.05, random_state=3, format="csr")
    parts = parts_of(X)
    codes = rng.integers(0, 3, 2000)
    w = rng.normal(size=(400, 3))

    def predict(Xs):
        return np.argmax(sp.csr_matrix((Xs.data, Xs.indices, Xs.indptr), shape=(Xs.n_rows, 400)) @ w, axis=1)

    on_disk = sample_on_disk(str(tmp_path / "eval-sample"), parts, codes)
    seen = []
    in_memory = confusions([predict], parts, codes, 3)[0][0]
    assert in_memory.sum() == 2000 and np.trace(in_memory) < 2000
    assert np.array_equal(confusions([lambda Xs: seen.append(Xs.n_rows) or predict(Xs)], on_disk, codes, 3)[0][0],
                          in_memory)
    assert max(seen) == SAMPLE_SLICE_ROWS and sum(seen) == 2000
    drop_sample(on_disk)
    assert not (tmp_path / "eval-sample").exists()


def test_the_held_out_rows_are_extracted_in_big_blocks_and_training_reads_small_ones(tmp_path, monkeypatch):
    """The extraction's per-block leftovers stayed resident through training (1.1-1.8 MiB of a
    first run's peak at 10^7 rows in 1 MiB blocks): it reads 8 MiB blocks; the first pass
    keeps 1 MiB ones (each parsed block is held while it waits)."""
    from svmcore.data import nativesvm
    from svmcore.data.feeds.held_out import HELD_OUT_BLOCK_BYTES, held_out
    from svmcore.data.feeds.source_rows import SourceRows
    from svmcore.data.files import make_dataset
    from svmcore.data.sources import Source
    from svmcore.spec.config import validate

    make_dataset("sparse-text", rows=3000, features=500, nnz_per_row=5, seed=1, out=str(tmp_path / "d.svm"))
    seen = []
    real = nativesvm.iter_parsed_blocks

    def recorded(path, max_features, block_bytes=nativesvm.DEFAULT_BLOCK_BYTES, scratch=False, *more):
        seen.append(block_bytes)
        return real(path, max_features, block_bytes, scratch, *more)

    monkeypatch.setattr(nativesvm, "iter_parsed_blocks", recorded)
    source = Source(validate({"dataset": str(tmp_path / "d.svm"), "parser": "native", "solver": "native",
                              "mode": "stream"}))
    rows = SourceRows(source, 500, np.array([-1.0, 1.0]), 3000)
    held = held_out(rows, str(tmp_path / "cache"))
    assert seen == [HELD_OUT_BLOCK_BYTES] == [8 << 20] and held.labels().shape[0] > 0
    list(rows.rows(False))
    assert seen[1:] == [nativesvm.DEFAULT_BLOCK_BYTES]


def _owned(b):
    """A batch copied out of the buffers it was gathered into (``rows.Recycled``)."""
    from svmcore.data.rows import Parts, Rows

    return Rows(Parts(*(a.copy() for a in b.X)), b.codes.copy())
