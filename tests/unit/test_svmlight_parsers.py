"""Every svmlight parser through the same cases: one grammar, three parsers (issue 19).

The parsers, as the ``parser`` fixture names them:

* ``native``: ``nativesvm`` (the C library), read through ``readers.iter_file_chunks``;
* ``sklearn``: scikit-learn's ``load_svmlight_file`` (the readers' default), with the
  readers' checks around it;
* ``lines``: ``svmlight_lines.parse_line_python``, the per-line Python path the
  compiled parser takes for lines their strict grammar refuses. It reads one line, so
  the test hands it the file's lines; the line numbers of its errors are the test's own
  count, what is checked is which line it refuses.

Part 1 is the case table, every case through every parser. Where they differ, and why:

| case                  | native                        | sklearn                         | lines              |
|-----------------------|-------------------------------|---------------------------------|--------------------|
| bad tokens            | DataError: line, the reason   | the same message                | Python's ValueError|
| NaN / inf value       | "value 'nan' of feature 3 .." | "contains a NaN or infinite .." | Python's ValueError|
| inf label             | "label 'inf' is not finite"   | "contains a NaN or infinite .." | Python's ValueError|
| UTF-8 byte order mark | skipped                       | skipped                         | n/a: readers strip |
| empty / comment-only  | "the file has no data rows"   | the same                        | n/a: not a line    |

sklearn parses the whole chunk first and finds a NaN afterwards, so its message says
what the readers' check found; the compiled parser stops at the token.

Part 2 runs the block parser (C) through the checks against
scikit-learn, bit for bit: random files, hard floats, invalid lines, fuzzing, blocks.
"""

from __future__ import annotations

import io
import random
import struct
import time
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svmcore.data import nativesvm
from svmcore.data.readers import iter_file_chunks, sniff_format
from svmcore.data.native import binding
from svmcore.data.svmlight_lines import BlockError, iter_blocks, parse_line_python
from svmcore.spec.errors import DataError
from svmcore.spec.knobs import MAX_FEATURES

MAXF = 2**26
PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FILE_PARSERS = ("native", "sklearn", "lines")


# ================================================================ part 1: the case table

def _read_lines(path: str):
    """The file line by line through ``parse_line_python``; an error names the line."""
    with open(path, "rb") as f:
        blob = f.read()
    y, rows = [], []
    for no, raw in enumerate(blob.split(b"\n"), 1):
        try:
            parsed = parse_line_python(raw, MAX_FEATURES)
        except (ValueError, IndexError, OverflowError) as e:
            raise DataError(str(e) or type(e).__name__, path, no) from None
        if parsed is not None:
            label, ids, vals = parsed
            y.append(label)
            rows.append(dict(zip(ids, vals)))
    return y, rows


def read(path: str, parser: str):
    """(labels, rows as {1-based id: value}) of the file through ``parser``."""
    if parser == "lines":
        return _read_lines(path)
    y, rows = [], []
    for chunk in iter_file_chunks(path, 64, parser=parser):
        X = chunk.X
        y += chunk.y.tolist()
        for r in range(X.shape[0]):
            lo, hi = X.indptr[r], X.indptr[r + 1]
            rows.append(dict(zip((X.indices[lo:hi] + 1).tolist(), X.data[lo:hi].tolist())))
    return y, rows


@pytest.fixture(params=FILE_PARSERS)
def parser(request):
    return request.param


def _long_line(n_pairs: int) -> tuple[bytes, dict]:
    row = {i: (i % 7) / 4 - 0.5 for i in range(1, n_pairs + 1)}
    return b"1 " + b" ".join(b"%d:%r" % (i, v) for i, v in row.items()) + b"\n", row


_LONG, _LONG_ROW = _long_line(150_000)  # ~1.7 MB: longer than the C parser's 1 MiB block
_SORTED = b"".join(b"-1 %d:1\n" % (i % 5 + 1) for i in range(20)) + b"".join(b"+1 %d:2\n" % (i % 5 + 1)
                                                                           for i in range(20))

# name: (file name, content, labels, rows)
VALID = {
    "plain rows": ("d.svm", b"1 1:0.5 3:2\n-1 2:1\n", [1, -1], [{1: 0.5, 3: 2}, {2: 1}]),
    "qid": ("d.svm", b"1 qid:3 1:1\n-1 qid:abc 2:2\n", [1, -1], [{1: 1}, {2: 2}]),
    "comments": ("d.svm", b"# head 1:2\n1 1:1 # tail 9:9\n  #x\n-1 2:2#c\n", [1, -1], [{1: 1}, {2: 2}]),
    "blank lines": ("d.svm", b"\n1 1:1\n\n   \n\t\n-1 2:2\n\n", [1, -1], [{1: 1}, {2: 2}]),
    "CRLF": ("d.svm", b"1 1:1\r\n\r\n-1 2:2\r\n", [1, -1], [{1: 1}, {2: 2}]),
    "no trailing newline": ("d.svm", b"1 1:1\n-1 2:2", [1, -1], [{1: 1}, {2: 2}]),
    "tabs between fields": ("d.svm", b"1\t1:1\t2:2\n", [1], [{1: 1, 2: 2}]),
    "a row without features": ("d.svm", b"1\n-1 2:2\n", [1, -1], [{}, {2: 2}]),
    "explicit zeros": ("d.svm", b"1 1:0 2:-0.0 3:5\n", [1], [{1: 0.0, 2: -0.0, 3: 5}]),
    "labels +1 -1 0 1": ("d.svm", b"+1 1:1\n-1 1:1\n0 1:1\n1 1:1\n", [1, -1, 0, 1], [{1: 1}] * 4),
    "multi-class labels": ("d.svm", b"3 1:1\n1 2:1\n2 3:1\n7 1:1\n", [3, 1, 2, 7],
                           [{1: 1}, {2: 1}, {3: 1}, {1: 1}]),
    "scientific notation": ("d.svm", b"1e0 1:1e-3 2:-2.5E+2 3:.5e1 4:1E5\n-1.5e+0 2:6.02e23\n", [1, -1.5],
                            [{1: 1e-3, 2: -250, 3: 5, 4: 1e5}, {2: 6.02e23}]),
    "a very long line": ("d.svm", b"-1 1:1\n" + _LONG + b"-1 2:1\n", [-1, 1, -1], [{1: 1}, _LONG_ROW, {2: 1}]),
    "no extension, sorted by label": ("a9a", _SORTED, [-1] * 20 + [1] * 20,
                                      [{i % 5 + 1: 1} for i in range(20)] + [{i % 5 + 1: 2} for i in range(20)]),
}


@pytest.mark.parametrize("case", list(VALID))
def test_valid_file(tmp_path, parser, case):
    name, content, labels, rows = VALID[case]
    path = tmp_path / name
    path.write_bytes(content)
    if name == "a9a":
        assert sniff_format(str(path)) == "svmlight"
    y, got = read(str(path), parser)
    assert y == labels
    assert got == rows
    if case == "explicit zeros" and parser != "lines":  # kept as stored values, -0.0 included
        assert [np.signbit(v) for v in got[0].values()] == [False, True, False]


def test_utf8_byte_order_mark_is_skipped(tmp_path):
    path = tmp_path / "d.svm"
    path.write_bytes(b"\xef\xbb\xbf1 1:1\n-1 2:oops\n")
    for p in ("native", "sklearn"):  # lines: n/a, the readers strip the mark
        with pytest.raises(DataError) as err:
            read(str(path), p)
        assert err.value.line == 2, p


@pytest.mark.parametrize("content", [b"", b"# only a comment\n\n  \n"])
def test_a_file_without_rows_is_refused(tmp_path, content):
    path = tmp_path / "d.svm"
    path.write_bytes(content)
    for p in ("native", "sklearn"):  # lines: n/a (see the table)
        with pytest.raises(DataError, match="the file has no data rows") as err:
            read(str(path), p)
        assert err.value.line is None


# name: (bad line, what the message says); the bad line is line 4 of the file
BAD = {
    "label not a number": (b"abc 1:1", "label 'abc' is not a number"),
    "label is a pair": (b"1:2 3:4", "each line must start with a label"),
    "comma separator": (b"1,2 3:1", "uses ',' or ';' as separator"),
    "missing colon": (b"1 3", "'3' is not an id:value pair"),
    "id not a number": (b"1 a:1", "feature id 'a' is not a whole number"),
    "value not a number": (b"1 3:x", "value 'x' of feature 3 is not a number"),
    "two colons": (b"1 3:1:2", "value '1:2' of feature 3 is not a number"),
    "exponent without digits": (b"1 3:1e", "value '1e' of feature 3 is not a number"),
    "hex value": (b"1 3:0x10", "value '0x10' of feature 3 is not a number"),
    "qid without colon": (b"1 qid 3:1", "'qid' is not an id:value pair"),
    "unsorted indices": (b"1 3:1 2:1", "feature ids must increase along a line; 2 comes after 3"),
    "duplicate indices": (b"1 3:1 3:2", "feature ids must increase along a line; 3 comes after 3"),
    "zero-based ids": (b"1 0:1 2:1", "feature id 0 is not allowed; ids start at 1"),
    "negative id": (b"1 -3:1", "feature id -3 is not allowed"),
    "huge index": (b"1 1:1 99999999999:1", "declares feature 99,999,999,999, above the limit"),
    "not UTF-8": (b"\xff 1:1", "is not valid UTF-8 text"),
    "NaN value": (b"1 3:nan", "NaN or infinite"),
    "inf label": (b"inf 1:1", None),  # the messages differ, see the table
}
SKLEARN_SAYS = {"NaN value": "contains a NaN or infinite value", "inf label": "contains a NaN or infinite value"}
COMPILED_SAY = {"inf label": "label 'inf' is not finite"}
BAD_PREFIX = b"# header\n1 1:1\n\n"  # the bad line is line 4: comments and blank lines count


@pytest.mark.parametrize("at_end", [False, True], ids=["mid-file", "last line, no newline"])
@pytest.mark.parametrize("case", list(BAD))
def test_bad_token_names_the_line(tmp_path, parser, case, at_end):
    bad, says = BAD[case]
    path = tmp_path / "bad.svm"
    path.write_bytes(BAD_PREFIX + bad + (b"" if at_end else b"\n-1 2:1\n"))
    with pytest.raises(DataError) as err:
        read(str(path), parser)
    e = err.value
    assert e.line == 4, str(e)
    if parser == "lines":
        return  # Python's own ValueError text (see the table)
    says = SKLEARN_SAYS.get(case, says) if parser == "sklearn" else COMPILED_SAY.get(case, says)
    assert says in e.reason, (parser, str(e))
    assert str(e).startswith("bad.svm, line 4: ")


@pytest.mark.parametrize("case", list(BAD))
def test_compiled_parsers_and_sklearn_say_the_same(tmp_path, case):
    path = tmp_path / "bad.svm"
    path.write_bytes(BAD_PREFIX + BAD[case][0] + b"\n")
    said = {}
    for p in ("native", "sklearn"):
        with pytest.raises(DataError) as err:
            read(str(path), p)
        said[p] = str(err.value)
    if case not in SKLEARN_SAYS:
        assert said["sklearn"] == said["native"]


# ================================================================ part 2: the block parsers, bit for bit

def _blocks(path, block_bytes):
    """The file's blocks as the C parser reads them: cut after a newline, each with its first line."""
    return iter_blocks(path, block_bytes, binding.rfind_newline, binding.count_newlines)


@pytest.fixture(scope="module")
def block_parser():
    nativesvm.warm_up()  # the library loaded once, outside the timed tests
    return nativesvm


def sklearn_parse(blob: bytes):
    from sklearn.datasets import load_svmlight_file

    return load_svmlight_file(io.BytesIO(blob), zero_based=False, dtype=np.float64)


def assert_same_as_sklearn(mod, blob: bytes, max_features: int = MAXF):
    data, indices, indptr, y, n_rows, max_id = mod.parse_block(blob, max_features)
    X, ys = sklearn_parse(blob)
    assert data.dtype == np.float64 and indices.dtype == np.int32 and indptr.dtype == np.int64
    assert n_rows == X.shape[0] == y.shape[0]
    assert np.array_equal(indptr, X.indptr)
    assert np.array_equal(indices, X.indices)
    # bit for bit: -0.0 vs 0.0 and every last ulp
    assert np.array_equal(data.view(np.uint64), np.asarray(X.data, np.float64).view(np.uint64))
    assert np.array_equal(y.view(np.uint64), ys.view(np.uint64))
    # sklearn makes a file without features one column wide
    assert max(max_id, 1) == X.shape[1]
    return data, indices, indptr, y, n_rows, max_id


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


# ---------------------------------------------------------------- identity with sklearn

FORMATS = [repr, "%.8g".__mod__, "%.16g".__mod__, "%.17g".__mod__, "%.3e".__mod__, "%.0f".__mod__,
           lambda v: "%.6f" % v]

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
values = st.one_of(finite, st.floats(-1, 1), st.integers(-1000, 1000).map(float), st.just(-0.0),
                   st.just(0.0), st.floats(min_value=1e-320, max_value=1e-300))


def _text(fmt, v: float) -> str:
    s = fmt(v)
    return s if np.isfinite(float(s)) else repr(v)  # '%.3e' % 1.797e308 rounds up to inf


@st.composite
def svm_files(draw):
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            lines.append(draw(st.sampled_from(["", "   ", "\t", "# a comment: 1:2", "  # x 3:4"])))
            continue
        fmt = draw(st.sampled_from(FORMATS))
        label = _text(fmt, draw(values))
        ids = sorted(draw(st.sets(st.integers(1, 3000), max_size=8)))
        sep = draw(st.sampled_from([" ", "\t", "  ", " \t"]))
        toks = [label]
        if draw(st.booleans()) and draw(st.booleans()):
            toks.append("qid:%d" % draw(st.integers(0, 99)))
        toks += [f"{i}:{_text(fmt, draw(values))}" for i in ids]
        line = draw(st.sampled_from(["", " ", "\t"])) + sep.join(toks)
        line += draw(st.sampled_from(["", " ", "\r", " # trailing 5:6", "#c"]))
        lines.append(line)
    end = draw(st.sampled_from(["\n", "\r\n"]))
    text = end.join(lines) + draw(st.sampled_from(["", end]))
    return text.encode()


@PROPERTY
@given(blob=svm_files())
def test_random_valid_files_equal_sklearn(block_parser, blob):
    try:
        sklearn_parse(blob)
    except ValueError:  # no data line at all: nothing to compare
        assert block_parser.parse_block(blob, MAXF)[4] == 0
        return
    assert_same_as_sklearn(block_parser, blob)


@pytest.mark.parametrize("fmt", ["repr", "%.8g", "%.16g", "%.17g"])
def test_random_floats_bit_for_bit(block_parser, fmt):
    rng = np.random.default_rng(7)
    n = 40000
    x = np.concatenate([rng.standard_normal(n // 4), rng.random(n // 4),
                        rng.random(n // 4) * 10.0 ** rng.integers(-300, 300, n // 4),
                        rng.integers(0, 2**64, n // 4, dtype=np.uint64).view(np.float64)])
    x = x[np.isfinite(x)]
    text = [repr(float(v)) if fmt == "repr" else fmt % v for v in x]
    blob = "".join(f"{s} 1:{s}\n" for s in text).encode()
    before = dict(block_parser.stats)
    data, indices, indptr, y, n_rows, _ = block_parser.parse_block(blob, 2)
    expected = np.array([float(s) for s in text])
    assert np.array_equal(data.view(np.uint64), expected.view(np.uint64))
    assert np.array_equal(y.view(np.uint64), expected.view(np.uint64))
    assert block_parser.stats == before, "float64 text (<= 17 digits) must never leave the compiled path"


HARD_FLOATS = [
    "0", "-0", "-0.0", "0e999", "1e-400", "4.9406564584124654e-324", "2.4703282292062327e-324",
    "2.4703282292062328e-324", "2.2250738585072011e-308", "2.2250738585072014e-308",
    "2.2250738585072012e-308", "1.7976931348623157e308", "1.7976931348623158e308",
    "9007199254740993", "9007199254740992.5", "9007199254740995", ".5", "5.", "+1", "1E+3",
    "1e-3", "0.1", "0.3", "1e23", "8.98846567431158e307", "7.2057594037927933e16",
    "123456789012345678901234567890", "0.000000000000000000000000000001234",
    "1" + "0" * 30 + "e-30", "9999999999999999999", "18446744073709551615", "18446744073709551616e-20",
    # exact halfway points between two doubles, written out in full (> 19 digits)
    "9007199254740993.000000000000000000000001", "9007199254740992.999999999999999999999999",
    "1.00000000000000011102230246251565404236316680908203125",
    "1.00000000000000011102230246251565404236316680908203124",
    "1.00000000000000011102230246251565404236316680908203126"]


@pytest.mark.parametrize("as_label", [False, True], ids=["value", "label"])
def test_hard_float_cases_match_python(block_parser, as_label):
    blob = "".join(f"{c} 1:1\n" if as_label else f"0 1:{c}\n" for c in HARD_FLOATS).encode()
    data, _, _, y, *_ = block_parser.parse_block(blob, 1)
    for c, v in zip(HARD_FLOATS, y if as_label else data):
        assert bits(v) == bits(float(c)), c


@pytest.mark.parametrize("as_label", [False, True], ids=["value", "label"])
def test_random_decimal_strings_match_python(block_parser, as_label):
    rnd = random.Random(3)
    cases = []
    for _ in range(30000):
        nd = rnd.randint(1, 24)
        digits = "".join(rnd.choice("0123456789") for _ in range(nd))
        pt = rnd.randint(0, nd)
        s = (digits[:pt] + "." + digits[pt:]).strip(".") or "0"
        if rnd.random() < 0.6:
            s += "e%d" % rnd.randint(-340, 310)
        if rnd.random() < 0.3:
            s = "-" + s
        v = float(s)
        if np.isfinite(v):
            cases.append((s, v))
    blob = "".join(f"{s} 7:1\n" if as_label else f"1 7:{s}\n" for s, _ in cases).encode()
    data, _, _, y, *_ = block_parser.parse_block(blob, 7)
    expected = np.array([v for _, v in cases])
    assert np.array_equal((y if as_label else data).view(np.uint64), expected.view(np.uint64))


def test_dump_svmlight_file_round_trip_stays_compiled(block_parser):
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(1)
    X = sp.random(3000, 5000, density=0.01, format="csr", random_state=rng)
    X.data = np.concatenate([rng.random(X.nnz // 2), rng.standard_normal(X.nnz - X.nnz // 2) * 1e5])
    y = rng.integers(0, 2, 3000) * 2.0 - 1.0
    f = io.BytesIO()
    dump_svmlight_file(X, y, f, zero_based=False, comment="made by a test")
    before = dict(block_parser.stats)
    data, indices, indptr, yy, n_rows, max_id = assert_same_as_sklearn(block_parser, f.getvalue())
    assert block_parser.stats == before
    printed = np.array([float("%.16g" % v) for v in X.data])  # what dump_svmlight_file writes
    assert np.array_equal(data, printed) and np.array_equal(yy, y)


def test_explicit_zero_negative_zero_and_empty_rows(block_parser):
    blob = b"1 2:0 3:-0.0 4:-0\n-1\n2 \n+1 5:.5\n"
    data, indices, indptr, y, n_rows, max_id = assert_same_as_sklearn(block_parser, blob)
    assert n_rows == 4 and max_id == 5
    assert [bits(v) for v in data[:3]] == [0, 1 << 63, 1 << 63]
    assert indptr.tolist() == [0, 3, 3, 3, 4]


def test_comments_blank_lines_crlf_and_qid(block_parser):
    blob = (b"# header 1:2\r\n"
            b"\r\n"
            b"1 qid:3 1:0.5 7:2 # comment 9:9\r\n"
            b"   \t\r\n"
            b"\t-1\tqid:abc\t2:1e-3#c\r\n"
            b"  # indented comment\n"
            b"2 3:4")
    data, indices, indptr, y, n_rows, max_id = assert_same_as_sklearn(block_parser, blob)
    assert n_rows == 3 and max_id == 7
    assert y.tolist() == [1.0, -1.0, 2.0]
    assert indices.tolist() == [0, 6, 1, 2]
    assert data.tolist() == [0.5, 2.0, 1e-3, 4.0]


@pytest.mark.parametrize("blob", [b"", b"\n\n", b"# only\n#comments", b"   \r\n\t"])
def test_no_rows(block_parser, blob):
    data, indices, indptr, y, n_rows, max_id = block_parser.parse_block(blob, MAXF)
    assert n_rows == 0 and max_id == 0 and indptr.tolist() == [0] and data.size == 0 and y.size == 0


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "ndarray", "readonly memoryview"])
def test_input_kinds(block_parser, kind):
    blob = b"1 1:1 2:2\n-1 3:3\n"
    buf = {"bytes": blob, "bytearray": bytearray(blob), "memoryview": memoryview(bytearray(blob)),
           "ndarray": np.frombuffer(blob, np.uint8).copy(),
           "readonly memoryview": memoryview(blob)}[kind]
    data, indices, indptr, y, n_rows, max_id = block_parser.parse_block(buf, 10)
    assert data.tolist() == [1, 2, 3] and indices.tolist() == [0, 1, 2] and y.tolist() == [1, -1]


# ---------------------------------------------------------------- invalid lines

GOOD = b"1 1:1\n# comment\n\n-1 2:0.5\n"  # 4 physical lines, 2 data lines before the bad one

INVALID = {
    "label not a number": b"abc 1:1",
    "label is a pair": b"1:2 3:4",
    "label with comma": b"1,2 3:1",
    "missing colon": b"1 3",
    "id 0": b"1 0:1",
    "negative id": b"1 -3:1",
    "unsorted ids": b"1 3:1 2:1",
    "duplicate ids": b"1 3:1 3:2",
    "id above max_features": b"1 1:1 1500000000:1",
    "huge id": b"1 99999999999999999999999:1",
    "nan value": b"1 3:nan",
    "inf value": b"1 3:inf",
    "-inf value": b"1 3:-inf",
    "nan label": b"nan 1:1",
    "inf label": b"inf",
    "overflowing value": b"1 3:1e999",
    "overflowing label": b"-1.8e308 1:1",
    "garbage bytes": b"\xff\xfe 1:1",
    "non-utf8 value": b"1 3:\xc3\xa9",
    "nul byte": b"1 3:1\x00",
    "two colons": b"1 3:1:2",
    "comma separated pairs": b"1 3:1,4:2",
    "exponent without digits": b"1 3:1e",
    "lone dot": b"1 3:.",
    "lone minus": b"1 3:-",
    "empty id": b"1 :1",
    "space before colon": b"1 3 :1",
    "hex value": b"1 3:0x10",
    "qid not first": b"1 2:1 qid:4 3:1",
    "qid without colon": b"1 qid 3:1",
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_line_is_named(block_parser, name):
    bad = INVALID[name]
    with pytest.raises(BlockError) as ei:
        block_parser.parse_block(GOOD + bad + b"\n1 1:1\n", MAXF)
    e = ei.value
    assert (e.line_index, e.data_line_index, e.line, e.offset) == (4, 2, bad, len(GOOD))
    assert e.reason


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_line_at_the_end_without_newline(block_parser, name):
    with pytest.raises(BlockError) as ei:
        block_parser.parse_block(b"\r\n" + INVALID[name], MAXF)
    assert (ei.value.line_index, ei.value.data_line_index, ei.value.line) == (1, 0, INVALID[name])


@pytest.mark.parametrize("tail", [b"1 3:", b"1 3", b"1 3:1e-", b"-", b"1 qid", b"1 3:+"])
def test_truncated_final_line(block_parser, tail):
    with pytest.raises(BlockError) as ei:
        block_parser.parse_block(b"1 1:1\n" + tail, MAXF)
    assert ei.value.line_index == 1 and ei.value.line == tail


def test_crlf_line_is_reported_without_its_line_ending(block_parser):
    with pytest.raises(BlockError) as ei:
        block_parser.parse_block(b"1 1:1\r\n1 2:x\r\n1 1:1\r\n", MAXF)
    assert ei.value.line == b"1 2:x" and ei.value.line_index == 1


def test_huge_id_is_refused_quickly_without_allocating(block_parser):
    blob = b"1 1:1 1500000000:1"
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(BlockError):
        block_parser.parse_block(blob, MAXF)
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 0.5
    assert peak < 1 << 20


def test_max_features_is_a_hard_bound(block_parser):
    data, indices, *_ = block_parser.parse_block(b"1 10:1\n", 10)
    assert indices.tolist() == [9]
    with pytest.raises(BlockError):
        block_parser.parse_block(b"1 11:1\n", 10)


@pytest.mark.parametrize("blob, expected", [
    (b"1 +3:1\n", ([2], [1.0], [1.0])),                            # int() accepts a sign
    (b"1 00000000003:2.5\n", ([2], [2.5], [1.0])),                 # > 10 digits, leading zeros
    (b"1_0 2:1_5\n", ([1], [15.0], [10.0])),                        # float() accepts underscores
    (b"1 2:" + b"1" * 30 + b"\n", ([1], [float("1" * 30)], [1.0])),  # long mantissa
])
def test_lines_the_strict_grammar_refuses_but_python_accepts(block_parser, blob, expected):
    data, indices, indptr, y, n_rows, max_id = assert_same_as_sklearn(block_parser, blob)
    assert (indices.tolist(), data.tolist(), y.tolist()) == expected


def test_parse_block_rejects_bad_arguments(block_parser):
    with pytest.raises(ValueError):
        block_parser.parse_block(b"1 1:1\n", 0)
    with pytest.raises(TypeError):
        block_parser.parse_block(np.zeros(3, np.int32), 10)


# ---------------------------------------------------------------- fuzz: never crash, never disagree

FRAGMENTS = [b"1", b"-1", b"+1", b"0", b"3", b"1500000000", b"99999999999999999999", b".", b"e", b"-", b"E5",
             b" ", b"  ", b"\t", b"\n", b"\r\n", b"\r", b":", b",", b";", b"#", b"nan", b"inf", b"qid:", b"qid",
             b"\xff", b"\xc3", b"\x00", b"\x0b", b"abc", b"1:1", b"2:0.5", b"0:1", b"-3:1", b"7:1e-3", b"_"]


@PROPERTY
@given(blob=st.one_of(st.binary(max_size=200), st.lists(st.sampled_from(FRAGMENTS), max_size=60).map(b"".join)))
def test_fuzz_blockerror_or_same_as_sklearn(block_parser, blob):
    try:
        ours = block_parser.parse_block(blob, MAXF)
    except BlockError as e:
        assert blob.split(b"\n")[e.line_index].rstrip(b"\r") == e.line
        with pytest.raises((ValueError, IndexError, OverflowError)):
            parse_line_python(e.line, MAXF)
        return
    if ours[4] == 0:
        return
    X, y = sklearn_parse(blob)
    assert np.array_equal(ours[2], X.indptr) and np.array_equal(ours[1], X.indices)
    assert np.array_equal(ours[0].view(np.uint64), X.data.view(np.uint64))
    assert np.array_equal(ours[3].view(np.uint64), y.view(np.uint64))


# ---------------------------------------------------------------- blocks of a file

def _sample_file(tmp_path, n_rows=300, crlf=False, final_newline=True):
    rng = np.random.default_rng(5)
    lines = []
    for r in range(n_rows):
        if r % 37 == 0:
            lines.append("# comment line %d 1:1" % r)
        if r % 53 == 0:
            lines.append("")
        ids = np.sort(rng.choice(500, rng.integers(0, 12), replace=False)) + 1
        lines.append(" ".join([repr(float(rng.integers(-1, 2)))] + [f"{i}:{rng.standard_normal()!r}" for i in ids]))
    end = "\r\n" if crlf else "\n"
    text = end.join(lines) + (end if final_newline else "")
    p = tmp_path / "f.svm"
    p.write_bytes(text.encode())
    return str(p), text.encode()


@pytest.mark.parametrize("block_bytes", [1, 7, 64, 1000, 1 << 20])
@pytest.mark.parametrize("crlf, final_newline", [(False, True), (True, False)])
def test_blocks_give_the_same_rows_as_one_block(block_parser, tmp_path, block_bytes, crlf, final_newline):
    path, blob = _sample_file(tmp_path, crlf=crlf, final_newline=final_newline)
    whole = block_parser.parse_block(blob, MAXF)
    blocks = list(_blocks(path, block_bytes))
    assert b"".join(bytes(b) for b, _ in blocks) == blob
    offset = 0
    for i, (b, first_line) in enumerate(blocks):
        assert bytes(b)[-1:] == b"\n" or i == len(blocks) - 1  # cut just after a newline
        assert first_line == blob.count(b"\n", 0, offset) + 1
        offset += len(b)
    parts = [block_parser.parse_block(b, MAXF) for b, _ in blocks]
    data = np.concatenate([p[0] for p in parts])
    indices = np.concatenate([p[1] for p in parts])
    y = np.concatenate([p[3] for p in parts])
    counts = np.concatenate([np.diff(p[2]) for p in parts])
    assert np.array_equal(data.view(np.uint64), whole[0].view(np.uint64))
    assert np.array_equal(indices, whole[1])
    assert np.array_equal(y, whole[3])
    assert np.array_equal(np.concatenate([[0], np.cumsum(counts)]), whole[2])
    assert max(p[5] for p in parts) == whole[5]


@pytest.mark.parametrize("block_bytes", [1, 7, 64, 1000])
def test_parsed_blocks_read_into_one_reused_buffer_give_the_same_rows(block_parser, tmp_path, block_bytes):
    """iter_parsed_blocks reads every block into one buffer (grown for a line longer than the
    block): its rows, kept to the end, are those of the file parsed as one block."""
    path, blob = _sample_file(tmp_path, crlf=False, final_newline=False)
    line = b"1 " + b" ".join(b"%d:%d" % (i, i) for i in range(1, 300))
    blob = blob + b"\n" + line + b"\n-1 2:2\n"
    with open(path, "wb") as f:
        f.write(blob)
    whole = block_parser.parse_block(blob, MAXF)
    got = list(block_parser.iter_parsed_blocks(path, MAXF, block_bytes))
    assert np.array_equal(np.concatenate([b.data for b in got]).view(np.uint64), whole[0].view(np.uint64))
    assert np.array_equal(np.concatenate([b.indices for b in got]), whole[1])
    assert np.array_equal(np.concatenate([b.y for b in got]), whole[3])
    assert np.array_equal(np.concatenate([[0]] + [np.diff(b.indptr) for b in got]).cumsum(), whole[2])


def test_block_bytes_must_be_positive(block_parser, tmp_path):
    path, _ = _sample_file(tmp_path, n_rows=3)
    with pytest.raises(ValueError, match="block_bytes"):
        next(iter(_blocks(path, 0)))


@pytest.mark.parametrize("block_bytes", [1, 7, 100, 1 << 20])
def test_a_bad_line_is_a_data_error_at_its_file_line(block_parser, tmp_path, block_bytes):
    path, blob = _sample_file(tmp_path, n_rows=120)
    lines = blob.split(b"\n")
    bad_line_number = 77
    lines[bad_line_number - 1] = b"1 5:1 4:2"
    p = tmp_path / "bad.svm"
    p.write_bytes(b"\n".join(lines))
    with pytest.raises(DataError) as ei:
        for _ in block_parser.iter_parsed_blocks(str(p), MAXF, block_bytes):
            pass
    assert ei.value.line == bad_line_number
    assert ei.value.reason == "feature ids must increase along a line; 4 comes after 5"
    assert str(ei.value) == "bad.svm, line 77: feature ids must increase along a line; 4 comes after 5"


def test_iter_parsed_blocks_first_row_line(block_parser, tmp_path):
    p = tmp_path / "c.svm"
    p.write_bytes(b"# head\n\n1 1:1\n# mid\n2 2:2\n")
    got = [(b.first_line, b.first_row_line, b.n_rows) for b in block_parser.iter_parsed_blocks(str(p), MAXF, 8)]
    assert got == [(3, 3, 1), (5, 5, 1)]
    got = [(b.first_line, b.first_row_line, b.n_rows) for b in block_parser.iter_parsed_blocks(str(p), MAXF)]
    assert got == [(1, 3, 2)]


def test_long_line_longer_than_the_block(block_parser, tmp_path):
    line = b"1 " + b" ".join(b"%d:%d" % (i, i) for i in range(1, 2000))
    p = tmp_path / "long.svm"
    p.write_bytes(b"1 1:1\n" + line + b"\n-1 2:2")
    blocks = list(_blocks(str(p), 16))
    assert [ln for _, ln in blocks] == [1, 2, 3]
    assert bytes(blocks[1][0]) == line + b"\n"


def test_readers_parser_matches_sklearn_parser_and_names_bad_lines(block_parser, tmp_path):
    name = "native"
    good = tmp_path / "good.svm"
    good.write_text("".join(f"{1 if i % 3 else -1} {i % 7 + 1}:{i / 10:.3f} {i % 7 + 9}:1\n" for i in range(500)))
    a = list(iter_file_chunks(str(good), 64, parser="sklearn"))
    b = list(iter_file_chunks(str(good), 64, parser=name))
    Xa = sp.vstack([c.X for c in a]).tocsr()
    Xb = sp.vstack([c.X for c in b]).tocsr()
    assert (Xa != Xb).nnz == 0 and Xa.shape == Xb.shape
    assert np.array_equal(np.concatenate([c.y for c in a]), np.concatenate([c.y for c in b]))
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:1\n# comment\n-1 2:1\n1 3:nan\n")
    for parser in ("sklearn", name):
        with pytest.raises(DataError) as err:
            list(iter_file_chunks(str(bad), 64, parser=parser))
        assert err.value.line == 4, (parser, str(err.value))


def test_a_stream_runs_held_out_rows_read_from_its_text_copy_are_the_runs_parsers_to_the_bit(tmp_path):
    """The held-out rows of a text copy the product wrote are read with the C parser whatever the
    run's parser (training.py ``_prepare``): they must be the rows scikit-learn's parser reads."""
    from svmcore.data import copies
    from svmcore.data.feeds.held_out import held_out
    from svmcore.data.feeds.source_rows import SourceRows
    from svmcore.data.sources import Source
    from svmcore.spec.config import validate
    from svmcore.worker.training import _cached_copy

    cfg = validate({"rows": 6_000, "features": 1 << 16, "mode": "stream"})  # parser sklearn, the default
    src = Source(cfg)
    path = copies.text_copy(src, str(tmp_path / "cache"), [-1, 1])
    fast = _cached_copy(path, validate(cfg.to_dict(), parser="native"), src, 6_000)
    slow = _cached_copy(path, cfg, src, 6_000)
    assert (fast.cfg.parser, slow.cfg.parser) == ("native", "sklearn")
    got = []
    for name, reader in (("native", fast), ("sklearn", slow)):
        rows = held_out(SourceRows(reader, cfg.features, np.array([-1.0, 1.0]), 6_000), str(tmp_path / name))
        got.append((rows.slice(0, rows.n_rows).csr(cfg.features), rows.labels()))
    (Xa, ya), (Xb, yb) = got
    assert Xa.shape == Xb.shape and Xa.shape[0] == 1_200
    for a, b in ((Xa.data, Xb.data), (Xa.indices, Xb.indices), (Xa.indptr, Xb.indptr), (ya, yb)):
        assert np.array_equal(a, b)
    assert Xa.data.view(np.uint64).tolist() == Xb.data.view(np.uint64).tolist()
