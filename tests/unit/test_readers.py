"""svmcore.readers on small files written into tmp_path."""

from __future__ import annotations

import io
import os
import struct
import time
import tracemalloc
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.data import readers
from svmcore.data.readers import iter_file_chunks, load_npz, sniff_format
from svmcore.data.sources import Source, scan
from svmcore.spec.config import validate
from svmcore.spec.errors import DataError

CHUNK_SIZES = [1, 2, 1000]


# ---------------------------------------------------------------- helpers

def write(tmp_path, name: str, content: bytes | str) -> str:
    p = tmp_path / name
    p.write_bytes(content.encode() if isinstance(content, str) else content)
    return str(p)


def read_all(path: str, chunk_rows: int = 1000, fmt: str | None = None, **kw):
    """Every chunk of the file, stacked: (X dense ndarray, y, [chunk first lines])."""
    chunks = list(iter_file_chunks(path, chunk_rows, fmt, **kw))
    assert chunks, "no rows"
    Xs = [c.X.toarray() if sp.issparse(c.X) else np.asarray(c.X) for c in chunks]
    width = max(x.shape[1] for x in Xs)
    assert all(x.shape[1] == width for x in Xs), "chunks of one file disagree on width"
    return np.vstack(Xs), np.concatenate([c.y for c in chunks]), [c.first_line for c in chunks]


def data_error(path: str, chunk_rows: int = 1000, fmt: str | None = None, **kw) -> DataError:
    with pytest.raises(DataError) as info:
        for _ in iter_file_chunks(path, chunk_rows, fmt, **kw):
            pass
    return info.value


def assert_line(err: DataError, line: int, path: str | None = None):
    assert err.line == line, str(err)
    assert f"line {line}" in str(err)
    if path is not None:
        # the full path stays on the error; the message names the file only (it reaches the browser)
        assert err.path == path and os.path.basename(path) in str(err)
        assert os.path.dirname(path) not in str(err)


def npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def npy_bytes(arr) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


# ---------------------------------------------------------------- good files

SVMLIGHT_GOOD = (
    "# a comment line\n"
    "1 1:0.5 3:2\n"
    "\n"
    "-1 2:1.5   # trailing comment\n"
    "+1 qid:7 1:1e-3 2:-4\n"
    "-1\n"  # a row with no features
    "  1 3:0.25  \n"
)
SVMLIGHT_X = np.array([[0.5, 0, 2], [0, 1.5, 0], [1e-3, -4, 0], [0, 0, 0], [0, 0, 0.25]])
SVMLIGHT_Y = np.array([1, -1, 1, -1, 1.0])
SVMLIGHT_LINES = [2, 4, 5, 6, 7]


@pytest.mark.parametrize("chunk_rows", CHUNK_SIZES)
@pytest.mark.parametrize("name,fmt", [("d.svm", None), ("d.txt", None), ("d.data", "svmlight")])
def test_svmlight_good_file(tmp_path, chunk_rows, name, fmt):
    path = write(tmp_path, name, SVMLIGHT_GOOD)
    chunks = list(iter_file_chunks(path, chunk_rows, fmt))
    assert [c.first_line for c in chunks] == SVMLIGHT_LINES[::chunk_rows]
    for c in chunks:
        assert sp.isspmatrix_csr(c.X) and c.X.dtype == np.float64
    X, y, _ = read_all(path, chunk_rows, fmt, n_features=3)
    np.testing.assert_array_equal(X, SVMLIGHT_X)
    np.testing.assert_array_equal(y, SVMLIGHT_Y)


def test_svmlight_n_features_widens_every_chunk(tmp_path):
    path = write(tmp_path, "d.svm", SVMLIGHT_GOOD)
    for c in iter_file_chunks(path, 2, n_features=10):
        assert c.X.shape[1] == 10


def test_svmlight_feature_above_n_features_names_the_line(tmp_path):
    path = write(tmp_path, "d.svm", "1 1:1\n1 2:1\n\n-1 9:1\n1 1:1\n")
    err = data_error(path, n_features=5)
    assert_line(err, 4, path)
    assert "9" in str(err)


CSV_GOOD = (
    "# exported\n"
    "f1, Label ,f2\n"
    "1,1,2\n"
    "\n"
    "3.5,-1,4e1\n"
    " -5 , 1 , 0 \n"
)


@pytest.mark.parametrize("chunk_rows", CHUNK_SIZES)
def test_csv_good_file(tmp_path, chunk_rows):
    path = write(tmp_path, "d.csv", CSV_GOOD)
    X, y, firsts = read_all(path, chunk_rows)
    np.testing.assert_array_equal(X, [[1, 2], [3.5, 40], [-5, 0]])
    np.testing.assert_array_equal(y, [1, -1, 1])
    assert firsts[0] == 3
    for c in iter_file_chunks(path, chunk_rows):
        assert isinstance(c.X, np.ndarray) and c.X.dtype == np.float64


@pytest.mark.parametrize("label", ["label", "target", "y", "class", "CLASS"])
def test_csv_label_column_names(tmp_path, label):
    path = write(tmp_path, "d.csv", f"a,b,{label}\n1,2,0\n3,4,1\n")
    X, y, _ = read_all(path)
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(y, [0, 1])


def test_npz_csr_good_file(tmp_path):
    A = sp.random(7, 5, density=0.4, format="csr", random_state=0)
    y = np.array([1, -1, 1, 1, -1, -1, 1.0])
    path = write(tmp_path, "d.npz", npz_bytes(data=A.data, indices=A.indices, indptr=A.indptr,
                                              shape=np.array(A.shape), y=y))
    X, y2 = load_npz(path)
    assert sp.isspmatrix_csr(X) and X.shape == (7, 5)
    np.testing.assert_array_equal(X.toarray(), A.toarray())
    np.testing.assert_array_equal(y2, y)
    Xc, yc, firsts = read_all(path, 3)
    np.testing.assert_array_equal(Xc, A.toarray())
    np.testing.assert_array_equal(yc, y)
    assert firsts == [1, 4, 7]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.uint8, np.bool_])
def test_npz_dense_good_file(tmp_path, dtype):
    Xd = (np.arange(12).reshape(4, 3) % 2).astype(dtype)
    y = np.array(["a", "b", "a", "b"])
    path = write(tmp_path, "d.npz", npz_bytes(X=Xd, y=y))
    X, y2 = load_npz(path)
    assert isinstance(X, np.ndarray) and X.dtype == np.float64
    np.testing.assert_array_equal(X, Xd.astype(np.float64))
    np.testing.assert_array_equal(y2, y)
    Xc, yc, _ = read_all(path, 3)
    np.testing.assert_array_equal(Xc, Xd.astype(np.float64))


def test_npz_compressed_is_fine(tmp_path):
    p = tmp_path / "d.npz"
    np.savez_compressed(p, X=np.eye(3), y=np.array([0, 1, 0]))
    X, y = load_npz(str(p))
    np.testing.assert_array_equal(X, np.eye(3))


@pytest.mark.parametrize("chunk_rows", CHUNK_SIZES)
def test_text_good_file(tmp_path, chunk_rows):
    path = write(tmp_path, "d.txt", "pos\thello world hello\n# comment\n\nneg\tbye: now\npos\tHELLO\n")
    chunks = list(iter_file_chunks(path, chunk_rows, text_bits=10))
    X = sp.vstack([c.X for c in chunks]).tocsr()
    y = np.concatenate([c.y for c in chunks])
    assert X.shape == (3, 1024)
    assert list(y) == ["pos", "neg", "pos"]
    assert chunks[0].first_line == 1
    # hashed token counts, L2-normalised: 'hello' twice and 'world' once
    np.testing.assert_allclose(sorted(X[0].data), [1 / np.sqrt(5), 2 / np.sqrt(5)])
    np.testing.assert_allclose(np.sqrt(X.multiply(X).sum(axis=1)).A1, 1.0)
    # same word -> same column (lower-cased)
    assert X[2].indices.tolist() == [i for i, v in zip(X[0].indices, X[0].data) if v > 0.8]


def test_text_default_width(tmp_path):
    path = write(tmp_path, "d.txt", "a\tx y\nb\tz\n")
    c = next(iter_file_chunks(path, 10))
    assert c.X.shape == (2, 1 << readers.TEXT_DEFAULT_BITS)


# ---------------------------------------------------------------- sniff_format

@pytest.mark.parametrize("name,content,fmt", [
    ("a.svm", "anything", "svmlight"),
    ("a.SVMLIGHT", "x", "svmlight"),
    ("a.libsvm", "x", "svmlight"),
    ("a.csv", "1 1:1\n", "csv"),
    ("a.CSV", "a,label\n", "csv"),
    ("a.npz", "not even a zip", "npz"),
    ("a.txt", "1 1:0.5 3:1\n", "svmlight"),
    ("a.txt", "# c\n\n-1 2:1\n", "svmlight"),
    ("a.txt", "1\n", "svmlight"),
    ("a.dat", "a,b,label\n1,2,0\n", "csv"),
    ("a", "label,x\n1,2\n", "csv"),
    ("a.txt", "pos\tgood film\n", "text"),
    ("a.tsv", "# c\nneg\ttime: 10:30, not good\n", "text"),
])
def test_sniff_format(tmp_path, name, content, fmt):
    assert sniff_format(write(tmp_path, name, content)) == fmt


@pytest.mark.parametrize("content", ["", "\n\n  \n", "# only\n# comments\n\n"])
def test_sniff_format_of_file_without_data_rows(tmp_path, content):
    path = write(tmp_path, "a.txt", content)
    with pytest.raises(DataError, match="no data rows"):
        sniff_format(path)


def test_sniff_format_agrees_with_written_formats(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, X=np.eye(2), y=np.array([0, 1]))
    assert sniff_format(str(path)) == "npz"


# ---------------------------------------------------------------- svmlight: bad lines name the line

GOOD_PREFIX = "# header\n1 1:1 2:0.5\n\n-1 3:2\n"  # data on lines 2 and 4; the bad line is line 5
BAD_LINE_NO = 5
GOOD_SUFFIX = "\n1 1:1\n-1 2:1\n"

SVMLIGHT_BAD = [
    ("malformed-token", "1 1:1 abc", "id:value"),
    ("token-without-colon", "1 3", "id:value"),
    ("label-not-a-number", "pos 1:1", "not a number"),
    ("label-missing", "1:1 2:1", "label"),
    ("feature-id-zero", "1 0:1", "start at 1"),
    ("negative-id", "1 -3:1", "start at 1"),
    ("unsorted-ids", "1 3:1 2:1", "increase"),
    ("duplicate-ids", "1 2:1 2:1", "increase"),
    ("nan-value", "1 1:nan", "NaN"),
    ("inf-value", "1 1:inf", "NaN or infinite"),
    ("minus-inf-value", "1 2:-inf", "NaN or infinite"),
    ("nan-label", "nan 1:1", "NaN or infinite"),
    ("inf-label", "inf 1:1", ""),
    ("value-not-a-number", "1 1:abc", "not a number"),
    ("id-not-a-number", "1 x:1", "whole number"),
    ("feature-above-limit", "1 1500000000:1", "limit"),
    ("feature-above-int32", "1 3000000000:1", "limit"),
    ("feature-above-int64", "1 99999999999999999999:1", "limit"),
    ("csv-in-svmlight", "1,0.5,3", "separator"),
    ("semicolons-in-svmlight", "1;0.5;3", "separator"),
    ("comma-between-pairs", "1 1:0.5,2:0.3", ""),
    ("semicolon-between-pairs", "1 1:0.5;2:0.3", ""),
    ("equals-instead-of-colon", "1 1=0.5", "separator"),
    ("invalid-utf8-label", b"\xff\xfe 1:1", "UTF-8"),
    ("invalid-utf8-value", b"1 1:\xc3\x28", ""),
]


@pytest.mark.parametrize("chunk_rows", CHUNK_SIZES)
@pytest.mark.parametrize("bad,needle", [pytest.param(b, n, id=i) for i, b, n in SVMLIGHT_BAD])
def test_svmlight_bad_line_is_named(tmp_path, chunk_rows, bad, needle):
    bad = bad if isinstance(bad, bytes) else bad.encode()
    path = write(tmp_path, "d.svm", GOOD_PREFIX.encode() + bad + GOOD_SUFFIX.encode())
    err = data_error(path, chunk_rows)
    assert_line(err, BAD_LINE_NO, path)
    assert needle in str(err)


@pytest.mark.parametrize("tail", ["-1 2:1 3:", "-1 2:1 3", "-1 2:", "-1 2:1 3:1e"])
def test_svmlight_truncated_last_line(tmp_path, tail):
    path = write(tmp_path, "d.svm", "1 1:1\n\n-1 2:1\n" + tail)  # no final newline
    assert_line(data_error(path), 4, path)


def test_svmlight_huge_feature_id_is_refused_fast_without_allocating(tmp_path):
    lines = ["1 1:1 2:1"] * 500 + ["-1 3:1 1500000000:1"] + ["1 1:1"] * 10
    path = write(tmp_path, "d.svm", "\n".join(lines) + "\n")
    read_all(write(tmp_path, "warm.svm", "1 1:1\n"))  # imports happen outside the measurement
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        err = data_error(path, 10_000)
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert_line(err, 501, path)
    assert "1,500,000,000" in str(err)
    assert elapsed < 0.5, f"took {elapsed:.2f}s"
    assert peak < 32 * 2**20, f"peak {peak / 2**20:.0f} MiB traced while refusing"


@pytest.mark.parametrize("chunk_rows", CHUNK_SIZES)
def test_svmlight_first_bad_line_wins(tmp_path, chunk_rows):
    path = write(tmp_path, "d.svm", "1 1:1\n1 0:1\n1 2:nan\n")
    assert_line(data_error(path, chunk_rows), 2)


# ---------------------------------------------------------------- csv: bad lines

CSV_HEAD = "# c\na,label,b\n1,1,2\n\n"  # header on line 2, data on 3; bad line on 5
CSV_BAD = [
    ("too-few-fields", "1,2", "fields"),
    ("too-many-fields", "1,2,3,4", "fields"),
    ("empty-field", "1,,2", "empty"),
    ("empty-last-field", "1,1,", "empty"),
    ("nan", "1,1,nan", "NaN"),
    ("inf", "1,inf,2", "NaN or infinite"),
    ("text-label", "1,pos,2", "not a number"),
    ("text-value", "x,1,2", "not a number"),
    ("semicolons", "1;1;2", "separator"),
    ("invalid-utf8", b"1,\xff,2", "UTF-8"),
]


@pytest.mark.parametrize("chunk_rows", CHUNK_SIZES)
@pytest.mark.parametrize("bad,needle", [pytest.param(b, n, id=i) for i, b, n in CSV_BAD])
def test_csv_bad_line_is_named(tmp_path, chunk_rows, bad, needle):
    bad = bad if isinstance(bad, bytes) else bad.encode()
    path = write(tmp_path, "d.csv", CSV_HEAD.encode() + bad + b"\n3,1,4\n")
    err = data_error(path, chunk_rows)
    assert_line(err, 5, path)
    assert needle in str(err)


def test_csv_semicolon_separated_file(tmp_path):
    path = write(tmp_path, "d.csv", "a;label;b\n1;1;2\n")
    err = data_error(path)
    assert_line(err, 1, path)
    assert "no label column" in str(err) and "','" in str(err)


@pytest.mark.parametrize("header", ["a,b,c", "labels,x", "lbl,x"])
def test_csv_without_label_column(tmp_path, header):
    path = write(tmp_path, "d.csv", f"\n# c\n{header}\n1,2,3\n")
    err = data_error(path)
    assert_line(err, 3, path)
    assert "no label column" in str(err)
    assert "label, target, y, class" in str(err)


def test_csv_header_not_utf8(tmp_path):
    path = write(tmp_path, "d.csv", b"a,\xfflabel\n1,2\n")
    err = data_error(path)
    assert_line(err, 1)
    assert "UTF-8" in str(err)


def test_csv_quoted_numbers_parse_or_name_the_line(tmp_path):
    # The header parser and the line explainer both accept '"1"'; the fast path
    # (np.loadtxt) does not, so the file ends in a DataError with no line at all.
    path = write(tmp_path, "d.csv", '"a","label"\n"1","0"\n"2","1"\n')
    try:
        X, y, _ = read_all(path)
    except DataError as err:
        pytest.fail(f"quoted numeric CSV refused without a line number: {err}")
    np.testing.assert_array_equal(X, [[1], [2]])
    np.testing.assert_array_equal(y, [0, 1])


# ---------------------------------------------------------------- text: bad lines

@pytest.mark.parametrize("bad,needle", [
    pytest.param(b"neg no tab here", "TAB", id="no-tab"),
    pytest.param(b"neg,comma instead", "TAB", id="comma-instead-of-tab"),
    pytest.param(b"neg\t\xff\xfe bytes", "UTF-8", id="invalid-utf8"),
])
@pytest.mark.parametrize("chunk_rows", CHUNK_SIZES)
def test_text_bad_line_is_named(tmp_path, bad, needle, chunk_rows):
    path = write(tmp_path, "d.txt", b"pos\tgood\n# c\n\npos\tfine\n" + bad + b"\nneg\tok\n")
    err = data_error(path, chunk_rows, "text")
    assert_line(err, 5, path)
    assert needle in str(err)


def test_text_empty_label_is_called_an_empty_label(tmp_path):
    # Lines are stripped before parsing, so "\ttext" loses its TAB and is reported
    # as "has no TAB", which is false: the line has a TAB and an empty label.
    path = write(tmp_path, "d.txt", "pos\tgood\n\tno label here\n")
    err = data_error(path, 1000, "text")
    assert_line(err, 2)
    assert "empty label" in str(err)


# ---------------------------------------------------------------- empty files

@pytest.mark.parametrize("content", [b"", b"\n\n   \n", b"# one\n#two\n\n"], ids=["empty", "blank", "comments"])
@pytest.mark.parametrize("name", ["d", "d.txt", "d.csv"])
def test_file_without_data_rows_is_refused_by_the_reader(tmp_path, content, name):
    path = write(tmp_path, name, content)
    err = data_error(path)
    assert "no data rows" in str(err)


@pytest.mark.parametrize("content", [b"", b"\n\n   \n", b"# one\n#two\n\n"], ids=["empty", "blank", "comments"])
@pytest.mark.parametrize("name", ["d.svm", "d.txt", "d.csv", "d.npz"])
def test_file_without_data_rows_is_refused_by_scan(tmp_path, content, name):
    path = write(tmp_path, name, content)
    with pytest.raises(DataError):
        scan(Source(validate(dataset=path)))


def test_csv_with_only_a_header_is_refused_by_scan(tmp_path):
    path = write(tmp_path, "d.csv", "a,label\n")
    with pytest.raises(DataError, match="no data rows"):
        scan(Source(validate(dataset=path)))


# ---------------------------------------------------------------- npz: refused files

def test_npz_without_y(tmp_path):
    path = write(tmp_path, "d.npz", npz_bytes(X=np.eye(2)))
    with pytest.raises(DataError, match="'y'") as info:
        load_npz(path)
    assert info.value.path == path


@pytest.mark.parametrize("which", ["y", "X", "data"])
def test_npz_object_arrays_are_refused_without_unpickling(tmp_path, which):
    marker = tmp_path / "unpickled"

    class Trap:  # unpickling this creates the marker folder
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    obj = np.empty(2, dtype=object)
    obj[0], obj[1] = Trap(), 1
    arrays = {"X": np.eye(2), "y": np.array([0, 1])}
    if which == "data":
        arrays = {"data": np.ones(2), "indices": np.array([0, 1]), "indptr": np.array([0, 1, 2]),
                  "shape": np.array([2, 2]), "y": np.array([0, 1])}
    arrays[which] = obj
    path = str(tmp_path / "d.npz")
    np.savez(path, **arrays)
    with pytest.raises(DataError):
        load_npz(path)
    with pytest.raises(DataError):
        list(iter_file_chunks(path, 10))
    assert not marker.exists(), "an object array was unpickled"


CSR_OK = dict(data=np.array([1.0, 2.0]), indices=np.array([0, 2]), indptr=np.array([0, 1, 1, 2]),
              shape=np.array([3, 3]), y=np.array([1, -1, 1]))


@pytest.mark.parametrize("change,needle", [
    ({"indptr": np.array([0, 2, 1, 2])}, "inconsistent"),
    ({"indptr": np.array([1, 1, 1, 2])}, "inconsistent"),
    ({"indptr": np.array([0, 1, 1, 3])}, "inconsistent"),
    ({"indptr": np.array([0, 1, 2])}, "indptr"),
    ({"indptr": np.array([[0, 1], [1, 2]])}, "indptr"),
    ({"indices": np.array([0])}, "inconsistent"),
    ({"indices": np.array([0, 3])}, "outside"),
    ({"indices": np.array([-1, 2])}, "outside"),
    ({"data": np.array([1.0, np.nan])}, "NaN"),
    ({"shape": np.array([3, 3, 1])}, "shape"),
    ({"shape": np.array([3, 0])}, "shape"),
    ({"shape": np.array([3, 10**9])}, "shape"),
    ({"y": np.array([1, -1])}, "labels"),
    ({"y": np.array([1.0, np.inf, 1.0])}, "NaN"),
    ({"y": np.array([b"a", b"b", b"c"])}, "'y'"),
], ids=["indptr-decreasing", "indptr-not-from-0", "indptr-end-mismatch", "indptr-too-short", "indptr-2d",
        "indices-length", "index-too-big", "index-negative", "nan-data", "shape-3d", "shape-zero-cols",
        "shape-too-wide", "y-length", "y-inf", "y-bytes"])
def test_npz_inconsistent_csr_is_refused(tmp_path, change, needle):
    path = write(tmp_path, "d.npz", npz_bytes(**{**CSR_OK, **change}))
    with pytest.raises(DataError) as info:
        load_npz(path)
    assert needle in str(info.value)


@pytest.mark.parametrize("change", [
    {"shape": np.array(3)},
    {"shape": np.array([[3, 3]])},
    {"indices": np.array(["0", "2"])},
], ids=["shape-0d", "shape-2d", "indices-text"])
def test_npz_malformed_csr_metadata_gives_data_error(tmp_path, change):
    # load_npz only turns ValueError/OSError into DataError; these raise TypeError.
    path = write(tmp_path, "d.npz", npz_bytes(**{**CSR_OK, **change}))
    with pytest.raises(DataError):
        load_npz(path)


@pytest.mark.parametrize("X,needle", [
    (np.arange(3.0), "2-D"),
    (np.array([["a", "b"], ["c", "d"]]), "numeric"),
    (np.array([[1 + 1j, 0], [0, 1]]), "numeric"),
    (np.array([[1.0, 2.0], [np.inf, 1.0]]), "row 2"),
], ids=["1d", "text", "complex", "inf-row-2"])
def test_npz_bad_dense_X(tmp_path, X, needle):
    path = write(tmp_path, "d.npz", npz_bytes(X=X, y=np.array([0, 1])))
    with pytest.raises(DataError, match=needle):
        load_npz(path)


def test_npz_with_neither_csr_nor_X(tmp_path):
    path = write(tmp_path, "d.npz", npz_bytes(Z=np.eye(2), y=np.array([0, 1])))
    with pytest.raises(DataError, match="CSR arrays"):
        load_npz(path)


@pytest.mark.parametrize("content", [b"", b"hello", b"PK\x03\x04 truncated zip"], ids=["empty", "text", "truncated"])
def test_npz_that_is_not_a_zip(tmp_path, content):
    path = write(tmp_path, "d.npz", content)
    with pytest.raises(DataError, match="zip"):
        load_npz(path)
    with pytest.raises(DataError):
        list(iter_file_chunks(path, 10))


def test_npz_zip_bomb_over_the_size_limit_is_refused_before_reading(tmp_path, monkeypatch):
    path = write(tmp_path, "d.npz", npz_bytes(X=np.zeros((100, 10)), y=np.zeros(100)))
    assert load_npz(path)[0].shape == (100, 10)
    monkeypatch.setattr(readers, "MAX_NPZ_UNCOMPRESSED", 4096)
    read = []
    monkeypatch.setattr(readers.np, "load", lambda *a, **k: read.append(a) or pytest.fail("np.load called"))
    with pytest.raises(DataError, match="zip bomb"):
        load_npz(path)
    assert not read


def test_npz_with_a_huge_compression_ratio_is_refused(tmp_path):
    # 72 MiB of zeros deflate to ~70 KB: more than 64 MiB at a ratio above 200.
    path = str(tmp_path / "d.npz")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("X.npy", npy_bytes(np.zeros((9 * 2**17, 8))))
        z.writestr("y.npy", npy_bytes(np.zeros(9 * 2**17)))
    assert os.path.getsize(path) < 2**20
    with pytest.raises(DataError, match="zip bomb"):
        load_npz(path)


def test_npz_member_that_expands_past_its_declared_size(tmp_path):
    # A deflated y.npy whose zip headers claim 200 bytes while the stream holds 80 KB.
    path = str(tmp_path / "d.npz")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("y.npy", npy_bytes(np.zeros(10_000)))
        z.writestr("X.npy", npy_bytes(np.zeros((10_000, 1))))
    raw = bytearray(open(path, "rb").read())
    assert raw[:4] == b"PK\x03\x04"
    raw[22:26] = struct.pack("<I", 200)  # local header: uncompressed size of the first member
    central = raw.find(b"PK\x01\x02")
    raw[central + 24:central + 28] = struct.pack("<I", 200)  # central directory entry
    open(path, "wb").write(bytes(raw))
    with pytest.raises(DataError):
        load_npz(path)


def test_npz_member_whose_npy_header_declares_a_huge_array(tmp_path):
    # A 200-byte member whose .npy header declares 2^50 float64 values (8 PiB, more than
    # any address space): the zip sizes pass the bomb check, then np.load tries to
    # allocate the declared array before reading it, and MemoryError escapes.
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (2**50,)})
    path = str(tmp_path / "d.npz")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("X.npy", npy_bytes(np.eye(2)))
        z.writestr("y.npy", header.getvalue() + bytes(64))
    with pytest.raises(DataError):
        load_npz(path)


@pytest.mark.parametrize("flag_bits,method", [(0, 99), (1, 0)], ids=["unknown-compression", "encrypted"])
def test_npz_with_unreadable_zip_members_gives_data_error(tmp_path, flag_bits, method):
    path = str(tmp_path / "d.npz")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("y.npy", npy_bytes(np.array([0.0, 1.0])))
        z.writestr("X.npy", npy_bytes(np.eye(2)))
    raw = bytearray(open(path, "rb").read())
    central = raw.find(b"PK\x01\x02")
    raw[6:8] = raw[central + 8:central + 10] = struct.pack("<H", flag_bits)
    raw[8:10] = raw[central + 10:central + 12] = struct.pack("<H", method)
    open(path, "wb").write(bytes(raw))
    with pytest.raises(DataError):
        load_npz(path)


def test_unknown_format_name(tmp_path):
    path = write(tmp_path, "d.svm", "1 1:1\n")
    with pytest.raises(DataError, match="unknown format"):
        list(iter_file_chunks(path, 10, "parquet"))


# ---------------------------------------------------------------- a UTF-8 byte order mark (issue #10)

BOM_CASES = [
    pytest.param("svm", "1 1:0.5 3:1\n-1 2:0.25\n1 1:1 4:2\n", {"parser": "sklearn"}, id="svmlight-sklearn"),
    pytest.param("svm", "1 1:0.5 3:1\n-1 2:0.25\n1 1:1 4:2\n", {"parser": "native"}, id="svmlight-compiled"),
    pytest.param("svm", "# a comment first\n1 1:0.5\n-1 2:0.25\n", {"parser": "sklearn"}, id="svmlight-comment"),
    pytest.param("csv", "label,a,b\n1,0.5,2\n0,1,0\n", {}, id="csv"),
    pytest.param("csv", '"label","a"\n1,0.5\n0,1\n', {}, id="csv-quoted-header"),
    pytest.param("txt", "pos\tgood film\nneg\tbad film\n", {}, id="raw-text"),
]


@pytest.mark.parametrize("ext,content,kw", BOM_CASES)
@pytest.mark.parametrize("named", [True, False], ids=["by-extension", "no-extension"])
def test_a_leading_bom_is_skipped_by_every_reader(tmp_path, ext, content, kw, named):
    plain = write(tmp_path, f"plain.{ext}" if named else "plain", content)
    bom = write(tmp_path, f"bom.{ext}" if named else "bom", b"\xef\xbb\xbf" + content.encode())
    assert sniff_format(bom) == sniff_format(plain)
    X0, y0, lines0 = read_all(plain, **kw)
    X1, y1, lines1 = read_all(bom, **kw)
    np.testing.assert_array_equal(X1, X0)
    np.testing.assert_array_equal(y1, y0)
    assert lines1 == lines0


def test_a_bom_keeps_line_numbers_of_errors(tmp_path):
    path = write(tmp_path, "d.svm", b"\xef\xbb\xbf1 1:1\n-1 2:oops\n")
    for parser in ("sklearn", "native"):
        assert_line(data_error(path, parser=parser), 2, path)


def test_a_bom_alone_on_the_first_line_is_an_empty_line(tmp_path):
    path = write(tmp_path, "d.svm", b"\xef\xbb\xbf\n1 1:1\n-1 2:1\n")
    for parser in ("sklearn", "native"):
        X, y, lines = read_all(path, parser=parser)
        assert X.shape[0] == 2 and lines[0] == 2


def test_a_bom_before_a_csv_header_still_finds_the_label_column(tmp_path):
    path = write(tmp_path, "d.csv", b"\xef\xbb\xbflabel,a\n1,2\n0,3\n")
    info = scan(Source(validate({"dataset": path, "batch_size": 1})), exact=True)
    assert info.rows == 2 and info.features == 1


# ---------------------------------------------------------------- sniffing by content (issue #10)

@pytest.mark.parametrize("content,fmt", [
    (b"1 1:0.5 3:1\n-1 2:1\n", "svmlight"),
    (b"+1 5:1 17:0.5\n-1 3:1\n", "svmlight"),
    (b"label,a\n1,2\n", "csv"),
    (b"pos\tgood film\n", "text"),
    (b"\xef\xbb\xbf1 1:1\n", "svmlight"),
])
@pytest.mark.parametrize("name", ["a9a", "a9a.t", "data.bin"])
def test_sniff_format_of_files_without_a_known_extension(tmp_path, name, content, fmt):
    assert sniff_format(write(tmp_path, name, content)) == fmt


def test_sniff_format_finds_npz_by_its_zip_magic(tmp_path):
    buf = npz_bytes(X=np.eye(2), y=np.array([0, 1]))
    assert buf[:4] == b"PK\x03\x04"
    for name in ("arrays", "arrays.t", "arrays.svm"):
        path = write(tmp_path, name, buf)
        assert sniff_format(path, by_content=True) == "npz"
    path = write(tmp_path, "arrays", buf)
    assert sniff_format(path) == "npz"
    X, y, _ = read_all(path)
    np.testing.assert_array_equal(X, np.eye(2))


def test_sniff_format_by_content_ignores_the_extension(tmp_path):
    assert sniff_format(write(tmp_path, "d.csv", "1 1:1\n"), by_content=True) == "svmlight"
    assert sniff_format(write(tmp_path, "d.svm", "label,a\n1,2\n"), by_content=True) == "csv"


@pytest.mark.parametrize("content,why", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64), "binary data"),
    (bytes(range(256)) * 8, "binary data"),
    (b"\x7fELF\x02\x01\x01" + bytes(100), "binary data"),
    ("pos\tgood".encode("utf-16"), "UTF-16"),
    (bytes([0x80 + (i * 7) % 120 for i in range(1000)]), "binary data"),  # high bytes, no NUL
], ids=["png", "all-bytes", "elf", "utf-16", "high-bytes"])
def test_sniff_format_refuses_binary_files(tmp_path, content, why):
    path = write(tmp_path, "junk", content)
    with pytest.raises(DataError, match=why) as err:
        sniff_format(path)
    assert "is not a dataset" in str(err.value) and err.value.path == path


def test_one_bad_byte_in_a_text_file_is_left_to_the_reader_to_name_its_line(tmp_path):
    path = write(tmp_path, "a9a", b"1 1:1\n-1 2:1\n1 3:\xff\n-1 1:1\n" * 50)
    assert sniff_format(path) == "svmlight"
    assert_line(data_error(path), 3, path)
